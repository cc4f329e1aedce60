// mpi_worker: one rank of the CPU data-parallel tests, started by tests/dist/test_Mpi.sh under
// mpirun (world sizes 2 and 4, the MPI backend). Prints "rank R: <result>" and exits 0, or
// "rank R: error: <message>" and exits 1. Cases:
//   collectives  broadcast from rank 0, all-reduce sum / average / max of CPU tensors; a
//                bfloat16 broadcast, and its all-reduce refused (MPI has no such type);
//                reduce-scatter (sum, average) and all-gather (separate and in place, bfloat16
//                too) of equal chunks, exact values
//   ddp          DistributedDataParallel of a small nn network (float64): every rank starts
//                from other weights, gets rank 0's; the gradients of one step, averaged in
//                buckets launched from the backward hooks, and the parameters after an SGD
//                step equal bit for bit those of one process on the whole global batch (values
//                on a dyadic grid, so every sum is exact whatever its order)
//   ddp-channels-last  the same with a convolution network whose filters are channels-last
//                (Module::to(MemoryFormat)) on every rank and in the one process: the same bits,
//                and the filters keep their layout
//   layouts-differ  channels-last filters on rank 0 only: every rank refuses the network,
//                naming the filter
//   sharded      ShardedDataParallel, stages 1, 2 and 3, with AdamW and gradient clipping, and
//                with SGD (momentum, weight decay), both with gradient accumulation (noSync), and
//                with a GradScaler whose overflow on one rank skips the step on all, and a
//                float32 network with float64 master shards against nn::MasterWeights, and
//                a network whose two layers hold one weight (tied, in the first block's unit):
//                every rank starts from other weights; after K steps the parameters equal bit
//                for bit those of one process on the whole global batch (Note [Exact sharded
//                runs] below); then the per-rank memory of parameters, gradients and optimizer
//                state by the CPU allocator's counts (Note [Memory by the allocator's counts]
//                below) and by the wrapper's own, stage 3's within 1.1 x one process's over N
//                plus the largest block
//   sharded-save DIR / sharded-resume DIR  a sharded checkpoint saved (stage 3, AdamW) and loaded
//                at another world size, into stages 3, 2, 1 and into one process: training
//                goes on bit-identical to an unbroken run
//   sharded-lm   a tiny GPT-2 (head tied to the embedding) at stages 1-3 with the default wrap
//                policy (a unit per transformer block, embedding, norm): every rank starts from
//                other weights and takes the same batch; after 3 AdamW steps the parameters
//                equal bit for bit those of one process
//   sharded-mismatch  rank 1 builds another model (a wider layer; an extra layer): every rank
//                refuses it, naming the parameter (or the counts) and the ranks
//   killed       the last rank kills itself (SIGKILL) in the second step: the others fail
//                with an error naming it, long before the timeout
//   sharded-killed  the same under ShardedDataParallel (stage 3): the others fail naming it
//   hung         the last rank sleeps through the second step: the others fail at the
//                timeout (CUDNN_NN_DIST_TIMEOUT), it fails when it comes back
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>

#include "distributed/Dist.h"
#include "distributed/DistributedDataParallel.h"
#include "distributed/ShardedDataParallel.h"
#include "nn/AdamW.h"
#include "nn/ClipGrad.h"
#include "nn/DecoderLM.h"
#include "nn/GradScaler.h"
#include "nn/Linear.h"
#include "nn/MSECriterion.h"
#include "nn/MixedPrecision.h"
#include "nn/ReLU.h"
#include "nn/SGD.h"
#include "nn/Sequential.h"
#include "nn/SpatialConvolution.h"
#include "nn/View.h"
#include "tensor/HostMemory.h"

namespace {

constexpr int64_t kGlobalBatch = 8;

// Values on a grid of 1/steps: sums and products of a few of them are exact in float64.
void to_grid(tensor::Tensor& t, double steps) {
  auto* d = static_cast<double*>(t.raw_data());
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = std::round(d[i] * steps) / steps;
}

std::shared_ptr<nn::Sequential> network(uint64_t seed) {
  tensor::manual_seed(seed);
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::Linear>(4, 8));
  net->add(std::make_shared<nn::ReLU>());
  net->add(std::make_shared<nn::Linear>(8, 4));
  net->to(tensor::DType::Float64);
  for (tensor::Tensor& p : net->parameters()) to_grid(p, 8);
  return net;
}

// [2 x 4 x 4] images: a 3x3 convolution (2 -> 3 planes), ReLU, and a Linear to 4 outputs.
std::shared_ptr<nn::Sequential> conv_network(uint64_t seed, tensor::MemoryFormat format) {
  tensor::manual_seed(seed);
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::SpatialConvolution>(2, 3, 3, 3, 1, 1, 1, 1));
  net->add(std::make_shared<nn::ReLU>());
  net->add(std::make_shared<nn::View>(tensor::Shape{3 * 4 * 4}));
  net->add(std::make_shared<nn::Linear>(3 * 4 * 4, 4));
  net->to(tensor::DType::Float64);
  for (tensor::Tensor& p : net->parameters()) to_grid(p, 8);
  net->to(format);
  return net;
}

std::pair<tensor::Tensor, tensor::Tensor> batch(int step, bool images = false) {
  tensor::Generator gen(300 + static_cast<uint64_t>(step));
  tensor::Tensor x = images ? tensor::uniform({kGlobalBatch, 2, 4, 4}, -2, 2, gen, tensor::DType::Float64)
                            : tensor::uniform({kGlobalBatch, 4}, -2, 2, gen, tensor::DType::Float64);
  tensor::Tensor y = tensor::uniform({kGlobalBatch, 4}, -2, 2, gen, tensor::DType::Float64);
  to_grid(x, 4);
  to_grid(y, 4);
  return {x, y};
}

