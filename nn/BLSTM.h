// BLSTM.h: the bidirectional LSTM; output [.. x 2*outputDim], directions concatenated as cuDNN does.
// Constructors: cudnn.torch's positional (inputDim, outputDim, numLayers, batchFirst, dropout,
// rememberStates), or nn::RNNOptions by name (PyTorch's order and bias; nn/RNNBase.h), bidirectional
// whatever it says.
// Everything else is RNNBase's (nn/RNNBase.h). Twin: cudnn::BLSTM.
#pragma once

#include "nn/RNNBase.h"

namespace nn {

class BLSTM : public RNNBase {
 public:
  BLSTM(int64_t inputDim, int64_t outputDim, int64_t numLayers = 1, bool batchFirst = false, double dropout = 0,
        bool rememberStates = false)
      : BLSTM(positional(inputDim, outputDim, numLayers, batchFirst, dropout)) {
    rememberStates_ = rememberStates;
  }
  explicit BLSTM(const RNNOptions& options) : RNNBase(kMode, alwaysBidirectional(options)) {}
  static constexpr bool kAlwaysBidirectional = true;
  static constexpr RNNMode kMode = RNNMode::LSTM;
  static constexpr std::string_view kTypeName = "nn.BLSTM";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config) { return fromConfigAs<BLSTM>(config); }
};

}  // namespace nn
