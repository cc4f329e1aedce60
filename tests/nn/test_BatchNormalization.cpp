// test_BatchNormalization.cpp
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "nn/BatchNormalization.h"
#include "tests/support/GradCheck.h"

using namespace tensor;
using namespace testing;

namespace {
// [N x C] input with channel c drawn around mean 3c - 2 with scale c + 1
Tensor shifted_input(int64_t N, int64_t C, Generator& gen, DType dt = DType::Float64) {
  Tensor x = uniform({N, C}, -1, 1, gen, DType::Float64);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t c = 0; c < C; ++c) x.set({i, c}, x.get({i, c}) * (c + 1) + 3.0 * c - 2);
  return x.to(dt);
}
}  // namespace

TEST_CASE("BatchNormalization initialisation: weight 1, bias 0, running mean 0, running var 1") {
  nn::BatchNormalization m(5);
  CHECK(m.nOutput == 5);
  CHECK(m.nDim == 2);
  CHECK(m.eps == 1e-5);
  CHECK(m.momentum == 0.1);
  CHECK(m.affine);
  CHECK(m.weight.to_vector<float>() == std::vector<float>(5, 1));
  CHECK(m.bias.to_vector<float>() == std::vector<float>(5, 0));
  CHECK(m.running_mean.to_vector<float>() == std::vector<float>(5, 0));
  CHECK(m.running_var.to_vector<float>() == std::vector<float>(5, 1));
  CHECK(m.parameters().size() == 2);
  const auto buffers = m.namedBuffers();
  REQUIRE(buffers.size() == 3);
  CHECK(buffers[0].first == "running_mean");
  CHECK(buffers[1].first == "running_var");
  CHECK(buffers[2].first == "num_batches_tracked");
  nn::BatchNormalization plain(5, 1e-3, 0.2, false);
  CHECK(plain.parameters().empty());
  CHECK_FALSE(plain.weight.defined());
  CHECK(plain.stateDict().size() == 3);
}

TEST_CASE("BatchNormalization training: per-feature mean 0 and variance 1; running statistics") {
  Generator gen(31);
  const int64_t N = 7, C = 4;
  const Tensor x = shifted_input(N, C, gen);
  nn::BatchNormalization m(C, 1e-5, 0.1, false);
  m.to(DType::Float64);
  const Tensor y = m.forward(x);
  REQUIRE(y.sizes() == Shape{N, C});
  for (int64_t c = 0; c < C; ++c) {
    double mean = 0, sq = 0, ym = 0, yv = 0;
    for (int64_t i = 0; i < N; ++i) mean += x.get({i, c}) / N;
    for (int64_t i = 0; i < N; ++i) sq += (x.get({i, c}) - mean) * (x.get({i, c}) - mean);
    for (int64_t i = 0; i < N; ++i) ym += y.get({i, c}) / N;
    for (int64_t i = 0; i < N; ++i) yv += (y.get({i, c}) - ym) * (y.get({i, c}) - ym) / N;
    CHECK(std::abs(ym) < 1e-12);
    CHECK(yv == doctest::Approx(sq / N / (sq / N + 1e-5)).epsilon(1e-12));  // biased variance normalised
    CHECK(y.get({0, c}) == doctest::Approx((x.get({0, c}) - mean) / std::sqrt(sq / N + 1e-5)).epsilon(1e-12));
    // one step from (0, 1): running = momentum * stat + (1 - momentum) * initial, UNBIASED variance
    CHECK(m.running_mean.get({c}) == doctest::Approx(0.1 * mean).epsilon(1e-12));
    CHECK(m.running_var.get({c}) == doctest::Approx(0.9 * 1 + 0.1 * sq / (N - 1)).epsilon(1e-12));
    CHECK(m.save_mean.get({c}) == doctest::Approx(mean).epsilon(1e-12));
    CHECK(m.save_invstd.get({c}) == doctest::Approx(1 / std::sqrt(sq / N + 1e-5)).epsilon(1e-12));
  }
  // a second step moves the running statistics again by momentum
  const Tensor rm1 = m.running_mean.clone();
  m.forward(x);
  CHECK(max_abs_diff(m.running_mean, rm1.mul(0.9).add(m.save_mean.mul(0.1))) < 1e-12);
}

