// Blas.cpp: gemm through OpenBLAS where the build found it (-Dblas, meson.build), else Eigen.
// A product is parallelised with OpenMP outside a parallel region and runs single-threaded
// inside one (the batch-parallel nn kernels): Eigen and an OpenMP build of OpenBLAS do this by
// themselves, any other OpenBLAS through panels (Note [OpenBLAS threads]); the OpenMP build too
// where panels of C's rows or columns are faster than its own threads (Note [Which side of C
// to cut]).
#include "tensor/Blas.h"

#include <algorithm>
#include <climits>
#include <string>
#include <type_traits>

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

#if defined(CUDNN_NN_HAVE_OPENBLAS)
#include <cblas.h>

#include <cstdlib>
#include <cstring>

// OpenBLAS's own start and stop of a DYNAMIC_ARCH build, which picks the kernels (Note [OpenBLAS
// on a CPU it does not know]); weak, so that a build without them links and leaves them null.
extern "C" void gotoblas_dynamic_init(void) __attribute__((weak));
extern "C" void gotoblas_dynamic_quit(void) __attribute__((weak));
#endif
#if defined(_OPENMP)
#include <omp.h>
#endif

namespace tensor::blas {

namespace {

#if defined(CUDNN_NN_HAVE_OPENBLAS)
// Note [OpenBLAS products]
// cblas_?gemm takes int sizes and checks BLAS's leading-dimension rules (lda >= the stored
// row length, at least 1), printing and skipping the product on a violation. A product it would
// refuse or whose sizes do not fit an int goes to Eigen instead, so every call computes. With
// beta == 0 OpenBLAS writes C without reading it (a NaN in C does not survive), as Eigen's path.
bool blas_takes(bool transA, bool transB, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc) {
  const int64_t need_a = transA ? M : K, need_b = transB ? K : N;
  for (int64_t v : {M, N, K, lda, ldb, ldc}) {
    if (v > INT_MAX) return false;
  }
  return lda >= std::max<int64_t>(1, need_a) && ldb >= std::max<int64_t>(1, need_b) && ldc >= std::max<int64_t>(1, N);
}

// Note [Products with one row or column]
// A product whose C is a single row or column (Linear at batch 1, a recurrent step of one
// sequence) is a matrix-vector product: sgemm would first pack the whole matrix into its
// panel layout, reading and writing it once more than gemv, which reads it once (ResNet-50's
// 2048 -> 1000 Linear at batch 1: 0.60 ms against PyTorch's 0.19 on two cores). With beta == 0
// C is zeroed first, so no NaN or Inf in it survives whatever gemv does with beta.
template <class T>
void blas_gemv(CBLAS_TRANSPOSE t, int64_t rows, int64_t cols, T alpha, const T* A, int64_t lda, const T* x,
               int64_t incx, T beta, T* y, int64_t incy) {
  if (beta == T(0)) {
    const int64_t n = t == CblasNoTrans ? rows : cols;  // y's length
    for (int64_t j = 0; j < n; ++j) y[j * incy] = T(0);
  }
  const auto i = [](int64_t v) { return static_cast<int>(v); };
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemv(CblasRowMajor, t, i(rows), i(cols), alpha, A, i(lda), x, i(incx), beta, y, i(incy));
  } else {
    cblas_dgemv(CblasRowMajor, t, i(rows), i(cols), alpha, A, i(lda), x, i(incx), beta, y, i(incy));
  }
}

template <class T>
void blas_gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B,
               int64_t ldb, T beta, T* C, int64_t ldc) {
  const CBLAS_TRANSPOSE ta = transA ? CblasTrans : CblasNoTrans, tb = transB ? CblasTrans : CblasNoTrans;
  if (M == 1) {  // C^T = op(B)^T a, a read with stride lda when A is stored transposed
    const CBLAS_TRANSPOSE t = transB ? CblasNoTrans : CblasTrans;
    blas_gemv(t, transB ? N : K, transB ? K : N, alpha, B, ldb, A, transA ? lda : 1, beta, C, 1);
    return;
  }
  if (N == 1) {  // C = op(A) b, b read with stride ldb unless B is stored transposed
    blas_gemv(ta, transA ? K : M, transA ? M : K, alpha, A, lda, B, transB ? 1 : ldb, beta, C, ldc);
    return;
  }
  const auto i = [](int64_t v) { return static_cast<int>(v); };
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, i(M), i(N), i(K), alpha, A, i(lda), B, i(ldb), beta, C, i(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, i(M), i(N), i(K), alpha, A, i(lda), B, i(ldb), beta, C, i(ldc));
  }
}

