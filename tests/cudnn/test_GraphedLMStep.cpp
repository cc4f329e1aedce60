// test_GraphedLMStep.cpp (GPU): capturable Adam / AdamW (Note [Capturable Adam] in nn/Adam.h) and a
// whole language-model training step captured in one CUDA graph.
// - capturable AdamW's eager steps give the default path's bits (float32, bfloat16, float16; many
//   tensors, so several launches; two parameter groups); the state dict reads the device counts
//   and loads in place; the errors name the optimizer and the option.
// - a captured capturable step replayed N times gives N eager capturable steps' bits, with a
//   WarmupCosineLR schedule stepped on the host between replays, and a device foundInf skipping.
// - GPT-2 and Llama (nn::DecoderLM converted to cudnn): forward, the cross-entropy loss left on the
//   device (lossOnDevice), backward, clip_by_norm, capturable AdamW over decayGroups, in float32 and
//   in bfloat16 with float32 master weights: K replays with refreshed static tokens against K eager
//   steps, parameters, moments, counts and loss bit for bit (cuDNN's fused flash attention
//   backward may accumulate dQ in another order from run to run: that case is compared within a
//   tolerance, the others to the bit).
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "convert/Convert.h"
#include "cudnn/Config.h"
#include "cudnn/CrossEntropyCriterion.h"
#include "nn/AdamW.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/DecoderLM.h"
#include "nn/LRScheduler.h"
#include "nn/MixedPrecision.h"
#include "tensor/Cuda.h"
#include "tensor/MultiTensor.h"

using namespace tensor;

namespace {
const Device gpu = Device::cuda(0);

std::vector<Tensor> tensors_on_gpu(DType dt, uint64_t seed, double lo = -1, double hi = 1) {
  Generator gen(seed);
  std::vector<Tensor> out;
  for (int64_t k = 1; k <= 70; ++k) out.push_back(uniform({k * 53}, lo, hi, gen, DType::Float64).to(gpu, dt));
  out.push_back(uniform({300, 70}, lo, hi, gen, DType::Float64).to(gpu, dt));
  return out;
}

std::vector<Tensor> clones(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.clone());
  return out;
}

// Two groups: the first 50 tensors decayed, the rest not.
std::vector<nn::ParamGroup> two_groups(const std::vector<Tensor>& p, const std::vector<Tensor>& g) {
  std::vector<nn::ParamGroup> groups(2);
  for (size_t i = 0; i < p.size(); ++i) {
    groups[i < 50 ? 0 : 1].params.push_back(p[i]);
    groups[i < 50 ? 0 : 1].grads.push_back(g[i]);
  }
  groups[1].weightDecay = 0.0;
  return groups;
}

void expect_same_optimizer(const nn::Optimizer& got, const nn::Optimizer& want, bool exact = true) {
  REQUIRE(got.params().size() == want.params().size());
  for (size_t i = 0; i < want.params().size(); ++i) {
    INFO("parameter ", i);
    if (exact) {
      CHECK(max_abs_diff(got.params()[i], want.params()[i]) == 0);
    } else {
      CHECK(rel_norm_error(got.params()[i], want.params()[i]) < 1e-2);
    }
    for (const char* name : {"exp_avg", "exp_avg_sq", "step"}) {
      if (!want.state(i).count(name)) continue;
      INFO(name);
      REQUIRE(got.state(i).count(name) == 1);
      const Tensor a = got.state(i).at(name), b = want.state(i).at(name);
      if (exact || std::string(name) == "step") {
        CHECK(max_abs_diff(a.to(Device::cpu(), DType::Float64), b.to(Device::cpu(), DType::Float64)) == 0);
      } else {
        CHECK(rel_norm_error(a, b) < 5e-2);
      }
    }
  }
}
}  // namespace

