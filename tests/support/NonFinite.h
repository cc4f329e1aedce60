// NonFinite.h: checks of the CPU modules on NaN, +Inf and -Inf inputs against the values
// Note [NaN and Inf] (nn/kernels/Activation.h) says they give, written out by hand
// (nn::testkit::compare_values).
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "tensor/Tensor.h"
#include "testkit/Compare.h"
#include "tests/support/Kit.h"

namespace testing {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// `got` (any floating dtype, on the CPU) holds `want` element by element: NaN where want is
// NaN, the same infinity, and finite values within `tol` (absolute).
inline void expect_values(const char* what, const tensor::Tensor& got, const std::vector<double>& want,
                          double tol = 1e-6) {
  expect_ok(nn::testkit::compare_values(what, got, want, tol));
}

}  // namespace testing
