// Data.h: datasets, samplers and the DataLoader of training loops (as torch.utils.data).
// Note [Loader positions]: an epoch's order is a function of (seed, epoch) alone (a seeded
// Fisher-Yates shuffle), so a loader's whole state is three numbers, {seed, epoch, position}
// (position: batches handed out in this epoch). A loader restored from stateDict() mid-epoch
// hands out the batches an uninterrupted one would have, which is what checkpoints
// (train/Checkpoint.h) rely on for bit-identical resumption.
// Note [Prefetching]: with prefetch > 0 a background thread assembles the next batches (the
// dataset's batch(), index gathering on the CPU) while the training step runs, up to
// `prefetch` ahead; errors in it are rethrown by next(). Batches for a CUDA device are copied
// by the thread too, asynchronously: Note [Asynchronous batches] below.
// Note [Asynchronous batches]: for a CUDA device (with prefetch > 0) the loader keeps
// prefetch + 1 slots, each a set of device tensors of batchSize rows and page-locked host
// buffers (train/AsyncCopy.cpp). The thread assembles batch k on the CPU, copies it into slot
// k % slots' pinned buffers and enqueues their copy to the device on a side stream, recording
// an event; next() makes the device's stream wait for that event (no host wait), so the batch
// is on the GPU when the step's kernels need it and the copies of the following batches overlap
// the step. Lifetime rule: a batch handed out by next() lives in its slot until the following
// call of next(), setEpoch(), loadStateDict() or the loader's destruction; work enqueued on the
// device's stream before that call may read it, later work may not (clone() it to keep it).
// At that call the loader records an event on the device's stream, and the side stream waits
// for it before it overwrites the slot, so the GPU can still be running the step that reads
// it. The host buffers are reused once their copy has completed (an event the thread waits
// for). prefetch + 1 slots are what the queue needs: up to `prefetch` staged batches and the
// one handed out. Every batch must have the shapes of the first one but for a smaller first
// dimension. next() is host work: with a CUDA graph, call it outside the capture and copy the
// batch into the graph's static input (x.copy_(batch[0])), which the replay then reads.
// Note [A failed start]: setEpoch() and loadStateDict() ask the sampler for the epoch's order
// before they stop anything, so a sampler that throws leaves the loader as it was (the same
// epoch, position and prefetching thread) and the error reaches their caller. What can fail
// after the old epoch is stopped (the copier's buffers, the thread's creation) is rethrown by
// every next() until an epoch starts, rather than leaving next() waiting for a thread that
// is not there.
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
// row i of each. Fashion-MNIST's images and labels are one (nn::load_mnist, train/Idx.h).
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

// Moves batches to their device through `slots` reusable buffers, for the loader's thread
// (Note [Asynchronous batches]); the loader chooses the slots so that a slot is never staged
// while the batch in it may still be read. The CUDA one is cuda_batch_copier(); tests supply
// their own to check the order of the calls. One loader per copier.
class BatchCopier {
 public:
  virtual ~BatchCopier() = default;
  // Once, on the consumer's thread, before anything else: buffers for batches shaped like
  // `example` with up to `rows` rows in their first dimension.
  virtual void reserve(int slots, const std::vector<Tensor>& example, int64_t rows) = 0;
  // The loader's thread: copies `batch` into `slot` (its previous batch released).
  virtual void stage(int slot, const std::vector<Tensor>& batch) = 0;
  // The consumer: the batch staged in `slot`, ready for work enqueued on the device from now on.
  virtual std::vector<Tensor> acquire(int slot) = 0;
  // The consumer: work enqueued from now on no longer reads `slot`.
  virtual void release(int slot) = 0;
  // The consumer, the thread stopped: every copy done, later ones ordered after all work so far.
  virtual void drain() = 0;
};

// Pinned host buffers and asynchronous copies on a side stream of `device` (a CUDA device).
std::shared_ptr<BatchCopier> cuda_batch_copier(Device device);

class DataLoader {
 public:
  struct Options {
    int64_t batchSize = 1;
    bool shuffle = false;
    bool dropLast = false;  // drop a last, smaller batch
    uint64_t seed = 0;      // the shuffle's (Note [Loader positions])
    int prefetch = 2;       // batches assembled ahead by the background thread; 0: none
    Device device = Device::cpu();
    // With prefetch > 0: how batches reach `device`; null: cuda_batch_copier for a CUDA
    // device, none (plain tensors) for the CPU.
    std::shared_ptr<BatchCopier> copier = nullptr;
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
  std::deque<std::vector<Tensor>> ready_;  // with a copier: empty ones, the batches are in slots
  std::exception_ptr error_;
  bool stopping_ = false, done_ = false;
  // Note [Asynchronous batches]: batches handed out and released since start()
  std::shared_ptr<BatchCopier> copier_;
  bool reserved_ = false;
  int64_t handed_ = 0, released_ = 0;
  int slots() const { return o_.prefetch + 1; }
};

}  // namespace nn
