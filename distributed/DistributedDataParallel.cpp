// DistributedDataParallel.cpp
// Note [Gradient buckets]
// A bucket is a flat buffer on this rank's GPU. When its last gradient is produced, an event
// recorded on the compute stream lets the group's stream copy the gradients in, all-reduce
// the buffer with ncclAvg and copy the averages back; the compute stream does not touch those
// gradients again in this backward (a module appears once in the tree: checked). Buckets are
// launched strictly in order (all ranks must issue the same collectives in the same order, or
// NCCL hangs), so a bucket that is ready early waits for its predecessors. Whatever backward
// did not reach (an unused branch, the accGradParameters path) is launched at the end.
// Note [No host wait after backward]: the host does not wait for the last bucket: an event
// recorded on the group's stream after it (and its copies back) is made a dependency of the
// compute stream, so the optimizer step is queued at once and runs on the device after the
// averages are in place. The group's watchdog follows that event (ProcessGroup::watch), so a
// lost rank or a stuck collective still becomes an error within the timeout: the group is
// aborted, which releases the streams, and the next call here throws it (check()).
// Buffers live as long as the wrapper, so the caching allocator, which assumes one stream per
// device, never hands their memory to the compute stream while the group's stream uses it.
// Note [CPU buckets]: on the CPU (the MPI backend) a bucket's gradients are copied into its
// buffer and its MPI_Iallreduce started from the hook, as on the GPU; finishing backward waits
// for every bucket (bounded by the group's timeout, watching for lost ranks) and copies the
// averages back, so the optimizer step that follows sees them.
#include "distributed/DistributedDataParallel.h"

#include <optional>
#include <set>

#include "distributed/Dist.h"
#include "tensor/Cuda.h"
#ifdef CUDNN_NN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "tensor/cuda/CudaCheck.h"
#endif

namespace dist {

using tensor::Tensor;

namespace {

#ifdef CUDNN_NN_HAVE_CUDA
cudaStream_t compute_stream(int device) { return static_cast<cudaStream_t>(tensor::cuda::stream(device)); }
#endif

// Note [Parameter layouts across ranks]
// A parameter and its gradient may be row-major or, after Module::to(MemoryFormat::ChannelsLast),
// channels-last: either is dense, so the buckets and the broadcast move its elements in memory
// order (tensor::flat_view), and averaging pairs them up by position. That is right only where
// every rank lays out each parameter alike, so the constructor sums the layouts over the ranks
// (row-major 0, channels-last 1: a sum of world size x one's own on every rank only where all
// agree) and refuses the network, on every rank, naming the first parameter that differs.
enum class Layout : int64_t { RowMajor = 0, ChannelsLast = 1 };

std::optional<Layout> dense_layout(const Tensor& t) {
  if (t.is_contiguous()) return Layout::RowMajor;
  if (t.is_contiguous(tensor::MemoryFormat::ChannelsLast)) return Layout::ChannelsLast;
  return std::nullopt;
}

// Where the network's parameters are (the group's device when it has none).
tensor::Device network_device(nn::Module& net, const tensor::Device& fallback) {
  const auto params = net.parameters();
  return params.empty() ? fallback : params.front().device();
}

}  // namespace

std::vector<std::vector<size_t>> DistributedDataParallel::assignBuckets(const std::vector<size_t>& bytes,
                                                                        const std::vector<tensor::DType>& dtypes,
                                                                        size_t firstBytes, size_t capBytes) {
  std::vector<std::vector<size_t>> buckets;
  size_t filled = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const size_t cap = buckets.size() == 1 ? firstBytes : capBytes;  // filling the first, or a later one
    const bool fresh =
        buckets.empty() || dtypes[i] != dtypes[buckets.back().back()] || (filled > 0 && filled + bytes[i] > cap);
    if (fresh) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(i);
    filled += bytes[i];
  }
  return buckets;
}

