// test_LayerNorm.cpp
#include <doctest/doctest.h>

#include "nn/LayerNorm.h"
#include "tests/support/GradCheck.h"
#include "tests/support/TransformerReference.h"

using namespace tensor;
using namespace testing;

TEST_CASE("LayerNorm gives PyTorch's output and gradients over the last one and two dimensions") {
  for (const char* name : {"last1", "last2"}) {
    const std::string p = std::string("ln.") + name;
    const Tensor w = torch_ref(p + ".weight");
    nn::LayerNorm m(w.sizes());
    m.to(DType::Float64);
    m.loadStateDict({{"weight", w}, {"bias", torch_ref(p + ".bias")}});
    const Tensor x = torch_ref(p + ".x");
    expect_matches("output", m.forward(x), torch_ref(p + ".y"));
    expect_matches("gradInput", m.backward(x, torch_ref(p + ".gy")), torch_ref(p + ".gx"));
    expect_matches("gradWeight", m.gradWeight, torch_ref(p + ".gw"));
    expect_matches("gradBias", m.gradBias, torch_ref(p + ".gb"));
  }
}

TEST_CASE("LayerNorm closed form: a row normalised to mean 0, variance 1; statistics kept per row") {
  nn::LayerNorm m({4}, 0.0, false);
  m.to(DType::Float64);
  const Tensor x = from_vector<double>({1, 2, 3, 4, -2, -2, 6, 6}, {2, 4});
  const Tensor y = m.forward(x);
  const double s = 1 / std::sqrt(1.25);  // variance of 1..4 is 1.25
  for (int j = 0; j < 4; ++j) CHECK(y.get({0, j}) == doctest::Approx((j + 1 - 2.5) * s).epsilon(1e-15));
  CHECK(y.get({1, 0}) == doctest::Approx(-1).epsilon(1e-15));
  CHECK(m.saveMean.sizes() == Shape{2});
  CHECK(m.saveMean.get({1}) == 2);
  CHECK(m.saveRstd.get({1}) == doctest::Approx(0.25).epsilon(1e-15));
  CHECK(m.parameters().empty());
}

TEST_CASE("LayerNorm finite differences: affine or not, normalising 1 to 3 trailing dims, strided input") {
  Generator gen(20261126);
  for (const auto& [input, norm] : std::vector<std::pair<Shape, Shape>>{
           {{3, 5}, {5}}, {{2, 3, 4}, {3, 4}}, {{2, 2, 3, 2}, {2, 3, 2}}, {{6}, {6}}, {{2, 1, 3}, {3}}}) {
    for (bool affine : {true, false}) {
      INFO(shape_str(input), " over ", shape_str(norm), affine ? " affine" : "");
      nn::LayerNorm m(norm, 1e-3, affine);
      m.to(DType::Float64);
      if (affine) {
        m.weight.uniform_(0.5, 1.5, gen);
        m.bias.uniform_(-1, 1, gen);
      }
      expect_gradients_ok(m, uniform(input, -2, 2, gen, DType::Float64));
    }
  }
  nn::LayerNorm m({3});
  m.to(DType::Float64);
  const Tensor x = uniform({3, 4}, -1, 1, gen, DType::Float64).t();  // [4 x 3], strided
  expect_gradients_ok(m, x);
}

TEST_CASE("LayerNorm float32 agrees with float64; errors, printing and configuration") {
  Generator gen(5);
  nn::LayerNorm f({8}), d({8});
  d.to(DType::Float64);
  const Tensor x = uniform({5, 8}, -3, 3, gen);
  CHECK(max_abs_diff(f.forward(x).to(DType::Float64), d.forward(x.to(DType::Float64))) < 1e-5);
  CHECK(f.str() == "nn.LayerNorm([8], eps=1e-05)");
  CHECK(nn::LayerNorm({2, 3}, 1e-6, false).str() == "nn.LayerNorm([2 x 3], eps=1e-06, elementwise_affine=false)");
  CHECK(nn::LayerNorm::fromConfig(nn::LayerNorm({2, 3}, 1e-6, false).config())->str() ==
        "nn.LayerNorm([2 x 3], eps=1e-06, elementwise_affine=false)");
  CHECK_THROWS_WITH_AS(
      f.forward(zeros({5, 7})),
      "nn.LayerNorm::updateOutput: expected input [* x 8] (ending with the normalized shape), got [5 x 7]", Error);
  CHECK_THROWS_WITH_AS(nn::LayerNorm({2, 3}).forward(zeros({3, 2})),
                       "nn.LayerNorm::updateOutput: expected input [* x 2 x 3] (ending with the normalized shape), got "
                       "[3 x 2]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::LayerNorm({0}), "nn.LayerNorm: expected a normalized shape of 1 or more sizes >= 1, got [0]",
                       Error);
  CHECK_THROWS_WITH_AS(f.backward(x, zeros({8, 5})),
                       "nn.LayerNorm::updateGradInput: expected gradOutput of the input's shape and dtype (float32 "
                       "[5 x 8] on cpu), got float32 [8 x 5] on cpu",
                       Error);
  nn::LayerNorm a({3}), b({3});
  b.weight.fill_(2);
  expect_state_roundtrip_ok(a, b, uniform({2, 3}, -1, 1, gen));
  CHECK(a.stateDict().count("weight") == 1);
  CHECK(a.stateDict().count("bias") == 1);
}

