// DistributedSampler: the ranks' shares per epoch, and as the nn::Sampler (train/Data.h) that
// drives a DataLoader.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "distributed/DistributedSampler.h"
#include "tests/support/ErrorText.h"
#include "train/Data.h"

using dist::DistributedSampler;

namespace {
// Example i: the row [i] and the label i.
std::shared_ptr<nn::TensorDataset> numbers(int64_t n) {
  tensor::Tensor x = tensor::empty({n, 1}), y = tensor::empty({n}, tensor::DType::Int64);
  for (int64_t i = 0; i < n; ++i) {
    x.set({i, 0}, static_cast<double>(i));
    y.set({i}, static_cast<double>(i));
  }
  return std::make_shared<nn::TensorDataset>(std::vector<tensor::Tensor>{x, y});
}

// The labels of the loader's batches to the end of its epoch, one after another, and the batch count.
std::vector<int64_t> rest_of_epoch(nn::DataLoader& l, int64_t* batches = nullptr) {
  std::vector<int64_t> out;
  std::vector<tensor::Tensor> b;
  int64_t n = 0;
  while (l.next(b)) {
    REQUIRE(b.size() == 2);
    for (int64_t i = 0; i < b[1].size(0); ++i) {
      CHECK(b[0].get({i, 0}) == b[1].get({i}));
      out.push_back(static_cast<int64_t>(b[1].get({i})));
    }
    ++n;
  }
  if (batches) *batches = n;
  return out;
}
}  // namespace

TEST_CASE("sampler: shares are equally long, disjoint but for the padding, and cover the data set") {
  for (int64_t size : {0, 1, 7, 10, 12, 101}) {
    for (int world : {1, 2, 3, 4}) {
      CAPTURE(size);
      CAPTURE(world);
      std::vector<int64_t> all;
      const int64_t per = (size + world - 1) / world;
      for (int r = 0; r < world; ++r) {
        DistributedSampler s(size, world, r, true, 42);
        s.setEpoch(3);
        const auto mine = s.indices();
        CHECK(static_cast<int64_t>(mine.size()) == per);
        CHECK(s.numSamples() == per);
        all.insert(all.end(), mine.begin(), mine.end());
      }
      CHECK(static_cast<int64_t>(all.size()) == per * world);
      std::set<int64_t> distinct(all.begin(), all.end());
      CHECK(static_cast<int64_t>(distinct.size()) == size);  // every index, the padding repeats some
      for (int64_t i : all) CHECK((i >= 0 && i < size));
    }
  }
}

TEST_CASE("sampler: dropLast cuts to a multiple of the world size, without repeats") {
  std::vector<int64_t> all;
  for (int r = 0; r < 3; ++r) {
    DistributedSampler s(10, 3, r, true, 1, /*dropLast=*/true);
    const auto mine = s.indices();
    CHECK(mine.size() == 3);
    all.insert(all.end(), mine.begin(), mine.end());
  }
  CHECK(std::set<int64_t>(all.begin(), all.end()).size() == 9);
}

TEST_CASE("sampler: the same permutation on every rank for an epoch, another for the next epoch") {
  DistributedSampler a(1000, 1, 0, true, 7), b(1000, 1, 0, true, 7), c(1000, 1, 0, true, 8);
  a.setEpoch(1);
  b.setEpoch(1);
  c.setEpoch(1);
  CHECK(a.indices() == b.indices());
  CHECK(a.indices() != c.indices());  // the seed counts
  const auto first = a.indices();
  a.setEpoch(2);
  CHECK(a.indices() != first);
  auto sorted = a.indices();
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) CHECK(sorted[i] == i);
  DistributedSampler plain(5, 2, 1, /*shuffle=*/false);
  CHECK(plain.indices() == std::vector<int64_t>{1, 3, 0});  // 0 1 2 3 4 | 0: rank 1 takes 1, 3, then the wrapped 0
}

TEST_CASE("sampler: bad arguments are named") {
  CHECK(testing::has(testing::error_of([] { DistributedSampler(10, 2, 2); }), "got size 10, world size 2, rank 2"));
  CHECK(testing::has(testing::error_of([] { DistributedSampler(-1, 1, 0); }), "got size -1"));
}