TEST_CASE("BatchNormalization affine: y = xhat * weight + bias; float32 agrees") {
  Generator gen(32);
  const Tensor x = shifted_input(5, 3, gen);
  nn::BatchNormalization plain(3, 1e-5, 0.1, false), m(3);
  plain.to(DType::Float64);
  m.to(DType::Float64);
  m.weight.copy_(from_vector<double>({2, -1, 0.5}));
  m.bias.copy_(from_vector<double>({1, 0, -3}));
  const Tensor xhat = plain.forward(x).clone();
  const Tensor y = m.forward(x);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t c = 0; c < 3; ++c)
      CHECK(y.get({i, c}) == doctest::Approx(xhat.get({i, c}) * m.weight.get({c}) + m.bias.get({c})).epsilon(1e-12));
  nn::BatchNormalization f(3);
  f.weight.copy_(m.weight);
  f.bias.copy_(m.bias);
  CHECK(max_abs_diff(f.forward(x.to(DType::Float32)), y) < 1e-5);
  CHECK(max_abs_diff(f.running_var, m.running_var) < 1e-6);
}

TEST_CASE("BatchNormalization evaluation uses the running statistics; single samples allowed") {
  nn::BatchNormalization m(3);
  m.to(DType::Float64);
  m.running_mean.copy_(from_vector<double>({1, -2, 0.5}));
  m.running_var.copy_(from_vector<double>({4, 0.25, 1}));
  m.weight.copy_(from_vector<double>({1, 2, 3}));
  m.bias.copy_(from_vector<double>({0, 1, -1}));
  m.evaluate();
  const Tensor x = from_vector<double>({3, -2, 0.5, 1, 0, 2.5}, {2, 3});
  const Tensor y = m.forward(x);
  const double e = 1e-5;
  const std::vector<double> want{2 / std::sqrt(4 + e), 1, -1, 0, 2 * 2 / std::sqrt(0.25 + e) + 1,
                                 3 * 2 / std::sqrt(1 + e) - 1};
  for (int k = 0; k < 6; ++k) CHECK(y.flatten().get({k}) == doctest::Approx(want[k]).epsilon(1e-12));
  // the running statistics do not move in evaluation
  CHECK(m.running_mean.to_vector<double>() == std::vector<double>{1, -2, 0.5});
  CHECK(m.running_var.to_vector<double>() == std::vector<double>{4, 0.25, 1});
  // backward with fixed statistics: dx = dy * weight / sqrt(running_var + eps)
  const Tensor gi = m.backward(x, ones({2, 3}, DType::Float64));
  CHECK(gi.get({1, 1}) == doctest::Approx(2 / std::sqrt(0.25 + e)).epsilon(1e-12));
  CHECK(gi.get({0, 2}) == doctest::Approx(3 / std::sqrt(1 + e)).epsilon(1e-12));
  // a [C] sample in evaluation is normalised as a batch of one, keeping its shape
  const Tensor y1 = m.forward(x[1]);
  CHECK(y1.sizes() == Shape{3});
  for (int c = 0; c < 3; ++c) CHECK(y1.get({c}) == doctest::Approx(want[3 + c]).epsilon(1e-12));
  // a batch of one is fine in evaluation
  CHECK(m.forward(x.narrow(0, 0, 1)).sizes() == Shape{1, 3});
}

