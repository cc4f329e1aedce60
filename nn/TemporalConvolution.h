// TemporalConvolution.h: 1-D convolution over frames: input [nInputFrame x inputFrameSize] or
// [batch x nInputFrame x inputFrameSize] -> [nOutputFrame x outputFrameSize] with
// nOutputFrame = (nInputFrame - kW) / dW + 1; output frame t = bias + W * (the kW input
// frames from t * dW, concatenated), W of Torch's layout [outputFrameSize x (kW * inputFrameSize)].
// Twin: cudnn::TemporalConvolution.
#pragma once

#include "nn/ConvolutionBase.h"

namespace nn {

class TemporalConvolution : public Module, public WithConvAlgorithms<TemporalConvolution> {
 public:
  TemporalConvolution(int64_t inputFrameSize, int64_t outputFrameSize, int64_t kW, int64_t dW = 1);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  void reset(double stdv = -1);  // stdv < 0: Torch's default 1/sqrt(kW * inputFrameSize)
  static constexpr std::string_view kTypeName = "nn.TemporalConvolution";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);

  // Checks configuration, dtype and input; returns the output's shape (batched iff the input is).
  Shape outputShape(const Tensor& input, const char* method = "updateOutput") const;
  void checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const;
  // The same two checks on shapes alone, for any dtype (the cudnn twin also takes float16 and
  // bfloat16 and checks dtype and device itself).
  Shape outputSizes(const Shape& inputSizes, const char* method = "updateOutput") const;
  void checkGradOutputSizes(const Shape& inputSizes, const Shape& gradOutputSizes, const char* method) const;
  // gradWeight and gradBias of the parameters' shapes (Note [Parameters are checked where
  // they are used]; outputSizes checks the values).
  void checkGradients(const char* method) const;

  // The settings of the 2-d cross-correlation the cudnn twin runs (Note [Temporal
  // convolution as a 2-d one] in cudnn/TemporalConvolution.cpp): kernel kW x inputFrameSize,
  // stride dW x 1. setMode / resetMode / fastest / algo come from WithConvAlgorithms.
  ConvSpec spec() const;

  int64_t inputFrameSize, outputFrameSize, kW, dW;
  Tensor weight, bias, gradWeight, gradBias;

 protected:
  void visitState(StateVisitor& v) override;
  // outputShape / checkGradOutput's dtype and device checks (messages built only on failure).
  void checkInput(const Tensor& t, const char* what, const char* method) const;

  Tensor columns_;  // per-thread unfolded-gradient buffers, reused between calls
};

}  // namespace nn
