// Layout.cpp
#include "cudnn/core/Layout.h"

#include "cudnn/core/Config.h"

namespace cudnn {

tensor::MemoryFormat activation_format(const tensor::Tensor& input) {
  using tensor::MemoryFormat;
  if (input.dim() != 4 && input.dim() != 5) return MemoryFormat::Contiguous;
  // cuDNN's NHWC kernels are for 16- and 32-bit data: float64 stays row-major, as PyTorch
  // decides for double convolutions (the channels-last float64 convolution has few engines)
  if (input.dtype() == tensor::DType::Float64) return MemoryFormat::Contiguous;
  if (config().channels_last) return MemoryFormat::ChannelsLast;
  return tensor::suggest_memory_format(input);
}

}  // namespace cudnn