// One step on rows [begin, begin + rows) of the global batch: forward, backward, SGD (lr 1/8).
void step(nn::Module& net, int s, int64_t begin, int64_t rows, bool update = true, bool images = false) {
  auto [x, y] = batch(s, images);
  const tensor::Tensor xs = x.narrow(0, begin, rows).contiguous();
  const tensor::Tensor ys = y.narrow(0, begin, rows).contiguous();
  nn::MSECriterion mse;
  nn::SGD sgd(net, 0.125);
  sgd.zeroGrad();
  const tensor::Tensor& out = net.forward(xs);
  mse.forward(out, ys);
  net.backward(xs, mse.backward(out, ys));
  if (update) sgd.step();
}

bool bit_equal(const std::vector<tensor::Tensor>& a, const std::vector<tensor::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].sizes() != b[i].sizes() || std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].nbytes()) != 0) return false;
  }
  return true;
}

std::string collectives(dist::ProcessGroup& g) {
  const int r = g.rank(), n = g.worldSize();
  tensor::Tensor t = tensor::full({5}, r + 1.0, tensor::DType::Float64);
  dist::broadcast(t, 0);
  if (tensor::max_abs_diff(t, tensor::ones({5}, tensor::DType::Float64)) != 0) return "error: broadcast";
  tensor::Tensor s = tensor::full({3}, r + 1.0, tensor::DType::Float32);
  dist::all_reduce(s, dist::ReduceOp::Sum);
  if (s.sum().item() != 3.0 * n * (n + 1) / 2) return "error: sum";
  tensor::Tensor a = tensor::full({3}, 2.0 * r, tensor::DType::Float64);
  dist::all_reduce(a, dist::ReduceOp::Avg);
  if (a.sum().item() != 3.0 * (n - 1)) return "error: average";
  tensor::Tensor m = tensor::full({2}, static_cast<double>(r), tensor::DType::Int64);
  dist::all_reduce(m, dist::ReduceOp::Max);
  if (m.sum().item() != 2.0 * (n - 1)) return "error: max";
  // 16-bit floats are broadcast as raw 16-bit words; MPI has no 16-bit float type to reduce in
  tensor::Tensor h = tensor::full({4}, r + 1.0, tensor::DType::BFloat16);
  dist::broadcast(h, 0);
  if (tensor::max_abs_diff(h, tensor::ones({4}, tensor::DType::BFloat16)) != 0) return "error: bfloat16 broadcast";
  if (g.backends() == "MPI") {
    try {
      dist::all_reduce(h, dist::ReduceOp::Sum);
      return "error: a bfloat16 all-reduce ran over MPI";
    } catch (const tensor::Error& e) {
      if (!std::strstr(e.what(), "MPI has no 16-bit float type")) return std::string("error: ") + e.what();
    }
  }
  // reduce-scatter: rank r's chunk c holds (r + 1) * (3c + j + 1); rank r gets the sum over the
  // ranks of its chunk, n (n + 1) / 2 * (3r + j + 1), or that over n (exact: halves, quarters)
  for (const tensor::DType dt : {tensor::DType::Float64, tensor::DType::Float32}) {
    for (const dist::ReduceOp op : {dist::ReduceOp::Sum, dist::ReduceOp::Avg}) {
      tensor::Tensor in = tensor::empty({3 * n}, tensor::DType::Float64);
      for (int64_t i = 0; i < 3 * n; ++i) in.data<double>()[i] = (r + 1.0) * static_cast<double>(i + 1);
      in = in.to(dt);
      tensor::Tensor out = tensor::zeros({3}, dt);
      dist::reduce_scatter(in, out, op);
      const tensor::Tensor got = out.to(tensor::DType::Float64);
      for (int64_t j = 0; j < 3; ++j) {
        const double want = (op == dist::ReduceOp::Sum ? n * (n + 1) / 2.0 : (n + 1) / 2.0) * (3.0 * r + j + 1);
        if (got.data<double>()[j] != want) {
          return tensor::detail::concat("error: reduce-scatter (", tensor::name(dt),
                                        op == dist::ReduceOp::Sum ? ", sum" : ", average", ") element ", j,
                                        ": expected ", want, ", got ", got.data<double>()[j]);
        }
      }
    }
  }
  // all-gather: rank r sends {10r, 10r + 1}; every rank gets them all in rank order
  for (const bool inPlace : {false, true}) {
    for (const tensor::DType dt : {tensor::DType::Float64, tensor::DType::BFloat16}) {
      tensor::Tensor whole = tensor::zeros({2 * n}, dt);
      tensor::Tensor mine = inPlace ? whole.narrow(0, 2 * r, 2) : tensor::empty({2}, dt);
      mine.copy_(tensor::arange(10.0 * r, 10.0 * r + 2, 1.0, tensor::DType::Float64));
      dist::all_gather(mine, whole);
      const tensor::Tensor got = whole.to(tensor::DType::Float64);
      for (int64_t i = 0; i < 2 * n; ++i) {
        if (got.data<double>()[i] != 10.0 * static_cast<double>(i / 2) + static_cast<double>(i % 2)) {
          return tensor::detail::concat("error: all-gather (", tensor::name(dt), inPlace ? ", in place" : "",
                                        ") element ", i, ": got ", got.data<double>()[i]);
        }
      }
    }
  }
  try {  // chunks that do not match the world size: refused, naming the rank and the shapes
    tensor::Tensor in = tensor::zeros({3 * n + 1}), out = tensor::zeros({3});
    dist::reduce_scatter(in, out);
    return "error: a reduce-scatter of unequal chunks ran";
  } catch (const tensor::Error& e) {
    if (!std::strstr(e.what(), "reduceScatter: expected contiguous tensors of one dtype and device"))
      return std::string("error: ") + e.what();
  }
  dist::barrier();
  return "collectives ok over " + g.backends();
}

