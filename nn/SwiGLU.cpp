// SwiGLU.cpp: x rows -> gate and up projections (hooks) -> gate (hook) -> down projection (hook);
// backward runs the same chain in reverse, the input's gradient being the sum of the two
// projections' (gradGate gate_proj.weight + gradUp up_proj.weight).
#include "nn/SwiGLU.h"

#include <cmath>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"
#include "nn/kernels/Linear.h"
#include "nn/kernels/SwiGLU.h"
#include "tensor/Blas.h"

namespace nn {

using tensor::blas::gemm;

SwiGLU::SwiGLU(int64_t dim_, int64_t hidden_, bool bias) : dim(dim_), hidden(hidden_) {
  if (dim <= 0 || hidden <= 0) {
    throw Error(std::string(kTypeName) + ": expected positive dim and hidden sizes, got dim " + std::to_string(dim) +
                " and hidden " + std::to_string(hidden));
  }
  gateWeight = tensor::empty({hidden, dim});
  upWeight = tensor::empty({hidden, dim});
  downWeight = tensor::empty({dim, hidden});
  gradGateWeight = tensor::zeros({hidden, dim});
  gradUpWeight = tensor::zeros({hidden, dim});
  gradDownWeight = tensor::zeros({dim, hidden});
  if (bias) {
    gateBias = tensor::empty({hidden});
    upBias = tensor::empty({hidden});
    downBias = tensor::empty({dim});
    gradGateBias = tensor::zeros({hidden});
    gradUpBias = tensor::zeros({hidden});
    gradDownBias = tensor::zeros({dim});
  }
  reset();
}

void SwiGLU::reset() {
  const double in = 1 / std::sqrt(static_cast<double>(dim)), out = 1 / std::sqrt(static_cast<double>(hidden));
  // nn.Linear's order: each projection's weight, then its bias
  gateWeight.uniform_(-in, in);
  if (gateBias.defined()) gateBias.uniform_(-in, in);
  upWeight.uniform_(-in, in);
  if (upBias.defined()) upBias.uniform_(-in, in);
  downWeight.uniform_(-out, out);
  if (downBias.defined()) downBias.uniform_(-out, out);
}

void SwiGLU::visitState(StateVisitor& v) {
  v.parameter("gate_proj.weight", gateWeight, gradGateWeight);
  if (gateBias.defined()) v.parameter("gate_proj.bias", gateBias, gradGateBias);
  v.parameter("up_proj.weight", upWeight, gradUpWeight);
  if (upBias.defined()) v.parameter("up_proj.bias", upBias, gradUpBias);
  v.parameter("down_proj.weight", downWeight, gradDownWeight);
  if (downBias.defined()) v.parameter("down_proj.bias", downBias, gradDownBias);
}

void SwiGLU::checkParameters(const char* method, bool gradients) const {
  check_parameter(*this, method, "gate_proj.weight", gateWeight, {hidden, dim}, gradients ? &gradGateWeight : nullptr);
  check_parameter(*this, method, "up_proj.weight", upWeight, {hidden, dim}, gradients ? &gradUpWeight : nullptr);
  check_parameter(*this, method, "down_proj.weight", downWeight, {dim, hidden}, gradients ? &gradDownWeight : nullptr);
  if (gateBias.defined() || upBias.defined() || downBias.defined()) {
    check_parameter(*this, method, "gate_proj.bias", gateBias, {hidden}, gradients ? &gradGateBias : nullptr);
    check_parameter(*this, method, "up_proj.bias", upBias, {hidden}, gradients ? &gradUpBias : nullptr);
    check_parameter(*this, method, "down_proj.bias", downBias, {dim}, gradients ? &gradDownBias : nullptr);
  }
  // the projections read every parameter through the input's type
  for (const Tensor* t : {&upWeight, &downWeight, &gateBias, &upBias, &downBias}) {
    if (t->defined() && (t->dtype() != gateWeight.dtype() || t->device() != gateWeight.device())) {
      throw Error(where(method) + "expected every parameter of gate_proj.weight's dtype and device (" +
                  tensor::name(gateWeight.dtype()) + " on " + gateWeight.device().str() + "), got " + t->description() +
                  " (convert the module with .to(dtype))");
    }
  }
}

void SwiGLU::checkInputType(const std::string& where, const Tensor& input) const {
  check_float(where, input);
  check_matches(where, input, gateWeight, "input", "gate_proj.weight");
}

int64_t SwiGLU::checkInput(const Tensor& input, const char* method) const {
  if (dim <= 0 || hidden <= 0) {  // public fields
    throw Error(where(method) + "expected positive dim and hidden sizes, got dim " + std::to_string(dim) +
                " and hidden " + std::to_string(hidden));
  }
  checkParameters(method, false);
  checkInputType(where(method), input);
  if (input.dim() < 1 || input.size(-1) != dim) {
    throw Error(where(method) + "expected input of [* x " + std::to_string(dim) + "] (any leading dims), got " +
                tensor::shape_str(input.sizes()));
  }
  return input.numel() / dim;
}

void SwiGLU::linearAdding(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& addend,
                          Tensor& out) {
  linear(x, weight, bias, out);
  out.add_(addend);
}

void SwiGLU::projectAndGate(const Tensor& x) {
  linear(x, gateWeight, gateBias, gate_);
  linear(x, upWeight, upBias, up_);
  gate(gate_, up_, h_);
}

const Tensor& SwiGLU::forwardInto(const Tensor& input, const Tensor& addend, const char* method) {
  const int64_t rows = checkInput(input, method);
  if (addend.defined()) check_addend(where(method), addend, input.sizes(), input);
  gradsValid_ = false;
  const Tensor x = input.reshape({rows, dim}).contiguous();  // Note [Linear over leading dims]
  projectAndGate(x);
  if (addend.defined()) {
    linearAdding(h_, downWeight, downBias, addend.view({rows, dim}), output);
  } else {
    linear(h_, downWeight, downBias, output);
  }
  output = output.view(input.sizes());
  return output;
}

const Tensor& SwiGLU::updateOutput(const Tensor& input) { return forwardInto(input, Tensor(), "updateOutput"); }

const Tensor& SwiGLU::updateOutputAdding(const Tensor& input, const Tensor& addend) {
  checkInput(input, "forwardAdding");
  check_addend(where("forwardAdding"), addend, input.sizes(), input);  // an undefined one too
  return forwardInto(input, addend, "forwardAdding");
}

const Tensor& SwiGLU::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const int64_t rows = checkInput(input, "updateGradInput");
  check_grad_output_shape(where("updateGradInput"), input.sizes(), gradOutput);
  check_matches(where("updateGradInput"), gradOutput, gateWeight, "gradOutput", "gate_proj.weight");
  if (!h_.defined() || h_.size(0) != rows || h_.size(1) != hidden || h_.dtype() != input.dtype()) {
    throw Error(where("updateGradInput") + "expected a forward() of input " + input.description() + " first");
  }
  const Tensor gy = gradOutput.reshape({rows, dim}).contiguous();
  linearGradInput(gy, downWeight, gradH_, false);
  gateBackward(gate_, up_, gradH_, gradGate_, gradUp_);
  if (gradInputNeeded()) {
    linearGradInput(gradGate_, gateWeight, gradInput, false);
    linearGradInput(gradUp_, upWeight, gradInput, true);
    gradInput = gradInput.view(input.sizes());
  } else {
    gradInput = Tensor();  // Note [gradInput not needed] in nn/Module.cpp
  }
  gradsValid_ = true;
  return gradInput;
}

