// test_View.cpp
#include <doctest/doctest.h>

#include "nn/View.h"
#include "tests/support/GradCheck.h"

using namespace tensor;
using namespace testing;

TEST_CASE("View keeps a batch dimension as Torch does") {
  const Tensor x = arange(16).view({8, 2, 1});
  auto shape = [](nn::View& v, const Shape& in) { return v.forward(zeros(in)).sizes(); };
  nn::View v4(2);
  CHECK(shape(v4, {8, 2, 1}) == Shape{8, 2});
  CHECK(shape(v4, {2, 1}) == Shape{2});  // one sample: no batch dimension
  CHECK(shape(v4, {1, 2}) == Shape{2});  // a batch of one is indistinguishable, as in Torch
  nn::View v22(2, 2);
  CHECK(shape(v22, {3, 4}) == Shape{3, 2, 2});
  CHECK(shape(v22, {4}) == Shape{2, 2});
  nn::View inferred(2, -1);
  CHECK(shape(inferred, {6}) == Shape{2, 3});
  CHECK(shape(inferred, {3, 4}) == Shape{2, 6});  // -1 absorbs the batch without numInputDims
  nn::View flat(-1);
  CHECK(shape(flat, {5, 3, 4}) == Shape{60});
  flat.setNumInputDims(2);
  CHECK(shape(flat, {5, 3, 4}) == Shape{5, 12});
  CHECK(shape(flat, {3, 4}) == Shape{12});
  CHECK(shape(flat, {2, 5, 3, 4}) == Shape{10, 12});
  nn::View per(12);
  per.setNumInputDims(2);
  CHECK(shape(per, {3, 4}) == Shape{12});
  CHECK(shape(per, {1, 3, 4}) == Shape{1, 12});  // more dims than numInputDims: a batch, even of one
  CHECK(per.numElements == 12);
}

TEST_CASE("View output and gradInput share storage and keep values") {
  nn::View v(4);
  const Tensor x = arange(12, DType::Float64).view({3, 2, 2});
  const Tensor y = v.forward(x);
  CHECK(y.shares_storage(x));
  CHECK(y.to_vector<double>() == x.to_vector<double>());
  const Tensor g = arange(12, DType::Float64).view({3, 4});
  const Tensor gi = v.backward(x, g);
  CHECK(gi.sizes() == x.sizes());
  CHECK(gi.shares_storage(g));
  // a non-contiguous input is copied, in row-major order of its logical shape
  const Tensor xt = arange(6, DType::Float64).view({2, 3}).t();
  nn::View six(6);
  CHECK(six.forward(xt).to_vector<double>() == std::vector<double>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("View gradients, state round trip, printing and errors") {
  Generator gen(61);
  nn::View v(-1);
  v.setNumInputDims(2);
  expect_gradients_ok(v, uniform({2, 3, 2}, -1, 1, gen, DType::Float64));
  nn::View v2(3, 2);
  expect_gradients_ok(v2, uniform({6}, -1, 1, gen, DType::Float64));
  nn::View a(2, -1), b(2, -1);
  expect_state_roundtrip_ok(a, b, uniform({4, 3}, -1, 1, gen));
  expect_prints_type(a);
  CHECK(a.str() == "nn.View(2, -1)");
  CHECK(nn::View(Shape{7}).str() == "nn.View(7)");
  CHECK_THROWS_WITH_AS(nn::View(3).forward(zeros({2, 5})),
                       "nn.View::updateOutput: expected an input to hold a multiple of 3 elements to view as (3), "
                       "got [2 x 5]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::View(3).setNumInputDims(1).forward(zeros({3, 2})),
                       "nn.View::updateOutput: expected the last 1 dimensions of an input to hold a multiple of 3 "
                       "elements to view as (3), got [3 x 2]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::View(-1, -1), "nn.View: expected at most one -1 size, got (-1, -1)", Error);
  CHECK_THROWS_WITH_AS(nn::View(2, 0), "nn.View: expected positive sizes or -1, got (2, 0)", Error);
  CHECK_THROWS_WITH_AS(nn::View(Shape{}), "nn.View: expected at least one size", Error);
  nn::View ok(4);
  ok.forward(zeros({2, 4}));
  CHECK_THROWS_WITH_AS(ok.backward(zeros({2, 4}), zeros({7})),
                       "nn.View::updateGradInput: expected gradOutput of the output's shape [2 x 4] (input [2 x 4]), got [7]",
                       Error);
  CHECK_THROWS_WITH_AS(ok.backward(zeros({2, 4}), zeros({4, 2})),
                       "nn.View::updateGradInput: expected gradOutput of the output's shape [2 x 4] (input [2 x 4]), got "
                       "[4 x 2]",
                       Error);
}
