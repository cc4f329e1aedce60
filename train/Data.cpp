// Data.cpp
#include "train/Data.h"

#include <cstdio>
#include <numeric>

#include "tensor/Generator.h"
#include "tensor/Npy.h"
#include "tensor/Safetensors.h"

namespace nn {

using tensor::Error;

// ---------------------------------------------------------------- datasets

TensorDataset::TensorDataset(std::vector<Tensor> tensors) : tensors_(std::move(tensors)) {
  if (tensors_.empty()) throw Error("nn.TensorDataset: expected at least one tensor, got none");
  for (size_t k = 0; k < tensors_.size(); ++k) {
    const Tensor& t = tensors_[k];
    if (!t.defined() || t.dim() == 0 || t.size(0) != tensors_[0].size(0)) {
      throw Error("nn.TensorDataset: expected tensors with a common first dimension" +
                  (tensors_[0].defined() && tensors_[0].dim() > 0 ? " " + std::to_string(tensors_[0].size(0)) : "") +
                  ", got " + (t.defined() ? t.description() : "an undefined tensor") + " at position " +
                  std::to_string(k));
    }
  }
  n_ = tensors_[0].size(0);
}

std::vector<Tensor> TensorDataset::batch(const std::vector<int64_t>& indices) const {
  Tensor idx = tensor::empty({static_cast<int64_t>(indices.size())}, tensor::DType::Int64);
  int64_t* p = idx.data<int64_t>();
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] < 0 || indices[i] >= n_) {
      throw Error("nn.TensorDataset::batch: expected indices in [0, " + std::to_string(n_) + "), got " +
                  std::to_string(indices[i]));
    }
    p[i] = indices[i];
  }
  std::vector<Tensor> out;
  for (const Tensor& t : tensors_) out.push_back(tensor::index_select(t, 0, idx));
  return out;
}

std::shared_ptr<TensorDataset> load_tensor_dataset(const std::string& path, const std::vector<std::string>& keys) {
  const std::string who = "nn::load_tensor_dataset: " + path;
  if (path.ends_with(".npy")) {
    if (!keys.empty())
      throw Error(who + ": expected no keys for an .npy file (one tensor), got " + std::to_string(keys.size()));
    return std::make_shared<TensorDataset>(std::vector<Tensor>{tensor::load_npy(path)});
  }
  const std::map<std::string, Tensor> all =
      path.ends_with(".npz") ? tensor::load_npz(path) : tensor::load_safetensors(path).tensors;
  std::vector<Tensor> tensors;
  for (const std::string& key : keys) {
    const auto it = all.find(key);
    if (it == all.end()) {
      std::string have;
      for (const auto& [name, _] : all) have += (have.empty() ? "'" : ", '") + name + "'";
      throw Error(who + ": expected a tensor named '" + key + "', got " + (have.empty() ? "none" : have));
    }
    tensors.push_back(it->second);
  }
  try {
    return std::make_shared<TensorDataset>(std::move(tensors));
  } catch (const Error& e) {
    throw Error(who + ": " + e.what());
  }
}

// ---------------------------------------------------------------- samplers

RandomSampler::RandomSampler(int64_t n, bool shuffle, uint64_t seed) : n_(n), shuffle_(shuffle), seed_(seed) {
  if (n < 0) throw Error("nn.RandomSampler: expected a dataset size >= 0, got " + std::to_string(n));
}

std::vector<int64_t> RandomSampler::indices(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(n_));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (!shuffle_) return order;
  // Fisher-Yates from a generator of (seed, epoch) alone: Note [Loader positions]
  tensor::Generator gen(seed_ ^ (static_cast<uint64_t>(epoch) * 0x9E3779B97F4A7C15ull));
  for (int64_t i = n_ - 1; i > 0; --i) std::swap(order[i], order[gen.randint(i + 1)]);
  return order;
}

// ---------------------------------------------------------------- the loader

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, const Options& options, std::shared_ptr<Sampler> sampler)
    : dataset_(std::move(dataset)), o_(options), sampler_(std::move(sampler)) {
  if (!dataset_) throw Error("nn.DataLoader: expected a dataset, got none");
  if (o_.batchSize <= 0 || o_.prefetch < 0) {
    throw Error("nn.DataLoader: expected batchSize > 0 and prefetch >= 0, got batchSize " +
                std::to_string(o_.batchSize) + " and prefetch " + std::to_string(o_.prefetch));
  }
  if (!sampler_) sampler_ = std::make_shared<RandomSampler>(dataset_->size(), o_.shuffle, o_.seed);
  if (o_.prefetch > 0) copier_ = o_.copier ? o_.copier : o_.device.is_cuda() ? cuda_batch_copier(o_.device) : nullptr;
  start(0, 0);
}

DataLoader::~DataLoader() {
  try {
    stop();
  } catch (const std::exception& e) {  // the copier's drain: a CUDA fault
    std::fprintf(stderr, "nn.DataLoader: %s\n", e.what());
  }
}

int64_t DataLoader::batchesPerEpoch() const {
  // the ceiling without n + batchSize - 1, which overflows for a batch size near INT64_MAX
  const auto n = static_cast<int64_t>(order_.size());
  return n / o_.batchSize + (!o_.dropLast && n % o_.batchSize != 0 ? 1 : 0);
}

