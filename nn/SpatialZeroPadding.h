// SpatialZeroPadding.h: Torch's nn.SpatialZeroPadding(pad_l, pad_r, pad_t, pad_b): the input's planes with
// a border of zeros (negative pads crop: Torch's way to cut a border off); the missing pads default to pad_l. Input [C
// x H x W] or [N x C x H x W] (SpatialPaddingBase.h). Twin: cudnn::SpatialZeroPadding.
#pragma once

#include "nn/SpatialPaddingBase.h"

namespace nn {

class SpatialZeroPadding : public SpatialPaddingModule<SpatialZeroPadding, kernels::PadMode::Constant> {
 public:
  using SpatialPaddingModule::SpatialPaddingModule;
  static constexpr std::string_view kTypeName = "nn.SpatialZeroPadding";
};

}  // namespace nn
