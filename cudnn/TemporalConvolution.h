// TemporalConvolution.h: the cuDNN twin of nn::TemporalConvolution: [nInputFrame x
// inputFrameSize] or [batch x nInputFrame x inputFrameSize] -> [.. x nOutputFrame x
// outputFrameSize], as one 2-d cuDNN cross-correlation through a ConvPlan (Note [Temporal
// convolution as a 2-d one] in TemporalConvolution.cpp). Same constructor, fields, parameters
// and printing; float32, float64, float16 and bfloat16 on CUDA devices; algorithm choices with
// setMode / fastest / resetMode (nn::ConvAlgorithms), shared with cudnn::ConvolutionBase.
#pragma once

#include "cudnn/ConvolutionBase.h"
#include "nn/TemporalConvolution.h"

namespace cudnn {

class TemporalConvolution : public Twin<nn::TemporalConvolution> {
 public:
  using Twin::Twin;

  using Tensor = tensor::Tensor;

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;

  const ConvPlan& plan() const { return plan_.get(); }

 protected:
  // updateGradInput then the parameter gradients, transposing gradOutput once.
  void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) override;

 private:
  // gradOutput [batch x nOutputFrame x outputFrameSize] into convGradOutput_, cuDNN's layout.
  void transposeGradOutput(const Tensor& gradOutput);
  // gradWeight and gradBias += scale * the gradients from convGradOutput_.
  void accumulate(const Tensor& input, double scale, const char* method);

  detail::ModulePlan plan_;
  Tensor convOutput_;      // [batch x outputFrameSize x nOutputFrame x 1]
  Tensor convGradOutput_;  // the same layout, for gradOutput
};

}  // namespace cudnn
