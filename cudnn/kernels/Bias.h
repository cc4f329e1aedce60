// Bias.h: a convolution's bias, added to its output and summed out of its gradient, for the
// two dense layouts the cudnn convolutions produce (row-major NC..., and channels-last
// N...C). cuDNN's cudnnAddTensor and cudnnConvolutionBackwardBias ran far below the memory
// bandwidth on large outputs (Note [Bias kernels] in Bias.cu); these kernels read dy once.
// Both return false, having done nothing, for any other layout: the caller takes cuDNN's call.
#pragma once

#include "tensor/Tensor.h"

namespace cudnn::kernels {

// y[n, c, ...] += bias[c]; y of dim >= 3, bias [C] contiguous with y's dtype, both on one device.
bool bias_add(const tensor::Tensor& y, const tensor::Tensor& bias);

// db = alpha * (dy summed over every dim but 1) + beta * db, with beta == 0 ignoring what db
// held (NaN included). Sums accumulate in float32 (double for float64 data) in a fixed order,
// so the result is deterministic. db [C] contiguous with dy's dtype. `stream` (a cudaStream_t;
// nullptr: the device's) takes the kernels; with `keep`, the partial sums' buffer is handed back
// there for a caller that forked them onto the side stream to hold until it has joined (Note
// [The device's side stream] in tensor/Cuda.h). On a stream of its own it refuses an empty batch
// (whose sums it fills on the device's stream).
bool bias_grad(const tensor::Tensor& dy, const tensor::Tensor& db, double alpha, double beta, void* stream = nullptr,
               tensor::Tensor* keep = nullptr);

// db = alpha * sums + beta * db (beta == 0 ignoring db) from the per-channel sums of dy that a
// matrix product's epilogue gave in db's dtype: a channel whose sum came out non-finite is
// summed again from dy (channels-last [N x C x H x W], or [rows x C]) in float32 (float64 for
// float64) before the scale, as bias_grad would give it. False, having done nothing, for other
// dtypes, shapes or layouts.
bool bias_grad_from_sums(const tensor::Tensor& sums, const tensor::Tensor& dy, const tensor::Tensor& db, double alpha,
                         double beta);

}  // namespace cudnn::kernels
