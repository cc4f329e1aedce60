// test_Denormals.cpp: set_flush_denormal turns denormal results and operands into zeros on the
// calling thread and in the CPU kernels' OpenMP team, and off again gives them back.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "tensor/Denormals.h"
#include "tensor/Tensor.h"

using namespace tensor;

namespace {
struct FlushOffAfter {
  ~FlushOffAfter() { set_flush_denormal(false); }
};

// tiny * 1 on this thread, and over a tensor large enough for the kernels' parallel loop
float scalar_product(float tiny) {
  volatile float a = tiny, b = 1.0f;
  return a * b;
}
}  // namespace

TEST_CASE("set_flush_denormal: denormals become zero on this thread and in the kernels' threads, and come back") {
  const FlushOffAfter restore;
  const float tiny = std::numeric_limits<float>::denorm_min() * 1000;
  REQUIRE(std::fpclassify(tiny) == FP_SUBNORMAL);
  const Tensor t = full({1 << 20}, tiny);
  CHECK_FALSE(flush_denormal());  // off by default: IEEE arithmetic
  CHECK(scalar_product(tiny) == tiny);
  CHECK(max_abs_diff(t.mul(1.0), t) == 0);

  if (!set_flush_denormal(true)) return;  // no such mode on this CPU
  CHECK(flush_denormal());
  CHECK(scalar_product(tiny) == 0.0f);
  const Tensor flushed = t.mul(1.0);
  CHECK(max_abs_diff(flushed, zeros({1 << 20})) == 0);
  CHECK(max_abs_diff(t.mul(2.0).add(1.0), full({1 << 20}, 1.0)) == 0);  // normal values unchanged

  CHECK(set_flush_denormal(false));
  CHECK_FALSE(flush_denormal());
  CHECK(scalar_product(tiny) == tiny);
  CHECK(max_abs_diff(t.mul(1.0), t) == 0);
}
