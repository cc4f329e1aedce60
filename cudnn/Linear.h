// Linear.h: cudnn.Linear, nn::Linear's y = x W^T + b on CUDA tensors through cuBLAS
// (cudnn::gemm: TF32 for float32 when allow_tf32, float32 accumulation for float16 and
// bfloat16). x is [nInput], [batch x nInput] or [* x nInput], its leading dims flattened into
// the GEMMs' rows as a view where the strides allow, else a contiguous copy (Note [Linear over
// leading dims] in nn/Linear.cpp). In float16 and bfloat16 the bias is added in the product's
// epilogue, else broadcast into the output before the GEMM accumulates onto it (Note [The bias
// in the product's epilogue] in cudnn/ops/blas.cpp); its gradient is a GEMM of gradOutput^T
// against a ones vector kept here, so no pass synchronises with the host.
#pragma once

#include "cudnn/Twin.h"
#include "nn/Linear.h"

namespace cudnn {

class Linear : public Twin<nn::Linear> {
 public:
  using Twin::Twin;

  const tensor::Tensor& updateOutput(const tensor::Tensor& input) override;
  // the addend in the product's epilogue for a few 16-bit rows (Note [Sums in the product's
  // epilogue] in nn/Module.cpp), else a pass after it
  const tensor::Tensor& updateOutputAdding(const tensor::Tensor& input, const tensor::Tensor& addend) override;
  // a cudnn GELU after a few 16-bit rows: both outputs from one launch (Note [Activations in the
  // epilogue] in nn/Sequential.cpp)
  bool forwardThrough(const tensor::Tensor& input, nn::Module& next) override;
  const tensor::Tensor& updateGradInput(const tensor::Tensor& input, const tensor::Tensor& gradOutput) override;
  void accGradParameters(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale = 1.0) override;

 private:
  // [rows x inputSize] of a checked input (CUDA, a cuDNN dtype, the weight's dtype and device).
  tensor::Tensor checked(const tensor::Tensor& input, const char* method) const;
  // gradOutput as a contiguous [rows x outputSize] matrix, after its checks.
  tensor::Tensor checkedGrad(const tensor::Tensor& input, const tensor::Tensor& gradOutput, const char* method) const;
  // updateOutput's product, + addend where defined (already checked)
  const tensor::Tensor& forwardInto(const tensor::Tensor& input, const tensor::Tensor& addend, const char* method);

  tensor::Tensor ones_;  // [batch x 1] of ones, for the bias gradient
};

}  // namespace cudnn
