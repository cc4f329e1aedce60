// BGRU.h: the cuDNN twin of nn::BGRU, the bidirectional GRU (output 2*outputDim, directions concatenated), on
// cuDNN's RNN API (CUDNN_GRU, CUDNN_BIDIRECTIONAL) through cudnn::RNNBase (cudnn/RNNBase.h). Same
// constructor, fields, parameters (views into one flat cuDNN weight buffer), states and printing as nn::BGRU.
#pragma once

#include "cudnn/RNNBase.h"
#include "nn/BGRU.h"

namespace cudnn {
using BGRU = RNNBase<nn::BGRU>;
}  // namespace cudnn
