// Fuse.h: cudnn::fuse(net) rewrites each convolution + activation pair of a cudnn network into one
// cudnn::FusedConvolution, which runs y = act(conv(x, w) + bias) as one cuDNN graph operation
// instead of three passes over y. The rewrite is visible and reversible (Note [Fusion as a rewrite]
// in Fuse.cpp): where a plain convolution twin (cudnn::SpatialConvolution,
// SpatialDilatedConvolution, VolumetricConvolution; not the transposed ones) is directly followed
// by a cudnn::ReLU, Tanh or Sigmoid in a Sequential (nested ones included), the two become the
// children of a FusedConvolution in the pair's place: str(), model files and convert() show it
// (convert(net, nn::backend) gives an nn.FusedConvolution, which computes the nn pair in turn).
// Likewise a batch-norm twin directly followed by a cudnn::ReLU becomes a
// cudnn::FusedBatchNormalization, which writes relu(bn(x)) in one cuDNN pass (Note [Batch norm
// epilogues] in cudnn/ops/batch_norm.cpp), and a cudnn::Residual whose block ends in a batch-norm
// twin, directly followed by a cudnn::ReLU (ResNet's unit), becomes a cudnn::FusedResidual, which
// writes relu(bn(h) + shortcut(x)) in one pass. Every other plain convolution twin that has a bias
// (one before a batch norm, as in ResNet) computes conv + bias as one operation where a timed
// search (benchmark=true) finds that faster than the convolution and our bias kernel (Note [Fusing
// a bias alone] in cudnn/ops/conv_search.cpp); that changes no result and is not shown. unfuse(net)
// undoes all of it: each fused pair inside a container gives its pair back (in a Sequential, in its
// place; elsewhere as an nn.Sequential of the two). Both return how many pairs and convolutions
// they changed.
#pragma once

#include "nn/Module.h"

namespace cudnn {

int fuse(nn::Module& net);
int unfuse(nn::Module& net);

}  // namespace cudnn
