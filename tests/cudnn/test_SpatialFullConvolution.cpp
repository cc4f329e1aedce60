// test_SpatialFullConvolution.cpp: cudnn.SpatialFullConvolution (forward = cuDNN's backward
// data, updateGradInput = its forward) against nn.SpatialFullConvolution over the nn test's
// configurations (overlapping and gapped strides, padding, adj, groups 1/2/3, 1x1 kernels,
// batch 1, non-square kernels and images), with and without bias, batched and not, in
// float32 (TF32 off and on), float64, float16 and bfloat16; scaled accumulation, steady
// state, pinned algorithms (the module's forward runs under bwd_data), convert and errors.
#include <doctest/doctest.h>

#include "cudnn/SpatialFullConvolution.h"
#include "cudnn/ops/conv.h"  // plan()'s interface
#include "nn/SpatialFullConvolution.h"
#include "tests/support/ConvTwinChecks.h"

using namespace tensor;
using namespace testing;

namespace {

const Device gpu = Device::cuda(0);

struct Config {
  int64_t nIn, nOut, kW, kH, dW, dH, padW, padH, adjW, adjH, groups, batch, iH, iW;
};

template <class M>
std::shared_ptr<M> make(const Config& c, bool bias) {
  auto m = std::make_shared<M>(c.nIn, c.nOut, c.kW, c.kH, c.dW, c.dH, c.padW, c.padH, c.adjW, c.adjH, c.groups);
  if (!bias) m->noBias();
  return m;
}

ConvFactory factory(const Config& c, bool bias) {
  return [c, bias](bool twin) -> nn::ModulePtr {
    if (twin) return make<cudnn::SpatialFullConvolution>(c, bias);
    return make<nn::SpatialFullConvolution>(c, bias);
  };
}

// the nn test's configurations, and one with enough planes for the tensor-core kernels
const std::vector<Config> configs = {
    {3, 2, 3, 3, 1, 1, 0, 0, 0, 0, 1, 2, 4, 5}, {2, 3, 4, 4, 2, 2, 1, 1, 0, 0, 1, 2, 3, 3},
    {4, 6, 3, 2, 2, 3, 1, 0, 1, 2, 2, 2, 3, 4}, {2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 1, 2, 3, 4},
    {4, 2, 1, 1, 2, 2, 0, 0, 1, 1, 2, 1, 3, 3}, {3, 3, 5, 3, 3, 2, 2, 1, 2, 1, 3, 1, 2, 3},
    {2, 4, 2, 3, 1, 1, 1, 2, 0, 0, 2, 3, 5, 4}, {16, 8, 4, 4, 2, 2, 1, 1, 0, 0, 1, 2, 8, 8},
};

std::vector<ConvTwinCase> cases() {
  Generator gen(20261124);
  std::vector<ConvTwinCase> out;
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    const Tensor x = uniform({c.batch, c.nIn, c.iH, c.iW}, -1, 1, gen, DType::Float64);
    const std::string name = "config " + std::to_string(i);
    out.push_back({name, factory(c, true), x});
    if (i % 3 == 0) out.push_back({name + " non-batched", factory(c, true), x[0].contiguous()});
    if (i % 3 == 2) out.push_back({name + " without bias", factory(c, false), x});
  }
  return out;
}

}  // namespace

TEST_CASE("cudnn.SpatialFullConvolution matches nn in float32 (TF32 off) and float64") {
  expect_conv_cases_match(cases(), DType::Float32);
  expect_conv_cases_match(cases(), DType::Float64);
}

TEST_CASE("cudnn.SpatialFullConvolution matches nn in float16 and bfloat16") {
  expect_conv_cases_match(cases(), DType::Float16);
  expect_conv_cases_match(cases(), DType::BFloat16);
}

TEST_CASE("cudnn.SpatialFullConvolution matches nn with a non-contiguous input") {
  const auto all = cases();
  expect_conv_cases_match({all[0], all[4]}, DType::Float32, true);
}

TEST_CASE("cudnn.SpatialFullConvolution with TF32 allowed stays within TF32's tolerance") {
  expect_conv_cases_match_tf32(cases());
}

