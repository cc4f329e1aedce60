// LSTM.h: long short-term memory; gates i, f, g, o as PyTorch and cuDNN order them.
// Constructors and everything else are RNNModule's and RNNBase's (nn/RNNBase.h). Twin: cudnn::LSTM.
#pragma once

#include "nn/RNNBase.h"

namespace nn {

class LSTM : public RNNModule<LSTM, RNNMode::LSTM> {
 public:
  using RNNModule::RNNModule;
  static constexpr std::string_view kTypeName = "nn.LSTM";
};

}  // namespace nn
