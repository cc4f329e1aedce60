// BLSTM.h: the bidirectional LSTM; output [.. x 2*outputDim], directions concatenated as cuDNN does.
// Constructors, bidirectional whatever the options say, and everything else are RNNModule's and
// RNNBase's (nn/RNNBase.h). Twin: cudnn::BLSTM.
#pragma once

#include "nn/RNNBase.h"

namespace nn {

class BLSTM : public RNNModule<BLSTM, RNNMode::LSTM, true> {
 public:
  using RNNModule::RNNModule;
  static constexpr std::string_view kTypeName = "nn.BLSTM";
};

}  // namespace nn
