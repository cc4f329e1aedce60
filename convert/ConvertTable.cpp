// ConvertTable.cpp: the pairs, both directions, in one list (cudnn.torch's layer_list).
// A new twin is one line here.
#include "convert/ConvertTable.h"

#include "cudnn/modules.h"

namespace nn::detail {

namespace {

struct Tables {
  ConvertTable to_cudnn, to_nn;
  template <class Nn, class Cu>
  void module(const std::string& nn_name) {
    const std::string cu_name = "cudnn" + nn_name.substr(2);
    to_cudnn.modules[nn_name] = [](Module& m) -> ModulePtr { return std::make_shared<Cu>(std::move(dynamic_cast<Nn&>(m))); };
    to_nn.modules[cu_name] = [](Module& m) -> ModulePtr { return std::make_shared<Nn>(std::move(dynamic_cast<Nn&>(m))); };
  }
  template <class Nn, class Cu>
  void criterion(const std::string& nn_name) {
    const std::string cu_name = "cudnn" + nn_name.substr(2);
    to_cudnn.criteria[nn_name] = [](Criterion& c) -> CriterionPtr { return std::make_shared<Cu>(std::move(dynamic_cast<Nn&>(c))); };
    to_nn.criteria[cu_name] = [](Criterion& c) -> CriterionPtr { return std::make_shared<Nn>(std::move(dynamic_cast<Nn&>(c))); };
  }
};

const Tables& tables() {
  static const Tables t = [] {
    Tables t;
    // ---- modules (sorted) ----
    t.module<nn::BatchNormalization, cudnn::BatchNormalization>("nn.BatchNormalization");
    t.module<nn::BGRU, cudnn::BGRU>("nn.BGRU");
    t.module<nn::BLSTM, cudnn::BLSTM>("nn.BLSTM");
    t.module<nn::ClippedReLU, cudnn::ClippedReLU>("nn.ClippedReLU");
    t.module<nn::Concat, cudnn::Concat>("nn.Concat");
    t.module<nn::Dropout, cudnn::Dropout>("nn.Dropout");
    t.module<nn::ELU, cudnn::ELU>("nn.ELU");
    t.module<nn::GRU, cudnn::GRU>("nn.GRU");
    t.module<nn::Identity, cudnn::Identity>("nn.Identity");
    t.module<nn::Linear, cudnn::Linear>("nn.Linear");
    t.module<nn::LogSoftMax, cudnn::LogSoftMax>("nn.LogSoftMax");
    t.module<nn::LSTM, cudnn::LSTM>("nn.LSTM");
    t.module<nn::ReLU, cudnn::ReLU>("nn.ReLU");
    t.module<nn::RNNReLU, cudnn::RNNReLU>("nn.RNNReLU");
    t.module<nn::RNNTanh, cudnn::RNNTanh>("nn.RNNTanh");
    t.module<nn::Reshape, cudnn::Reshape>("nn.Reshape");
    t.module<nn::Residual, cudnn::Residual>("nn.Residual");
    t.module<nn::Select, cudnn::Select>("nn.Select");
    t.module<nn::Sigmoid, cudnn::Sigmoid>("nn.Sigmoid");
    t.module<nn::SoftMax, cudnn::SoftMax>("nn.SoftMax");
    t.module<nn::SpatialAveragePooling, cudnn::SpatialAveragePooling>("nn.SpatialAveragePooling");
    t.module<nn::SpatialBatchNormalization, cudnn::SpatialBatchNormalization>("nn.SpatialBatchNormalization");
    t.module<nn::SpatialConvolution, cudnn::SpatialConvolution>("nn.SpatialConvolution");
    t.module<nn::SpatialCrossMapLRN, cudnn::SpatialCrossMapLRN>("nn.SpatialCrossMapLRN");
    t.module<nn::SpatialDilatedConvolution, cudnn::SpatialDilatedConvolution>("nn.SpatialDilatedConvolution");
    t.module<nn::SpatialFullConvolution, cudnn::SpatialFullConvolution>("nn.SpatialFullConvolution");
    t.module<nn::SpatialLogSoftMax, cudnn::SpatialLogSoftMax>("nn.SpatialLogSoftMax");
    t.module<nn::SpatialMaxPooling, cudnn::SpatialMaxPooling>("nn.SpatialMaxPooling");
    t.module<nn::SpatialSoftMax, cudnn::SpatialSoftMax>("nn.SpatialSoftMax");
    t.module<nn::SpatialTransformer, cudnn::SpatialTransformer>("nn.SpatialTransformer");
    t.module<nn::Tanh, cudnn::Tanh>("nn.Tanh");
    t.module<nn::TemporalConvolution, cudnn::TemporalConvolution>("nn.TemporalConvolution");
    t.module<nn::View, cudnn::View>("nn.View");
    t.module<nn::VolumetricAveragePooling, cudnn::VolumetricAveragePooling>("nn.VolumetricAveragePooling");
    t.module<nn::VolumetricBatchNormalization, cudnn::VolumetricBatchNormalization>("nn.VolumetricBatchNormalization");
    t.module<nn::VolumetricConvolution, cudnn::VolumetricConvolution>("nn.VolumetricConvolution");
    t.module<nn::VolumetricFullConvolution, cudnn::VolumetricFullConvolution>("nn.VolumetricFullConvolution");
    t.module<nn::VolumetricLogSoftMax, cudnn::VolumetricLogSoftMax>("nn.VolumetricLogSoftMax");
    t.module<nn::VolumetricMaxPooling, cudnn::VolumetricMaxPooling>("nn.VolumetricMaxPooling");
    t.module<nn::VolumetricSoftMax, cudnn::VolumetricSoftMax>("nn.VolumetricSoftMax");
    // ---- criteria (sorted) ----
    t.criterion<nn::ClassNLLCriterion, cudnn::ClassNLLCriterion>("nn.ClassNLLCriterion");
    t.criterion<nn::CrossEntropyCriterion, cudnn::CrossEntropyCriterion>("nn.CrossEntropyCriterion");
    t.criterion<nn::MSECriterion, cudnn::MSECriterion>("nn.MSECriterion");
    t.criterion<nn::SpatialCrossEntropyCriterion, cudnn::SpatialCrossEntropyCriterion>("nn.SpatialCrossEntropyCriterion");
    t.criterion<nn::VolumetricCrossEntropyCriterion, cudnn::VolumetricCrossEntropyCriterion>("nn.VolumetricCrossEntropyCriterion");
    return t;
  }();
  return t;
}

}  // namespace

bool built_with_cudnn() { return true; }

const ConvertTable& table(Backend to) { return to == Backend::cudnn ? tables().to_cudnn : tables().to_nn; }

}  // namespace nn::detail