TEST_CASE("BatchNormalization gradients: training and evaluation, affine on and off, random sizes") {
  Generator gen(20261212);
  INFO("size seed 20261212");
  for (int trial = 0; trial < 3; ++trial) {
    const int64_t N = random_size(gen, 2, 6), C = random_size(gen, 1, 5);
    for (bool affine : {true, false}) {
      nn::BatchNormalization m(C, 1e-5, 0.1, affine);
      m.to(DType::Float64);
      if (affine) {
        m.weight.uniform_(0.5, 1.5, gen);
        m.bias.uniform_(-1, 1, gen);
      }
      const Tensor x = shifted_input(N, C, gen);
      expect_gradients_ok(m, x);
      if (affine) expect_accumulation_ok(m, x);
      m.running_mean.uniform_(-1, 1, gen);
      m.running_var.uniform_(0.5, 2, gen);
      m.evaluate();
      expect_gradients_ok(m, x);
      expect_gradients_ok(m, uniform({C}, -2, 2, gen, DType::Float64));
      if (affine) expect_accumulation_ok(m, x);
    }
  }
  // batch of two: the smallest batch with a variance
  nn::BatchNormalization m2(3);
  m2.to(DType::Float64);
  expect_gradients_ok(m2, shifted_input(2, 3, gen));
}

TEST_CASE("BatchNormalization state round trip (running statistics included), printing and errors") {
  Generator gen(2);
  nn::BatchNormalization a(4), b(4);
  a.weight.uniform_(0.5, 1.5, gen);
  a.bias.uniform_(-1, 1, gen);
  for (int k = 0; k < 3; ++k) a.forward(shifted_input(6, 4, gen, DType::Float32));
  a.evaluate();
  expect_state_roundtrip_ok(a, b, shifted_input(3, 4, gen, DType::Float32));
  CHECK(max_abs_diff(a.running_var, b.running_var) == 0);
  CHECK(max_abs_diff(a.running_mean, b.running_mean) == 0);
  a.train();
  expect_state_roundtrip_ok(a, b, shifted_input(3, 4, gen, DType::Float32));
  nn::BatchNormalization c(4, 1e-5, 0.1, false), d(4, 1e-5, 0.1, false);
  c.forward(shifted_input(6, 4, gen, DType::Float32));
  c.evaluate();
  expect_state_roundtrip_ok(c, d, shifted_input(3, 4, gen, DType::Float32));

  CHECK(a.str() == "nn.BatchNormalization (2D) (4)");
  CHECK(nn::BatchNormalization(64).str() == "nn.BatchNormalization (2D) (64)");
  expect_prints_type(a);

  nn::BatchNormalization m(4);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3, 4})),
                       "nn.BatchNormalization::updateOutput: expected input of [N x C] (or [C] in evaluation), got "
                       "[2 x 3 x 4]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({4})),
                       "nn.BatchNormalization::updateOutput: expected input of [N x C] (or [C] in evaluation), got "
                       "[4] in training",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({8, 3})),
                       "nn.BatchNormalization::updateOutput: expected input of [N x C] with C = 4, got [8 x 3]", Error);
  // the unbiased variance of one value is undefined: an error, and nothing is updated
  CHECK_THROWS_WITH_AS(m.forward(ones({1, 4})),
                       "nn.BatchNormalization::updateOutput: expected more than 1 value per channel in training, got "
                       "input [1 x 4]",
                       Error);
  CHECK(m.running_mean.to_vector<float>() == std::vector<float>(4, 0));
  CHECK(m.running_var.to_vector<float>() == std::vector<float>(4, 1));
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 4}, DType::Float64)),
                       doctest::Contains("nn.BatchNormalization::updateOutput: expected input of running_mean's dtype "
                                         "and device (float32 on cpu), got float64 [2 x 4] on cpu"),
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 4}, DType::Int64)),
                       "nn.BatchNormalization::updateOutput: expected float32 or float64 input, got int64 [2 x 4] on "
                       "cpu",
                       Error);
  m.forward(zeros({2, 4}));
  CHECK_THROWS_WITH_AS(m.backward(zeros({2, 4}), zeros({4, 2})),
                       "nn.BatchNormalization::backward: expected gradOutput of the input's shape and dtype (float32 "
                       "[2 x 4] on cpu), got float32 [4 x 2] on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(nn::BatchNormalization(0),
                       "nn.BatchNormalization: expected nOutput > 0, a finite eps >= 0 and momentum in [0, 1], got nOutput 0, "
                       "eps 1e-05, momentum 0.1",
                       Error);
  CHECK_THROWS_AS(nn::BatchNormalization(3, -1), Error);
  CHECK_THROWS_AS(nn::BatchNormalization(3, std::numeric_limits<double>::infinity()), Error);
  CHECK_THROWS_AS(nn::BatchNormalization(3, std::nan("")), Error);
  CHECK_THROWS_AS(nn::BatchNormalization(3, 1e-5, 2), Error);
}

