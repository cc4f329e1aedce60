// test_TrainingMachinery.cpp (GPU): the CUDA paths of the training machinery.
// - clipGradNorm's fused multi-tensor norm and scaling (Note [Fused clipping], nn/ClipGrad.h)
//   against the CPU path, norms 2 and inf, in every floating dtype, over many tensors (several
//   launches), with a NaN; and recorded in a CUDA graph (so no host synchronisation).
// - GradScaler's fused unscale-and-check: a forced overflow skips exactly that step; its device
//   path (Note [Capturable loss scaling], nn/GradScaler.h) gives the host path's bits, and a
//   captured mixed-precision step replayed N times gives N eager steps' bits, overflow included.
// - float16 and bfloat16 training with float32 master weights and loss scaling reaches the
//   loss of float32 training (cudnn twins; batch norm keeps float32 statistics).
// - a checkpointed run resumed mid-epoch on the GPU gives the uninterrupted run's bits.
// - the DataLoader's pinned, asynchronous copies (Note [Asynchronous batches], train/Data.h)
//   hand out the synchronous path's bits, and a batch stays intact while the step that reads
//   it is still queued behind slow work (the lifetime rule), also with many small batches;
//   and the pieces under it (tensor/CudaAsync.h): a pinned buffer copied on a side stream,
//   ordered with the device's stream by an event.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "convert/Convert.h"
#include "cudnn/core/Config.h"
#include "nn/AdamW.h"
#include "nn/BatchNormalization.h"
#include "nn/ClipGrad.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/GradScaler.h"
#include "nn/Linear.h"
#include "nn/MixedPrecision.h"
#include "nn/ReLU.h"
#include "nn/SGD.h"
#include "nn/Sequential.h"
#include "tensor/Cuda.h"
#include "tensor/CudaAsync.h"
#include "tensor/MultiTensor.h"
#include "tests/support/GradCheck.h"
#include "train/Checkpoint.h"
#include "train/Data.h"

using namespace tensor;

namespace {
const Device gpu = Device::cuda(0);

std::vector<Tensor> grads_on(Device device, DType dt, uint64_t seed) {
  Generator gen(seed);
  std::vector<Tensor> out;
  for (int64_t k = 1; k <= 60; ++k) out.push_back(uniform({k * 37}, -1, 1, gen, DType::Float64).to(device, dt));
  out.push_back(uniform({5000, 3}, -1, 1, gen, DType::Float64).to(device, dt));
  out.push_back(zeros({0}, dt, device));
  return out;
}
}  // namespace

TEST_CASE("fused clipGradNorm on the GPU matches the CPU path (norms 2 and inf, every dtype)") {
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    for (double p : {2.0, std::numeric_limits<double>::infinity()}) {
      INFO(name(dt), " norm ", p);
      auto g = grads_on(gpu, dt, 5);
      auto c = grads_on(Device::cpu(), dt, 5);
      const Tensor tg = nn::clipGradNorm(g, 1.0, p), tc = nn::clipGradNorm(c, 1.0, p);
      CHECK(tg.is_cuda());
      const double tol = dt == DType::Float64 ? 1e-12 : dt == DType::Float32 ? 1e-5 : 1e-2;
      CHECK(tg.item() == doctest::Approx(tc.item()).epsilon(tol));
      for (size_t i = 0; i < g.size(); ++i) CHECK(max_abs_diff(g[i].cpu(), c[i]) <= tol);
      // below maxNorm: the factor is 1, the gradients keep their bits
      auto h = grads_on(gpu, dt, 6);
      const Tensor before = h[3].clone();
      nn::clipGradNorm(h, 1e6, p);
      CHECK(max_abs_diff(h[3], before) == 0);
    }
  }
  auto g = grads_on(gpu, DType::Float32, 7);
  g[4].fill_(std::numeric_limits<double>::quiet_NaN());
  CHECK_THROWS_WITH_AS(nn::clipGradNorm(g, 1.0, 2.0, true), doctest::Contains("expected a finite total norm"), Error);
  CHECK(std::isnan(nn::clipGradNorm(g, 1.0).item()));
}

