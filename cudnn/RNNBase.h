// RNNBase.h: the shared base of the recurrent twins (cudnn::RNNReLU, RNNTanh, LSTM, GRU, BLSTM,
// BGRU): nn::RNNBase's modules computed by one cudnn::RNNBlock (cudnn/ops/rnn.h, not installed) on CUDA
// devices, in float32 (TF32 only with allow_tf32), float64, float16 and bfloat16 (float32 math).
// Shapes, states (hiddenInput ... gradCellOutput, rememberStates), sequenceLengths, dropout
// and setPersist behave as nn/RNNBase.h says. The named parameters are views into ONE flat
// cuDNN weight buffer (and their gradients into one flat gradient buffer): Note [Flat RNN
// weights] in RNNBase.cpp. Backward after an evaluate-mode forward is an error (cuDNN's
// inference forward keeps no reserve space).
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "cudnn/Twin.h"
#include "nn/Buffers.h"
#include "nn/RNNBase.h"

namespace cudnn {

class RNNBlock;  // cudnn/ops/rnn.h (not installed)

namespace detail {

// The compute of every recurrent twin over nn::RNNBase's fields.
class RNNCompute {
 public:
  RNNCompute();
  ~RNNCompute();
  // Makes m's parameters views into the flat weight and gradient buffers on m's CUDA device,
  // copying in the values of any that are not (all of them after to(), or one that reset() or
  // an assignment replaced); a no-op when they already are, and on the CPU (buffers dropped).
  // Returns true when it made new buffers.
  bool flatten(nn::RNNBase& m);
  void forward(nn::RNNBase& m, const Tensor& input, bool training);
  void backwardData(nn::RNNBase& m, const Tensor& gradOutput);
  void backwardWeights(double scale);
  bool backwardDataDone() const;

  void seedDropout(uint64_t seed);
  const Tensor& weightBuffer() const { return w_; }
  const Tensor& gradWeightBuffer() const { return dw_; }
  const char* algorithm() const;

 private:
  RNNBlock& block(nn::RNNBase& m);

  std::unique_ptr<RNNBlock> block_;
  Tensor w_, dw_, dwScratch_;
  std::vector<Tensor> views_;   // per parameter: value view, grad view
  Tensor h0_, c0_, dhy_, dcy_;  // private copies of states on the device
  bool seeded_ = false;
  uint64_t seed_ = 0;
};

}  // namespace detail

template <std::derived_from<nn::RNNBase> Base>
class RNNBase : public Twin<Base> {
 public:
  using Twin<Base>::Twin;

  const Tensor& updateOutput(const Tensor& input) override {
    const std::string where = this->where("updateOutput");
    // values of the right shapes on any device: flatten() copies them into cuDNN's buffer (and
    // checks the gradients' shapes); a value assigned by hand on the CPU is taken as it is
    this->checkParameters("updateOutput", false);
    named(where, input, [&] { compute_.flatten(*this); });
    check_on_device(where, input, this->params[0].value);
    check_cuda(where, input, "input");
    this->carryStates();
    this->forward_ = {};
    this->checkInput(input, "updateOutput");
    nn::check_matches(where, input, this->params[0].value, "input", "weight_ih_l0");
    named(where, input, [&] { compute_.forward(*this, input, this->isTraining()); });
    this->forward_ = {input.sizes(), input.dtype(), this->sequenceLengths, this->isTraining()};
    return this->output;
  }

  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override {
    const std::string where = this->where("updateGradInput");
    check_on_device(where, input, this->params[0].value);
    this->checkGradOutput(input, gradOutput, "updateGradInput");
    this->checkTrainingForward(input, "updateGradInput");
    check_cuda(where, gradOutput, "gradOutput");
    named(where, input, [&] { compute_.backwardData(*this, gradOutput); });
    return this->gradInput;
  }

  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override {
    const std::string where = this->where("accGradParameters");
    check_on_device(where, input, this->params[0].value);
    this->checkGradOutput(input, gradOutput, "accGradParameters");
    this->checkTrainingForward(input, "accGradParameters");
    if (!compute_.backwardDataDone()) {
      throw tensor::Error(where +
                          "expected updateGradInput() after the forward first (backward() calls both), got none");
    }
    this->checkParameters("accGradParameters", true);
    named(where, input, [&] { compute_.backwardWeights(scale); });
  }

  using Base::to;
  nn::Module& to(tensor::Device device) override {
    Base::to(device);
    if (named(this->where("to"), {}, [&] { return compute_.flatten(*this); })) this->forward_ = {};
    return *this;
  }
  nn::Module& to(DType dtype) override {
    Base::to(dtype);
    if (named(this->where("to"), {}, [&] { return compute_.flatten(*this); })) this->forward_ = {};
    return *this;
  }

  // The flat cuDNN buffers the parameters (and their gradients) are views of; undefined on the CPU.
  const Tensor& weightBuffer() const { return compute_.weightBuffer(); }
  const Tensor& gradWeightBuffer() const { return compute_.gradWeightBuffer(); }
  // "standard" or "persist_static": what the last forward ran.
  const char* algorithm() const { return compute_.algorithm(); }
  // Seeds cuDNN's dropout between layers (Note [Dropout seeding] in cudnn/core/RNNDescriptors.h);
  // without it the first training forward draws a seed from tensor::default_generator().
  void seedDropout(uint64_t seed) { compute_.seedDropout(seed); }

 private:
  // Runs f, naming the module, the method and the input in front of the errors of the layers
  // below (cudnn::RNNBlock's, cuDNN's), which name only the op: "cudnn.LSTM::updateOutput: input
  // float32 [5 x 2 x 3] on cuda:0: cudnn::RNNBlock::forward: ...". Errors that already name the
  // module, and other error types (an allocation limit), pass unchanged.
  template <class F>
  auto named(const std::string& where, const Tensor& input, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const tensor::Error& e) {
      if (typeid(e) != typeid(tensor::Error) || std::string_view(e.what()).starts_with(this->type_name())) throw;
      throw tensor::Error(where + (input.defined() ? "input " + input.description() + ": " : std::string()) + e.what());
    }
  }

  detail::RNNCompute compute_;
};

}  // namespace cudnn