TEST_CASE("BatchNormalization num_batches_tracked: counted in training forwards, saved, loaded, optional") {
  Generator gen(12);
  nn::BatchNormalization m(3);
  CHECK(m.num_batches_tracked.dtype() == DType::Int64);
  CHECK(m.num_batches_tracked.dim() == 0);  // PyTorch's shape []
  CHECK(m.num_batches_tracked.item() == 0);
  for (int k = 0; k < 3; ++k) m.forward(shifted_input(5, 3, gen, DType::Float32));
  CHECK(m.num_batches_tracked.item() == 3);
  m.evaluate();
  m.forward(shifted_input(5, 3, gen, DType::Float32));
  CHECK(m.num_batches_tracked.item() == 3);  // evaluation does not count
  m.train();
  CHECK_THROWS(m.forward(ones({1, 3})));
  CHECK(m.num_batches_tracked.item() == 3);  // a rejected input does not count

  auto state = m.stateDict();
  REQUIRE(state.count("num_batches_tracked"));
  CHECK(state.at("num_batches_tracked").item() == 3);
  m.to(DType::Float64);
  CHECK(m.num_batches_tracked.dtype() == DType::Int64);  // not floating: to(dtype) leaves it

  nn::BatchNormalization n(3);
  n.loadStateDict(state);
  CHECK(n.num_batches_tracked.item() == 3);
  // a state without it (PyTorch's version-1 checkpoints, older model files) loads strictly
  state.erase("num_batches_tracked");
  nn::BatchNormalization o(3);
  o.loadStateDict(state);
  CHECK(o.num_batches_tracked.item() == 0);
  n.reset();
  CHECK(n.num_batches_tracked.item() == 0);
}

TEST_CASE("BatchNormalization cumulativeAverage (PyTorch's momentum=None) averages the batch statistics") {
  Generator gen(13);
  nn::BatchNormalization m(2);
  m.to(DType::Float64);
  m.cumulativeAverage = true;
  const Tensor a = shifted_input(4, 2, gen), b = shifted_input(6, 2, gen), c = shifted_input(3, 2, gen);
  for (const Tensor* x : {&a, &b, &c}) m.forward(*x);
  // the plain average of the three batch means (running = running + (stat - running) / n)
  const Tensor mean = a.mean(0).add(b.mean(0)).add(c.mean(0)).mul(1.0 / 3);
  CHECK(max_abs_diff(m.running_mean, mean) < 1e-12);
  // the unbiased variances likewise; running_var starts at 1 and the first batch replaces it
  auto unbiased = [](const Tensor& x) {
    const int64_t n = x.size(0);
    return x.sub(x.mean(0)).pow(2).sum(0).mul(1.0 / static_cast<double>(n - 1));
  };
  const Tensor var = unbiased(a).add(unbiased(b)).add(unbiased(c)).mul(1.0 / 3);
  CHECK(max_abs_diff(m.running_var, var) < 1e-12);
  // a model-file config round trip keeps it
  auto back = nn::BatchNormalization::fromConfig(m.config());
  CHECK(dynamic_cast<nn::BatchNormalization&>(*back).cumulativeAverage);
  CHECK_FALSE(dynamic_cast<nn::BatchNormalization&>(*nn::BatchNormalization::fromConfig(
                                                        nn::BatchNormalization(2).config()))
                  .cumulativeAverage);
}
