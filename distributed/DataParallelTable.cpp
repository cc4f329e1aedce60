// DataParallelTable.cpp
// Note [Replicas]
// Replicas are built from the network's model description (convert/ModelFile.h:
// describe_model, then build_model: the same types, configs and modes, twins included),
// cast to the network's dtype and moved to their GPU; their parameters and buffers come
// from the first replica by NCCL broadcast before the first forward. So this file sits
// above convert/ (built into cudnn_nn_dist, distributed/). If convert() replaces the
// network (the table's one child), the replicas are rebuilt at the next forward.
// Note [One stream per GPU]: every NCCL call is enqueued on the device stream of the GPU it
// serves (tensor/Cuda.h), in ncclGroupStart/End brackets (one process, several
// communicators), so it is ordered with the replicas' kernels and the caching allocator's
// one-stream assumption holds; the host never waits.
#include "distributed/DataParallelTable.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdio>
#include <set>

#include "convert/ModelFile.h"
#include "distributed/NcclCheck.h"
#include "nn/ModuleConfig.h"
#include "tensor/Cuda.h"

namespace dist {

using nn::Tensor;

namespace {

cudaStream_t stream_of(int gpu) { return static_cast<cudaStream_t>(tensor::cuda::stream(gpu)); }

// Brackets NCCL calls over several communicators of this process; ends the group even when
// a call in it throws.
// See Note [One stream per GPU]
class NcclGroup {
 public:
  NcclGroup() { NCCL_CHECK(ncclGroupStart()); }
  ~NcclGroup() {
    if (open_) ncclGroupEnd();
  }
  void end() {
    open_ = false;
    NCCL_CHECK(ncclGroupEnd());
  }

 private:
  bool open_ = true;
};

std::string gpu_list(const std::vector<int>& gpus) {
  std::string s = "[";
  for (size_t i = 0; i < gpus.size(); ++i) s += (i ? ", " : "") + std::to_string(gpus[i]);
  return s + "]";
}

}  // namespace

DataParallelTable::DataParallelTable(nn::ModulePtr net, std::vector<int> gpus) : gpus_(std::move(gpus)) {
  registerModelType();
  const int visible = tensor::cuda::device_count();
  std::set<int> distinct(gpus_.begin(), gpus_.end());
  bool ok = !gpus_.empty() && distinct.size() == gpus_.size();
  for (int g : gpus_) ok = ok && g >= 0 && g < visible;
  if (!ok) {
    throw nn::Error(where("DataParallelTable") + "expected distinct visible GPUs (" + std::to_string(visible) +
                    " visible), got " + gpu_list(gpus_));
  }
  add(std::move(net));
  {
    tensor::cuda::DeviceGuard guard(gpus_[0]);
    modules[0]->to(tensor::Device::cuda(gpus_[0]));
  }
  comms_.assign(gpus_.size(), nullptr);
  std::vector<ncclComm_t> comms(gpus_.size(), nullptr);
  NCCL_CHECK(ncclCommInitAll(comms.data(), static_cast<int>(gpus_.size()), gpus_.data()));
  for (size_t i = 0; i < comms.size(); ++i) comms_[i] = comms[i];
  replicate();
}

DataParallelTable::~DataParallelTable() {
  for (ncclComm* c : comms_) {
    if (c) ncclCommDestroy(c);
  }
}

void DataParallelTable::registerModelType() {
  static const bool once = [] {
    nn::register_model_type(std::string(kTypeName), nn::ModelFactory(&DataParallelTable::fromConfig));
    return true;
  }();
  (void)once;
}

void DataParallelTable::replicate() {
  nn::Module& net = *modules.at(0);
  replicas_.assign(1, modules[0]);
  const auto params = net.parameters();
  const tensor::DType dtype = params.empty() ? tensor::DType::Float32 : params[0].dtype();
  const tensor::Json description = nn::describe_model(net);
  for (size_t i = 1; i < gpus_.size(); ++i) {
    tensor::cuda::DeviceGuard guard(gpus_[i]);
    nn::ModulePtr r = nn::build_model(description, type_name() + " replica");
    if (dtype != tensor::DType::Float32) r->to(dtype);
    r->to(tensor::Device::cuda(gpus_[i]));
    replicas_.push_back(std::move(r));
  }
  needSync_ = true;
}

void DataParallelTable::checkReplicas() {
  if (modules.size() != 1 || !modules[0]) {
    throw nn::Error(where("forward") + "expected one network as the only child, got " + std::to_string(modules.size()));
  }
  if (modules[0] != replicas_[0]) {
    tensor::cuda::DeviceGuard guard(gpus_[0]);
    modules[0]->to(tensor::Device::cuda(gpus_[0]));
    replicate();
  }
}

void DataParallelTable::syncParameters() {
  checkReplicas();
  needSync_ = false;
  if (gpus_.size() == 1) return;
  std::vector<std::vector<Tensor>> state(replicas_.size());
  for (size_t i = 0; i < replicas_.size(); ++i) {
    for (auto& [name, t] : replicas_[i]->stateDict()) state[i].push_back(t);
  }
  NcclGroup group;
  for (size_t k = 0; k < state[0].size(); ++k) {
    for (size_t i = 0; i < replicas_.size(); ++i) {
      Tensor& t = state[i][k];
      NCCL_CHECK_COMM(comms_[i], ncclBroadcast(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()),
                                               dist::detail::nccl_type(t.dtype()), 0, comms_[i], stream_of(gpus_[i])));
    }
  }
  group.end();
}

