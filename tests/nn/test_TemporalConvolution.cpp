// test_TemporalConvolution.cpp
#include <doctest/doctest.h>

#include <cmath>

#include "nn/TemporalConvolution.h"
#include "tensor/Safetensors.h"
#include "tests/support/GradCheck.h"
#include "tests/support/ConvReference.h"

using namespace tensor;
using namespace testing;

namespace {

struct Config {
  int64_t inputFrameSize, outputFrameSize, kW, dW, batch, frames;
};

// Torch's definition, directly: y[n, t, o] = b[o] + sum_{k, c} W[o, k * F + c] x[n, t * dW + k, c]
Tensor direct(const Tensor& x, const Tensor& w, const Tensor& b, int64_t kW, int64_t dW) {
  const int64_t N = x.size(0), T = x.size(1), F = x.size(2), O = w.size(0), To = (T - kW) / dW + 1;
  const auto xv = x.to_vector<double>(), wv = w.to_vector<double>(), bv = b.to_vector<double>();
  std::vector<double> y(N * To * O);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t t = 0; t < To; ++t)
      for (int64_t o = 0; o < O; ++o) {
        double acc = bv[o];
        for (int64_t k = 0; k < kW; ++k)
          for (int64_t c = 0; c < F; ++c) acc += wv[o * kW * F + k * F + c] * xv[(n * T + t * dW + k) * F + c];
        y[(n * To + t) * O + o] = acc;
      }
  return from_vector<double>(y, {N, To, O});
}

// overlapping windows (dW < kW), disjoint (dW == kW), gaps (dW > kW), kW 1, one output frame,
// frame counts that leave a remainder, batch 1
const std::vector<Config> configs = {
    {3, 4, 3, 1, 2, 7}, {2, 3, 2, 2, 3, 8}, {4, 2, 2, 3, 2, 9}, {1, 1, 1, 1, 1, 4},
    {3, 5, 4, 2, 1, 4}, {2, 2, 3, 2, 2, 10},
};

}  // namespace

TEST_CASE("TemporalConvolution forward matches a hand computation") {
  nn::TemporalConvolution m(2, 1, 2);
  m.weight.copy_(from_vector<float>({1, 2, 3, 4}, {1, 4}));
  m.bias.fill_(0.5);
  const Tensor y = m.forward(from_vector<float>({1, 0, 0, 1, 2, 2}, {3, 2}));
  CHECK(y.sizes() == Shape{2, 1});
  CHECK(y.to_vector<float>() == std::vector<float>{5.5f, 16.5f});
}

TEST_CASE("TemporalConvolution forward matches the definition and PyTorch") {
  Generator gen(20261211);
  INFO("data seed 20261211");
  for (const Config& c : configs) {
    nn::TemporalConvolution m(c.inputFrameSize, c.outputFrameSize, c.kW, c.dW);
    INFO("TemporalConvolution(", c.inputFrameSize, ", ", c.outputFrameSize, ", ", c.kW, ", ", c.dW, ") on ",
         c.batch, "x", c.frames);
    const Tensor x = uniform({c.batch, c.frames, c.inputFrameSize}, -1, 1, gen);
    const Tensor ref = direct(x, m.weight, m.bias, c.kW, c.dW);
    REQUIRE(m.forward(x).sizes() == ref.sizes());
    CHECK(max_abs_diff(m.output, ref) < 1e-5);
    CHECK(max_abs_diff(m.forward(x[0]), ref[0]) < 1e-5);
    m.to(DType::Float64);
    CHECK(max_abs_diff(m.forward(x.to(DType::Float64)), ref) < 1e-12);
  }
  // scripts/make_conv_reference.py: conv1d on the transposed input with the weight re-laid out
  const auto ref = load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/nn/conv_reference.safetensors").tensors;
  nn::TemporalConvolution p(3, 4, 3, 2);
  p.to(DType::Float64);
  p.weight.copy_(ref.at("temporal.w"));
  p.bias.copy_(ref.at("temporal.b"));
  REQUIRE(p.forward(ref.at("temporal.x")).sizes() == ref.at("temporal.y").sizes());
  CHECK(max_abs_diff(p.output, ref.at("temporal.y")) < 1e-12);
}

