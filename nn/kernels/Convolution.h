// Convolution.h: the one CPU convolution kernel of nn, for 1 to 3 spatial dims (Temporal-,
// Spatial-, Volumetric- and their transposed variants): im2col / col2im with stride,
// padding and dilation, then tensor::blas::gemm per group, batch-parallel with OpenMP.
// Cross-correlation, NC(D)HW layout, weight [outC x inC/groups x k...] (Torch and cuDNN).
// The transposed convolution is the adjoint: its forward is conv_backward_data, its
// backward-data is conv_forward (see nn/ConvolutionBase.cpp).
#pragma once

#include <cstdint>

#include "nn/ConvSpec.h"

namespace nn {

namespace kernels {

using nn::ConvPass;
using nn::Dims;

// One convolution in forward terms: `in` is the image side (the conv's input, a transposed
// conv's output), `out` the other side; the settings are the module's (cross-correlation).
struct ConvGeometry : ConvSpec {
  int64_t batch = 1;
  int64_t inC = 1, outC = 1;
  Dims in{1, 1, 1}, out{1, 1, 1};

  int64_t inSpatial() const { return in[0] * in[1] * in[2]; }
  int64_t outSpatial() const { return out[0] * out[1] * out[2]; }
  int64_t kernelSpatial() const { return k[0] * k[1] * k[2]; }
  // rows of one group's column matrix: inC/groups * prod(k); its columns: outSpatial()
  int64_t colRows() const { return inC / groups * kernelSpatial(); }
  // 1x1 kernel, stride 1, no padding: the image is its own column matrix.
  bool pointwise() const;
};

// Elements of workspace `pass` needs (per-thread column buffers, per-thread partial
// weight gradients); may be 0.
int64_t conv_workspace_size(const ConvGeometry& g, ConvPass pass);

// im2col: col[(c, k...) x out...] = im[c, out * stride - pad + k * dil] (0 outside the image),
// for `channels` planes of g.in. col2im is its adjoint: im = sum of the columns (overwritten).
template <class T>
void im2col(const T* im, T* col, int64_t channels, const ConvGeometry& g);
template <class T>
void col2im(const T* col, T* im, int64_t channels, const ConvGeometry& g);

// y[n, o, p] = bias[o] + sum_{c,k} w[o, c, k] x[n, group(o) * inC/groups + c, p * stride - pad + k * dil].
// x: [batch x inC x in...], y: [batch x outC x out...]; bias may be null.
template <class T>
void conv_forward(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y, T* workspace);

// gx = the adjoint of conv_forward (without bias) applied to gy, plus bias[c] on every plane
// c of gx when bias is not null (the transposed convolution's bias). gx is overwritten.
template <class T>
void conv_backward_data(const ConvGeometry& g, const T* gy, const T* w, const T* bias, T* gx, T* workspace);

// gw += scale * d<gy, conv_forward(x)>/dw.
template <class T>
void conv_backward_weight(const ConvGeometry& g, const T* x, const T* gy, T scale, T* gw, T* workspace);

// gb[c] += scale * sum_{n, p} g[n, c, p] for g of [batch x channels x spatial].
template <class T>
void bias_backward(const T* g, int64_t batch, int64_t channels, int64_t spatial, T scale, T* gb);

}  // namespace kernels
}  // namespace nn