TEST_CASE("sampler: sizes near INT64_MAX give exact sample counts (no signed overflow)") {
  constexpr int64_t kMax = INT64_MAX;
  CHECK(DistributedSampler(kMax, 1, 0).numSamples() == kMax);
  CHECK(DistributedSampler(kMax, 2, 1).numSamples() == int64_t{1} << 62);  // 2^63 - 1 rounded up, halved
  CHECK(DistributedSampler(kMax, 2, 0, true, 0, /*dropLast=*/true).numSamples() == (int64_t{1} << 62) - 1);
  CHECK(DistributedSampler(kMax, 3, 2).numSamples() == kMax / 3 + 1);
  CHECK(DistributedSampler(kMax - 1, 1 << 20, 5).numSamples() == (kMax - 1) / (1 << 20) + 1);
  for (int w : {1, 2, 7}) CHECK(DistributedSampler(kMax, w, 0).numSamples() > 0);
  // Listing them is refused by name, not by a wrapped allocation size.
  CHECK(testing::has(testing::error_of([] { DistributedSampler(kMax, 2, 0).indices(); }),
                     "got size 9223372036854775807 (its permutation's size in bytes overflows int64)"));
}

TEST_CASE("sampler: an nn::Sampler that drives a DataLoader, each rank its share, per the loader's epoch") {
  constexpr int64_t kSize = 23, kBatch = 3;
  constexpr int kWorld = 3;
  for (int prefetch : {0, 2}) {
    CAPTURE(prefetch);
    for (int64_t epoch : {0, 1, 5}) {
      CAPTURE(epoch);
      std::vector<int64_t> all;
      for (int r = 0; r < kWorld; ++r) {
        auto sampler = std::make_shared<DistributedSampler>(kSize, kWorld, r, true, 11);
        const std::shared_ptr<nn::Sampler> base = sampler;  // passed as the interface, no adapter
        CHECK(base->worldSize() == kWorld);
        nn::DataLoader loader(numbers(kSize), {.batchSize = kBatch, .prefetch = prefetch}, sampler);
        CHECK(&loader.sampler() == sampler.get());
        CHECK(loader.batchesPerEpoch() == (sampler->numSamples() + kBatch - 1) / kBatch);
        sampler->setEpoch(epoch + 100);  // the sampler's own epoch is for loops without a loader
        loader.setEpoch(epoch);
        int64_t batches = 0;
        const auto mine = rest_of_epoch(loader, &batches);
        CHECK(batches == loader.batchesPerEpoch());
        CHECK(mine == sampler->indices(epoch));  // the loader keeps the sampler's order
        CHECK(static_cast<int64_t>(mine.size()) == sampler->numSamples());
        all.insert(all.end(), mine.begin(), mine.end());
      }
      CHECK(std::set<int64_t>(all.begin(), all.end()).size() == static_cast<size_t>(kSize));
    }
  }
  // The epochs differ, and indices() after setEpoch(e) is indices(e).
  DistributedSampler s(kSize, kWorld, 1, true, 11);
  CHECK(s.indices(0) != s.indices(1));
  s.setEpoch(4);
  CHECK(s.indices() == s.indices(4));
}

TEST_CASE("sampler: a DataLoader over it resumes mid-epoch and checks the world size") {
  auto sampler = std::make_shared<DistributedSampler>(40, 2, 0, true, 5, /*dropLast=*/true);
  nn::DataLoader a(numbers(40), {.batchSize = 4, .seed = 9, .prefetch = 1}, sampler);
  a.setEpoch(2);
  std::vector<tensor::Tensor> b;
  REQUIRE(a.next(b));
  REQUIRE(a.next(b));
  const std::map<std::string, double> state = a.stateDict();
  CHECK(state.at("world_size") == 2);
  const auto expected = rest_of_epoch(a);
  nn::DataLoader resumed(numbers(40), {.batchSize = 4, .seed = 9, .prefetch = 0},
                         std::make_shared<DistributedSampler>(40, 2, 0, true, 5, true));
  resumed.loadStateDict(state);
  CHECK(rest_of_epoch(resumed) == expected);
  const auto whole = sampler->indices(2);
  CHECK(expected == std::vector<int64_t>(whole.begin() + 8, whole.end()));
  // A loader whose sampler shares the data set among another number of processes refuses it.
  nn::DataLoader other(numbers(40), {.batchSize = 4, .seed = 9, .prefetch = 0},
                       std::make_shared<DistributedSampler>(40, 4, 0, true, 5, true));
  CHECK(
      testing::has(testing::error_of([&] { other.loadStateDict(state); }), "expected a state of world size 4, got 2"));
}
