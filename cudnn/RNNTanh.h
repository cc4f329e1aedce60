// RNNTanh.h: the cuDNN twin of nn::RNNTanh, the Elman RNN with tanh, h' = tanh(W_ih x + b_ih + W_hh h +
// b_hh), on cuDNN's RNN API (CUDNN_RNN_TANH) through cudnn::RNNBase (cudnn/RNNBase.h). Same constructor,
// fields, parameters (views into one flat cuDNN weight buffer), states and printing as nn::RNNTanh.
#pragma once

#include "cudnn/RNNBase.h"
#include "nn/RNNTanh.h"

namespace cudnn {
using RNNTanh = RNNBase<nn::RNNTanh>;
}  // namespace cudnn