// Note [OpenBLAS threads]
// Only an OpenMP build of OpenBLAS (openblas_get_parallel() == 2; Debian's libopenblas-openmp-dev)
// shares our OpenMP threads: single-threaded inside a parallel region, the team outside. A
// pthreads build (Ubuntu's libopenblas-dev, and the one Debian's alternatives switch to once
// libopenblas0-pthread is installed) keeps a pool of its own whose threads spin beside OpenMP's:
// on the GPU machine's host, pinned to 2 cores, the fashion step and ResNet-50's batch-1 forward
// ran 3-4x slower than with the OpenMP build (docs/performance.md). Any build other than the
// OpenMP one is therefore set to one thread, once, on the first product; a product called outside
// a parallel region is then cut into panels of rows or columns of C, one single-threaded call per
// OpenMP thread. Each element of C is still one dot product over K, so the panels change no value.
// Which library a process runs is decided when it loads (the alternatives symlink), hence the
// run-time check.
bool openblas_shares_openmp() {
  static const bool shares = [] {
    if (openblas_get_parallel() == 2) return true;
    openblas_set_num_threads(1);
    return false;
  }();
  return shares;
}

// Note [OpenBLAS on a CPU it does not know]
// A DYNAMIC_ARCH OpenBLAS chooses its kernels from the CPU's family and model when it loads, and
// takes its Prescott (SSE3) kernels for a model newer than itself. Debian 12's 0.3.21 does so on
// an Emerald Rapids Xeon (family 6, model 207), where ResNet-50's batch-1 forward took 156 ms
// against 59 ms with its SkylakeX kernels, and a Fashion-MNIST epoch 36.1 s against 15.3 s
// (docs/performance.md, "OpenBLAS's Prescott fallback"). So where OpenBLAS reports that fallback
// on a CPU with the instructions of its AVX-512 (SkylakeX) or AVX2 (Haswell) kernels, and the
// user has chosen no core (OPENBLAS_CORETYPE set, to any value, is left alone), OpenBLAS is
// started again with that core: through its own OPENBLAS_CORETYPE variable, set for the call and
// removed after, and its exported gotoblas_dynamic_quit / init. This runs while the program
// loads (a static initialiser, after OpenBLAS's own), before main starts any thread, so no
// product is running; a program that loads this library with dlopen while another of its threads
// computes in the same OpenBLAS should set OPENBLAS_CORETYPE. An OpenBLAS without those
// functions, or one that knows the CPU, is left as it is. Products give the same values up to
// rounding, as any core's.
const char* capable_core() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512cd")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return nullptr;
}

// The kernels OpenBLAS runs, and whether they were chosen here.
struct OpenBlasCore {
  std::string name;
  bool replaced = false;
};

OpenBlasCore start_openblas_core() {
  OpenBlasCore c;
  const char* loaded = openblas_get_corename();
  c.name = loaded ? loaded : "unknown";
  if (c.name != "Prescott" || std::getenv("OPENBLAS_CORETYPE") != nullptr) return c;
  const char* core = capable_core();
  if (core == nullptr || gotoblas_dynamic_init == nullptr || gotoblas_dynamic_quit == nullptr) return c;
  setenv("OPENBLAS_CORETYPE", core, 0);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  unsetenv("OPENBLAS_CORETYPE");
  const char* now = openblas_get_corename();
  c.replaced = now != nullptr && std::strcmp(now, "Prescott") != 0;
  if (now != nullptr) c.name = now;
  return c;
}

const OpenBlasCore openblas_core = start_openblas_core();  // at load: Note [OpenBLAS on a CPU it does not know]

int panel_threads(int64_t M, int64_t N, int64_t K) {
#if defined(_OPENMP)
  // below about a million multiply-adds a product is over before a team would start
  if (omp_in_parallel() || M * N * K < (int64_t(1) << 20)) return 1;
  return omp_get_max_threads();
#else
  (void)M, (void)N, (void)K;
  return 1;
#endif
}
#endif

}  // namespace

