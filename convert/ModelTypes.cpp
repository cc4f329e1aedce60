// ModelTypes.cpp: every nn module a model file can hold, type name -> X::fromConfig.
// A new module is one line here (sorted) plus its config()/fromConfig(); its cudnn twin
// needs nothing more (it loads through convert's table, see ModelFile.h).
#include "convert/ModelTypes.h"

#include "nn/BatchNormalization.h"
#include "nn/BGRU.h"
#include "nn/BLSTM.h"
#include "nn/ClippedReLU.h"
#include "nn/Concat.h"
#include "nn/Dropout.h"
#include "nn/ELU.h"
#include "nn/GRU.h"
#include "nn/Identity.h"
#include "nn/Linear.h"
#include "nn/LogSoftMax.h"
#include "nn/LSTM.h"
#include "nn/ReLU.h"
#include "nn/Reshape.h"
#include "nn/Residual.h"
#include "nn/RNNReLU.h"
#include "nn/RNNTanh.h"
#include "nn/Select.h"
#include "nn/Sequential.h"
#include "nn/Sigmoid.h"
#include "nn/SoftMax.h"
#include "nn/SpatialAveragePooling.h"
#include "nn/SpatialBatchNormalization.h"
#include "nn/SpatialConvolution.h"
#include "nn/SpatialCrossMapLRN.h"
#include "nn/SpatialDilatedConvolution.h"
#include "nn/SpatialFullConvolution.h"
#include "nn/SpatialLogSoftMax.h"
#include "nn/SpatialMaxPooling.h"
#include "nn/SpatialSoftMax.h"
#include "nn/SpatialTransformer.h"
#include "nn/Tanh.h"
#include "nn/TemporalConvolution.h"
#include "nn/View.h"
#include "nn/VolumetricAveragePooling.h"
#include "nn/VolumetricBatchNormalization.h"
#include "nn/VolumetricConvolution.h"
#include "nn/VolumetricFullConvolution.h"
#include "nn/VolumetricLogSoftMax.h"
#include "nn/VolumetricMaxPooling.h"
#include "nn/VolumetricSoftMax.h"

namespace nn::detail {

namespace {

template <class M>
ModelFactory leaf() {
  return [](const tensor::Json& config, std::vector<ModulePtr> children) -> ModulePtr {
    if (!children.empty()) {
      throw Error("expected no children (not a container), got " + std::to_string(children.size()));
    }
    return M::fromConfig(config);
  };
}

template <class M>
ModelFactory container() {
  return [](const tensor::Json& config, std::vector<ModulePtr> children) -> ModulePtr {
    return M::fromConfig(config, std::move(children));
  };
}

}  // namespace

const std::map<std::string, ModelFactory>& builtin_model_types() {
  static const std::map<std::string, ModelFactory> types = {
      // sorted, one per line
      {"nn.BatchNormalization", leaf<BatchNormalization>()},
      {"nn.BGRU", leaf<BGRU>()},
      {"nn.BLSTM", leaf<BLSTM>()},
      {"nn.ClippedReLU", leaf<ClippedReLU>()},
      {"nn.Concat", container<Concat>()},
      {"nn.Dropout", leaf<Dropout>()},
      {"nn.ELU", leaf<ELU>()},
      {"nn.GRU", leaf<GRU>()},
      {"nn.Identity", leaf<Identity>()},
      {"nn.Linear", leaf<Linear>()},
      {"nn.LogSoftMax", leaf<LogSoftMax>()},
      {"nn.LSTM", leaf<LSTM>()},
      {"nn.ReLU", leaf<ReLU>()},
      {"nn.Reshape", leaf<Reshape>()},
      {"nn.Residual", container<Residual>()},
      {"nn.RNNReLU", leaf<RNNReLU>()},
      {"nn.RNNTanh", leaf<RNNTanh>()},
      {"nn.Select", leaf<Select>()},
      {"nn.Sequential", container<Sequential>()},
      {"nn.Sigmoid", leaf<Sigmoid>()},
      {"nn.SoftMax", leaf<SoftMax>()},
      {"nn.SpatialAveragePooling", leaf<SpatialAveragePooling>()},
      {"nn.SpatialBatchNormalization", leaf<SpatialBatchNormalization>()},
      {"nn.SpatialConvolution", leaf<SpatialConvolution>()},
      {"nn.SpatialCrossMapLRN", leaf<SpatialCrossMapLRN>()},
      {"nn.SpatialDilatedConvolution", leaf<SpatialDilatedConvolution>()},
      {"nn.SpatialFullConvolution", leaf<SpatialFullConvolution>()},
      {"nn.SpatialLogSoftMax", leaf<SpatialLogSoftMax>()},
      {"nn.SpatialMaxPooling", leaf<SpatialMaxPooling>()},
      {"nn.SpatialSoftMax", leaf<SpatialSoftMax>()},
      {"nn.SpatialTransformer", container<SpatialTransformer>()},
      {"nn.Tanh", leaf<Tanh>()},
      {"nn.TemporalConvolution", leaf<TemporalConvolution>()},
      {"nn.View", leaf<View>()},
      {"nn.VolumetricAveragePooling", leaf<VolumetricAveragePooling>()},
      {"nn.VolumetricBatchNormalization", leaf<VolumetricBatchNormalization>()},
      {"nn.VolumetricConvolution", leaf<VolumetricConvolution>()},
      {"nn.VolumetricFullConvolution", leaf<VolumetricFullConvolution>()},
      {"nn.VolumetricLogSoftMax", leaf<VolumetricLogSoftMax>()},
      {"nn.VolumetricMaxPooling", leaf<VolumetricMaxPooling>()},
      {"nn.VolumetricSoftMax", leaf<VolumetricSoftMax>()},
  };
  return types;
}

}  // namespace nn::detail