DistributedDataParallel::DistributedDataParallel(nn::ModulePtr net, Options options,
                                                 std::shared_ptr<ProcessGroup> group)
    : options_(options), group_(group ? std::move(group) : default_group()) {
  add(std::move(net));
  const tensor::Device dev = network_device(module(), group_->device());
  if (!group_->backend(dev)) {
    throw tensor::Error(where("DistributedDataParallel") + "expected a backend for the network's device " + dev.str() +
                        " (NCCL for CUDA, MPI for the CPU), got the group's " + group_->backends());
  }
  device_ = dev;
  const Owners owners = collectParameters();
  checkLayouts();
  checkBuffers();
  makeBuckets();
  broadcastState(true);
  hookOwners(owners);  // last: nothing after it throws (see hookOwners)
}

// Every module once, and each parameter with the module that produces its gradient.
DistributedDataParallel::Owners DistributedDataParallel::collectParameters() {
  const tensor::Device& dev = device_;
  std::set<nn::Module*> seen;
  Owners owners;
  std::function<void(nn::Module&, const std::string&)> walk = [&](nn::Module& m, const std::string& prefix) {
    if (!seen.insert(&m).second) {
      throw tensor::Error(where("DistributedDataParallel") + "expected every module once in the network, got '" +
                          prefix + "' (" + m.type_name() + ") twice: shared modules are not supported");
    }
    auto values = m.namedParameters();
    auto grads = m.namedGradParameters();
    std::vector<size_t> own;
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i].first.find('.') != std::string::npos) continue;  // a child's ("0.weight")
      const Tensor& v = values[i].second;
      const Tensor& g = grads[i].second;
      const std::string name = prefix + values[i].first;
      // Note [Parameter layouts across ranks]
      const std::optional<Layout> layout = dense_layout(v);
      if (!g.defined() || g.device() != dev || !layout || dense_layout(g) != layout || g.sizes() != v.sizes() ||
          g.dtype() != v.dtype()) {
        auto describe = [](const Tensor& t) {
          const std::optional<Layout> l = dense_layout(t);
          return t.description() + (!l                          ? " (neither row-major nor channels-last)"
                                    : l == Layout::ChannelsLast ? " (channels-last)"
                                                                : "");
        };
        throw tensor::Error(where("DistributedDataParallel") + "expected parameter '" + name +
                            "' and its gradient on " + dev.str() +
                            ", both row-major or both channels-last (convert and move the network before wrapping "
                            "it), got " +
                            describe(v) + " with gradient " + (g.defined() ? describe(g) : std::string("undefined")));
      }
      own.push_back(params_.size());
      params_.push_back(Param{name, g, static_cast<int64_t>(*layout)});
    }
    if (!own.empty()) owners.emplace_back(&m, std::move(own));
    if (auto* kids = m.children()) {
      for (size_t i = 0; i < kids->size(); ++i) {
        walk(nn::child_at(m, *kids, i, "DistributedDataParallel"), prefix + std::to_string(i) + ".");
      }
    }
  };
  walk(module(), "");
  return owners;
}

// Note [Parameter layouts across ranks]: one all-reduce, on every rank alike.
void DistributedDataParallel::checkLayouts() {
  if (group_->worldSize() == 1 || params_.empty()) return;
  const auto count = static_cast<int64_t>(params_.size());
  Tensor mine = tensor::empty({count}, tensor::DType::Int64, tensor::Device::cpu());
  for (int64_t i = 0; i < count; ++i) mine.data<int64_t>()[i] = params_[static_cast<size_t>(i)].layout;
  Tensor sum = mine.to(device_);  // on the CPU, mine itself: summed in place
  group_->allReduce(sum, ReduceOp::Sum);
  group_->wait(device_, "the parameter layouts' all-reduce");
  const Tensor all = sum.cpu();
  const int64_t n = group_->worldSize();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t own = params_[static_cast<size_t>(i)].layout, channels_last = all.data<int64_t>()[i];
    if (channels_last == n * own) continue;
    throw tensor::Error(where("DistributedDataParallel") + "expected parameter '" +
                        params_[static_cast<size_t>(i)].name + "' laid out alike on every rank, got channels-last on " +
                        std::to_string(channels_last) + " of " + std::to_string(n) +
                        " ranks and row-major on the others (this rank's is " + (own ? "channels-last" : "row-major") +
                        "; call Module::to(MemoryFormat) on every rank or on none)");
  }
}

