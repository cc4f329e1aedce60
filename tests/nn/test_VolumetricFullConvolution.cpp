// test_VolumetricFullConvolution.cpp
#include <doctest/doctest.h>

#include <cmath>

#include "nn/VolumetricConvolution.h"
#include "nn/VolumetricFullConvolution.h"
#include "tensor/Safetensors.h"
#include "tests/support/GradCheck.h"
#include "tests/support/ConvReference.h"

using namespace tensor;
using namespace testing;

namespace {

struct Config {
  int64_t nIn, nOut, kT, kW, kH, dT, dW, dH, padT, padW, padH, adjT, adjW, adjH, groups, batch, iT, iH, iW;
};

nn::VolumetricFullConvolution make(const Config& c) {
  return nn::VolumetricFullConvolution(c.nIn, c.nOut, c.kT, c.kW, c.kH, c.dT, c.dW, c.dH, c.padT, c.padW, c.padH,
                                       c.adjT, c.adjW, c.adjH, c.groups);
}

convref::Params params_of(const nn::VolumetricFullConvolution& m) {
  return {{m.dT, m.dH, m.dW}, {m.padT, m.padH, m.padW}, {}, {m.adjT, m.adjH, m.adjW}, m.groups};
}

// stride, padding, adj per dim, groups, 1x1x1 kernels, batch 1, unequal sizes
const std::vector<Config> configs = {
    {2, 3, 2, 3, 3, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 2, 2, 3, 3},
    {3, 2, 3, 2, 2, 2, 2, 1, 1, 0, 0, 1, 1, 0, 1, 1, 2, 3, 2},
    {4, 2, 2, 2, 3, 2, 3, 1, 0, 1, 1, 0, 2, 0, 2, 2, 2, 2, 3},
    {2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 2, 2, 2, 3},
};

}  // namespace

TEST_CASE("VolumetricFullConvolution forward matches a hand computation") {
  // one input voxel stamps the kernel, scaled; adjT adds a last frame only the bias reaches
  nn::VolumetricFullConvolution m(1, 1, 1, 2, 1, 2, 1, 1, 0, 0, 0, 1, 0, 0);
  m.weight.copy_(from_vector<float>({1, 10}, {1, 1, 1, 1, 2}));
  m.bias.fill_(0.5);
  const Tensor y = m.forward(from_vector<float>({2}, {1, 1, 1, 1}));
  CHECK(y.sizes() == Shape{1, 2, 1, 2});
  CHECK(y.to_vector<float>() == std::vector<float>{2.5f, 20.5f, 0.5f, 0.5f});
}

TEST_CASE("VolumetricFullConvolution forward matches the scatter-add definition and PyTorch") {
  Generator gen(20261209);
  INFO("data seed 20261209");
  for (const Config& c : configs) {
    auto m = make(c);
    INFO(m.str(), " input ", c.batch, "x", c.nIn, "x", c.iT, "x", c.iH, "x", c.iW);
    const Tensor x = uniform({c.batch, c.nIn, c.iT, c.iH, c.iW}, -1, 1, gen);
    const Tensor ref = convref::full_conv(x, m.weight, m.bias, params_of(m));
    REQUIRE(m.forward(x).sizes() == ref.sizes());
    CHECK(max_abs_diff(m.output, ref) < 1e-5);
    CHECK(max_abs_diff(m.forward(x[0]), ref[0]) < 1e-5);
    m.to(DType::Float64);
    CHECK(max_abs_diff(m.forward(x.to(DType::Float64)), ref) < 1e-12);
  }
  // scripts/make_conv_reference.py: stride (2, 1, 2), padding (0, 1, 1), output padding (1, 0, 1)
  const auto ref = load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/nn/conv_reference.safetensors").tensors;
  nn::VolumetricFullConvolution p(2, 3, 2, 3, 2, 2, 2, 1, 0, 1, 1, 1, 1, 0);
  p.to(DType::Float64);
  p.weight.copy_(ref.at("full3d.w"));
  p.bias.copy_(ref.at("full3d.b"));
  REQUIRE(p.forward(ref.at("full3d.x")).sizes() == ref.at("full3d.y").sizes());
  CHECK(max_abs_diff(p.output, ref.at("full3d.y")) < 1e-12);
}

