// test_SpatialBatchNormalization.cpp
#include <doctest/doctest.h>

#include <cmath>

#include "nn/SpatialBatchNormalization.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;

namespace {
// Channel c of x, all of its N x spatial values, as one row: [C x (N * spatial)].
Tensor per_channel(const Tensor& x) { return x.transpose(0, 1).reshape({x.size(1), -1}); }

// input with channel c around mean 3c - 2 with scale c + 1
Tensor shifted_input(const Shape& shape, Generator& gen, DType dt = DType::Float64) {
  Tensor x = uniform(shape, -1, 1, gen, DType::Float64);
  Shape scale_shape(shape.size(), 1);
  scale_shape[1] = shape[1];
  const Tensor c = arange(static_cast<double>(shape[1]), DType::Float64).view(scale_shape);
  return x.mul(c.add(1)).add(c.mul(3).sub(2)).to(dt);
}
}  // namespace

TEST_CASE("SpatialBatchNormalization training: per-channel mean 0 / variance 1 over N and space; running statistics") {
  Generator gen(41);
  const int64_t N = 3, C = 4;
  const Tensor x = shifted_input({N, C, 3, 2}, gen);
  nn::SpatialBatchNormalization m(C, 1e-5, 0.1, false);
  m.to(DType::Float64);
  CHECK(m.nDim == 4);
  const Tensor y = m.forward(x);
  REQUIRE(y.sizes() == x.sizes());
  const Tensor xs = per_channel(x), ys = per_channel(y);
  const int64_t n = xs.size(1);
  for (int64_t c = 0; c < C; ++c) {
    const double mean = xs[c].mean().item();
    const double sq = xs[c].sub(mean).square().sum().item();
    CHECK(std::abs(ys[c].mean().item()) < 1e-12);
    CHECK(ys[c].square().mean().item() == doctest::Approx(sq / n / (sq / n + 1e-5)).epsilon(1e-12));
    CHECK(m.running_mean.get({c}) == doctest::Approx(0.1 * mean).epsilon(1e-12));
    CHECK(m.running_var.get({c}) == doctest::Approx(0.9 + 0.1 * sq / (n - 1)).epsilon(1e-12));
  }
  // a batch of one sample is valid when the maps have more than one position
  const Tensor x1 = shifted_input({1, 3, 2, 2}, gen);
  nn::SpatialBatchNormalization one(3, 1e-5, 0.1, false);
  one.to(DType::Float64);
  const Tensor y1 = per_channel(one.forward(x1));
  for (int64_t c = 0; c < 3; ++c) CHECK(std::abs(y1[c].mean().item()) < 1e-12);
  expect_gradients_ok(one, x1);
  // float32, large enough for the parallel path
  const Tensor xb = shifted_input({8, 16, 24, 24}, gen);
  nn::SpatialBatchNormalization f32(16), f64(16);
  f64.to(DType::Float64);
  CHECK(max_abs_diff(f32.forward(xb.to(DType::Float32)), f64.forward(xb)) < 1e-4);
  CHECK(max_abs_diff(f32.running_var, f64.running_var) < 1e-4);
}

TEST_CASE("SpatialBatchNormalization evaluation uses the running statistics, batched and single sample") {
  Generator gen(42);
  nn::SpatialBatchNormalization m(3);
  m.to(DType::Float64);
  m.running_mean.copy_(from_vector<double>({1, -2, 0.5}));
  m.running_var.copy_(from_vector<double>({4, 0.25, 1}));
  m.weight.copy_(from_vector<double>({1, 2, 3}));
  m.bias.copy_(from_vector<double>({0, 1, -1}));
  m.evaluate();
  const int64_t N = 2, C = 3;
  const Tensor x = shifted_input({N, C, 3, 2}, gen);
  const Tensor y = m.forward(x);
  Shape cs(x.dim(), 1);
  cs[1] = 3;
  const Tensor want = x.sub(m.running_mean.view(cs)).div(m.running_var.add(1e-5).sqrt().view(cs))
                          .mul(m.weight.view(cs)).add(m.bias.view(cs));
  CHECK(max_abs_diff(y, want) < 1e-13);
  const Tensor y0 = m.forward(x[0]);
  CHECK(y0.sizes() == x[0].sizes());
  CHECK(max_abs_diff(y0, want[0]) < 1e-13);
  const Tensor gi = m.backward(x, ones(x.sizes(), DType::Float64));
  CHECK(max_abs_diff(gi, m.weight.div(m.running_var.add(1e-5).sqrt()).view(cs).expand(x.sizes())) < 1e-13);
}