TEST_CASE("fused clipping records into a CUDA graph (no host synchronisation)") {
  auto g = grads_on(gpu, DType::Float32, 8);
  auto ref = grads_on(gpu, DType::Float32, 8);
  Tensor norm;
  const cuda::Graph graph = cuda::Graph::capture([&] { norm = tensor::cuda::clip_by_norm(g, 0.5, 2.0); });
  graph.replay();
  const Tensor want = nn::clipGradNorm(ref, 0.5);
  CHECK(norm.item() == doctest::Approx(want.item()).epsilon(1e-6));
  CHECK(max_abs_diff(g[10], ref[10]) < 1e-7);
}

TEST_CASE("GradScaler on CUDA gradients: fused unscale, a forced overflow skipped") {
  for (DType dt : {DType::Float32, DType::Float16}) {
    INFO(name(dt));
    Tensor p = full({3000}, 1.0, dt, gpu), g = zeros({3000}, dt, gpu);
    Tensor q = full({7}, 1.0, dt, gpu), gq = zeros({7}, dt, gpu);
    nn::SGD opt({p, q}, {g, gq}, 0.5);
    nn::GradScaler s({.initScale = 1024});
    g.fill_(512);
    gq.fill_(256);
    CHECK(s.step(opt));
    CHECK(g.cpu().get({5}) == 0.5);
    CHECK(q.cpu().get({0}) == 1 - 0.5 * 0.25);
    s.update();
    g.fill_(1);
    Tensor one = g.narrow(0, 2999, 1);
    one.fill_(std::numeric_limits<double>::infinity());
    const Tensor before = p.clone();
    CHECK(s.step(opt));  // the device path: the optimizer called, its kernels skipping
    CHECK(s.onDevice());
    CHECK(s.foundInf());
    CHECK(max_abs_diff(p, before) == 0);
    s.update();
    CHECK(s.scale() == 512);
    CHECK(s.skippedSteps() == 1);
  }
}

