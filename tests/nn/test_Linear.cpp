// test_Linear.cpp
#include <doctest/doctest.h>

#include "nn/Linear.h"
#include "nn/ReLU.h"
#include "tests/support/AddingChecks.h"
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
  CHECK_THROWS_WITH_AS(
      a.forward(zeros({2, 4}, DType::Float64)),
      doctest::Contains("expected input of weight's dtype and device (float32 on cpu), got float64 [2 x 4] on cpu"),
      Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({2, 4}, DType::Int64)),
                       "nn.Linear::updateOutput: expected float32 or float64 input, got int64 [2 x 4] on cpu", Error);
  CHECK_THROWS_AS(nn::Linear(0, 3), Error);
}

TEST_CASE("Linear over leading dims (PyTorch's [* x in]): 3-d and 4-d, each row as a 2-d batch") {
  // See Note [Linear over leading dims].
  Generator gen(20261201);
  INFO("seed 20261201");
  for (bool bias : {true, false}) {
    nn::Linear m(5, 3, bias);
    m.to(DType::Float64);
    for (const Shape& shape : {Shape{2, 4, 5}, Shape{2, 3, 2, 5}, Shape{1, 1, 1, 5}}) {
      INFO("input ", shape_str(shape), bias ? "" : " without bias");
      const Tensor x = uniform(shape, -1, 1, gen, DType::Float64);
      Shape outShape = shape;
      outShape.back() = 3;
      const Tensor g = uniform(outShape, -1, 1, gen, DType::Float64);
      const int64_t rows = x.numel() / 5;
      // the same rows through the 2-d path
      nn::Linear flat(5, 3, bias);
      flat.to(DType::Float64);
      flat.loadStateDict(m.stateDict());
      m.zeroGradParameters();
      flat.zeroGradParameters();
      const Tensor y = m.forward(x).clone();
      CHECK(y.sizes() == outShape);
      const Tensor yf = flat.forward(x.reshape({rows, 5}));
      CHECK(max_rel_error(y.reshape({rows, 3}), yf) < 1e-14);
      const Tensor gx = m.backward(x, g, 0.5).clone();
      CHECK(gx.sizes() == shape);
      const Tensor gxf = flat.backward(x.reshape({rows, 5}), g.reshape({rows, 3}), 0.5);
      CHECK(max_rel_error(gx.reshape({rows, 5}), gxf) < 1e-14);
      CHECK(max_rel_error(m.gradWeight, flat.gradWeight) < 1e-14);
      if (bias) CHECK(max_rel_error(m.gradBias, flat.gradBias) < 1e-14);
      expect_gradients_ok(m, x);
      expect_accumulation_ok(m, x);
    }
  }
}

TEST_CASE("Linear over leading dims: non-contiguous inputs (a view and a copy) give the contiguous answer") {
  Generator gen(20261202);
  INFO("seed 20261202");
  nn::Linear m(4, 3);
  m.to(DType::Float64);
  nn::Linear ref(4, 3);
  ref.to(DType::Float64);
  ref.loadStateDict(m.stateDict());
  // [3 x 2 x 4] transposed from [2 x 3 x 4]: the leading dims cannot merge, a copy
  const Tensor t = uniform({2, 3, 4}, -1, 1, gen, DType::Float64).transpose(0, 1);
  // [2 x 3 x 4] narrowed from [2 x 3 x 6]: the leading dims merge, rows are strided
  const Tensor n = uniform({2, 3, 6}, -1, 1, gen, DType::Float64).narrow(2, 1, 4);
  // [2 x 2 x 3 x 4] permuted: strides everywhere
  const Tensor p = uniform({3, 2, 4, 2}, -1, 1, gen, DType::Float64).permute({3, 1, 0, 2});
  for (const Tensor& x : {t, n, p}) {
    INFO("input ", shape_str(x.sizes()));
    REQUIRE(!x.is_contiguous());
    const Tensor xc = x.contiguous();
    Shape outShape = x.sizes();
    outShape.back() = 3;
    const Tensor g = uniform(outShape, -1, 1, gen, DType::Float64).transpose(0, 1).contiguous().transpose(0, 1);
    m.zeroGradParameters();
    ref.zeroGradParameters();
    CHECK(max_rel_error(m.forward(x), ref.forward(xc)) < 1e-15);
    CHECK(max_rel_error(m.backward(x, g), ref.backward(xc, g.contiguous())) < 1e-15);
    CHECK(m.gradInput.sizes() == x.sizes());
    CHECK(max_rel_error(m.gradWeight, ref.gradWeight) < 1e-15);
    CHECK(max_rel_error(m.gradBias, ref.gradBias) < 1e-15);
    expect_gradients_ok(m, x);
  }
}

