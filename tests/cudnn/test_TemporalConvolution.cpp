// test_TemporalConvolution.cpp: cudnn.TemporalConvolution (a 2-d cuDNN convolution over
// [batch x 1 x frames x inputFrameSize]) against nn.TemporalConvolution over the nn test's
// configurations (overlapping, disjoint and gapped windows, kW 1, one output frame, frame
// counts with a remainder, batch 1), batched and not, in float32 (TF32 off and on), float64,
// float16 and bfloat16; scaled accumulation (backward() and the separate passes), steady
// state, pinned algorithms, convert round trip and errors.
#include <doctest/doctest.h>

#include "cudnn/TemporalConvolution.h"
#include "cudnn/ops/conv.h"  // plan()'s interface
#include "nn/TemporalConvolution.h"
#include "tests/support/ConvTwinChecks.h"

using namespace tensor;
using namespace testing;

namespace {

const Device gpu = Device::cuda(0);

struct Config {
  int64_t inputFrameSize, outputFrameSize, kW, dW, batch, frames;
};

ConvFactory factory(const Config& c) {
  return [c](bool twin) -> nn::ModulePtr {
    if (twin) return std::make_shared<cudnn::TemporalConvolution>(c.inputFrameSize, c.outputFrameSize, c.kW, c.dW);
    return std::make_shared<nn::TemporalConvolution>(c.inputFrameSize, c.outputFrameSize, c.kW, c.dW);
  };
}

// the nn test's configurations, and one with realistic frame sizes
const std::vector<Config> configs = {
    {3, 4, 3, 1, 2, 7}, {2, 3, 2, 2, 3, 8},  {4, 2, 2, 3, 2, 9},    {1, 1, 1, 1, 1, 4},
    {3, 5, 4, 2, 1, 4}, {2, 2, 3, 2, 2, 10}, {32, 16, 5, 1, 4, 40},
};

std::vector<ConvTwinCase> cases() {
  Generator gen(20261127);
  std::vector<ConvTwinCase> out;
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    const Tensor x = uniform({c.batch, c.frames, c.inputFrameSize}, -1, 1, gen, DType::Float64);
    const std::string name = "config " + std::to_string(i);
    out.push_back({name, factory(c), x});
    if (i % 2 == 0) out.push_back({name + " non-batched", factory(c), x[0].contiguous()});
  }
  return out;
}

}  // namespace

TEST_CASE("cudnn.TemporalConvolution matches nn in float32 (TF32 off) and float64") {
  expect_conv_cases_match(cases(), DType::Float32);
  expect_conv_cases_match(cases(), DType::Float64);
}

TEST_CASE("cudnn.TemporalConvolution matches nn in float16 and bfloat16") {
  expect_conv_cases_match(cases(), DType::Float16);
  expect_conv_cases_match(cases(), DType::BFloat16);
}

TEST_CASE("cudnn.TemporalConvolution matches nn with a non-contiguous input") {
  const auto all = cases();
  expect_conv_cases_match({all[0], all[1], all[3]}, DType::Float32, true);
}

TEST_CASE("cudnn.TemporalConvolution with TF32 allowed stays within TF32's tolerance") {
  expect_conv_cases_match_tf32(cases());
}

TEST_CASE("cudnn.TemporalConvolution accumulates parameter gradients with a scale") {
  for (const ConvTwinCase& c : cases()) expect_conv_accumulates(c);
}

TEST_CASE("cudnn.TemporalConvolution steady state: no allocation, no algorithm search") {
  Generator gen(5);
  cudnn::TemporalConvolution twin(32, 16, 5, 1);
  expect_conv_steady_state(twin, uniform({4, 40, 32}, -1, 1, gen), [&] { return twin.plan().searches(); });
}

TEST_CASE("cudnn.TemporalConvolution: pinned algorithms compute what nn does") {
  const auto all = cases();
  const std::string ran = expect_pinned_algorithms_match(
      all[all.size() - 2],
      [](nn::Module& m, const std::string& f, const std::string& bf, const std::string& bd) {
        dynamic_cast<nn::TemporalConvolution&>(m).setMode(f, bf, bd);
      },
      [](nn::Module& m, cudnn::ConvPass p) {
        return dynamic_cast<cudnn::TemporalConvolution&>(m).plan().algorithm(p);
      });
  MESSAGE("ran pinned: " << ran);
  // the pins survive convert both ways
  auto m = std::make_shared<nn::TemporalConvolution>(3, 4, 2);
  m->setMode("none", "", "deterministic").fastest();
  nn::ModulePtr again = nn::convert(nn::convert(nn::convert(m, cudnn::backend), nn::backend), cudnn::backend);
  CHECK(dynamic_cast<cudnn::TemporalConvolution&>(*again).algo ==
        nn::ConvAlgorithms{"none", "", "deterministic", true});
}

TEST_CASE("cudnn.TemporalConvolution convert round trip and printing") {
  Generator gen(8);
  expect_convert_roundtrip(std::make_shared<nn::TemporalConvolution>(3, 4, 3, 2), uniform({2, 9, 3}, -1, 1, gen));
  expect_convert_roundtrip(std::make_shared<nn::TemporalConvolution>(5, 2, 2), uniform({6, 5}, -1, 1, gen));
  CHECK(cudnn::TemporalConvolution(3, 4, 3, 2).str() == "cudnn.TemporalConvolution");
}

TEST_CASE("cudnn.TemporalConvolution errors name the module, the contract and the shapes") {
  cudnn::TemporalConvolution m(3, 4, 3);
  CHECK_THROWS_WITH_AS(m.forward(zeros({6, 3})),
                       "cudnn.TemporalConvolution::updateOutput: expected input on a CUDA device, got float32 "
                       "[6 x 3] on cpu (move it with .to(tensor::Device::cuda()))",
                       Error);
  m.to(gpu);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3}, DType::Float32, gpu)),
                       "cudnn.TemporalConvolution::updateOutput: expected input of at least 3 frames for kernel width "
                       "3, got [2 x 3]: calculated output size 0 frames, too small",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({6, 4}, DType::Float32, gpu)),
                       "cudnn.TemporalConvolution::updateOutput: expected input of [nInputFrame x 3] or "
                       "[batch x nInputFrame x 3], got [6 x 4]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({6, 3}, DType::Float64, gpu)),
                       doctest::Contains("expected input of weight's dtype and device (float32 on cuda:0)"), Error);
  const Tensor x = zeros({2, 7, 3}, DType::Float32, gpu);
  m.forward(x);
  CHECK_THROWS_WITH_AS(m.backward(x, zeros({2, 4, 4}, DType::Float32, gpu)),
                       "cudnn.TemporalConvolution::updateGradInput: expected gradOutput of [2 x 5 x 4] (for input "
                       "[2 x 7 x 3]), got [2 x 4 x 4]",
                       Error);
}
