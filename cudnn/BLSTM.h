// BLSTM.h: the cuDNN twin of nn::BLSTM, the bidirectional LSTM (output 2*outputDim, directions concatenated),
// on cuDNN's RNN API (CUDNN_LSTM, CUDNN_BIDIRECTIONAL) through cudnn::RNNBase (cudnn/RNNBase.h). Same
// constructor, fields, parameters (views into one flat cuDNN weight buffer), states and printing as
// nn::BLSTM.
#pragma once

#include "cudnn/RNNBase.h"
#include "nn/BLSTM.h"

namespace cudnn {
using BLSTM = RNNBase<nn::BLSTM>;
}  // namespace cudnn
