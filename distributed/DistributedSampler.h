// DistributedSampler.h: each rank's share of a data set for one epoch (as PyTorch's
// DistributedSampler). Every rank draws the same permutation of [0, size) from seed + epoch,
// pads it by wrapping around to a multiple of the world size (or, with dropLast, cuts it to
// one), and takes every worldSize-th index from position rank: the ranks' shares are
// disjoint (but for the padding), equally long, and together cover the data set.
// It is the loader's nn::Sampler (train/Data.h): handed to an nn::DataLoader, the loader's
// setEpoch(e) draws indices(e) and its batches are this rank's share. A loop without a loader
// calls setEpoch() and indices() itself. Host code only; no GPU.
#pragma once

#include <cstdint>
#include <vector>

#include "train/Data.h"

namespace dist {

class DistributedSampler : public nn::Sampler {
 public:
  DistributedSampler(int64_t size, int worldSize, int rank, bool shuffle = true, uint64_t seed = 0,
                     bool dropLast = false);
  // This rank's indices for `epoch`, numSamples() of them (what the DataLoader asks for); a
  // function of (seed, epoch) alone, so it is safe from the loader's thread.
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t worldSize() const override { return worldSize_; }
  int rank() const { return rank_; }
  // Without a loader: call at the start of each epoch, as with PyTorch's sampler (a new
  // permutation), then indices() is this rank's share of it.
  void setEpoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }
  std::vector<int64_t> indices() const { return indices(epoch_); }
  int64_t numSamples() const { return numSamples_; }
  int64_t size() const { return size_; }

 private:
  int64_t size_;
  int worldSize_, rank_;
  bool shuffle_;
  uint64_t seed_;
  bool dropLast_;
  int64_t epoch_ = 0;
  int64_t numSamples_ = 0;
};

}  // namespace dist
