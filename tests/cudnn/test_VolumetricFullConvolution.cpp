// test_VolumetricFullConvolution.cpp: cudnn.VolumetricFullConvolution (forward = cuDNN's 3-d
// backward data) against nn.VolumetricFullConvolution over the nn test's configurations
// (stride, padding and adj per dim, groups, 1x1x1 kernels, batch 1, unequal sizes), with and
// without bias, batched and not, in float32 (TF32 off and on), float64, float16 and
// bfloat16; scaled accumulation, steady state, pinned algorithms, convert and errors.
#include <doctest/doctest.h>

#include "cudnn/VolumetricFullConvolution.h"
#include "cudnn/ops/conv.h"  // plan()'s interface
#include "nn/VolumetricFullConvolution.h"
#include "tests/support/ConvTwinChecks.h"

using namespace tensor;
using namespace testing;

namespace {

const Device gpu = Device::cuda(0);

struct Config {
  int64_t nIn, nOut, kT, kW, kH, dT, dW, dH, padT, padW, padH, adjT, adjW, adjH, groups, batch, iT, iH, iW;
};

template <class M>
std::shared_ptr<M> make(const Config& c, bool bias) {
  auto m = std::make_shared<M>(c.nIn, c.nOut, c.kT, c.kW, c.kH, c.dT, c.dW, c.dH, c.padT, c.padW, c.padH, c.adjT,
                               c.adjW, c.adjH, c.groups);
  if (!bias) m->noBias();
  return m;
}

ConvFactory factory(const Config& c, bool bias) {
  return [c, bias](bool twin) -> nn::ModulePtr {
    if (twin) return make<cudnn::VolumetricFullConvolution>(c, bias);
    return make<nn::VolumetricFullConvolution>(c, bias);
  };
}

// the nn test's configurations, the accumulation test's (adj with groups), and one with
// enough planes for the tensor-core kernels
const std::vector<Config> configs = {
    {2, 3, 2, 3, 3, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 2, 2, 3, 3},
    {3, 2, 3, 2, 2, 2, 2, 1, 1, 0, 0, 1, 1, 0, 1, 1, 2, 3, 2},
    {4, 2, 2, 2, 3, 2, 3, 1, 0, 1, 1, 0, 2, 0, 2, 2, 2, 2, 3},
    {2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 2, 2, 2, 3},
    {2, 4, 2, 2, 2, 2, 2, 2, 1, 0, 0, 1, 1, 0, 2, 3, 2, 3, 2},
    {16, 8, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 4},
};

std::vector<ConvTwinCase> cases() {
  Generator gen(20261126);
  std::vector<ConvTwinCase> out;
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    const Tensor x = uniform({c.batch, c.nIn, c.iT, c.iH, c.iW}, -1, 1, gen, DType::Float64);
    const std::string name = "config " + std::to_string(i);
    out.push_back({name, factory(c, true), x});
    if (i % 2 == 0) out.push_back({name + " non-batched", factory(c, true), x[0].contiguous()});
    if (i % 2 == 1) out.push_back({name + " without bias", factory(c, false), x});
  }
  return out;
}

}  // namespace

TEST_CASE("cudnn.VolumetricFullConvolution matches nn in float32 (TF32 off) and float64") {
  expect_conv_cases_match(cases(), DType::Float32);
  expect_conv_cases_match(cases(), DType::Float64);
}

TEST_CASE("cudnn.VolumetricFullConvolution matches nn in float16 and bfloat16") {
  expect_conv_cases_match(cases(), DType::Float16);
  expect_conv_cases_match(cases(), DType::BFloat16);
}

TEST_CASE("cudnn.VolumetricFullConvolution matches nn with a non-contiguous input") {
  const auto all = cases();
  expect_conv_cases_match({all[0], all[4]}, DType::Float32, true);
}

TEST_CASE("cudnn.VolumetricFullConvolution with TF32 allowed stays within TF32's tolerance") {
  expect_conv_cases_match_tf32(cases());
}

TEST_CASE("cudnn.VolumetricFullConvolution accumulates parameter gradients with a scale") {
  for (const ConvTwinCase& c : cases()) expect_conv_accumulates(c);
}

TEST_CASE("cudnn.VolumetricFullConvolution steady state: no allocation, no algorithm search") {
  Generator gen(5);
  auto twin = make<cudnn::VolumetricFullConvolution>(configs.back(), true);
  expect_conv_steady_state(*twin, uniform({2, 16, 3, 4, 4}, -1, 1, gen), [&] { return twin->plan().searches(); });
}

TEST_CASE("cudnn.VolumetricFullConvolution: pinned algorithms compute what nn does (3-d fallbacks included)") {
  const auto all = cases();
  const std::string ran = expect_pinned_algorithms_match(
      all[all.size() - 2],
      [](nn::Module& m, const std::string& f, const std::string& bf, const std::string& bd) {
        dynamic_cast<nn::ConvolutionBase&>(m).setMode(f, bf, bd);
      },
      [](nn::Module& m, cudnn::ConvPass p) {
        return dynamic_cast<cudnn::VolumetricFullConvolution&>(m).plan().algorithm(p);
      });
  MESSAGE("ran pinned: " << ran);
}

TEST_CASE("cudnn.VolumetricFullConvolution convert round trip and printing") {
  Generator gen(8);
  expect_convert_roundtrip(std::make_shared<nn::VolumetricFullConvolution>(2, 3, 2, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1),
                           uniform({2, 2, 2, 3, 2}, -1, 1, gen));
  CHECK(cudnn::VolumetricFullConvolution(3, 8, 3, 4, 4, 1, 2, 2, 0, 1, 1, 0, 1, 0).str() ==
        "cudnn.VolumetricFullConvolution(3 -> 8, 3x4x4, 1,2,2, 0,1,1, 0,1,0)");
}

TEST_CASE("cudnn.VolumetricFullConvolution errors name the module, the contract and the shapes") {
  cudnn::VolumetricFullConvolution m(2, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3, 3, 3})),
                       doctest::Contains("cudnn.VolumetricFullConvolution::updateOutput: expected input on a CUDA "
                                         "device, got float32 [2 x 3 x 3 x 3] on cpu"),
                       Error);
  m.to(gpu);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 1, 1, 1}, DType::Float32, gpu)),
                       "cudnn.VolumetricFullConvolution::updateOutput: expected input giving a non-empty output "
                       "(T x H x W) for a kernel 2x2x2 with stride 1x1x1, padding 1x1x1, adj 0x0x0 and dilation "
                       "1x1x1, got [2 x 1 x 1 x 1]: calculated output size 0x0x0, too small",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 3, 3, 3, 3}, DType::Float32, gpu)),
                       "cudnn.VolumetricFullConvolution::updateOutput: expected input of [2 x T x H x W] or "
                       "[batch x 2 x T x H x W], got [1 x 3 x 3 x 3 x 3]",
                       Error);
}
