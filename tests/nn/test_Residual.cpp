// test_Residual.cpp
#include <doctest/doctest.h>

#include "nn/Dropout.h"
#include "nn/Identity.h"
#include "nn/Linear.h"
#include "nn/Residual.h"
#include "nn/Sequential.h"
#include "tests/support/GradCheck.h"

using namespace tensor;
using namespace testing;

namespace {
// Identity that counts how often each pass runs.
struct Counting : nn::Identity {
  int forwards = 0, gradInputs = 0, accs = 0;
  const Tensor& updateOutput(const Tensor& x) override {
    ++forwards;
    return nn::Identity::updateOutput(x);
  }
  const Tensor& updateGradInput(const Tensor& x, const Tensor& g) override {
    ++gradInputs;
    return nn::Identity::updateGradInput(x, g);
  }
  void accGradParameters(const Tensor&, const Tensor&, double) override { ++accs; }
};
}  // namespace

TEST_CASE("Residual adds the block to the (identity or given) shortcut") {
  auto lin = std::make_shared<nn::Linear>(2, 2);
  lin->weight.copy_(from_vector<float>({1, 2, 0, -1}, {2, 2}));
  lin->bias.copy_(from_vector<float>({1, 0}));
  nn::Residual r(lin);
  // block: [x0 + 2 x1 + 1, -x1]; plus x
  CHECK(r.forward(from_vector<float>({1, 3})).to_vector<float>() == std::vector<float>{9, 0});
  CHECK(r.forward(from_vector<float>({1, 3, 0, 1}, {2, 2})).to_vector<float>() == std::vector<float>{9, 0, 3, 0});
  CHECK(r.shortcut() == nullptr);
  CHECK(r.size() == 1);
  auto sc = std::make_shared<nn::Linear>(2, 2, false);
  sc->weight.copy_(from_vector<float>({0, 1, 1, 0}, {2, 2}));
  nn::Residual rs(lin, sc);
  CHECK(rs.forward(from_vector<float>({1, 3})).to_vector<float>() == std::vector<float>{11, -2});
  CHECK(rs.block() == lin);
  CHECK(rs.shortcut() == sc);
  const auto names = rs.namedParameters();
  REQUIRE(names.size() == 3);
  CHECK(names[0].first == "0.weight");
  CHECK(names[2].first == "1.weight");
  // gradInput = block' + shortcut': W^T g + S^T g
  const Tensor g = from_vector<float>({1, 1});
  CHECK(rs.backward(from_vector<float>({1, 3}), g).to_vector<float>() == std::vector<float>{1 + 1, 1 + 1});
  CHECK(r.backward(from_vector<float>({1, 3}), g).to_vector<float>() == std::vector<float>{1 + 1, 1 + 1});
}

TEST_CASE("Residual runs each child's backward once") {
  auto block = std::make_shared<Counting>();
  auto shortcut = std::make_shared<Counting>();
  nn::Residual r(block, shortcut);
  const Tensor x = from_vector<double>({1, 2, 3});
  r.forward(x);
  const Tensor& gi = r.backward(x, from_vector<double>({1, 1, 1}));
  CHECK(gi.to_vector<double>() == std::vector<double>{2, 2, 2});
  CHECK(block->forwards == 1);
  CHECK(block->gradInputs == 1);
  CHECK(block->accs == 1);
  CHECK(shortcut->gradInputs == 1);
  CHECK(shortcut->accs == 1);
}

