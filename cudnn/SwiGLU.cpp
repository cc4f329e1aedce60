// SwiGLU.cpp: the primitives of nn::SwiGLU on cuBLAS and the fused gate kernel.
#include "cudnn/SwiGLU.h"

#include "cudnn/core/Config.h"
#include "cudnn/core/Descriptors.h"
#include "cudnn/kernels/FewRowsLinear.h"
#include "cudnn/kernels/SwiGLU.h"
#include "cudnn/ops/blas.h"
#include "nn/Buffers.h"

namespace cudnn {

using tensor::Tensor;

void SwiGLU::checkInputType(const std::string& where, const Tensor& input) const {
  check_on_device(where, input, gateWeight);
  check_cuda(where, input, "input");
  nn::check_matches(where, input, gateWeight, "input", "gate_proj.weight");
}

void SwiGLU::linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out) {
  nn::ensure(out, {x.size(0), weight.size(0)}, x);
  gemm_plus_bias(x, weight, bias, out);  // Note [The bias in the product's epilogue] (ops/blas.cpp)
}

void SwiGLU::linearAdding(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& addend,
                          Tensor& out) {
  nn::ensure(out, {x.size(0), weight.size(0)}, x);
  gemm_plus_bias(x, weight, bias, out, addend);  // Note [Sums in the product's epilogue] (nn/Module.cpp)
}

void SwiGLU::projectAndGate(const Tensor& x) {
  if (cudnn::config().linear_engine == LinearEngine::Auto && x.size(0) <= kernels::kFewRowsMax) {
    nn::ensure(gate_, {x.size(0), hidden}, x);
    nn::ensure(up_, {x.size(0), hidden}, x);
    nn::ensure(h_, {x.size(0), hidden}, x);
    // Note [A gated pair] (kernels/FewRowsLinear.cu): the values the three launches give
    if (kernels::few_rows_gated(x, gateWeight, gateBias, upWeight, upBias, gate_, up_, h_)) return;
  }
  nn::SwiGLU::projectAndGate(x);
}

void SwiGLU::linearGradInput(const Tensor& gy, const Tensor& weight, Tensor& gradX, bool accumulate) {
  if (!accumulate) nn::ensure(gradX, {gy.size(0), weight.size(1)}, gy);
  gemm(false, false, gy, weight, gradX, 1.0, accumulate ? 1.0 : 0.0);
}

void SwiGLU::linearGradParameters(const Tensor& x, const Tensor& gy, Tensor& gradWeight, Tensor& gradBias,
                                  double scale) {
  linear_grad_parameters(x, gy, gradWeight, gradBias, scale, ones_);
}

void SwiGLU::gate(const Tensor& a, const Tensor& b, Tensor& h) {
  nn::ensure(h, a.sizes(), a);
  kernels::swiglu_gate_forward(a, b, h);
}

void SwiGLU::gateBackward(const Tensor& a, const Tensor& b, const Tensor& gradH, Tensor& gradA, Tensor& gradB) {
  nn::ensure(gradA, a.sizes(), a);
  nn::ensure(gradB, a.sizes(), a);
  kernels::swiglu_gate_backward(a, b, gradH, gradA, gradB);
}

}  // namespace cudnn