std::string ddp(dist::ProcessGroup& g) {
  const int r = g.rank(), n = g.worldSize();
  auto net = network(100 + static_cast<uint64_t>(r));  // other weights on every rank
  dist::DistributedDataParallel::Options options;
  options.firstBucketBytes = 1;  // several buckets: the last layer's bias alone first
  options.bucketBytes = 300;
  dist::DistributedDataParallel model(net, options);
  auto alone = network(100);  // rank 0's weights
  if (!bit_equal(net->parameters(), alone->parameters())) return "error: rank 0's parameters were not broadcast";
  const int64_t rows = kGlobalBatch / n;
  step(model, 0, r * rows, rows, /*update=*/false);
  step(*alone, 0, 0, kGlobalBatch, /*update=*/false);
  const size_t buckets = model.bucketLayout().size();
  if (buckets < 2 || model.bucketsLaunchedInBackward() != buckets) {
    return "error: expected every one of the " + std::to_string(buckets) + " buckets launched from a hook, got " +
           std::to_string(model.bucketsLaunchedInBackward());
  }
  if (!bit_equal(net->gradParameters(), alone->gradParameters())) return "error: averaged gradients differ";
  step(model, 1, r * rows, rows);
  step(*alone, 1, 0, kGlobalBatch);
  if (!bit_equal(net->parameters(), alone->parameters())) return "error: parameters after a step differ";
  return "ddp bit-identical to one process, " + std::to_string(buckets) + " buckets from hooks";
}

std::string ddp_channels_last(dist::ProcessGroup& g) {
  const int r = g.rank(), n = g.worldSize();
  const auto cl = tensor::MemoryFormat::ChannelsLast;
  auto net = conv_network(200 + static_cast<uint64_t>(r), cl);
  dist::DistributedDataParallel::Options options;
  options.firstBucketBytes = 1;  // a bucket per parameter: every one copied in and out
  options.bucketBytes = 1;
  dist::DistributedDataParallel model(net, options);
  auto alone = conv_network(200, cl);
  if (!bit_equal(net->parameters(), alone->parameters())) return "error: rank 0's parameters were not broadcast";
  const int64_t rows = kGlobalBatch / n;
  step(model, 0, r * rows, rows, /*update=*/false, /*images=*/true);
  step(*alone, 0, 0, kGlobalBatch, /*update=*/false, /*images=*/true);
  if (!bit_equal(net->gradParameters(), alone->gradParameters())) return "error: averaged gradients differ";
  step(model, 1, r * rows, rows, true, true);
  step(*alone, 1, 0, kGlobalBatch, true, true);
  if (!bit_equal(net->parameters(), alone->parameters())) return "error: parameters after a step differ";
  const tensor::Tensor filter = net->parameters().front(), grad = net->gradParameters().front();
  if (filter.is_contiguous() || !filter.is_contiguous(cl) || !grad.is_contiguous(cl))
    return "error: the filter or its gradient lost its channels-last layout";
  return "ddp channels-last bit-identical to one process";
}

std::string layouts_differ(dist::ProcessGroup& g) {
  const int r = g.rank();
  auto net = conv_network(5, r == 0 ? tensor::MemoryFormat::ChannelsLast : tensor::MemoryFormat::Contiguous);
  try {
    dist::DistributedDataParallel model(net);
  } catch (const tensor::Error& e) {
    if (std::strstr(e.what(), "expected parameter '0.weight' laid out alike on every rank, got channels-last on 1 of"))
      return "layouts refused";
    return std::string("error: ") + e.what();
  }
  return "error: rank-dependent layouts were accepted";
}

// Note [Exact sharded runs]: for bit-identical parameters whatever the order of the sums (rows
// split over ranks, MPI's reduction order, a clipping norm summed by shards), every sum must be
// exact: parameters on a grid of 1/64 in [-4, 4] (snapped after each step, alike in both runs),
// inputs and output gradients on a grid of 1/4 in [-2, 2], scaled by 1/rows (a power of two):
// the loss is linear in the output, so no gradient needs more than about 21 bits and their
// squares fit float64 exactly. The optimizers' own arithmetic (Adam's moments, square roots,
// divisions; the clipping coefficient) is not snapped: it must be the one process's, bit for bit.
constexpr double kGrid = 64;

template <class T>
void snap_as(tensor::Tensor& t) {
  auto* d = static_cast<T*>(t.raw_data());
  for (int64_t i = 0; i < t.numel(); ++i)
    d[i] = static_cast<T>(std::clamp(std::round(static_cast<double>(d[i]) * kGrid) / kGrid, -4.0, 4.0));
}

void snap(tensor::Tensor t) {
  if (t.dtype() == tensor::DType::Float32)
    snap_as<float>(t);
  else
    snap_as<double>(t);
}

