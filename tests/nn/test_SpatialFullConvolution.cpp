// test_SpatialFullConvolution.cpp
#include <doctest/doctest.h>

#include <cmath>

#include "nn/SpatialConvolution.h"
#include "nn/SpatialFullConvolution.h"
#include "tensor/Safetensors.h"
#include "tests/support/GradCheck.h"
#include "tests/support/ConvReference.h"

using namespace tensor;
using namespace testing;

namespace {

struct Config {
  int64_t nIn, nOut, kW, kH, dW, dH, padW, padH, adjW, adjH, groups, batch, iH, iW;
};

nn::SpatialFullConvolution make(const Config& c) {
  return nn::SpatialFullConvolution(c.nIn, c.nOut, c.kW, c.kH, c.dW, c.dH, c.padW, c.padH, c.adjW, c.adjH, c.groups);
}

convref::Params params_of(const nn::SpatialFullConvolution& m) {
  return {{m.dH, m.dW}, {m.padH, m.padW}, {}, {m.adjH, m.adjW}, m.groups};
}

// stride (overlapping and gapped windows), padding, adj, groups 1/2/3, 1x1 kernels, batch 1,
// non-square kernels and images
const std::vector<Config> configs = {
    {3, 2, 3, 3, 1, 1, 0, 0, 0, 0, 1, 2, 4, 5}, {2, 3, 4, 4, 2, 2, 1, 1, 0, 0, 1, 2, 3, 3},
    {4, 6, 3, 2, 2, 3, 1, 0, 1, 2, 2, 2, 3, 4}, {2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 1, 2, 3, 4},
    {4, 2, 1, 1, 2, 2, 0, 0, 1, 1, 2, 1, 3, 3}, {3, 3, 5, 3, 3, 2, 2, 1, 2, 1, 3, 1, 2, 3},
    {2, 4, 2, 3, 1, 1, 1, 2, 0, 0, 2, 3, 5, 4},
};

}  // namespace

TEST_CASE("SpatialFullConvolution forward matches a hand computation") {
  // stride 2 with a 2x2 kernel: every input pixel stamps a scaled copy of the kernel
  nn::SpatialFullConvolution m(1, 1, 2, 2, 2, 2);
  m.weight.copy_(from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2}));
  m.bias.zero_();
  const Tensor y = m.forward(from_vector<float>({1, 2, 3, 4}, {1, 2, 2}));
  CHECK(y.sizes() == Shape{1, 4, 4});
  CHECK(y.to_vector<float>() == std::vector<float>{1, 2, 2, 4, 3, 4, 6, 8, 3, 6, 4, 8, 9, 12, 12, 16});
  // stride 1: the stamps overlap and add up; the bias lands on every output
  nn::SpatialFullConvolution o(1, 1, 2, 1);
  o.weight.copy_(from_vector<float>({1, 10}, {1, 1, 1, 2}));
  o.bias.fill_(0.5);
  CHECK(o.forward(from_vector<float>({1, 2}, {1, 1, 2})).to_vector<float>() == std::vector<float>{1.5f, 12.5f, 20.5f});
  // adj adds rows and columns at the far end that only the bias reaches
  nn::SpatialFullConvolution a(1, 1, 1, 1, 2, 2, 0, 0, 1, 1);
  a.weight.fill_(2);
  a.bias.fill_(1);
  CHECK(a.forward(from_vector<float>({3}, {1, 1, 1})).to_vector<float>() == std::vector<float>{7, 1, 1, 1});
}

TEST_CASE("SpatialFullConvolution forward matches the scatter-add definition") {
  Generator gen(20261205);
  INFO("data seed 20261205");
  for (const Config& c : configs) {
    auto m = make(c);
    INFO(m.str(), " input ", c.batch, "x", c.nIn, "x", c.iH, "x", c.iW);
    const Tensor x = uniform({c.batch, c.nIn, c.iH, c.iW}, -1, 1, gen);
    const Tensor ref = convref::full_conv(x, m.weight, m.bias, params_of(m));
    REQUIRE(m.forward(x).sizes() == ref.sizes());
    CHECK(m.outputShape(x) == ref.sizes());
    CHECK(max_abs_diff(m.output, ref) < 1e-5);
    CHECK(max_abs_diff(m.forward(x[0]), ref[0]) < 1e-5);
    m.to(DType::Float64);
    CHECK(max_abs_diff(m.forward(x.to(DType::Float64)), ref) < 1e-12);
  }
}

