// RNNReLU.cpp: the configuration reader; the rest is RNNBase's.
#include "nn/RNNReLU.h"

namespace nn {

ModulePtr RNNReLU::fromConfig(const tensor::Json& config) {
  const Options o = readOptions(config, "nn.RNNReLU");
  auto m = std::make_shared<RNNReLU>(o.inputDim, o.outputDim, o.numLayers, o.batchFirst, o.dropout,
                                     o.bidirectional);
  m->applyOptions(o);
  return m;
}

}  // namespace nn
