// test_SpatialCrossMapLRN.cpp
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "nn/SpatialCrossMapLRN.h"
#include "tensor/Safetensors.h"
#include "tests/support/GradCheck.h"
#include "tests/support/PoolingReference.h"

using namespace tensor;
using namespace testing;

namespace {

// Direct definition: channel c sums x^2 over [c - (size - 1) / 2, c + size / 2] clipped.
Tensor naive_lrn(const Tensor& input, int64_t size, double alpha, double beta, double k) {
  const Tensor x = input.dim() == 3 ? input.unsqueeze(0) : input;
  const int64_t n = x.size(0), ch = x.size(1), hw = x.size(2) * x.size(3);
  const std::vector<double> xv = x.contiguous().to_vector<double>();
  std::vector<double> yv(xv.size());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t c = 0; c < ch; ++c) {
      for (int64_t i = 0; i < hw; ++i) {
        double sum = 0;
        for (int64_t j = c - (size - 1) / 2; j <= c + size / 2; ++j) {
          if (j < 0 || j >= ch) continue;
          const double v = xv[(b * ch + j) * hw + i];
          sum += v * v;
        }
        const double scale = k + alpha / static_cast<double>(size) * sum;
        yv[(b * ch + c) * hw + i] = xv[(b * ch + c) * hw + i] * std::pow(scale, -beta);
      }
    }
  }
  return from_vector<double>(yv, input.sizes()).to(input.dtype());
}

}  // namespace

TEST_CASE("SpatialCrossMapLRN forward by hand, odd and even window sizes") {
  // channels 1, 2, 3; size 3, alpha 3 (alpha / size = 1), beta 1, k 1:
  // scale = 1 + (1 + 4), 1 + (1 + 4 + 9), 1 + (4 + 9) = 6, 15, 14
  nn::SpatialCrossMapLRN m(3, 3.0, 1.0, 1.0);
  const Tensor x = from_vector<double>({1, 2, 3}, {3, 1, 1});
  CHECK(max_abs_diff(m.forward(x), from_vector<double>({1.0 / 6, 2.0 / 15, 3.0 / 14}, {3, 1, 1})) <= 1e-15);
  CHECK(max_abs_diff(m.scale, from_vector<double>({6, 15, 14}, {3, 1, 1})) <= 1e-14);
  // size 2 (Torch's and cuDNN's window [c, c + 1]), alpha 2, beta 1, k 1: scale 6, 14, 10
  nn::SpatialCrossMapLRN e(2, 2.0, 1.0, 1.0);
  CHECK(max_abs_diff(e.forward(x), from_vector<double>({1.0 / 6, 2.0 / 14, 3.0 / 10}, {3, 1, 1})) <= 1e-15);
  // defaults as Torch's (with cuDNN's size 5)
  nn::SpatialCrossMapLRN d;
  CHECK(d.size == 5);
  CHECK(d.alpha == 1e-4);
  CHECK(d.beta == 0.75);
  CHECK(d.k == 1);
}

TEST_CASE("SpatialCrossMapLRN forward matches a naive loop") {
  Generator gen(2718);
  INFO("size seed 2718");
  struct Cfg {
    int64_t size;
    double alpha, beta, k;
  };
  const Cfg cfgs[] = {{5, 1e-4, 0.75, 1}, {5, 0.8, 0.75, 2}, {3, 1.5, 0.5, 1}, {4, 1.0, 0.9, 1.5},
                      {1, 0.3, 1.2, 0.7}, {7, 2.0, 0.75, 1}, {2, 0.5, 0.75, 1}};
  for (const Cfg& c : cfgs) {
    nn::SpatialCrossMapLRN m(c.size, c.alpha, c.beta, c.k);
    const int64_t ch = random_size(gen, 1, 8), h = random_size(gen, 1, 5), w = random_size(gen, 1, 5);
    for (const Shape& shape : {Shape{random_size(gen, 1, 3), ch, h, w}, Shape{ch, h, w}}) {
      for (DType dt : {DType::Float32, DType::Float64}) {
        INFO("size ", c.size, " alpha ", c.alpha, " beta ", c.beta, " k ", c.k, " on ", shape_str(shape));
        const Tensor x = uniform(shape, -2, 2, gen, dt);
        const Tensor y = m.forward(x);
        CHECK(y.sizes() == shape);
        CHECK(max_rel_error(y, naive_lrn(x, c.size, c.alpha, c.beta, c.k)) <= (dt == DType::Float32 ? 1e-6 : 1e-14));
      }
    }
  }
}

