// ConvolutionBase.h: the shared base of the convolution twins (cudnn::SpatialConvolution,
// SpatialDilatedConvolution, SpatialFullConvolution, VolumetricConvolution,
// VolumetricFullConvolution): one ConvPlan driven by nn::ConvolutionBase's spec(), shapes and
// parameters, as cross-correlation. Inputs of [C x spatial] or [batch x C x spatial] (2-d or
// 3-d), float32, float64, float16 and bfloat16 (ConvPlan picks the compute type), any
// strides (packed first; a 4-d / 5-d channels-last input stays channels-last, as do output
// and gradInput: Note [Channels-last twins] in cudnn/core/Layout.h). The module's algo
// (setMode / fastest, nn::ConvAlgorithms) reaches the plan parsed, once per change
// (ModulePlan). See Note [Convolution twins] in ConvolutionBase.cpp. Sealed: the plan and the
// buffers live behind pointers, so this header names no cuDNN type (cudnn/ops/conv.h has
// ConvPlan's interface, for plan()'s callers).
#pragma once

#include <concepts>
#include <memory>
#include <type_traits>

#include "cudnn/Opaque.h"
#include "cudnn/Twin.h"
#include "nn/ConvolutionBase.h"
#include "nn/PointwiseBase.h"

namespace cudnn {

class ConvPlan;  // cudnn/ops/conv.h

namespace detail {

// Runs f, putting m.where(method) in front of the message of a tensor::Error it throws
// (cuDNN's errors, "no algorithm could run ...", name no module).
template <class F>
void with_where(const nn::Module& m, const char* method, F&& f) {
  try {
    f();
  } catch (const tensor::Error& e) {
    throw tensor::Error(m.where(method) + e.what());
  }
}

// The ConvPlan of one module (a convolution twin or cudnn::TemporalConvolution) with the
// module's algorithm choices: sync() parses nn::ConvAlgorithms and hands the plan the typed
// ConvChoices only when the fields differ from those it last applied, so steady state
// compares three short strings and parses nothing.
class ModulePlan {
 public:
  // Throws "<where>algo (setMode): <the flag error>" for a name the pass lacks.
  void sync(const nn::Module& m, const nn::ConvAlgorithms& algo, const char* method);
  ConvPlan* operator->() { return plan_.operator->(); }
  const ConvPlan& get() const { return *plan_; }

 private:
  Opaque<ConvPlan> plan_;
  nn::ConvAlgorithms applied_;  // the defaults are what a fresh plan has
};

// Whether a convolution twin's forward can apply `act` as a fused epilogue: a cudnn ReLU, Tanh
// or Sigmoid (Note [Fusion] in cudnn/ops/conv_search.cpp).
bool fusable_activation(const nn::Module& act);

// The three passes of every nn::ConvolutionBase twin; each checks device and dtype first.
class ConvolutionCompute {
 public:
  // With fused_bias (cudnn::fuse: a convolution with a bias and no fusable activation after
  // it) forward computes conv + bias as one graph operation where that is faster (Note
  // [Fusing a bias alone] in cudnn/ops/conv_search.cpp). Not observable: the output is the same.
  bool fused_bias = false;

  // out = act(conv(input) + bias): act null for the plain forward (out is m.output), or a
  // fusable activation (cudnn::FusedConvolution's output): as one graph operation where an
  // engine runs it, else as three steps.
  void forward(nn::ConvolutionBase& m, const tensor::Tensor& input, const nn::PointwiseBase* act, tensor::Tensor& out);
  void backwardData(nn::ConvolutionBase& m, const tensor::Tensor& input, const tensor::Tensor& gradOutput);
  void backwardParameters(nn::ConvolutionBase& m, const tensor::Tensor& input, const tensor::Tensor& gradOutput,
                          double scale);
  // Note [An input gradient onto an addend] (ConvolutionBase.cpp): the next backwardData with
  // an input of these sizes leaves m.gradInput = the input gradient + addend, in addend's
  // storage, by one matrix product reading the addend; that storage is then gradInput's, which
  // later calls reuse as they reuse their own. False, and nothing set, unless the convolution
  // and tensors are of the kind it applies to; an undefined addend cancels.
  bool setGradInputAddend(const nn::ConvolutionBase& m, const tensor::Tensor& input, const tensor::Tensor& addend);
  const ConvPlan& plan() const;

 private:
  struct State;  // the plan, the activation's, the channels-last weight copies (ConvolutionBase.cpp)
  Opaque<State> state_;
};

// What cudnn::fuse and cudnn::FusedConvolution see of a convolution twin (the template's
// instances share no other base).
class FusableConvolution {
 public:
  virtual ~FusableConvolution() = default;
  virtual bool fusable() const = 0;  // a plain (not transposed) convolution
  // out = act(conv(input) + bias), act fusable_activation; the convolution's own output is
  // left untouched.
  virtual void forwardActivated(const tensor::Tensor& input, const nn::PointwiseBase& act, tensor::Tensor& out) = 0;
  virtual void setFusedBias(bool on) = 0;
  virtual bool fusedBias() const = 0;
  // ConvolutionCompute::setGradInputAddend (cudnn::FusedResidual: a block's first convolution
  // adds the shortcut's gradient).
  virtual bool setGradInputAddend(const tensor::Tensor& input, const tensor::Tensor& addend) = 0;
};

// The checks each pass makes first: input (and gradOutput) on the parameters' CUDA device,
// of a dtype cuDNN takes, of the weight's dtype. The message names m.where(method), built
// only when a check fails.
void check_conv_input(const nn::Module& m, const char* method, const tensor::Tensor& input,
                      const tensor::Tensor& weight);
void check_conv_grad(const nn::Module& m, const char* method, const tensor::Tensor& gradOutput,
                     const tensor::Tensor& weight);

}  // namespace detail

template <std::derived_from<nn::ConvolutionBase> Base>
class ConvolutionBase : public Twin<Base>, public detail::FusableConvolution {
 public:
  using Twin<Base>::Twin;
  using Tensor = tensor::Tensor;

  const Tensor& updateOutput(const Tensor& input) override {
    compute_.forward(*this, input, nullptr, this->output);
    return this->output;
  }

  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override {
    compute_.backwardData(*this, input, gradOutput);
    return this->gradInput;
  }

  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override {
    compute_.backwardParameters(*this, input, gradOutput, scale);
  }

  // The plan behind the passes: its algorithm choices, workspace and search count.
  const ConvPlan& plan() const { return compute_.plan(); }

  bool fusable() const override { return !this->transposed(); }
  void forwardActivated(const Tensor& input, const nn::PointwiseBase& act, Tensor& out) override {
    compute_.forward(*this, input, &act, out);
  }
  void setFusedBias(bool on) override { compute_.fused_bias = on; }
  bool fusedBias() const override { return compute_.fused_bias; }
  bool setGradInputAddend(const Tensor& input, const Tensor& addend) override {
    return compute_.setGradInputAddend(*this, input, addend);
  }

 private:
  detail::ConvolutionCompute compute_;
};

}  // namespace cudnn
