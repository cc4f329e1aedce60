// test_Contiguous.cpp: cudnn.Contiguous against nn.Contiguous in every dtype, the layouts it
// gives on the GPU, NaN and Inf, a convert round trip and the errors.
#include <doctest/doctest.h>

#include "cudnn/Contiguous.h"
#include "nn/Contiguous.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
}

TEST_CASE("cudnn.Contiguous matches nn.Contiguous in every dtype and both formats, contiguous or not") {
  Generator gen(4111);
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    for (MemoryFormat f : {MemoryFormat::ChannelsLast, MemoryFormat::Contiguous}) {
      for (const Shape& s : {Shape{2, 3, 4, 5}, Shape{2, 3, 2, 3, 4}}) {
        for (bool nc : {false, true}) {
          nn::Contiguous ref(f);
          cudnn::Contiguous twin(f);
          expect_twin_matches(ref, twin, uniform(s, -1, 1, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt), nc);
        }
      }
    }
    nn::Contiguous ref(MemoryFormat::ChannelsLast);
    cudnn::Contiguous twin(MemoryFormat::ChannelsLast);
    expect_twin_nonfinite_matches(ref, twin, uniform({2, 3, 4, 5}, -1, 1, gen, DType::Float64), {}, dt,
                                  TwinTolerance::for_dtype(dt));
  }
}

TEST_CASE("cudnn.Contiguous gives NHWC outputs and gradients in the input's layout on the GPU") {
  Generator gen(4112);
  cudnn::Contiguous twin(MemoryFormat::ChannelsLast);
  twin.to(gpu);
  const Tensor x = uniform({2, 3, 4, 5}, -1, 1, gen, DType::Float16, gpu);
  CHECK(twin.forward(x).is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(max_abs_diff(twin.output, x) == 0);
  const Tensor g = uniform({2, 3, 4, 5}, -1, 1, gen, DType::Float16, gpu).contiguous(MemoryFormat::ChannelsLast);
  CHECK(twin.backward(x, g).is_contiguous());
  CHECK(max_abs_diff(twin.gradInput, g) == 0);
  const Tensor nhwc = x.contiguous(MemoryFormat::ChannelsLast);
  CHECK(twin.forward(nhwc).is_same_view(nhwc));
}

TEST_CASE("cudnn.Contiguous convert round trip, printing and errors") {
  Generator gen(4113);
  expect_convert_roundtrip(std::make_shared<nn::Contiguous>(MemoryFormat::ChannelsLast),
                           uniform({2, 3, 4, 4}, -1, 1, gen));
  cudnn::Contiguous twin(MemoryFormat::ChannelsLast);
  CHECK(twin.str() == "cudnn.Contiguous(channels_last)");
  CHECK_THROWS_WITH_AS(twin.forward(zeros({2, 3, 4, 4})),
                       doctest::Contains("cudnn.Contiguous::updateOutput: expected input on a CUDA device"), Error);
  CHECK_THROWS_WITH_AS(twin.forward(zeros({2, 3}, DType::Float32, gpu)),
                       "cudnn.Contiguous::updateOutput: channels_last lays out 4-d (NHWC) or 5-d (NDHWC) tensors, got "
                       "[2 x 3]",
                       Error);
}
