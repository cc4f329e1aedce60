// ModuleTable.cpp: the rows of tests/support/ModuleTable.h, sorted by type.
#include "tests/support/ModuleTable.h"

#include <initializer_list>
#include <memory>
#include <set>

#include "nn/Abs.h"
#include "nn/AddConstant.h"
#include "nn/BGRU.h"
#include "nn/BLSTM.h"
#include "nn/BatchNormalization.h"
#include "nn/ClippedReLU.h"
#include "nn/Concat.h"
#include "nn/Contiguous.h"
#include "nn/DecoderBlock.h"
#include "nn/DecoderLM.h"
#include "nn/Dropout.h"
#include "nn/ELU.h"
#include "nn/Embedding.h"
#include "nn/Exp.h"
#include "nn/FusedBatchNormalization.h"
#include "nn/FusedConvolution.h"
#include "nn/FusedResidual.h"
#include "nn/GELU.h"
#include "nn/GRU.h"
#include "nn/GroupNorm.h"
#include "nn/Identity.h"
#include "nn/InstanceNorm.h"
#include "nn/LSTM.h"
#include "nn/LayerNorm.h"
#include "nn/LeakyReLU.h"
#include "nn/Linear.h"
#include "nn/Log.h"
#include "nn/LogSoftMax.h"
#include "nn/Max.h"
#include "nn/Mean.h"
#include "nn/Min.h"
#include "nn/MulConstant.h"
#include "nn/MultiheadAttention.h"
#include "nn/Narrow.h"
#include "nn/Normalize.h"
#include "nn/PReLU.h"
#include "nn/Padding.h"
#include "nn/Power.h"
#include "nn/RNNBase.h"
#include "nn/RNNReLU.h"
#include "nn/RNNTanh.h"
#include "nn/ReLU.h"
#include "nn/Reshape.h"
#include "nn/RMSNorm.h"
#include "nn/Residual.h"
#include "nn/RotaryEmbedding.h"
#include "nn/Select.h"
#include "nn/Sequential.h"
#include "nn/SiLU.h"
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
#include "nn/SpatialReflectionPadding.h"
#include "nn/SpatialReplicationPadding.h"
#include "nn/SpatialSoftMax.h"
#include "nn/SpatialTransformer.h"
#include "nn/SpatialUpSamplingBilinear.h"
#include "nn/SpatialUpSamplingNearest.h"
#include "nn/SpatialZeroPadding.h"
#include "nn/Sqrt.h"
#include "nn/Square.h"
#include "nn/Squeeze.h"
#include "nn/Sum.h"
#include "nn/SwiGLU.h"
#include "nn/Tanh.h"
#include "nn/TemporalConvolution.h"
#include "nn/TransformerEncoderLayer.h"
#include "nn/Transpose.h"
#include "nn/Unsqueeze.h"
#include "nn/View.h"
#include "nn/VolumetricAveragePooling.h"
#include "nn/VolumetricBatchNormalization.h"
#include "nn/VolumetricConvolution.h"
#include "nn/VolumetricFullConvolution.h"
#include "nn/VolumetricLogSoftMax.h"
#include "nn/VolumetricMaxPooling.h"
#include "nn/VolumetricSoftMax.h"

