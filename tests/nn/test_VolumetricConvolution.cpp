// test_VolumetricConvolution.cpp
#include <doctest/doctest.h>

#include <cmath>

#include "nn/VolumetricConvolution.h"
#include "tensor/Safetensors.h"
#include "tests/support/GradCheck.h"
#include "tests/support/ConvReference.h"

using namespace tensor;
using namespace testing;

namespace {

struct Config {
  int64_t nIn, nOut, kT, kW, kH, dT, dW, dH, padT, padW, padH, groups, batch, iT, iH, iW;
};

nn::VolumetricConvolution make(const Config& c) {
  return nn::VolumetricConvolution(c.nIn, c.nOut, c.kT, c.kW, c.kH, c.dT, c.dW, c.dH, c.padT, c.padW, c.padH,
                                   c.groups);
}

convref::Params params_of(const nn::VolumetricConvolution& m) {
  return {{m.dT, m.dH, m.dW}, {m.padT, m.padH, m.padW}, {}, {}, m.groups};
}

// stride (also larger than the kernel), padding per dim, groups, 1x1x1 kernels, batch 1,
// kernels as large as the volume, odd and unequal sizes; the first two keep the volume's size at
// stride 1 (the shifted runs of Note [Shifted runs] in nn/kernels/Convolution.cpp)
const std::vector<Config> configs = {
    {2, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 2, 3, 4, 5}, {2, 2, 3, 1, 3, 1, 1, 1, 1, 0, 1, 1, 1, 4, 3, 5},
    {2, 3, 2, 3, 3, 1, 1, 1, 0, 0, 0, 1, 2, 4, 5, 5}, {3, 2, 3, 2, 1, 2, 1, 2, 1, 0, 1, 1, 1, 5, 4, 6},
    {4, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 2, 2, 3, 3, 4}, {2, 4, 2, 2, 2, 3, 2, 2, 0, 1, 0, 2, 2, 6, 5, 5},
    {1, 2, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 3, 3, 4, 3}, {2, 2, 4, 3, 2, 1, 1, 1, 0, 0, 0, 1, 1, 4, 2, 3},
};

}  // namespace

TEST_CASE("VolumetricConvolution forward matches a hand computation") {
  nn::VolumetricConvolution m(1, 1, 2, 2, 2);
  m.weight.copy_(arange(1, 9).view({1, 1, 2, 2, 2}));  // w[t][h][w] = 4t + 2h + w + 1
  m.bias.fill_(1);
  const Tensor y = m.forward(arange(12).view({1, 2, 2, 3}));
  CHECK(y.sizes() == Shape{1, 1, 1, 2});
  CHECK(y.to_vector<float>() == std::vector<float>{243, 279});
}

TEST_CASE("VolumetricConvolution forward matches the direct loop and PyTorch") {
  Generator gen(20261207);
  INFO("data seed 20261207");
  for (const Config& c : configs) {
    auto m = make(c);
    INFO(m.str(), " input ", c.batch, "x", c.nIn, "x", c.iT, "x", c.iH, "x", c.iW);
    const Tensor x = uniform({c.batch, c.nIn, c.iT, c.iH, c.iW}, -1, 1, gen);
    const Tensor ref = convref::conv(x, m.weight, m.bias, params_of(m));
    REQUIRE(m.forward(x).sizes() == ref.sizes());
    CHECK(max_abs_diff(m.output, ref) < 1e-5);
    CHECK(max_abs_diff(m.forward(x[0]), ref[0]) < 1e-5);
    m.to(DType::Float64);
    CHECK(max_abs_diff(m.forward(x.to(DType::Float64)), ref) < 1e-12);
  }
  // scripts/make_conv_reference.py: stride (1, 2, 1), padding (1, 0, 1) in (T, H, W)
  const auto ref = load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/nn/conv_reference.safetensors").tensors;
  nn::VolumetricConvolution p(2, 3, 2, 2, 3, 1, 1, 2, 1, 1, 0);
  p.to(DType::Float64);
  p.weight.copy_(ref.at("conv3d.w"));
  p.bias.copy_(ref.at("conv3d.b"));
  REQUIRE(p.forward(ref.at("conv3d.x")).sizes() == ref.at("conv3d.y").sizes());
  CHECK(max_abs_diff(p.output, ref.at("conv3d.y")) < 1e-12);
}