TEST_CASE("TemporalConvolution gradients, accumulation, initialisation") {
  Generator gen(20261212);
  INFO("data seed 20261212");
  for (const Config& c : configs) {
    nn::TemporalConvolution m(c.inputFrameSize, c.outputFrameSize, c.kW, c.dW);
    m.to(DType::Float64);
    const Tensor x = uniform({c.batch, c.frames, c.inputFrameSize}, -1, 1, gen, DType::Float64);
    expect_gradients_ok(m, x);
    expect_gradients_ok(m, x[0].contiguous());
  }
  for (int64_t batch : {1, 4}) {
    for (int64_t dW : {1, 3}) {
      nn::TemporalConvolution m(3, 2, 2, dW);
      m.to(DType::Float64);
      expect_accumulation_ok(m, uniform({batch, 8, 3}, -1, 1, gen, DType::Float64));
    }
  }
  manual_seed(2);
  nn::TemporalConvolution m(16, 8, 4);  // stdv = 1/sqrt(4*16)
  CHECK(m.weight.sizes() == Shape{8, 64});
  CHECK(m.weight.abs().max().item() <= 0.125);
  CHECK(m.weight.abs().max().item() > 0.95 * 0.125);
}

TEST_CASE("TemporalConvolution batch-parallel passes equal the per-sample ones") {
  Generator gen(13);
  for (int64_t dW : {1, 3}) {
    nn::TemporalConvolution m(16, 16, 3, dW);
    m.to(DType::Float64);
    convref::expect_batch_matches_samples(m, uniform({4, 200, 16}, -1, 1, gen, DType::Float64));
  }
}

TEST_CASE("TemporalConvolution keeps the cudnn algorithm choices as plain fields") {
  nn::TemporalConvolution m(3, 4, 2);
  CHECK(m.algo == nn::ConvAlgorithms{});
  m.setMode("large", "", "deterministic").fastest();
  CHECK(m.algo == nn::ConvAlgorithms{"large", "", "deterministic", true});
  nn::TemporalConvolution moved(std::move(m));
  CHECK(moved.algo == nn::ConvAlgorithms{"large", "", "deterministic", true});
  moved.resetMode();
  CHECK(moved.algo == nn::ConvAlgorithms{});
}

TEST_CASE("TemporalConvolution state round trip, printing and errors") {
  Generator gen(1);
  nn::TemporalConvolution a(3, 4, 3, 2), b(3, 4, 3, 2);
  expect_state_roundtrip_ok(a, b, uniform({2, 9, 3}, -1, 1, gen));
  expect_prints_type(a);
  CHECK(a.str() == "nn.TemporalConvolution");  // Torch prints the type name only
  CHECK_THROWS_WITH_AS(a.forward(zeros({2, 3})),
                       "nn.TemporalConvolution::updateOutput: expected input of at least 3 frames for kernel width 3, "
                       "got [2 x 3]: calculated output size 0 frames, too small",
                       Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({6, 4})),
                       "nn.TemporalConvolution::updateOutput: expected input of [nInputFrame x 3] or "
                       "[batch x nInputFrame x 3], got [6 x 4]",
                       Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({3})), doctest::Contains("got [3]"), Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({6, 3}, DType::Float64)),
                       doctest::Contains("expected input of weight's dtype and device (float32 on cpu)"), Error);
  const Tensor x = zeros({2, 7, 3});
  a.forward(x);
  CHECK_THROWS_WITH_AS(a.backward(x, zeros({2, 4, 4})),
                       "nn.TemporalConvolution::updateGradInput: expected gradOutput of [2 x 3 x 4] (for input "
                       "[2 x 7 x 3]), got [2 x 4 x 4]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::TemporalConvolution(3, 4, 0), doctest::Contains("expected positive frame sizes, kW and dW"),
                       Error);
}
