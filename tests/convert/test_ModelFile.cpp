// test_ModelFile.cpp: model files (save_model / load_model, save_weights / load_weights):
// every module type round-trips with non-default options; nested networks keep their modes
// and running statistics; mismatches and malformed files get errors that say what is wrong;
// a hand-written cudnn model loads without a GPU; PyTorch's weights give PyTorch's outputs.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>

#include "convert/Convert.h"
#include "convert/ModelFile.h"
#include "nn/Abs.h"
#include "nn/AddConstant.h"
#include "nn/BGRU.h"
#include "nn/BLSTM.h"
#include "nn/BatchNormalization.h"
#include "nn/CAddTable.h"
#include "nn/CDivTable.h"
#include "nn/CMulTable.h"
#include "nn/CSubTable.h"
#include "nn/ClippedReLU.h"
#include "nn/Concat.h"
#include "nn/ConcatTable.h"
#include "nn/Contiguous.h"
#include "nn/CosineDistance.h"
#include "nn/DecoderBlock.h"
#include "nn/DecoderLM.h"
#include "nn/Dropout.h"
#include "nn/ELU.h"
#include "nn/Embedding.h"
#include "nn/Exp.h"
#include "nn/FlattenTable.h"
#include "nn/FusedBatchNormalization.h"
#include "nn/FusedConvolution.h"
#include "nn/FusedResidual.h"
#include "nn/GELU.h"
#include "nn/GRU.h"
#include "nn/Graph.h"
#include "nn/GroupNorm.h"
#include "nn/Identity.h"
#include "nn/InstanceNorm.h"
#include "nn/JoinTable.h"
#include "nn/LSTM.h"
#include "nn/LayerNorm.h"
#include "nn/LeakyReLU.h"
#include "nn/Linear.h"
#include "nn/Log.h"
#include "nn/LogSoftMax.h"
#include "nn/Max.h"
#include "nn/Mean.h"
#include "nn/Min.h"
#include "nn/ModuleConfig.h"
#include "nn/MulConstant.h"
#include "nn/MultiheadAttention.h"
#include "nn/Narrow.h"
#include "nn/NarrowTable.h"
#include "nn/Normalize.h"
#include "nn/PReLU.h"
#include "nn/Padding.h"
#include "nn/PairwiseDistance.h"
#include "nn/ParallelTable.h"
#include "nn/Power.h"
#include "nn/RNNReLU.h"
#include "nn/RNNTanh.h"
#include "nn/ReLU.h"
#include "nn/Reshape.h"
#include "nn/RMSNorm.h"
#include "nn/Residual.h"
#include "nn/RotaryEmbedding.h"
#include "nn/Select.h"
#include "nn/SelectTable.h"
#include "nn/Sequential.h"
#include "nn/SiLU.h"
#include "nn/SwiGLU.h"
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
#include "nn/SplitTable.h"
#include "nn/Sqrt.h"
#include "nn/Square.h"
#include "nn/Squeeze.h"
#include "nn/Sum.h"
#include "nn/Tanh.h"
#include "nn/TemporalConvolution.h"
#include "nn/TransformerDecoderLayer.h"
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
#include "tensor/Safetensors.h"

using namespace tensor;
using nn::ModulePtr;

