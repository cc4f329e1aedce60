// DistributedSampler.cpp
#include "cudnn/dist/DistributedSampler.h"

#include <numeric>
#include <utility>

#include "tensor/DType.h"
#include "tensor/Generator.h"

namespace cudnn::dist {

DistributedSampler::DistributedSampler(int64_t size, int worldSize, int rank, bool shuffle, uint64_t seed,
                                       bool dropLast)
    : size_(size), worldSize_(worldSize), rank_(rank), shuffle_(shuffle), seed_(seed), dropLast_(dropLast) {
  if (size < 0 || worldSize < 1 || rank < 0 || rank >= worldSize) {
    throw tensor::Error(tensor::detail::concat("cudnn::dist::DistributedSampler: expected size >= 0, world size >= 1 ",
                                               "and 0 <= rank < world size, got size ", size, ", world size ",
                                               worldSize, ", rank ", rank));
  }
  numSamples_ = dropLast ? size / worldSize : (size + worldSize - 1) / worldSize;
}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> order(static_cast<size_t>(size_));
  std::iota(order.begin(), order.end(), int64_t(0));
  if (shuffle_) {
    tensor::Generator gen(seed_ + static_cast<uint64_t>(epoch_));
    for (int64_t i = size_ - 1; i > 0; --i) std::swap(order[i], order[gen.randint(i + 1)]);
  }
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(numSamples_));
  for (int64_t k = 0; k < numSamples_; ++k) {
    const int64_t pos = k * worldSize_ + rank_;  // below numSamples * worldSize: padded by wrapping
    mine.push_back(order[static_cast<size_t>(pos % size_)]);
  }
  return mine;
}

}  // namespace cudnn::dist
