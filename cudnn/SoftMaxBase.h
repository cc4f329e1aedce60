// SoftMaxBase.h: the shared base of the softmax twins (cudnn::SoftMax, LogSoftMax,
// SpatialSoftMax, SpatialLogSoftMax, VolumetricSoftMax, VolumetricLogSoftMax): the nn base's
// layout() {outer, channels, inner} is described as [outer x channels x inner x 1] and
// cudnnSoftmaxForward/Backward run in CHANNEL mode over it, through one SoftmaxPlan. The
// spatial variants keep a channels-last input's layout (Note [Channels-last twins]).
// Algorithm: LOG for the log variants; ACCURATE (max subtracted) for the others, or FAST
// (no max subtraction: exp overflows for inputs above ~88 in float32, ~11 in float16) after
// fastMode(true), as cudnn.torch's CUDNN_SOFTMAX_FAST; the log variants ignore fastMode.
// float32, float64, float16 and bfloat16.
#pragma once

#include <concepts>
#include <memory>
#include <type_traits>

#include "cudnn/Twin.h"
#include "nn/SoftMaxBase.h"

namespace cudnn {

class SoftmaxPlan;  // cudnn/ops/softmax.h (not installed)

namespace detail {
// The compute of every softmax twin over nn::SoftMaxBase's fields; the twin checks first.
class SoftMaxCompute {
 public:
  SoftMaxCompute();
  ~SoftMaxCompute();
  void forward(nn::SoftMaxBase& m, const nn::SoftMaxBase::Layout& l, const Tensor& input);
  void backward(nn::SoftMaxBase& m, const nn::SoftMaxBase::Layout& l, const Tensor& gradOutput);

 private:
  std::unique_ptr<SoftmaxPlan> plan_;
};
}  // namespace detail

template <std::derived_from<nn::SoftMaxBase> Base>
class SoftMaxBase : public Twin<Base> {
 public:
  using Twin<Base>::Twin;

  // CUDNN_SOFTMAX_FAST instead of ACCURATE (not for the log variants). Off by default; the
  // setting lives in nn::SoftMaxBase::fast, so it survives conversion and model files.
  void fastMode(bool on) { this->fast = on; }
  bool fastMode() const { return this->fast; }

  const Tensor& updateOutput(const Tensor& input) override {
    this->checkCudaInput("updateOutput", input);
    compute_.forward(*this, this->shapeLayout(input.sizes(), "updateOutput"), input);
    return this->output;
  }

  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override {
    this->checkCudaGrad("updateGradInput", input, gradOutput);
    const auto l = this->shapeLayout(input.sizes(), "updateGradInput");
    this->checkBackward(input, gradOutput, "updateGradInput");
    compute_.backward(*this, l, gradOutput);
    return this->gradInput;
  }

 private:
  detail::SoftMaxCompute compute_;
};

}  // namespace cudnn
