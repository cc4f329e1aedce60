// SteadyState.h: after a warm-up, a twin's forward + backward allocates no new device memory
// (buffers are reused, temporaries come from the caching allocator), as the twin brief asks
// (nn::testkit::check_steady_state).
#pragma once

#include <doctest/doctest.h>

#include "nn/Module.h"
#include "tensor/Cuda.h"
#include "testkit/TwinCheck.h"
#include "tests/support/Kit.h"

namespace testing {

inline void expect_no_steady_state_allocations(nn::Module& twin, const tensor::Tensor& input) {
  expect_ok(nn::testkit::check_steady_state(twin, input));
}

}  // namespace testing