void SwiGLU::releaseActivations() {
  Module::releaseActivations();
  gate_ = up_ = h_ = Tensor();
  gradH_ = gradGate_ = gradUp_ = Tensor();
  gradsValid_ = false;
}

void SwiGLU::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  const int64_t rows = checkInput(input, "accGradParameters");
  checkParameters("accGradParameters", true);
  check_grad_output_shape(where("accGradParameters"), input.sizes(), gradOutput);
  if (!gradsValid_ || gradGate_.size(0) != rows) {
    throw Error(where("accGradParameters") +
                "expected updateGradInput() after the forward first (backward() calls both), got none");
  }
  const Tensor x = input.reshape({rows, dim}).contiguous();
  linearGradParameters(h_, gradOutput.reshape({rows, dim}).contiguous(), gradDownWeight, gradDownBias, scale);
  linearGradParameters(x, gradGate_, gradGateWeight, gradGateBias, scale);
  linearGradParameters(x, gradUp_, gradUpWeight, gradUpBias, scale);
}

void SwiGLU::backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) {
  Module::backwardImpl(input, gradOutput, scale);
  if (freesIntermediateGradients()) {
    gradH_ = gradGate_ = gradUp_ = Tensor();
    gradsValid_ = false;
  }
}

// ---- the CPU primitives ----