TEST_CASE("SpatialFullConvolution is the adjoint of SpatialConvolution with the same weight") {
  // <full(x), z> = <x, conv(z)> for every x, z: the transposed convolution's defining property
  Generator gen(8);
  for (const Config& c : configs) {
    auto full = make(c);
    full.noBias();
    full.to(DType::Float64);
    nn::SpatialConvolution conv(c.nOut, c.nIn, c.kW, c.kH, c.dW, c.dH, c.padW, c.padH, c.groups);
    conv.noBias();
    conv.to(DType::Float64);
    conv.weight.copy_(full.weight);
    const Tensor x = uniform({c.batch, c.nIn, c.iH, c.iW}, -1, 1, gen, DType::Float64);
    const Tensor y = full.forward(x);
    const Tensor z = uniform(y.sizes(), -1, 1, gen, DType::Float64);
    const Tensor cz = conv.forward(z);
    REQUIRE(cz.sizes() == x.sizes());
    INFO(full.str());
    CHECK(std::abs(y.mul(z).sum().item() - x.mul(cz).sum().item()) < 1e-10);
  }
}

TEST_CASE("SpatialFullConvolution matches PyTorch's conv_transpose2d with groups and adj") {
  // scripts/make_conv_reference.py: stride (2, 3), padding (1, 0), output padding (1, 2), groups 2
  const auto ref = load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/nn/conv_reference.safetensors").tensors;
  nn::SpatialFullConvolution m(4, 6, 2, 3, 3, 2, 0, 1, 2, 1, 2);
  m.to(DType::Float64);
  m.weight.copy_(ref.at("full2d.w"));
  m.bias.copy_(ref.at("full2d.b"));
  const Tensor y = m.forward(ref.at("full2d.x"));
  REQUIRE(y.sizes() == ref.at("full2d.y").sizes());
  CHECK(max_abs_diff(y, ref.at("full2d.y")) < 1e-12);
  CHECK(max_abs_diff(convref::full_conv(ref.at("full2d.x"), m.weight, m.bias, params_of(m)), ref.at("full2d.y")) <
        1e-12);
}

TEST_CASE("SpatialFullConvolution gradients, accumulation, initialisation") {
  Generator gen(20261206);
  INFO("data seed 20261206");
  for (const Config& c : configs) {
    auto m = make(c);
    m.to(DType::Float64);
    const Tensor x = uniform({c.batch, c.nIn, c.iH, c.iW}, -1, 1, gen, DType::Float64);
    expect_gradients_ok(m, x);
    expect_gradients_ok(m, x[0].contiguous());
  }
  for (int64_t batch : {1, 5}) {
    nn::SpatialFullConvolution m(4, 2, 3, 3, 2, 2, 1, 1, 1, 1, 2);
    m.to(DType::Float64);
    expect_accumulation_ok(m, uniform({batch, 4, 3, 4}, -1, 1, gen, DType::Float64));
    m.noBias();
    expect_accumulation_ok(m, uniform({batch, 4, 3, 4}, -1, 1, gen, DType::Float64));
    expect_gradients_ok(m, uniform({batch, 4, 3, 4}, -1, 1, gen, DType::Float64));
  }
  manual_seed(4);
  nn::SpatialFullConvolution m(16, 4, 3, 3);
  CHECK(m.weight.sizes() == Shape{16, 4, 3, 3});
  CHECK(m.weight.abs().max().item() <= 1.0 / 12);
  CHECK(m.weight.abs().max().item() > 0.95 / 12);
}

// The weight gradient of a transposed convolution multiplies the input with the unfolded
// gradOutput, which holds zeros where a window leaves the output's padded border; a NaN or Inf
// in the input must reach only the entries whose windows land inside (Note [Weight gradient
// past the image] in nn/kernels/Convolution.cpp), as the direct sum below and cuDNN give.
TEST_CASE("SpatialFullConvolution: a NaN or Inf in the input reaches the weight gradient through pixels inside only") {
  Generator gen(20261126);
  for (const Config& c : {configs[1], configs[2], configs[5], configs[6]}) {
    auto m = make(c);
    m.to(DType::Float64);
    INFO(m.str(), " input ", c.batch, "x", c.nIn, "x", c.iH, "x", c.iW);
    Tensor x = uniform({c.batch, c.nIn, c.iH, c.iW}, -1, 1, gen, DType::Float64);
    x.set({0, 0, 0, 0}, std::nan(""));
    x.set({c.batch - 1, c.nIn - 1, c.iH - 1, c.iW - 1}, INFINITY);
    x.set({0, c.nIn - 1, 0, c.iW - 1}, -INFINITY);
    const Tensor y = m.forward(x);
    const Tensor gy = uniform(y.sizes(), -1, 1, gen, DType::Float64);
    m.zeroGradParameters();
    m.accGradParameters(x, gy, 1.0);
    const int64_t inG = c.nIn / c.groups, outG = c.nOut / c.groups, oH = y.size(2), oW = y.size(3);
    Tensor want = zeros_like(m.gradWeight);
    for (int64_t i = 0; i < c.nIn; ++i)
      for (int64_t o = 0; o < outG; ++o)
        for (int64_t kh = 0; kh < c.kH; ++kh)
          for (int64_t kw = 0; kw < c.kW; ++kw) {
            double acc = 0;
            for (int64_t n = 0; n < c.batch; ++n)
              for (int64_t h = 0; h < c.iH; ++h)
                for (int64_t w = 0; w < c.iW; ++w) {
                  const int64_t oh = h * c.dH - c.padH + kh, ow = w * c.dW - c.padW + kw;
                  if (oh >= 0 && oh < oH && ow >= 0 && ow < oW)
                    acc += x.get({n, i, h, w}) * gy.get({n, i / inG * outG + o, oh, ow});
                }
            want.set({i, o, kh, kw}, acc);
          }
    const auto a = m.gradWeight.to_vector<double>(), b = want.to_vector<double>();
    REQUIRE(a.size() == b.size());
    int64_t nonfinite = 0;
    for (size_t k = 0; k < a.size(); ++k) {
      CAPTURE(k);
      CHECK(std::isnan(a[k]) == std::isnan(b[k]));
      CHECK(std::isinf(a[k]) == std::isinf(b[k]));
      if (std::isfinite(b[k])) CHECK(std::abs(a[k] - b[k]) < 1e-12);
      nonfinite += !std::isfinite(b[k]);
    }
    CHECK(nonfinite > 0);
    CHECK(nonfinite < static_cast<int64_t>(b.size()));
  }
}

