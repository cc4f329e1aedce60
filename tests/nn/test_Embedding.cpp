// test_Embedding.cpp: no finite differences over the input (indices are not differentiable);
// the weight's gradient is a sum of gradOutput rows, checked against PyTorch's, by hand, and by
// the kit's parameter-only central differences (GradCheckOptions::check_input = false).
#include <doctest/doctest.h>

#include "nn/Embedding.h"
#include "nn/LayerNorm.h"
#include "nn/Sequential.h"
#include "tests/support/GradCheck.h"
#include "tests/support/TransformerReference.h"

using namespace tensor;
using namespace testing;

TEST_CASE("Embedding gives PyTorch's output and weight gradient (padding_idx 2, repeated indices)") {
  nn::Embedding m(10, 4, 2);
  m.to(DType::Float64);
  m.loadStateDict({{"weight", torch_ref("emb.weight")}});
  const Tensor idx = torch_ref("emb.idx");
  expect_matches("output", m.forward(idx), torch_ref("emb.y"), 0);
  const Tensor gi = m.backward(idx, torch_ref("emb.gy"));
  CHECK_FALSE(gi.defined());  // indices have no gradient
  expect_matches("gradWeight", m.gradWeight, torch_ref("emb.gw"), 1e-15);
  // and accumulating with a scale
  m.backward(idx, torch_ref("emb.gy"), 0.5);
  expect_matches("gradWeight x 1.5", m.gradWeight, torch_ref("emb.gw").mul(1.5), 1e-15);
}

TEST_CASE("Embedding: shapes, the padding row, negative padding_idx, dtype") {
  manual_seed(3);
  nn::Embedding m(6, 3, -1);  // the last row, as PyTorch
  REQUIRE(m.paddingIdx.has_value());
  CHECK(*m.paddingIdx == 5);
  CHECK(m.weight.select(0, 5).abs().sum().item() == 0);
  CHECK(m.weight.select(0, 0).abs().sum().item() > 0);
  const Tensor idx = from_vector<int64_t>({0, 5, 3, 3}, {2, 1, 2});
  const Tensor y = m.forward(idx);
  CHECK(y.sizes() == Shape{2, 1, 2, 3});
  CHECK(max_abs_diff(y.select(0, 1).select(0, 0).select(0, 0), m.weight.select(0, 3)) == 0);
  m.backward(idx, full({2, 1, 2, 3}, 1.0));
  CHECK(m.gradWeight.select(0, 5).abs().sum().item() == 0);  // padding: no gradient
  CHECK(m.gradWeight.get({3, 1}) == 2);
  CHECK(m.gradWeight.get({0, 2}) == 1);
  m.to(DType::Float64);
  CHECK(m.forward(idx).dtype() == DType::Float64);  // the input stays int64
  const Tensor strided = from_vector<int64_t>({0, 1, 2, 3, 4, 5}, {2, 3}).t();
  CHECK(max_abs_diff(m.forward(strided), m.forward(strided.contiguous())) == 0);
  CHECK(m.forward(zeros({0, 4}, DType::Int64)).sizes() == Shape{0, 4, 3});
}

TEST_CASE("Embedding errors, printing, configuration, state") {
  nn::Embedding m(5, 2);
  CHECK_THROWS_WITH_AS(m.forward(from_vector<int64_t>({1, 5, 0}, {3})),
                       "nn.Embedding::updateOutput: expected indices in [0, 5), got 5 (element 1 of int64 [3] on cpu)",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(from_vector<int64_t>({-1}, {1})),
                       "nn.Embedding::updateOutput: expected indices in [0, 5), got -1 (element 0 of int64 [1] on cpu)",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({3})),
                       "nn.Embedding::updateOutput: expected int64 indices, got float32 [3] on cpu", Error);
  const Tensor idx = from_vector<int64_t>({1, 2}, {2});
  m.forward(idx);
  CHECK_THROWS_WITH_AS(m.backward(idx, zeros({2, 3})),
                       "nn.Embedding::updateGradInput: expected gradOutput [2 x 2] of the weight's dtype float32 (for "
                       "indices [2]), got float32 [2 x 3] on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(nn::Embedding(5, 2, 5), "nn.Embedding: expected padding_idx in [-5, 5), got 5", Error);
  CHECK_THROWS_WITH_AS(nn::Embedding(0, 2), "nn.Embedding: expected numEmbeddings and embeddingDim >= 1, got 0 and 2",
                       Error);
  CHECK(m.str() == "nn.Embedding(5 -> 2)");
  CHECK(nn::Embedding(7, 3, -2).str() == "nn.Embedding(7 -> 3, padding_idx=5)");
  CHECK(nn::Embedding::fromConfig(nn::Embedding(7, 3, -2).config())->str() == "nn.Embedding(7 -> 3, padding_idx=5)");
  CHECK(nn::Embedding::fromConfig(m.config())->str() == "nn.Embedding(5 -> 2)");
  nn::Embedding a(5, 2), b(5, 2);
  a.forward(idx);
  b.loadStateDict(a.stateDict());
  CHECK(max_abs_diff(a.forward(idx), b.forward(idx)) == 0);
  // first in a network: backward gives an empty gradInput and the parameters their gradients
  nn::Sequential net({std::make_shared<nn::Embedding>(5, 2)});
  net.forward(idx);
  CHECK_FALSE(net.backward(idx, full({2, 2}, 1.0)).defined());
  CHECK(net.gradParameters()[0].sum().item() == 4);
}

TEST_CASE("Embedding's weight gradient by central differences (a parameter-only check: the input is int64)") {
  manual_seed(12);
  GradCheckOptions o;
  o.check_input = false;  // indices have no gradient; the weight's alone is checked
  const Tensor idx = from_vector<int64_t>({0, 3, 3, 6, 1, 0, 5, 3}, {2, 4});  // repeated indices
  nn::Embedding m(7, 3);
  m.to(DType::Float64);
  const GradCheckReport r = check_gradients(m, idx, o);
  INFO(r.str());
  CHECK(r.ok());
  CHECK(r.checked == 7 * 3);  // every weight entry, rows not looked up included
  // with a padding row not among the indices, and behind a module that is not linear
  nn::Sequential net({std::make_shared<nn::Embedding>(7, 3, 2), std::make_shared<nn::LayerNorm>(Shape{3})});
  net.to(DType::Float64);
  expect_gradients_ok(net, idx, o);
  // the full check still refuses the indices, saying why
  CHECK_THROWS_WITH_AS(check_gradients(m, idx), doctest::Contains("expected a float64 input"), Error);
}
