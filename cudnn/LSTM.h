// LSTM.h: the cuDNN twin of nn::LSTM, long short-term memory, gates i, f, g, o, on cuDNN's RNN
// API (CUDNN_LSTM) through cudnn::RNNBase (cudnn/RNNBase.h). Same constructor, fields,
// parameters (views into one flat cuDNN weight buffer), states and printing as nn::LSTM.
#pragma once

#include "cudnn/RNNBase.h"
#include "nn/LSTM.h"

namespace cudnn {
using LSTM = RNNBase<nn::LSTM>;
}  // namespace cudnn