TEST_CASE("capturable AdamW's eager steps give the default path's bits; its state round-trips") {
  for (DType dt : {DType::Float32, DType::BFloat16, DType::Float16, DType::Float64}) {
    INFO(name(dt));
    const auto p0 = tensors_on_gpu(dt, 1);
    auto pa = clones(p0), pb = clones(p0), ga = tensors_on_gpu(dt, 2), gb = clones(ga);
    // eps 1e-4: float16 holds it (1e-8 rounds to 0, and a zero second moment then gives NaN)
    const nn::AdamW::Options o{.lr = 3e-3, .beta2 = 0.95, .eps = 1e-4, .weightDecay = 0.1};
    nn::AdamW::Options oc = o;
    oc.capturable = true;
    nn::AdamW host(two_groups(pa, ga), o), device(two_groups(pb, gb), oc);
    CHECK(device.capturable());
    for (int k = 0; k < 6; ++k) {
      const auto g = tensors_on_gpu(dt, 10 + k);
      for (size_t i = 0; i < g.size(); ++i) {
        ga[i].copy_(g[i]);
        gb[i].copy_(g[i]);
      }
      if (k == 3) {  // a schedule's setLr reaches the device lr at once
        host.setGroupLr(0, 1e-3);
        device.setGroupLr(0, 1e-3);
      }
      host.step();
      device.step();
    }
    CHECK(device.state(0).at("step").is_cuda());
    // float64: the scalars may differ by an ulp in rare steps (Note [Capturable Adam])
    expect_same_optimizer(device, host, dt != DType::Float64);
    // stateDict reads the counts; a load into a capturable optimizer puts them back on the device
    const auto saved = device.stateDict();
    CHECK(saved.at("3.step").is_cpu());
    CHECK(saved.at("3.step").item() == 6);
    auto pc = clones(pb), gc = clones(gb);
    nn::AdamW resumed(two_groups(pc, gc), oc);
    resumed.setGroupLr(0, 1e-3);
    resumed.loadStateDict(saved);
    device.step();
    resumed.step();
    expect_same_optimizer(resumed, device);
    CHECK(resumed.state(3).at("step").is_cuda());
    CHECK(resumed.stateDict().at("3.step").item() == 7);
  }
}

TEST_CASE("capturable AdamW refuses what it cannot step, naming itself and the option") {
  Tensor p = ones({8}, DType::Float32, gpu), g = full({8}, 0.5, DType::Float32, gpu);
  // strided parameters cannot take the fused path
  Tensor wide = ones({8, 2}, DType::Float32, gpu), gw = ones({8, 2}, DType::Float32, gpu);
  nn::AdamW strided({wide.select(1, 0)}, {gw.select(1, 0)}, nn::AdamW::Options{.capturable = true});
  CHECK_THROWS_WITH_AS(strided.step(), doctest::Contains("nn.AdamW::step: capturable expects every parameter dense"),
                       Error);
  nn::AdamW unfused({p}, {g}, nn::AdamW::Options{.capturable = true});
  unfused.fused = false;
  CHECK_THROWS_WITH_AS(unfused.step(), doctest::Contains("capturable expects fused = true"), Error);
  // the default optimizer's capture error names the option
  nn::AdamW plain({p}, {g});
  plain.step();
  CHECK_THROWS_WITH_AS(cuda::Graph::capture([&] { plain.step(); }),
                       doctest::Contains("nn.AdamW::step: cannot be captured in a CUDA graph"), Error);
  CHECK_THROWS_WITH_AS(cuda::Graph::capture([&] { plain.step(); }), doctest::Contains("capturable = true"), Error);
  // a capture before the first step: no state to make inside it
  nn::AdamW fresh({p}, {g}, nn::AdamW::Options{.capturable = true});
  CHECK_THROWS_WITH_AS(cuda::Graph::capture([&] { fresh.step(); }),
                       doctest::Contains("nn.AdamW::step: cannot make its moments and step counts while a CUDA graph "
                                         "captures: run one eager step first"),
                       Error);
  fresh.step();
  CHECK_THROWS_WITH_AS(cuda::Graph::capture([&] { fresh.setLr(0.5); }),
                       doctest::Contains("nn.AdamW::setLr: cannot write the lr of parameter group 0"), Error);
  CHECK_FALSE(cuda::Graph::capturing(0));
}

