// GRU.cpp: the configuration reader; the rest is RNNBase's.
#include "nn/GRU.h"

namespace nn {

ModulePtr GRU::fromConfig(const tensor::Json& config) {
  const Options o = readOptions(config, "nn.GRU");
  auto m =
      std::make_shared<GRU>(o.inputDim, o.outputDim, o.numLayers, o.batchFirst, o.dropout, o.bidirectional);
  m->applyOptions(o);
  return m;
}

}  // namespace nn
