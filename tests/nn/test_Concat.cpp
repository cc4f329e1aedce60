// test_Concat.cpp
#include <doctest/doctest.h>

#include "nn/Concat.h"
#include "nn/Identity.h"
#include "nn/Linear.h"
#include "nn/Sequential.h"
#include "tests/support/GradCheck.h"

using namespace tensor;
using namespace testing;

namespace {
std::shared_ptr<nn::Linear> linear(int64_t in, int64_t out, std::vector<double> w, std::vector<double> b) {
  auto m = std::make_shared<nn::Linear>(in, out);
  m->weight.copy_(from_vector<double>(w, {out, in}));
  m->bias.copy_(from_vector<double>(b));
  return m;
}
}  // namespace

TEST_CASE("Concat feeds every child the input and concatenates along a 0-based dimension") {
  // y1 = [x0 + x1, x1 - 1], y2 = [2 x0 + 1]
  auto a = linear(2, 2, {1, 1, 0, 1}, {0, -1});
  auto b = linear(2, 1, {2, 0}, {1});
  nn::Concat cat(1, {a, b});
  const Tensor x = from_vector<float>({1, 2, 3, 4}, {2, 2});
  const Tensor y = cat.forward(x);
  CHECK(y.sizes() == Shape{2, 3});
  CHECK(y.to_vector<float>() == std::vector<float>{3, 1, 3, 7, 3, 7});
  // dimension 0 of a single sample
  nn::Concat cat0(0, {a, b});
  CHECK(cat0.forward(from_vector<float>({1, 2})).to_vector<float>() == std::vector<float>{3, 1, 3});
  // -1 counts from the end
  nn::Concat catm(-1, {a, b});
  CHECK(catm.forward(x).to_vector<float>() == y.to_vector<float>());
  // dimension 0 of a batch stacks the samples
  nn::Concat stack(0, {a, std::make_shared<nn::Identity>()});
  const Tensor s = stack.forward(x);
  CHECK(s.sizes() == Shape{4, 2});
  CHECK(s.to_vector<float>() == std::vector<float>{3, 1, 7, 3, 1, 2, 3, 4});
  CHECK(cat.namedParameters()[2].first == "1.weight");
}

TEST_CASE("Concat gradInput is the sum of the children's gradInputs") {
  nn::Concat cat(1, {std::make_shared<nn::Identity>(), std::make_shared<nn::Identity>()});
  const Tensor x = from_vector<double>({1, 2, 3, 4}, {2, 2});
  CHECK(cat.forward(x).to_vector<double>() == std::vector<double>{1, 2, 1, 2, 3, 4, 3, 4});
  const Tensor g = from_vector<double>({1, 2, 10, 20, 3, 4, 30, 40}, {2, 4});
  CHECK(cat.backward(x, g).to_vector<double>() == std::vector<double>{11, 22, 33, 44});
  // Torch's two-step contract gives the same
  CHECK(cat.updateGradInput(x, g).to_vector<double>() == std::vector<double>{11, 22, 33, 44});
}

TEST_CASE("Concat gradients (dimensions, batch and single, nested children)") {
  Generator gen(4401);
  INFO("size seed 4401");
  for (int trial = 0; trial < 3; ++trial) {
    const int64_t in = random_size(gen, 1, 5), o1 = random_size(gen, 1, 4), o2 = random_size(gen, 1, 4);
    const int64_t batch = random_size(gen, 1, 4);
    auto seq = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
        std::make_shared<nn::Linear>(in, 3), std::make_shared<nn::Linear>(3, o2)});
    nn::Concat c1(1, {std::make_shared<nn::Linear>(in, o1), seq, std::make_shared<nn::Identity>()});
    c1.to(DType::Float64);
    expect_gradients_ok(c1, uniform({batch, in}, -1, 1, gen, DType::Float64));
    expect_accumulation_ok(c1, uniform({batch, in}, -1, 1, gen, DType::Float64));
    nn::Concat c0(0, {std::make_shared<nn::Linear>(in, o1), std::make_shared<nn::Linear>(in, o2, false)});
    c0.to(DType::Float64);
    expect_gradients_ok(c0, uniform({in}, -1, 1, gen, DType::Float64));
    nn::Concat stack(0, {std::make_shared<nn::Linear>(in, o1), std::make_shared<nn::Linear>(in, o1)});
    stack.to(DType::Float64);
    expect_gradients_ok(stack, uniform({batch, in}, -1, 1, gen, DType::Float64));
    expect_accumulation_ok(stack, uniform({batch, in}, -1, 1, gen, DType::Float64));
  }
}

TEST_CASE("Concat state round trip, printing and errors") {
  Generator gen(2);
  auto make = [] {
    return nn::Concat(1, {std::make_shared<nn::Linear>(4, 2), std::make_shared<nn::Linear>(4, 3)});
  };
  nn::Concat a = make(), b = make();
  expect_state_roundtrip_ok(a, b, uniform({3, 4}, -1, 1, gen));
  expect_prints_type(a);
  auto inner = std::make_shared<nn::Sequential>(
      std::initializer_list<nn::ModulePtr>{std::make_shared<nn::Linear>(4, 2), std::make_shared<nn::Identity>()});
  nn::Concat printed(1, {std::make_shared<nn::Linear>(4, 3), inner});
  CHECK(printed.str() ==
        "nn.Concat {\n"
        "  input\n"
        "    |`-> (1): nn.Linear(4 -> 3)\n"
        "    |`-> (2): nn.Sequential {\n"
        "    |      [input -> (1) -> (2) -> output]\n"
        "    |      (1): nn.Linear(4 -> 2)\n"
        "    |      (2): nn.Identity\n"
        "    |    }\n"
        "     ... -> output\n"
        "}");

  nn::Concat mismatch(0, {std::make_shared<nn::Linear>(4, 2), std::make_shared<nn::Linear>(4, 3)});
  CHECK_THROWS_WITH_AS(mismatch.forward(zeros({5, 4})),
                       "nn.Concat::updateOutput: expected the output of module 2 to match [5 x 2] (module 1) "
                       "except in dimension 0, got [5 x 3]",
                       Error);
  nn::Concat far(2, {std::make_shared<nn::Linear>(4, 2)});
  CHECK_THROWS_WITH_AS(far.forward(zeros({5, 4})),
                       "nn.Concat::updateOutput: expected dimension in [-2, 1] for outputs of [5 x 2], got 2", Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({5, 3})),
                       "In 1 module of nn.Concat: nn.Linear::updateOutput: expected input of [4] or [batch x 4], "
                       "got [5 x 3]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::Concat(1).forward(zeros({5, 3})),
                       "nn.Concat::updateOutput: expected at least one module, got none", Error);
  a.forward(zeros({5, 4}));
  CHECK_THROWS_WITH_AS(a.backward(zeros({5, 4}), zeros({5, 4})),
                       "nn.Concat::backward: expected gradOutput of [5 x 5], got [5 x 4]", Error);
}
