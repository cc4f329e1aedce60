// TransformerDecoderLayer.h: cudnn.TransformerDecoderLayer, nn::TransformerDecoderLayer on CUDA
// tensors: a container whose children convert to their own twins (cudnn.MultiheadAttention,
// cudnn.Linear, cudnn.LayerNorm, ...), and whose residual sums are tensor operations that run
// on the device as they are (see TensorOpBase.h). It takes the nn layer's table {tgt, memory}
// and adds only the device checks of every twin: tgt and memory (and gradOutput) on one CUDA
// device.
#pragma once

#include "cudnn/Twin.h"
#include "nn/TransformerDecoderLayer.h"

namespace cudnn {

class TransformerDecoderLayer : public Twin<nn::TransformerDecoderLayer> {
 public:
  using Twin::Twin;

 protected:
  void checkDevices(const char* method, const tensor::Tensor& tgt, const tensor::Tensor& memory,
                    const tensor::Tensor& gradOutput) const override;
};

}  // namespace cudnn
