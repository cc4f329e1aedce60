// Data.h: datasets, samplers and the DataLoader of training loops (as torch.utils.data).
// Note [Loader positions]: an epoch's order is a function of (seed, epoch) alone (a seeded
// Fisher-Yates shuffle), so a loader's whole state is three numbers, {seed, epoch, position}
// (position: batches handed out in this epoch). A loader restored from stateDict() mid-epoch
// hands out the batches an uninterrupted one would have, which is what checkpoints
// (train/Checkpoint.h) rely on for bit-identical resumption.
// Note [Prefetching]: with prefetch > 0 a background thread assembles the next batches (the
// dataset's batch(), index gathering on the CPU) while the training step runs, up to
// `prefetch` ahead; errors in it are rethrown by next(). Batches for a CUDA device are copied
// by next() on the consumer's thread (on the device's stream, ordered with the step).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tensor/Tensor.h"

namespace nn {

using tensor::Device;
using tensor::Tensor;

// A dataset of N examples; batch() gathers several (each tensor of the result has the batch
// as its first dimension). Must be safe to call from the loader's thread while the caller
// trains (read-only).
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual std::vector<Tensor> batch(const std::vector<int64_t>& indices) const = 0;
};

// Tensors with a common first dimension N (images [N x C x H x W], labels [N]): example i is
// row i of each. Fashion-MNIST's images and labels are one (samples/FashionMnist.h).
class TensorDataset : public Dataset {
 public:
  explicit TensorDataset(std::vector<Tensor> tensors);
  int64_t size() const override { return n_; }
  std::vector<Tensor> batch(const std::vector<int64_t>& indices) const override;
  const std::vector<Tensor>& tensors() const { return tensors_; }

 private:
  std::vector<Tensor> tensors_;
  int64_t n_ = 0;
};

// A TensorDataset from a file: a safetensors file or an .npz archive, taking the tensors
// named `keys` in that order ({"images", "labels"}); or one tensor from an .npy file (keys
// empty).
std::shared_ptr<TensorDataset> load_tensor_dataset(const std::string& path, const std::vector<std::string>& keys);

// Which examples an epoch visits, in order: the interface a distributed sampler implements
// (each process its share) to plug into DataLoader.
class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual std::vector<int64_t> indices(int64_t epoch) const = 0;
  virtual int64_t worldSize() const { return 1; }  // processes sharing the dataset
};

// 0..n-1 in order, or shuffled with a permutation that depends on (seed, epoch) only.
class RandomSampler : public Sampler {
 public:
  RandomSampler(int64_t n, bool shuffle, uint64_t seed);
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t n_;
  bool shuffle_;
  uint64_t seed_;
};

class DataLoader {
 public:
  struct Options {
    int64_t batchSize = 1;
    bool shuffle = false;
    bool dropLast = false;  // drop a last, smaller batch
    uint64_t seed = 0;      // the shuffle's (Note [Loader positions])
    int prefetch = 2;       // batches assembled ahead by the background thread; 0: none
    Device device = Device::cpu();
  };
  // `sampler`: null for a RandomSampler(dataset size, shuffle, seed).
  DataLoader(std::shared_ptr<Dataset> dataset, const Options& options, std::shared_ptr<Sampler> sampler = nullptr);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Starts epoch `epoch` from its first batch (the sampler's order for that epoch).
  void setEpoch(int64_t epoch);
  // The next batch of the current epoch into `out` (on options.device); false at its end.
  bool next(std::vector<Tensor>& out);
  int64_t batchesPerEpoch() const;
  int64_t epoch() const { return epoch_; }
  int64_t position() const { return position_; }
  const Sampler& sampler() const { return *sampler_; }
  // {"seed", "epoch", "position", "world_size"}; loadStateDict resumes there (checking seed and
  // world size).
  std::map<std::string, double> stateDict() const;
  void loadStateDict(const std::map<std::string, double>& state);

 private:
  void start(int64_t epoch, int64_t position);
  void stop();
  std::vector<int64_t> batchIndices(int64_t b) const;
  void produce(int64_t from);

  std::shared_ptr<Dataset> dataset_;
  Options o_;
  std::shared_ptr<Sampler> sampler_;
  int64_t epoch_ = 0, position_ = 0;
  std::vector<int64_t> order_;  // this epoch's indices

  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::vector<Tensor>> ready_;
  std::exception_ptr error_;
  bool stopping_ = false, done_ = false;
};

}  // namespace nn
