// FusedResidual.h: a residual unit and the activation after its sum, as one module: the unit
// cudnn::fuse rewrites a (Residual, ReLU) pair of a Sequential into when the Residual's block
// ends in a batch norm, as ResNet's bottlenecks do (nn/FusedPair.h, Note [Fusion as a rewrite]
// in cudnn/Fuse.cpp). Children: modules[0] an nn::Residual, modules[1] an nn::PointwiseBase.
// nn computes them in turn, exactly as a Sequential of the two; its twin cudnn::FusedResidual
// computes relu(bn(h) + shortcut(x)), the block's last batch norm with the sum and the ReLU, in
// one cuDNN pass forward and one backward (Note [Fused residual] in cudnn/FusedResidual.cpp).
// Prints on one line per child:
//   nn.FusedResidual(nn.Residual {
//     block: ...
//     shortcut: identity
//   } + nn.ReLU)
#pragma once

#include "nn/FusedPair.h"
#include "nn/Residual.h"

namespace nn {

class FusedResidual : public FusedPair<FusedResidual, Residual> {
 public:
  using FusedPair::FusedPair;
  static constexpr std::string_view kTypeName = "nn.FusedResidual";
  static constexpr const char* kChildren = "a residual unit and an activation";
  static constexpr const char* kChildTypes = "nn.Residual, nn.PointwiseBase";

  Residual& residual(const char* method = "residual") const { return first(method); }
};

}  // namespace nn