// 3 -> 7 -> 3: no parameter divides into equal shards at 2 or 4 ranks (padding everywhere).
std::shared_ptr<nn::Sequential> sharded_network(uint64_t seed, int64_t hidden = 7, bool extra = false,
                                                tensor::DType dtype = tensor::DType::Float64) {
  tensor::manual_seed(seed);
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::Linear>(3, hidden));
  net->add(std::make_shared<nn::ReLU>());
  net->add(std::make_shared<nn::Linear>(hidden, 3));
  if (extra) net->add(std::make_shared<nn::Linear>(3, 3));
  net->to(dtype);
  for (tensor::Tensor& p : net->parameters()) snap(p);
  return net;
}

// 3 -> 3 -> 3 with both weights one tensor (Module::tieParameters): block 0 owns it, block 1
// (the last) uses it too, so its gradient is the sum of both uses (Note [Tied parameters when
// sharding] in distributed/ShardedDataParallel.cpp). Two layers, as above: the sums stay exact.
std::shared_ptr<nn::Sequential> tied_sharded_network(uint64_t seed) {
  auto net = sharded_network(seed, 3);
  net->tieParameters("2.weight", "0.weight");
  return net;
}

// Micro-batch m of step s: inputs [8 x 3] and output gradients [8 x 3] on a grid of 1/4.
std::pair<tensor::Tensor, tensor::Tensor> sharded_batch(int s, int m) {
  tensor::Generator gen(700 + 10 * static_cast<uint64_t>(s) + static_cast<uint64_t>(m));
  tensor::Tensor x = tensor::uniform({kGlobalBatch, 3}, -2, 2, gen, tensor::DType::Float64);
  tensor::Tensor g = tensor::uniform({kGlobalBatch, 3}, -2, 2, gen, tensor::DType::Float64);
  to_grid(x, 4);
  to_grid(g, 4);
  return {x, g};
}

struct ShardedConfig {
  int stage;
  bool adam;          // AdamW with clipping, else SGD (momentum, weight decay) without
  bool tied = false;  // tied_sharded_network
};

std::unique_ptr<nn::Optimizer> make_optimizer(bool adam, std::vector<tensor::Tensor> p, std::vector<tensor::Tensor> g) {
  if (adam) {
    nn::AdamW::Options o;
    o.lr = 1.0 / 16;
    o.weightDecay = 1.0 / 8;
    return std::make_unique<nn::AdamW>(std::move(p), std::move(g), o);
  }
  nn::SGD::Options o;
  o.lr = 1.0 / 8;
  o.momentum = 0.5;
  o.weightDecay = 1.0 / 4;
  return std::make_unique<nn::SGD>(std::move(p), std::move(g), o);
}

constexpr int kShardedSteps = 3, kMicroBatches = 2;
constexpr double kMaxNorm = 0.25;

// Steps [from, to) of one process on the whole global batch (Note [Exact sharded runs]), with
// accumulation over kMicroBatches and (adam) clipping; the clipping norms.
std::vector<double> train_alone(nn::Module& net, nn::Optimizer& opt, bool adam, int from, int to) {
  std::vector<double> norms;
  for (int s = from; s < to; ++s) {
    opt.zeroGrad();
    for (int m = 0; m < kMicroBatches; ++m) {
      auto [x, go] = sharded_batch(s, m);
      net.forward(x);
      net.backward(x, go * (1.0 / kGlobalBatch));
    }
    if (adam) norms.push_back(nn::clipGradNorm(net, kMaxNorm).item());
    opt.step();
    for (tensor::Tensor& p : net.parameters()) snap(p);
  }
  return norms;
}

// The same steps sharded: rank r of n takes rows [r * 8 / n, (r + 1) * 8 / n) of each batch,
// with no communication but on the last micro-batch.
std::vector<double> train_sharded(dist::ShardedDataParallel& model, bool adam, int from, int to,
                                  tensor::DType dtype = tensor::DType::Float64) {
  const int r = model.group().rank(), n = model.group().worldSize();
  const int64_t rows = kGlobalBatch / n;
  std::vector<double> norms;
  for (int s = from; s < to; ++s) {
    model.zeroGradParameters();
    for (int m = 0; m < kMicroBatches; ++m) {
      auto [x, go] = sharded_batch(s, m);
      const tensor::Tensor xs = x.narrow(0, r * rows, rows).to(dtype).contiguous();
      const tensor::Tensor gs = (go.narrow(0, r * rows, rows) * (1.0 / static_cast<double>(rows))).to(dtype);
      model.setNoSync(m + 1 < kMicroBatches);
      model.forward(xs);
      model.backward(xs, gs);
    }
    model.setNoSync(false);
    if (adam) norms.push_back(model.clipGradNorm(kMaxNorm));
    model.step();
    for (tensor::Tensor& p : model.masterShards()) snap(p);
    model.syncParameters();
  }
  return norms;
}

// "" when `got` (a full state dict) equals `want` bit for bit, else the first difference.
std::string compare_state(const std::map<std::string, tensor::Tensor>& got,
                          const std::map<std::string, tensor::Tensor>& want, const std::string& what) {
  if (got.size() != want.size()) return "error: " + what + ": state dict sizes differ";
  for (const auto& [name, t] : want) {
    auto it = got.find(name);
    if (it == got.end() || !bit_equal({it->second}, {t})) {
      return tensor::detail::concat("error: ", what, ": parameter '", name,
                                    "' differs from one process's (largest difference ",
                                    it == got.end() ? -1.0 : tensor::max_abs_diff(it->second, t), ")");
    }
  }
  return "";
}

