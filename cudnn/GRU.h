// GRU.h: the cuDNN twin of nn::GRU, the gated recurrent unit, gates r, z, n (n = tanh(W_in x + b_in + r *
// (W_hn h + b_hn))), on cuDNN's RNN API (CUDNN_GRU) through cudnn::RNNBase (cudnn/RNNBase.h). Same
// constructor, fields, parameters (views into one flat cuDNN weight buffer), states and printing as nn::GRU.
#pragma once

#include "cudnn/RNNBase.h"
#include "nn/GRU.h"

namespace cudnn {
using GRU = RNNBase<nn::GRU>;
}  // namespace cudnn
