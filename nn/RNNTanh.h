// RNNTanh.h: an Elman RNN, h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh).
// Constructors: cudnn.torch's positional (inputDim, outputDim, numLayers, batchFirst, dropout,
// rememberStates), or nn::RNNOptions by name (PyTorch's order and bias; nn/RNNBase.h).
// Everything else is RNNBase's (nn/RNNBase.h). Twin: cudnn::RNNTanh.
#pragma once

#include "nn/RNNBase.h"

namespace nn {

class RNNTanh : public RNNBase {
 public:
  RNNTanh(int64_t inputDim, int64_t outputDim, int64_t numLayers = 1, bool batchFirst = false, double dropout = 0,
          bool rememberStates = false)
      : RNNTanh(positional(inputDim, outputDim, numLayers, batchFirst, dropout)) {
    rememberStates_ = rememberStates;
  }
  explicit RNNTanh(const RNNOptions& options) : RNNBase(kMode, options) {}
  static constexpr RNNMode kMode = RNNMode::Tanh;
  static constexpr std::string_view kTypeName = "nn.RNNTanh";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config) { return fromConfigAs<RNNTanh>(config); }
};

}  // namespace nn
