// test_Dropout.cpp
#include <doctest/doctest.h>

#include <cmath>

#include "nn/Dropout.h"
#include "tests/support/GradCheck.h"

using namespace tensor;
using namespace testing;

TEST_CASE("Dropout keeps about 1-p of the elements, scaled by 1/(1-p)") {
  manual_seed(101);
  INFO("seed 101");
  for (double p : {0.2, 0.5, 0.8}) {
    nn::Dropout d(p);
    const Tensor x = ones({200, 500}, DType::Float64);
    const std::vector<double> y = d.forward(x).to_vector<double>();
    int64_t kept = 0;
    bool values_ok = true;
    for (double v : y) {
      if (v != 0) {
        ++kept;
        values_ok = values_ok && std::abs(v - 1 / (1 - p)) < 1e-12;
      }
    }
    const double fraction = static_cast<double>(kept) / static_cast<double>(y.size());
    INFO("p = ", p, ", kept ", fraction);
    CHECK(values_ok);
    // 100000 draws: the standard deviation of the fraction is below 0.0016
    CHECK(std::abs(fraction - (1 - p)) < 0.008);
    // the mean activation is preserved
    CHECK(std::abs(d.output.mean().item() - 1) < 0.03);
    // backward masks the gradient the same way
    const Tensor g = full({200, 500}, 2.0, DType::Float64);
    CHECK(max_abs_diff(d.backward(x, g), d.output.mul(2.0)) == 0);
  }
}

TEST_CASE("Dropout: evaluation is the identity, p = 0, v1 and in-place variants") {
  manual_seed(3);
  const Tensor x = uniform({4, 5}, -1, 1, default_generator(), DType::Float64);
  nn::Dropout d(0.5);
  d.evaluate();
  CHECK(max_abs_diff(d.forward(x), x) == 0);
  CHECK(max_abs_diff(d.backward(x, x), x) == 0);
  nn::Dropout none(0);
  CHECK(max_abs_diff(none.forward(x), x) == 0);
  // v1: unscaled at training, scaled by 1-p at evaluation
  nn::Dropout v1(0.25, true);
  const std::vector<double> y = v1.forward(ones({1000})).to_vector<double>();
  for (double v : y) CHECK((v == 0 || v == 1));
  v1.evaluate();
  CHECK(max_abs_diff(v1.forward(x), x.mul(0.75)) < 1e-15);
  CHECK(max_abs_diff(v1.backward(x, x), x.mul(0.75)) < 1e-15);
  // in place: the input itself is masked
  nn::Dropout inplace(0.5, false, true);
  Tensor xi = x.clone();
  const Tensor yi = inplace.forward(xi);
  CHECK(yi.is_same_view(xi));
  CHECK(max_abs_diff(xi, x.mul(inplace.noise)) == 0);
  Tensor g = ones({4, 5}, DType::Float64);
  CHECK(inplace.backward(xi, g).is_same_view(g));
  CHECK(max_abs_diff(g, inplace.noise) == 0);
}

TEST_CASE("Dropout with p = 0 or in evaluation hands back the input and gradOutput themselves") {
  manual_seed(4);
  const Tensor x = uniform({3, 7}, -1, 1, default_generator(), DType::Float64);
  const Tensor g = uniform({3, 7}, -1, 1, default_generator(), DType::Float64);
  const Tensor x0 = x.clone(), g0 = g.clone();
  nn::Dropout none(0);
  CHECK(none.forward(x).is_same_view(x));
  CHECK(none.backward(x, g).is_same_view(g));
  CHECK_FALSE(none.noise.defined());  // no mask drawn either
  nn::Dropout eval(0.5);
  eval.evaluate();
  CHECK(eval.forward(x).is_same_view(x));
  CHECK(eval.backward(x, g).is_same_view(g));
  // v1 scales at evaluation, so it still writes its own output
  nn::Dropout v1(0.5, true);
  v1.evaluate();
  CHECK_FALSE(v1.forward(x).is_same_view(x));
  // back to training with p > 0: a fresh output and gradInput, never writing into the tensors
  // the identity passes handed back
  eval.train();
  CHECK_FALSE(eval.forward(x).is_same_view(x));
  CHECK_FALSE(eval.backward(x, g).is_same_view(g));
  CHECK(max_abs_diff(x, x0) == 0);
  CHECK(max_abs_diff(g, g0) == 0);
}

TEST_CASE("Dropout masks are reproducible from the seed") {
  nn::Dropout d(0.5);
  const Tensor x = ones({64}, DType::Float32);
  manual_seed(11);
  const Tensor a = d.forward(x).clone();
  manual_seed(11);
  const Tensor b = d.forward(x).clone();
  CHECK(max_abs_diff(a, b) == 0);
  const Tensor c = d.forward(x).clone();  // the generator moved on
  CHECK(max_abs_diff(a, c) > 0);
  manual_seed(12);
  CHECK(max_abs_diff(a, d.forward(x)) > 0);
}

TEST_CASE("Dropout gradients with the reseeding checker") {
  Generator gen(7001);
  INFO("size seed 7001");
  for (int trial = 0; trial < 3; ++trial) {
    const Shape shape{random_size(gen, 1, 4), random_size(gen, 1, 6)};
    nn::Dropout d(0.4);
    expect_gradients_ok(d, uniform(shape, -1, 1, gen, DType::Float64));
    nn::Dropout inplace(0.3, false, true);
    expect_gradients_ok(inplace, uniform(shape, -1, 1, gen, DType::Float64));
    nn::Dropout v1(0.6, true);
    expect_gradients_ok(v1, uniform({shape[1]}, -1, 1, gen, DType::Float64));
    v1.evaluate();
    expect_gradients_ok(v1, uniform(shape, -1, 1, gen, DType::Float64));
  }
}

TEST_CASE("Dropout state round trip, printing and errors") {
  Generator gen(9);
  nn::Dropout a(0.3), b(0.3);
  expect_state_roundtrip_ok(a, b, uniform({3, 4}, -1, 1, gen));
  CHECK(a.stateDict().empty());
  expect_prints_type(a);
  CHECK(nn::Dropout().str() == "nn.Dropout(0.500000)");  // Torch's '%s(%f)'
  CHECK(a.str() == "nn.Dropout(0.300000)");
  CHECK_THROWS_WITH_AS(nn::Dropout(1.0), "nn.Dropout: expected 0 <= p < 1, got 1.000000", Error);
  CHECK_THROWS_WITH_AS(nn::Dropout(-0.1), "nn.Dropout: expected 0 <= p < 1, got -0.100000", Error);
  CHECK_THROWS_WITH_AS(a.setp(2), "nn.Dropout::setp: expected 0 <= p < 1, got 2.000000", Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({2}, DType::Int64)),
                       "nn.Dropout::updateOutput: expected float32 or float64 input, got int64 [2] on cpu", Error);
  nn::Dropout fresh(0.5);
  CHECK_THROWS_WITH_AS(fresh.backward(ones({2}), ones({2})),
                       "nn.Dropout::updateGradInput: expected a forward() in training mode first with input [2]",
                       Error);
  fresh.forward(ones({2}));
  CHECK_THROWS_WITH_AS(fresh.backward(ones({2}), ones({3})),
                       "nn.Dropout::updateGradInput: expected gradOutput of [2] (the input's shape), got [3]", Error);
}
