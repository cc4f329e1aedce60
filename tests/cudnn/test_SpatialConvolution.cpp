// test_SpatialConvolution.cpp: cudnn.SpatialConvolution against nn.SpatialConvolution over the
// nn test's configurations (stride, asymmetric padding, groups 1/2/4, dilation, 1x1 and
// whole-image kernels, padding wider than the kernel, batch 1, odd sizes), with and without
// bias, batched and not, in float32 (TF32 off and on), float64, float16 and bfloat16; scaled
// accumulation, steady state, every pinned algorithm, pins through convert, and the errors.
#include <doctest/doctest.h>

#include "convert/Convert.h"
#include "cudnn/SpatialConvolution.h"
#include "cudnn/ops/conv.h"  // plan()'s interface
#include "nn/SpatialConvolution.h"
#include "tests/support/ConvTwinChecks.h"

using namespace tensor;
using namespace testing;

namespace {

const Device gpu = Device::cuda(0);

struct Config {
  int64_t nIn, nOut, kW, kH, dW, dH, padW, padH, groups, dilationW, dilationH, batch, iH, iW;
};

template <class M>
std::shared_ptr<M> make(const Config& c, bool bias) {
  auto m = std::make_shared<M>(c.nIn, c.nOut, c.kW, c.kH, c.dW, c.dH, c.padW, c.padH, c.groups);
  m->dilationW = c.dilationW;
  m->dilationH = c.dilationH;
  if (!bias) m->noBias();
  return m;
}

ConvFactory factory(const Config& c, bool bias) {
  return [c, bias](bool twin) -> nn::ModulePtr {
    if (twin) return make<cudnn::SpatialConvolution>(c, bias);
    return make<nn::SpatialConvolution>(c, bias);
  };
}

// the nn test's configurations, and one with enough planes for the tensor-core kernels
const std::vector<Config> configs = {
    {3, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1, 2, 7, 7},     {4, 6, 3, 2, 2, 1, 1, 0, 2, 1, 1, 3, 9, 8},
    {2, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1, 2, 5, 6},     {4, 4, 1, 1, 1, 1, 0, 0, 2, 1, 1, 2, 3, 5},
    {2, 2, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 11, 7},    {3, 2, 3, 3, 1, 1, 2, 2, 1, 2, 3, 2, 9, 10},
    {4, 8, 3, 3, 2, 2, 1, 1, 4, 1, 1, 2, 6, 7},     {2, 3, 2, 2, 3, 3, 0, 0, 1, 1, 1, 2, 8, 7},
    {3, 2, 1, 1, 2, 2, 0, 0, 1, 1, 1, 3, 5, 5},     {2, 3, 4, 5, 1, 1, 0, 0, 1, 1, 1, 2, 5, 4},
    {6, 4, 2, 3, 1, 2, 1, 1, 2, 2, 1, 1, 6, 5},     {2, 3, 1, 2, 2, 1, 2, 3, 1, 1, 1, 2, 4, 5},
    {16, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 4, 12, 12},
};

// every configuration batched with bias; some without bias, some non-batched
std::vector<ConvTwinCase> cases() {
  Generator gen(20261122);
  std::vector<ConvTwinCase> out;
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    const Tensor x = uniform({c.batch, c.nIn, c.iH, c.iW}, -1, 1, gen, DType::Float64);
    const std::string name = "config " + std::to_string(i);
    out.push_back({name, factory(c, true), x});
    if (i % 3 == 0) out.push_back({name + " non-batched", factory(c, true), x[0].contiguous()});
    if (i % 4 == 1) out.push_back({name + " without bias", factory(c, false), x});
  }
  return out;
}

void set_mode(nn::Module& m, const std::string& fwd, const std::string& bwdFilter, const std::string& bwdData) {
  dynamic_cast<nn::ConvolutionBase&>(m).setMode(fwd, bwdFilter, bwdData);
}

int algorithm(nn::Module& m, cudnn::ConvPass pass) {
  return dynamic_cast<cudnn::SpatialConvolution&>(m).plan().algorithm(pass);
}

