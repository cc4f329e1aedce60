// Inputs.cpp
#include "testkit/Inputs.h"

#include <limits>

namespace nn::testkit {

using tensor::DType;
using tensor::Tensor;

Tensor noncontiguous_copy(const Tensor& x, int64_t dim0, int64_t dim1) {
  if (x.numel() <= 1)  // one element (or none) is contiguous in any layout
    throw tensor::Error("testkit::noncontiguous_copy: expected a tensor of 2 or more elements, got " + x.description());
  const int64_t r = x.dim();
  if (dim1 < 0) dim1 += r;
  Tensor y;
  if (r >= 2) y = x.transpose(dim0, dim1).contiguous().transpose(dim0, dim1);
  if (!y.defined() || y.is_contiguous()) {
    tensor::Shape wide = x.sizes();
    wide.push_back(2);
    y = tensor::zeros(wide, x.dtype(), x.device()).select(r, 0);
    y.copy_(x);
  }
  if (y.is_contiguous())  // a "non-contiguous" case must not quietly test a contiguous one
    throw tensor::Error("testkit::noncontiguous_copy: found no non-contiguous layout for " + x.description());
  return y;
}

Tensor with_nonfinite(const Tensor& input, const std::vector<int64_t>& positions) {
  Tensor x = input.to(tensor::Device::cpu(), DType::Float64).contiguous().clone();
  const int64_t n = x.numel();
  std::vector<int64_t> at = positions;
  if (at.empty())
    at = n >= 8 ? std::vector<int64_t>{n / 7, 3 * n / 7 + 1, 5 * n / 7 + 2} : std::vector<int64_t>{0, 1, 2};
  if (static_cast<int64_t>(at.size()) > n) at.resize(static_cast<size_t>(n));
  const double values[3] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity()};
  double* p = x.data<double>();
  for (size_t i = 0; i < at.size(); ++i) {
    if (at[i] < 0 || at[i] >= n)
      throw tensor::Error("testkit::with_nonfinite: expected positions in [0, " + std::to_string(n) + "), got " +
                          std::to_string(at[i]));
    p[at[i]] = values[i % 3];
  }
  return x.to(input.device(), input.dtype());
}

}  // namespace nn::testkit
