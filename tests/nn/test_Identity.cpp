// test_Identity.cpp
#include <doctest/doctest.h>

#include "nn/Identity.h"
#include "tests/support/GradCheck.h"

using namespace tensor;

TEST_CASE("Identity passes tensors through without copying") {
  nn::Identity m;
  Generator gen(4);
  Tensor x = uniform({2, 3}, -1, 1, gen, DType::Float64);
  CHECK(m.forward(x).is_same_view(x));
  Tensor g = uniform({2, 3}, -1, 1, gen, DType::Float64);
  CHECK(m.backward(x, g).is_same_view(g));
  testing::expect_gradients_ok(m, x);
  testing::expect_gradients_ok(m, uniform({5}, -1, 1, gen, DType::Float64));
  CHECK(m.str() == "nn.Identity");
  CHECK(m.parameters().empty());
}
