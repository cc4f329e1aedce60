// test_Sequential.cpp
#include <doctest/doctest.h>

#include "nn/Identity.h"
#include "nn/Linear.h"
#include "nn/ReLU.h"
#include "nn/Sequential.h"
#include "tests/support/AddingChecks.h"
#include "tests/support/GradCheck.h"

using namespace tensor;

TEST_CASE("Sequential composes forward and backward") {
  Generator gen(8);
  auto l1 = std::make_shared<nn::Linear>(4, 3);
  auto l2 = std::make_shared<nn::Linear>(3, 2);
  nn::Sequential net{l1, std::make_shared<nn::Identity>(), l2};
  net.to(DType::Float64);
  Tensor x = uniform({5, 4}, -1, 1, gen, DType::Float64);
  const Tensor y = net.forward(x);
  const Tensor expect = l2->forward(l1->forward(x).clone());
  CHECK(max_abs_diff(y, expect) < 1e-14);
  testing::expect_gradients_ok(net, x);
  testing::expect_accumulation_ok(net, x);
  CHECK(net.parameters().size() == 4);
  const auto names = net.namedParameters();
  CHECK(names[0].first == "0.weight");
  CHECK(names[3].first == "2.bias");
  nn::Sequential empty_net;
  CHECK(empty_net.forward(x).is_same_view(x));
}

TEST_CASE("Sequential prints like Torch and prefixes child errors") {
  auto inner = std::make_shared<nn::Sequential>(
      std::initializer_list<nn::ModulePtr>{std::make_shared<nn::Linear>(2, 2), std::make_shared<nn::Identity>()});
  nn::Sequential net{std::make_shared<nn::Linear>(4, 2), inner};
  CHECK(net.str() ==
        "nn.Sequential {\n"
        "  [input -> (1) -> (2) -> output]\n"
        "  (1): nn.Linear(4 -> 2)\n"
        "  (2): nn.Sequential {\n"
        "    [input -> (1) -> (2) -> output]\n"
        "    (1): nn.Linear(2 -> 2)\n"
        "    (2): nn.Identity\n"
        "  }\n"
        "}");
  CHECK_THROWS_WITH_AS(
      net.forward(zeros({3, 5})),
      "In 1 module of nn.Sequential: nn.Linear::updateOutput: expected input of [4] or [batch x 4], got [3 x 5]",
      Error);
  CHECK_THROWS_AS(net.get(2), Error);
  CHECK_THROWS_AS(net.add(nullptr), Error);
}

// The first-n passes (for a module that computes the rest itself, cudnn::FusedResidual): the
// first n children's output and gradients are the whole Sequential's with the rest run by hand.
TEST_CASE("Sequential's first-n passes equal the whole passes with the last children run apart") {
  Generator gen(9);
  auto l1 = std::make_shared<nn::Linear>(4, 3);
  auto l2 = std::make_shared<nn::Linear>(3, 3);
  auto l3 = std::make_shared<nn::Linear>(3, 2);
  nn::Sequential net{l1, l2, l3};
  net.to(DType::Float64);
  const Tensor x = uniform({5, 4}, -1, 1, gen, DType::Float64);
  const Tensor g = uniform({5, 2}, -1, 1, gen, DType::Float64);

  // the whole passes, for reference
  net.zeroGradParameters();
  const Tensor y = net.forward(x).clone();
  const Tensor gx = net.backward(x, g, 0.5).clone();
  std::vector<Tensor> grads;
  for (const Tensor& p : net.gradParameters()) grads.push_back(p.clone());

  // the first two children through the Sequential, the third by hand
  net.zeroGradParameters();
  const Tensor h = net.forwardFirst(x, 2);
  CHECK(max_abs_diff(l3->forward(h), y) == 0);
  const Tensor gh = l3->backward(h, g, 0.5).clone();
  CHECK(max_abs_diff(net.backwardFirst(x, gh, 2, 0.5), gx) == 0);
  std::vector<Tensor> after = net.gradParameters();
  REQUIRE(after.size() == grads.size());
  for (size_t i = 0; i < grads.size(); ++i) CHECK(max_abs_diff(after[i], grads[i]) == 0);

  // the Torch split
  net.zeroGradParameters();
  net.forwardFirst(x, 2);
  l3->forward(h);
  const Tensor gh2 = l3->updateGradInput(h, g).clone();
  l3->accGradParameters(h, g, 0.5);
  CHECK(max_abs_diff(net.updateGradInputFirst(x, gh2, 2), gx) == 0);
  net.accGradParametersFirst(x, gh2, 2, 0.5);
  after = net.gradParameters();
  for (size_t i = 0; i < grads.size(); ++i) CHECK(max_abs_diff(after[i], grads[i]) == 0);

  // forwardFirst records the next child's input too: a whole backward still works after it
  net.zeroGradParameters();
  net.forwardFirst(x, 2);
  l3->forward(h);
  CHECK(max_abs_diff(net.backward(x, g, 0.5), gx) == 0);

  // n = 0 hands the input and the gradient through; n past the children is an error
  CHECK(net.forwardFirst(x, 0).is_same_view(x));
  CHECK(max_abs_diff(net.backwardFirst(x, gx, 0, 1.0), gx) == 0);
  CHECK_THROWS_WITH_AS(net.forwardFirst(x, 4), doctest::Contains("expected at most 3 children, got 4"), tensor::Error);
}

TEST_CASE("Sequential forwardAdding: its last child adds (GPT-2's mlp), else it has no such form") {
  Generator gen(9);
  nn::Sequential mlp{std::make_shared<nn::Linear>(4, 6), std::make_shared<nn::ReLU>(),
                     std::make_shared<nn::Linear>(6, 4)};
  CHECK(mlp.addsInForward());
  testing::expect_adding_exact(mlp, uniform({3, 4}, -1, 1, gen));
  testing::expect_adding_exact(mlp, uniform({2, 3, 4}, -1, 1, gen));
  nn::Sequential endsInReLU{std::make_shared<nn::Linear>(4, 6), std::make_shared<nn::ReLU>()};
  CHECK_FALSE(endsInReLU.addsInForward());
  CHECK_FALSE(nn::Sequential().addsInForward());
  CHECK_THROWS_WITH_AS(endsInReLU.forwardAdding(zeros({1, 4}), zeros({1, 6})), doctest::Contains("has no such form"),
                       Error);
  // the last child's refusal of the addend names the path
  CHECK_THROWS_WITH_AS(mlp.forwardAdding(zeros({1, 4}), zeros({1, 5})),
                       doctest::Contains("nn.Linear::forwardAdding: expected a contiguous addend [1 x 4]"), Error);
}