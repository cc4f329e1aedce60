// Dropout.h: cudnn.Dropout, nn::Dropout on CUDA tensors, float32/float64/float16/bfloat16.
// The mask is nn's: bernoulli_ on the device draws from the same counter-based stream as on
// the CPU (Note [Counter-based randomness] in tensor/Generator.h), so one seed gives one mask
// on either device; applying it is mul_ on the device. v1 and v2, in place or not, as nn.
// The nn module's tensor operations run on the GPU as they are (see TensorOpBase.h).
#pragma once

#include "cudnn/TensorOpBase.h"
#include "nn/Dropout.h"

namespace cudnn {

class Dropout : public TensorOpBase<nn::Dropout> {
 public:
  using TensorOpBase::TensorOpBase;

 protected:
  void checkInput(const tensor::Tensor& input, const char* method) const override;
};

}  // namespace cudnn