std::vector<DataParallelTable::Chunk> DataParallelTable::split(int64_t n) const {
  const int64_t k = static_cast<int64_t>(gpus_.size());
  const int64_t per = (n + k - 1) / k;
  std::vector<Chunk> chunks;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t off = std::min(n, i * per);
    chunks.push_back({off, std::min(per, n - off)});
  }
  return chunks;
}

std::vector<Tensor> DataParallelTable::scatter(const Tensor& t, const std::vector<Chunk>& chunks, const char* what) {
  const tensor::Device first = tensor::Device::cuda(gpus_[0]);
  if (!t.is_cpu() && t.device() != first) {
    throw nn::Error(where(what) + "expected the batch on the CPU or on " + first.str() + ", got " + t.description());
  }
  const Tensor src = t.contiguous();
  std::vector<Tensor> out(gpus_.size());
  if (src.is_cpu()) {
    for (size_t i = 0; i < gpus_.size(); ++i) {
      out[i] = src.narrow(0, chunks[i].offset, chunks[i].length).to(tensor::Device::cuda(gpus_[i]));
    }
    return out;
  }
  out[0] = src.narrow(0, chunks[0].offset, chunks[0].length);
  NcclGroup group;
  for (size_t i = 1; i < gpus_.size(); ++i) {
    tensor::Shape shape = src.sizes();
    shape[0] = chunks[i].length;
    out[i] = tensor::empty(shape, src.dtype(), tensor::Device::cuda(gpus_[i]));
    if (out[i].numel() == 0) continue;
    const Tensor part = src.narrow(0, chunks[i].offset, chunks[i].length);
    const auto count = static_cast<size_t>(part.numel());
    NCCL_CHECK_COMM(comms_[0], ncclSend(part.raw_data(), count, dist::detail::nccl_type(src.dtype()),
                                        static_cast<int>(i), comms_[0], stream_of(gpus_[0])));
    NCCL_CHECK_COMM(comms_[i], ncclRecv(out[i].raw_data(), count, dist::detail::nccl_type(src.dtype()), 0, comms_[i],
                                        stream_of(gpus_[i])));
  }
  group.end();
  return out;
}

