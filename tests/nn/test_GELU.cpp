// test_GELU.cpp: GELU (exact and tanh), SiLU and LeakyReLU against PyTorch's float64 values,
// infinities and NaN included, with finite differences, printing, configuration and errors.
#include <doctest/doctest.h>

#include "nn/GELU.h"
#include "nn/LeakyReLU.h"
#include "nn/SiLU.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"
#include "tests/support/TransformerReference.h"

using namespace tensor;
using namespace testing;

namespace {

// forward and backward of `m` on PyTorch's act.x against act.<name>.{y, gx}
void expect_torch(nn::Module& m, const std::string& name) {
  m.to(DType::Float64);
  const Tensor x = torch_ref("act.x");
  expect_matches("output", m.forward(x), torch_ref("act." + name + ".y"), 1e-15);
  expect_matches("gradInput", m.backward(x, torch_ref("act." + name + ".gy")), torch_ref("act." + name + ".gx"), 1e-14);
}

}  // namespace

TEST_CASE("GELU, SiLU and LeakyReLU give PyTorch's float64 values and gradients, infinities and NaN included") {
  nn::GELU gelu, geluTanh("tanh");
  nn::SiLU silu;
  nn::LeakyReLU leaky, leakyNeg(-0.2), leakyInplace(0.01, true);
  expect_torch(gelu, "gelu");
  expect_torch(geluTanh, "gelu_tanh");
  expect_torch(silu, "silu");
  expect_torch(leaky, "leaky");
  expect_torch(leakyNeg, "leaky_neg");
  Tensor x = torch_ref("act.x").clone();
  leakyInplace.forward(x);
  expect_matches("in place", x, torch_ref("act.leaky.y"), 0);
}

TEST_CASE("what PyTorch gives at -inf, +inf and NaN (float64 CPU), written out") {
  // PyTorch: gelu(-inf) = -inf * 0.5 * (1 + erf(-inf)) = NaN, gelu(+inf) = inf, and the
  // gradient at +-inf is NaN (inf * pdf(inf) = inf * 0); silu(-inf) = -inf / (1 + inf) = NaN,
  // silu(+inf) = inf, gradient NaN at both; leaky_relu(-inf) = -inf, gradient the slope.
  const Tensor x = from_vector<double>({-kInf, kInf, kNaN, -40.0}, {4});
  const Tensor ones = full({4}, 1.0, DType::Float64);
  nn::GELU gelu;
  gelu.to(DType::Float64);
  expect_values("gelu", gelu.forward(x), {kNaN, kInf, kNaN, -0.0}, 0);
  CHECK(std::signbit(gelu.output.get({3})));  // -0.0, as PyTorch's
  expect_values("gelu'", gelu.backward(x, ones), {kNaN, kNaN, kNaN, 0.0}, 1e-300);
  nn::SiLU silu;
  silu.to(DType::Float64);
  expect_values("silu", silu.forward(x), {kNaN, kInf, kNaN, -40.0 / (1 + std::exp(40.0))}, 1e-30);
  const double s40 = 1 / (1 + std::exp(40.0));  // sigmoid(-40)
  expect_values("silu'", silu.backward(x, ones), {kNaN, kNaN, kNaN, s40 * (1 - 40 * (1 - s40))}, 1e-30);
  nn::LeakyReLU leaky(0.1);
  leaky.to(DType::Float64);
  expect_values("leaky", leaky.forward(x), {-kInf, kInf, kNaN, -4.0}, 1e-15);
  expect_values("leaky'", leaky.backward(x, ones), {0.1, 1, 0.1, 0.1}, 1e-15);
}

TEST_CASE("GELU, SiLU, LeakyReLU: finite differences, float32 against float64") {
  Generator gen(20261125);
  std::vector<std::function<nn::ModulePtr()>> makers = {
      [] { return std::make_shared<nn::GELU>(); },          [] { return std::make_shared<nn::GELU>("tanh"); },
      [] { return std::make_shared<nn::SiLU>(); },          [] { return std::make_shared<nn::LeakyReLU>(0.3); },
      [] { return std::make_shared<nn::LeakyReLU>(-0.5); }, [] { return std::make_shared<nn::LeakyReLU>(0.2, true); }};
  for (auto& make : makers) {
    for (const Shape& s : {Shape{7}, Shape{2, 3, 4}, Shape{3, 1, 2, 5}}) {
      nn::ModulePtr m = make();
      INFO(m->str(), " ", shape_str(s));
      m->to(DType::Float64);
      expect_gradients_ok(*m, uniform(s, -4, 4, gen, DType::Float64));
    }
    nn::ModulePtr f = make(), d = make();
    d->to(DType::Float64);
    const Tensor x = arange(-8, 8, 0.0131, DType::Float32);
    CHECK(max_abs_diff(f->forward(x).to(DType::Float64), d->forward(x.to(DType::Float64))) < 2e-6);
  }
}

TEST_CASE("GELU, SiLU, LeakyReLU: printing, configuration, errors") {
  CHECK(nn::GELU().str() == "nn.GELU");
  CHECK(nn::GELU("tanh").str() == "nn.GELU(approximate='tanh')");
  CHECK(nn::SiLU().str() == "nn.SiLU");
  CHECK(nn::LeakyReLU().str() == "nn.LeakyReLU(0.01)");
  CHECK(nn::LeakyReLU(0.2, true).str() == "nn.LeakyReLU(0.2, inplace)");
  CHECK(nn::GELU::fromConfig(nn::GELU("tanh").config())->str() == "nn.GELU(approximate='tanh')");
  CHECK(nn::LeakyReLU::fromConfig(nn::LeakyReLU(0.25, true).config())->str() == "nn.LeakyReLU(0.25, inplace)");
  CHECK_THROWS_WITH_AS(nn::GELU("fast"), "nn.GELU: expected approximate 'none' or 'tanh', got 'fast'", Error);
  CHECK_THROWS_WITH_AS(nn::LeakyReLU(-0.1, true),
                       "nn.LeakyReLU: expected a finite negative_slope (>= 0 in place), got -0.1 in place", Error);
  nn::SiLU silu;
  CHECK_THROWS_WITH_AS(silu.forward(zeros({3}, DType::Int64)),
                       "nn.SiLU::updateOutput: expected float32 or float64 input, got int64 [3] on cpu", Error);
  silu.inplace = true;  // set by hand: the backward pass would have lost the input
  CHECK_THROWS_WITH_AS(silu.forward(zeros({3})),
                       "nn.SiLU::updateOutput: expected inplace = false (the backward pass reads the input), got true",
                       Error);
  nn::GELU gelu;
  gelu.forward(zeros({2, 3}));
  CHECK_THROWS_WITH_AS(gelu.backward(zeros({3, 2}), zeros({2, 3})),
                       "nn.GELU::updateGradInput: expected the input of the last forward (float32 [2 x 3] on cpu), got "
                       "float32 [3 x 2] on cpu",
                       Error);
}