std::unique_ptr<dist::ShardedDataParallel> sharded_model(int stage, bool adam, uint64_t seed, bool tied = false) {
  dist::ShardedDataParallel::Options options;
  options.stage = stage;
  if (stage != 2) options.bucketBytes = 64;  // a unit per parameter; stage 2: one per block
  auto model =
      std::make_unique<dist::ShardedDataParallel>(tied ? tied_sharded_network(seed) : sharded_network(seed), options);
  model->setOptimizer([adam](auto p, auto gr) { return make_optimizer(adam, std::move(p), std::move(gr)); });
  return model;
}

std::string sharded_case(dist::ProcessGroup& g, const ShardedConfig& c) {
  const std::string what =
      tensor::detail::concat("stage ", c.stage, c.adam ? " AdamW+clip" : " SGD", c.tied ? " tied" : "");
  auto alone = c.tied ? tied_sharded_network(100) : sharded_network(100);
  if (c.tied && alone->parameters().size() != 3) return "error: " + what + ": expected the tied weight listed once";
  auto opt = make_optimizer(c.adam, alone->parameters(), alone->gradParameters());
  // other weights on every rank
  auto model = sharded_model(c.stage, c.adam, 100 + static_cast<uint64_t>(g.rank()), c.tied);
  if (c.tied && model->module().tiedParameters().size() != 1) return "error: " + what + ": the tie was lost";
  const std::vector<double> want = train_alone(*alone, *opt, c.adam, 0, kShardedSteps);
  const std::vector<double> got = train_sharded(*model, c.adam, 0, kShardedSteps);
  if (got != want) return "error: " + what + ": the clipping norms differ from one process's";
  if (c.adam && std::none_of(want.begin(), want.end(), [](double x) { return x > kMaxNorm; }))
    return "error: " + what + ": no step clipped (raise the gradients or lower kMaxNorm)";
  return compare_state(model->fullStateDict(), alone->stateDict(), what);
}

// Mixed precision at stage 3: a float32 network with float64 master shards (the CPU's stand-in
// for 16-bit parameters with float32 masters) against one process with nn::MasterWeights; the
// float32 gradients stay exact (Note [Exact sharded runs]: at most about 21 bits).
std::string sharded_mixed(dist::ProcessGroup& g) {
  const auto f32 = tensor::DType::Float32;
  auto alone = sharded_network(100, 7, false, f32);
  nn::MasterWeights master(*alone, tensor::DType::Float64);
  auto opt = make_optimizer(true, master.params(), master.grads());
  dist::ShardedDataParallel::Options options;
  options.bucketBytes = 64;
  options.masterDtype = tensor::DType::Float64;
  dist::ShardedDataParallel model(sharded_network(100 + static_cast<uint64_t>(g.rank()), 7, false, f32), options);
  model.setOptimizer([](auto p, auto gr) { return make_optimizer(true, std::move(p), std::move(gr)); });
  std::vector<double> want;
  for (int s = 0; s < kShardedSteps; ++s) {
    alone->zeroGradParameters();
    for (int m = 0; m < kMicroBatches; ++m) {
      auto [x, go] = sharded_batch(s, m);
      alone->forward(x.to(f32));
      alone->backward(x.to(f32), (go * (1.0 / kGlobalBatch)).to(f32));
    }
    master.gradsToMaster();
    want.push_back(nn::clipGradNorm(master.grads(), kMaxNorm).item());
    opt->step();
    for (const tensor::Tensor& p : master.params()) snap(p);
    master.paramsToModel();
  }
  const std::vector<double> got = train_sharded(model, true, 0, kShardedSteps, f32);
  if (got != want) return "error: mixed precision: the clipping norms differ from one process's";
  return compare_state(model.fullStateDict(), alone->stateDict(), "mixed precision (float64 masters)");
}

// GradScaler at stage `stage`: in step 1 one gradient element (in rank 0's shard) overflows
// on rank 0 alone; every rank must skip that step and back its scale off, as one process does
// (Note [One verdict for every rank]); the other steps equal one process's bit for bit.
std::string sharded_scaler(dist::ProcessGroup& g, int stage) {
  const int r = g.rank(), n = g.worldSize();
  const std::string what = tensor::detail::concat("stage ", stage, " GradScaler");
  nn::GradScaler::Options so;
  so.initScale = 1024;
  nn::GradScaler refScaler(so), scaler(so);
  auto alone = sharded_network(100);
  auto opt = make_optimizer(true, alone->parameters(), alone->gradParameters());
  auto model = sharded_model(stage, true, 100 + static_cast<uint64_t>(r));
  const int64_t rows = kGlobalBatch / n;
  const double inf = std::numeric_limits<double>::infinity();
  for (int s = 0; s < kShardedSteps; ++s) {
    auto [x, go] = sharded_batch(s, 0);
    opt->zeroGrad();
    alone->forward(x);
    alone->backward(x, refScaler.scaleGrad(go * (1.0 / kGlobalBatch)));
    model->zeroGradParameters();
    const tensor::Tensor xs = x.narrow(0, r * rows, rows).contiguous();
    model->forward(xs);
    model->backward(xs,
                    scaler.scaleGrad(go.narrow(0, r * rows, rows).contiguous() * (1.0 / static_cast<double>(rows))));
    if (s == 1) {  // the last bias's first element: in rank 0's shard of its unit
      alone->gradParameters().back().narrow(0, 0, 1).fill_(inf);
      if (r == 0) model->gradientShards().back().narrow(0, 0, 1).fill_(inf);
    }
    const bool want = refScaler.step(*opt), got = model->step(scaler);
    refScaler.update();
    scaler.update();
    if (got != want || want != (s != 1))
      return tensor::detail::concat("error: ", what, ": step ", s, (got ? " taken" : " skipped"), " on rank ", r);
    for (tensor::Tensor& p : alone->parameters()) snap(p);
    for (tensor::Tensor& p : model->masterShards()) snap(p);
    model->syncParameters();
  }
  if (scaler.scale() != refScaler.scale() || scaler.scale() != 512)
    return tensor::detail::concat("error: ", what, ": scale ", scaler.scale(), ", expected ", refScaler.scale());
  return compare_state(model->fullStateDict(), alone->stateDict(), what);
}

