// ShardedDataParallel at world size 1 on one GPU (the NCCL backend): cudnn networks train
// bit for bit as alone for stages 1-3 (float32 with AdamW and clipping; bfloat16 parameters
// with float32 master shards against nn::MasterWeights), with the collectives overlapped on the
// group's stream and stage 3's prefetch (a cudnn GPT-2, block by block) and without. The memory counts, resharding and
// the multi-process paths are test_Mpi.sh's (CPU) and test_MultiGpu's.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <memory>

#include "convert/Convert.h"
#include "cudnn/core/Config.h"
#include "distributed/Dist.h"
#include "distributed/ShardedDataParallel.h"
#include "nn/AdamW.h"
#include "nn/ClipGrad.h"
#include "nn/DecoderLM.h"
#include "nn/GELU.h"
#include "nn/Linear.h"
#include "nn/MixedPrecision.h"
#include "nn/Sequential.h"
#include "tests/dist/SameBits.h"
#include "tests/dist/Training.h"
#include "tests/support/CheckpointedLM.h"

using dist::ShardedDataParallel;
using tensor::DType;
using tensor::Tensor;
using testing::same_bits;

namespace {
const tensor::Device gpu = tensor::Device::cuda(0);

struct SingleGroup {  // as test_DistributedDataParallel's: released at the end of the case
  std::shared_ptr<dist::ProcessGroup> group;
  SingleGroup() : group(dist::init(dist::WorldInfo{}, 60)) {}
  ~SingleGroup() {
    group.reset();
    dist::destroy();
  }
};

std::unique_ptr<nn::Optimizer> adamw(std::vector<Tensor> p, std::vector<Tensor> g) {
  nn::AdamW::Options o;
  o.lr = 0.01;
  return std::make_unique<nn::AdamW>(std::move(p), std::move(g), o);
}

// Linear 16 -> 32 -> GELU -> Linear 32 -> 16 as cudnn twins in `dtype` on the GPU
nn::ModulePtr mlp(uint64_t seed, DType dtype) {
  tensor::manual_seed(seed);
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::Linear>(16, 32));
  net->add(std::make_shared<nn::GELU>());
  net->add(std::make_shared<nn::Linear>(32, 16));
  nn::ModulePtr out = nn::convert(net, cudnn::backend);
  out->to(gpu);
  out->to(dtype);
  return out;
}
}  // namespace

TEST_CASE("ShardedDataParallel on one GPU: stages 1-3 train a cudnn convnet exactly as alone") {
  cudnn::ScopedConfig deterministic("deterministic=true");
  SingleGroup g;
  for (int stage = 1; stage <= 3; ++stage) {
    for (bool overlap : {true, false}) {
      CAPTURE(stage);
      CAPTURE(overlap);
      auto alone = testing::small_convnet(5, gpu);
      auto opt = adamw(alone->parameters(), alone->gradParameters());
      ShardedDataParallel::Options o;
      o.stage = stage;
      o.overlap = overlap;
      ShardedDataParallel model(testing::small_convnet(5, gpu), o, g.group);
      model.setOptimizer(adamw);
      auto criterion = nn::convert(std::make_shared<nn::CrossEntropyCriterion>(), cudnn::backend);
      double lossAlone = 0, lossSharded = 0;
      for (int s = 0; s < 3; ++s) {
        auto [xh, yh] = testing::batch(s, 16);
        const Tensor x = xh.to(gpu), y = yh.to(gpu);
        opt->zeroGrad();
        const Tensor& a = alone->forward(x);
        lossAlone = criterion->forward(a, y);
        alone->backward(x, criterion->backward(a, y));
        nn::clipGradNorm(*alone, 0.5);
        opt->step();
        model.zeroGradParameters();
        const Tensor& b = model.forward(x);
        lossSharded = criterion->forward(b, y);
        model.backward(x, criterion->backward(b, y));
        model.clipGradNorm(0.5);
        model.step();
      }
      CHECK(lossAlone == lossSharded);
      CHECK(same_bits(model.fullStateDict(), alone->stateDict()));
      const auto t = model.traffic();
      CHECK(t.reduceScatters > 0);
      // stages 2 and 3 on the group's stream (stage 3's all-gathers too), stage 1 in the compute order
      CHECK(t.overlapped == (overlap && stage > 1 ? t.reduceScatters + (stage == 3 ? t.allGathers : 0) : 0));
    }
  }
}