namespace {

namespace fs = std::filesystem;

// A fresh directory per test case, removed afterwards.
struct TempDir {
  fs::path dir;
  TempDir() {
    static int counter = 0;
    dir = fs::temp_directory_path() /
          ("cudnn_nn_test_ModelFile_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
};

void write_file(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool identical(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() && a.to_vector<double>() == b.to_vector<double>();
}

void expect_same_state(nn::Module& a, nn::Module& b) {
  const auto sa = a.stateDict(), sb = b.stateDict();
  REQUIRE(sa.size() == sb.size());
  for (const auto& [name, t] : sa) {
    INFO("state " << name);
    REQUIRE(sb.count(name));
    CHECK(identical(t, sb.at(name)));
  }
}

// Saves `m`, loads it back and expects the same type, printing, options, mode, state, and the
// same forward and backward results bit for bit (both reseeded, for Dropout).
ModulePtr expect_roundtrip(const ModulePtr& m, const Tensor& input) {
  TempDir tmp;
  const std::string path = tmp / "model";
  nn::save_model(*m, path);
  ModulePtr back = nn::load_model(path);
  REQUIRE(back);
  CHECK(back->type_name() == m->type_name());
  CHECK(back->str() == m->str());
  CHECK(back->config().dump() == m->config().dump());
  CHECK(back->isTraining() == m->isTraining());
  expect_same_state(*m, *back);

  Generator gen(99);
  Tensor xa = input.clone(), xb = input.clone();  // in-place modules overwrite their input
  manual_seed(7);
  const Tensor ya = m->forward(xa).clone();
  manual_seed(7);
  const Tensor yb = back->forward(xb).clone();
  CHECK(identical(ya, yb));
  CHECK(identical(xa, xb));  // in place on both or on neither
  const Tensor g = uniform(ya.sizes(), -1, 1, gen, ya.dtype());
  m->zeroGradParameters();
  back->zeroGradParameters();
  const auto copy = [](const Tensor& t) { return t.defined() ? t.clone() : Tensor(); };  // Embedding: none
  const Tensor ga = copy(m->backward(xa, g.clone()));
  const Tensor gb = copy(back->backward(xb, g.clone()));
  CHECK(identical(ga, gb));
  const auto pa = m->namedGradParameters(), pb = back->namedGradParameters();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    INFO("gradient " << pa[i].first);
    CHECK(pa[i].first == pb[i].first);
    CHECK(identical(pa[i].second, pb[i].second));
  }
  expect_same_state(*m, *back);  // running statistics updated alike (momentum)
  return back;
}

template <class M>
std::shared_ptr<M> as(const ModulePtr& m) {
  auto p = std::dynamic_pointer_cast<M>(m);
  REQUIRE(p);
  return p;
}

// Gives a module's parameters and buffers values no fresh module has.
void scramble(nn::Module& m, uint64_t seed) {
  Generator gen(seed);
  for (auto& [name, t] : m.stateDict()) {
    if (name.find("running_var") != std::string::npos) {
      t.copy_(uniform(t.sizes(), 0.5, 2, gen));
    } else {
      t.copy_(uniform(t.sizes(), -1, 1, gen));
    }
  }
}

struct Case {
  ModulePtr module;
  Shape input;
  bool evaluate = false;
  Tensor given = {};  // the input itself where it is not uniform floats (Embedding's indices)
};

template <class M, class... A>
std::shared_ptr<M> make(A&&... args) {
  return std::make_shared<M>(std::forward<A>(args)...);
}

// One or more cases per module type, with options away from their defaults.
std::vector<Case> all_cases() {
  std::vector<Case> c;
  // parameters and buffers
  c.push_back({make<nn::Linear>(5, 3, false), {2, 5}});
  c.push_back({make<nn::Linear>(4, 2), {4}});
  c.push_back({make<nn::BatchNormalization>(4, 1e-3, 0.2, false), {3, 4}, true});
  c.push_back({make<nn::BatchNormalization>(3), {5, 3}});
  c.push_back({make<nn::SpatialBatchNormalization>(3, 1e-4, 0.3, true), {2, 3, 4, 4}});
  c.push_back({make<nn::VolumetricBatchNormalization>(2, 2e-5, 0.05, false), {2, 2, 2, 3, 3}, true});
  c.push_back({make<nn::SpatialCrossMapLRN>(3, 2e-4, 0.6, 1.5), {2, 5, 3, 3}});
  auto temporal = make<nn::TemporalConvolution>(3, 5, 3, 2);
  temporal->setMode("small", "", "").fastest();
  c.push_back({temporal, {2, 9, 3}});
  // activations, in place
  c.push_back({make<nn::ReLU>(true), {3, 4}});
  c.push_back({make<nn::ClippedReLU>(0.25, true), {3, 4}});
  c.push_back({make<nn::ELU>(0.7, true), {3, 4}});
  auto tanh = make<nn::Tanh>();
  tanh->inplace = true;
  c.push_back({tanh, {3, 4}});
  auto sigmoid = make<nn::Sigmoid>();
  sigmoid->inplace = true;
  c.push_back({sigmoid, {2, 3}});
  c.push_back({make<nn::Identity>(), {2, 3}});
  c.push_back({make<nn::Contiguous>(tensor::MemoryFormat::ChannelsLast), {2, 3, 4, 4}});
  // dropout: v1 in training (the mask reseeded) and in evaluation (scaled), v2 in place
  c.push_back({make<nn::Dropout>(0.3, true, false), {4, 5}});
  c.push_back({make<nn::Dropout>(0.3, true, false), {4, 5}, true});
  c.push_back({make<nn::Dropout>(0.2, false, true), {4, 5}});
  // the softmax family
  auto fast_softmax = make<nn::SoftMax>();
  fast_softmax->fast = true;  // the cudnn twin's fastMode, kept on the nn module
  c.push_back({fast_softmax, {2, 5}});
  c.push_back({make<nn::LogSoftMax>(), {2, 5}});
  c.push_back({make<nn::SpatialSoftMax>(), {2, 3, 2, 2}});
  c.push_back({make<nn::SpatialLogSoftMax>(), {2, 3, 2, 2}});
  c.push_back({make<nn::VolumetricSoftMax>(), {1, 3, 2, 2, 2}});
  c.push_back({make<nn::VolumetricLogSoftMax>(), {1, 3, 2, 2, 2}});
  // pooling: ceil mode (each case's input is sized so that it adds an output), padding, count_include_pad
  auto max2 = make<nn::SpatialMaxPooling>(3, 3, 2, 2, 1, 1);
  max2->ceil();
  c.push_back({max2, {1, 2, 6, 6}});
  auto avg2 = make<nn::SpatialAveragePooling>(3, 2, 2, 1, 1, 1);
  avg2->ceil().setCountExcludePad();
  c.push_back({avg2, {1, 2, 6, 6}});
  auto max3 = make<nn::VolumetricMaxPooling>(2, 2, 2, 2, 2, 2, 0, 1, 1);
  max3->ceil();
  c.push_back({max3, {1, 2, 5, 4, 4}});
  auto avg3 = make<nn::VolumetricAveragePooling>(2, 3, 3, 1, 2, 2, 1, 1, 1);
  avg3->ceil().setCountExcludePad();
  c.push_back({avg3, {1, 2, 3, 6, 6}});
  // convolutions: groups, dilation, adj, no bias, cuDNN algorithm pins (kept for the twins)
  auto conv = make<nn::SpatialConvolution>(4, 6, 3, 2, 2, 1, 1, 0, 2);
  conv->dilationW = 2;
  conv->noBias();
  conv->setMode("fft_tiling", "deterministic", "winograd_nonfused").fastest();
  c.push_back({conv, {2, 4, 7, 8}});
  auto dilated = make<nn::SpatialDilatedConvolution>(2, 4, 3, 3, 1, 2, 2, 1, 2, 3);
  dilated->setMode("", "small", "");
  c.push_back({dilated, {1, 2, 8, 9}});
  auto full = make<nn::SpatialFullConvolution>(4, 6, 3, 3, 2, 2, 1, 0, 1, 1, 2);
  full->noBias();
  full->fastest();
  c.push_back({full, {2, 4, 3, 4}});
  auto conv3 = make<nn::VolumetricConvolution>(2, 4, 2, 3, 3, 1, 2, 2, 1, 1, 0, 2);
  conv3->setMode("large", "none", "fft");
  c.push_back({conv3, {1, 2, 4, 6, 6}});
  auto full3 = make<nn::VolumetricFullConvolution>(2, 4, 2, 3, 3, 2, 2, 2, 0, 1, 1, 1, 1, 0, 2);
  full3->setMode("none", "", "deterministic");
  c.push_back({full3, {1, 2, 2, 3, 3}});
  // views
  auto view = make<nn::View>(-1);
  view->setNumInputDims(3);
  c.push_back({view, {2, 3, 2, 2}});
  c.push_back({make<nn::View>(3, 4), {2, 12}});
  c.push_back({make<nn::Reshape>(Shape{3, 4}, false), {1, 12}});  // [3 x 4]; the default reads a batch of 1
  c.push_back({make<nn::Reshape>(Shape{6}), {2, 3}});
  // recurrent: layers, batchFirst, dropout (the mask reseeded), bidirectional, persist (kept for the twins)
  c.push_back({make<nn::RNNReLU>(3, 4, 2, true, 0.3), {2, 5, 3}});
  c.push_back({make<nn::RNNTanh>(nn::RNNOptions{.inputSize = 3, .hiddenSize = 4, .bidirectional = true}), {5, 2, 3}});
  auto lstm = make<nn::LSTM>(
      nn::RNNOptions{.inputSize = 3, .hiddenSize = 4, .numLayers = 2, .dropout = 0.2, .bidirectional = true});
  lstm->setPersist(true);
  c.push_back({lstm, {5, 2, 3}});
  c.push_back({make<nn::GRU>(3, 2, 3, true), {2, 4, 3}});
  c.push_back({make<nn::BLSTM>(2, 3, 2, true, 0.1), {2, 4, 2}});
  auto bgru = make<nn::BGRU>(2, 3);
  bgru->rememberStates(true);
  c.push_back({bgru, {4, 2, 2}});
  c.push_back({make<nn::Select>(1, -2), {2, 3, 4}});
  // the element-wise and reduction staples
  c.push_back({make<nn::Abs>(), {2, 3}});
  c.push_back({make<nn::Square>(), {2, 3}});
  c.push_back({make<nn::Sqrt>(), {}, false, arange(0.5, 3.5, 0.5).view({2, 3})});  // positive: no NaN
  c.push_back({make<nn::Exp>(), {2, 3}});
  c.push_back({make<nn::Log>(), {}, false, arange(0.5, 3.5, 0.5).view({2, 3})});
  c.push_back({make<nn::Power>(2.5), {}, false, arange(0.5, 3.5, 0.5).view({2, 3})});
  c.push_back({make<nn::MulConstant>(-1.5, true), {2, 3}});
  c.push_back({make<nn::AddConstant>(0.25), {2, 3}});
  c.push_back({make<nn::PReLU>(), {2, 3}});
  c.push_back({make<nn::PReLU>(3), {2, 3, 4}});
  c.push_back({make<nn::Sum>(-1, true), {2, 3, 4}});
  c.push_back({make<nn::Sum>(0), {2, 3}});
  c.push_back({make<nn::Mean>(1), {2, 3, 4}});
  c.push_back({make<nn::Max>(-2), {2, 3, 4}});
  c.push_back({make<nn::Min>(0), {3, 2}});
  c.push_back({make<nn::Normalize>(1.5, 1e-6), {2, 5}});
  c.push_back({make<nn::Normalize>(std::numeric_limits<double>::infinity()), {2, 5}});
  // the shape staples
  c.push_back({make<nn::Narrow>(-1, 1, -1), {2, 3, 4}});
  c.push_back({make<nn::Transpose>(nn::Transpose::Pairs{{0, 2}, {1, -1}}), {2, 3, 4}});
  c.push_back({make<nn::Squeeze>(), {2, 1, 3}});
  c.push_back({make<nn::Squeeze>(0, 2), {1, 1, 3}});
  c.push_back({make<nn::Unsqueeze>(-2, 2), {2, 3, 4}});
  c.push_back({make<nn::Padding>(0, -2, 2, 0.5, 1), {2, 3, 4}});
  c.push_back({make<nn::SpatialZeroPadding>(1, -1, 2, 0), {2, 2, 3, 4}});
  c.push_back({make<nn::SpatialReflectionPadding>(2, 1, 0, 1), {2, 2, 3, 4}});
  c.push_back({make<nn::SpatialReplicationPadding>(3), {2, 3, 3}});
  c.push_back({make<nn::SpatialUpSamplingNearest>(3), {2, 2, 3, 2}});
  c.push_back({make<nn::SpatialUpSamplingBilinear>(int64_t{2}, false), {2, 2, 3, 2}});
  c.push_back({make<nn::SpatialUpSamplingBilinear>(nn::SpatialUpSamplingBilinear::Size{5, 3}), {2, 2, 3, 2}});
  // containers
  c.push_back(
      {make<nn::Concat>(-1, std::initializer_list<ModulePtr>{make<nn::Linear>(4, 3), make<nn::Linear>(4, 2)}), {2, 4}});
  c.push_back({make<nn::Residual>(
                   make<nn::Sequential>(std::initializer_list<ModulePtr>{make<nn::Linear>(4, 4), make<nn::Tanh>()}),
                   make<nn::Linear>(4, 4, false)),
               {3, 4}});
  c.push_back({make<nn::Residual>(make<nn::Linear>(4, 4)), {3, 4}});
  c.push_back({make<nn::FusedConvolution>(make<nn::SpatialConvolution>(2, 3, 3, 3, 1, 1, 1, 1), make<nn::Tanh>()),
               {2, 2, 4, 4}});
  c.push_back(
      {make<nn::FusedBatchNormalization>(make<nn::SpatialBatchNormalization>(2), make<nn::ReLU>()), {2, 2, 4, 4}});
  c.push_back({make<nn::FusedResidual>(make<nn::Residual>(make<nn::Sequential>(std::initializer_list<ModulePtr>{
                                                              make<nn::SpatialConvolution>(2, 2, 1, 1),
                                                              make<nn::SpatialBatchNormalization>(2)}),
                                                          make<nn::SpatialConvolution>(2, 2, 1, 1)),
                                       make<nn::ReLU>()),
               {2, 2, 4, 4}});
  auto stn_view = make<nn::View>(-1);
  stn_view->setNumInputDims(3);
  c.push_back({make<nn::SpatialTransformer>(
                   make<nn::Sequential>(std::initializer_list<ModulePtr>{stn_view, make<nn::Linear>(18, 6)}), 4, 5),
               {2, 2, 3, 3}});
  c.push_back({make<nn::Sequential>(), {2, 3}});
  // the Transformer modules
  c.push_back({make<nn::Embedding>(7, 3, -1), {}, false, from_vector<int64_t>({0, 6, 2, 2, 5, 1}, {2, 3})});
  // decoder language models (and their blocks): GPT-2 tied; Llama with GQA, RoPE, SwiGLU, untied
  nn::DecoderLMConfig lm;
  lm.vocabSize = 7;
  lm.nPositions = 8;
  lm.nEmbd = 8;
  lm.nLayer = 1;
  lm.nHead = 2;
  lm.normEps = 1e-6;
  c.push_back({nn::make_gpt2(lm), {}, false, from_vector<int64_t>({0, 6, 2, 2, 5, 1}, {2, 3})});
  lm.nKvHead = 1;
  lm.intermediateSize = 12;
  lm.ropeTheta = 500;
  lm.tied = false;
  c.push_back({nn::make_llama(lm), {}, true, from_vector<int64_t>({0, 6, 2, 2, 5, 1}, {2, 3})});
  c.push_back({make<nn::GELU>("tanh"), {2, 5}});
  c.push_back({make<nn::SiLU>(), {2, 5}});
  c.push_back({make<nn::LeakyReLU>(0.2, true), {2, 5}});
  c.push_back({make<nn::LayerNorm>(Shape{2, 3}, 1e-3, false), {4, 2, 3}});
  c.push_back({make<nn::LayerNorm>(Shape{3}, 1e-6), {2, 3}});
  c.push_back({make<nn::RMSNorm>(Shape{2, 3}, 1e-3, false), {4, 2, 3}});
  c.push_back({make<nn::RMSNorm>(Shape{3}), {2, 3}});
  c.push_back({make<nn::RotaryEmbedding>(nn::RotaryOptions{nn::RotaryStyle::Interleaved, 500000, 4}), {2, 3, 4, 6}});
  c.push_back({make<nn::SwiGLU>(4, 6), {2, 3, 4}});
  c.push_back({make<nn::SwiGLU>(3, 5, true), {2, 3}});
  c.push_back({make<nn::GroupNorm>(2, 4, 1e-3, false), {2, 4, 3}});
  c.push_back({make<nn::GroupNorm>(3, 6), {2, 6, 2, 2}});
  c.push_back({make<nn::InstanceNorm>(3), {2, 3, 5}});
  c.push_back({make<nn::InstanceNorm>(3, 1e-4, 0.3, true, true), {2, 3, 4, 2}, true});
  auto mha = make<nn::MultiheadAttention>(6, 3, 0.2, false, true);
  mha->causal = true;
  c.push_back({mha, {2, 4, 6}});
  auto encoder = make<nn::TransformerEncoderLayer>(8, 2, 12, 0.1, "gelu", true, true, 1e-6);
  encoder->setCausal(true);
  c.push_back({encoder, {2, 3, 8}});
  c.push_back({make<nn::TransformerEncoderLayer>(4, 1, 6, 0.0), {3, 2, 4}, true});
  // {tgt, memory} split from one tensor
  c.push_back({make<nn::Sequential>(std::initializer_list<ModulePtr>{
                   make<nn::SplitTable>(0), make<nn::TransformerDecoderLayer>(4, 2, 6, 0.1, "gelu", true, true, 1e-6)}),
               {2, 2, 3, 4},
               true});
  // table modules, inside containers whose input and output are tensors
  c.push_back({make<nn::Sequential>(std::initializer_list<ModulePtr>{
                   make<nn::SplitTable>(0, 2),
                   make<nn::ParallelTable>(std::initializer_list<ModulePtr>{make<nn::Linear>(4, 3), make<nn::Tanh>()}),
                   make<nn::ConcatTable>(
                       std::initializer_list<ModulePtr>{make<nn::NarrowTable>(0, 2), make<nn::SelectTable>(-1)}),
                   make<nn::FlattenTable>(), make<nn::JoinTable>(0, 1)}),
               {2, 2, 4}});
  {
    nn::Node x = nn::Input();
    nn::Node h = nn::call(make<nn::Linear>(4, 4), x);
    nn::Node a = nn::call(make<nn::CAddTable>(), {h, x});
    nn::Node m = nn::call(make<nn::CMulTable>(), {a, nn::call(make<nn::Tanh>(), h)});
    nn::Node d =
        nn::call(make<nn::CDivTable>(), {nn::call(make<nn::CSubTable>(), {m, x}), nn::call(make<nn::Sigmoid>(), a)});
    c.push_back({make<nn::Graph>(x, d), {3, 4}});
    nn::Node l1 = nn::call(make<nn::Linear>(4, 3), x), l2 = nn::call(make<nn::Linear>(4, 3), x);
    nn::Node both = nn::call(make<nn::CAddTable>(), {nn::call(make<nn::PairwiseDistance>(3, 1e-5), {l1, l2}),
                                                     nn::call(make<nn::CosineDistance>(), {l1, l2})});
    c.push_back({make<nn::Graph>(x, both), {3, 4}});
  }
  return c;
}

const std::string kHeader = R"("format": "cudnn-nn model", "version": 1)";

}  // namespace

TEST_CASE("every module type round-trips with non-default options") {
  Generator gen(3);
  INFO("input seed 3");
  for (const Case& c : all_cases()) {
    INFO(c.module->str());
    scramble(*c.module, 5);
    if (c.evaluate) c.module->evaluate();
    const ModulePtr back = expect_roundtrip(c.module, c.given.defined() ? c.given : uniform(c.input, -1, 1, gen));
    // fields that change nothing on the CPU, so the outputs above cannot show them
    if (auto conv = std::dynamic_pointer_cast<nn::ConvolutionBase>(c.module)) {
      CHECK(as<nn::ConvolutionBase>(back)->algo == conv->algo);
    }
    if (auto temporal = std::dynamic_pointer_cast<nn::TemporalConvolution>(c.module)) {
      CHECK(as<nn::TemporalConvolution>(back)->algo == temporal->algo);
    }
    if (auto layout = std::dynamic_pointer_cast<nn::Contiguous>(c.module)) {
      CHECK(as<nn::Contiguous>(back)->format() == layout->format());
    }
    if (auto rnn = std::dynamic_pointer_cast<nn::RNNBase>(c.module)) {
      CHECK(as<nn::RNNBase>(back)->persist == rnn->persist);
      CHECK(as<nn::RNNBase>(back)->remembersStates() == rnn->remembersStates());
    }
  }
}

TEST_CASE("every built-in type has a round-trip case") {
  std::set<std::string> covered;
  for (const Case& c : all_cases()) c.module->apply([&](nn::Module& m) { covered.insert(m.type_name()); });
  std::string missing;
  for (const auto& type : nn::model_types()) {
    if (type.rfind("nn.", 0) == 0 && !covered.count(type)) missing += " " + type;
  }
  CHECK_MESSAGE(missing.empty(), "no round-trip case for" << missing);
}

TEST_CASE("options survive the round trip field by field") {
  Generator gen(11);
  {
    auto m = std::make_shared<nn::SpatialAveragePooling>(3, 3, 2, 2, 1, 1);
    m->ceil().setCountExcludePad();
    auto back = as<nn::SpatialAveragePooling>(expect_roundtrip(m, uniform({1, 1, 6, 6}, -1, 1, gen)));
    CHECK(back->ceil_mode);
    CHECK_FALSE(back->count_include_pad);
    CHECK(back->padW == 1);
  }
  {
    auto m = std::make_shared<nn::SpatialConvolution>(4, 6, 3, 3, 1, 1, 2, 2, 2);
    m->dilationH = 2;
    m->noBias();
    auto back = as<nn::SpatialConvolution>(expect_roundtrip(m, uniform({1, 4, 7, 7}, -1, 1, gen)));
    CHECK(back->groups == 2);
    CHECK(back->dilationH == 2);
    CHECK(back->dilationW == 1);
    CHECK_FALSE(back->bias.defined());
  }
  {
    auto m = std::make_shared<nn::VolumetricFullConvolution>(2, 2, 2, 2, 2);
    m->setMode("fft", "deterministic", "winograd").fastest();
    auto back = as<nn::VolumetricFullConvolution>(expect_roundtrip(m, uniform({1, 2, 2, 2, 2}, -1, 1, gen)));
    CHECK(back->algo == m->algo);
    CHECK(back->algo.bwdFilter == "deterministic");
    CHECK(back->algo.fastest);
    // files written before the pins existed (no "algo") load with the global flags
    const auto doc = Json::parse(std::string("{") + kHeader +
                                 R"(, "module": {"type": "nn.TemporalConvolution", "config": )"
                                 R"({"inputFrameSize": 2, "outputFrameSize": 3, "kW": 2}}})");
    CHECK(as<nn::TemporalConvolution>(nn::build_model(doc))->algo == nn::ConvAlgorithms{});
  }
  {
    auto back = as<nn::SpatialFullConvolution>(expect_roundtrip(
        std::make_shared<nn::SpatialFullConvolution>(2, 2, 3, 3, 2, 3, 0, 0, 1, 2), uniform({1, 2, 3, 3}, -1, 1, gen)));
    CHECK(back->adjW == 1);
    CHECK(back->adjH == 2);
  }
  {
    auto back = as<nn::BatchNormalization>(
        expect_roundtrip(std::make_shared<nn::BatchNormalization>(3, 1e-3, 0.25, false), uniform({4, 3}, -1, 1, gen)));
    CHECK(back->eps == 1e-3);
    CHECK(back->momentum == 0.25);
    CHECK_FALSE(back->affine);
    CHECK_FALSE(back->weight.defined());
  }
  {
    auto back =
        as<nn::Dropout>(expect_roundtrip(std::make_shared<nn::Dropout>(0.25, true, true), uniform({4, 3}, -1, 1, gen)));
    CHECK(back->p == 0.25);
    CHECK_FALSE(back->v2);
    CHECK(back->inplace);
  }
  {
    auto back = as<nn::ReLU>(expect_roundtrip(std::make_shared<nn::ReLU>(true), uniform({4, 3}, -1, 1, gen)));
    CHECK(back->inplace);
  }
  {
    auto m = std::make_shared<nn::View>(-1, 2);
    m->setNumInputDims(2);
    auto back = as<nn::View>(expect_roundtrip(m, uniform({3, 2, 4}, -1, 1, gen)));
    CHECK(back->size == Shape{-1, 2});
    CHECK(back->numInputDims == 2);
    CHECK_FALSE(as<nn::View>(expect_roundtrip(std::make_shared<nn::View>(4), uniform({2, 4}, -1, 1, gen)))
                    ->numInputDims.has_value());
  }
  {
    auto back = as<nn::Concat>(expect_roundtrip(
        std::make_shared<nn::Concat>(0, std::initializer_list<ModulePtr>{std::make_shared<nn::Identity>()}),
        uniform({2, 4}, -1, 1, gen)));
    CHECK(back->dimension == 0);
  }
  {
    // The Torch constructor of SpatialDilatedConvolution has no groups, but the field does.
    const auto doc =
        Json::parse(std::string("{") + kHeader +
                    R"(, "module": {"type": "nn.SpatialDilatedConvolution", "config": {)"
                    R"("nInputPlane": 4, "nOutputPlane": 2, "kW": 3, "kH": 3, "dilationW": 2, "groups": 2,)"
                    R"( "bias": false}}})");
    auto m = as<nn::SpatialDilatedConvolution>(nn::build_model(doc));
    CHECK(m->groups == 2);
    CHECK(m->dilationW == 2);
    CHECK(m->weight.sizes() == Shape{2, 2, 3, 3});
    CHECK_FALSE(m->bias.defined());
    CHECK(m->str() == "nn.SpatialDilatedConvolution(4 -> 2, 3x3, 2,1, groups=2) without bias");
  }
}

TEST_CASE("a nested network round-trips with its modes and running statistics") {
  manual_seed(1);
  auto bn = std::make_shared<nn::SpatialBatchNormalization>(4);
  auto branchBn = std::make_shared<nn::SpatialBatchNormalization>(2, 1e-3, 0.5);
  auto view = std::make_shared<nn::View>(-1);
  view->setNumInputDims(3);
  auto net = std::make_shared<nn::Sequential>(std::initializer_list<ModulePtr>{
      std::make_shared<nn::SpatialConvolution>(2, 4, 3, 3, 1, 1, 1, 1),
      bn,
      std::make_shared<nn::ReLU>(true),
      std::make_shared<nn::Concat>(
          1, std::initializer_list<ModulePtr>{std::make_shared<nn::Sequential>(std::initializer_list<ModulePtr>{
                                                  std::make_shared<nn::SpatialConvolution>(4, 2, 1, 1), branchBn}),
                                              std::make_shared<nn::Residual>(
                                                  std::make_shared<nn::SpatialConvolution>(4, 4, 3, 3, 1, 1, 1, 1))}),
      std::make_shared<nn::SpatialMaxPooling>(2, 2),
      view,
      std::make_shared<nn::Dropout>(0.25),
      std::make_shared<nn::Linear>(6 * 2 * 2, 3),
      std::make_shared<nn::LogSoftMax>(),
  });
  net->get(6)->evaluate();
  Generator gen(4);
  for (int step = 0; step < 2; ++step) net->forward(uniform({3, 2, 4, 4}, -1, 1, gen));  // moves the statistics
  net->get(1)->evaluate();  // mixed modes: the root trains, two children evaluate
  REQUIRE(bn->running_mean.abs().max().item() > 0);

  TempDir tmp;
  nn::save_model(*net, tmp / "net");
  ModulePtr back = nn::load_model(tmp / "net");
  CHECK(back->str() == net->str());
  CHECK(back->isTraining());
  auto seq = as<nn::Sequential>(back);
  CHECK_FALSE(seq->get(1)->isTraining());
  CHECK_FALSE(seq->get(6)->isTraining());
  CHECK(seq->get(3)->isTraining());
  CHECK(as<nn::Sequential>(as<nn::Concat>(seq->get(3))->get(0))->get(1)->isTraining());
  expect_same_state(*net, *back);
  CHECK(identical(as<nn::SpatialBatchNormalization>(seq->get(1))->running_var, bn->running_var));
  CHECK(identical(
      as<nn::SpatialBatchNormalization>(as<nn::Sequential>(as<nn::Concat>(seq->get(3))->get(0))->get(1))->running_mean,
      branchBn->running_mean));

  // the same outputs, and the same updated statistics after a training step
  const Tensor x = uniform({2, 2, 4, 4}, -1, 1, gen);
  CHECK(identical(net->forward(x).clone(), back->forward(x).clone()));
  expect_same_state(*net, *back);
  net->evaluate();
  back->evaluate();
  CHECK(identical(net->forward(x).clone(), back->forward(x).clone()));

  // the files: readable JSON with the format named, and the weights keyed by path
  const std::string text = read_file(tmp / "net.json");
  CHECK(text.find("{\n  \"format\": \"cudnn-nn model\",\n  \"version\": 1,\n  \"module\": {\n    \"type\": "
                  "\"nn.Sequential\",") == 0);
  CHECK(text.find("\"type\": \"nn.SpatialBatchNormalization\",\n") != std::string::npos);
  CHECK(text.find("\"eps\": 0.001,") != std::string::npos);
  const auto file = load_safetensors(tmp / "net.safetensors");
  CHECK(file.metadata.at("format") == "cudnn-nn model");
  CHECK(file.tensors.count("1.running_mean"));
  CHECK(file.tensors.count("3.0.1.running_var"));
  CHECK(file.tensors.count("3.1.0.weight"));
  CHECK(file.tensors.count("7.bias"));
  CHECK(file.tensors.size() == net->stateDict().size());
}

TEST_CASE("the stem may be given with either extension; float64 networks stay float64") {
  TempDir tmp;
  auto net = std::make_shared<nn::Sequential>(std::initializer_list<ModulePtr>{
      std::make_shared<nn::Linear>(3, 2), std::make_shared<nn::BatchNormalization>(2)});
  net->to(DType::Float64);
  nn::save_model(*net, tmp / "m.json");
  CHECK(fs::exists(tmp / "m.safetensors"));
  ModulePtr back = nn::load_model(tmp / "m.safetensors");
  for (const auto& [name, t] : back->stateDict()) {
    INFO(name);
    CHECK(t.dtype() == (name.ends_with("num_batches_tracked") ? DType::Int64 : DType::Float64));
  }
  expect_same_state(*net, *back);
}

TEST_CASE("load_weights takes a state into an existing network; mismatches are all listed") {
  TempDir tmp;
  auto make = [] {
    return std::make_shared<nn::Sequential>(std::initializer_list<ModulePtr>{
        std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(3, 2),
        std::make_shared<nn::BatchNormalization>(2)});
  };
  auto a = make(), b = make();
  scramble(*a, 8);
  nn::save_weights(*a, tmp / "w.safetensors");
  nn::load_weights(*b, tmp / "w.safetensors");
  expect_same_state(*a, *b);

  // missing (a layer more), unexpected (no bias), wrong shape (5 outputs)
  auto other = std::make_shared<nn::Sequential>(std::initializer_list<ModulePtr>{
      std::make_shared<nn::Linear>(4, 5), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(5, 2, false),
      std::make_shared<nn::BatchNormalization>(2), std::make_shared<nn::Linear>(2, 2)});
  const std::string listing =
      "nn.Sequential::loadStateDict: 6 mismatches:\n"
      "  '0.bias' has shape [3], expected [5]\n"
      "  '0.weight' has shape [3 x 4], expected [5 x 4]\n"
      "  '2.weight' has shape [2 x 3], expected [2 x 5]\n"
      "  missing '4.bias' [2]\n"
      "  missing '4.weight' [2 x 2]\n"
      "  unexpected '2.bias' [2]";
  CHECK_THROWS_WITH_AS(nn::load_weights(*other, tmp / "w.safetensors"),
                       ("nn::load_weights: " + (tmp / "w.safetensors") + ": " + listing).c_str(), Error);
  // nothing was copied, not even the tensors that matched: the check comes first
  CHECK(as<nn::BatchNormalization>(other->get(3))->running_var.to_vector<float>() == std::vector<float>{1, 1});

  // the same through load_model, with the structure of one network and the weights of another
  nn::save_model(*other, tmp / "mixed");
  nn::save_weights(*a, tmp / "mixed.safetensors");
  CHECK_THROWS_WITH_AS(nn::load_model(tmp / "mixed"),
                       ("nn::load_model: " + (tmp / "mixed.safetensors") + ": " + listing).c_str(), Error);
}

TEST_CASE("malformed files, unknown types and missing files get clear errors") {
  TempDir tmp;
  const std::string path = tmp / "bad";
  nn::save_weights(*std::make_shared<nn::Sequential>(), path + ".safetensors");  // an empty state
  auto load_with = [&](const std::string& json) {
    write_file(path + ".json", json);
    return nn::load_model(path);
  };
  const std::string what = "nn::load_model: " + path + ".json";
  auto module = [](const std::string& m) { return std::string("{") + kHeader + ", \"module\": " + m + "}"; };

  CHECK_THROWS_WITH_AS(
      nn::load_model(tmp / "absent"),
      ("nn::load_model: cannot open '" + (tmp / "absent.json") + "': No such file or directory").c_str(), Error);
  const std::string broken = std::string("{") + kHeader + R"(, "module": {"type": }})";
  CHECK_THROWS_WITH_AS(load_with(broken),
                       (what + ": malformed JSON at byte " + std::to_string(broken.find(": }") + 2) +
                        ": syntax error while parsing value - unexpected '}'; expected '[', '{', or a literal")
                           .c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(load_with(R"({"format": "pt", "version": 1, "module": {}})"),
                       (what + ": format is 'pt', expected 'cudnn-nn model'").c_str(), Error);
  CHECK_THROWS_WITH_AS(
      load_with(R"({"format": "cudnn-nn model", "version": 2, "module": {}})"),
      (what + ": version 2 (this cudnn-nn reads version 1; the file was written by a newer one)").c_str(), Error);
  CHECK_THROWS_WITH_AS(load_with(std::string("{") + kHeader + "}"), (what + ": missing key 'module'").c_str(), Error);
  CHECK_THROWS_WITH_AS(load_with(module(R"({"type": "nn.Sequential", "children": [{"type": "nn.ReLU"},
      {"type": "MyLayer", "config": {}}]})")),
                       (what + ": unknown module type 'MyLayer' at 1: not a built-in type; register it with "
                               "nn::register_model_type(\"MyLayer\", factory) before loading")
                           .c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(load_with(module(R"({"type": "nn.Sequential", "children": [{"type": "nn.Sequential",
      "children": [{"type": "nn.Linear", "config": {"inputSize": 4, "outputSize": 3, "biass": true}}]}]})")),
                       (what + ": at 0.0 (nn.Linear): nn.Linear config: unknown key 'biass' (it takes bias, "
                               "inputSize, outputSize)")
                           .c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(
      load_with(module(R"({"type": "nn.Linear", "config": {"inputSize": "4", "outputSize": 3}})")),
      (what + ": at root (nn.Linear): nn.Linear config.inputSize: expected an integer, got a string").c_str(), Error);
  CHECK_THROWS_WITH_AS(
      load_with(module(R"({"type": "nn.SpatialMaxPooling", "config": {"kW": 2, "kH": 2, "dW": 2}})")),
      (what + ": at root (nn.SpatialMaxPooling): nn.SpatialMaxPooling config: missing key 'dH'").c_str(), Error);
  CHECK_THROWS_WITH_AS(load_with(module(R"({"type": "nn.Linear", "config": {"inputSize": -4, "outputSize": 3}})")),
                       (what + ": at root (nn.Linear): nn.Linear: expected positive sizes, got -4 -> 3").c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(load_with(module(R"({"type": "nn.ReLU", "children": [{"type": "nn.Tanh"}]})")),
                       (what + ": at root (nn.ReLU): expected no children (not a container), got 1").c_str(), Error);
  CHECK_THROWS_WITH_AS(load_with(module(R"({"type": "nn.Residual", "children": []})")),
                       (what + ": at root (nn.Residual): nn.Residual: expected a block and an optional shortcut (1 "
                               "or 2 children), got 0")
                           .c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(
      load_with(module(R"({"type": "nn.ReLU", "trainable": true})")),
      (what + ": at root: unknown key 'trainable' (a module has type, training, config and children)").c_str(), Error);
  CHECK_THROWS_WITH_AS(load_with(module(R"({"type": "nn.ReLU", "training": 1})")),
                       (what + ": at root: training: expected a boolean, got a number").c_str(), Error);
  // a well-formed structure whose weights file is missing
  write_file(tmp / "noweights.json", module(R"({"type": "nn.ReLU"})"));
  CHECK_THROWS_WITH_AS(nn::load_model(tmp / "noweights"),
                       ("nn::load_model: tensor::load_safetensors: cannot open '" + (tmp / "noweights.safetensors") +
                        "': No such file or directory")
                           .c_str(),
                       Error);
  // config and training may be left out: defaults
  ModulePtr relu = load_with(module(R"({"type": "nn.ReLU"})"));
  CHECK(relu->str() == "nn.ReLU");
  CHECK(relu->isTraining());
}

namespace {
// A user's module that model files do not know until it is registered.
struct Scale : nn::Module {
  explicit Scale(double f) : factor(f) {}
  const Tensor& updateOutput(const Tensor& input) override {
    output = input.mul(factor);
    return output;
  }
  const Tensor& updateGradInput(const Tensor&, const Tensor& gradOutput) override {
    gradInput = gradOutput.mul(factor);
    return gradInput;
  }
  std::string type_name() const override { return "test.Scale"; }
  Json config() const override { return Json::Object{{"factor", factor}}; }
  double factor;
};
}  // namespace

TEST_CASE("a user's module: save names it until it is registered") {
  TempDir tmp;
  auto net = std::make_shared<nn::Sequential>(std::initializer_list<ModulePtr>{
      std::make_shared<nn::Linear>(2, 2), std::make_shared<nn::Sequential>(std::initializer_list<ModulePtr>{
                                              std::make_shared<nn::ReLU>(), std::make_shared<Scale>(2.5)})});
  CHECK_THROWS_WITH_AS(nn::save_model(*net, tmp / "user"),
                       "nn::save_model: the module at 1.1 is a test.Scale, a type model files do not know: register "
                       "it with nn::register_model_type(\"test.Scale\", factory), or save its weights alone with "
                       "nn::save_weights",
                       Error);
  CHECK_FALSE(fs::exists(tmp / "user.json"));
  CHECK_FALSE(fs::exists(tmp / "user.safetensors"));

  nn::register_model_type("test.Scale", [](const Json& config) -> ModulePtr {
    nn::ConfigReader c(config, "test.Scale");
    auto m = std::make_shared<Scale>(c.number("factor"));
    c.finish();
    return m;
  });
  Generator gen(2);
  auto back = expect_roundtrip(net, uniform({3, 2}, -1, 1, gen));
  CHECK(as<Scale>(as<nn::Sequential>(as<nn::Sequential>(back)->get(1))->get(1))->factor == 2.5);
  const auto types = nn::model_types();
  CHECK(std::find(types.begin(), types.end(), "test.Scale") != types.end());

  CHECK_THROWS_WITH_AS(nn::register_model_type("nn.Linear", [](const Json&) -> ModulePtr { return nullptr; }),
                       "nn::register_model_type: 'nn.Linear' is a built-in type", Error);
  CHECK_THROWS_WITH_AS(nn::register_model_type("cudnn.ReLU", [](const Json&) -> ModulePtr { return nullptr; }),
                       "nn::register_model_type: 'cudnn.ReLU' is a built-in type", Error);
  // a factory that builds something else is caught
  nn::register_model_type("test.Wrong", [](const Json&) -> ModulePtr { return std::make_shared<nn::Tanh>(); });
  CHECK_THROWS_WITH_AS(
      nn::build_model(Json::parse(std::string("{") + kHeader + R"(, "module": {"type": "test.Wrong"}})"), "w.json"),
      "w.json: at root (test.Wrong): the factory built a nn.Tanh, expected a test.Wrong", Error);
}

TEST_CASE("a cudnn model loads without a GPU and converts to nn") {
  // Written by hand as a cudnn network would be saved; the weights come from an nn twin network.
  TempDir tmp;
  manual_seed(3);
  auto reference = std::make_shared<nn::Sequential>(
      std::initializer_list<ModulePtr>{std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::ReLU>(),
                                       std::make_shared<nn::BatchNormalization>(3), std::make_shared<nn::SoftMax>()});
  scramble(*reference, 12);
  reference->evaluate();
  nn::save_weights(*reference, tmp / "cu.safetensors");
  write_file(tmp / "cu.json", std::string("{") + kHeader + R"(, "module": {
    "type": "nn.Sequential", "training": false, "children": [
      {"type": "cudnn.Linear", "training": false, "config": {"inputSize": 4, "outputSize": 3, "bias": true}},
      {"type": "cudnn.ReLU", "training": false, "config": {"inplace": false}},
      {"type": "cudnn.BatchNormalization", "training": false,
       "config": {"nOutput": 3, "eps": 1e-05, "momentum": 0.1, "affine": true}},
      {"type": "cudnn.SoftMax", "training": false}]}})");

  ModulePtr net = nn::load_model(tmp / "cu");
  // Each module is the cudnn twin where this build has one (still on the CPU), else the nn
  // module (documented in ModelFile.h: a build without cuDNN loads cudnn models as nn).
  const auto twins = nn::convertible_types(cudnn::backend);
  auto seq = as<nn::Sequential>(net);
  for (size_t i = 0; i < seq->size(); ++i) {
    const std::string nnType = "nn." + seq->get(i)->type_name().substr(seq->get(i)->type_name().find('.') + 1);
    const bool hasTwin = std::find(twins.begin(), twins.end(), nnType) != twins.end();
    INFO(nnType);
    CHECK(seq->get(i)->type_name() == (hasTwin ? "cudnn" + nnType.substr(2) : nnType));
    CHECK(seq->get(i)->backendKind() == (hasTwin ? nn::Backend::cudnn : nn::Backend::nn));
    CHECK_FALSE(seq->get(i)->isTraining());
  }
  for (const auto& [name, t] : net->stateDict()) CHECK(t.is_cpu());

  // saved again, the types stay as they were loaded
  nn::save_model(*net, tmp / "again");
  CHECK(read_file(tmp / "again.json").find(seq->get(0)->type_name()) != std::string::npos);

  const auto loaded = net->stateDict();
  ModulePtr back = nn::convert(net, nn::backend);
  back->apply([](nn::Module& m) { CHECK(m.type_name().rfind("nn.", 0) == 0); });
  // the twins' CPU tensors change owner without a copy
  for (const auto& [name, t] : back->stateDict()) CHECK(t.shares_storage(loaded.at(name)));
  CHECK(back->str() == reference->str());
  expect_same_state(*reference, *back);
  Generator gen(6);
  const Tensor x = uniform({5, 4}, -1, 1, gen);
  CHECK(identical(back->forward(x).clone(), reference->forward(x).clone()));
}

TEST_CASE("weights written by PyTorch give PyTorch's outputs") {
  // scripts/make_torch_lenet.py: Conv2d(1,4,3,padding=1) -> BatchNorm2d(4) (eval) -> ReLU ->
  // MaxPool2d(2) -> Flatten -> Linear(64, 3), state_dict keys as PyTorch wrote them.
  auto net = std::make_shared<nn::Sequential>(std::initializer_list<ModulePtr>{
      std::make_shared<nn::SpatialConvolution>(1, 4, 3, 3, 1, 1, 1, 1),
      std::make_shared<nn::SpatialBatchNormalization>(4),
      std::make_shared<nn::ReLU>(),
      std::make_shared<nn::SpatialMaxPooling>(2, 2),
      std::make_shared<nn::View>(-1),
      std::make_shared<nn::Linear>(4 * 4 * 4, 3),
  });
  as<nn::View>(net->get(4))->setNumInputDims(3);
  net->evaluate();
  const std::string data = CUDNN_NN_TEST_DATA;
  const auto torchState = load_safetensors(data + "/torch_lenet.safetensors");
  CHECK(torchState.metadata.at("format") == "pt");
  // the layouts agree: same names, same shapes (the file was written without PyTorch's
  // num_batches_tracked, which loads as optional: Note [num_batches_tracked])
  auto ours = net->stateDict();
  REQUIRE(ours.erase("1.num_batches_tracked") == 1);
  REQUIRE(ours.size() == torchState.tensors.size());
  for (const auto& [name, t] : torchState.tensors) {
    INFO(name);
    REQUIRE(ours.count(name));
    CHECK(ours.at(name).sizes() == t.sizes());
  }
  nn::load_weights(*net, data + "/torch_lenet.safetensors");
  CHECK(identical(as<nn::SpatialBatchNormalization>(net->get(1))->running_var, torchState.tensors.at("1.running_var")));

  const auto io = load_safetensors(data + "/torch_lenet_io.safetensors");
  const Tensor& expected = io.tensors.at("output");
  const Tensor y = net->forward(io.tensors.at("input"));
  REQUIRE(y.sizes() == expected.sizes());
  CHECK(max_abs_diff(y, expected) < 1e-5);
  CHECK(expected.abs().max().item() > 0.1);  // not a trivial output

  // and through a model file: the structure saved here, the weights PyTorch's
  TempDir tmp;
  nn::save_model(*net, tmp / "lenet");
  fs::copy_file(data + "/torch_lenet.safetensors", tmp / "lenet.safetensors", fs::copy_options::overwrite_existing);
  ModulePtr loaded = nn::load_model(tmp / "lenet");
  CHECK_FALSE(loaded->isTraining());
  CHECK(max_abs_diff(loaded->forward(io.tensors.at("input")), expected) < 1e-5);
}

// Saving over an existing pair: the files keep their permissions (a private 0600 model stays
// private), new ones follow the umask; a temporary file left by a killed save is removed by
// the next save of that model; a structure rename that fails after the weights' rename says
// which file is new and which old.
TEST_CASE("save_model keeps the replaced files' modes, removes stale temporaries, names a half-done save") {
  TempDir tmp;
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::Linear>(3, 2));
  const std::string base = tmp / "m";
  auto mode = [](const std::string& file) { return fs::status(file).permissions() & fs::perms::all; };