Tensor DataParallelTable::gather(const std::vector<const Tensor*>& parts, const std::vector<Chunk>& chunks,
                                 const char* what) {
  const Tensor& lead = *parts[0];
  tensor::Shape shape = lead.sizes();
  if (shape.empty()) throw nn::Error(where(what) + "expected results with a batch dimension, got a scalar");
  shape[0] = chunks.back().offset + chunks.back().length;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (!parts[i]) continue;
    tensor::Shape s = parts[i]->sizes();
    if (s.empty() || parts[i]->dtype() != lead.dtype() ||
        !std::equal(s.begin() + 1, s.end(), lead.sizes().begin() + 1, lead.sizes().end())) {
      throw nn::Error(where(what) + "expected every replica's result to differ in dimension 0 only, got " +
                      lead.description() + " and " + parts[i]->description());
    }
  }
  tensor::cuda::DeviceGuard guard(gpus_[0]);
  Tensor out = tensor::empty(shape, lead.dtype(), tensor::Device::cuda(gpus_[0]));
  if (chunks[0].length > 0) out.narrow(0, chunks[0].offset, chunks[0].length).copy_(lead);
  NcclGroup group;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (!parts[i] || chunks[i].length == 0) continue;
    const Tensor src = parts[i]->contiguous();
    Tensor dst = out.narrow(0, chunks[i].offset, chunks[i].length);
    const auto count = static_cast<size_t>(src.numel());
    NCCL_CHECK_COMM(comms_[i], ncclSend(src.raw_data(), count, dist::detail::nccl_type(src.dtype()), 0, comms_[i],
                                        stream_of(gpus_[i])));
    NCCL_CHECK_COMM(comms_[0], ncclRecv(dst.raw_data(), count, dist::detail::nccl_type(src.dtype()),
                                        static_cast<int>(i), comms_[0], stream_of(gpus_[0])));
  }
  group.end();
  return out;
}

void DataParallelTable::runReplicas(const std::function<void(size_t)>& step, const std::vector<Chunk>& chunks) {
  for (size_t i = 0; i < replicas_.size(); ++i) {
    // An empty batch still runs on the first replica (the result's shape); other replicas
    // without rows sit this one out.
    if (chunks[i].length == 0 && i > 0) continue;
    tensor::cuda::DeviceGuard guard(gpus_[i]);
    rethrowErrors(0, [&] { step(i); });
  }
}

const Tensor& DataParallelTable::updateOutput(const Tensor& input) {
  if (input.dim() < 1) throw nn::Error(where("updateOutput") + "expected a batch (dimension 0), got a scalar");
  checkReplicas();
  if (needSync_) syncParameters();
  chunks_ = split(input.size(0));
  inputs_ = scatter(input, chunks_, "updateOutput");
  std::vector<const Tensor*> outs(replicas_.size(), nullptr);
  runReplicas([&](size_t i) { outs[i] = &replicas_[i]->forward(inputs_[i]); }, chunks_);
  output = gather(outs, chunks_, "updateOutput");
  return output;
}

const Tensor& DataParallelTable::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  if (inputs_.size() != replicas_.size() || chunks_.empty() ||
      input.size(0) != chunks_.back().offset + chunks_.back().length) {
    throw nn::Error(where("updateGradInput") + "expected a forward() of this batch first");
  }
  gradOutputs_ = scatter(gradOutput, chunks_, "updateGradInput");
  std::vector<const Tensor*> grads(replicas_.size(), nullptr);
  runReplicas([&](size_t i) { grads[i] = &replicas_[i]->updateGradInput(inputs_[i], gradOutputs_[i]); }, chunks_);
  gradInput = gather(grads, chunks_, "updateGradInput");
  return gradInput;
}

void DataParallelTable::accGradParameters(const Tensor&, const Tensor&, double scale) {
  if (gradOutputs_.size() != replicas_.size())
    throw nn::Error(where("accGradParameters") + "expected updateGradInput() first");
  for (size_t i = 1; i < replicas_.size(); ++i) {
    tensor::cuda::DeviceGuard guard(gpus_[i]);
    replicas_[i]->zeroGradParameters();  // they hold this batch's part only
  }
  runReplicas([&](size_t i) { replicas_[i]->accGradParameters(inputs_[i], gradOutputs_[i], scale); }, chunks_);
  allReduceGradients();
}

void DataParallelTable::backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) {
  if (inputs_.size() != replicas_.size() || chunks_.empty() ||
      input.size(0) != chunks_.back().offset + chunks_.back().length) {
    throw nn::Error(where("backward") + "expected a forward() of this batch first");
  }
  gradOutputs_ = scatter(gradOutput, chunks_, "backward");
  for (size_t i = 1; i < replicas_.size(); ++i) {
    tensor::cuda::DeviceGuard guard(gpus_[i]);
    replicas_[i]->zeroGradParameters();  // they hold this batch's part only
  }
  std::vector<const Tensor*> grads(replicas_.size(), nullptr);
  runReplicas([&](size_t i) { grads[i] = &replicas_[i]->backward(inputs_[i], gradOutputs_[i], scale); }, chunks_);
  allReduceGradients();
  gradInput = gather(grads, chunks_, "backward");
}

