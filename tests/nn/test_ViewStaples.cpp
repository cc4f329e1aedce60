// test_ViewStaples.cpp: the view modules Narrow, Transpose, Squeeze and Unsqueeze: values and
// storage sharing, negative dimensions and offsets, Torch's numInputDims batches, gradients,
// state round trips, printing and errors.
#include <doctest/doctest.h>

#include "nn/Narrow.h"
#include "nn/Squeeze.h"
#include "nn/Transpose.h"
#include "nn/Unsqueeze.h"
#include "tests/support/GradCheck.h"

using namespace tensor;
using namespace testing;

TEST_CASE("Narrow takes a window, negative dimension, offset and length counting from the end") {
  const Tensor x = arange(24, DType::Float64).view({2, 3, 4});
  nn::Narrow n(2, 1, 2);
  const Tensor y = n.forward(x);
  CHECK(y.sizes() == Shape{2, 3, 2});
  CHECK(y.shares_storage(x));
  CHECK(y.select(0, 0).select(0, 0).to_vector<double>() == std::vector<double>{1, 2});
  CHECK(nn::Narrow(-1, -2, 2).forward(x).to_vector<double>() == nn::Narrow(2, 2, 2).forward(x).to_vector<double>());
  CHECK(nn::Narrow(1, 1, -1).forward(x).sizes() == Shape{2, 2, 4});  // through the end
  CHECK(nn::Narrow(1, 0, -2).forward(x).sizes() == Shape{2, 2, 4});  // all but the last
  CHECK(nn::Narrow(0, 1).forward(x).sizes() == Shape{1, 3, 4});      // length 1 by default
  const Tensor g = ones({2, 3, 2}, DType::Float64);
  const Tensor gi = n.backward(x, g);
  CHECK(gi.sizes() == x.sizes());
  CHECK(gi.sum().item() == 12);
  CHECK(gi.narrow(2, 1, 2).sum().item() == 12);
}

