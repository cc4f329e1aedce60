// RNNReLU.h: the cuDNN twin of nn::RNNReLU, the Elman RNN with ReLU, h' = relu(W_ih x + b_ih + W_hh h +
// b_hh), on cuDNN's RNN API (CUDNN_RNN_RELU) through cudnn::RNNBase (cudnn/RNNBase.h). Same constructor,
// fields, parameters (views into one flat cuDNN weight buffer), states and printing as nn::RNNReLU.
#pragma once

#include "cudnn/RNNBase.h"
#include "nn/RNNReLU.h"

namespace cudnn {
using RNNReLU = RNNBase<nn::RNNReLU>;
}  // namespace cudnn
