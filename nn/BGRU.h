// BGRU.h: the bidirectional GRU; output [.. x 2*outputDim], directions concatenated as cuDNN does.
// Constructor as cudnn.torch's: (inputDim, outputDim, numLayers, batchFirst, dropout).
// Everything else is RNNBase's (nn/RNNBase.h). Twin: cudnn::BGRU.
#pragma once

#include "nn/RNNBase.h"

namespace nn {

class BGRU : public RNNBase {
 public:
  BGRU(int64_t inputDim, int64_t outputDim, int64_t numLayers = 1, bool batchFirst = false, double dropout = 0)
      : RNNBase(RNNMode::GRU, inputDim, outputDim, numLayers, batchFirst, dropout, true) {}
  static constexpr std::string_view kTypeName = "nn.BGRU";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config) { return fromConfigAs<BGRU>(config); }
};

}  // namespace nn
