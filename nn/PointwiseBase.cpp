// PointwiseBase.cpp: buffer handling (in place or not) around kernels::activation_*.
#include "nn/PointwiseBase.h"

#include "nn/Buffers.h"

namespace nn {

void PointwiseBase::checkInput(const Tensor& input, const char* method) const {
  check_float(where(method), input);
}

void PointwiseBase::checkGradOutput(const Tensor& gradOutput, const char* method) const {
  check_float(where(method), gradOutput, "gradOutput");
  checkGradOutputMatches(gradOutput, method);
}

void PointwiseBase::checkGradOutputMatches(const Tensor& gradOutput, const char* method) const {
  if (!output.defined()) throw Error(where(method) + "no output to differentiate: call updateOutput first");
  if (gradOutput.sizes() != output.sizes() || gradOutput.dtype() != output.dtype()) {
    throw Error(where(method) + "expected gradOutput of the output's shape and dtype (" + output.description() +
                "), got " + gradOutput.description());
  }
}

const Tensor& PointwiseBase::updateOutput(const Tensor& input) {
  checkInput(input, "updateOutput");
  const Activation mode = activation();
  const double c = coef();
  if (inplace && kernels::activation_needs_input(mode, c)) {
    throw Error(where("updateOutput") + "expected inplace = false (the backward pass reads the input), got true");
  }
  tensor::dispatch_f32_f64(input.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    if (inplace) {
      if (input.is_contiguous()) {
        kernels::activation_forward<T>(mode, c, input.data<T>(), input.data<T>(), input.numel());
      } else {
        // compute on a packed copy, then write through the caller's view
        Tensor packed = input.contiguous();
        kernels::activation_forward<T>(mode, c, packed.data<T>(), packed.data<T>(), packed.numel());
        Tensor(input).copy_(packed);
      }
      output = input;
      return;
    }
    const Tensor x = input.contiguous();
    if (output.shares_storage(input)) output = Tensor();  // was in place: never write into the input
    ensure(output, x.sizes(), x);
    kernels::activation_forward<T>(mode, c, x.data<T>(), output.data<T>(), x.numel());
  });
  return output;
}

const Tensor& PointwiseBase::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  checkGradOutput(gradOutput, "updateGradInput");
  const Activation mode = activation();
  const double c = coef();
  if (kernels::activation_needs_input(mode, c)) return gradInputFromInput(input, gradOutput);
  const Tensor y = output.contiguous();
  tensor::dispatch_f32_f64(y.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    if (inplace && gradOutput.is_contiguous()) {
      gradInput = gradOutput;
      kernels::activation_backward<T>(mode, c, y.data<T>(), gradOutput.data<T>(), gradOutput.data<T>(), y.numel());
      return;
    }
    const Tensor gy = gradOutput.contiguous();
    if (gradInput.shares_storage(gradOutput)) gradInput = Tensor();
    ensure(gradInput, gy.sizes(), gy);
    kernels::activation_backward<T>(mode, c, y.data<T>(), gy.data<T>(), gradInput.data<T>(), y.numel());
  });
  return gradInput;
}

const Tensor& PointwiseBase::gradInputFromInput(const Tensor& input, const Tensor& gradOutput) {
  checkInput(input, "updateGradInput");
  if (input.sizes() != output.sizes()) {
    throw Error(where("updateGradInput") + "expected the input of the last forward (" + output.description() +
                "), got " + input.description());
  }
  const Tensor x = input.contiguous();
  const Tensor gy = gradOutput.contiguous();
  if (gradInput.shares_storage(gradOutput) || gradInput.shares_storage(input)) gradInput = Tensor();
  ensure(gradInput, gy.sizes(), gy);
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    kernels::activation_backward_from_input<T>(activation(), coef(), x.data<T>(), gy.data<T>(), gradInput.data<T>(),
                                               x.numel());
  });
  return gradInput;
}

tensor::Json PointwiseBase::config() const { return tensor::Json::Object{{"inplace", inplace}}; }

}  // namespace nn
