// ConvSpec.h: a convolution's settings and passes, shared by the nn modules (spec()), the CPU
// kernels (nn/kernels/Convolution.h) and the cuDNN descriptors and plans (cudnn/core,
// cudnn/ops/conv*): a header of plain structs, so none of those includes the others.
#pragma once

#include <array>
#include <cstdint>

namespace nn {

// Spatial sizes, outermost first (T, H, W), right-aligned: dim i of an nd-dim convolution
// sits in slot 3 - nd + i; the leading slots stay neutral (size 1, kernel 1, stride 1, pad 0,
// dilation 1, adj 0), so loops over three dims need no nd.
using Dims = std::array<int64_t, 3>;

// A convolution's settings, the one struct the nn modules (spec()), the CPU kernels and the
// cuDNN descriptors share: Torch's k/d/pad/dilation/adj fields and groups, in Dims slots.
struct ConvSpec {
  int nd = 2;  // spatial dims, 1 to 3
  Dims k{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dilation{1, 1, 1};
  Dims adj{0, 0, 0};  // a transposed convolution's extra output size (below its stride)
  int64_t groups = 1;
  bool cross_correlation = true;  // false: true convolution (Theano's conv_mode='conv', cuDNN only)

  int first() const { return 3 - nd; }  // the slot of the first spatial dim
  bool operator==(const ConvSpec&) const = default;
};

// The three passes of a convolution, in cuDNN's terms (the filter is the weight); the CPU
// kernels' workspace and the cuDNN algorithm flags and plans are indexed by it.
enum class ConvPass { Forward, BackwardData, BackwardFilter };

}  // namespace nn
