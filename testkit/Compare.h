// Compare.h: the tensor comparisons the kit's checks are made of, usable on their own. Both
// tensors may be on any device and of any floating dtype; they are compared in float64.
#pragma once

#include <string>
#include <vector>

#include "tensor/Tensor.h"
#include "testkit/Report.h"

namespace nn::testkit {

// Same shape, `got` finite, and ||got - want|| / ||want|| <= tol.
Report compare_close(const std::string& what, const tensor::Tensor& got, const tensor::Tensor& want, double tol);

// Element by element, the same kind (NaN, +Inf, -Inf or finite) at every position, and the
// finite values within `tol` (relative, in norm). The first mismatches are listed with their
// positions and both values.
Report compare_nonfinite(const std::string& what, const tensor::Tensor& got, const tensor::Tensor& want, double tol);

// `got` holds `want` element by element: NaN where want is NaN, the same infinity, and finite
// values within `tol` (absolute). Values written out by hand (a Note's table) are checked so.
Report compare_values(const std::string& what, const tensor::Tensor& got, const std::vector<double>& want,
                      double tol = 1e-6);

}  // namespace nn::testkit
