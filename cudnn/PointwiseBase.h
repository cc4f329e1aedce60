// PointwiseBase.h: the shared base of the activation twins (cudnn::ReLU, ClippedReLU, Tanh,
// Sigmoid, ELU, GELU, SiLU, LeakyReLU, and the staples Abs, Square, Sqrt, Exp, Log, Power,
// MulConstant, AddConstant), cudnn.torch's Pointwise.lua: one ActivationPlan
// (cudnnActivation* for ClippedReLU, Tanh, Sigmoid, ELU; our kernels for ReLU) driven by the nn module's activation()
// and coef(); GELU, SiLU and LeakyReLU, which cuDNN's activation API lacks, run on our kernels
// (cudnn/kernels/Activation.h), their backward reading the input as nn's; so do the staples
// (cuDNN has no mode for them), whose backward reads the input, or the output (Sqrt, Exp), or
// neither (MulConstant, AddConstant). Any shape, float32, float64,
// float16 and bfloat16. With `inplace` the output IS the input (same storage; cuDNN allows
// x == y) and gradInput reuses gradOutput's storage, as nn::PointwiseBase. A channels-last
// input gives channels-last output and gradInput (Note [Channels-last twins], core/Layout.h).
// Note [In-place activation gradients]: cuDNN's backward reads y for sigmoid, tanh and ELU
// (dx = dy * (y + alpha) where y <= 0) and x for clipped relu; our relu kernel reads y
// (y > 0 exactly where x > 0). After an in-place forward x holds y: clipped relu is wrong there
// (clipped entries hold the ceiling, which cuDNN passes), so in-place ClippedReLU takes its
// gradient from y with kernels::clipped_relu_backward_from_output. GELU and SiLU refuse inplace
// (nn's checkInplace); in-place LeakyReLU has a slope >= 0, so y stands for x.
#pragma once

#include <concepts>
#include <memory>
#include <optional>
#include <type_traits>

#include "cudnn/Twin.h"
#include "nn/Activation.h"
#include "nn/PointwiseBase.h"

namespace cudnn {

class ActivationPlan;  // cudnn/ops/activation.h (not installed)

namespace detail {
// The compute of every activation twin over nn::PointwiseBase's fields; the twin checks first.
class PointwiseCompute {
 public:
  PointwiseCompute();
  ~PointwiseCompute();
  void forward(nn::PointwiseBase& m, const Tensor& input);
  void backward(nn::PointwiseBase& m, const Tensor& input, const Tensor& gradOutput);

 private:
  void run_forward(const nn::PointwiseBase& m, const Tensor& x, const Tensor& y);

  std::unique_ptr<ActivationPlan> plan_;
};
}  // namespace detail

template <std::derived_from<nn::PointwiseBase> Base>
class PointwiseBase : public Twin<Base> {
 public:
  using Twin<Base>::Twin;

  const Tensor& updateOutput(const Tensor& input) override {
    this->checkCudaInput("updateOutput", input);
    this->checkInplace("updateOutput");
    compute_.forward(*this, input);
    return this->output;
  }

  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override {
    const std::string where = this->where("updateGradInput");
    check_on_device(where, input, Tensor());
    check_cuda(where, gradOutput, "gradOutput");
    this->checkGradOutputMatches(gradOutput, "updateGradInput");
    if (!this->inplace && input.sizes() != this->output.sizes()) {
      throw tensor::Error(where + "expected the input of the last forward (" + tensor::shape_str(this->output.sizes()) +
                          "), got " + input.description());
    }
    compute_.backward(*this, input, gradOutput);
    return this->gradInput;
  }

 private:
  detail::PointwiseCompute compute_;
};

}  // namespace cudnn
