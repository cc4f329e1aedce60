// LSTM.cpp: the configuration reader; the rest is RNNBase's.
#include "nn/LSTM.h"

namespace nn {

ModulePtr LSTM::fromConfig(const tensor::Json& config) {
  const Options o = readOptions(config, "nn.LSTM");
  auto m =
      std::make_shared<LSTM>(o.inputDim, o.outputDim, o.numLayers, o.batchFirst, o.dropout, o.bidirectional);
  m->applyOptions(o);
  return m;
}

}  // namespace nn