void DataParallelTable::allReduceGradients() {
  needSync_ = true;  // the optimizer steps the first replica next
  if (replicas_.size() == 1) return;
  std::vector<std::vector<Tensor>> grads(replicas_.size());
  for (size_t i = 0; i < replicas_.size(); ++i) grads[i] = replicas_[i]->gradParameters();
  NcclGroup group;
  for (size_t k = 0; k < grads[0].size(); ++k) {
    for (size_t i = 0; i < replicas_.size(); ++i) {
      Tensor& g = grads[i][k];
      if (!g.defined() || g.numel() == 0) continue;
      NCCL_CHECK_COMM(comms_[i],
                      ncclAllReduce(g.raw_data(), g.raw_data(), static_cast<size_t>(g.numel()),
                                    dist::detail::nccl_type(g.dtype()), ncclSum, comms_[i], stream_of(gpus_[i])));
    }
  }
  group.end();
}

void DataParallelTable::zeroGradParameters() {
  for (size_t i = 0; i < replicas_.size(); ++i) {
    tensor::cuda::DeviceGuard guard(gpus_[i]);
    replicas_[i]->zeroGradParameters();
  }
}

void DataParallelTable::train() {
  Container::train();
  for (size_t i = 1; i < replicas_.size(); ++i) replicas_[i]->train();
}

void DataParallelTable::evaluate() {
  Container::evaluate();
  for (size_t i = 1; i < replicas_.size(); ++i) replicas_[i]->evaluate();
}

nn::Module& DataParallelTable::to(nn::Device device) {
  if (device != tensor::Device::cuda(gpus_[0])) {
    throw nn::Error(where("to") + "expected " + tensor::Device::cuda(gpus_[0]).str() +
                    " (the replicas stay on their GPUs " + gpu_list(gpus_) + "), got " + device.str());
  }
  return *this;
}

nn::Module& DataParallelTable::convertReplicas(const std::function<void(nn::Module&)>& convert) {
  for (size_t i = 0; i < replicas_.size(); ++i) {
    tensor::cuda::DeviceGuard guard(gpus_[i]);
    convert(*replicas_[i]);
  }
  needSync_ = true;
  return *this;
}

nn::Module& DataParallelTable::to(nn::DType dtype) {
  return convertReplicas([&](nn::Module& m) { m.to(dtype); });
}

nn::Module& DataParallelTable::to(tensor::MemoryFormat format) {
  return convertReplicas([&](nn::Module& m) { m.to(format); });
}

std::string DataParallelTable::str() const {
  return type_name() + " on GPUs " + gpu_list(gpus_) +
         " {\n  (1): " + nn::indent_lines(nn::child_at(*this, modules, 0, "str").str(), "  ") + "\n}";
}

tensor::Json DataParallelTable::config() const {
  tensor::Json::Array gpus;
  for (int g : gpus_) gpus.emplace_back(g);
  return tensor::Json::Object{{"gpus", tensor::Json(std::move(gpus))}};
}

nn::ModulePtr DataParallelTable::fromConfig(const tensor::Json& config, std::vector<nn::ModulePtr> children) {
  nn::ConfigReader reader(config, kTypeName);
  const tensor::Shape listed = reader.shape("gpus");
  reader.finish();
  if (children.size() != 1) {
    throw nn::Error(std::string(kTypeName) + "::fromConfig: expected one child (the network), got " +
                    std::to_string(children.size()));
  }
  std::vector<int> gpus;
  for (int64_t g : listed) {
    if (g >= 0 && g < tensor::cuda::device_count()) gpus.push_back(static_cast<int>(g));
  }
  if (gpus.empty()) {
    std::fprintf(stderr, "cudnn.DataParallelTable: none of the saved GPUs %s is visible; loading the network alone\n",
                 gpu_list(std::vector<int>(listed.begin(), listed.end())).c_str());
    return children[0];
  }
  return std::make_shared<DataParallelTable>(std::move(children[0]), std::move(gpus));
}

}  // namespace dist