TEST_CASE("a captured capturable AdamW step replays as the eager steps, lr schedule and skips included") {
  for (DType dt : {DType::Float32, DType::BFloat16}) {
    INFO(name(dt));
    const auto p0 = tensors_on_gpu(dt, 3);
    auto pa = clones(p0), pb = clones(p0), ga = tensors_on_gpu(dt, 4), gb = clones(ga);
    const nn::AdamW::Options o{.lr = 1e-2, .beta2 = 0.95, .weightDecay = 0.1, .capturable = true};
    nn::AdamW eager(two_groups(pa, ga), o), graphed(two_groups(pb, gb), o);
    nn::WarmupCosineLR se(eager, 3, 12, 1e-4), sg(graphed, 3, 12, 1e-4);
    Tensor found = zeros({1}, DType::Float32, gpu);  // a GradScaler's verdict, refreshed in place
    eager.stepIfFinite(found);                       // warm-up: moments, counts, device lrs
    graphed.stepIfFinite(found);
    se.step();
    sg.step();
    const cuda::Graph graph = cuda::Graph::capture([&] { graphed.stepIfFinite(found); });
    expect_same_optimizer(graphed, eager);  // the capture ran nothing
    for (int k = 0; k < 8; ++k) {
      INFO("replay ", k);
      const auto g = tensors_on_gpu(dt, 20 + k);
      for (size_t i = 0; i < g.size(); ++i) {
        ga[i].copy_(g[i]);
        gb[i].copy_(g[i]);
      }
      found.fill_(k == 4 ? 1 : 0);  // replay 4 overflowed: skipped on the device, counts included
      eager.stepIfFinite(found);
      graph.replay();
      se.step();
      sg.step();
      expect_same_optimizer(graphed, eager);
    }
    CHECK(graphed.state(0).at("step").item() == 1 + 7);
    CHECK(max_abs_diff(graphed.params()[0], p0[0]) > 0);  // it trained
  }
}

namespace {
nn::DecoderLMConfig tiny(nn::DecoderKind kind) {
  nn::DecoderLMConfig c;
  c.kind = kind;
  c.vocabSize = 96;
  c.nPositions = 64;
  c.nEmbd = 64;
  c.nLayer = 2;
  c.nHead = 4;  // head size 16: cuDNN's fused attention takes it
  if (kind == nn::DecoderKind::Llama) {
    c.nKvHead = 2;
    c.intermediateSize = 128;
    c.tied = false;
  }
  return c;
}

// One training run: the model converted to cudnn on the GPU, static token inputs, and the step
// the benchmark times (samples/llm_benchmark.cpp --graph).
struct LMRun {
  static constexpr int64_t B = 4, S = 32;
  nn::DecoderLMConfig config;
  std::shared_ptr<nn::DecoderLM> model;
  std::unique_ptr<nn::MasterWeights> master;  // 16-bit models
  std::unique_ptr<nn::AdamW> opt;
  std::shared_ptr<cudnn::CrossEntropyCriterion> criterion;
  Tensor tokens = zeros({B, S}, DType::Int64, gpu), targets = zeros({B * S}, DType::Int64, gpu);
  Tensor loss;  // the criterion's device loss: the same tensor every step