// 8 -> 8 planes, 3x3, padding 1 on 16x16 images: every cuDNN algorithm has a chance
const Config pin_config{8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 4, 16, 16};

}  // namespace

TEST_CASE("cudnn.SpatialConvolution matches nn in float32 (TF32 off) and float64") {
  expect_conv_cases_match(cases(), DType::Float32);
  expect_conv_cases_match(cases(), DType::Float64);
}

TEST_CASE("cudnn.SpatialConvolution matches nn in float16 and bfloat16") {
  expect_conv_cases_match(cases(), DType::Float16);
  expect_conv_cases_match(cases(), DType::BFloat16);
}

TEST_CASE("cudnn.SpatialConvolution matches nn with a non-contiguous input") {
  const auto all = cases();
  expect_conv_cases_match({all[1], all[2], all[7]}, DType::Float32, true);
}

TEST_CASE("cudnn.SpatialConvolution with TF32 allowed stays within TF32's tolerance") {
  expect_conv_cases_match_tf32(cases());
}

TEST_CASE("cudnn.SpatialConvolution accumulates parameter gradients with a scale") {
  for (const ConvTwinCase& c : cases()) expect_conv_accumulates(c);
}

TEST_CASE("cudnn.SpatialConvolution steady state: no allocation, no algorithm search") {
  Generator gen(5);
  for (bool bias : {true, false}) {
    auto twin = make<cudnn::SpatialConvolution>(pin_config, bias);
    expect_conv_steady_state(*twin, uniform({4, 8, 16, 16}, -1, 1, gen), [&] { return twin->plan().searches(); });
  }
}

TEST_CASE("cudnn.SpatialConvolution: every pinned algorithm computes what nn does") {
  Generator gen(6);
  const ConvTwinCase c{"8 -> 8, 3x3, pad 1", factory(pin_config, true), uniform({4, 8, 16, 16}, -1, 1, gen)};
  const std::string ran = expect_pinned_algorithms_match(c, set_mode, algorithm);
  MESSAGE("ran pinned: " << ran);
  // IMPLICIT_GEMM serves every configuration: pinned, it must be what ran
  CHECK((" " + ran + " ").find(" fwd:none ") != std::string::npos);
}

TEST_CASE("cudnn.SpatialConvolution: setMode and fastest survive convert nn -> cudnn -> nn -> cudnn") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(7);
  auto m = make<nn::SpatialConvolution>(pin_config, true);
  m->setMode("none", "deterministic", "deterministic").fastest();
  const nn::ConvAlgorithms pins = m->algo;
  const Tensor x = uniform({4, 8, 16, 16}, -1, 1, gen);
  const Tensor y = m->forward(x).clone();

  nn::ModulePtr cu = nn::convert(m, cudnn::backend);
  REQUIRE(cu->type_name() == "cudnn.SpatialConvolution");
  CHECK(dynamic_cast<nn::ConvolutionBase&>(*cu).algo == pins);
  nn::ModulePtr back = nn::convert(cu, nn::backend);
  REQUIRE(back->type_name() == "nn.SpatialConvolution");
  CHECK(dynamic_cast<nn::ConvolutionBase&>(*back).algo == pins);
  nn::ModulePtr again = nn::convert(back, cudnn::backend);
  auto& twin = dynamic_cast<cudnn::SpatialConvolution&>(*again);
  CHECK(twin.algo == pins);

  const Tensor yg = twin.forward(x.to(gpu));
  CHECK(rel_norm_error(yg, y) < 1e-5);
  twin.backward(x.to(gpu), yg);
  CHECK(twin.plan().mode(cudnn::ConvPass::Forward) == "none");
  CHECK(twin.plan().mode(cudnn::ConvPass::BackwardFilter) == "deterministic");
  CHECK(twin.plan().mode(cudnn::ConvPass::BackwardData) == "deterministic");
  CHECK(twin.plan().algorithm(cudnn::ConvPass::Forward) ==
        cudnn::AlgoSetting::parse(cudnn::ConvPass::Forward, "none").algo);

  // resetMode: back to the global flags
  twin.resetMode();
  CHECK(rel_norm_error(twin.forward(x.to(gpu)), y) < 1e-5);
  CHECK(twin.plan().mode(cudnn::ConvPass::Forward).empty());
  CHECK(twin.algo == nn::ConvAlgorithms{});
}

