// PReLU.cpp: checks and buffers around kernels::prelu_* (nn/kernels/Activation.h).
#include "nn/PReLU.h"

#include <algorithm>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"
#include "nn/kernels/Activation.h"

namespace nn {

PReLU::PReLU(int64_t nOutputPlane_) : nOutputPlane(nOutputPlane_) {
  if (nOutputPlane < 0) {
    throw Error(std::string(kTypeName) + ": expected nOutputPlane >= 0 (0: one shared weight), got " +
                std::to_string(nOutputPlane));
  }
  const int64_t n = std::max<int64_t>(nOutputPlane, 1);
  weight = tensor::empty({n});
  gradWeight = tensor::zeros({n});
  reset();
}

void PReLU::reset() { weight.fill_(0.25); }

void PReLU::visitState(StateVisitor& v) { v.parameter("weight", weight, gradWeight); }

PReLU::Layout PReLU::checkInput(const Tensor& input, const char* method, bool gradients, bool dtypes) const {
  if (dtypes) check_float(where(method), input);
  check_parameter(*this, method, "weight", weight, {std::max<int64_t>(nOutputPlane, 1)},
                  gradients ? &gradWeight : nullptr);
  if (nOutputPlane == 0) return {1, 1, input.numel()};
  const int64_t rank = input.dim();
  const int64_t cd = rank >= 2 ? 1 : 0;
  if (rank < 1 || input.size(cd) != nOutputPlane) {
    throw Error(where(method) + "expected an input with " + std::to_string(nOutputPlane) +
                " channels in dimension 1 (0 for a vector), got " + input.description());
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < cd; ++d) outer *= input.size(d);
  for (int64_t d = cd + 1; d < rank; ++d) inner *= input.size(d);
  return {outer, nOutputPlane, inner};
}

void PReLU::checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  if (gradOutput.sizes() != input.sizes() || gradOutput.dtype() != input.dtype()) {
    throw Error(where(method) + "expected gradOutput of the input's shape and dtype (" + input.description() +
                "), got " + gradOutput.description());
  }
}

const Tensor& PReLU::updateOutput(const Tensor& input) {
  const Layout l = checkInput(input, "updateOutput", false);
  check_matches(where("updateOutput"), input, weight);
  const Tensor x = input.contiguous();
  ensure(output, x.sizes(), x);
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    kernels::prelu_forward<T>(x.data<T>(), weight.data<T>(), output.data<T>(), l.outer, l.channels, l.inner);
  });
  return output;
}

const Tensor& PReLU::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const Layout l = checkInput(input, "updateGradInput", false);
  check_matches(where("updateGradInput"), input, weight);
  checkGradOutput(input, gradOutput, "updateGradInput");
  const Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  ensure(gradInput, x.sizes(), x);
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    kernels::prelu_backward<T>(x.data<T>(), weight.data<T>(), gy.data<T>(), gradInput.data<T>(), l.outer, l.channels,
                               l.inner);
  });
  return gradInput;
}

void PReLU::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  const Layout l = checkInput(input, "accGradParameters", true);
  check_matches(where("accGradParameters"), input, weight);
  checkGradOutput(input, gradOutput, "accGradParameters");
  const Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    kernels::prelu_acc_grad_weight<T>(x.data<T>(), gy.data<T>(), gradWeight.data<T>(), scale, l.outer, l.channels,
                                      l.inner);
  });
}

tensor::Json PReLU::config() const { return tensor::Json::Object{{"nOutputPlane", nOutputPlane}}; }

ModulePtr PReLU::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t n = c.integer("nOutputPlane", 0);
  c.finish();
  return std::make_shared<PReLU>(n);
}

}  // namespace nn
