// DistributedSampler: the ranks' shares per epoch.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <set>

#include "distributed/DistributedSampler.h"
#include "tests/support/ErrorText.h"

using dist::DistributedSampler;

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
