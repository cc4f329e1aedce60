// test_SpatialDilatedConvolution.cpp: cudnn.SpatialDilatedConvolution against
// nn.SpatialDilatedConvolution over the nn test's configurations (dilation 1 to 4 per axis,
// stride, padding, non-square kernels, batch 1), with and without bias, batched and not, in
// float32 (TF32 off and on), float64, float16 and bfloat16; scaled accumulation, steady
// state, pinned algorithms, convert round trip and errors.
#include <doctest/doctest.h>

#include "cudnn/SpatialDilatedConvolution.h"
#include "cudnn/ops/conv.h"  // plan()'s interface
#include "nn/SpatialDilatedConvolution.h"
#include "tests/support/ConvTwinChecks.h"

using namespace tensor;
using namespace testing;

namespace {

const Device gpu = Device::cuda(0);

struct Config {
  int64_t nIn, nOut, kW, kH, dW, dH, padW, padH, dilationW, dilationH, batch, iH, iW;
};

template <class M>
std::shared_ptr<M> make(const Config& c, bool bias) {
  auto m = std::make_shared<M>(c.nIn, c.nOut, c.kW, c.kH, c.dW, c.dH, c.padW, c.padH, c.dilationW, c.dilationH);
  if (!bias) m->noBias();
  return m;
}

ConvFactory factory(const Config& c, bool bias) {
  return [c, bias](bool twin) -> nn::ModulePtr {
    if (twin) return make<cudnn::SpatialDilatedConvolution>(c, bias);
    return make<nn::SpatialDilatedConvolution>(c, bias);
  };
}

const std::vector<Config> configs = {
    {2, 3, 3, 3, 1, 1, 0, 0, 2, 2, 2, 7, 7},  {3, 2, 3, 2, 1, 2, 2, 1, 3, 2, 1, 9, 8},
    {2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 2, 5, 6},  {1, 4, 3, 3, 2, 1, 2, 2, 2, 4, 3, 7, 6},
    {3, 3, 5, 1, 1, 1, 0, 0, 2, 1, 2, 3, 11}, {8, 16, 3, 3, 1, 1, 2, 2, 2, 2, 2, 12, 10},
};

std::vector<ConvTwinCase> cases() {
  Generator gen(20261123);
  std::vector<ConvTwinCase> out;
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    const Tensor x = uniform({c.batch, c.nIn, c.iH, c.iW}, -1, 1, gen, DType::Float64);
    const std::string name = "config " + std::to_string(i);
    out.push_back({name, factory(c, true), x});
    if (i % 2 == 0) out.push_back({name + " non-batched", factory(c, true), x[0].contiguous()});
    if (i % 2 == 1) out.push_back({name + " without bias", factory(c, false), x});
  }
  return out;
}

}  // namespace

TEST_CASE("cudnn.SpatialDilatedConvolution matches nn in float32 (TF32 off) and float64") {
  expect_conv_cases_match(cases(), DType::Float32);
  expect_conv_cases_match(cases(), DType::Float64);
}

TEST_CASE("cudnn.SpatialDilatedConvolution matches nn in float16 and bfloat16") {
  expect_conv_cases_match(cases(), DType::Float16);
  expect_conv_cases_match(cases(), DType::BFloat16);
}

TEST_CASE("cudnn.SpatialDilatedConvolution matches nn with a non-contiguous input") {
  const auto all = cases();
  expect_conv_cases_match({all[0], all[2]}, DType::Float32, true);
}

TEST_CASE("cudnn.SpatialDilatedConvolution with TF32 allowed stays within TF32's tolerance") {
  expect_conv_cases_match_tf32(cases());
}

TEST_CASE("cudnn.SpatialDilatedConvolution accumulates parameter gradients with a scale") {
  for (const ConvTwinCase& c : cases()) expect_conv_accumulates(c);
}

TEST_CASE("cudnn.SpatialDilatedConvolution steady state: no allocation, no algorithm search") {
  Generator gen(5);
  auto twin = make<cudnn::SpatialDilatedConvolution>(configs.back(), true);
  expect_conv_steady_state(*twin, uniform({2, 8, 12, 10}, -1, 1, gen), [&] { return twin->plan().searches(); });
}

TEST_CASE("cudnn.SpatialDilatedConvolution: pinned algorithms compute what nn does") {
  const auto all = cases();
  const std::string ran = expect_pinned_algorithms_match(
      all.back(),
      [](nn::Module& m, const std::string& f, const std::string& bf, const std::string& bd) {
        dynamic_cast<nn::ConvolutionBase&>(m).setMode(f, bf, bd);
      },
      [](nn::Module& m, cudnn::ConvPass p) {
        return dynamic_cast<cudnn::SpatialDilatedConvolution&>(m).plan().algorithm(p);
      });
  MESSAGE("ran pinned: " << ran);
}

TEST_CASE("cudnn.SpatialDilatedConvolution convert round trip and printing") {
  Generator gen(8);
  expect_convert_roundtrip(std::make_shared<nn::SpatialDilatedConvolution>(3, 4, 3, 3, 1, 1, 2, 2, 2, 2),
                           uniform({2, 3, 7, 8}, -1, 1, gen));
  CHECK(cudnn::SpatialDilatedConvolution(3, 8, 3, 3, 1, 1, 2, 2, 2, 2).str() ==
        "cudnn.SpatialDilatedConvolution(3 -> 8, 3x3, 1,1, 2,2, 2,2)");
}

TEST_CASE("cudnn.SpatialDilatedConvolution errors name the module, the contract and the shapes") {
  cudnn::SpatialDilatedConvolution m(3, 4, 3, 3, 1, 1, 0, 0, 3, 3);
  CHECK_THROWS_WITH_AS(m.forward(zeros({3, 8, 8})),
                       doctest::Contains("cudnn.SpatialDilatedConvolution::updateOutput: expected input on a CUDA "
                                         "device, got float32 [3 x 8 x 8] on cpu"),
                       Error);
  m.to(gpu);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 8, 8}, DType::Float32, gpu)),
                       "cudnn.SpatialDilatedConvolution::updateOutput: expected input of [3 x H x W] or "
                       "[batch x 3 x H x W], got [2 x 8 x 8]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({3, 6, 9}, DType::Float32, gpu)),
                       "cudnn.SpatialDilatedConvolution::updateOutput: expected input of at least 7x7 (H x W) after "
                       "padding for a kernel 3x3 with stride 1x1, padding 0x0 and dilation 3x3, got [3 x 6 x 9]: "
                       "padded size 6x9 gives output size 0x3, too small",
                       Error);
}
