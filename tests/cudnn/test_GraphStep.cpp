// test_GraphStep.cpp: a whole training step of cudnn twins (forward, the criterion's gradient,
// backward, fused SGD update) captured once as a CUDA graph (tensor::cuda::Graph, Note [CUDA
// graphs] in tensor/Cuda.h) and replayed, against the same step run eagerly on an identical
// network: parameters, batch-norm statistics and gradients agree after every replay.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "convert/Convert.h"
#include "cudnn/core/Config.h"
#include "nn/Adam.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/Dropout.h"
#include "nn/Linear.h"
#include "nn/ReLU.h"
#include "nn/SGD.h"
#include "nn/Sequential.h"
#include "nn/SpatialBatchNormalization.h"
#include "nn/SpatialConvolution.h"
#include "nn/SpatialMaxPooling.h"
#include "nn/View.h"
#include "tensor/Cuda.h"

using namespace tensor;

namespace {

const Device gpu = Device::cuda(0);

nn::ModulePtr small_convnet(bool dropout = false) {
  auto s = std::make_shared<nn::Sequential>();
  s->add(std::make_shared<nn::SpatialConvolution>(3, 8, 3, 3, 1, 1, 1, 1));
  s->add(std::make_shared<nn::SpatialBatchNormalization>(8));
  s->add(std::make_shared<nn::ReLU>(true));
  s->add(std::make_shared<nn::SpatialMaxPooling>(2, 2, 2, 2));
  s->add(std::make_shared<nn::View>(Shape{-1, 8 * 4 * 4}));
  if (dropout) s->add(std::make_shared<nn::Dropout>(0.3));
  s->add(std::make_shared<nn::Linear>(8 * 4 * 4, 10));
  return s;
}

struct Trainer {
  nn::ModulePtr net;
  nn::CriterionPtr criterion;
  std::unique_ptr<nn::SGD> sgd;

  explicit Trainer(const std::map<std::string, Tensor>& state, bool dropout = false) {
    net = nn::convert(small_convnet(dropout), nn::Backend::cudnn);
    net->to(gpu);
    net->loadStateDict(state);
    net->train();
    criterion = nn::convert(nn::CriterionPtr(std::make_shared<nn::CrossEntropyCriterion>()), nn::Backend::cudnn);
    sgd = std::make_unique<nn::SGD>(*net, 0.05, 0.9);
  }
  // No host read: the criterion's gradient needs no loss value.
  void step(const Tensor& x, const Tensor& target) {
    sgd->zeroGrad();
    const Tensor& y = net->forward(x);
    net->backward(x, criterion->updateGradInput(y, target));
    sgd->step();
  }
};

void expect_same_state(nn::Module& got, nn::Module& want) {
  auto a = got.stateDict(), b = want.stateDict();
  REQUIRE(a.size() == b.size());
  for (auto& [key, t] : b) {
    INFO(key);
    REQUIRE(a.count(key) == 1);
    CHECK(rel_norm_error(a.at(key), t) < 1e-6);
  }
  auto ga = got.namedGradParameters(), gb = want.namedGradParameters();
  REQUIRE(ga.size() == gb.size());
  for (size_t i = 0; i < ga.size(); ++i) {
    INFO("grad of ", ga[i].first);
    CHECK(rel_norm_error(ga[i].second, gb[i].second) < 1e-6);
  }
}

// channels_last: the batch norm trains through cuDNN's persistent kernels, whose running
// statistics come through increments the graph must leave zeroed for the next replay (Note
// [Persistent batch norm and Inf] in cudnn/kernels/BatchNorm.h).
void expect_replays_match_eager(bool channels_last) {
  INFO((channels_last ? "channels-last" : "row-major"));
  cudnn::ScopedConfig flags("deterministic=true,allow_tf32=false");
  manual_seed(81);
  nn::ModulePtr init = small_convnet();
  std::map<std::string, Tensor> state;
  for (auto& [key, t] : init->stateDict()) state.emplace(key, t.clone());
  Trainer graphed(state), eager(state);

  Generator gen(82);
  // static inputs, refreshed in place
  Tensor x =
      empty({16, 3, 8, 8}, DType::Float32, gpu, channels_last ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous);
  Tensor target = empty({16}, DType::Int64, gpu);
  int batch = 0;
  auto next_batch = [&] {
    x.copy_(uniform({16, 3, 8, 8}, -1, 1, gen));
    std::vector<int64_t> labels(16);
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>((i * 7 + batch * 3) % 10);
    target.copy_(from_vector(labels));
    ++batch;
  };
  for (int k = 0; k < 3; ++k) {  // warm-up: plans, buffers, momentum
    next_batch();
    graphed.step(x, target);
    eager.step(x, target);
  }
  cuda::Graph g = cuda::Graph::capture([&] { graphed.step(x, target); });
  CHECK(g.nodes() > 10);
  expect_same_state(*graphed.net, *eager.net);  // capturing ran nothing
  const Tensor before = graphed.net->stateDict().at("0.weight").clone();
  for (int k = 0; k < 4; ++k) {
    next_batch();
    g.replay();
    eager.step(x, target);
    expect_same_state(*graphed.net, *eager.net);
  }
  CHECK(rel_norm_error(graphed.net->stateDict().at("0.weight"), before) > 1e-4);  // it did train
}

}  // namespace

