// kernels/Pooling.h: max and average pooling over 2 or 3 spatial dims, written once for
// three: 2-d pooling is 3-d pooling with a depth of 1 (kernel 1, stride 1, no padding).
// Data is contiguous [planes x T x H x W] (planes = batch x channels); planes are independent
// and run in parallel. Output sizes follow Torch (pool_output_size); the modules validate
// arguments before calling, so every window here overlaps the input (Note [Pooling windows]).
#pragma once

#include <cstdint>

namespace nn::kernels {

// Sizes, kernel, stride and padding along (T, H, W).
struct PoolGeometry {
  int64_t planes = 0;
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  int64_t k[3] = {1, 1, 1};
  int64_t d[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0};
};

// Torch's output size along one dim: floor or ceil of (in + 2 pad - k) / d, plus one; in
// ceil mode a last window that would start in the right padding (at or past in + pad) is
// dropped. Can be < 1 for an input too small for the kernel: the caller checks.
int64_t pool_output_size(int64_t in, int64_t k, int64_t d, int64_t pad, bool ceil_mode);

// Max pooling: the first maximum of each window in row-major order wins ties (as THNN), the
// first NaN wins over numbers (Note [NaN and Inf] in kernels/Activation.h); `indices` gets
// its flat offset within the plane (t * H + h) * W + w.
template <class T>
void max_pool_forward(const PoolGeometry& g, const T* input, T* output, int64_t* indices);
// gradInput (zeroed here) receives each gradOutput entry at its window's recorded maximum.
template <class T>
void max_pool_backward(const PoolGeometry& g, const T* gradOutput, const int64_t* indices, T* gradInput);

// Average pooling, divisor as THNN's SpatialAveragePooling (Theano's average_inc_pad /
// average_exc_pad): with count_include_pad the window clipped to the padded input
// [-pad, in + pad), else the window clipped to the input [0, in).
template <class T>
void avg_pool_forward(const PoolGeometry& g, bool count_include_pad, const T* input, T* output);
template <class T>
void avg_pool_backward(const PoolGeometry& g, bool count_include_pad, const T* gradOutput, T* gradInput);

}  // namespace nn::kernels