  const mode_t umask_before = ::umask(027);
  nn::save_model(*net, base);
  ::umask(022);
  CHECK(mode(base + ".json") == (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
  fs::permissions(base + ".json", fs::perms::owner_read | fs::perms::owner_write);
  fs::permissions(base + ".safetensors", fs::perms::owner_read | fs::perms::owner_write);
  nn::save_model(*net, base);
  ::umask(umask_before);
  CHECK(mode(base + ".json") == (fs::perms::owner_read | fs::perms::owner_write));
  CHECK(mode(base + ".safetensors") == (fs::perms::owner_read | fs::perms::owner_write));

  // a save killed mid-write left <name>.tmp.<pid>.<n>: a dead writer's goes, a live one's stays
  const pid_t dead = ::fork();
  REQUIRE(dead >= 0);
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = base + ".safetensors.tmp." + std::to_string(dead) + ".0";
  const std::string live = base + ".json.tmp." + std::to_string(::getppid()) + ".7";
  write_file(stale, "partial");
  write_file(live, "partial");
  nn::save_model(*net, base);
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(live));
  fs::remove(live);

  // the weights are renamed first; a directory where the structure goes stops its rename
  fs::remove(base + ".json");
  fs::create_directory(base + ".json");
  const std::string half = "nn::save_model: '" + base + ".safetensors' holds the new weights, but '" + base +
                           ".json' still holds the old structure (the pair will not load until a save succeeds): " +
                           "nn::save_model: cannot rename '" + base + ".json.tmp.";
  CHECK_THROWS_WITH_AS(nn::save_model(*net, base), doctest::Contains(half.c_str()), Error);
  CHECK(fs::is_directory(base + ".json"));
  CHECK(fs::is_regular_file(base + ".safetensors"));
}

// Issue 45 item 2: a save of B (same weight shapes as A) that renamed its weights but not its
// structure leaves A's structure beside B's weights; the shapes match, so only the pair id
// tells, and load_model refuses the pair naming both files.
TEST_CASE("load_model refuses a pair left mixed by a half-done save, even when the shapes match") {
  TempDir tmp;
  const std::string base = tmp / "pair";
  auto make = [](ModulePtr activation) {
    auto net = std::make_shared<nn::Sequential>();
    net->add(std::make_shared<nn::Linear>(3, 4));
    net->add(std::move(activation));
    net->add(std::make_shared<nn::Linear>(4, 2));
    return net;
  };
  auto a = make(std::make_shared<nn::ReLU>());
  auto b = make(std::make_shared<nn::Tanh>());
  nn::save_model(*a, base);
  const std::string structureA = read_file(base + ".json");
  CHECK(structureA.find("\"pair\"") != std::string::npos);

  // B's save stops between the renames: a directory where its structure goes
  fs::remove(base + ".json");
  fs::create_directory(base + ".json");
  CHECK_THROWS_AS(nn::save_model(*b, base), Error);
  fs::remove(base + ".json");
  write_file(base + ".json", structureA);  // as a crash between the renames leaves it
  CHECK_THROWS_WITH_AS(
      nn::load_model(base),
      doctest::Contains(
          ("nn::load_model: '" + base + ".json' and '" + base + ".safetensors' are not one save's pair").c_str()),
      Error);

  // a save that completes mends the pair; the same structure saved twice shares its id, so
  // a newer weights file beside an older structure of the same model loads
  nn::save_model(*b, base);
  ModulePtr back = nn::load_model(base);
  CHECK(back->str() == b->str());
  const std::string structureB = read_file(base + ".json");
  scramble(*b, 5);
  nn::save_model(*b, base);
  CHECK(read_file(base + ".json") == structureB);  // deterministic: same structure, same bytes
  const Tensor x = tensor::uniform({2, 3}, -1, 1);
  CHECK(identical(nn::load_model(base)->forward(x).clone(), b->forward(x).clone()));
}

TEST_CASE("tied parameters stay one tensor through save and load, to(dtype) and to(device)") {
  // a Siamese pair as a graph: two encoders, the second tied to the first (Note [Tied parameters])
  manual_seed(9);
  auto enc1 = make<nn::Linear>(4, 3), enc2 = make<nn::Linear>(4, 3);
  enc2->shareParameters(*enc1);
  nn::Node a = nn::Input(), b = nn::Input();
  nn::Node d = nn::call(make<nn::CSubTable>(), {nn::call(enc1, a), nn::call(enc2, b)});
  auto inner = make<nn::Graph>(std::vector<nn::Node>{a, b}, std::vector<nn::Node>{d});
  // a tensor-in, tensor-out wrapper so the round trip helper applies
  auto net = make<nn::Sequential>(std::initializer_list<ModulePtr>{make<nn::SplitTable>(0), inner});
  CHECK(net->tiedParameters() ==
        std::vector<std::vector<std::string>>{{"1.0.weight", "1.1.weight"}, {"1.0.bias", "1.1.bias"}});
  CHECK(net->parameters().size() == 2);
  CHECK(net->stateDict().size() == 4);
  Generator gen(9);
  ModulePtr back = expect_roundtrip(net, uniform({2, 4}, -1, 1, gen));
  CHECK(back->tiedParameters() == net->tiedParameters());
  CHECK(back->parameters().size() == 2);
  back->to(DType::Float64);
  CHECK(back->tiedParameters().size() == 2);
  // one gradient, both uses summed into it
  const Tensor x = uniform({2, 4}, -1, 1, gen, DType::Float64);
  back->zeroGradParameters();
  back->forward(x);
  back->backward(x, ones({3}, DType::Float64));
  CHECK(max_abs_diff(back->gradParameters()[0].select(0, 0), x[0] - x[1]) < 1e-12);
  // a tie that cannot hold is refused, naming both
  auto other = make<nn::Linear>(4, 2);
  CHECK_THROWS_WITH_AS(other->shareParameters(*enc1),
                       "nn.Linear::shareParameters: expected 'weight' (float32 [2 x 4] on cpu) to match its source "
                       "(float32 [3 x 4] on cpu) in shape, dtype and device",
                       Error);
}

TEST_CASE("a model file whose tied group names a parameter the network lacks is refused, loading nothing") {
  TempDir tmp;
  const std::string path = tmp / "tied";
  auto a = make<nn::Linear>(4, 3), b = make<nn::Linear>(4, 3);
  b->shareParameters(*a);
  auto net = make<nn::Sequential>(std::initializer_list<ModulePtr>{a, make<nn::Tanh>(), b});
  nn::save_model(*net, path);
  // rename one path of the "tied" record
  std::string json;
  {
    std::ifstream in(path + ".json");
    json.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = json.find("\"2.weight\"", json.find("\"tied\""));
  REQUIRE(at != std::string::npos);
  json.replace(at, 10, "\"7.weight\"");
  {
    std::ofstream out(path + ".json");
    out << json;
  }
  CHECK_THROWS_WITH_AS(nn::load_model(path),
                       doctest::Contains("tied: nn.Sequential::tieParameters: '7.weight' is not a parameter"), Error);
}