TEST_CASE("a captured training step replays as the eager step computes, batch after batch") {
  expect_replays_match_eager(false);
  expect_replays_match_eager(true);
}

// Dropout draws its mask from the default generator inside the capture (Note [Random fills in
// CUDA graphs]): each replay must draw a fresh mask, the one the eager step draws from the same
// generator state. Both networks are reseeded to the same seed before their step.
TEST_CASE("a captured step with dropout draws a fresh mask at every replay, the eager step's mask") {
  cudnn::ScopedConfig flags("deterministic=true,allow_tf32=false");
  manual_seed(91);
  nn::ModulePtr init = small_convnet(true);
  std::map<std::string, Tensor> state;
  for (auto& [key, t] : init->stateDict()) state.emplace(key, t.clone());
  Trainer graphed(state, true), eager(state, true);
  Generator gen(92);
  Tensor x = uniform({16, 3, 8, 8}, -1, 1, gen).to(gpu);
  Tensor target = from_vector(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5}).to(gpu);
  for (uint64_t seed : {1, 2}) {  // warm-up
    manual_seed(seed);
    graphed.step(x, target);
    manual_seed(seed);
    eager.step(x, target);
  }
  const uint64_t offset_before = default_generator().offset();
  cuda::Graph g = cuda::Graph::capture([&] { graphed.step(x, target); });
  CHECK(default_generator().offset() == offset_before);  // the capture drew nothing
  std::vector<Tensor> grads;
  for (uint64_t seed : {10, 11, 12}) {
    manual_seed(seed);
    g.replay();
    const uint64_t used = default_generator().offset();
    CHECK(used > 0);  // the replay advanced the generator by its draws
    manual_seed(seed);
    eager.step(x, target);
    CHECK(default_generator().offset() == used);  // by as many as the eager step
    expect_same_state(*graphed.net, *eager.net);
    grads.push_back(graphed.net->namedGradParameters().back().second.cpu());
  }
  // the same batch, different masks: the last layer's gradients differ from replay to replay
  CHECK(max_abs_diff(grads[0], grads[1]) > 0);
  CHECK(max_abs_diff(grads[1], grads[2]) > 0);
}

TEST_CASE("Adam refuses a capture, naming itself: a replay would repeat the step count of the capture") {
  Tensor p = ones({8}, DType::Float32, gpu), g = full({8}, 0.5, DType::Float32, gpu);
  nn::Adam adam({p}, {g}, 0.1);
  adam.step();  // warm-up: the moments exist
  const Tensor before = p.cpu();
  CHECK_THROWS_WITH_AS(cuda::Graph::capture([&] { adam.step(); }),
                       doctest::Contains("nn.Adam::step: cannot be captured"), Error);
  CHECK(max_abs_diff(p.cpu(), before) == 0);
  adam.step();  // still usable eagerly
  CHECK(max_abs_diff(p.cpu(), before) > 0);
  CHECK_FALSE(cuda::Graph::capturing(0));
}
