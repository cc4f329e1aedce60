// LayerNorm.h: layer normalisation's kernels for cudnn::LayerNorm, over x viewed as [rows x cols]
// (contiguous; a row is one normalised group). The formulas and their order are nn::LayerNorm's
// (nn/LayerNorm.cpp), computed in acc_t<T> (float for float32 and 16-bit data, double for
// float64):
//   forward    mean = sum(x) / cols, var = sum((x - mean)^2) / cols (two passes, biased),
//              rstd = 1 / sqrt(var + eps), y = (x - mean) rstd [* weight + bias];
//              mean and rstd ([rows], acc_t<T>) are kept for the backward pass;
//   dx         rstd (g - sum(g) / cols - xhat sum(g xhat) / cols), g = dy [* weight];
//   parameters gradWeight += scale sum_rows(dy xhat), gradBias += scale sum_rows(dy).
// weight and bias are undefined without affine (they have x's dtype otherwise). One block per
// row for the row passes; the parameter sums go over fixed chunks of rows, then over the chunks
// in order (no atomics), so every pass gives the same bits from run to run. NaN and Inf follow
// from IEEE arithmetic, as nn's (a non-finite value makes its row NaN).
#pragma once

#include "tensor/Tensor.h"

namespace cudnn::kernels {

void layer_norm_forward(const tensor::Tensor& x, int64_t rows, int64_t cols, const tensor::Tensor& weight,
                        const tensor::Tensor& bias, double eps, const tensor::Tensor& y, const tensor::Tensor& mean,
                        const tensor::Tensor& rstd);
void layer_norm_backward_input(const tensor::Tensor& x, const tensor::Tensor& dy, int64_t rows, int64_t cols,
                               const tensor::Tensor& weight, const tensor::Tensor& mean, const tensor::Tensor& rstd,
                               const tensor::Tensor& dx);
void layer_norm_backward_params(const tensor::Tensor& x, const tensor::Tensor& dy, int64_t rows, int64_t cols,
                                const tensor::Tensor& mean, const tensor::Tensor& rstd,
                                const tensor::Tensor& gradWeight, const tensor::Tensor& gradBias, double scale);

}  // namespace cudnn::kernels