namespace detail {

// Note [Which side of C to cut]
// Outside a parallel region a product is shared among the team. OpenBLAS's own threading (its
// OpenMP build) shares out one packed copy of the operands, and is fast where C is large both
// ways; where C is narrow it is not. On the 2-core development machine (SkylakeX kernels,
// OpenBLAS 0.3.21), against single-threaded products on panels of C's rows, one per thread
// (docs/performance.md, "Products cut by rows"): ResNet-50's 7x7 stage at batch 1 (C 512..2048 x
// 49) 1.46-1.75x faster by rows, its 14x14 stage (x 196) 1.16-1.32x, a 1x1 filter gradient
// (2048 x 512, K 49) 1.45x; a short, wide C (64 x 3136) 0.73-0.82x by rows, level or a few per
// cent faster by columns; a C of 128 rows level by rows, up to 1.08x faster by columns (a
// Linear at batch 128). Hence: rows where every panel has 128 rows or more and C is no more than
// four times wider than tall; columns where C is shorter than that and every panel still has 64
// columns; OpenBLAS's own threading otherwise. A build whose OpenBLAS cannot share OpenMP's team
// (Note [OpenBLAS threads]) always cuts, where no rule holds the longer side.
PanelCut panel_cut(int64_t M, int64_t N, int threads, bool fallback_to_longer) {
  if (M >= int64_t(128) * threads && N <= 4 * M) return PanelCut::Rows;
  if (M < int64_t(128) * threads && N >= int64_t(64) * threads) return PanelCut::Columns;
  if (!fallback_to_longer) return PanelCut::None;
  return N >= M ? PanelCut::Columns : PanelCut::Rows;
}

template <class T>
void gemm_in_panels(int panels, PanelCut cut, bool transA, bool transB, int64_t M, int64_t N, int64_t K, T alpha,
                    const T* A, int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  // A panel of columns keeps rows of B and C contiguous. The team is OpenMP's own: gemm asks for
  // as many panels as it has threads, a test for more.
  const bool by_columns = cut == PanelCut::Columns || (cut == PanelCut::None && N >= M);
  const int64_t length = by_columns ? N : M;
  const int64_t count = std::clamp<int64_t>(panels, 1, length);
  const int64_t step = (length + count - 1) / count;
#pragma omp parallel for schedule(static) if (count > 1)
  for (int64_t p = 0; p < count; ++p) {
    const int64_t first = p * step, size = std::min(step, length - first);
    if (size <= 0) continue;
#if defined(CUDNN_NN_HAVE_OPENBLAS)
    const auto product = blas_gemm<T>;
#else
    const auto product = gemm<T>;
#endif
    if (by_columns) {
      product(transA, transB, M, size, K, alpha, A, lda, transB ? B + first * ldb : B + first, ldb, beta, C + first,
              ldc);
    } else {
      product(transA, transB, size, N, K, alpha, transA ? A + first : A + first * lda, lda, B, ldb, beta,
              C + first * ldc, ldc);
    }
  }
}

}  // namespace detail

std::string backend() {
#if defined(CUDNN_NN_HAVE_OPENBLAS)
  return openblas_shares_openmp() ? "OpenBLAS (OpenMP build)" : "OpenBLAS (one thread a call, panels on OpenMP)";
#else
  return "Eigen";
#endif
}

std::string kernels() {
#if defined(CUDNN_NN_HAVE_OPENBLAS)
  return "OpenBLAS core " + openblas_core.name +
         (openblas_core.replaced ? " (its Prescott fallback replaced for this CPU)" : "");
#else
  return "Eigen, as compiled";
#endif
}

template <class T>
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B,
          int64_t ldb, T beta, T* C, int64_t ldc) {
#if defined(CUDNN_NN_HAVE_OPENBLAS)
  // empty products, alpha 0 and what BLAS would refuse take Eigen's path (See Note [OpenBLAS products])
  if (M != 0 && N != 0 && K != 0 && alpha != T(0) && blas_takes(transA, transB, M, N, K, lda, ldb, ldc)) {
    // Note [Which side of C to cut]
    const bool shares = openblas_shares_openmp();
    const int threads = panel_threads(M, N, K);
    const detail::PanelCut cut = detail::panel_cut(M, N, threads, !shares);
    if (shares && (threads == 1 || cut == detail::PanelCut::None)) {
      blas_gemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    } else {
      detail::gemm_in_panels(threads, cut, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    }
    return;
  }
#endif
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

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*,
                           int64_t, double, double*, int64_t);
template void detail::gemm_in_panels<float>(int, detail::PanelCut, bool, bool, int64_t, int64_t, int64_t, float,
                                            const float*, int64_t, const float*, int64_t, float, float*, int64_t);
template void detail::gemm_in_panels<double>(int, detail::PanelCut, bool, bool, int64_t, int64_t, int64_t, double,
                                             const double*, int64_t, const double*, int64_t, double, double*, int64_t);

}  // namespace tensor::blas