TEST_CASE("GradScaler's device path gives the host path's bits: parameters, scale, tracker, skipped steps") {
  // The host path on CPU tensors against the device path on CUDA ones (fused SGD has the CPU's
  // bits in float32 and float64), over clean steps, growth and forced overflows; the overflow of
  // step 0 comes before any momentum buffer exists (SGD then reads the flag on the host).
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dt : {DType::Float32, DType::Float64}) {
    INFO(name(dt));
    Generator gen(31);
    const Tensor p0 = uniform({5000}, -1, 1, gen, DType::Float64).to(dt),
                 q0 = uniform({7}, -1, 1, gen, DType::Float64).to(dt);
    Tensor pc = p0.clone(), qc = q0.clone(), gpc = zeros_like(pc), gqc = zeros_like(qc);
    Tensor pg = p0.to(gpu), qg = q0.to(gpu), gpg = zeros_like(pg), gqg = zeros_like(qg);
    const nn::SGD::Options o{.lr = 0.5, .momentum = 0.5, .weightDecay = 0.25};
    nn::SGD host({pc, qc}, {gpc, gqc}, o), device({pg, qg}, {gpg, gqg}, o);
    nn::GradScaler hs({.initScale = 8, .growthInterval = 2}), ds({.initScale = 8, .growthInterval = 2});
    for (int k = 0; k < 9; ++k) {
      INFO("step ", k);
      Tensor u = uniform({5000}, -1, 1, gen, DType::Float64).to(dt),
             v = uniform({7}, -1, 1, gen, DType::Float64).to(dt);
      if (k == 0 || k == 3) u.set({4321}, inf);
      if (k == 6) v.set({2}, nan);
      gpc.copy_(hs.scaleGrad(u));
      gqc.copy_(hs.scaleGrad(v));
      gpg.copy_(ds.scaleGrad(u.to(gpu)));
      gqg.copy_(ds.scaleGrad(v.to(gpu)));
      if (k != 0 && k != 3 && k != 6) CHECK(max_abs_diff(gpg.cpu(), gpc) == 0);  // (Inf - Inf is NaN)
      hs.step(host);
      ds.step(device);
      CHECK(ds.foundInf() == hs.foundInf());
      hs.update();
      ds.update();
      CHECK_FALSE(hs.onDevice());
      CHECK(ds.onDevice());
      CHECK(max_abs_diff(pg.cpu(), pc) == 0);
      CHECK(max_abs_diff(qg.cpu(), qc) == 0);
      CHECK(ds.stateDict() == hs.stateDict());  // scale, tracker, skipped steps
    }
    CHECK(hs.skippedSteps() == 3);
    CHECK(hs.scale() == 8);  // 8 -> 4 (step 0) -> 8 (1, 2) -> 4 (3) -> 8 (4, 5) -> 4 (6) -> 8 (7, 8)
    CHECK(device.state(0).count("momentum_buffer") == 1);
    // a state loaded into a scaler on the device lands in its device tensors
    nn::GradScaler r;
    r.scaleGrad(ones({1}, DType::Float32, gpu));
    REQUIRE(r.onDevice());
    r.loadStateDict(hs.stateDict());
    CHECK(r.stateDict() == hs.stateDict());
  }
  // the device entry points check their flags and factors
  Tensor p = ones({4}, DType::Float32, gpu), g = ones({4}, DType::Float32, gpu);
  CHECK_THROWS_WITH_AS(tensor::cuda::sgd_step({p}, {g}, {}, {}, {.lr = 1}, zeros({2}, DType::Float32, gpu)),
                       doctest::Contains("sgd_step: expected foundInf as a one-element float32 tensor on cuda:0"),
                       Error);
  CHECK_THROWS_WITH_AS(tensor::cuda::scale_by({p.to(DType::Float64)}, ones({1}, DType::Float32, gpu)),
                       doctest::Contains("scale_by: expected factor as a one-element float64 tensor"), Error);
  CHECK_THROWS_WITH_AS(tensor::cuda::scale_by({p}, ones({1}, DType::Float32)),
                       doctest::Contains("scale_by: expected factor as a one-element float32 tensor on cuda:0"), Error);
}

