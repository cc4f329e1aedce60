// NonFinite.h: checks of the CPU modules on NaN, +Inf and -Inf inputs against the values
// Note [NaN and Inf] (nn/kernels/Activation.h) says they give, written out by hand.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tensor/Tensor.h"

namespace testing {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// `got` (any floating dtype, on the CPU) holds `want` element by element: NaN where want is
// NaN, the same infinity, and finite values within `tol` (absolute).
inline void expect_values(const char* what, const tensor::Tensor& got, const std::vector<double>& want,
                          double tol = 1e-6) {
  const std::vector<double> v = got.to(tensor::DType::Float64).contiguous().to_vector<double>();
  INFO(std::string(what), ": ", got.description());
  REQUIRE(v.size() == want.size());
  for (size_t i = 0; i < v.size(); ++i) {
    INFO("element ", i, ": got ", v[i], ", want ", want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(v[i]));
    } else if (std::isinf(want[i])) {
      CHECK(v[i] == want[i]);
    } else {
      CHECK(std::abs(v[i] - want[i]) <= tol);
    }
  }
}

}  // namespace testing
