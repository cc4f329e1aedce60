// test_View.cpp: cudnn.View against nn.View in every dtype (batch dimension kept or absorbed,
// -1 sizes, setNumInputDims, non-contiguous inputs copied on the device), storage sharing, a
// convert round trip and the errors.
#include <doctest/doctest.h>

#include "cudnn/View.h"
#include "nn/View.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);

struct Case {
  Shape size;
  int64_t numInputDims;  // -1: unset
  Shape input;
};
const Case kCases[] = {
    {{2}, -1, {8, 2, 1}},        // batch kept
    {{2}, -1, {2, 1}},           // one sample
    {{2, 2}, -1, {3, 4}},        // two sizes, batch kept
    {{2, -1}, -1, {3, 4}},       // -1 absorbs the batch
    {{-1}, 3, {2, 3, 4, 5}},     // flatten per sample
    {{-1}, 3, {3, 4, 5}},        // one sample
    {{12}, 2, {1, 3, 4}},        // a batch of one
};
}  // namespace

TEST_CASE("cudnn.View matches nn.View (batch kept or absorbed, -1, setNumInputDims) in every dtype") {
  Generator gen(3301);
  INFO("seed 3301");
  for (const Case& c : kCases) {
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      for (bool nc : {false, true}) {
        INFO("View", shape_str(c.size), " numInputDims ", c.numInputDims, " on ", shape_str(c.input));
        nn::View ref(c.size);
        cudnn::View twin(c.size);
        if (c.numInputDims >= 0) {
          ref.setNumInputDims(c.numInputDims);
          twin.setNumInputDims(c.numInputDims);
        }
        expect_twin_matches(ref, twin, uniform(c.input, -1, 1, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt),
                            nc);
        CHECK(twin.output.sizes() == ref.output.sizes());
      }
    }
  }
}

TEST_CASE("cudnn.View shares storage where the strides allow and copies on the device otherwise") {
  cudnn::View twin(4);
  twin.to(gpu);
  const Tensor x = arange(12, DType::Float64, gpu).view({3, 2, 2});
  const Tensor y = twin.forward(x);
  CHECK(y.sizes() == Shape{3, 4});
  CHECK(y.shares_storage(x));
  const Tensor g = arange(12, DType::Float64, gpu).view({3, 4});
  CHECK(twin.backward(x, g).shares_storage(g));
  cudnn::View six(6);
  const Tensor xt = arange(6, DType::Float64, gpu).view({2, 3}).t();
  const Tensor yt = six.forward(xt);
  CHECK(yt.is_cuda());
  CHECK(yt.to_vector<double>() == std::vector<double>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("cudnn.View convert round trip, printing and errors") {
  Generator gen(3302);
  auto v = std::make_shared<nn::View>(-1);
  v->setNumInputDims(2);
  expect_convert_roundtrip(v, uniform({3, 2, 4}, -1, 1, gen));
  cudnn::View twin(2, -1);
  CHECK(twin.str() == "cudnn.View(2, -1)");
  CHECK_THROWS_WITH_AS(twin.forward(zeros({2, 3})),
                       doctest::Contains("cudnn.View::updateOutput: expected input on a CUDA device"), Error);
  CHECK_THROWS_WITH_AS(cudnn::View(3).forward(zeros({2, 5}, DType::Float32, gpu)),
                       "cudnn.View::updateOutput: expected an input to hold a multiple of 3 elements to view as (3), "
                       "got [2 x 5]",
                       Error);
  const Tensor x = zeros({4, 3}, DType::Float32, gpu);
  twin.forward(x);
  CHECK_THROWS_WITH_AS(twin.backward(x, zeros({5}, DType::Float32, gpu)),
                       doctest::Contains("cudnn.View::updateGradInput: expected gradOutput of the output's shape "),
                       Error);
}
