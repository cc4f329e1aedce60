// NonContiguous.h: the same values as a tensor in a layout that is NOT contiguous, for every rank
// and size (but a tensor of one element or none, which has no other layout): two dimensions (the
// first and last unless told) stored swapped where that is not contiguous, else (1-D, or size-1
// dimensions that make the swap contiguous) every other element of a buffer twice as long. The
// twin comparisons (TwinCheck) and the bad-input matrix take their non-contiguous inputs from
// here; the check at the end keeps a "non-contiguous" case from quietly testing a contiguous one.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "tensor/Tensor.h"

namespace testing {

// dim1 < 0 counts from the end (-1: the last dimension).
inline tensor::Tensor noncontiguous_copy(const tensor::Tensor& x, int64_t dim0 = 0, int64_t dim1 = -1) {
  INFO("noncontiguous_copy of ", x.description());
  REQUIRE(x.numel() > 1);  // one element (or none) is contiguous in any layout
  const int64_t r = x.dim();
  if (dim1 < 0) dim1 += r;
  tensor::Tensor y;
  if (r >= 2) y = x.transpose(dim0, dim1).contiguous().transpose(dim0, dim1);
  if (!y.defined() || y.is_contiguous()) {
    tensor::Shape wide = x.sizes();
    wide.push_back(2);
    y = tensor::zeros(wide, x.dtype(), x.device()).select(r, 0);
    y.copy_(x);
  }
  REQUIRE_FALSE(y.is_contiguous());
  return y;
}

}  // namespace testing