// Sharded checkpoints: stage 3 with AdamW trains kSavedSteps steps and saves (at N = 4 in
// test_Mpi.sh); a resume (at N = 2, or alone) loads it into models of stages 3, 2 and 1 built
// from other weights, and into one process without sharding (readFullCheckpoint), trains on
// to kShardedSteps + 1, and must equal an unbroken one-process run bit for bit.
constexpr int kSavedSteps = 2;

std::string sharded_save(dist::ProcessGroup& g, const std::string& dir) {
  auto model = sharded_model(3, true, 100 + static_cast<uint64_t>(g.rank()));
  train_sharded(*model, true, 0, kSavedSteps);
  model->saveCheckpoint(dir);
  return tensor::detail::concat("sharded checkpoint saved at world size ", g.worldSize());
}

std::string sharded_resume(dist::ProcessGroup& g, const std::string& dir) {
  const int end = kShardedSteps + 1;
  auto alone = sharded_network(100);
  auto opt = make_optimizer(true, alone->parameters(), alone->gradParameters());
  train_alone(*alone, *opt, true, 0, end);
  const auto want = alone->stateDict();
  for (int stage : {3, 2, 1}) {
    auto model = sharded_model(stage, true, 900 + static_cast<uint64_t>(g.rank()));
    model->loadCheckpoint(dir);
    train_sharded(*model, true, kSavedSteps, end);
    const std::string e =
        compare_state(model->fullStateDict(), want, tensor::detail::concat("resumed at stage ", stage));
    if (!e.empty()) return e;
  }
  const auto full = dist::ShardedDataParallel::readFullCheckpoint(dir);
  auto plain = sharded_network(900);
  plain->loadStateDict(full.model);
  auto plainOpt = make_optimizer(true, plain->parameters(), plain->gradParameters());
  plainOpt->loadStateDict(full.optimizer);
  train_alone(*plain, *plainOpt, true, kSavedSteps, end);
  const std::string e = compare_state(plain->stateDict(), want, "resumed in one process");
  if (!e.empty()) return e;
  return tensor::detail::concat("sharded checkpoint of world size ", full.worldSize, " resumed at world size ",
                                g.worldSize(),
                                " (stages 3, 2, 1) and in one process, bit-identical to an unbroken run");
}

// Note [Memory by the allocator's counts]
// What a model holds per rank, measured by the CPU allocator's own counts (tensor/HostMemory.h)
// rather than by summing the tensors it knows of: a reading before the model is built is the
// baseline; the model trains one AdamW step (which makes the optimizer's state), then the peak
// across a second step (forward, backward, step) over the baseline is what it holds: the
// parameters, gradients and optimizer state, whatever the step allocates beside them (the
// optimizer's temporaries, stage 3's gathered block, the collectives' buffers), and the
// activations of a batch of one row, which on six 128 x 128 layers are under 1 KiB each, next
// to about 1.6 MiB of state. Six layers, not fewer: the 10 % of one process's / N the bound
// allows beyond a block must cover what a step allocates beside the shards (the reduce-scatter's
// output, a unit's shard), so the units must be small against the model; and no wider, as the
// collectives of 4 ranks on 2 cores cost time by the byte. The input and its gradient are made
// before the baseline. Each model is gone before the next one's baseline, so the readings do
// not overlap.
constexpr int64_t kMemoryWidth = 128;
constexpr int kMemoryLayers = 6;

std::shared_ptr<nn::Sequential> memory_network() {
  tensor::manual_seed(5);
  auto net = std::make_shared<nn::Sequential>();
  for (int i = 0; i < kMemoryLayers; ++i) {
    net->add(std::make_shared<nn::Linear>(kMemoryWidth, kMemoryWidth));
    net->add(std::make_shared<nn::ReLU>());
  }
  return net;
}

size_t host_allocated() { return tensor::host_memory_stats().allocated_bytes; }

// The peak over `base` across the second of two calls of `step` (Note [Memory by the
// allocator's counts]).
template <class Step>
size_t step_peak(size_t base, Step&& step) {
  step();
  tensor::reset_peak_host_memory_stats();
  step();
  return tensor::host_memory_stats().peak_allocated_bytes - base;
}

// One process's memory, the bound's reference: the network and AdamW alone (what every rank of
// DDP holds at least) by the allocator, and by its tensors' bytes (parameters, gradients, both
// moments); DistributedDataParallel's by the allocator (with its bucket buffers), reported.
struct OneProcessMemory {
  size_t alone = 0, ddp = 0, tensors = 0;
};