TEST_CASE("cudnn.SpatialFullConvolution accumulates parameter gradients with a scale") {
  for (const ConvTwinCase& c : cases()) expect_conv_accumulates(c);
}

TEST_CASE("cudnn.SpatialFullConvolution steady state: no allocation, no algorithm search") {
  Generator gen(5);
  auto twin = make<cudnn::SpatialFullConvolution>(configs.back(), true);
  expect_conv_steady_state(*twin, uniform({2, 16, 8, 8}, -1, 1, gen), [&] { return twin->plan().searches(); });
}

TEST_CASE("cudnn.SpatialFullConvolution: pinned algorithms compute what nn does") {
  Generator gen(6);
  // 8 -> 8 planes, 3x3, stride 1, padding 1: a transposed convolution every algorithm may serve
  const Config c{8, 8, 3, 3, 1, 1, 1, 1, 0, 0, 1, 4, 16, 16};
  const std::string ran = expect_pinned_algorithms_match(
      {"8 -> 8, 3x3, pad 1", factory(c, true), uniform({4, 8, 16, 16}, -1, 1, gen)},
      [](nn::Module& m, const std::string& f, const std::string& bf, const std::string& bd) {
        dynamic_cast<nn::ConvolutionBase&>(m).setMode(f, bf, bd);
      },
      [](nn::Module& m, cudnn::ConvPass p) {
        return dynamic_cast<cudnn::SpatialFullConvolution&>(m).plan().algorithm(p);
      });
  MESSAGE("ran pinned: " << ran);
  CHECK((" " + ran + " ").find(" fwd:none ") != std::string::npos);  // updateGradInput
}

TEST_CASE("cudnn.SpatialFullConvolution convert round trip and printing") {
  Generator gen(8);
  expect_convert_roundtrip(std::make_shared<nn::SpatialFullConvolution>(3, 4, 3, 3, 2, 2, 1, 1, 1, 1),
                           uniform({2, 3, 4, 5}, -1, 1, gen));
  auto grouped = std::make_shared<nn::SpatialFullConvolution>(4, 6, 3, 2, 2, 1, 0, 1, 1, 0, 2);
  grouped->noBias();
  expect_convert_roundtrip(grouped, uniform({4, 3, 5}, -1, 1, gen));
  CHECK(cudnn::SpatialFullConvolution(3, 4, 3, 3, 2, 2, 1, 1, 1, 1).str() ==
        "cudnn.SpatialFullConvolution(3 -> 4, 3x3, 2,2, 1,1, 1,1)");
}

TEST_CASE("cudnn.SpatialFullConvolution errors name the module, the contract and the shapes") {
  cudnn::SpatialFullConvolution m(3, 4, 3, 3, 1, 1, 2, 2);
  CHECK_THROWS_WITH_AS(m.forward(zeros({3, 4, 4})),
                       doctest::Contains("cudnn.SpatialFullConvolution::updateOutput: expected input on a CUDA "
                                         "device, got float32 [3 x 4 x 4] on cpu"),
                       Error);
  m.to(gpu);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 3, 1, 1}, DType::Float32, gpu)),
                       "cudnn.SpatialFullConvolution::updateOutput: expected input giving a non-empty output (H x W) "
                       "for a kernel 3x3 with stride 1x1, padding 2x2, adj 0x0 and dilation 1x1, got "
                       "[1 x 3 x 1 x 1]: calculated output size -1x-1, too small",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 4, 3, 3}, DType::Float32, gpu)),
                       "cudnn.SpatialFullConvolution::updateOutput: expected input of [3 x H x W] or "
                       "[batch x 3 x H x W], got [2 x 4 x 3 x 3]",
                       Error);
  const Tensor x = zeros({3, 4, 4}, DType::Float32, gpu);
  m.forward(x);
  CHECK_THROWS_WITH_AS(m.backward(x, zeros({4, 4, 4}, DType::Float32, gpu)),
                       "cudnn.SpatialFullConvolution::updateGradInput: expected gradOutput of [4 x 2 x 2] (for input "
                       "[3 x 4 x 4]), got [4 x 4 x 4]",
                       Error);
}
