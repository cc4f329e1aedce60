// test_GroupNorm.cpp: nn.GroupNorm against PyTorch's float64 results, a closed form, finite
// differences over several configurations (affine or not, 2-d to 5-d, strided input), float32
// against float64, NaN and Inf, empty batches, errors, printing, configuration and state.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "nn/GroupNorm.h"
#include "tests/support/GradCheck.h"
#include "tests/support/GroupNormReference.h"
#include "tests/support/TransformerReference.h"  // expect_matches

using namespace tensor;
using namespace testing;

namespace {
struct Ref {
  const char* name;
  int64_t groups, channels;
  double eps;
  bool affine;
};
}  // namespace

TEST_CASE("GroupNorm gives PyTorch's output and gradients (2-d to 5-d, one group, a group a channel, no affine)") {
  for (const Ref& r : {Ref{"gn.4d", 2, 6, 1e-5, true}, Ref{"gn.2d", 1, 4, 1e-5, true}, Ref{"gn.5d", 4, 8, 1e-3, false},
                       Ref{"gn.g1c", 3, 3, 1e-5, true}}) {
    INFO(r.name);
    const std::string p = r.name;
    nn::GroupNorm m(r.groups, r.channels, r.eps, r.affine);
    m.to(DType::Float64);
    if (r.affine) m.loadStateDict({{"weight", groupnorm_ref(p + ".w")}, {"bias", groupnorm_ref(p + ".b")}});
    const Tensor x = groupnorm_ref(p + ".x");
    expect_matches("output", m.forward(x), groupnorm_ref(p + ".y"));
    expect_matches("gradInput", m.backward(x, groupnorm_ref(p + ".gy")), groupnorm_ref(p + ".gx"));
    if (r.affine) {
      expect_matches("gradWeight", m.gradWeight, groupnorm_ref(p + ".gw"));
      expect_matches("gradBias", m.gradBias, groupnorm_ref(p + ".gb"));
    }
    // float32 within its precision
    nn::GroupNorm f(r.groups, r.channels, r.eps, r.affine);
    f.loadStateDict(m.stateDict());
    CHECK(max_abs_diff(f.forward(x.to(DType::Float32)).to(DType::Float64), groupnorm_ref(p + ".y")) < 1e-4);
    CHECK(max_abs_diff(f.backward(x.to(DType::Float32), groupnorm_ref(p + ".gy").to(DType::Float32)).to(DType::Float64),
                       groupnorm_ref(p + ".gx")) < 1e-4);
  }
}

TEST_CASE("GroupNorm closed form: each (sample, group) to mean 0, variance 1; statistics [N x G]") {
  nn::GroupNorm m(2, 4, 0.0, false);
  m.to(DType::Float64);
  // sample 0: group 0 = {1, 2, 3, 4}, group 1 = {-2, -2, 6, 6}; sample 1: constant groups + 1
  const Tensor x = from_vector<double>({1, 2, 3, 4, -2, -2, 6, 6, 0, 2, 0, 2, 5, 5, 7, 7}, {2, 4, 2});
  const Tensor y = m.forward(x);
  CHECK(m.saveMean.sizes() == Shape{2, 2});
  CHECK(m.saveMean.to_vector<double>() == std::vector<double>{2.5, 2, 1, 6});
  const std::vector<double> v = y.to_vector<double>();
  const double a = 1.5 / std::sqrt(1.25), b = 0.5 / std::sqrt(1.25);
  const std::vector<double> want = {-a, -b, b, a, -1, -1, 1, 1, -1, 1, -1, 1, -1, -1, 1, 1};
  for (size_t i = 0; i < v.size(); ++i) CHECK(v[i] == doctest::Approx(want[i]).epsilon(1e-14));
  // the affine parameters are per channel
  nn::GroupNorm w(2, 4, 0.0);
  w.to(DType::Float64);
  w.weight.copy_(from_vector<double>({1, 2, 3, 4}));
  w.bias.copy_(from_vector<double>({0, 1, 0, -1}));
  const std::vector<double> wy = w.forward(x).to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) {
    const size_t c = (i / 2) % 4;
    CHECK(wy[i] == doctest::Approx(want[i] * (c + 1.0) + (c == 1 ? 1 : c == 3 ? -1 : 0)).epsilon(1e-14));
  }
}

TEST_CASE("GroupNorm finite differences: affine or not, 2-d to 5-d inputs, groups of 1 to all channels, strided") {
  Generator gen(20261205);
  INFO("seed 20261205");
  struct Config {
    int64_t groups, channels;
    Shape input;
  };
  for (const Config& c : {Config{2, 4, {3, 4}}, Config{3, 6, {2, 6, 5}}, Config{1, 3, {2, 3, 2, 3}},
                          Config{4, 4, {2, 4, 3, 2}}, Config{2, 6, {2, 6, 2, 2, 2}}}) {
    for (bool affine : {true, false}) {
      INFO(c.groups, " groups of ", c.channels, " channels, input ", shape_str(c.input), affine ? " affine" : "");
      nn::GroupNorm m(c.groups, c.channels, 1e-3, affine);
      m.to(DType::Float64);
      if (affine) {
        m.weight.uniform_(0.5, 1.5, gen);
        m.bias.uniform_(-1, 1, gen);
      }
      expect_gradients_ok(m, uniform(c.input, -2, 2, gen, DType::Float64));
      if (affine) expect_accumulation_ok(m, uniform(c.input, -2, 2, gen, DType::Float64));
    }
  }
  nn::GroupNorm m(2, 4);
  m.to(DType::Float64);
  const Tensor x = uniform({3, 4, 2, 5}, -1, 1, gen, DType::Float64).transpose(0, 3);  // [5 x 4 x 2 x 3], strided
  expect_gradients_ok(m, x);
  // training and evaluation are the same
  const Tensor y = m.forward(x).clone();
  m.evaluate();
  CHECK(max_abs_diff(m.forward(x), y) == 0);
}

