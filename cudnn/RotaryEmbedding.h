// RotaryEmbedding.h: the cuDNN twin of nn::RotaryEmbedding, on cudnn::rotary_embedding_ (our
// kernel, cudnn/kernels/Rotary.h): float32, float64, float16 and bfloat16 input of any strides on
// a CUDA device, rotated into a contiguous output (16-bit data in float32, rounded once). The
// offsets (setOffsets) are read by the kernel where they are on the input's device; a CPU
// tensor is checked and copied there. Same constructor, options and printing.
#pragma once

#include "cudnn/Twin.h"
#include "nn/RotaryEmbedding.h"

namespace cudnn {

class RotaryEmbedding : public Twin<nn::RotaryEmbedding> {
 public:
  using Twin::Twin;

  const tensor::Tensor& updateOutput(const tensor::Tensor& input) override;
  const tensor::Tensor& updateGradInput(const tensor::Tensor& input, const tensor::Tensor& gradOutput) override;
};

}  // namespace cudnn
