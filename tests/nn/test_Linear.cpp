// test_Linear.cpp
#include <doctest/doctest.h>

#include "nn/Linear.h"
#include "tests/support/GradCheck.h"

using namespace tensor;
using namespace testing;

TEST_CASE("Linear forward matches a hand computation") {
  nn::Linear m(3, 2);
  m.weight.copy_(from_vector<float>({1, 2, 3, -1, 0, 1}, {2, 3}));
  m.bias.copy_(from_vector<float>({0.5f, -0.5f}));
  const Tensor y = m.forward(from_vector<float>({1, 1, 2}));
  CHECK(y.sizes() == Shape{2});
  CHECK(y.to_vector<float>() == std::vector<float>{9.5f, 0.5f});
  const Tensor yb = m.forward(from_vector<float>({1, 1, 2, 0, 0, 0}, {2, 3}));
  CHECK(yb.to_vector<float>() == std::vector<float>{9.5f, 0.5f, 0.5f, -0.5f});
  nn::Linear nb(3, 2, false);
  nb.weight.copy_(m.weight);
  CHECK(nb.forward(from_vector<float>({1, 1, 2})).to_vector<float>() == std::vector<float>{9, 1});
  CHECK(nb.parameters().size() == 1);
}

TEST_CASE("Linear initialisation follows Torch: U(-1/sqrt(in), 1/sqrt(in))") {
  manual_seed(3);
  nn::Linear m(100, 50);
  CHECK(m.weight.abs().max().item() <= 0.1);
  CHECK(m.weight.abs().max().item() > 0.09);
  CHECK(std::abs(m.weight.mean().item()) < 0.01);
}

TEST_CASE("Linear gradients (batch and single, with and without bias, random sizes)") {
  Generator gen(20261122);
  INFO("size seed 20261122");
  for (int trial = 0; trial < 3; ++trial) {
    const int64_t in = random_size(gen, 1, 7), out = random_size(gen, 1, 6), batch = random_size(gen, 1, 5);
    for (bool bias : {true, false}) {
      nn::Linear m(in, out, bias);
      m.to(DType::Float64);
      expect_gradients_ok(m, uniform({batch, in}, -1, 1, gen, DType::Float64));
      expect_gradients_ok(m, uniform({in}, -1, 1, gen, DType::Float64));
      expect_accumulation_ok(m, uniform({batch, in}, -1, 1, gen, DType::Float64));
    }
  }
}

TEST_CASE("Linear state round trip, printing and errors") {
  Generator gen(1);
  nn::Linear a(4, 3), b(4, 3);
  expect_state_roundtrip_ok(a, b, uniform({2, 4}, -1, 1, gen));
  CHECK(a.str() == "nn.Linear(4 -> 3)");
  CHECK(nn::Linear(4, 3, false).str() == "nn.Linear(4 -> 3) without bias");
  expect_prints_type(a);
  CHECK_THROWS_WITH_AS(a.forward(zeros({2, 5})),
                       "nn.Linear::updateOutput: expected input of [4] or [batch x 4], got [2 x 5]", Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({2, 4}, DType::Float64)),
                       doctest::Contains("expected input of weight's dtype and device (float32 on cpu), got float64 [2 x 4] on cpu"),
                       Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({2, 4}, DType::Int64)),
                       "nn.Linear::updateOutput: expected float32 or float64 input, got int64 [2 x 4] on cpu", Error);
  CHECK_THROWS_AS(nn::Linear(0, 3), Error);
}
