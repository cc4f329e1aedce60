// BGRU.h: the bidirectional GRU; output [.. x 2*outputDim], directions concatenated as cuDNN does.
// Constructors, bidirectional whatever the options say, and everything else are RNNModule's and
// RNNBase's (nn/RNNBase.h). Twin: cudnn::BGRU.
#pragma once

#include "nn/RNNBase.h"

namespace nn {

class BGRU : public RNNModule<BGRU, RNNMode::GRU, true> {
 public:
  using RNNModule::RNNModule;
  static constexpr std::string_view kTypeName = "nn.BGRU";
};

}  // namespace nn
