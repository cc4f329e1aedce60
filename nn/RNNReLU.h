// RNNReLU.h: an Elman RNN, h_t = relu(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh).
// Constructors and everything else are RNNModule's and RNNBase's (nn/RNNBase.h). Twin: cudnn::RNNReLU.
#pragma once

#include "nn/RNNBase.h"

namespace nn {

class RNNReLU : public RNNModule<RNNReLU, RNNMode::ReLU> {
 public:
  using RNNModule::RNNModule;
  static constexpr std::string_view kTypeName = "nn.RNNReLU";
};

}  // namespace nn
