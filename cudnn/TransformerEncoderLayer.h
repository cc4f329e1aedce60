// TransformerEncoderLayer.h: cudnn.TransformerEncoderLayer, nn::TransformerEncoderLayer on CUDA
// tensors: a container whose children convert to their own twins (cudnn.MultiheadAttention,
// cudnn.Linear, cudnn.LayerNorm, ...), and whose residual sums are tensor operations that run
// on the device as they are (see TensorOpBase.h).
#pragma once

#include "cudnn/TensorOpBase.h"
#include "nn/TransformerEncoderLayer.h"

namespace cudnn {
using TransformerEncoderLayer = TensorOpBase<nn::TransformerEncoderLayer>;
}  // namespace cudnn
