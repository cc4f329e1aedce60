// BLSTM.cpp: the configuration reader; the rest is RNNBase's.
#include "nn/BLSTM.h"

namespace nn {

ModulePtr BLSTM::fromConfig(const tensor::Json& config) {
  const Options o = readOptions(config, "nn.BLSTM", false);
  auto m = std::make_shared<BLSTM>(o.inputDim, o.outputDim, o.numLayers, o.batchFirst, o.dropout);
  m->applyOptions(o);
  return m;
}

}  // namespace nn
