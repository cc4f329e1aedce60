// blas.cpp: row-major products through column-major cuBLAS: C^T = op(B)^T op(A)^T.
#include "cudnn/ops/blas.h"

#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "cudnn/core/Check.h"
#include "cudnn/core/Config.h"
#include "cudnn/core/Handle.h"
#include "cudnn/kernels/FewRowsLinear.h"
#include "cudnn/ops/graph_plan.h"
#include "tensor/Cuda.h"
#include "tensor/EnumTable.h"

namespace cudnn {

using tensor::DType;

namespace {
constexpr std::pair<DType, cudaDataType_t> kCudaTypes[] = {
    {DType::Float32, CUDA_R_32F},
    {DType::Float64, CUDA_R_64F},
    {DType::Float16, CUDA_R_16F},
    {DType::BFloat16, CUDA_R_16BF},
};

cudaDataType_t cuda_type(DType t) {
  if (const auto type = tensor::lookup(kCudaTypes, t)) return *type;
  throw tensor::Error(std::string("cudnn::gemm: unsupported dtype ") + tensor::name(t));
}

// What cuBLAS computes in for data of dtype t (float64 in float64, float32 in TF32 when
// allow_tf32, the rest in float32), and alpha and beta in the type that compute type reads.
struct Scalars {
  Scalars(DType t, double alpha, double beta)
      : wide(t == DType::Float64),
        a64(alpha),
        b64(beta),
        a32(static_cast<float>(alpha)),
        b32(static_cast<float>(beta)) {
    if (wide)
      compute = CUBLAS_COMPUTE_64F;
    else if (t == DType::Float32 && config().allow_tf32)
      compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  }
  const void* alpha() const { return wide ? static_cast<const void*>(&a64) : static_cast<const void*>(&a32); }
  const void* beta() const { return wide ? static_cast<const void*>(&b64) : static_cast<const void*>(&b32); }

  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  bool wide;
  double a64, b64;
  float a32, b32;
};

// The product's M, N and K after checking gemm()'s contract (`where` names the caller).
struct ProductSizes {
  int64_t M, N, K;
};
ProductSizes check_product(const std::string& where, bool transA, bool transB, const tensor::Tensor& A,
                           const tensor::Tensor& B, const tensor::Tensor& C) {
  if (A.dim() != 2 || B.dim() != 2 || C.dim() != 2 || !A.is_contiguous() || !B.is_contiguous() || !C.is_contiguous()) {
    throw tensor::Error(where + "expected contiguous 2-d tensors, got " + A.description() + ", " + B.description() +
                        ", " + C.description());
  }
  if (A.dtype() != B.dtype() || A.dtype() != C.dtype() || !A.is_cuda() || A.device() != B.device() ||
      A.device() != C.device()) {
    throw tensor::Error(where + "expected CUDA tensors of one dtype on one device, got " + A.description() + ", " +
                        B.description() + ", " + C.description());
  }
  const int64_t M = C.size(0), N = C.size(1);
  const int64_t K = transA ? A.size(0) : A.size(1);
  if ((transA ? A.size(1) : A.size(0)) != M || (transB ? B.size(0) : B.size(1)) != N ||
      (transB ? B.size(1) : B.size(0)) != K) {
    throw tensor::Error(where + "shapes do not multiply: " + tensor::shape_str(A.sizes()) + (transA ? "^T" : "") +
                        " x " + tensor::shape_str(B.sizes()) + (transB ? "^T" : "") + " -> " +
                        tensor::shape_str(C.sizes()));
  }
  return {M, N, K};
}
}  // namespace

void gemm(bool transA, bool transB, const tensor::Tensor& A, const tensor::Tensor& B, const tensor::Tensor& C,
          double alpha, double beta) {
  const auto [M, N, K] = check_product("cudnn::gemm: ", transA, transB, A, B, C);
  if (M == 0 || N == 0) return;
  tensor::cuda::DeviceGuard guard(A.device().index);
  cublasHandle_t h = blas_handle();
  const DType t = A.dtype();
  const Scalars k(t, alpha, beta);
  // Column-major view: C^T [N x M] = op(B)^T [N x K] * op(A)^T [K x M].
  CUBLAS_CHECK(cublasGemmEx(h, transB ? CUBLAS_OP_T : CUBLAS_OP_N, transA ? CUBLAS_OP_T : CUBLAS_OP_N,
                            static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), k.alpha(), B.raw_data(),
                            cuda_type(t), static_cast<int>(B.size(1)), A.raw_data(), cuda_type(t),
                            static_cast<int>(A.size(1)), k.beta(), C.raw_data(), cuda_type(t), static_cast<int>(N),
                            k.compute, CUBLAS_GEMM_DEFAULT));
}

