// GRU.h: gated recurrent unit; gates r, z, n with n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).
// Constructors and everything else are RNNModule's and RNNBase's (nn/RNNBase.h). Twin: cudnn::GRU.
#pragma once

#include "nn/RNNBase.h"

namespace nn {

class GRU : public RNNModule<GRU, RNNMode::GRU> {
 public:
  using RNNModule::RNNModule;
  static constexpr std::string_view kTypeName = "nn.GRU";
};

}  // namespace nn