OneProcessMemory one_process_memory(const tensor::Tensor& x, const tensor::Tensor& go) {
  OneProcessMemory m;
  {
    const size_t base = host_allocated();
    auto alone = memory_network();
    nn::AdamW opt(*alone);
    m.alone = step_peak(base, [&] {
      opt.zeroGrad();
      alone->forward(x);
      alone->backward(x, go);
      opt.step();
    });
    for (const auto& t : alone->parameters()) m.tensors += t.nbytes();
    for (const auto& t : alone->gradParameters()) m.tensors += t.nbytes();
    for (const auto& [k, t] : opt.stateDict()) m.tensors += t.nbytes();
  }
  {
    const size_t base = host_allocated();
    auto net = memory_network();
    dist::DistributedDataParallel model(net);
    nn::AdamW opt(*net);
    m.ddp = step_peak(base, [&] {
      opt.zeroGrad();
      model.forward(x);
      model.backward(x, go);
      opt.step();
    });
  }
  return m;
}

// Stage 3's memory per rank within 1.1 x one process's / N plus the largest block in full (its
// parameters and gradients, what stage 3 gathers at a time), by the allocator's counts and by
// the wrapper's own (memory(), against the tensors' bytes); stages 1 and 2 reported (at N <= 2:
// 4 ranks on 2 cores move the bytes slowly).
std::string sharded_memory(dist::ProcessGroup& g, int stage, const OneProcessMemory& one, const tensor::Tensor& x,
                           const tensor::Tensor& go) {
  const double n = g.worldSize();
  const size_t base = host_allocated();
  dist::ShardedDataParallel::Options options;
  options.stage = stage;
  options.broadcastState = false;  // every rank builds the same weights
  auto model = std::make_unique<dist::ShardedDataParallel>(memory_network(), options);
  model->setOptimizer([](auto p, auto gr) { return std::make_unique<nn::AdamW>(std::move(p), std::move(gr)); });
  const size_t peak = step_peak(base, [&] {
    model->zeroGradParameters();
    model->forward(x);
    model->backward(x, go);
    model->step();
  });
  const size_t own = model->peakBytes(), block = model->largestBlockBytes();
  const double bound = 1.1 * static_cast<double>(one.alone) / n + static_cast<double>(block);
  const double ownBound = 1.1 * static_cast<double>(one.tensors) / n + static_cast<double>(block);
  const std::string line = tensor::detail::concat(
      "stage ", stage, " allocator peak ", peak, " B (one process ", one.alone, " B, DDP ", one.ddp, " B, bound ",
      static_cast<size_t>(bound), "), own count ", own, " B (tensors ", one.tensors, " B, bound ",
      static_cast<size_t>(ownBound), "), largest block ", block, " B");
  if (stage == 3 && (static_cast<double>(peak) > bound || static_cast<double>(own) > ownBound))
    return "error: memory over the bound: " + line;
  return line;
}

std::string sharded(dist::ProcessGroup& g) {
  for (int stage = 1; stage <= 3; ++stage) {
    for (bool adam : {true, false}) {
      for (bool tied : {false, true}) {
        const std::string e = sharded_case(g, {stage, adam, tied});
        if (!e.empty()) return e;
      }
    }
  }
  for (int stage : {3, 1}) {
    const std::string e = sharded_scaler(g, stage);
    if (!e.empty()) return e;
  }
  if (const std::string e = sharded_mixed(g); !e.empty()) return e;
  std::string mem;
  tensor::Generator gen(3);
  const tensor::Tensor x = tensor::uniform({1, kMemoryWidth}, -1, 1, gen), go = tensor::ones({1, kMemoryWidth});
  const OneProcessMemory one = one_process_memory(x, go);
  for (int stage = g.worldSize() <= 2 ? 1 : 3; stage <= 3; ++stage) {
    const std::string line = sharded_memory(g, stage, one, x, go);
    if (line.rfind("error", 0) == 0) return line;
    mem += "; " + line;
  }
  return tensor::detail::concat(
      "sharded stages 1-3 bit-identical to one process after ", kShardedSteps,
      " steps (AdamW + clipping, SGD, accumulation, GradScaler, float64 masters, a tied weight)", mem);
}

// A tiny GPT-2 (its head tied to its embedding) sharded block by block (the default wrap
// policy: a unit per transformer block, wte, wpe, ln_f; the head's weight is wte's): every rank
// starts from other weights and takes the same batch, so the average of the ranks' gradients
// is each one's exactly, and after 3 AdamW steps at stages 1-3 the parameters equal bit for bit
// those of one process.
std::string sharded_lm(dist::ProcessGroup& g) {
  nn::DecoderLMConfig c;
  c.vocabSize = 13;
  c.nPositions = 16;
  c.nEmbd = 8;
  c.nLayer = 3;
  c.nHead = 2;
  auto make = [&](uint64_t seed) {
    tensor::manual_seed(seed);
    return nn::make_gpt2(c);
  };
  auto step_batch = [](int s) {
    tensor::Generator gen(90 + static_cast<uint64_t>(s));
    tensor::Tensor tokens = tensor::empty({2, 5}, tensor::DType::Int64, tensor::Device::cpu());
    for (int64_t i = 0; i < 10; ++i) tokens.data<int64_t>()[i] = (7 * i + 3 * s) % 13;
    return std::make_pair(tokens, tensor::normal({2, 5, 13}, 0, 1, gen));
  };
  auto adamw = [](std::vector<tensor::Tensor> p, std::vector<tensor::Tensor> gr) -> std::unique_ptr<nn::Optimizer> {
    nn::AdamW::Options o;
    o.lr = 0.01;
    return std::make_unique<nn::AdamW>(std::move(p), std::move(gr), o);
  };
  auto alone = make(21);
  auto opt = adamw(alone->parameters(), alone->gradParameters());
  for (int s = 0; s < 3; ++s) {
    auto [x, go] = step_batch(s);
    opt->zeroGrad();
    alone->forward(x);
    alone->backward(x, go);
    opt->step();
  }
  for (int stage : {1, 2, 3}) {
    const std::string what = tensor::detail::concat("GPT-2 stage ", stage);
    dist::ShardedDataParallel::Options options;
    options.stage = stage;
    dist::ShardedDataParallel model(make(21 + static_cast<uint64_t>(g.rank())), options);
    if (model.units() != static_cast<size_t>(c.nLayer) + 3)
      return tensor::detail::concat("error: ", what, ": expected ", c.nLayer + 3, " units, got ", model.units());
    model.setOptimizer(adamw);
    for (int s = 0; s < 3; ++s) {
      auto [x, go] = step_batch(s);
      model.zeroGradParameters();
      model.forward(x);
      model.backward(x, go);
      model.step();
    }
    const std::string diff = compare_state(model.fullStateDict(), alone->stateDict(), what);
    if (!diff.empty()) return diff;
  }
  return "sharded GPT-2 stages 1-3 block by block bit-identical to one process";
}

