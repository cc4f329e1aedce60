// test_Sequential.cpp
#include <doctest/doctest.h>

#include "nn/Identity.h"
#include "nn/Linear.h"
#include "nn/Sequential.h"
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
  CHECK_THROWS_WITH_AS(net.forward(zeros({3, 5})),
                       "In 1 module of nn.Sequential: nn.Linear::updateOutput: expected input of [4] or [batch x 4], got [3 x 5]",
                       Error);
  CHECK_THROWS_AS(net.get(2), Error);
  CHECK_THROWS_AS(net.add(nullptr), Error);
}