void DistributedDataParallel::checkBuffers() {
  for (auto& [name, b] : module().namedBuffers()) {
    if (b.device() != device_ || !b.is_contiguous()) {
      throw tensor::Error(where("DistributedDataParallel") + "expected buffer '" + name + "' contiguous on " +
                          device_.str() + ", got " + b.description());
    }
  }
}

// Buckets over the parameters in reverse order: the gradients backward produces first.
void DistributedDataParallel::makeBuckets() {
  const tensor::Device& dev = device_;
  std::vector<size_t> bytes, order;
  std::vector<tensor::DType> dtypes;
  for (size_t i = params_.size(); i-- > 0;) {
    order.push_back(i);
    bytes.push_back(params_[i].grad.nbytes());
    dtypes.push_back(params_[i].grad.dtype());
  }
  std::optional<tensor::cuda::DeviceGuard> guard;
  if (dev.is_cuda()) guard.emplace(dev.index);
  for (const auto& members : assignBuckets(bytes, dtypes, options_.firstBucketBytes, options_.bucketBytes)) {
    Bucket b;
    int64_t numel = 0;
    for (size_t k : members) {
      Param& p = params_[order[k]];
      p.bucket = buckets_.size();
      p.offset = numel;
      numel += p.grad.numel();
      b.params.push_back(order[k]);
    }
    b.buffer = tensor::empty({numel}, params_[order[members.front()]].grad.dtype(), dev);
#ifdef CUDNN_NN_HAVE_CUDA
    if (dev.is_cuda()) {
      cudaEvent_t e = nullptr;
      CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      b.ready = e;
    }
#endif
    buckets_.push_back(std::move(b));
  }
}

// Called last in the constructor: nothing here throws, so no hook outlives a wrapper that
// failed to construct.
void DistributedDataParallel::hookOwners(const Owners& owners) {
  for (auto& [m, own] : owners) {
    std::vector<size_t> per_bucket;
    for (size_t p : own) per_bucket.push_back(params_[p].bucket);
    owners_.emplace_back(m, std::move(per_bucket));
    m->setBackwardHook([this](nn::Module& done) { onModuleDone(done); });
    hooked_.push_back(m);
  }
}

DistributedDataParallel::~DistributedDataParallel() {
  for (nn::Module* m : hooked_) m->setBackwardHook({});
#ifdef CUDNN_NN_HAVE_CUDA
  for (Bucket& b : buckets_) {
    if (b.ready) cudaEventDestroy(static_cast<cudaEvent_t>(b.ready));
  }
#endif
}

void DistributedDataParallel::broadcastState(bool parameters) {
  if (group_->worldSize() == 1) return;
  std::vector<Tensor> tensors;
  if (parameters) {  // as their memory lies (Note [Parameter layouts across ranks])
    for (auto& [name, t] : module().namedParameters()) tensors.push_back(tensor::flat_view(t));
  }
  for (auto& [name, t] : module().namedBuffers()) tensors.push_back(t);
  if (tensors.empty()) return;
  if (device_.is_cpu()) {  // MPI: started, then waited for before the forward uses them
    for (Tensor& t : tensors) group_->broadcast(t, 0);
    group_->wait(device_, "the broadcast of rank 0's parameters and buffers");
    return;
  }
  group_->groupStart();
  try {
    for (Tensor& t : tensors) group_->broadcast(t, 0);
  } catch (...) {
    try {
      group_->groupEnd();
    } catch (...) {
    }
    throw;
  }
  group_->groupEnd();
  if (parameters) group_->wait(nullptr, "the broadcast of rank 0's parameters and buffers");
}

const Tensor& DistributedDataParallel::updateOutput(const Tensor& input) {
  group_->check("DistributedDataParallel::forward");
  if (training_ && options_.broadcastBuffers) broadcastState(false);
  output = module().forward(input);
  return output;
}

const Tensor& DistributedDataParallel::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  gradInput = module().updateGradInput(input, gradOutput);
  return gradInput;
}

void DistributedDataParallel::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  beginBackward();
  module().accGradParameters(input, gradOutput, scale);
  finishBackward();
}

void DistributedDataParallel::backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) {
  beginBackward();
  try {
    gradInput = module().backward(input, gradOutput, scale);
  } catch (...) {
    inBackward_ = false;
    throw;
  }
  finishBackward();
}