TEST_CASE("SpatialCrossMapLRN gradient checks (odd and even sizes, window wider than the channels)") {
  Generator gen(1618);
  INFO("size seed 1618");
  struct Cfg {
    int64_t size;
    double alpha, beta, k;
  };
  const Cfg cfgs[] = {{5, 1e-4, 0.75, 1}, {5, 0.8, 0.75, 2}, {3, 1.5, 0.5, 1},
                      {4, 1.0, 0.9, 1.5}, {9, 2.0, 0.75, 1}, {1, 0.3, 1.2, 0.7}};
  for (const Cfg& c : cfgs) {
    nn::SpatialCrossMapLRN m(c.size, c.alpha, c.beta, c.k);
    const int64_t ch = random_size(gen, 2, 7), h = random_size(gen, 1, 4), w = random_size(gen, 1, 4);
    expect_gradients_ok(m, uniform({random_size(gen, 2, 3), ch, h, w}, -2, 2, gen, DType::Float64));
    expect_gradients_ok(m, uniform({1, ch, h, w}, -2, 2, gen, DType::Float64));
    expect_gradients_ok(m, uniform({ch, h, w}, -2, 2, gen, DType::Float64));
  }
}

TEST_CASE("SpatialCrossMapLRN matches PyTorch's local_response_norm (odd sizes)") {
  const auto file = load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/nn/lrn.safetensors");
  int cases = 0;
  for (const auto& [key, cfg] : file.tensors) {
    if (key.size() < 7 || key.compare(key.size() - 7, 7, ".config") != 0) continue;
    const std::string name = key.substr(0, key.size() - 7);
    const std::vector<double> p = cfg.to_vector<double>();
    nn::SpatialCrossMapLRN m(static_cast<int64_t>(p[0]), p[1], p[2], p[3]);
    INFO(name);
    const Tensor& x = file.tensors.at(name + ".input");
    CHECK(max_abs_diff(m.forward(x), file.tensors.at(name + ".output")) <= 1e-12);
    CHECK(max_abs_diff(m.backward(x, file.tensors.at(name + ".gradOutput")), file.tensors.at(name + ".gradInput")) <=
          1e-12);
    ++cases;
  }
  CHECK(cases >= 4);
}

TEST_CASE("SpatialCrossMapLRN backward without a matching forward, state round trip, printing and errors") {
  Generator gen(8);
  const Tensor x = uniform({2, 6, 3, 3}, -1, 1, gen, DType::Float64);
  const Tensor g = uniform({2, 6, 3, 3}, -1, 1, gen, DType::Float64);
  nn::SpatialCrossMapLRN a(5, 0.5, 0.75, 1), b(5, 0.5, 0.75, 1);
  a.forward(x);
  const Tensor ga = a.backward(x, g).clone();
  CHECK(max_abs_diff(b.backward(x, g), ga) == 0);  // no forward yet: scale is computed first
  b.forward(uniform({1, 6, 3, 3}, -1, 1, gen, DType::Float64));
  CHECK(max_abs_diff(b.backward(x, g), ga) == 0);  // scale of another shape is recomputed

  expect_state_roundtrip_ok(a, b, x);
  CHECK(a.stateDict().empty());
  CHECK(a.str() == "nn.SpatialCrossMapLRN");
  expect_prints_type(a);

  CHECK_THROWS_WITH_AS(a.forward(zeros({6, 3})),
                       "nn.SpatialCrossMapLRN::updateOutput: expected 3D [C x H x W] or 4D [N x C x H x W] input, got "
                       "[6 x 3]",
                       Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({6, 3, 3}, DType::Int64)),
                       "nn.SpatialCrossMapLRN::updateOutput: expected float32 or float64 input, got int64 [6 x 3 x 3] "
                       "on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(a.backward(x, zeros({2, 6, 3, 2}, DType::Float64)),
                       "nn.SpatialCrossMapLRN::updateGradInput: expected gradOutput of the input's shape "
                       "[2 x 6 x 3 x 3], got [2 x 6 x 3 x 2]",
                       Error);
  CHECK_THROWS_WITH_AS(a.backward(x, zeros({2, 6, 3, 3})), doctest::Contains("expected gradOutput of input's dtype"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::SpatialCrossMapLRN(0), "nn.SpatialCrossMapLRN: expected size >= 1, got 0", Error);
}

TEST_CASE("SpatialCrossMapLRN on a batch large enough to run in parallel") {
  Generator gen(53);
  nn::SpatialCrossMapLRN m(5, 0.5, 0.75, 1);
  const Tensor x = uniform({4, 16, 24, 24}, -2, 2, gen, DType::Float64);
  CHECK(max_rel_error(m.forward(x), naive_lrn(x, 5, 0.5, 0.75, 1)) <= 1e-14);
  pooltest::expect_batch_matches_samples(m, x, gen);
}
