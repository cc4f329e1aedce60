// test_VolumetricConvolution.cpp: cudnn.VolumetricConvolution against nn.VolumetricConvolution
// over the nn test's configurations (stride and padding per dim, groups, 1x1x1 and
// whole-volume kernels, batch 1, unequal sizes), with and without bias, batched and not, in
// float32 (TF32 off and on), float64, float16 and bfloat16; scaled accumulation, steady
// state, pinned algorithms (3-d falls back where cuDNN has none), convert and errors.
#include <doctest/doctest.h>

#include "cudnn/VolumetricConvolution.h"
#include "cudnn/ops/conv.h"  // plan()'s interface
#include "nn/VolumetricConvolution.h"
#include "tests/support/ConvTwinChecks.h"

using namespace tensor;
using namespace testing;

namespace {

const Device gpu = Device::cuda(0);

struct Config {
  int64_t nIn, nOut, kT, kW, kH, dT, dW, dH, padT, padW, padH, groups, batch, iT, iH, iW;
};

template <class M>
std::shared_ptr<M> make(const Config& c, bool bias) {
  auto m = std::make_shared<M>(c.nIn, c.nOut, c.kT, c.kW, c.kH, c.dT, c.dW, c.dH, c.padT, c.padW, c.padH, c.groups);
  if (!bias) m->noBias();
  return m;
}

ConvFactory factory(const Config& c, bool bias) {
  return [c, bias](bool twin) -> nn::ModulePtr {
    if (twin) return make<cudnn::VolumetricConvolution>(c, bias);
    return make<nn::VolumetricConvolution>(c, bias);
  };
}

// the nn test's configurations (the last one's kernel covers the whole volume), and one with
// enough planes for the tensor-core kernels
const std::vector<Config> configs = {
    {2, 3, 2, 3, 3, 1, 1, 1, 0, 0, 0, 1, 2, 4, 5, 5},  {3, 2, 3, 2, 1, 2, 1, 2, 1, 0, 1, 1, 1, 5, 4, 6},
    {4, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 2, 2, 3, 3, 4},  {2, 4, 2, 2, 2, 3, 2, 2, 0, 1, 0, 2, 2, 6, 5, 5},
    {1, 2, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 3, 3, 4, 3},  {2, 2, 4, 3, 2, 1, 1, 1, 0, 0, 0, 1, 1, 4, 2, 3},
    {8, 16, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 2, 6, 6, 6},
};

std::vector<ConvTwinCase> cases() {
  Generator gen(20261125);
  std::vector<ConvTwinCase> out;
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    const Tensor x = uniform({c.batch, c.nIn, c.iT, c.iH, c.iW}, -1, 1, gen, DType::Float64);
    const std::string name = "config " + std::to_string(i);
    out.push_back({name, factory(c, true), x});
    if (i % 3 == 0) out.push_back({name + " non-batched", factory(c, true), x[0].contiguous()});
    if (i % 3 == 1) out.push_back({name + " without bias", factory(c, false), x});
  }
  return out;
}

}  // namespace

TEST_CASE("cudnn.VolumetricConvolution matches nn in float32 (TF32 off) and float64") {
  expect_conv_cases_match(cases(), DType::Float32);
  expect_conv_cases_match(cases(), DType::Float64);
}

TEST_CASE("cudnn.VolumetricConvolution matches nn in float16 and bfloat16") {
  expect_conv_cases_match(cases(), DType::Float16);
  expect_conv_cases_match(cases(), DType::BFloat16);
}

TEST_CASE("cudnn.VolumetricConvolution matches nn with a non-contiguous input") {
  const auto all = cases();
  expect_conv_cases_match({all[0], all[3]}, DType::Float32, true);
}

TEST_CASE("cudnn.VolumetricConvolution with TF32 allowed stays within TF32's tolerance") {
  expect_conv_cases_match_tf32(cases());
}

TEST_CASE("cudnn.VolumetricConvolution accumulates parameter gradients with a scale") {
  for (const ConvTwinCase& c : cases()) expect_conv_accumulates(c);
}

TEST_CASE("cudnn.VolumetricConvolution steady state: no allocation, no algorithm search") {
  Generator gen(5);
  auto twin = make<cudnn::VolumetricConvolution>(configs.back(), true);
  expect_conv_steady_state(*twin, uniform({2, 8, 6, 6, 6}, -1, 1, gen), [&] { return twin->plan().searches(); });
}

TEST_CASE("cudnn.VolumetricConvolution: pinned algorithms compute what nn does (3-d fallbacks included)") {
  const auto all = cases();
  const std::string ran = expect_pinned_algorithms_match(
      all.back(),
      [](nn::Module& m, const std::string& f, const std::string& bf, const std::string& bd) {
        dynamic_cast<nn::ConvolutionBase&>(m).setMode(f, bf, bd);
      },
      [](nn::Module& m, cudnn::ConvPass p) {
        return dynamic_cast<cudnn::VolumetricConvolution&>(m).plan().algorithm(p);
      });
  MESSAGE("ran pinned: " << ran);
}

TEST_CASE("cudnn.VolumetricConvolution convert round trip and printing") {
  Generator gen(8);
  expect_convert_roundtrip(std::make_shared<nn::VolumetricConvolution>(2, 3, 2, 3, 3, 1, 1, 1, 1, 1, 1),
                           uniform({2, 2, 3, 4, 4}, -1, 1, gen));
  CHECK(cudnn::VolumetricConvolution(3, 8, 3, 5, 4, 1, 2, 3, 1, 2, 0).str() ==
        "cudnn.VolumetricConvolution(3 -> 8, 3x5x4, 1,2,3, 1,2,0)");
}

TEST_CASE("cudnn.VolumetricConvolution errors name the module, the contract and the shapes") {
  cudnn::VolumetricConvolution m(2, 3, 3, 3, 3);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 2, 4, 5, 5})),
                       doctest::Contains("cudnn.VolumetricConvolution::updateOutput: expected input on a CUDA "
                                         "device, got float32 [1 x 2 x 4 x 5 x 5] on cpu"),
                       Error);
  m.to(gpu);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 2, 2, 5, 5}, DType::Float32, gpu)),
                       "cudnn.VolumetricConvolution::updateOutput: expected input of at least 3x3x3 (T x H x W) after "
                       "padding for a kernel 3x3x3 with stride 1x1x1, padding 0x0x0 and dilation 1x1x1, got "
                       "[1 x 2 x 2 x 5 x 5]: padded size 2x5x5 gives output size 0x3x3, too small",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 5, 5}, DType::Float32, gpu)),
                       "cudnn.VolumetricConvolution::updateOutput: expected input of [2 x T x H x W] or "
                       "[batch x 2 x T x H x W], got [2 x 5 x 5]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 3, 4, 4, 4}, DType::Float32, gpu)),
                       doctest::Contains("got [1 x 3 x 4 x 4 x 4]"), Error);
}