TEST_CASE("cudnn.SpatialConvolution convert round trip and printing") {
  Generator gen(8);
  expect_convert_roundtrip(std::make_shared<nn::SpatialConvolution>(3, 4, 3, 3, 1, 1, 1, 1),
                           uniform({2, 3, 6, 6}, -1, 1, gen));
  auto grouped = std::make_shared<nn::SpatialConvolution>(4, 6, 3, 2, 2, 1, 1, 0, 2);
  grouped->dilationW = 2;
  grouped->noBias();
  expect_convert_roundtrip(grouped, uniform({4, 7, 9}, -1, 1, gen));
  CHECK(cudnn::SpatialConvolution(3, 96, 11, 11, 3, 3).str() == "cudnn.SpatialConvolution(3 -> 96, 11x11, 3,3)");
  cudnn::SpatialConvolution c(4, 4, 3, 2, 1, 1, 0, 0, 2);
  c.noBias();
  CHECK(c.str() == "cudnn.SpatialConvolution(4 -> 4, 3x2, groups=2) without bias");
}

TEST_CASE("cudnn.SpatialConvolution errors name the module, the contract and the shapes") {
  cudnn::SpatialConvolution m(3, 4, 5, 5);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 3, 8, 8})),
                       "cudnn.SpatialConvolution::updateOutput: expected input on a CUDA device, got float32 "
                       "[1 x 3 x 8 x 8] on cpu (move it with .to(tensor::Device::cuda()))",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 3, 8, 8}, DType::Float32, gpu)),
                       doctest::Contains("cudnn.SpatialConvolution::updateOutput: parameters are on cpu but the input "
                                         "is on cuda:0"),
                       Error);
  m.to(gpu);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 4, 8, 8}, DType::Float32, gpu)),
                       "cudnn.SpatialConvolution::updateOutput: expected input of [3 x H x W] or [batch x 3 x H x W], "
                       "got [2 x 4 x 8 x 8]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 3, 4, 4}, DType::Float32, gpu)),
                       "cudnn.SpatialConvolution::updateOutput: expected input of at least 5x5 (H x W) after padding "
                       "for a kernel 5x5 with stride 1x1, padding 0x0 and dilation 1x1, got [1 x 3 x 4 x 4]: "
                       "padded size 4x4 gives output size 0x0, too small",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({3, 8, 8}, DType::Float64, gpu)),
                       doctest::Contains("expected input of weight's dtype and device (float32 on cuda:0)"), Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({3, 8, 8}, DType::Int64, gpu)),
                       doctest::Contains("cudnn.SpatialConvolution::updateOutput: expected a float32, float64, float16 "
                                         "or bfloat16 input, got int64 [3 x 8 x 8]"),
                       Error);
  const Tensor x = zeros({2, 3, 8, 7}, DType::Float32, gpu);
  m.forward(x);
  CHECK_THROWS_WITH_AS(m.backward(x, zeros({2, 4, 4, 4}, DType::Float32, gpu)),
                       "cudnn.SpatialConvolution::updateGradInput: expected gradOutput of [2 x 4 x 4 x 3] (for input "
                       "[2 x 3 x 8 x 7]), got [2 x 4 x 4 x 4]",
                       Error);
  CHECK_THROWS_WITH_AS(m.accGradParameters(x, zeros({2, 4, 4, 3})),
                       doctest::Contains("cudnn.SpatialConvolution::accGradParameters: expected gradOutput on a CUDA "
                                         "device"),
                       Error);
  m.setMode("bogus", "", "");
  CHECK_THROWS_WITH_AS(m.forward(x),
                       doctest::Contains("cudnn.SpatialConvolution::updateOutput: algo (setMode): "
                                         "cudnn flags: conv.algo_fwd has no value 'bogus'"),
                       Error);
  m.resetMode();
  CHECK(m.forward(x).sizes() == Shape{2, 4, 4, 3});
}