namespace testing {

namespace {

template <class M, class... A>
std::function<nn::ModulePtr()> make(A... args) {
  return [=] { return nn::ModulePtr(std::make_shared<M>(args...)); };
}

nn::ModulePtr sequential(std::initializer_list<nn::ModulePtr> children) {
  return std::make_shared<nn::Sequential>(children);
}

// a tiny decoder (vocab 5, E 8, 2 layers, 2 heads; Llama with 1 kv head), untied
nn::DecoderLMConfig tiny_decoder(nn::DecoderKind kind) {
  nn::DecoderLMConfig c;
  c.kind = kind;
  c.vocabSize = 5;
  c.nPositions = 8;
  c.nEmbd = 8;
  c.nLayer = 2;
  c.nHead = 2;
  c.nKvHead = kind == nn::DecoderKind::Llama ? 1 : 0;
  c.tied = false;
  return c;
}

// [N x 2 x 3 x 3] -> [N x 6]: the spatial transformer's localisation network
nn::ModulePtr localisation() {
  auto view = std::make_shared<nn::View>(-1);
  view->setNumInputDims(3);
  return sequential({view, std::make_shared<nn::Linear>(2 * 3 * 3, 6)});
}

}  // namespace

const std::vector<ModuleSpec>& module_table() {
  using nn::ModulePtr;
  // one row per type, laid out by hand
  // clang-format off
  static const std::vector<ModuleSpec> rows = {
      // type, make, input, batchDim, planeDim, wrongRank, stochastic, anyDtype, childSeesOtherShape, nanEverywhere,
      // backwardInEvaluation
      {"Abs", make<nn::Abs>(), {2, 3, 4}},
      {"AddConstant", make<nn::AddConstant>(0.5, true), {2, 3, 4}},
      {"BatchNormalization", make<nn::BatchNormalization>(3), {2, 3}, 0, 1, {2, 3, 4, 5}},
      {"BGRU", make<nn::BGRU>(3, 4), {5, 2, 3}, 1, 2, {2, 3, 4, 5}, false, false, false, true, false},
      {"BLSTM", make<nn::BLSTM>(3, 4), {5, 2, 3}, 1, 2, {2, 3, 4, 5}, false, false, false, true, false},
      {"ClippedReLU", make<nn::ClippedReLU>(0.5), {2, 3, 4}},
      {"Concat",
       [] {
         return ModulePtr(std::make_shared<nn::Concat>(
             1, std::initializer_list<ModulePtr>{std::make_shared<nn::Linear>(3, 2), std::make_shared<nn::Linear>(3, 4)}));
       },
       {2, 3}, 0, 1, {2, 3, 4}},
      {"Contiguous", make<nn::Contiguous>(tensor::MemoryFormat::ChannelsLast), {2, 3, 4, 4}, 0, -1, {2, 3}, false, true},
      {"DecoderBlock", [] { return nn::make_llama(tiny_decoder(nn::DecoderKind::Llama))->blocks().get(0); },
       {2, 3, 8}, 0, 2, {3, 8}},
      {"DecoderLM", [] { return ModulePtr(nn::make_gpt2(tiny_decoder(nn::DecoderKind::GPT2))); }, {2, 4}, 0, -1, {},
       false, false, false, true, true, true},
      {"Dropout", make<nn::Dropout>(0.5), {2, 3, 4}, 0, -1, {}, true},
      {"ELU", make<nn::ELU>(0.7), {2, 3, 4}},
      {"Embedding", make<nn::Embedding>(5, 3), {2, 4}, 0, -1, {}, false, false, false, true, true, true},
      {"Exp", make<nn::Exp>(), {2, 3, 4}},
      {"FusedBatchNormalization",
       [] {
         return ModulePtr(std::make_shared<nn::FusedBatchNormalization>(
             std::make_shared<nn::SpatialBatchNormalization>(3), std::make_shared<nn::ReLU>()));
       },
       {2, 3, 4, 4}, 0, 1, {2, 3}},
      {"FusedConvolution",
       [] {
         return ModulePtr(std::make_shared<nn::FusedConvolution>(std::make_shared<nn::SpatialConvolution>(3, 4, 3, 3),
                                                                 std::make_shared<nn::ReLU>()));
       },
       {2, 3, 5, 5}, 0, 1, {2, 3}},
      {"FusedResidual",
       [] {
         // no bias before the batch norm: its gradient is zero up to rounding
         auto conv = std::make_shared<nn::SpatialConvolution>(3, 3, 1, 1);
         conv->noBias();
         auto block = std::make_shared<nn::Sequential>(
             std::initializer_list<ModulePtr>{conv, std::make_shared<nn::SpatialBatchNormalization>(3)});
         return ModulePtr(
             std::make_shared<nn::FusedResidual>(std::make_shared<nn::Residual>(block), std::make_shared<nn::ReLU>()));
       },
       {2, 3, 4, 4}, 0, 1, {2, 3}},
      {"GELU", make<nn::GELU>("tanh"), {2, 3, 4}},
      {"GRU", make<nn::GRU>(3, 4), {5, 2, 3}, 1, 2, {2, 3, 4, 5}, false, false, false, true, false},
      {"GroupNorm", make<nn::GroupNorm>(2, 4), {2, 4, 3}, 0, 1, {4}},
      {"Identity", make<nn::Identity>(), {2, 3, 4}, 0, -1, {}, false, true},
      {"InstanceNorm", make<nn::InstanceNorm>(3, 1e-5, 0.1, true, true), {2, 3, 4}, 0, 1, {2, 3}},
      {"LayerNorm", make<nn::LayerNorm>(tensor::Shape{3, 4}), {2, 3, 4}, 0, 2, {3}},
      {"LeakyReLU", make<nn::LeakyReLU>(0.2), {2, 3, 4}},
      {"Linear", make<nn::Linear>(3, 4), {2, 3}, 0, 1, {}},  // [* x 3]: every rank >= 1
      {"Log", make<nn::Log>(), {2, 3, 4}, 0, -1, {}, false, false, false, true, true, false, 0.1},
      {"LogSoftMax", make<nn::LogSoftMax>(), {2, 5}, 0, -1, {2, 3, 4, 5, 6}},
      {"LSTM", make<nn::LSTM>(3, 4), {5, 2, 3}, 1, 2, {2, 3, 4, 5}, false, false, false, true, false},
      {"Max", make<nn::Max>(1), {2, 3, 4}},
      {"Mean", make<nn::Mean>(-1), {2, 3, 4}},
      {"Min", make<nn::Min>(2), {2, 3, 4}},
      {"MulConstant", make<nn::MulConstant>(-2.0), {2, 3, 4}},
      {"MultiheadAttention", make<nn::MultiheadAttention>(4, 2), {3, 2, 4}, 1, 2, {3, 4}},
      {"Narrow", make<nn::Narrow>(1, 0, 2), {2, 3, 4}, 0, -1, {3}, false, true},
      {"Normalize", make<nn::Normalize>(2), {2, 5}, 0, -1, {2, 3, 4}},
      // fills constant padding: those outputs read no input
      {"Padding", make<nn::Padding>(1, 2), {2, 3, 4}, 0, -1, {3}, false, true, false, false},
      {"Power", make<nn::Power>(3), {2, 3, 4}},
      {"PReLU", make<nn::PReLU>(3), {2, 3, 4}, 0, 1},
      {"ReLU", make<nn::ReLU>(), {2, 3, 4}},
      {"Reshape", make<nn::Reshape>(3, 2), {2, 6}, 0, 1, {}, false, true},
      {"Residual", [] { return ModulePtr(std::make_shared<nn::Residual>(std::make_shared<nn::Linear>(3, 3))); },
       {2, 3}, 0, 1, {2, 3, 4}},
      {"RMSNorm", make<nn::RMSNorm>(tensor::Shape{3, 4}, 1e-5), {2, 3, 4}, 0, 2, {3}},
      {"RNNReLU", make<nn::RNNReLU>(3, 4), {5, 2, 3}, 1, 2, {2, 3, 4, 5}, false, false, false, true, false},
      {"RNNTanh", make<nn::RNNTanh>(3, 4), {5, 2, 3}, 1, 2, {2, 3, 4, 5}, false, false, false, true, false},
      {"RotaryEmbedding", make<nn::RotaryEmbedding>(), {2, 3, 4, 6}, 0, 3, {2, 3}},  // D + 1: odd
      {"Select", make<nn::Select>(1, -1), {2, 3, 4}, 0, -1, {3}, false, true},
      {"Sequential",
       [] { return sequential({std::make_shared<nn::Linear>(3, 4), std::make_shared<nn::Tanh>()}); },
       {2, 3}, 0, 1, {2, 3, 4}},
      {"Sigmoid", make<nn::Sigmoid>(), {2, 3, 4}},
      {"SiLU", make<nn::SiLU>(), {2, 3, 4}},
      {"SoftMax", make<nn::SoftMax>(), {2, 5}, 0, -1, {2, 3, 4, 5, 6}},
      {"SpatialAveragePooling", make<nn::SpatialAveragePooling>(2, 2, 2, 2), {2, 3, 4, 4}, 0, -1, {2, 3}},
      {"SpatialBatchNormalization", make<nn::SpatialBatchNormalization>(3), {2, 3, 4, 4}, 0, 1, {2, 3}},
      {"SpatialConvolution", make<nn::SpatialConvolution>(3, 4, 3, 3), {2, 3, 5, 5}, 0, 1, {2, 3}},
      {"SpatialCrossMapLRN", make<nn::SpatialCrossMapLRN>(3), {2, 3, 4, 4}, 0, -1, {2, 3}},
      {"SpatialDilatedConvolution", make<nn::SpatialDilatedConvolution>(3, 4, 3, 3, 1, 1, 0, 0, 2, 2), {2, 3, 6, 6},
       0, 1, {2, 3}},
      {"SpatialFullConvolution", make<nn::SpatialFullConvolution>(3, 4, 3, 3), {2, 3, 4, 4}, 0, 1, {2, 3}},
      {"SpatialLogSoftMax", make<nn::SpatialLogSoftMax>(), {2, 3, 4, 4}, 0, -1, {2, 3}},
      {"SpatialMaxPooling", make<nn::SpatialMaxPooling>(2, 2), {2, 3, 4, 4}, 0, -1, {2, 3}},
      {"SpatialReflectionPadding", make<nn::SpatialReflectionPadding>(1, 2, 1, 0), {2, 3, 4, 4}, 0, -1, {2, 3}},
      {"SpatialReplicationPadding", make<nn::SpatialReplicationPadding>(2, 1, 0, 1), {2, 3, 4, 4}, 0, -1, {2, 3}},
      {"SpatialSoftMax", make<nn::SpatialSoftMax>(), {2, 3, 4, 4}, 0, -1, {2, 3}},
      {"SpatialTransformer",
       [] { return ModulePtr(std::make_shared<nn::SpatialTransformer>(localisation(), 4, 4, 2)); },
       {2, 2, 3, 3}, 0, 1, {2, 3}},
      {"SpatialUpSamplingBilinear", make<nn::SpatialUpSamplingBilinear>(int64_t{2}, false), {2, 3, 3, 4}, 0, -1,
       {2, 3}},
      {"SpatialUpSamplingNearest", make<nn::SpatialUpSamplingNearest>(2), {2, 3, 3, 4}, 0, -1, {2, 3}},
      // zeros in the border: those outputs read no input
      {"SpatialZeroPadding", make<nn::SpatialZeroPadding>(1, -1, 2, 0), {2, 3, 4, 4}, 0, -1, {2, 3}, false, false, false,
       false},
      {"Sqrt", make<nn::Sqrt>(), {2, 3, 4}, 0, -1, {}, false, false, false, true, true, false, 0.1},
      {"Square", make<nn::Square>(), {2, 3, 4}},
      {"Squeeze", make<nn::Squeeze>(2), {2, 3, 1, 4}, 0, -1, {3}, false, true},
      {"Sum", make<nn::Sum>(1, true), {2, 3, 4}},
      {"SwiGLU", make<nn::SwiGLU>(3, 5, true), {2, 3}, 0, 1, {}},  // [* x 3]: every rank >= 1
      {"Tanh", make<nn::Tanh>(), {2, 3, 4}},
      {"TemporalConvolution", make<nn::TemporalConvolution>(3, 4, 2), {2, 5, 3}, 0, 2, {2, 3, 4, 5}},
      {"TransformerEncoderLayer", make<nn::TransformerEncoderLayer>(4, 2, 6, 0.1), {3, 2, 4}, 1, 2, {3, 4}, true},
      {"Transpose", make<nn::Transpose>(nn::Transpose::Pairs{{1, 2}}), {2, 3, 4}, 0, -1, {3}, false, true},
      {"Unsqueeze", make<nn::Unsqueeze>(1), {2, 3}, 0, -1, {}, false, true},
      {"View", [] { return ModulePtr(std::make_shared<nn::View>(6)); }, {2, 2, 3}, 0, 2, {}, false, true},
      {"VolumetricAveragePooling", make<nn::VolumetricAveragePooling>(2, 2, 2), {2, 3, 4, 4, 4}, 0, -1, {2, 3}},
      {"VolumetricBatchNormalization", make<nn::VolumetricBatchNormalization>(3), {2, 3, 2, 3, 3}, 0, 1, {2, 3}},
      {"VolumetricConvolution", make<nn::VolumetricConvolution>(3, 4, 2, 2, 2), {2, 3, 3, 4, 4}, 0, 1, {2, 3}},
      {"VolumetricFullConvolution", make<nn::VolumetricFullConvolution>(3, 4, 2, 2, 2), {2, 3, 3, 3, 3}, 0, 1, {2, 3}},
      {"VolumetricLogSoftMax", make<nn::VolumetricLogSoftMax>(), {2, 3, 2, 3, 3}, 0, -1, {2, 3}},
      {"VolumetricMaxPooling", make<nn::VolumetricMaxPooling>(2, 2, 2), {2, 3, 4, 4, 4}, 0, -1, {2, 3}},
      {"VolumetricSoftMax", make<nn::VolumetricSoftMax>(), {2, 3, 2, 3, 3}, 0, -1, {2, 3}},
  };
  // clang-format on
  return rows;
}

bool is_table_module_type(const std::string& type) {
  static const std::set<std::string> types{
      "CAddTable",        "CDivTable",     "CMulTable",   "ConcatTable", "CosineDistance",
      "CSubTable",        "FlattenTable",  "Graph",       "JoinTable",   "NarrowTable",
      "PairwiseDistance", "ParallelTable", "SelectTable", "SplitTable",  "TransformerDecoderLayer"};
  return types.count(type) > 0;
}

const ModuleSpec* find_spec(const std::string& type) {
  for (const ModuleSpec& s : module_table())
    if (s.type == type) return &s;
  return nullptr;
}

std::vector<ParameterSlot> parameter_slots(nn::Module& m) {
  std::vector<ParameterSlot> out;
  auto add = [&](const char* name, tensor::Tensor& v, tensor::Tensor& g) {
    if (v.defined()) out.push_back({m.type_name(), name, &v, &g});
  };
  if (auto* l = dynamic_cast<nn::Linear*>(&m)) {
    add("weight", l->weight, l->gradWeight);
    add("bias", l->bias, l->gradBias);
  } else if (auto* c = dynamic_cast<nn::ConvolutionBase*>(&m)) {
    add("weight", c->weight, c->gradWeight);
    add("bias", c->bias, c->gradBias);
  } else if (auto* t = dynamic_cast<nn::TemporalConvolution*>(&m)) {
    add("weight", t->weight, t->gradWeight);
    add("bias", t->bias, t->gradBias);
  } else if (auto* b = dynamic_cast<nn::BatchNormalization*>(&m)) {
    add("weight", b->weight, b->gradWeight);
    add("bias", b->bias, b->gradBias);
  } else if (auto* e = dynamic_cast<nn::Embedding*>(&m)) {
    add("weight", e->weight, e->gradWeight);
  } else if (auto* g = dynamic_cast<nn::GroupNormBase*>(&m)) {
    add("weight", g->weight, g->gradWeight);
    add("bias", g->bias, g->gradBias);
  } else if (auto* n = dynamic_cast<nn::LayerNorm*>(&m)) {
    add("weight", n->weight, n->gradWeight);
    add("bias", n->bias, n->gradBias);
  } else if (auto* rn = dynamic_cast<nn::RMSNorm*>(&m)) {
    add("weight", rn->weight, rn->gradWeight);
  } else if (auto* sw = dynamic_cast<nn::SwiGLU*>(&m)) {
    add("gate_proj.weight", sw->gateWeight, sw->gradGateWeight);
    add("gate_proj.bias", sw->gateBias, sw->gradGateBias);
    add("up_proj.weight", sw->upWeight, sw->gradUpWeight);
    add("up_proj.bias", sw->upBias, sw->gradUpBias);
    add("down_proj.weight", sw->downWeight, sw->gradDownWeight);
    add("down_proj.bias", sw->downBias, sw->gradDownBias);
  } else if (auto* a = dynamic_cast<nn::MultiheadAttention*>(&m)) {
    add("in_proj_weight", a->inProjWeight, a->gradInProjWeight);
    add("in_proj_bias", a->inProjBias, a->gradInProjBias);
    add("out_proj.weight", a->outProjWeight, a->gradOutProjWeight);
    add("out_proj.bias", a->outProjBias, a->gradOutProjBias);
  } else if (auto* pr = dynamic_cast<nn::PReLU*>(&m)) {
    add("weight", pr->weight, pr->gradWeight);
  } else if (auto* r = dynamic_cast<nn::RNNBase*>(&m)) {
    for (nn::RNNParameter& p : r->params) out.push_back({m.type_name(), p.name, &p.value, &p.grad});
  }
  if (auto* kids = m.children()) {
    for (const nn::ModulePtr& k : *kids) {
      for (ParameterSlot& s : parameter_slots(*k)) out.push_back(std::move(s));
    }
  }
  return out;
}

tensor::Shape with_size(tensor::Shape shape, int64_t dim, int64_t n) {
  shape.at(static_cast<size_t>(dim)) = n;
  return shape;
}

}  // namespace testing