TEST_CASE("a captured mixed-precision step replayed N times gives N eager steps' bits, overflows included") {
  // float16 cudnn network, float32 master weights, SGD with momentum, loss scaling: the whole step
  // captured once (Note [Capturable loss scaling], nn/GradScaler.h) against the same step run
  // eagerly on a twin; one replay's input holds an Inf, so its gradients overflow and it skips.
  cudnn::config().allow_tf32 = false;
  Generator gen(41);
  const Tensor y = tensor::from_vector(std::vector<int64_t>{0, 1, 2, 3, 1, 2, 0, 3}).to(gpu);
  std::vector<Tensor> inputs;
  for (int k = 0; k < 7; ++k) inputs.push_back(normal({8, 12}, 0, 1, gen).to(gpu, DType::Float16));
  inputs[4].narrow(0, 3, 1).fill_(std::numeric_limits<double>::infinity());
  struct Run {
    std::shared_ptr<nn::Sequential> net;
    std::unique_ptr<nn::MasterWeights> master;
    std::unique_ptr<nn::SGD> opt;
    nn::GradScaler scaler{{.initScale = 1024, .growthInterval = 2}};
    nn::CriterionPtr crit = nn::convert(std::make_shared<nn::CrossEntropyCriterion>(), cudnn::backend);
    Tensor x = zeros({8, 12}, DType::Float16, gpu);  // static input, refreshed in place
    Run() {
      manual_seed(42);
      auto cpu = std::make_shared<nn::Sequential>();
      cpu->add(std::make_shared<nn::Linear>(12, 16));
      cpu->add(std::make_shared<nn::ReLU>());
      cpu->add(std::make_shared<nn::Linear>(16, 4));
      net = std::dynamic_pointer_cast<nn::Sequential>(nn::convert(cpu, cudnn::backend));
      net->to(gpu);
      net->to(DType::Float16);
      master = std::make_unique<nn::MasterWeights>(*net);
      opt = std::make_unique<nn::SGD>(master->params(), master->grads(), nn::SGD::Options{.lr = 0.05, .momentum = 0.9});
    }
    void step(const Tensor& y) {
      net->zeroGradParameters();
      const Tensor scores = net->forward(x).to(DType::Float32);
      net->backward(x, scaler.scaleGrad(crit->backward(scores, y)).to(DType::Float16));
      master->gradsToMaster();
      if (scaler.step(*opt)) master->paramsToModel();
      scaler.update();
    }
  };
  Run eager, graphed;
  for (Run* r : {&eager, &graphed}) {  // warm-up: plans, momentum buffers, the scaler's device state
    r->x.copy_(inputs[0]);
    r->step(y);
  }
  const cuda::Graph graph = cuda::Graph::capture([&] { graphed.step(y); });
  for (int k = 1; k < 7; ++k) {
    INFO("step ", k);
    eager.x.copy_(inputs[k]);
    eager.step(y);
    graphed.x.copy_(inputs[k]);
    graph.replay();
    CHECK(graphed.scaler.stateDict() == eager.scaler.stateDict());
    for (size_t i = 0; i < eager.master->params().size(); ++i) {
      CHECK(max_abs_diff(graphed.master->params()[i], eager.master->params()[i]) == 0);
      CHECK(max_abs_diff(graphed.net->parameters()[i], eager.net->parameters()[i]) == 0);
    }
  }
  CHECK(eager.scaler.skippedSteps() == 1);  // the replay of inputs[4]
  CHECK(eager.scaler.scale() == 4096);      // 1024 -> 2048 (steps 0, 1) -> 4096 (2, 3) -> 2048 (4) -> 4096 (5, 6)
}

TEST_CASE("float16 / bfloat16 training with float32 master weights reaches float32's loss") {
  cudnn::config().allow_tf32 = false;
  Generator gen(3);
  const Tensor x = normal({256, 16}, 0, 1, gen).to(gpu);
  Tensor y = empty({256}, DType::Int64);
  for (int64_t i = 0; i < 256; ++i) y.set({i}, (x.cpu().get({i, 0}) > 0) + 2.0 * (x.cpu().get({i, 1}) > 0));
  y = y.to(gpu);
  auto train = [&](DType dt) {
    manual_seed(4);
    auto net = std::make_shared<nn::Sequential>();
    net->add(std::make_shared<nn::Linear>(16, 32));
    net->add(std::make_shared<nn::BatchNormalization>(32));
    net->add(std::make_shared<nn::ReLU>());
    net->add(std::make_shared<nn::Linear>(32, 4));
    auto cu = std::dynamic_pointer_cast<nn::Sequential>(nn::convert(net, cudnn::backend));
    cu->to(gpu);
    cu->to(dt);
    // batch norm keeps float32 parameters and statistics under a 16-bit to()
    CHECK(cu->stateDict().at("1.running_mean").dtype() == (dt == DType::Float64 ? dt : DType::Float32));
    nn::MasterWeights master(*cu);
    nn::AdamW opt(master.groups(), {.lr = 1e-2});
    nn::GradScaler scaler({.enabled = dt == DType::Float16});
    auto crit = nn::convert(std::make_shared<nn::CrossEntropyCriterion>(), cudnn::backend);
    const Tensor xi = x.to(dt);
    double loss = 0;
    for (int step = 0; step < 150; ++step) {
      cu->zeroGradParameters();
      // the loss in float32 (as autocast computes losses), its gradient back in the network's dtype
      const Tensor scores = cu->forward(xi).to(DType::Float32);
      loss = crit->forward(scores, y);
      cu->backward(xi, scaler.scaleGrad(crit->backward(scores, y)).to(dt));
      master.gradsToMaster();
      if (scaler.step(opt)) master.paramsToModel();
      scaler.update();
    }
    for (const Tensor& m : master.params()) CHECK(m.dtype() == DType::Float32);
    return loss;
  };
  const double f32 = train(DType::Float32);
  CHECK(f32 < 0.2);
  CHECK(train(DType::Float16) < 0.2 + f32);
  CHECK(train(DType::BFloat16) < 0.25 + f32);
}

