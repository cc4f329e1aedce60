// Blas.h: the CPU matrix products every nn kernel is built on (im2col convolution, Linear,
// LSTM), BLAS-style over raw row-major arrays. Implemented in one source file (OpenBLAS where
// the build found it, else Eigen, whose heavy template code is then compiled once). float and
// double.
#pragma once

#include <cstdint>
#include <string>

namespace tensor::blas {

// C[M x N] = alpha * op(A) * op(B) + beta * C, all row-major with leading dimensions in
// elements; op(A) is M x K (A stored K x M when transA), op(B) is K x N. beta == 0 ignores
// C's old contents (NaN included).
template <class T>
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B,
          int64_t ldb, T beta, T* C, int64_t ldc);

// Which library computes the products, and how it is threaded: "Eigen", "OpenBLAS (OpenMP
// build)" or "OpenBLAS (one thread a call, panels on OpenMP)" (Note [OpenBLAS threads] in
// Blas.cpp). Benchmarks print it beside their CPU rows.
std::string backend();
// Which kernels compute them: "OpenBLAS core SkylakeX", with " (its Prescott fallback replaced
// for this CPU)" where Note [OpenBLAS on a CPU it does not know] in Blas.cpp chose them, or
// "Eigen, as compiled".
std::string kernels();

namespace detail {
// Which side of C a product outside a parallel region is cut along, one single-threaded product
// per panel and OpenMP thread (Note [Which side of C to cut] in Blas.cpp); None: OpenBLAS's
// own threading, or with gemm_in_panels the longer side.
enum class PanelCut { None, Rows, Columns };
// The cut for C of M x N on `threads` threads; with fallback_to_longer (an OpenBLAS that cannot
// thread over OpenMP's team) never None.
PanelCut panel_cut(int64_t M, int64_t N, int threads, bool fallback_to_longer);
// gemm cut into `panels` blocks of rows or columns of C, each one single-threaded product on its
// own OpenMP thread. Declared for the tests.
template <class T>
void gemm_in_panels(int panels, PanelCut cut, bool transA, bool transB, int64_t M, int64_t N, int64_t K, T alpha,
                    const T* A, int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc);
}  // namespace detail

}  // namespace tensor::blas
