// SpatialReflectionPadding.h: Torch's nn.SpatialReflectionPadding(pad_l, pad_r, pad_t, pad_b): the input's planes with
// a border of the input mirrored about its edges, the edge not repeated (PyTorch's ReflectionPad2d); the missing pads
// default to pad_l. Input [C x H x W] or [N x C x H x W] (SpatialPaddingBase.h). Twin: cudnn::SpatialReflectionPadding.
#pragma once

#include "nn/SpatialPaddingBase.h"

namespace nn {

class SpatialReflectionPadding : public SpatialPaddingModule<SpatialReflectionPadding, kernels::PadMode::Reflect> {
 public:
  using SpatialPaddingModule::SpatialPaddingModule;
  static constexpr std::string_view kTypeName = "nn.SpatialReflectionPadding";
};

}  // namespace nn
