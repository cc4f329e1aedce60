// FusedConvolution.h: a convolution and the activation after it, as one module: the unit
// cudnn::fuse rewrites a (convolution, activation) pair of a Sequential into (nn/FusedPair.h,
// Note [Fusion as a rewrite] in cudnn/Fuse.cpp). Children: modules[0] an nn::ConvolutionBase
// (any of the convolution family), modules[1] an nn::PointwiseBase. nn computes them in turn,
// exactly as a Sequential of the two; its twin cudnn::FusedConvolution runs
// y = act(conv(x) + bias) as one cuDNN operation where it can. Prints on one line:
//   nn.FusedConvolution(nn.SpatialConvolution(3 -> 8, 3x3, 1,1, 1,1) + nn.ReLU)
#pragma once

#include "nn/ConvolutionBase.h"
#include "nn/FusedPair.h"

namespace nn {

class FusedConvolution : public FusedPair<FusedConvolution, ConvolutionBase> {
 public:
  using FusedPair::FusedPair;
  static constexpr std::string_view kTypeName = "nn.FusedConvolution";
  static constexpr const char* kChildren = "a convolution and an activation";
  static constexpr const char* kChildTypes = "nn.ConvolutionBase, nn.PointwiseBase";

  ConvolutionBase& convolution(const char* method = "convolution") const { return first(method); }
};

}  // namespace nn
