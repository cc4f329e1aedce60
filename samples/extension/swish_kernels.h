// swish_kernels.h: the CUDA kernels' launchers, in plain C++ (nvcc compiles swish_kernels.cu
// alone: it needs no cudnn-nn header). Pointers are device pointers of `n` contiguous elements
// of float (f64 false) or double (f64 true); beta is one element on the device. `stream` is a
// cudaStream_t (tensor::cuda::stream()).
#pragma once

#include <cstdint>

namespace ext::kernels {

void swish_forward(const void* x, const void* beta, void* y, int64_t n, bool f64, void* stream);
// gx = gy * dy/dx; contrib (when not null) = gy * dy/dbeta, summed by the caller.
void swish_backward(const void* x, const void* gy, const void* beta, void* gx, void* contrib, int64_t n, bool f64,
                    void* stream);

}  // namespace ext::kernels
