// DistributedSampler.h: each rank's share of a data set for one epoch (as PyTorch's
// DistributedSampler). Every rank draws the same permutation of [0, size) from seed + epoch,
// pads it by wrapping around to a multiple of the world size (or, with dropLast, cuts it to
// one), and takes every worldSize-th index from position rank: the ranks' shares are
// disjoint (but for the padding), equally long, and together cover the data set.
// Host code only; no GPU.
#pragma once

#include <cstdint>
#include <vector>

namespace dist {

class DistributedSampler {
 public:
  DistributedSampler(int64_t size, int worldSize, int rank, bool shuffle = true, uint64_t seed = 0,
                     bool dropLast = false);
  // Call at the start of each epoch, as with PyTorch's sampler: a new permutation.
  void setEpoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }
  // This rank's indices for the current epoch, numSamples() of them.
  std::vector<int64_t> indices() const;
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