TEST_CASE("Narrow gradients, state round trip, printing and errors") {
  Generator gen(81);
  nn::Narrow n(1, -3, 2);
  expect_gradients_ok(n, uniform({2, 4, 3}, -1, 1, gen, DType::Float64));
  nn::Narrow a(0, 1, -1), b(0, 1, -1);
  expect_state_roundtrip_ok(a, b, uniform({4, 3}, -1, 1, gen));
  expect_prints_type(a);
  CHECK(a.str() == "nn.Narrow(0, 1, -1)");
  CHECK_THROWS_WITH_AS(nn::Narrow(2, 0).forward(zeros({2, 5})),
                       "nn.Narrow::updateOutput: expected an input with dimension 2, got [2 x 5]", Error);
  CHECK_THROWS_WITH_AS(nn::Narrow(1, 4, 2).forward(zeros({2, 5})),
                       "nn.Narrow::updateOutput: expected offset 4 and length 2 to lie in dimension 1 of size 5, got "
                       "input [2 x 5]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::Narrow(1, 0, 0), "nn.Narrow: expected a non-zero length, got 0", Error);
  nn::Narrow ok(1, 0, 2);
  ok.forward(zeros({2, 4}));
  CHECK_THROWS_WITH_AS(ok.backward(zeros({2, 4}), zeros({2, 3})),
                       "nn.Narrow::updateGradInput: expected gradOutput of [2 x 2] (input [2 x 4]), got [2 x 3]",
                       Error);
}

TEST_CASE("Transpose swaps each pair in turn; gradInput undoes them in reverse") {
  Generator gen(82);
  const Tensor x = uniform({2, 3, 4, 5}, -1, 1, gen, DType::Float64);
  nn::Transpose t({{0, 1}, {1, 3}});  // [2,3,4,5] -> [3,2,4,5] -> [3,5,4,2]
  const Tensor y = t.forward(x);
  CHECK(y.sizes() == Shape{3, 5, 4, 2});
  CHECK(y.shares_storage(x));
  CHECK(y.get({2, 4, 1, 0}) == x.get({0, 2, 1, 4}));
  CHECK(nn::Transpose({{-1, 0}}).forward(x).sizes() == Shape{5, 3, 4, 2});
  const Tensor g = uniform(y.sizes(), -1, 1, gen, DType::Float64);
  const Tensor gi = t.backward(x, g);
  CHECK(gi.sizes() == x.sizes());
  CHECK(gi.get({0, 2, 1, 4}) == g.get({2, 4, 1, 0}));
  expect_gradients_ok(t, uniform({2, 3, 2, 3}, -1, 1, gen, DType::Float64));
  nn::Transpose a({{0, 1}, {2, 3}}), b({{0, 1}, {2, 3}});
  expect_state_roundtrip_ok(a, b, uniform({2, 3, 2, 2}, -1, 1, gen));
  expect_prints_type(a);
  CHECK(a.str() == "nn.Transpose({0, 1}, {2, 3})");
  CHECK(nn::Transpose({}).forward(x).is_same_view(x));
  CHECK_THROWS_WITH_AS(nn::Transpose({{0, 2}}).forward(zeros({2, 5})),
                       "nn.Transpose::updateOutput: expected an input with dimensions 0 and 2, got [2 x 5]", Error);
  nn::Transpose ok({{0, 1}});
  ok.forward(zeros({2, 5}));
  CHECK_THROWS_WITH_AS(ok.backward(zeros({2, 5}), zeros({2, 5})),
                       "nn.Transpose::updateGradInput: expected gradOutput of the output's shape [5 x 2] (input [2 x "
                       "5]), got [2 x 5]",
                       Error);
}

TEST_CASE("Squeeze drops every size-1 dimension, or one; Torch's numInputDims keeps a batch of one") {
  Generator gen(83);
  const Tensor x = uniform({1, 3, 1, 2}, -1, 1, gen, DType::Float64);
  nn::Squeeze all;
  CHECK(all.forward(x).sizes() == Shape{3, 2});
  CHECK(all.output.shares_storage(x));
  CHECK(nn::Squeeze(2).forward(x).sizes() == Shape{1, 3, 2});
  CHECK(nn::Squeeze(-2).forward(x).sizes() == Shape{1, 3, 2});
  CHECK(nn::Squeeze(1).forward(x).sizes() == Shape{1, 3, 1, 2});  // not of size 1: kept
  // one sample is [3 x 1 x 2]: a batch of one keeps its batch dimension, and dim 1 means the sample's
  CHECK(nn::Squeeze().setNumInputDims(3).forward(x).sizes() == Shape{1, 3, 2});
  CHECK(nn::Squeeze(1, 3).forward(x).sizes() == Shape{1, 3, 2});
  CHECK(nn::Squeeze(1, 3).forward(x.select(0, 0)).sizes() == Shape{3, 2});
  const Tensor g = uniform({3, 2}, -1, 1, gen, DType::Float64);
  CHECK(all.backward(x, g).sizes() == x.sizes());
  CHECK(all.gradInput.to_vector<double>() == g.to_vector<double>());
  expect_gradients_ok(all, uniform({2, 1, 3}, -1, 1, gen, DType::Float64));
  nn::Squeeze a(1, 2), b(1, 2);
  expect_state_roundtrip_ok(a, b, uniform({4, 1, 3}, -1, 1, gen));
  expect_prints_type(a);
  CHECK(a.str() == "nn.Squeeze(1)");
  CHECK(all.str() == "nn.Squeeze");
  CHECK_THROWS_WITH_AS(nn::Squeeze(3).forward(zeros({2, 1, 5})),
                       "nn.Squeeze::updateOutput: expected an input with dimension 3, got [2 x 1 x 5]", Error);
  all.forward(zeros({2, 1, 5}));
  CHECK_THROWS_WITH_AS(all.backward(zeros({2, 1, 5}), zeros({2, 1, 5})),
                       "nn.Squeeze::updateGradInput: expected gradOutput of the output's shape [2 x 5] (input [2 x 1 "
                       "x 5]), got [2 x 1 x 5]",
                       Error);
}

TEST_CASE("Unsqueeze inserts a size-1 dimension at pos of the output") {
  Generator gen(84);
  const Tensor x = uniform({2, 3}, -1, 1, gen, DType::Float64);
  CHECK(nn::Unsqueeze(0).forward(x).sizes() == Shape{1, 2, 3});
  CHECK(nn::Unsqueeze(2).forward(x).sizes() == Shape{2, 3, 1});
  CHECK(nn::Unsqueeze(-1).forward(x).sizes() == Shape{2, 3, 1});
  CHECK(nn::Unsqueeze(-3).forward(x).sizes() == Shape{1, 2, 3});
  CHECK(nn::Unsqueeze(1, 1).forward(x).sizes() == Shape{2, 3, 1});  // [2] samples of [3]
  nn::Unsqueeze u(1);
  const Tensor y = u.forward(x);
  CHECK(y.shares_storage(x));
  const Tensor g = uniform({2, 1, 3}, -1, 1, gen, DType::Float64);
  CHECK(u.backward(x, g).sizes() == x.sizes());
  CHECK(u.gradInput.to_vector<double>() == g.to_vector<double>());
  expect_gradients_ok(u, uniform({3, 2}, -1, 1, gen, DType::Float64));
  nn::Unsqueeze a(-1, 2), b(-1, 2);
  expect_state_roundtrip_ok(a, b, uniform({4, 3}, -1, 1, gen));
  expect_prints_type(a);
  CHECK(a.str() == "nn.Unsqueeze(-1)");
  CHECK_THROWS_WITH_AS(nn::Unsqueeze(3).forward(zeros({2, 5})),
                       "nn.Unsqueeze::updateOutput: expected an input of at least 3 dimensions (position 3), got [2 x "
                       "5]",
                       Error);
  u.forward(zeros({2, 5}));
  CHECK_THROWS_WITH_AS(u.backward(zeros({2, 5}), zeros({2, 5})),
                       "nn.Unsqueeze::updateGradInput: expected gradOutput of the output's shape [2 x 1 x 5] (input [2 "
                       "x 5]), got [2 x 5]",
                       Error);
}
