// test_RMSNorm.cpp: nn.RMSNorm against PyTorch's float64 torch.nn.RMSNorm (several shapes and
// eps, eps None, no affine), closed forms, finite differences, float32 against float64, NaN and
// Inf rows, empty leading dims, errors, printing, configuration and model files.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "convert/ModelFile.h"
#include "nn/RMSNorm.h"
#include "tests/support/DecoderNormReference.h"
#include "tests/support/GradCheck.h"
#include "tests/support/TransformerReference.h"

using namespace tensor;
using namespace testing;

namespace {
bool all_finite(const Tensor& t) {
  for (double v : t.contiguous().to_vector<double>())
    if (!std::isfinite(v)) return false;
  return true;
}
}  // namespace

TEST_CASE("RMSNorm gives PyTorch's output and gradients: shapes, eps, eps None, no affine") {
  struct Case {
    const char* name;
    Shape normalized;
    std::optional<double> eps;
    bool affine;
  };
  for (const Case& c :
       {Case{"last1", {8}, 1e-6, true}, Case{"last2", {3, 4}, 1e-5, true}, Case{"none", {6}, std::nullopt, true},
        Case{"plain", {5}, 1e-3, false}, Case{"tiny", {4}, std::nullopt, true}}) {
    INFO(c.name);
    const std::string p = std::string("rms.") + c.name;
    nn::RMSNorm m(c.normalized, c.eps, c.affine);
    m.to(DType::Float64);
    if (c.affine) m.loadStateDict({{"weight", decoder_ref(p + ".w")}});
    const Tensor x = decoder_ref(p + ".x");
    // relative to the largest value: "tiny"'s gradInput is ~1e7 (rstd ~ 1 / sqrt(eps))
    const auto rel = [](const Tensor& want) { return 1e-12 * std::max(1.0, want.abs().max().item()); };
    const Tensor y = decoder_ref(p + ".y"), gx = decoder_ref(p + ".gx");
    expect_matches("output", m.forward(x), y, rel(y));
    expect_matches("gradInput", m.backward(x, decoder_ref(p + ".gy")), gx, rel(gx));
    if (c.affine) expect_matches("gradWeight", m.gradWeight, decoder_ref(p + ".gw"), rel(decoder_ref(p + ".gw")));
  }
}

TEST_CASE("RMSNorm closed form: rows scaled to a unit mean square; rstd kept per row; eps None is the dtype's") {
  nn::RMSNorm m({4}, 0.0, false);
  m.to(DType::Float64);
  const Tensor x = from_vector<double>({1, 1, 1, 1, 3, -4, 0, 0}, {2, 4});
  const Tensor y = m.forward(x);
  for (int j = 0; j < 4; ++j) CHECK(y.get({0, j}) == doctest::Approx(1).epsilon(1e-15));
  // mean square of (3, -4, 0, 0) is 25 / 4: rstd 2 / 5
  CHECK(m.saveRstd.sizes() == Shape{2});
  CHECK(m.saveRstd.get({1}) == doctest::Approx(0.4).epsilon(1e-15));
  CHECK(y.get({1, 1}) == doctest::Approx(-1.6).epsilon(1e-15));
  CHECK(m.parameters().empty());
  nn::RMSNorm none({4});
  CHECK(none.epsFor(DType::Float64) == std::numeric_limits<double>::epsilon());
  CHECK(none.epsFor(DType::Float32) == std::numeric_limits<float>::epsilon());
  CHECK(none.epsFor(DType::Float16) == std::numeric_limits<float>::epsilon());  // torch.rms_norm's opmath
  CHECK(nn::RMSNorm({4}, 1e-6).epsFor(DType::Float16) == 1e-6);
  // a zero row: 0 / sqrt(eps) = 0, finite
  CHECK(none.forward(zeros({1, 4})).abs().max().item() == 0);
}

TEST_CASE("RMSNorm finite differences: affine or not, normalising 1 to 3 trailing dims, strided input") {
  Generator gen(20261202);
  for (const auto& [input, norm] : std::vector<std::pair<Shape, Shape>>{
           {{3, 5}, {5}}, {{2, 3, 4}, {3, 4}}, {{2, 2, 3, 2}, {2, 3, 2}}, {{6}, {6}}, {{2, 1, 3}, {3}}}) {
    for (bool affine : {true, false}) {
      INFO(shape_str(input), " over ", shape_str(norm), affine ? " affine" : "");
      nn::RMSNorm m(norm, 1e-3, affine);
      m.to(DType::Float64);
      if (affine) m.weight.uniform_(0.5, 1.5, gen);
      expect_gradients_ok(m, uniform(input, -2, 2, gen, DType::Float64));
    }
  }
  nn::RMSNorm m({3});
  m.to(DType::Float64);
  const Tensor x = uniform({3, 4}, -1, 1, gen, DType::Float64).t();  // [4 x 3], strided
  expect_gradients_ok(m, x);
}