namespace {
// cuBLASLt's descriptors, destroyed with their scope.
struct LtDesc {
  cublasLtMatmulDesc_t d = nullptr;
  ~LtDesc() {
    if (d) cublasLtMatmulDescDestroy(d);
  }
};
struct LtLayout {
  cublasLtMatrixLayout_t d = nullptr;
  ~LtLayout() {
    if (d) cublasLtMatrixLayoutDestroy(d);
  }
};
struct LtPreference {
  cublasLtMatmulPreference_t d = nullptr;
  ~LtPreference() {
    if (d) cublasLtMatmulPreferenceDestroy(d);
  }
};

// The largest power of two up to 256 that divides the address: what the heuristics are told of
// each operand's alignment, so that no algorithm needing more is chosen.
uint32_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && a % align != 0) align /= 2;
  return align;
}

// The heuristics' choice per product: asked once per shape, dtype, device, alignments and
// epilogue (the query costs far more than the product's launch), in the one plan-cache type
// (graph_plan.h, Note [One plan cache] in conv_search.cpp), bounded by conv.cache_limit.
struct LtKey {
  int32_t device, dtype, transA, transB;
  int64_t M, N, K;
  uint32_t alignA, alignB, alignC, epilogue;
};
static_assert(sizeof(LtKey) == 4 * 4 + 3 * 8 + 4 * 4, "LtKey must have no padding");
struct LtChoice {
  bool found = false;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};
graph::PlanCache<LtKey, LtChoice>& lt_choices() {
  static auto* m = new graph::PlanCache<LtKey, LtChoice>;  // leaked: Note [CUDA teardown] in tensor/Cuda.h
  return *m;
}
constexpr size_t kLtWorkspaceLimit = size_t(32) << 20;  // as cuBLAS's own (Note [cuBLAS's workspace])

