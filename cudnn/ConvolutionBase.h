// ConvolutionBase.h: the shared base of the convolution twins (cudnn::SpatialConvolution,
// SpatialDilatedConvolution, SpatialFullConvolution, VolumetricConvolution,
// VolumetricFullConvolution): one ConvPlan driven by nn::ConvolutionBase's spec(), shapes and
// parameters, as cross-correlation. Inputs of [C x spatial] or [batch x C x spatial] (2-d or
// 3-d), float32, float64, float16 and bfloat16 (ConvPlan picks the compute type), any
// strides (packed first). The module's algo (setMode / fastest, nn::ConvAlgorithms) is applied
// to the plan before every call. See Note [Convolution twins] in ConvolutionBase.cpp.
#pragma once

#include <string>
#include <type_traits>

#include "cudnn/core/Twin.h"
#include "cudnn/ops/conv.h"
#include "nn/ConvolutionBase.h"

namespace cudnn {

namespace detail {

// Runs f, putting `where` in front of the message of a tensor::Error it throws (cuDNN's
// errors, "no algorithm could run ...", name no module).
template <class F>
void with_where(const std::string& where, F&& f) {
  try {
    f();
  } catch (const tensor::Error& e) {
    throw tensor::Error(where + e.what());
  }
}

// Applies a module's algorithm choices to its plan: a no-op when they did not change. Checks
// the names, throwing with `where` in front.
void apply_algorithms(ConvPlan& plan, const nn::ConvAlgorithms& algo, const std::string& where);

// The three passes of every nn::ConvolutionBase twin; the twin checks device and dtype first.
class ConvolutionCompute {
 public:
  void forward(nn::ConvolutionBase& m, const Tensor& input, const std::string& where);
  void backwardData(nn::ConvolutionBase& m, const Tensor& input, const Tensor& gradOutput, const std::string& where);
  void backwardParameters(nn::ConvolutionBase& m, const Tensor& input, const Tensor& gradOutput, double scale,
                          const std::string& where);
  const ConvPlan& plan() const { return plan_; }

 private:
  ConvPlan plan_;
};

// The checks each pass makes first: input (and gradOutput) on the parameters' CUDA device,
// of a dtype cuDNN takes, of the weight's dtype.
void check_conv_input(const std::string& where, const Tensor& input, const Tensor& weight);
void check_conv_grad(const std::string& where, const Tensor& gradOutput, const Tensor& weight);

}  // namespace detail

template <class Base>
class ConvolutionBase : public Twin<Base> {
  static_assert(std::is_base_of_v<nn::ConvolutionBase, Base>, "cudnn::ConvolutionBase twins an nn::ConvolutionBase");

 public:
  using Twin<Base>::Twin;

  const Tensor& updateOutput(const Tensor& input) override {
    const std::string where = this->where("updateOutput");
    detail::check_conv_input(where, input, this->weight);
    compute_.forward(*this, input, where);
    return this->output;
  }

  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override {
    const std::string where = this->where("updateGradInput");
    detail::check_conv_input(where, input, this->weight);
    detail::check_conv_grad(where, gradOutput, this->weight);
    compute_.backwardData(*this, input, gradOutput, where);
    return this->gradInput;
  }

  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override {
    const std::string where = this->where("accGradParameters");
    detail::check_conv_input(where, input, this->weight);
    detail::check_conv_grad(where, gradOutput, this->weight);
    compute_.backwardParameters(*this, input, gradOutput, scale, where);
  }

  // The plan behind the passes: its algorithm choices, workspace and search count.
  const ConvPlan& plan() const { return compute_.plan(); }

 private:
  detail::ConvolutionCompute compute_;
};

}  // namespace cudnn
