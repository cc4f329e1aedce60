// test_Select.cpp: cudnn.Select against nn.Select in every dtype, storage sharing, a convert
// round trip and the errors.
#include <doctest/doctest.h>

#include "cudnn/Select.h"
#include "nn/Select.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

TEST_CASE("cudnn.Select matches nn.Select in every dtype, contiguous or not") {
  Generator gen(3401);
  INFO("seed 3401");
  const std::pair<int64_t, int64_t> cases[] = {{1, -1}, {0, 1}, {-1, 0}, {2, 3}};
  for (auto [dimension, index] : cases) {
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      for (bool nc : {false, true}) {
        INFO("Select(", dimension, ", ", index, ") ", name(dt), nc ? " non-contiguous" : "");
        nn::Select ref(dimension, index);
        cudnn::Select twin(dimension, index);
        expect_twin_matches(ref, twin, uniform({3, 5, 4}, -1, 1, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt),
                            nc);
        CHECK(twin.output.sizes() == ref.output.sizes());
        CHECK(twin.output.is_cuda());
      }
    }
  }
}

TEST_CASE("cudnn.Select output is a view; convert round trip, printing and errors") {
  const Device gpu = Device::cuda(0);
  Generator gen(3402);
  cudnn::Select twin(1, -1);
  const Tensor x = arange(24, DType::Float32, gpu).view({2, 3, 4});
  CHECK(twin.forward(x).shares_storage(x));
  CHECK(twin.output.to_vector<float>() == std::vector<float>{8, 9, 10, 11, 20, 21, 22, 23});
  expect_convert_roundtrip(std::make_shared<nn::Select>(1, -1), uniform({3, 2, 4}, -1, 1, gen));
  CHECK(twin.str() == "cudnn.Select(1, -1)");
  CHECK_THROWS_WITH_AS(twin.forward(zeros({2, 3})),
                       doctest::Contains("cudnn.Select::updateOutput: expected input on a CUDA device"), Error);
  CHECK_THROWS_WITH_AS(twin.backward(x, zeros({5}, DType::Float32, gpu)),
                       "cudnn.Select::updateGradInput: expected gradOutput of [2 x 4] (input [2 x 3 x 4]), got [5]",
                       Error);
}