// C = alpha * op(A) * op(B) + beta * C on float16 or bfloat16, row-major as gemm(), with the
// epilogue reading or writing `vector` (C's dtype): cuBLASLt's B-side bias gradient (the sums of
// C's rows, for gemm_with_row_sums) or its bias (added to each of C's rows in the float32
// accumulator before the one rounding, for gemm_with_bias). False, having enqueued nothing, where
// cuBLASLt offers no algorithm for these shapes, pointers and epilogue.
// The vector takes the output's type: cuBLASLt 13 refused float32 sums for float16 products
// (CUBLAS_STATUS_INVALID_VALUE, docs/performance.md).
bool lt_gemm(int64_t M, int64_t N, int64_t K, bool transA, bool transB, const tensor::Tensor& A,
             const tensor::Tensor& B, const tensor::Tensor& C, double alpha, double beta, cublasLtEpilogue_t epilogue,
             const void* vector) {
  const DType t = A.dtype();
  const int device = A.device().index;
  tensor::cuda::DeviceGuard guard(device);
  cublasLtHandle_t lt = blas_lt_handle();
  // Column-major, as gemm(): D^T [N x M] = op(B)^T [N x K] * op(A)^T [K x M], so C's rows are
  // D^T's columns: their sums are the B-side bias gradient, and a bias over C's columns is
  // D^T's per-row bias.
  const cublasOperation_t opFirst = transB ? CUBLAS_OP_T : CUBLAS_OP_N, opSecond = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cudaDataType_t type = cuda_type(t);
  // the stored (column-major) shapes: B is [N x K], or [K x N] read transposed; A likewise
  LtLayout first, second, out;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&first.d, type, transB ? K : N, transB ? N : K, B.size(1)));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&second.d, type, transA ? M : K, transA ? K : M, A.size(1)));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&out.d, type, N, M, N));
  const LtKey key{device,
                  static_cast<int32_t>(t),
                  transA,
                  transB,
                  M,
                  N,
                  K,
                  alignment_of(A.raw_data()),
                  alignment_of(B.raw_data()),
                  alignment_of(C.raw_data()),
                  static_cast<uint32_t>(epilogue)};
  LtDesc desc;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc.d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_TRANSA, &opFirst, sizeof(opFirst)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_TRANSB, &opSecond, sizeof(opSecond)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vector, sizeof(vector)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, sizeof(type)));
  LtChoice choice;
  const std::optional<LtChoice> known = lt_choices().find(key);
  if (known) {
    choice = *known;
  } else {
    LtPreference pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.d));
    const size_t limit = kLtWorkspaceLimit;
    const uint32_t alignFirst = key.alignB, alignSecond = key.alignA, alignOut = key.alignC;
    CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(pref.d, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit, sizeof(limit)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.d, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignFirst,
                                                      sizeof(alignFirst)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.d, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignSecond,
                                                      sizeof(alignSecond)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.d, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignOut,
                                                      sizeof(alignOut)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.d, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignOut,
                                                      sizeof(alignOut)));
    // split-K parts summed in float32 only: parts kept in the output's 16 bits (in place, or in
    // the workspace) overflow where the whole does not, and +Inf meeting -Inf gives NaN
    const uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.d, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction,
                                                      sizeof(reduction)));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(lt, desc.d, first.d, second.d, out.d, out.d, pref.d, 1, &result, &found);
    // NOT_SUPPORTED or INVALID_VALUE (a layout the epilogue does not take): no algorithm
    if (st != CUBLAS_STATUS_NOT_SUPPORTED && st != CUBLAS_STATUS_INVALID_VALUE) CUBLAS_CHECK(st);
    if (st == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
      choice = {true, result.algo, result.workspaceSize};
    }
    lt_choices().put(key, choice);
  }
  if (!choice.found) return false;
  const Workspace work(choice.workspace);
  const float a = static_cast<float>(alpha), b = static_cast<float>(beta);
  CUBLAS_CHECK(cublasLtMatmul(lt, desc.d, &a, B.raw_data(), first.d, A.raw_data(), second.d, &b, C.raw_data(), out.d,
                              C.raw_data(), out.d, &choice.algo, work.data(), work.size(), stream()));
  return true;
}

bool lt_sizes_fit(DType t, int64_t M, int64_t N, int64_t K) {
  const int64_t most = std::numeric_limits<int>::max();
  return (t == DType::Float16 || t == DType::BFloat16) && M > 0 && N > 0 && K > 0 && M <= most && N <= most &&
         K <= most;
}
}  // namespace

bool gemm_with_row_sums(bool transA, bool transB, const tensor::Tensor& A, const tensor::Tensor& B,
                        const tensor::Tensor& C, double alpha, double beta, tensor::Tensor& rowSums) {
  const auto [M, N, K] = check_product("cudnn::gemm_with_row_sums: ", transA, transB, A, B, C);
  const DType t = A.dtype();
  if (!lt_sizes_fit(t, M, N, K)) return false;
  if (!rowSums.defined() || rowSums.numel() != M || rowSums.dtype() != t || rowSums.device() != A.device() ||
      !rowSums.is_contiguous()) {
    rowSums = tensor::empty({M}, t, A.device());
  }
  return lt_gemm(M, N, K, transA, transB, A, B, C, alpha, beta, CUBLASLT_EPILOGUE_BGRADB, rowSums.raw_data());
}

bool gemm_with_bias(bool transA, bool transB, const tensor::Tensor& A, const tensor::Tensor& B,
                    const tensor::Tensor& bias, const tensor::Tensor& C) {
  const auto [M, N, K] = check_product("cudnn::gemm_with_bias: ", transA, transB, A, B, C);
  if (bias.dim() != 1 || bias.numel() != N || bias.dtype() != C.dtype() || bias.device() != C.device() ||
      !bias.is_contiguous()) {
    throw tensor::Error("cudnn::gemm_with_bias: expected a contiguous bias of " + std::to_string(N) + " " +
                        tensor::name(C.dtype()) + " elements on " + C.device().str() + ", got " + bias.description());
  }
  if (!lt_sizes_fit(A.dtype(), M, N, K) || alignment_of(bias.raw_data()) < 16) return false;
  return lt_gemm(M, N, K, transA, transB, A, B, C, 1.0, 0.0, CUBLASLT_EPILOGUE_BIAS, bias.raw_data());
}

