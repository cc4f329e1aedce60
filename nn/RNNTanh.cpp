// RNNTanh.cpp: the configuration reader; the rest is RNNBase's.
#include "nn/RNNTanh.h"

namespace nn {

ModulePtr RNNTanh::fromConfig(const tensor::Json& config) {
  const Options o = readOptions(config, "nn.RNNTanh");
  auto m = std::make_shared<RNNTanh>(o.inputDim, o.outputDim, o.numLayers, o.batchFirst, o.dropout,
                                     o.bidirectional);
  m->applyOptions(o);
  return m;
}

}  // namespace nn
