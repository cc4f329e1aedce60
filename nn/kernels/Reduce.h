// Reduce.h: the CPU kernels of the reductions over one dimension (nn::ReductionBase: Sum,
// Mean, Max, Min) and of nn::Normalize's row norms. A reduction views its contiguous input as
// [outer x n x inner] and reduces n (row-major); sums accumulate in double in index order; Max
// and Min keep the first index on ties and the first NaN when there is one (Note [NaN and
// Inf] in nn/kernels/Activation.h). The cudnn twins' kernels (cudnn/kernels/Reduce.h) compute
// the same, in acc_t<T>.
#pragma once

#include <cstdint>

namespace nn::kernels {

// y[o, i] = sum_k x[o, k, i], divided by n when `mean` (0 / 0 = NaN for n = 0).
template <class T>
void reduce_sum(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool mean);
// dx[o, k, i] = dy[o, i] (divided by n when `mean`).
template <class T>
void reduce_sum_backward(const T* dy, T* dx, int64_t outer, int64_t n, int64_t inner, bool mean);
// y[o, i] = max (or min) over k of x[o, k, i], index[o, i] its k; n >= 1.
template <class T>
void reduce_extremum(bool max, const T* x, T* y, int64_t* index, int64_t outer, int64_t n, int64_t inner);
// dx zero but for dx[o, index[o, i], i] = dy[o, i].
template <class T>
void reduce_extremum_backward(const T* dy, const int64_t* index, T* dx, int64_t outer, int64_t n, int64_t inner);

// Normalize over rows of d entries (nn/Normalize.h has the formulas, Torch's): y = x / norm.
template <class T>
void normalize_forward(const T* x, T* y, int64_t rows, int64_t d, double p, double eps);
template <class T>
void normalize_backward(const T* x, const T* dy, T* dx, int64_t rows, int64_t d, double p, double eps);

}  // namespace nn::kernels