TEST_CASE("VolumetricConvolution gradients, accumulation, initialisation") {
  Generator gen(20261208);
  INFO("data seed 20261208");
  for (const Config& c : configs) {
    auto m = make(c);
    m.to(DType::Float64);
    const Tensor x = uniform({c.batch, c.nIn, c.iT, c.iH, c.iW}, -1, 1, gen, DType::Float64);
    expect_gradients_ok(m, x);
    expect_gradients_ok(m, x[0].contiguous());
  }
  for (int64_t batch : {1, 3}) {
    nn::VolumetricConvolution m(2, 4, 2, 3, 2, 1, 2, 1, 1, 1, 0, 2);
    m.to(DType::Float64);
    expect_accumulation_ok(m, uniform({batch, 2, 3, 4, 5}, -1, 1, gen, DType::Float64));
    m.noBias();
    expect_accumulation_ok(m, uniform({batch, 2, 3, 4, 5}, -1, 1, gen, DType::Float64));
  }
  manual_seed(6);
  nn::VolumetricConvolution m(4, 8, 3, 3, 3);  // stdv = 1/sqrt(3*3*3*4)
  CHECK(m.weight.sizes() == Shape{8, 4, 3, 3, 3});
  CHECK(m.weight.abs().max().item() <= 1 / std::sqrt(108.0));
  CHECK(m.weight.abs().max().item() > 0.95 / std::sqrt(108.0));
}

TEST_CASE("VolumetricConvolution batch-parallel passes equal the per-sample ones") {
  Generator gen(13);
  nn::VolumetricConvolution m(4, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 2);
  m.to(DType::Float64);
  convref::expect_batch_matches_samples(m, uniform({3, 4, 6, 8, 8}, -1, 1, gen, DType::Float64));
}

TEST_CASE("VolumetricConvolution state round trip and printing") {
  Generator gen(1);
  nn::VolumetricConvolution a(2, 3, 2, 3, 3, 1, 1, 1, 1, 1, 1), b(2, 3, 2, 3, 3, 1, 1, 1, 1, 1, 1);
  expect_state_roundtrip_ok(a, b, uniform({2, 2, 3, 4, 4}, -1, 1, gen));
  expect_prints_type(a);
  CHECK(a.str() == "nn.VolumetricConvolution(2 -> 3, 2x3x3, 1,1,1, 1,1,1)");
  CHECK(nn::VolumetricConvolution(3, 8, 3, 5, 5, 1, 2, 2).str() == "nn.VolumetricConvolution(3 -> 8, 3x5x5, 1,2,2)");
  CHECK(nn::VolumetricConvolution(3, 8, 3, 5, 4, 1, 2, 3, 1, 2, 0).str() ==
        "nn.VolumetricConvolution(3 -> 8, 3x5x4, 1,2,3, 1,2,0)");
  CHECK(nn::VolumetricConvolution(3, 8, 1, 1, 1).str() == "nn.VolumetricConvolution(3 -> 8, 1x1x1)");
  a.noBias();
  CHECK(a.str() == "nn.VolumetricConvolution(2 -> 3, 2x3x3, 1,1,1, 1,1,1) without bias");
}

TEST_CASE("VolumetricConvolution errors") {
  nn::VolumetricConvolution m(2, 3, 3, 3, 3);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 2, 2, 5, 5})),
                       "nn.VolumetricConvolution::updateOutput: expected input of at least 3x3x3 (T x H x W) after "
                       "padding for a kernel 3x3x3 with stride 1x1x1, padding 0x0x0 and dilation 1x1x1, got "
                       "[1 x 2 x 2 x 5 x 5]: padded size 2x5x5 gives output size 0x3x3, too small",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 5, 5})),
                       "nn.VolumetricConvolution::updateOutput: expected input of [2 x T x H x W] or "
                       "[batch x 2 x T x H x W], got [2 x 5 x 5]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 3, 4, 4, 4})), doctest::Contains("got [1 x 3 x 4 x 4 x 4]"), Error);
  CHECK_THROWS_WITH_AS(nn::VolumetricConvolution(2, 3, 3, 3, 3, 1, 0, 1), doctest::Contains("expected positive kernel sizes and strides"), Error);
}