std::string sharded_mismatch(dist::ProcessGroup& g) {
  const int r = g.rank();
  std::string seen;
  for (bool wider : {true, false}) {
    auto net = r == 1 ? sharded_network(1, wider ? 8 : 7, !wider) : sharded_network(1);
    try {
      dist::ShardedDataParallel model(net);
      return "error: rank-dependent models were accepted";
    } catch (const tensor::Error& e) {
      const std::string text = e.what();
      // rank 1 hears of rank 0's layer, the others of rank 1's
      const std::string mine = r == 1 ? "8 x 3" : "7 x 3", other = r == 1 ? "7 x 3" : "8 x 3";
      const std::string want = wider ? "expected parameter '0.weight' alike on every rank, got float64 [" + mine +
                                           "] on rank " + std::to_string(r) + " and float64 [" + other + "] on rank " +
                                           (r == 1 ? "0" : "1")
                                     : "parameters on rank ";
      if (text.find(want) == std::string::npos || text.find("(rank " + std::to_string(r)) == std::string::npos)
        return "error: " + text;
      if (!wider && text.find("4 parameters") == std::string::npos) return "error: " + text;
    }
  }
  return "sharded models refused";
}

std::string failure(dist::ProcessGroup& g, bool kill, bool sharded = false) {
  const int r = g.rank(), n = g.worldSize();
  auto net = network(7);
  std::unique_ptr<nn::Module> model;
  dist::ShardedDataParallel* sdp = nullptr;
  if (sharded) {  // stage 3: the second step's first collective is the first block's all-gather
    auto m = std::make_unique<dist::ShardedDataParallel>(net);
    m->setOptimizer([](auto p, auto gr) { return std::make_unique<nn::SGD>(std::move(p), std::move(gr), 0.125); });
    sdp = m.get();
    model = std::move(m);
  } else {
    model = std::make_unique<dist::DistributedDataParallel>(net);
  }
  const int64_t rows = kGlobalBatch / n;
  auto train = [&](int s) {
    if (!sdp) return step(*model, s, r * rows, rows);
    auto [x, y] = batch(s);
    const tensor::Tensor xs = x.narrow(0, r * rows, rows).contiguous();
    const tensor::Tensor ys = y.narrow(0, r * rows, rows).contiguous();
    nn::MSECriterion mse;
    sdp->zeroGradParameters();
    const tensor::Tensor& out = sdp->forward(xs);
    mse.forward(out, ys);
    sdp->backward(xs, mse.backward(out, ys));
    sdp->step();
  };
  train(0);
  dist::barrier();
  const auto start = std::chrono::steady_clock::now();
  if (r == n - 1) {
    if (kill) ::raise(SIGKILL);
    std::this_thread::sleep_for(std::chrono::duration<double>(g.timeout() + 2));
  }
  try {
    train(1);
  } catch (const std::exception& e) {
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f", took);
    return std::string("error after ") + seconds + " s: " + e.what();
  }
  return "(no error)";
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "";
  int rank = -1;
  std::string result;
  try {
    auto g = dist::init();
    rank = g->rank();
    if (which == "collectives")
      result = collectives(*g);
    else if (which == "ddp")
      result = ddp(*g);
    else if (which == "ddp-channels-last")
      result = ddp_channels_last(*g);
    else if (which == "layouts-differ")
      result = layouts_differ(*g);
    else if (which == "sharded")
      result = sharded(*g);
    else if (which == "sharded-lm")
      result = sharded_lm(*g);
    else if (which == "sharded-mismatch")
      result = sharded_mismatch(*g);
    else if (which == "sharded-save" && argc > 2)
      result = sharded_save(*g, argv[2]);
    else if (which == "sharded-resume" && argc > 2)
      result = sharded_resume(*g, argv[2]);
    else if (which == "killed" || which == "hung")
      result = failure(*g, which == "killed");
    else if (which == "sharded-killed")
      result = failure(*g, true, true);
    else
      result = "error: unknown case '" + which + "'";
  } catch (const std::exception& e) {
    result = std::string("error: ") + e.what();
  }
  std::printf("rank %d: %s\n", rank, result.c_str());
  std::fflush(stdout);
  const bool ok = result.rfind("error", 0) != 0 && result != "(no error)";
  if (!ok) std::_Exit(1);  // a failed job leaves MPI as it is (no MPI_Finalize, no destructors)
  return 0;
}