TEST_CASE("Residual gradients: identity and projection shortcuts, ResNet-style blocks") {
  Generator gen(5150);
  INFO("size seed 5150");
  for (int trial = 0; trial < 3; ++trial) {
    const int64_t n = random_size(gen, 1, 5), hidden = random_size(gen, 1, 4), out = random_size(gen, 1, 4);
    const int64_t batch = random_size(gen, 1, 4);
    auto block = [&](int64_t in, int64_t o) {
      return std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
          std::make_shared<nn::Linear>(in, hidden), std::make_shared<nn::Linear>(hidden, o)});
    };
    nn::Residual identity(block(n, n));
    identity.to(DType::Float64);
    expect_gradients_ok(identity, uniform({batch, n}, -1, 1, gen, DType::Float64));
    expect_gradients_ok(identity, uniform({n}, -1, 1, gen, DType::Float64));
    expect_accumulation_ok(identity, uniform({batch, n}, -1, 1, gen, DType::Float64));
    nn::Residual projection(block(n, out), std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
                                               std::make_shared<nn::Linear>(n, out, false)}));
    projection.to(DType::Float64);
    expect_gradients_ok(projection, uniform({batch, n}, -1, 1, gen, DType::Float64));
    expect_accumulation_ok(projection, uniform({batch, n}, -1, 1, gen, DType::Float64));
    // residual units stack
    nn::Sequential net{std::make_shared<nn::Residual>(block(n, n)), std::make_shared<nn::Residual>(block(n, n))};
    net.to(DType::Float64);
    expect_gradients_ok(net, uniform({batch, n}, -1, 1, gen, DType::Float64));
  }
  // a stochastic child, reseeded by the checker
  nn::Residual drop(std::make_shared<nn::Dropout>(0.3));
  expect_gradients_ok(drop, uniform({3, 4}, -1, 1, gen, DType::Float64));
}

TEST_CASE("Residual state round trip, train/evaluate, printing and errors") {
  Generator gen(3);
  auto make = [] {
    return nn::Residual(std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::Linear>(4, 3));
  };
  nn::Residual a = make(), b = make();
  expect_state_roundtrip_ok(a, b, uniform({2, 4}, -1, 1, gen));
  expect_prints_type(a);
  a.evaluate();
  CHECK_FALSE(a.block()->isTraining());
  CHECK_FALSE(a.shortcut()->isTraining());

  auto seq = std::make_shared<nn::Sequential>(
      std::initializer_list<nn::ModulePtr>{std::make_shared<nn::Linear>(4, 4), std::make_shared<nn::Identity>()});
  CHECK(nn::Residual(seq).str() ==
        "nn.Residual {\n"
        "  block: nn.Sequential {\n"
        "    [input -> (1) -> (2) -> output]\n"
        "    (1): nn.Linear(4 -> 4)\n"
        "    (2): nn.Identity\n"
        "  }\n"
        "  shortcut: identity\n"
        "}");
  CHECK(a.str() ==
        "nn.Residual {\n"
        "  block: nn.Linear(4 -> 3)\n"
        "  shortcut: nn.Linear(4 -> 3)\n"
        "}");

  nn::Residual wrong(std::make_shared<nn::Linear>(4, 3));
  CHECK_THROWS_WITH_AS(wrong.forward(zeros({5, 4})),
                       "nn.Residual::updateOutput: expected block and identity shortcut (the input) outputs of the "
                       "same shape, got [5 x 3] and [5 x 4]",
                       Error);
  nn::Residual wrong2(std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::Linear>(4, 2));
  CHECK_THROWS_WITH_AS(wrong2.forward(zeros({5, 4})),
                       "nn.Residual::updateOutput: expected block and shortcut outputs of the same shape, got "
                       "[5 x 3] and [5 x 2]",
                       Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({5, 2})),
                       "In 1 module of nn.Residual: nn.Linear::updateOutput: expected input of [4] or [batch x 4], "
                       "got [5 x 2]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::Residual(nullptr), "nn.Residual: expected a block module, got nullptr", Error);
  a.add(std::make_shared<nn::Identity>());
  CHECK_THROWS_WITH_AS(a.forward(zeros({5, 4})),
                       "nn.Residual::updateOutput: expected a block and an optional shortcut (1 or 2 modules), got 3 "
                       "modules",
                       Error);
}
