// RMSNorm.h: RMS normalisation's kernels for cudnn::RMSNorm, over x viewed as [rows x cols]
// (contiguous; a row is one normalised group). The formulas and their order are nn::RMSNorm's
// (nn/RMSNorm.cpp), computed in acc_t<T> (float for float32 and 16-bit data, double for
// float64):
//   forward    rstd = 1 / sqrt(sum(x^2) / cols + eps), y = x rstd [* weight], rounded once to T
//              (Note [RMSNorm's rounding] in nn/RMSNorm.cpp); rstd ([rows], acc_t<T>) is kept
//              for the backward pass;
//   dx         rstd (g - xhat sum(g xhat) / cols), g = dy [* weight], xhat = x rstd;
//   parameters gradWeight += scale sum_rows(dy xhat).
// weight is undefined without affine (it has x's dtype otherwise). One block per row for the row
// passes; the weight's sums go over fixed chunks of rows, then over the chunks in order (no
// atomics), so every pass gives the same bits from run to run. NaN and Inf follow from IEEE
// arithmetic, as nn's (a non-finite value makes its row NaN, Inf's own entry included).
#pragma once

#include "tensor/Tensor.h"

namespace cudnn::kernels {

void rms_norm_forward(const tensor::Tensor& x, int64_t rows, int64_t cols, const tensor::Tensor& weight, double eps,
                      const tensor::Tensor& y, const tensor::Tensor& rstd);
void rms_norm_backward_input(const tensor::Tensor& x, const tensor::Tensor& dy, int64_t rows, int64_t cols,
                             const tensor::Tensor& weight, const tensor::Tensor& rstd, const tensor::Tensor& dx);
void rms_norm_backward_params(const tensor::Tensor& x, const tensor::Tensor& dy, int64_t rows, int64_t cols,
                              const tensor::Tensor& rstd, const tensor::Tensor& gradWeight, double scale);

}  // namespace cudnn::kernels