TEST_CASE("VolumetricFullConvolution is the adjoint of VolumetricConvolution with the same weight") {
  Generator gen(12);
  for (const Config& c : configs) {
    auto full = make(c);
    full.noBias();
    full.to(DType::Float64);
    nn::VolumetricConvolution conv(c.nOut, c.nIn, c.kT, c.kW, c.kH, c.dT, c.dW, c.dH, c.padT, c.padW, c.padH,
                                   c.groups);
    conv.noBias();
    conv.to(DType::Float64);
    conv.weight.copy_(full.weight);
    const Tensor x = uniform({c.batch, c.nIn, c.iT, c.iH, c.iW}, -1, 1, gen, DType::Float64);
    const Tensor y = full.forward(x);
    const Tensor z = uniform(y.sizes(), -1, 1, gen, DType::Float64);
    REQUIRE(conv.forward(z).sizes() == x.sizes());
    INFO(full.str());
    CHECK(std::abs(y.mul(z).sum().item() - x.mul(conv.output).sum().item()) < 1e-10);
  }
}

TEST_CASE("VolumetricFullConvolution gradients and accumulation") {
  Generator gen(20261210);
  INFO("data seed 20261210");
  for (const Config& c : configs) {
    auto m = make(c);
    m.to(DType::Float64);
    const Tensor x = uniform({c.batch, c.nIn, c.iT, c.iH, c.iW}, -1, 1, gen, DType::Float64);
    expect_gradients_ok(m, x);
    expect_gradients_ok(m, x[0].contiguous());
  }
  for (int64_t batch : {1, 3}) {
    nn::VolumetricFullConvolution m(2, 4, 2, 2, 2, 2, 2, 2, 1, 0, 0, 1, 1, 0, 2);
    m.to(DType::Float64);
    expect_accumulation_ok(m, uniform({batch, 2, 2, 3, 2}, -1, 1, gen, DType::Float64));
  }
}

TEST_CASE("VolumetricFullConvolution state round trip, printing and errors") {
  Generator gen(1);
  nn::VolumetricFullConvolution a(2, 3, 2, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1);
  nn::VolumetricFullConvolution b(2, 3, 2, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1);
  expect_state_roundtrip_ok(a, b, uniform({2, 2, 2, 3, 2}, -1, 1, gen));
  expect_prints_type(a);
  CHECK(a.str() == "nn.VolumetricFullConvolution(2 -> 3, 2x3x3, 2,2,2, 1,1,1, 1,1,1)");
  CHECK(a.weight.sizes() == Shape{2, 3, 2, 3, 3});
  CHECK(nn::VolumetricFullConvolution(3, 8, 3, 4, 5).str() == "nn.VolumetricFullConvolution(3 -> 8, 3x4x5)");
  CHECK(nn::VolumetricFullConvolution(3, 8, 3, 4, 4, 1, 2, 2, 0, 1, 1, 0, 1, 0).str() ==
        "nn.VolumetricFullConvolution(3 -> 8, 3x4x4, 1,2,2, 0,1,1, 0,1,0)");
  CHECK_THROWS_WITH_AS(nn::VolumetricFullConvolution(3, 8, 3, 3, 3, 1, 2, 2, 0, 0, 0, 1, 0, 0),
                       "nn.VolumetricFullConvolution: expected each adj smaller than its stride, got "
                       "nn.VolumetricFullConvolution(3 -> 8, 3x3x3, 1,2,2, 1,0,0)",
                       Error);
  nn::VolumetricFullConvolution m(2, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 1, 1, 1})),
                       "nn.VolumetricFullConvolution::updateOutput: expected input giving a non-empty output "
                       "(T x H x W) for a kernel 2x2x2 with stride 1x1x1, padding 1x1x1, adj 0x0x0 and dilation "
                       "1x1x1, got [2 x 1 x 1 x 1]: calculated output size 0x0x0, too small",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 3, 3, 3, 3})),
                       "nn.VolumetricFullConvolution::updateOutput: expected input of [2 x T x H x W] or "
                       "[batch x 2 x T x H x W], got [1 x 3 x 3 x 3 x 3]",
                       Error);
}
