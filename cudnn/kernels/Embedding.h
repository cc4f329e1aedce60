// Embedding.h: the lookup table's kernels for cudnn::Embedding. Indices: int64, contiguous, on
// the weight's device; weight, output and gradients [* x D] contiguous, of one floating dtype.
//   embedding_first_bad_index  the first flat position holding an index outside [0, num), or
//                              -1; its value in `value`. One small kernel, then 8 bytes read
//                              back (16 when one is bad): a host synchronisation.
//   embedding_forward          y[i, :] = weight[idx[i], :]; an index out of range (possible only
//                              where the check was skipped, as in a CUDA-graph capture) gives a
//                              NaN row instead of a read outside the table.
//   embedding_backward         gradWeight[k, :] += scale * sum of dy[i, :] over the positions i
//                              with idx[i] = k, in increasing i, for every k but paddingIdx
//                              (-1: none); indices out of range are skipped.
// Note [Deterministic embedding gradients]: atomics would add a row's gradients in whatever
// order threads arrive, so the bits would change from run to run. Instead the (index, position)
// pairs are sorted by index with CUB's radix sort (stable: positions stay increasing within an
// index), and one block per distinct index walks its run of positions in order, each thread one
// column: gw = gw + scale * dy[i] per position, rounded as nn::Embedding's loop rounds it (no
// fused multiply-add) in float32 and float64, so those give nn's bits; 16-bit gradients
// accumulate in float and round once.
#pragma once

#include "tensor/Tensor.h"

namespace cudnn::kernels {

int64_t embedding_first_bad_index(const tensor::Tensor& idx, int64_t num, int64_t& value);
void embedding_forward(const tensor::Tensor& idx, const tensor::Tensor& weight, const tensor::Tensor& y);
void embedding_backward(const tensor::Tensor& idx, const tensor::Tensor& dy, const tensor::Tensor& gradWeight,
                        int64_t paddingIdx, double scale);

}  // namespace cudnn::kernels