// Note [The bias in the product's epilogue]
// y = x W^T + b was a pass that broadcast b into y and a product with beta 1 that read y back:
// for GPT-2's fused qkv projection at 16K rows, 75 MB written at a third of the copy rate, then
// read again (docs/performance.md, the ncu trace of the training step). In float16 and bfloat16
// cuBLASLt adds b in the product's epilogue instead, to the same float32 accumulator before the
// same one rounding, so the result is what the two passes gave. Other dtypes, and shapes the
// epilogue has no algorithm for, keep the two passes.
void gemm_plus_bias(const tensor::Tensor& x, const tensor::Tensor& weight, const tensor::Tensor& bias,
                    const tensor::Tensor& out, const tensor::Tensor& addend) {
  // Note [A few rows' product] (kernels/FewRowsLinear.cu)
  if (config().linear_engine == LinearEngine::Auto && kernels::few_rows_linear(x, weight, bias, out, addend)) return;
  if (!bias.defined() || !gemm_with_bias(false, true, x, weight, bias, out)) {
    if (bias.defined()) tensor::Tensor(out).copy_(bias);  // broadcast over the rows; the GEMM adds onto it
    gemm(false, true, x, weight, out, 1.0, bias.defined() ? 1.0 : 0.0);
  }
  if (addend.defined()) tensor::Tensor(out).add_(addend);  // the sum nn takes after its product
}

void linear_grad_parameters(const tensor::Tensor& x, const tensor::Tensor& gy, const tensor::Tensor& gradWeight,
                            const tensor::Tensor& gradBias, double scale, tensor::Tensor& ones) {
  gemm(true, false, gy, x, gradWeight, scale, 1.0);
  if (!gradBias.defined()) return;
  const int64_t rows = gy.size(0);
  if (!ones.defined() || ones.dim() != 2 || ones.size(0) != rows || ones.dtype() != gy.dtype() ||
      ones.device() != gy.device()) {
    ones = tensor::empty({rows, 1}, gy.dtype(), gy.device());
    ones.fill_(1.0);
  }
  gemm(true, false, gy, ones, gradBias.view({gy.size(1), 1}), scale, 1.0);
}

void gemm_strided_batched(bool transA, bool transB, int64_t M, int64_t N, int64_t K, double alpha,
                          const BatchedMatrix& A, const BatchedMatrix& B, double beta, const BatchedMatrix& C,
                          int64_t batch, int device) {
  const DType t = A.dtype;
  const bool wide_c = C.dtype == DType::Float32 && (t == DType::Float16 || t == DType::BFloat16);
  if (B.dtype != t || (C.dtype != t && !wide_c)) {
    throw tensor::Error(std::string("cudnn::gemm_strided_batched: expected A and B of one dtype and C of it (or "
                                    "float32 for 16-bit data), got ") +
                        tensor::name(A.dtype) + ", " + tensor::name(B.dtype) + ", " + tensor::name(C.dtype));
  }
  if (M == 0 || N == 0 || batch == 0) return;
  const int64_t most = std::numeric_limits<int>::max();
  for (int64_t v : {M, N, K, A.ld, B.ld, C.ld, batch}) {
    if (v > most) {
      throw tensor::Error("cudnn::gemm_strided_batched: sizes beyond cuBLAS's int range (M " + std::to_string(M) +
                          ", N " + std::to_string(N) + ", K " + std::to_string(K) + ", batch " + std::to_string(batch) +
                          ")");
    }
  }
  tensor::cuda::DeviceGuard guard(device);
  cublasHandle_t h = blas_handle();
  const Scalars k(t, alpha, beta);
  // Column-major view, as gemm(): C^T [N x M] = op(B)^T [N x K] * op(A)^T [K x M].
  CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      h, transB ? CUBLAS_OP_T : CUBLAS_OP_N, transA ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(N),
      static_cast<int>(M), static_cast<int>(K), k.alpha(), B.data, cuda_type(t), static_cast<int>(B.ld), B.stride,
      A.data, cuda_type(t), static_cast<int>(A.ld), A.stride, k.beta(), C.data, cuda_type(C.dtype),
      static_cast<int>(C.ld), C.stride, static_cast<int>(batch), k.compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace cudnn
