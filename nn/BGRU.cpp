// BGRU.cpp: the configuration reader; the rest is RNNBase's.
#include "nn/BGRU.h"

namespace nn {

ModulePtr BGRU::fromConfig(const tensor::Json& config) {
  const Options o = readOptions(config, "nn.BGRU", false);
  auto m = std::make_shared<BGRU>(o.inputDim, o.outputDim, o.numLayers, o.batchFirst, o.dropout);
  m->applyOptions(o);
  return m;
}

}  // namespace nn
