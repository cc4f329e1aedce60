// Fuse.h: cudnn::fuse(net) runs each convolution + activation pair of a cudnn network as one
// cuDNN graph operation, y = act(conv(x, w) + bias), instead of three passes over y.
// It walks every nn::Container in `net` (nested ones included); where a plain convolution twin
// (cudnn::SpatialConvolution, SpatialDilatedConvolution, VolumetricConvolution; not the
// transposed ones) is directly followed by a cudnn::ReLU, Tanh or Sigmoid in a Sequential, the
// convolution computes the activation too and the activation passes its input through. The
// backward passes are unchanged (the activation's gradient reads its output, which both
// share). Parameters, printing, convert() and model files are untouched; a forward without
// a fused engine for its shapes computes the three steps apart (Note [Fusion] in
// cudnn/ops/conv.cpp). Every other such convolution that has a bias (one before a batch norm,
// as in ResNet) computes conv + bias as one operation where a timed search (benchmark=true)
// finds that faster than the convolution and our bias kernel (Note [Fusing a bias alone]).
// unfuse(net) undoes both. Both return how many convolutions they changed.
#pragma once

#include "nn/Module.h"

namespace cudnn {

int fuse(nn::Module& net);
int unfuse(nn::Module& net);

}  // namespace cudnn