TEST_CASE("SpatialBatchNormalization gradients: training and evaluation, affine on and off, random sizes") {
  Generator gen(20261213);
  INFO("size seed 20261213");
  for (int trial = 0; trial < 2; ++trial) {
    const int64_t n = random_size(gen, 1, 3), c = random_size(gen, 1, 4);
    const int64_t h = random_size(gen, 1, 3), w = random_size(gen, 1, 3);
    // training needs more than one value per channel
    const Shape s = n * h * w > 1 ? Shape{n, c, h, w} : Shape{n + 1, c, h, w};
    for (bool affine : {true, false}) {
      nn::SpatialBatchNormalization m(c, 1e-5, 0.1, affine);
      m.to(DType::Float64);
      if (affine) {
        m.weight.uniform_(0.5, 1.5, gen);
        m.bias.uniform_(-1, 1, gen);
      }
      const Tensor x = shifted_input(s, gen);
      expect_gradients_ok(m, x);
      if (affine) expect_accumulation_ok(m, x);
      m.running_mean.uniform_(-1, 1, gen);
      m.running_var.uniform_(0.5, 2, gen);
      m.evaluate();
      expect_gradients_ok(m, x);
      expect_gradients_ok(m, uniform(Shape{c, h, w}, -2, 2, gen, DType::Float64));
      if (affine) expect_accumulation_ok(m, x);
    }
  }
}

TEST_CASE("SpatialBatchNormalization state round trip, printing and errors") {
  Generator gen(2);
  const int64_t N = 4, C = 3;
  nn::SpatialBatchNormalization a(C), b(C);
  a.weight.uniform_(0.5, 1.5, gen);
  a.bias.uniform_(-1, 1, gen);
  for (int k = 0; k < 3; ++k) a.forward(shifted_input({N, C, 3, 2}, gen, DType::Float32));
  a.evaluate();
  expect_state_roundtrip_ok(a, b, shifted_input({N, C, 3, 2}, gen, DType::Float32));
  CHECK(max_abs_diff(a.running_var, b.running_var) == 0);
  a.train();
  expect_state_roundtrip_ok(a, b, shifted_input({N, C, 3, 2}, gen, DType::Float32));

  CHECK(a.str() == "nn.SpatialBatchNormalization (4D) (3)");
  CHECK(nn::SpatialBatchNormalization(64, 1e-3, 0.1, false).str() == "nn.SpatialBatchNormalization (4D) (64)");
  expect_prints_type(a);

  nn::SpatialBatchNormalization m(3);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3})),
                       "nn.SpatialBatchNormalization::updateOutput: expected input of [N x C x H x W] (or [C x H x "
                       "W] in evaluation), got [2 x 3]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({3, 4, 4})),
                       "nn.SpatialBatchNormalization::updateOutput: expected input of [N x C x H x W] (or [C x H x "
                       "W] in evaluation), got [3 x 4 x 4] in training",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 4, 5, 5})),
                       "nn.SpatialBatchNormalization::updateOutput: expected input of [N x C x H x W] with C = 3, got "
                       "[2 x 4 x 5 x 5]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 3, 1, 1})),
                       "nn.SpatialBatchNormalization::updateOutput: expected more than 1 value per channel in "
                       "training, got input [1 x 3 x 1 x 1]",
                       Error);
  m.evaluate();
  CHECK(m.forward(zeros({1, 3, 1, 1})).sizes() == Shape{1, 3, 1, 1});
  CHECK_THROWS_WITH_AS(nn::SpatialBatchNormalization(-2),
                       doctest::Contains("nn.SpatialBatchNormalization: expected nOutput > 0"), Error);
}

