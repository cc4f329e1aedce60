// RNNDescriptors.h: the RAII descriptors of cuDNN's RNN API (v8), beside cudnn/core/Descriptors.h:
// the RNN descriptor, the RNN data descriptors (x and y of a padded or packed batch) and the
// dropout descriptor with its state buffer, seeded explicitly. Destructors never throw.
// Used by cudnn::RNNBlock (cudnn/ops/rnn.h).
#pragma once

#include <cstdint>

#include "cudnn/core/Descriptors.h"

namespace cudnn {

using RNNDescriptor = Descriptor<cudnnRNNDescriptor_t, cudnnCreateRNNDescriptor, cudnnDestroyRNNDescriptor>;
using RNNDataDescriptor =
    Descriptor<cudnnRNNDataDescriptor_t, cudnnCreateRNNDataDescriptor, cudnnDestroyRNNDataDescriptor>;
// A bare tensor descriptor, for what cuDNN fills in (cudnnGetRNNWeightParams's matrix shapes).
using PlainTensorDescriptor =
    Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;

// Note [Dropout seeding]
// cuDNN's dropout draws from a state buffer that cudnnSetDropoutDescriptor initialises from a
// seed (a kernel over the whole buffer) and that every training forward then advances. Nothing
// re-seeds it behind our back: set(p, seed) seeds it, and only a different p or seed seeds it
// again. p = 0 needs no state buffer (cuDNN then never drops).
class DropoutDescriptor : public Descriptor<cudnnDropoutDescriptor_t, cudnnCreateDropoutDescriptor,
                                            cudnnDestroyDropoutDescriptor> {
 public:
  // On the current device. Returns the descriptor.
  cudnnDropoutDescriptor_t set(double p, uint64_t seed);
  double p() const { return p_; }
  uint64_t seed() const { return seed_; }

 private:
  bool valid_ = false;
  double p_ = 0;
  uint64_t seed_ = 0;
  Tensor states_;  // bytes on the device, kept as long as the descriptor is
};

}  // namespace cudnn