  LMRun(nn::DecoderKind kind, DType dt, const std::map<std::string, Tensor>& state) : config(tiny(kind)) {
    auto cpu = kind == nn::DecoderKind::GPT2 ? nn::make_gpt2(config) : nn::make_llama(config);
    cpu->loadStateDict(state);
    model = std::dynamic_pointer_cast<nn::DecoderLM>(nn::convert(cpu, cudnn::backend));
    REQUIRE(model);
    model->to(gpu);
    if (dt != DType::Float32) model->to(dt);
    model->train();
    model->setFreeIntermediateGradients(true);
    const nn::AdamW::Options o{.lr = 3e-3, .beta2 = 0.95, .weightDecay = 0.1, .capturable = true};
    if (dt != DType::Float32) {
      master = std::make_unique<nn::MasterWeights>(*model);
      opt = std::make_unique<nn::AdamW>(master->groups(), o);
    } else {
      opt = std::make_unique<nn::AdamW>(nn::decayGroups(*model), o);
    }
    criterion = std::dynamic_pointer_cast<cudnn::CrossEntropyCriterion>(
        nn::convert(nn::CriterionPtr(std::make_shared<nn::CrossEntropyCriterion>()), cudnn::backend));
    REQUIRE(criterion);
  }
  // No host read anywhere: the whole step can be captured.
  void step() {
    model->zeroGradParameters();
    const Tensor& logits = model->forward(tokens);
    const Tensor scores = logits.view({B * S, config.vocabSize});
    loss = criterion->lossOnDevice(scores, targets);
    const Tensor& gy = criterion->backward(scores, targets);
    model->backward(tokens, gy.view(logits.sizes()));
    if (master) master->gradsToMaster();
    tensor::cuda::clip_by_norm(opt->grads(), 1.0, 2.0);
    opt->step();
    if (master) master->paramsToModel();
  }
};

void fill_batch(LMRun& r, Generator& gen) {
  const double V = static_cast<double>(r.config.vocabSize);
  r.tokens.copy_(uniform({LMRun::B, LMRun::S}, 0, V, gen, DType::Float64).floor().to(DType::Int64));
  r.targets.copy_(uniform({LMRun::B * LMRun::S}, 0, V, gen, DType::Float64).floor().to(DType::Int64));
}

void expect_replays_match_eager(nn::DecoderKind kind, DType dt, bool fusedAttention) {
  INFO(nn::decoder_kind_name(kind), " ", name(dt), fusedAttention ? " fused attention" : " attention fallback");
  cudnn::ScopedConfig flags(fusedAttention ? "allow_tf32=false,deterministic=true"
                                           : "allow_tf32=false,deterministic=true,attention.fused=false");
  manual_seed(17);
  auto init = kind == nn::DecoderKind::GPT2 ? nn::make_gpt2(tiny(kind)) : nn::make_llama(tiny(kind));
  std::map<std::string, Tensor> state;
  for (auto& [key, t] : init->stateDict()) state.emplace(key, t.clone());
  LMRun eager(kind, dt, state), graphed(kind, dt, state);
  Generator ge(5), gg(5);        // the same batches for both
  for (int k = 0; k < 2; ++k) {  // warm-up: plans, workspaces, the optimizer's state
    fill_batch(eager, ge);
    fill_batch(graphed, gg);
    eager.step();
    graphed.step();
  }
  const bool exact = !fusedAttention;
  const cuda::Graph graph = cuda::Graph::capture([&] { graphed.step(); });
  CHECK(graph.nodes() > 20);
  expect_same_optimizer(*graphed.opt, *eager.opt, exact);  // the capture ran nothing
  const Tensor before = graphed.opt->params()[0].clone();
  for (int k = 0; k < 4; ++k) {
    INFO("replay ", k);
    fill_batch(eager, ge);
    fill_batch(graphed, gg);
    eager.step();
    graph.replay();
    if (exact) {
      CHECK(graphed.loss.item() == eager.loss.item());
    } else {
      CHECK(graphed.loss.item() == doctest::Approx(eager.loss.item()).epsilon(1e-2));
    }
    expect_same_optimizer(*graphed.opt, *eager.opt, exact);
    const auto pg = graphed.model->parameters(), pe = eager.model->parameters();
    for (size_t i = 0; i < pe.size(); ++i) {
      if (exact) {
        CHECK(max_abs_diff(pg[i], pe[i]) == 0);
      } else {
        CHECK(rel_norm_error(pg[i], pe[i]) < 1e-2);
      }
    }
  }
  CHECK(graphed.opt->state(0).at("step").item() == 2 + 4);
  CHECK(rel_norm_error(graphed.opt->params()[0], before) > 0);  // it trained
  // the device loss is the criterion's own double
  const Tensor scores = eager.model->forward(eager.tokens).view({LMRun::B * LMRun::S, eager.config.vocabSize});
  const double host = eager.criterion->forward(scores, eager.targets);
  CHECK(eager.criterion->lossOnDevice(scores, eager.targets).item() == host);
}
}  // namespace

TEST_CASE("a GPT-2 / Llama training step captured in one CUDA graph replays as the eager steps, bit for bit") {
  for (const auto kind : {nn::DecoderKind::GPT2, nn::DecoderKind::Llama}) {
    expect_replays_match_eager(kind, DType::Float32, false);
    expect_replays_match_eager(kind, DType::BFloat16, false);
    expect_replays_match_eager(kind, DType::BFloat16, true);
  }
}
