// Blas.cpp: gemm through Eigen. Eigen parallelises a product with OpenMP by itself and runs
// single-threaded when called inside an OpenMP region (the batch-parallel nn kernels).
#include "tensor/Blas.h"

// Why -Wmaybe-uninitialized is off here: on a machine with AVX-512 (-march=native), GCC 12
// prints some 230 -Wmaybe-uninitialized warnings for this file: Eigen's GEMM packing
// (ptranspose) inlines GCC's own avx512fintrin.h, whose `__m512 __Y = __Y;` idiom it then
// flags. Eigen is a system include (meson.build), but a warning found after inlining is
// reported at the place it was inlined into, here, so the system-header exemption does not
// reach it. Nothing is uninitialised; the warning is off for this file, which holds nothing but
// the Eigen call.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <Eigen/Core>

namespace tensor::blas {

template <class T>
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ConstMap = Eigen::Map<const Mat, 0, Eigen::OuterStride<>>;
  using MutMap = Eigen::Map<Mat, 0, Eigen::OuterStride<>>;
  if (M == 0 || N == 0) return;
  MutMap c(C, M, N, Eigen::OuterStride<>(ldc));
  if (beta == T(0)) {
    c.setZero();
  } else if (beta != T(1)) {
    c *= beta;
  }
  if (K == 0 || alpha == T(0)) return;
  const ConstMap a(A, transA ? K : M, transA ? M : K, Eigen::OuterStride<>(lda));
  const ConstMap b(B, transB ? N : K, transB ? K : N, Eigen::OuterStride<>(ldb));
  if (!transA && !transB) c.noalias() += alpha * a * b;
  if (!transA && transB) c.noalias() += alpha * a * b.transpose();
  if (transA && !transB) c.noalias() += alpha * a.transpose() * b;
  if (transA && transB) c.noalias() += alpha * a.transpose() * b.transpose();
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t);

}  // namespace tensor::blas