TEST_CASE("Linear over leading dims: a zero-size leading dim is an empty batch; errors name the shapes") {
  nn::Linear m(4, 3);
  m.zeroGradParameters();
  for (const Shape& shape : {Shape{0, 4}, Shape{0, 2, 4}, Shape{2, 0, 4}, Shape{3, 0, 1, 4}}) {
    INFO("input ", shape_str(shape));
    Shape outShape = shape;
    outShape.back() = 3;
    const Tensor x = zeros(shape);
    CHECK(m.forward(x).sizes() == outShape);
    CHECK(m.backward(x, zeros(outShape)).sizes() == shape);
    CHECK(m.gradWeight.abs().max().item() == 0);
    CHECK(m.gradBias.abs().max().item() == 0);
  }
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3, 5})),
                       "nn.Linear::updateOutput: expected input of [* x 4] (any leading dims), got [2 x 3 x 5]", Error);
  CHECK_THROWS_WITH_AS(m.forward(tensor::scalar_tensor(1.0, DType::Float32)),
                       "nn.Linear::updateOutput: expected input of [* x 4] (any leading dims), got []", Error);
  const Tensor x = zeros({2, 3, 4});
  m.forward(x);
  CHECK_THROWS_WITH_AS(m.backward(x, zeros({6, 3})),
                       "nn.Linear::updateGradInput: expected gradOutput of the output's shape [2 x 3 x 3] (for input "
                       "[2 x 3 x 4]), got [6 x 3]",
                       Error);
}

TEST_CASE("Linear forwardAdding: forward + addend bit for bit, the same gradients; the addend checked first") {
  Generator gen(4);
  nn::Linear m(4, 3);
  for (const Shape& s : {Shape{2, 4}, Shape{4}, Shape{2, 5, 4}}) {
    INFO(shape_str(s));
    expect_adding_exact(m, uniform(s, -1, 1, gen));
  }
  m.to(DType::Float64);
  expect_adding_exact(m, uniform({3, 4}, -1, 1, gen, DType::Float64));
  m.to(DType::Float32);
  // the addend's shape, dtype and layout are checked before anything is written
  const Tensor x = uniform({2, 4}, -1, 1, gen);
  const Tensor before = m.forward(x).clone();
  CHECK_THROWS_WITH_AS(m.forwardAdding(x, zeros({2, 4})),
                       "nn.Linear::forwardAdding: expected a contiguous addend [2 x 3] of float32 on cpu, got float32 "
                       "[2 x 4] on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(m.forwardAdding(x, zeros({2, 3}, DType::Float64)), doctest::Contains("got float64 [2 x 3]"),
                       Error);
  CHECK_THROWS_WITH_AS(m.forwardAdding(x, zeros({3, 2}).t()), doctest::Contains("(not contiguous)"), Error);
  CHECK_THROWS_WITH_AS(m.forwardAdding(x, Tensor()), doctest::Contains("got an undefined tensor"), Error);
  CHECK_THROWS_WITH_AS(m.forwardAdding(zeros({2, 5}), zeros({2, 3})),
                       "nn.Linear::forwardAdding: expected input of [4] or [batch x 4], got [2 x 5]", Error);
  CHECK(max_abs_diff(m.output, before) == 0);
  // a module without the form says so; forwardAdding refuses it
  nn::ReLU relu;
  CHECK_FALSE(relu.addsInForward());
  CHECK_FALSE(relu.takesAddend(x));
  CHECK_THROWS_WITH_AS(relu.forwardAdding(x, x),
                       "nn.ReLU::forwardAdding: expected a module that adds in its forward on the input's device (cpu; "
                       "takesAddend), got nn.ReLU, which has no such form",
                       Error);
}