TEST_CASE("RMSNorm float32 agrees with float64; a NaN or Inf makes its row NaN and leaves the others alone") {
  Generator gen(7);
  nn::RMSNorm f({8}, 1e-6), d({8}, 1e-6);
  d.to(DType::Float64);
  const Tensor x = uniform({5, 8}, -3, 3, gen);
  CHECK(max_abs_diff(f.forward(x).to(DType::Float64), d.forward(x.to(DType::Float64))) < 1e-5);
  const Tensor g = uniform({5, 8}, -1, 1, gen);
  CHECK(max_abs_diff(f.backward(x, g).to(DType::Float64), d.backward(x.to(DType::Float64), g.to(DType::Float64))) <
        1e-5);
  // See Note [NaN and Inf] in nn/kernels/Activation.h.
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()}) {
    INFO("bad ", bad);
    nn::RMSNorm m({4});
    m.to(DType::Float64);
    Tensor xb = uniform({3, 4}, -1, 1, gen, DType::Float64);
    xb.set({1, 2}, bad);
    const Tensor y = m.forward(xb);
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t c = 0; c < 4; ++c) {
        INFO("element ", r, ", ", c);
        // an infinite row: Inf * rstd 0 = NaN, the others x * 0 = 0; a NaN row is NaN throughout
        const bool nan = r == 1 && (std::isnan(bad) || c == 2);
        CHECK(std::isnan(y.get({r, c})) == nan);
      }
    }
    CHECK(all_finite(y.select(0, 0)));
    m.backward(xb, ones({3, 4}, DType::Float64));
    CHECK(std::isnan(m.gradInput.get({1, 2})));
    CHECK(all_finite(m.gradInput.select(0, 0)));
    CHECK(all_finite(m.gradInput.select(0, 2)));
    CHECK(std::isnan(m.gradWeight.get({2})));
  }
}

TEST_CASE("RMSNorm takes [* x normalized_shape]: empty leading dims leave the gradient alone") {
  nn::RMSNorm m({4, 5}, 1e-5);
  m.to(DType::Float64);
  m.zeroGradParameters();
  const Shape empty = {2, 0, 4, 5};
  CHECK(m.forward(zeros(empty, DType::Float64)).sizes() == empty);
  CHECK(m.saveRstd.sizes() == Shape{0});
  CHECK(m.backward(zeros(empty, DType::Float64), zeros(empty, DType::Float64)).sizes() == empty);
  CHECK(m.gradWeight.abs().max().item() == 0);
}

TEST_CASE("RMSNorm: errors, printing, configuration, state and model-file round trips") {
  Generator gen(8);
  nn::RMSNorm f({8}, 1e-6);
  const Tensor x = uniform({5, 8}, -3, 3, gen);
  CHECK(f.str() == "nn.RMSNorm([8], eps=1e-06)");
  CHECK(nn::RMSNorm({2, 3}).str() == "nn.RMSNorm([2 x 3], eps=None)");
  CHECK(nn::RMSNorm({2, 3}, 1e-5, false).str() == "nn.RMSNorm([2 x 3], eps=1e-05, elementwise_affine=false)");
  for (const auto& m : {std::make_shared<nn::RMSNorm>(Shape{2, 3}, 1e-5, false),
                        std::make_shared<nn::RMSNorm>(Shape{4}), std::make_shared<nn::RMSNorm>(Shape{4}, 0.0)}) {
    const nn::ModulePtr back = nn::RMSNorm::fromConfig(m->config());
    CHECK(back->str() == m->str());
    CHECK(std::dynamic_pointer_cast<nn::RMSNorm>(back)->eps == m->eps);
  }
  CHECK_THROWS_WITH_AS(
      f.forward(zeros({5, 7})),
      "nn.RMSNorm::updateOutput: expected input [* x 8] (ending with the normalized shape), got [5 x 7]", Error);
  CHECK_THROWS_WITH_AS(nn::RMSNorm({2, 3}).forward(zeros({3, 2})),
                       "nn.RMSNorm::updateOutput: expected input [* x 2 x 3] (ending with the normalized shape), got "
                       "[3 x 2]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::RMSNorm({0}), "nn.RMSNorm: expected a normalized shape of 1 or more sizes >= 1, got [0]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::RMSNorm({3}, -1.0),
                       "nn.RMSNorm: expected a finite eps >= 0 (or none: the dtype's epsilon), got -1", Error);
  CHECK_THROWS_WITH_AS(f.forward(zeros({5, 8}, DType::Int64)), doctest::Contains("nn.RMSNorm::updateOutput"), Error);
  CHECK_THROWS_WITH_AS(f.forward(zeros({5, 8}, DType::Float64)),
                       doctest::Contains("nn.RMSNorm::updateOutput: expected input of weight's dtype"), Error);
  CHECK_THROWS_WITH_AS(nn::RMSNorm({8}).backward(x, zeros({5, 8})),
                       "nn.RMSNorm::updateGradInput: expected a forward() of input float32 [5 x 8] on cpu first",
                       Error);
  f.forward(x);
  CHECK_THROWS_WITH_AS(f.backward(x, zeros({8, 5})),
                       "nn.RMSNorm::updateGradInput: expected gradOutput of the input's shape and dtype (float32 "
                       "[5 x 8] on cpu), got float32 [8 x 5] on cpu",
                       Error);
  f.weight = zeros({7});  // a public field, replaced by hand
  CHECK_THROWS_WITH_AS(f.forward(x), doctest::Contains("nn.RMSNorm::updateOutput: expected weight of [8]"), Error);
  f.weight = ones({8});
  f.eps = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH_AS(f.forward(x), doctest::Contains("nn.RMSNorm::updateOutput: expected a finite eps >= 0"), Error);

  nn::RMSNorm a({3}), b({3});
  b.weight.fill_(2);
  expect_state_roundtrip_ok(a, b, uniform({2, 3}, -1, 1, gen));
  CHECK(a.stateDict().size() == 1);
  CHECK(a.stateDict().count("weight") == 1);

  // a model file: the description and the weights, back to the same module
  auto m = std::make_shared<nn::RMSNorm>(Shape{2, 4});
  m->weight.uniform_(0.5, 1.5, gen);
  const nn::ModulePtr back = nn::build_model(nn::describe_model(*m));
  back->loadStateDict(m->stateDict());
  CHECK(back->str() == "nn.RMSNorm([2 x 4], eps=None)");
  const Tensor xi = uniform({3, 2, 4}, -1, 1, gen);
  CHECK(max_abs_diff(back->forward(xi), m->forward(xi)) == 0);
}
