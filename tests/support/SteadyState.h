// SteadyState.h: after a warm-up, a twin's forward + backward allocates no new device memory
// (buffers are reused, temporaries come from the caching allocator), as the twin brief asks.
#pragma once

#include <doctest/doctest.h>

#include "nn/Module.h"
#include "tensor/Cuda.h"

namespace testing {

inline void expect_no_steady_state_allocations(nn::Module& twin, const tensor::Tensor& input) {
  tensor::Generator gen(3);
  // gradOutput takes the output's shape (pooling changes it), so one forward comes first
  const tensor::Tensor g = tensor::uniform(twin.forward(input).sizes(), -1, 1, gen, input.dtype(), input.device());
  for (int i = 0; i < 2; ++i) {
    twin.forward(input);
    twin.backward(input, g);
  }
  const uint64_t before = tensor::cuda::memory_stats(input.device().index).device_mallocs;
  for (int i = 0; i < 3; ++i) {
    twin.forward(input);
    twin.backward(input, g);
  }
  CHECK(tensor::cuda::memory_stats(input.device().index).device_mallocs == before);
}

}  // namespace testing
