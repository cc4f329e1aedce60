// DistributedSampler.cpp
#include "distributed/DistributedSampler.h"

#include <numeric>
#include <utility>

#include "tensor/DType.h"
#include "tensor/Generator.h"

namespace dist {

DistributedSampler::DistributedSampler(int64_t size, int worldSize, int rank, bool shuffle, uint64_t seed,
                                       bool dropLast)
    : size_(size), worldSize_(worldSize), rank_(rank), shuffle_(shuffle), seed_(seed), dropLast_(dropLast) {
  if (size < 0 || worldSize < 1 || rank < 0 || rank >= worldSize) {
    throw tensor::Error(tensor::detail::concat("dist::DistributedSampler: expected size >= 0, world size >= 1 ",
                                               "and 0 <= rank < world size, got size ", size, ", world size ",
                                               worldSize, ", rank ", rank));
  }
  // Note [Sampler sizes]: the size comes from the user (a data set's length), so nothing
  // here may overflow int64: (size + worldSize - 1) / worldSize does for size near INT64_MAX.
  // Rounding up is division plus a carry; positions are taken in uint64 (below).
  numSamples_ = size / worldSize + (!dropLast && size % worldSize != 0 ? 1 : 0);
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  // The whole permutation is held in memory: refuse, by name, a size whose bytes overflow
  // (checked as tensor's sizes are, Note [Checked sizes] in tensor/DType.cpp).
  int64_t bytes = 0;
  if (__builtin_mul_overflow(size_, static_cast<int64_t>(sizeof(int64_t)), &bytes)) {
    throw tensor::Error(tensor::detail::concat("dist::DistributedSampler::indices: expected a data set whose ",
                                               "indices fit in memory, got size ", size_,
                                               " (its permutation's size in bytes overflows int64)"));
  }
  std::vector<int64_t> order(static_cast<size_t>(size_));
  std::iota(order.begin(), order.end(), int64_t(0));
  if (shuffle_) {
    tensor::Generator gen(seed_ + static_cast<uint64_t>(epoch));
    for (int64_t i = size_ - 1; i > 0; --i) std::swap(order[i], order[gen.randint(i + 1)]);
  }
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(numSamples_));
  for (int64_t k = 0; k < numSamples_; ++k) {
    // See Note [Sampler sizes]
    // Below numSamples * worldSize <= size + worldSize - 1 < 2^64: padded by wrapping around.
    const uint64_t pos = static_cast<uint64_t>(k) * static_cast<uint64_t>(worldSize_) + static_cast<uint64_t>(rank_);
    mine.push_back(order[static_cast<size_t>(pos % static_cast<uint64_t>(size_))]);
  }
  return mine;
}

}  // namespace dist
