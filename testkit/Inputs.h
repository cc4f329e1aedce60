// Inputs.h: the inputs the contract checks feed a module: the same values in a layout that is
// not contiguous, and a copy with NaN, +Inf and -Inf written in.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/Tensor.h"

namespace nn::testkit {

// The same values as a tensor in a layout that is NOT contiguous, for every rank and size (but a
// tensor of one element or none, which has no other layout: tensor::Error): dimensions `dim0`
// and `dim1` (the first and last unless told; dim1 < 0 counts from the end) stored swapped where
// that is not contiguous, else (1-D, or size-1 dimensions that make the swap contiguous) every
// other element of a buffer twice as long. Same dtype and device as `x`.
tensor::Tensor noncontiguous_copy(const tensor::Tensor& x, int64_t dim0 = 0, int64_t dim1 = -1);

// Non-finite inputs (Note [NaN and Inf] in nn/kernels/Activation.h): `input` (any device and
// floating dtype, kept) with NaN, +Inf and -Inf written at fixed flat positions: by default about
// 1/7, 3/7 and 5/7 of the way through; `positions` lists others, cycling through NaN, +Inf, -Inf.
tensor::Tensor with_nonfinite(const tensor::Tensor& input, const std::vector<int64_t>& positions = {});

}  // namespace nn::testkit