std::vector<int64_t> DataLoader::batchIndices(int64_t b) const {
  const auto n = static_cast<int64_t>(order_.size());
  const int64_t begin = b * o_.batchSize;  // b < batchesPerEpoch(): begin < n
  const int64_t end = begin + std::min(o_.batchSize, n - begin);
  return {order_.begin() + begin, order_.begin() + end};
}

void DataLoader::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  ready_.clear();
  error_ = nullptr;
  stopping_ = false;
  done_ = false;
  handed_ = released_ = 0;
  if (reserved_) copier_->drain();  // the batch handed out last is no longer the caller's
}

void DataLoader::produce(int64_t from) {
  try {
    for (int64_t b = from; b < batchesPerEpoch(); ++b) {
      std::vector<Tensor> batch = dataset_->batch(batchIndices(b));
      const int64_t k = b - from;  // slot k % slots(), free once batch k - slots() is released
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] {
        return stopping_ ||
               (static_cast<int>(ready_.size()) < o_.prefetch && (!copier_ || released_ >= k - slots() + 1));
      });
      if (stopping_) return;
      if (copier_) {
        lock.unlock();  // the copy may wait for the slot's previous one
        copier_->stage(static_cast<int>(k % slots()), batch);
        batch.clear();
        lock.lock();
      }
      ready_.push_back(std::move(batch));
      cv_.notify_all();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::current_exception();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  done_ = true;
  cv_.notify_all();
}

void DataLoader::start(int64_t epoch, int64_t position) {
  // The sampler first: if it throws, the loader is left as it was, the current epoch's thread
  // still running (Note [A failed start] in Data.h).
  std::vector<int64_t> order = sampler_->indices(epoch);
  try {
    stop();
    order_ = std::move(order);
    epoch_ = epoch;
    position_ = position;
    // See Note [Prefetching] in Data.h
    if (copier_ && !reserved_ && !order_.empty()) {
      // the slots' shapes from the first example (Note [Asynchronous batches]); a batch has at
      // most batchSize rows and, but for a sampler drawing with replacement, at most the
      // dataset's (a batch size of INT64_MAX: the whole epoch in one batch)
      const int64_t rows =
          std::min(o_.batchSize, std::max(static_cast<int64_t>(order_.size()), static_cast<int64_t>(dataset_->size())));
      copier_->reserve(slots(), dataset_->batch({order_[0]}), rows);
      reserved_ = true;
    }
    if (o_.prefetch > 0 && position < batchesPerEpoch()) worker_ = std::thread([this, position] { produce(position); });
  } catch (...) {
    // no thread: next() rethrows this rather than waiting for one
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::current_exception();
    done_ = true;
    throw;
  }
}

void DataLoader::setEpoch(int64_t epoch) {
  if (epoch < 0) throw Error("nn.DataLoader::setEpoch: expected an epoch >= 0, got " + std::to_string(epoch));
  start(epoch, 0);
}

bool DataLoader::next(std::vector<Tensor>& out) {
  if (position_ >= batchesPerEpoch()) return false;
  std::vector<Tensor> batch;
  if (o_.prefetch > 0) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (copier_ && handed_ > 0) {
      // the previous batch's slot may be overwritten after the work enqueued so far
      copier_->release(static_cast<int>((handed_ - 1) % slots()));
      ++released_;
      cv_.notify_all();
    }
    cv_.wait(lock, [&] { return !ready_.empty() || error_ || done_; });
    if (ready_.empty()) {
      if (error_) std::rethrow_exception(error_);
      throw Error("nn.DataLoader::next: the loader's thread ended early");  // not reached
    }
    batch = std::move(ready_.front());
    ready_.pop_front();
    cv_.notify_all();
    if (copier_) batch = copier_->acquire(static_cast<int>(handed_++ % slots()));
  } else {
    batch = dataset_->batch(batchIndices(position_));
  }
  if (!copier_ && !o_.device.is_cpu()) {
    for (Tensor& t : batch) t = t.to(o_.device);
  }
  out = std::move(batch);
  ++position_;
  return true;
}

std::map<std::string, double> DataLoader::stateDict() const {
  return {{"seed", static_cast<double>(o_.seed)},
          {"epoch", static_cast<double>(epoch_)},
          {"position", static_cast<double>(position_)},
          {"world_size", static_cast<double>(sampler_->worldSize())}};
}

void DataLoader::loadStateDict(const std::map<std::string, double>& state) {
  for (const char* key : {"seed", "epoch", "position"}) {
    if (!state.count(key))
      throw Error(std::string("nn.DataLoader::loadStateDict: expected a state with '") + key + "', got none");
  }
  if (state.at("seed") != static_cast<double>(o_.seed)) {
    throw Error("nn.DataLoader::loadStateDict: expected the loader's seed " + std::to_string(o_.seed) + ", got " +
                std::to_string(static_cast<uint64_t>(state.at("seed"))));
  }
  if (state.count("world_size") && state.at("world_size") != static_cast<double>(sampler_->worldSize())) {
    throw Error("nn.DataLoader::loadStateDict: expected a state of world size " +
                std::to_string(sampler_->worldSize()) + ", got " +
                std::to_string(static_cast<int64_t>(state.at("world_size"))));
  }
  const auto epoch = static_cast<int64_t>(state.at("epoch")), position = static_cast<int64_t>(state.at("position"));
  if (epoch < 0 || position < 0) {
    throw Error("nn.DataLoader::loadStateDict: expected epoch and position >= 0, got " + std::to_string(epoch) +
                " and " + std::to_string(position));
  }
  start(epoch, position);
}

}  // namespace nn
