// GRU.h: gated recurrent unit; gates r, z, n with n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).
// Constructors: cudnn.torch's positional (inputDim, outputDim, numLayers, batchFirst, dropout,
// rememberStates), or nn::RNNOptions by name (PyTorch's order and bias; nn/RNNBase.h).
// Everything else is RNNBase's (nn/RNNBase.h). Twin: cudnn::GRU.
#pragma once

#include "nn/RNNBase.h"

namespace nn {

class GRU : public RNNBase {
 public:
  GRU(int64_t inputDim, int64_t outputDim, int64_t numLayers = 1, bool batchFirst = false, double dropout = 0,
      bool rememberStates = false)
      : GRU(positional(inputDim, outputDim, numLayers, batchFirst, dropout)) {
    rememberStates_ = rememberStates;
  }
  explicit GRU(const RNNOptions& options) : RNNBase(kMode, options) {}
  static constexpr RNNMode kMode = RNNMode::GRU;
  static constexpr std::string_view kTypeName = "nn.GRU";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config) { return fromConfigAs<GRU>(config); }
};

}  // namespace nn