TEST_CASE("a GPU run resumed mid-epoch from a checkpoint gives the uninterrupted run's bits") {
  cudnn::config().allow_tf32 = false;
  const std::string dir = "/tmp/cudnn_nn_test_gpu_checkpoint";
  std::filesystem::remove_all(dir);
  Generator gen(9);
  const Tensor x = normal({48, 6}, 0, 1, gen);
  const Tensor y = x.select(1, 0).gt(0).to(DType::Int64);
  auto data = std::make_shared<nn::TensorDataset>(std::vector<Tensor>{x, y});
  struct Run {
    std::shared_ptr<nn::Module> net;
    std::unique_ptr<nn::AdamW> opt;
    std::unique_ptr<nn::DataLoader> loader;
    nn::GradScaler scaler{{.initScale = 128, .growthInterval = 2}};
    nn::TrainingState st;
  };
  auto make = [&](uint64_t seed) {
    auto r = std::make_unique<Run>();
    manual_seed(seed);
    auto net = std::make_shared<nn::Sequential>();
    net->add(std::make_shared<nn::Linear>(6, 8));
    net->add(std::make_shared<nn::BatchNormalization>(8));
    net->add(std::make_shared<nn::ReLU>());
    net->add(std::make_shared<nn::Linear>(8, 2));
    r->net = nn::convert(std::shared_ptr<nn::Module>(net), cudnn::backend);
    r->net->to(gpu);
    r->opt = std::make_unique<nn::AdamW>(*r->net);
    r->loader = std::make_unique<nn::DataLoader>(
        data, nn::DataLoader::Options{.batchSize = 8, .shuffle = true, .seed = 2, .device = gpu});
    r->st = {r->net.get(), r->opt.get(), nullptr, nullptr, &r->scaler, r->loader.get(), 0, 0, 1};
    manual_seed(11);
    return r;
  };
  auto crit = nn::convert(std::make_shared<nn::CrossEntropyCriterion>(), cudnn::backend);
  auto train = [&](Run& r, int64_t stop) {
    std::vector<Tensor> b;
    while (r.st.epoch < 2) {
      while (r.st.step < stop && r.loader->next(b)) {
        r.net->zeroGradParameters();
        crit->forward(r.net->forward(b[0]), b[1]);
        r.net->backward(b[0], r.scaler.scaleGrad(crit->backward(r.net->output, b[1])));
        nn::clipGradNorm(*r.net, 1.0);
        r.scaler.step(*r.opt);
        r.scaler.update();
        ++r.st.step;
      }
      if (r.st.step >= stop) return;
      r.loader->setEpoch(++r.st.epoch);
    }
  };
  auto whole = make(1);
  train(*whole, 1000);
  auto first = make(1);
  train(*first, 8);
  nn::save_checkpoint(dir, first->st);
  auto resumed = make(5);
  nn::load_checkpoint(dir, resumed->st);
  train(*resumed, 1000);
  for (const auto& [k, t] : whole->net->stateDict()) {
    INFO(k);
    const Tensor a = t.cpu().contiguous(), b = resumed->net->stateDict().at(k).cpu().contiguous();
    CHECK(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
  }
  std::filesystem::remove_all(dir);
}

namespace {
// Loads every batch of two shuffled epochs through `loader`; for each, queues slow work on the
// device's stream and then a clone of the batch behind it, and calls next() at once: a slot
// overwritten too early shows up in the clones.
std::vector<std::vector<Tensor>> gpu_epochs(nn::DataLoader& loader) {
  Tensor busy = ones({1 << 20}, DType::Float32, gpu);
  std::vector<std::vector<Tensor>> out;
  std::vector<Tensor> b;
  for (int64_t epoch : {0, 1}) {
    loader.setEpoch(epoch);
    while (loader.next(b)) {
      for (int i = 0; i < 8; ++i) busy.mul_(1.0);
      std::vector<Tensor> copies;
      for (const Tensor& t : b) {
        CHECK(t.device() == gpu);
        copies.push_back(t.clone());
      }
      out.push_back(std::move(copies));
    }
  }
  return out;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor x = a.cpu().contiguous(), y = b.cpu().contiguous();
  return x.sizes() == y.sizes() && x.dtype() == y.dtype() && std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
}

void check_async_matches_sync(int64_t n, int64_t batch, int prefetch) {
  Generator gen(21);
  const Tensor x = uniform({n, 3, 5, 5}, -1, 1, gen);
  Tensor y = empty({n}, DType::Int64);
  for (int64_t i = 0; i < n; ++i) y.set({i}, static_cast<double>(i));
  auto data = std::make_shared<nn::TensorDataset>(std::vector<Tensor>{x, y});
  nn::DataLoader sync(data, {.batchSize = batch, .shuffle = true, .seed = 4, .prefetch = 0, .device = gpu});
  nn::DataLoader async(data, {.batchSize = batch, .shuffle = true, .seed = 4, .prefetch = prefetch, .device = gpu});
  const auto a = gpu_epochs(async), s = gpu_epochs(sync);
  REQUIRE(a.size() == s.size());
  int64_t mismatches = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t k = 0; k < 2; ++k) mismatches += same_bits(a[i][k], s[i][k]) ? 0 : 1;
  }
  CHECK(mismatches == 0);
}
}  // namespace

