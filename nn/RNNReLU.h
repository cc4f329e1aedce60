// RNNReLU.h: an Elman RNN, h_t = relu(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh).
// Constructor as cudnn.torch's: (inputDim, outputDim, numLayers, batchFirst, dropout, bidirectional).
// Everything else is RNNBase's (nn/RNNBase.h). Twin: cudnn::RNNReLU.
#pragma once

#include "nn/RNNBase.h"

namespace nn {

class RNNReLU : public RNNBase {
 public:
  RNNReLU(int64_t inputDim, int64_t outputDim, int64_t numLayers = 1, bool batchFirst = false, double dropout = 0,
          bool bidirectional = false)
      : RNNBase(RNNMode::ReLU, inputDim, outputDim, numLayers, batchFirst, dropout, bidirectional) {}
  static constexpr std::string_view kTypeName = "nn.RNNReLU";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config) { return fromConfigAs<RNNReLU>(config); }
};

}  // namespace nn
