// RNNDescriptors.cpp
#include "cudnn/core/RNNDescriptors.h"

#include "cudnn/core/Handle.h"
#include "tensor/Cuda.h"

namespace cudnn {

cudnnDropoutDescriptor_t DropoutDescriptor::set(double p, uint64_t seed) {
  cudnnDropoutDescriptor_t d = get();
  if (valid_ && p == p_ && seed == seed_) return d;
  if (p > 0) {
    size_t bytes = 0;
    CUDNN_CHECK(cudnnDropoutGetStatesSize(handle(), &bytes));
    if (!states_.defined() || states_.nbytes() < bytes) {
      states_ = tensor::empty({static_cast<int64_t>(bytes)}, tensor::DType::UInt8,
                              tensor::Device::cuda(tensor::cuda::current_device()));
    }
    CUDNN_CHECK(
        cudnnSetDropoutDescriptor(d, handle(), static_cast<float>(p), states_.raw_data(), bytes, seed));
  } else {
    CUDNN_CHECK(cudnnSetDropoutDescriptor(d, handle(), 0.0f, nullptr, 0, seed));
  }
  valid_ = true;
  p_ = p;
  seed_ = seed;
  return d;
}

}  // namespace cudnn
