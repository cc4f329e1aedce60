// mpi_worker: one rank of the CPU data-parallel tests, started by tests/dist/test_Mpi.sh under
// mpirun (world sizes 2 and 4, the MPI backend). Prints "rank R: <result>" and exits 0, or
// "rank R: error: <message>" and exits 1. Cases:
//   collectives  broadcast from rank 0, all-reduce sum / average / max of CPU tensors; a
//                bfloat16 broadcast, and its all-reduce refused (MPI has no such type)
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
//   killed       the last rank kills itself (SIGKILL) in the second step: the others fail
//                with an error naming it, long before the timeout
//   hung         the last rank sleeps through the second step: the others fail at the
//                timeout (CUDNN_NN_DIST_TIMEOUT), it fails when it comes back
#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "distributed/Dist.h"
#include "distributed/DistributedDataParallel.h"
#include "nn/Linear.h"
#include "nn/MSECriterion.h"
#include "nn/ReLU.h"
#include "nn/SGD.h"
#include "nn/Sequential.h"
#include "nn/SpatialConvolution.h"
#include "nn/View.h"

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

std::string failure(dist::ProcessGroup& g, bool kill) {
  const int r = g.rank(), n = g.worldSize();
  auto net = network(7);
  dist::DistributedDataParallel model(net);
  const int64_t rows = kGlobalBatch / n;
  step(model, 0, r * rows, rows);
  dist::barrier();
  const auto start = std::chrono::steady_clock::now();
  if (r == n - 1) {
    if (kill) ::raise(SIGKILL);
    std::this_thread::sleep_for(std::chrono::duration<double>(g.timeout() + 2));
  }
  try {
    step(model, 1, r * rows, rows);
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
    else if (which == "killed" || which == "hung")
      result = failure(*g, which == "killed");
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
