// test_Reshape.cpp
#include <doctest/doctest.h>

#include "nn/Reshape.h"
#include "tests/support/GradCheck.h"

using namespace tensor;
using namespace testing;

TEST_CASE("Reshape reads batches as Torch does, or as batchMode says") {
  auto shape = [](nn::Reshape& r, const Shape& in) { return r.forward(zeros(in)).sizes(); };
  nn::Reshape r6(6);
  CHECK(shape(r6, {2, 3}) == Shape{6});        // exactly one sample
  CHECK(shape(r6, {1, 2, 3}) == Shape{1, 6});  // first size 1: a batch of one
  CHECK(shape(r6, {4, 2, 3}) == Shape{4, 6});
  CHECK(shape(r6, {4, 6}) == Shape{4, 6});
  nn::Reshape r23(2, 3);
  CHECK(shape(r23, {6}) == Shape{2, 3});
  CHECK(shape(r23, {5, 6}) == Shape{5, 2, 3});
  nn::Reshape forced({3}, true);
  CHECK(shape(forced, {1, 3}) == Shape{1, 3});
  CHECK(shape(forced, {2, 3}) == Shape{2, 3});
  nn::Reshape single({6}, false);
  CHECK(shape(single, {1, 6}) == Shape{6});
  CHECK(shape(single, {3, 2}) == Shape{6});
  CHECK(r23.nelement == 6);
}

TEST_CASE("Reshape shares storage and keeps values") {
  nn::Reshape r(2, 2);
  const Tensor x = arange(8, DType::Float64).view({2, 4});
  const Tensor y = r.forward(x);
  CHECK(y.sizes() == Shape{2, 2, 2});
  CHECK(y.shares_storage(x));
  CHECK(y.to_vector<double>() == x.to_vector<double>());
  const Tensor g = arange(8, DType::Float64).view({2, 2, 2});
  const Tensor gi = r.backward(x, g);
  CHECK(gi.sizes() == x.sizes());
  CHECK(gi.shares_storage(g));
  const Tensor xt = arange(8, DType::Float64).view({4, 2}).t();  // [2 x 4], non-contiguous
  CHECK(r.forward(xt).to_vector<double>() == std::vector<double>{0, 2, 4, 6, 1, 3, 5, 7});
}

TEST_CASE("Reshape gradients, state round trip, printing and errors") {
  Generator gen(62);
  nn::Reshape r(3, 2);
  expect_gradients_ok(r, uniform({6}, -1, 1, gen, DType::Float64));
  expect_gradients_ok(r, uniform({4, 2, 3}, -1, 1, gen, DType::Float64));
  nn::Reshape a(2, 3), b(2, 3);
  expect_state_roundtrip_ok(a, b, uniform({4, 6}, -1, 1, gen));
  expect_prints_type(a);
  CHECK(a.str() == "nn.Reshape(2x3)");
  CHECK(nn::Reshape(Shape{12}, true).str() == "nn.Reshape(12)");
  CHECK_THROWS_WITH_AS(a.forward(zeros({4, 5})),
                       "nn.Reshape::updateOutput: expected an input of [batch x ...] with 6 elements per sample to "
                       "reshape to [batch x 2 x 3], got [4 x 5]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::Reshape({6}, false).forward(zeros({4, 6})),
                       "nn.Reshape::updateOutput: expected an input of 6 elements to reshape to [6], got [4 x 6]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::Reshape(2, -1), "nn.Reshape: expected positive sizes, got (2, -1)", Error);
  CHECK_THROWS_WITH_AS(nn::Reshape(Shape{}), "nn.Reshape: expected at least one size", Error);
}