TEST_CASE("GroupNorm: a NaN or Inf makes its (sample, group) NaN and leaves the others alone") {
  // See Note [NaN and Inf] in nn/kernels/Activation.h.
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    INFO("bad ", bad);
    nn::GroupNorm m(2, 4);
    m.to(DType::Float64);
    Tensor x = from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8}, {2, 4, 2});
    x.select(0, 1).select(0, 2).select(0, 1).fill_(bad);  // sample 1, channel 2 (group 1)
    const std::vector<double> y = m.forward(x).to_vector<double>();
    for (size_t i = 0; i < y.size(); ++i) {
      INFO("element ", i);
      CHECK(std::isnan(y[i]) == (i >= 12));
    }
    m.backward(x, ones({2, 4, 2}, DType::Float64));
    const std::vector<double> gx = m.gradInput.to_vector<double>();
    for (size_t i = 0; i < gx.size(); ++i) CHECK(std::isnan(gx[i]) == (i >= 12));
    CHECK(std::isnan(m.gradWeight.to_vector<double>()[2]));
    CHECK(!std::isnan(m.gradWeight.to_vector<double>()[0]));
  }
}

TEST_CASE("GroupNorm: an empty batch gives empty output and gradients and leaves the parameters' gradients alone") {
  nn::GroupNorm m(2, 4);
  m.zeroGradParameters();
  for (const Shape& shape : {Shape{0, 4}, Shape{0, 4, 3}, Shape{2, 4, 0}}) {
    INFO(shape_str(shape));
    CHECK(m.forward(zeros(shape)).sizes() == shape);
    CHECK(m.backward(zeros(shape), zeros(shape)).sizes() == shape);
    CHECK(m.gradWeight.abs().max().item() == 0);
    CHECK(m.gradBias.abs().max().item() == 0);
  }
}

TEST_CASE("GroupNorm errors, printing, configuration and state") {
  Generator gen(7);
  nn::GroupNorm m(2, 6);
  CHECK(m.str() == "nn.GroupNorm(2, 6, eps=1e-05)");
  CHECK(nn::GroupNorm(3, 3, 1e-3, false).str() == "nn.GroupNorm(3, 3, eps=0.001, affine=false)");
  CHECK(nn::GroupNorm::fromConfig(nn::GroupNorm(3, 3, 1e-3, false).config())->str() ==
        "nn.GroupNorm(3, 3, eps=0.001, affine=false)");
  expect_prints_type(m);
  CHECK_THROWS_WITH_AS(nn::GroupNorm(4, 6),
                       "nn.GroupNorm: expected num_channels >= 1 divisible by num_groups >= 1, got num_groups 4 and "
                       "num_channels 6",
                       Error);
  CHECK_THROWS_WITH_AS(nn::GroupNorm(0, 6), doctest::Contains("got num_groups 0"), Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 5, 3})),
                       "nn.GroupNorm::updateOutput: expected input of [N x 6] or [N x 6 x *], got [2 x 5 x 3]", Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({6})),
                       "nn.GroupNorm::updateOutput: expected input of [N x 6] or [N x 6 x *], got [6]", Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 6}, DType::Float64)),
                       doctest::Contains("expected input of weight's dtype and device (float32 on cpu)"), Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 6}, DType::Int64)),
                       "nn.GroupNorm::updateOutput: expected float32 or float64 input, got int64 [2 x 6] on cpu",
                       Error);
  const Tensor x = uniform({2, 6, 3}, -1, 1, gen);
  m.forward(x);
  CHECK_THROWS_WITH_AS(m.backward(x, zeros({2, 3, 6})),
                       "nn.GroupNorm::updateGradInput: expected gradOutput of the input's shape and dtype (float32 "
                       "[2 x 6 x 3] on cpu), got float32 [2 x 3 x 6] on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(m.backward(uniform({3, 6, 3}, -1, 1, gen), zeros({3, 6, 3})),
                       doctest::Contains("nn.GroupNorm::updateGradInput: expected a forward() of input"), Error);
  // public fields, replaced by hand, are checked where they are used
  m.numGroups = 4;
  CHECK_THROWS_WITH_AS(m.forward(x), doctest::Contains("got num_groups 4 and num_channels 6"), Error);
  m.numGroups = 2;
  m.bias = zeros({6}, DType::Float64);
  CHECK_THROWS_WITH_AS(m.forward(x), doctest::Contains("expected bias of weight's dtype and device"), Error);
  m.bias = zeros({6});
  // state: weight and bias, as PyTorch's state_dict
  nn::GroupNorm a(2, 6), b(2, 6);
  a.weight.uniform_(0.5, 1.5, gen);
  expect_state_roundtrip_ok(a, b, uniform({2, 6, 3}, -1, 1, gen));
  CHECK(a.stateDict().size() == 2);
  CHECK(nn::GroupNorm(2, 6, 1e-5, false).stateDict().empty());
}
