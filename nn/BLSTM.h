// BLSTM.h: the bidirectional LSTM; output [.. x 2*outputDim], directions concatenated as cuDNN does.
// Constructor as cudnn.torch's: (inputDim, outputDim, numLayers, batchFirst, dropout).
// Everything else is RNNBase's (nn/RNNBase.h). Twin: cudnn::BLSTM.
#pragma once

#include "nn/RNNBase.h"

namespace nn {

class BLSTM : public RNNBase {
 public:
  BLSTM(int64_t inputDim, int64_t outputDim, int64_t numLayers = 1, bool batchFirst = false, double dropout = 0)
      : RNNBase(RNNMode::LSTM, inputDim, outputDim, numLayers, batchFirst, dropout, true) {}
  static constexpr std::string_view kTypeName = "nn.BLSTM";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config) { return fromConfigAs<BLSTM>(config); }
};

}  // namespace nn
