// SwiGLU.h: cudnn.SwiGLU, nn::SwiGLU on CUDA tensors in float32, float64, float16 and bfloat16.
// The nn module's code runs as it is; the twin overrides its primitives only: the three
// projections are cuBLAS GEMMs (cudnn::gemm; a bias broadcast first and its gradient a GEMM
// against a ones vector, as cudnn::Linear), and the gate silu(a) * b and its backward are one
// fused CUDA kernel each (cudnn/kernels/SwiGLU.h), computed in float32 for 16-bit data.
#pragma once

#include "cudnn/Twin.h"
#include "nn/SwiGLU.h"

namespace cudnn {

class SwiGLU : public Twin<nn::SwiGLU> {
 public:
  using Twin::Twin;

 protected:
  void checkInputType(const std::string& where, const tensor::Tensor& input) const override;
  void linear(const tensor::Tensor& x, const tensor::Tensor& weight, const tensor::Tensor& bias,
              tensor::Tensor& out) override;
  void linearAdding(const tensor::Tensor& x, const tensor::Tensor& weight, const tensor::Tensor& bias,
                    const tensor::Tensor& addend, tensor::Tensor& out) override;
  void linearGradInput(const tensor::Tensor& gy, const tensor::Tensor& weight, tensor::Tensor& gradX,
                       bool accumulate) override;
  void linearGradParameters(const tensor::Tensor& x, const tensor::Tensor& gy, tensor::Tensor& gradWeight,
                            tensor::Tensor& gradBias, double scale) override;
  void gate(const tensor::Tensor& a, const tensor::Tensor& b, tensor::Tensor& h) override;
  // a few 16-bit rows: the products and the gate in one launch (kernels::few_rows_gated)
  void projectAndGate(const tensor::Tensor& x) override;
  void gateBackward(const tensor::Tensor& a, const tensor::Tensor& b, const tensor::Tensor& gradH,
                    tensor::Tensor& gradA, tensor::Tensor& gradB) override;

 private:
  tensor::Tensor ones_;  // [rows x 1] of ones, for the bias gradients
};

}  // namespace cudnn