TEST_CASE("SpatialFullConvolution batch-parallel passes equal the per-sample ones") {
  Generator gen(13);
  nn::SpatialFullConvolution m(8, 8, 4, 4, 2, 2, 1, 1, 1, 1, 2);
  m.to(DType::Float64);
  convref::expect_batch_matches_samples(m, uniform({5, 8, 9, 8}, -1, 1, gen, DType::Float64));
}

TEST_CASE("SpatialFullConvolution state round trip and printing") {
  Generator gen(1);
  nn::SpatialFullConvolution a(3, 4, 3, 3, 2, 2, 1, 1, 1, 1), b(3, 4, 3, 3, 2, 2, 1, 1, 1, 1);
  expect_state_roundtrip_ok(a, b, uniform({2, 3, 3, 4}, -1, 1, gen));
  expect_prints_type(a);
  CHECK(a.str() == "nn.SpatialFullConvolution(3 -> 4, 3x3, 2,2, 1,1, 1,1)");
  CHECK(nn::SpatialFullConvolution(3, 8, 3, 3).str() == "nn.SpatialFullConvolution(3 -> 8, 3x3)");
  CHECK(nn::SpatialFullConvolution(3, 8, 4, 5, 2, 2, 1, 0).str() == "nn.SpatialFullConvolution(3 -> 8, 4x5, 2,2, 1,0)");
  CHECK(nn::SpatialFullConvolution(3, 8, 4, 4, 2, 3, 1, 1, 1, 0).str() ==
        "nn.SpatialFullConvolution(3 -> 8, 4x4, 2,3, 1,1, 1,0)");
  nn::SpatialFullConvolution g(4, 8, 3, 3, 1, 1, 0, 0, 0, 0, 4);
  g.noBias();
  CHECK(g.str() == "nn.SpatialFullConvolution(4 -> 8, 3x3, groups=4) without bias");
  CHECK(g.weight.sizes() == Shape{4, 2, 3, 3});
}

TEST_CASE("SpatialFullConvolution errors") {
  CHECK_THROWS_WITH_AS(nn::SpatialFullConvolution(3, 8, 3, 3, 2, 2, 0, 0, 2, 0),
                       "nn.SpatialFullConvolution: expected each adj smaller than its stride, got "
                       "nn.SpatialFullConvolution(3 -> 8, 3x3, 2,2, 2,0)",
                       Error);
  nn::SpatialFullConvolution m(3, 4, 3, 3, 1, 1, 2, 2);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 3, 1, 1})),
                       "nn.SpatialFullConvolution::updateOutput: expected input giving a non-empty output (H x W) "
                       "for a kernel 3x3 with stride 1x1, padding 2x2, adj 0x0 and dilation 1x1, got "
                       "[1 x 3 x 1 x 1]: calculated output size -1x-1, too small",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 4, 3, 3})),
                       "nn.SpatialFullConvolution::updateOutput: expected input of [3 x H x W] or "
                       "[batch x 3 x H x W], got [2 x 4 x 3 x 3]",
                       Error);
  const Tensor x = zeros({3, 4, 4});
  m.forward(x);
  CHECK_THROWS_WITH_AS(m.backward(x, zeros({4, 4, 4})),
                       "nn.SpatialFullConvolution::updateGradInput: expected gradOutput of [4 x 2 x 2] (for input "
                       "[3 x 4 x 4]), got [4 x 4 x 4]",
                       Error);
  m.adjW = 1;  // an edited field is checked again before any compute
  CHECK_THROWS_WITH_AS(m.forward(x), doctest::Contains("expected each adj smaller than its stride"), Error);
}
