// blas.cpp: row-major products through column-major cuBLAS: C^T = op(B)^T op(A)^T.
#include "cudnn/ops/blas.h"

#include <limits>
#include <utility>

#include "cudnn/core/Check.h"
#include "cudnn/core/Config.h"
#include "cudnn/core/Handle.h"
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
}  // namespace

void gemm(bool transA, bool transB, const tensor::Tensor& A, const tensor::Tensor& B, const tensor::Tensor& C,
          double alpha, double beta) {
  const std::string where = "cudnn::gemm: ";
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