TEST_CASE("LayerNorm: a bias of another dtype than weight is named, on every pass") {
  Generator gen(6);
  nn::LayerNorm m({8});
  const Tensor x = uniform({5, 8}, -1, 1, gen);
  m.bias = zeros({8}, DType::Float64);  // a public field, replaced by hand
  CHECK_THROWS_WITH_AS(m.forward(x),
                       "nn.LayerNorm::updateOutput: expected bias of weight's dtype and device (float32 on cpu), got "
                       "float64 [8] on cpu (convert the module with .to(dtype))",
                       Error);
  m.bias = zeros({8});
  m.forward(x);
  m.bias = zeros({8}, DType::Float64);
  CHECK_THROWS_WITH_AS(m.backward(x, zeros({5, 8})),
                       doctest::Contains("nn.LayerNorm::updateGradInput: expected bias of weight's dtype and device"),
                       Error);
  CHECK_THROWS_WITH_AS(m.accGradParameters(x, zeros({5, 8})),
                       doctest::Contains("nn.LayerNorm::accGradParameters: expected bias of weight's dtype and device"),
                       Error);
  // .to(dtype) converts both: fine again
  m.to(DType::Float64);
  CHECK(m.forward(x.to(DType::Float64)).dtype() == DType::Float64);
}

TEST_CASE("LayerNorm takes [* x normalized_shape]: 4-d input over its last 1 and 2 dims, empty leading dims") {
  // as PyTorch's nn.LayerNorm: the leading dims are rows, whatever their number
  Generator gen(20261204);
  for (const Shape& norm : {Shape{5}, Shape{4, 5}}) {
    INFO("over ", shape_str(norm));
    nn::LayerNorm m(norm, 1e-5);
    m.to(DType::Float64);
    m.weight.uniform_(0.5, 1.5, gen);
    m.bias.uniform_(-1, 1, gen);
    nn::LayerNorm flat(Shape{norm.size() == 1 ? 5 : 20}, 1e-5);
    flat.to(DType::Float64);
    flat.weight.copy_(m.weight.reshape({-1}));
    flat.bias.copy_(m.bias.reshape({-1}));
    const Tensor x = uniform({2, 3, 4, 5}, -2, 2, gen, DType::Float64);
    const Tensor g = uniform({2, 3, 4, 5}, -1, 1, gen, DType::Float64);
    const int64_t cols = norm.size() == 1 ? 5 : 20;
    const Tensor y = m.forward(x);
    CHECK(y.sizes() == x.sizes());
    CHECK(max_abs_diff(y.reshape({-1, cols}), flat.forward(x.reshape({-1, cols}))) < 1e-14);
    CHECK(max_abs_diff(m.backward(x, g).reshape({-1, cols}),
                       flat.backward(x.reshape({-1, cols}), g.reshape({-1, cols}))) < 1e-14);
    CHECK(max_abs_diff(m.gradWeight.reshape({-1}), flat.gradWeight) < 1e-13);
    CHECK(max_abs_diff(m.gradBias.reshape({-1}), flat.gradBias) < 1e-13);
    expect_gradients_ok(m, uniform({2, 3, 4, 5}, -2, 2, gen, DType::Float64).transpose(0, 1));
    // empty leading dims
    m.zeroGradParameters();
    Shape empty = {2, 0, 4, 5};
    CHECK(m.forward(zeros(empty, DType::Float64)).sizes() == empty);
    CHECK(m.backward(zeros(empty, DType::Float64), zeros(empty, DType::Float64)).sizes() == empty);
    CHECK(m.gradWeight.abs().max().item() == 0);
  }
}