TEST_CASE("ShardedDataParallel on one GPU: bfloat16 parameters with float32 master shards train as nn::MasterWeights") {
  SingleGroup g;
  for (int stage : {1, 2, 3}) {
    CAPTURE(stage);
    auto alone = mlp(8, DType::BFloat16);
    nn::MasterWeights master(*alone, DType::Float32);
    auto opt = adamw(master.params(), master.grads());
    ShardedDataParallel::Options o;
    o.stage = stage;
    ShardedDataParallel model(mlp(8, DType::BFloat16), o, g.group);
    model.setOptimizer(adamw);
    REQUIRE(!model.masterShards().empty());
    CHECK(model.masterShards().front().dtype() == DType::Float32);
    CHECK(model.masterShards().front().device() == gpu);
    for (int s = 0; s < 3; ++s) {
      tensor::Generator gen(70 + static_cast<uint64_t>(s));
      const Tensor x = tensor::normal({24, 16}, 0, 1, gen).to(gpu, DType::BFloat16);
      const Tensor go = tensor::normal({24, 16}, 0, 1, gen).to(gpu, DType::BFloat16);
      alone->zeroGradParameters();
      alone->forward(x);
      alone->backward(x, go);
      master.gradsToMaster();
      opt->step();
      master.paramsToModel();
      model.zeroGradParameters();
      model.forward(x);
      model.backward(x, go);
      model.step();
    }
    const auto got = model.fullStateDict();
    CHECK(got.at("0.weight").dtype() == DType::BFloat16);
    CHECK(same_bits(got, alone->stateDict()));
  }
}

TEST_CASE(
    "ShardedDataParallel on one GPU: a cudnn GPT-2 block by block, overlapped and prefetched, trains exactly as "
    "alone") {
  cudnn::ScopedConfig flags("allow_tf32=false,deterministic=true,attention.fused=false");
  SingleGroup g;
  for (int stage : {2, 3}) {
    for (bool overlap : {true, false}) {
      CAPTURE(stage);
      CAPTURE(overlap);
      auto make = [] {
        auto lm = nn::convert(testing::make_checkpoint_model(nn::DecoderKind::GPT2, 13, 0.0, 4), cudnn::backend);
        lm->to(gpu);
        return lm;
      };
      auto alone = make();
      auto opt = adamw(alone->parameters(), alone->gradParameters());
      ShardedDataParallel::Options o;
      o.stage = stage;
      o.overlap = overlap;
      ShardedDataParallel model(make(), o, g.group);
      model.setOptimizer(adamw);
      const auto batch = testing::checkpoint_batch(dynamic_cast<nn::DecoderLM&>(*alone), 2, 7, DType::Float32, gpu);
      const Tensor &tokens = batch.first, &grad = batch.second;
      for (int s = 0; s < 3; ++s) {
        opt->zeroGrad();
        alone->forward(tokens);
        alone->backward(tokens, grad);
        opt->step();
        model.zeroGradParameters();
        model.forward(tokens);
        model.backward(tokens, grad);
        model.step();
      }
      CHECK(same_bits(model.fullStateDict(), alone->stateDict()));
      const auto t = model.traffic();
      MESSAGE("stage ", stage, " overlap ", overlap, ": ", t.allGathers, " all-gathers (", t.prefetched,
              " prefetched), ", t.reduceScatters, " reduce-scatters, ", t.overlapped, " overlapped");
      // wte, wpe, 4 blocks, ln_f, lm_head (tied to wte): 7 units, each reduce-scattered once a step
      CHECK(t.reduceScatters == 3 * 7);
      // stage 3: each unit gathered once a forward and once a backward (the tied one from the head
      // on) and by fullStateDict, whether prefetched or not (none is wasted); stage 2 after each step
      CHECK(t.allGathers == (stage == 3 ? 3 * 2 * 7 + 7 : 3 * 7));
      if (stage == 3 && overlap) {
        // from the second step on (the first records the order), every block's units but the
        // first's and the tied one's, in each direction: wpe, h.0-3, ln_f forward; ln_f, h.3-0 and
        // wpe (DecoderLM's backward runs wte before wpe) backward
        CHECK(t.prefetched == 2 * 2 * 6);
        CHECK(t.overlapped == t.allGathers + t.reduceScatters);
      } else {
        CHECK(t.prefetched == 0);
        CHECK(t.overlapped == (overlap ? t.reduceScatters : 0));
      }
    }
  }
}
