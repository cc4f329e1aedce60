// LSTM.h: long short-term memory; gates i, f, g, o as PyTorch and cuDNN order them.
// Constructors: cudnn.torch's positional (inputDim, outputDim, numLayers, batchFirst, dropout,
// rememberStates), or nn::RNNOptions by name (PyTorch's order and bias; nn/RNNBase.h).
// Everything else is RNNBase's (nn/RNNBase.h). Twin: cudnn::LSTM.
#pragma once

#include "nn/RNNBase.h"

namespace nn {

class LSTM : public RNNBase {
 public:
  LSTM(int64_t inputDim, int64_t outputDim, int64_t numLayers = 1, bool batchFirst = false, double dropout = 0,
       bool rememberStates = false)
      : LSTM(positional(inputDim, outputDim, numLayers, batchFirst, dropout)) {
    rememberStates_ = rememberStates;
  }
  explicit LSTM(const RNNOptions& options) : RNNBase(kMode, options) {}
  static constexpr RNNMode kMode = RNNMode::LSTM;
  static constexpr std::string_view kTypeName = "nn.LSTM";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config) { return fromConfigAs<LSTM>(config); }
};

}  // namespace nn