TEST_CASE(
    "SpatialBatchNormalization: a channel with a non-finite value is NaN in training, element-wise in evaluation (Note "
    "[NaN and Inf])") {
  for (double bad : {kNaN, kInf, -kInf}) {
    INFO("non-finite value ", bad);
    nn::SpatialBatchNormalization m(2);
    // [2 x 2 x 1 x 2]: channel 0 holds the value, channel 1 is finite
    std::vector<double> v = {1, bad, 3, 4, 5, 6, 7, 8};
    const Tensor x = from_vector<double>(v, {2, 2, 1, 2});
    m.to(DType::Float64);
    m.train();
    const std::vector<double> y = m.forward(x).to_vector<double>();
    for (int i : {0, 1, 4, 5}) CHECK(std::isnan(y[i]));
    for (int i : {2, 3, 6, 7}) CHECK(std::isfinite(y[i]));
    const std::vector<double> g = m.backward(x, ones({2, 2, 1, 2}, DType::Float64)).to_vector<double>();
    for (int i : {0, 1, 4, 5}) CHECK(std::isnan(g[i]));
    for (int i : {2, 3, 6, 7}) CHECK(std::isfinite(g[i]));
    CHECK(std::isnan(m.running_var.to_vector<double>()[0]));
    CHECK(std::isfinite(m.running_var.to_vector<double>()[1]));
    m.evaluate();
    nn::SpatialBatchNormalization e(2);
    e.to(DType::Float64);
    e.evaluate();
    const std::vector<double> ye = e.forward(x).to_vector<double>();
    for (int i = 0; i < 8; ++i) CHECK(std::isfinite(ye[i]) == (i != 1));
    if (!std::isnan(bad)) CHECK(ye[1] == bad);  // x / sqrt(1 + eps): the same infinity
  }
}

TEST_CASE("SpatialBatchNormalization float32 statistics (one pass, Note [One-pass float statistics]) match float64's") {
  auto stats = [](const Tensor& x, DType dt) {
    nn::SpatialBatchNormalization m(3);
    m.to(dt);
    m.train();
    m.forward(x.to(dt));
    return std::vector<Tensor>{m.save_mean.to(DType::Float64), m.save_invstd.to(DType::Float64),
                               m.running_mean.to(DType::Float64), m.running_var.to(DType::Float64)};
  };
  Generator gen(3);
  // a large mean over a small spread (cancellation), a zero-mean channel, a constant channel
  Tensor x = uniform({4, 3, 5, 5}, -1, 1, gen, DType::Float64);
  x.select(1, 0).mul_(0.01).add_(1000);
  x.select(1, 2).fill_(2.5);
  const Tensor xf = x.to(DType::Float32).to(DType::Float64);  // the float32 values, exactly
  const auto a = stats(xf, DType::Float32), b = stats(xf, DType::Float64);
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("statistic ", i);
    CHECK(rel_norm_error(a[i], b[i]) <= 1e-6);
  }
  // NaN and Inf give the two-pass results, as in float64 (and cuDNN)
  for (double bad : {kNaN, kInf, -kInf}) {
    INFO("non-finite value ", bad);
    Tensor y = xf.clone();
    y.select(1, 1).select(0, 2).select(0, 3).fill_(bad);
    const auto p = stats(y, DType::Float32), q = stats(y, DType::Float64);
    for (size_t i = 0; i < p.size(); ++i) {
      const std::vector<double> u = p[i].to_vector<double>(), w = q[i].to_vector<double>();
      for (size_t c = 0; c < u.size(); ++c) {
        INFO("statistic ", i, " channel ", c, ": ", u[c], " against ", w[c]);
        CHECK(std::isnan(u[c]) == std::isnan(w[c]));
        if (!std::isnan(w[c]) && !std::isfinite(w[c])) CHECK(u[c] == w[c]);
      }
    }
  }
}
