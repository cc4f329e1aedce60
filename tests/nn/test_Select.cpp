// test_Select.cpp
#include <doctest/doctest.h>

#include "nn/Select.h"
#include "tests/support/GradCheck.h"

using namespace tensor;
using namespace testing;

TEST_CASE("Select takes one slice, negative dimension and index counting from the end") {
  const Tensor x = arange(24, DType::Float64).view({2, 3, 4});
  nn::Select last(1, -1);
  const Tensor y = last.forward(x);
  CHECK(y.sizes() == Shape{2, 4});
  CHECK(y.shares_storage(x));
  CHECK(y.to_vector<double>() == std::vector<double>{8, 9, 10, 11, 20, 21, 22, 23});
  nn::Select first(-1, 0);
  CHECK(first.forward(x).to_vector<double>() == std::vector<double>{0, 4, 8, 12, 16, 20});
  const Tensor g = arange(8, DType::Float64).view({2, 4}).add(1.0);
  const Tensor gi = last.backward(x, g);
  CHECK(gi.sizes() == x.sizes());
  CHECK(gi.select(1, 2).to_vector<double>() == g.to_vector<double>());
  CHECK(gi.narrow(1, 0, 2).abs().sum().item() == 0);
}

TEST_CASE("Select gradients, state round trip, printing and errors") {
  Generator gen(71);
  nn::Select s(1, 2);
  expect_gradients_ok(s, uniform({2, 3, 2}, -1, 1, gen, DType::Float64));
  nn::Select a(0, -1), b(0, -1);
  expect_state_roundtrip_ok(a, b, uniform({4, 3}, -1, 1, gen));
  expect_prints_type(a);
  CHECK(a.str() == "nn.Select(0, -1)");
  CHECK_THROWS_WITH_AS(nn::Select(2, 0).forward(zeros({2, 5})),
                       "nn.Select::updateOutput: expected an input with dimension 2, got [2 x 5]", Error);
  CHECK_THROWS_WITH_AS(nn::Select(1, 5).forward(zeros({2, 5})),
                       "nn.Select::updateOutput: expected index 5 to lie in dimension 1 of size 5, got input [2 x 5]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::Select(1, -6).forward(zeros({2, 5})),
                       "nn.Select::updateOutput: expected index -6 to lie in dimension 1 of size 5, got input [2 x 5]",
                       Error);
  nn::Select ok(1, 0);
  ok.forward(zeros({2, 4}));
  CHECK_THROWS_WITH_AS(ok.backward(zeros({2, 4}), zeros({4})),
                       "nn.Select::updateGradInput: expected gradOutput of [2] (input [2 x 4]), got [4]", Error);
}
