// TensorOpBase.h: the twin of an nn module that computes with tensor operations alone
// (views, copy_, narrow, add_, mul_, bernoulli_, ...), each of which has a CUDA kernel: the
// tensor layer's kernels do the GPU work, and the twin adds only the device checks of every
// twin. Identity, View, Reshape, Dropout, Concat and Residual are such twins. For the
// containers, children compute where they are: cudnn children on the GPU, nn children
// (excluded from conversion) on the CPU through the device bridge (Note [Device bridging]
// in nn/Module.cpp), so a container twin runs any mix of the two.
#pragma once

#include <string>

#include "cudnn/Twin.h"

namespace cudnn {

// check_on_device for the input, and gradOutput defined and on the input's device.
void check_grad_on_device(const std::string& where, const tensor::Tensor& input, const tensor::Tensor& gradOutput);

template <class Base>
class TensorOpBase : public Twin<Base> {
 public:
  using Twin<Base>::Twin;

  const tensor::Tensor& updateOutput(const tensor::Tensor& input) override {
    check_on_device(this->where("updateOutput"), input, tensor::Tensor());
    return Base::updateOutput(input);
  }
  const tensor::Tensor& updateGradInput(const tensor::Tensor& input, const tensor::Tensor& gradOutput) override {
    check_grad_on_device(this->where("updateGradInput"), input, gradOutput);
    return Base::updateGradInput(input, gradOutput);
  }

 protected:
  // Containers run their children's backward() from here; the checks come first.
  void backwardImpl(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale) override {
    check_grad_on_device(this->where("backward"), input, gradOutput);
    Base::backwardImpl(input, gradOutput, scale);
  }
};

}  // namespace cudnn