void DistributedDataParallel::beginBackward() {
  group_->check("DistributedDataParallel::backward");
  for (Bucket& b : buckets_) {
    b.pending = b.params.size();
    b.launched = false;
  }
  nextBucket_ = 0;
  inBackward_ = true;
}

void DistributedDataParallel::onModuleDone(nn::Module& m) {
  if (!inBackward_) return;  // the network's backward called on its own: nothing to sync
  for (auto& [owner, buckets] : owners_) {
    if (owner != &m) continue;
    for (size_t b : buckets) {
      if (buckets_[b].pending > 0) --buckets_[b].pending;
    }
    launchReady();
    return;
  }
}

// Strictly in order: See Note [Gradient buckets]
void DistributedDataParallel::launchReady() {
  while (nextBucket_ < buckets_.size() && buckets_[nextBucket_].pending == 0) launch(buckets_[nextBucket_++]);
}

void DistributedDataParallel::launch(Bucket& b) {
  b.launched = true;
  if (device_.is_cpu()) {  // Note [CPU buckets]
    for (size_t p : b.params) {
      const Param& q = params_[p];
      b.buffer.narrow(0, q.offset, q.grad.numel()).copy_(tensor::flat_view(q.grad));
    }
    group_->allReduce(b.buffer, ReduceOp::Avg);
    return;
  }
#ifdef CUDNN_NN_HAVE_CUDA
  const int dev = device_.index;
  auto* comm = static_cast<cudaStream_t>(group_->commStream());
  auto* ready = static_cast<cudaEvent_t>(b.ready);
  CUDA_CHECK(cudaEventRecord(ready, compute_stream(dev)));
  CUDA_CHECK(cudaStreamWaitEvent(comm, ready, 0));
  auto* base = static_cast<char*>(b.buffer.raw_data());
  const size_t item = tensor::itemsize(b.buffer.dtype());
  for (size_t p : b.params) {
    const Param& q = params_[p];
    CUDA_CHECK(
        cudaMemcpyAsync(base + q.offset * item, q.grad.raw_data(), q.grad.nbytes(), cudaMemcpyDeviceToDevice, comm));
  }
  group_->allReduce(b.buffer.raw_data(), b.buffer.numel(), b.buffer.dtype(), ReduceOp::Avg, comm);
  for (size_t p : b.params) {
    const Param& q = params_[p];
    CUDA_CHECK(
        cudaMemcpyAsync(q.grad.raw_data(), base + q.offset * item, q.grad.nbytes(), cudaMemcpyDeviceToDevice, comm));
  }
#endif
}

void DistributedDataParallel::finishBackward() {
  inBackward_ = false;
  launchedInBackward_ = nextBucket_;
  for (; nextBucket_ < buckets_.size(); ++nextBucket_) launch(buckets_[nextBucket_]);
  if (buckets_.empty()) return;
  if (device_.is_cpu()) {  // Note [CPU buckets]
    group_->wait(device_, "the gradient all-reduce");
    for (const Param& q : params_) {
      const Bucket& b = buckets_[q.bucket];
      tensor::flat_view(q.grad).copy_(b.buffer.narrow(0, q.offset, q.grad.numel()));
    }
    return;
  }
#ifdef CUDNN_NN_HAVE_CUDA
  // Note [No host wait after backward]
  const int dev = device_.index;
  tensor::cuda::DeviceGuard guard(dev);
  auto* done = static_cast<cudaEvent_t>(group_->watch(group_->commStream(), "the gradient all-reduce"));
  CUDA_CHECK(cudaStreamWaitEvent(compute_stream(dev), done, 0));
#endif
}

std::vector<std::vector<std::string>> DistributedDataParallel::bucketLayout() const {
  std::vector<std::vector<std::string>> out;
  for (const Bucket& b : buckets_) {
    out.emplace_back();
    for (size_t p : b.params) out.back().push_back(params_[p].name);
  }
  return out;
}

std::string DistributedDataParallel::str() const {
  return type_name() + " {\n  (1): " + nn::indent_lines(module().str(), "  ") + "\n}";
}

}  // namespace dist