TEST_CASE("DataLoader on the GPU: pinned asynchronous copies give the synchronous path's bits") {
  check_async_matches_sync(1000, 64, 2);  // the last batch smaller (40 rows)
  check_async_matches_sync(1000, 100, 1);
}

TEST_CASE("DataLoader on the GPU: a stress of many small batches") {
  check_async_matches_sync(3000, 1, 3);
  check_async_matches_sync(3001, 7, 2);
}

TEST_CASE("pinned buffer, side stream and event: an asynchronous copy ordered with the device's stream") {
  const int64_t n = 1 << 20;
  cuda::PinnedBuffer host(n * sizeof(float));
  auto* values = static_cast<float*>(host.data());
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 977) - 300.5f;
  Tensor dst = empty({n}, DType::Float32, gpu);
  cuda::Stream side(0);
  // the device's stream may still use dst's block (its previous owner): the side stream waits
  cuda::Event ready(0), copied(0);
  CHECK_FALSE(copied.recorded());
  ready.record(cuda::stream(0));
  ready.block(side.handle());
  cuda::copy_async(dst.raw_data(), true, host.data(), false, host.size(), side.handle(), 0);
  copied.record(side.handle());
  copied.block(cuda::stream(0));  // no host wait: the clone below runs after the copy
  const Tensor got = dst.clone().cpu();
  copied.synchronize();
  CHECK(std::memcmp(got.raw_data(), host.data(), host.size()) == 0);
  CHECK_THROWS_WITH_AS(cuda::copy_async(dst.raw_data(), true, host.data(), false, 4, nullptr, 0),
                       doctest::Contains("tensor::cuda::copy_async: null pointer or stream"), Error);
  CHECK_THROWS_WITH_AS(cuda::Stream(99), doctest::Contains("invalid device cuda:99"), Error);
}
