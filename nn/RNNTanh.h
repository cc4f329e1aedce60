// RNNTanh.h: an Elman RNN, h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh).
// Constructors and everything else are RNNModule's and RNNBase's (nn/RNNBase.h). Twin: cudnn::RNNTanh.
#pragma once

#include "nn/RNNBase.h"

namespace nn {

class RNNTanh : public RNNModule<RNNTanh, RNNMode::Tanh> {
 public:
  using RNNModule::RNNModule;
  static constexpr std::string_view kTypeName = "nn.RNNTanh";
};

}  // namespace nn
