// SpatialReplicationPadding.h: Torch's nn.SpatialReplicationPadding(pad_l, pad_r, pad_t, pad_b): the input's planes
// with a border of copies of the input's edge rows and columns (PyTorch's ReplicationPad2d); the missing pads default
// to pad_l. Input [C x H x W] or [N x C x H x W] (SpatialPaddingBase.h). Twin: cudnn::SpatialReplicationPadding.
#pragma once

#include "nn/SpatialPaddingBase.h"

namespace nn {

class SpatialReplicationPadding : public SpatialPaddingModule<SpatialReplicationPadding, kernels::PadMode::Replicate> {
 public:
  using SpatialPaddingModule::SpatialPaddingModule;
  static constexpr std::string_view kTypeName = "nn.SpatialReplicationPadding";
};

}  // namespace nn
