// FusedConvolution.h: cudnn.FusedConvolution, nn::FusedConvolution (a convolution and the
// activation after it, what cudnn::fuse rewrites such a pair into) computing
// y = act(conv(x) + bias) as one cuDNN graph operation where an engine runs it (Note [Fusion]
// in cudnn/ops/conv_search.cpp), three steps where none does. That needs a plain convolution twin and
// a cudnn.ReLU, Tanh or Sigmoid; any other children (an nn module left by convert's exclude, a
// transposed convolution, an ELU) compute in turn, as nn does. Note [Fused convolution].
#pragma once

#include "cudnn/Twin.h"
#include "nn/FusedConvolution.h"

namespace cudnn {

class FusedConvolution : public Twin<nn::FusedConvolution> {
 public:
  using Twin::Twin;

  const tensor::Tensor& updateOutput(const tensor::Tensor& input) override;
};

}  // namespace cudnn