void SwiGLU::linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out) {
  const int64_t n = x.size(0), in = x.size(1), outDim = weight.size(0);
  ensure(out, {n, outDim}, x);
  tensor::dispatch_f32_f64(x.dtype(), "nn.SwiGLU", [&](auto tag) {
    using T = decltype(tag);
    kernels::linear_forward<T>(x.data<T>(), weight.data<T>(), bias.defined() ? bias.data<T>() : nullptr, out.data<T>(),
                               n, in, outDim);
  });
}

void SwiGLU::linearGradInput(const Tensor& gy, const Tensor& weight, Tensor& gradX, bool accumulate) {
  const int64_t n = gy.size(0), outDim = weight.size(0), in = weight.size(1);
  if (!accumulate) ensure(gradX, {n, in}, gy);
  tensor::dispatch_f32_f64(gy.dtype(), "nn.SwiGLU", [&](auto tag) {
    using T = decltype(tag);
    gemm<T>(false, false, n, in, outDim, T(1), gy.data<T>(), outDim, weight.data<T>(), in, T(accumulate ? 1 : 0),
            gradX.data<T>(), in);
  });
}

void SwiGLU::linearGradParameters(const Tensor& x, const Tensor& gy, Tensor& gradWeight, Tensor& gradBias,
                                  double scale) {
  const int64_t n = x.size(0), in = x.size(1), outDim = gy.size(1);
  tensor::dispatch_f32_f64(x.dtype(), "nn.SwiGLU", [&](auto tag) {
    using T = decltype(tag);
    const T s = static_cast<T>(scale);
    gemm<T>(true, false, outDim, in, n, s, gy.data<T>(), outDim, x.data<T>(), in, T(1), gradWeight.data<T>(), in);
    if (gradBias.defined()) {
      T* gb = gradBias.data<T>();
      const T* g = gy.data<T>();
      for (int64_t j = 0; j < outDim; ++j) {
        T sum = 0;  // rows in order: the same sum from run to run
        for (int64_t i = 0; i < n; ++i) sum += g[i * outDim + j];
        gb[j] += s * sum;
      }
    }
  });
}

void SwiGLU::gate(const Tensor& a, const Tensor& b, Tensor& h) {
  ensure(h, a.sizes(), a);
  const int64_t n = a.numel();
  tensor::dispatch_f32_f64(a.dtype(), "nn.SwiGLU", [&](auto tag) {
    using T = decltype(tag);
    const T *ap = a.data<T>(), *bp = b.data<T>();
    T* hp = h.data<T>();
#pragma omp parallel for schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; ++i) hp[i] = kernels::gate_silu(ap[i]) * bp[i];
  });
}

void SwiGLU::gateBackward(const Tensor& a, const Tensor& b, const Tensor& gradH, Tensor& gradA, Tensor& gradB) {
  ensure(gradA, a.sizes(), a);
  ensure(gradB, a.sizes(), a);
  const int64_t n = a.numel();
  tensor::dispatch_f32_f64(a.dtype(), "nn.SwiGLU", [&](auto tag) {
    using T = decltype(tag);
    const T *ap = a.data<T>(), *bp = b.data<T>(), *gp = gradH.data<T>();
    T *dap = gradA.data<T>(), *dbp = gradB.data<T>();
#pragma omp parallel for schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; ++i) kernels::gate_backward(ap[i], bp[i], gp[i], dap[i], dbp[i]);
  });
}

// ---- printing and configuration ----

std::string SwiGLU::str() const {
  return type_name() + "(" + std::to_string(dim) + " -> " + std::to_string(hidden) + " -> " + std::to_string(dim) +
         ")" + (gateBias.defined() ? " with bias" : "");
}

tensor::Json SwiGLU::config() const {
  return tensor::Json::Object{{"dim", dim}, {"hidden", hidden}, {"bias", gateBias.defined()}};
}

ModulePtr SwiGLU::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t dim = c.integer("dim"), hidden = c.integer("hidden");
  const bool bias = c.flag("bias", false);
  c.finish();
  return std::make_shared<SwiGLU>(dim, hidden, bias);
}

}  // namespace nn
