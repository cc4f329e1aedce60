// test_Data.cpp: TensorDataset, RandomSampler and DataLoader (train/Data.h): batching,
// drop_last, seeded shuffles that depend on (seed, epoch) only, prefetching with the same
// batches as none, a resumed position (Note [Loader positions]), errors, files as datasets.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "tensor/Safetensors.h"
#include "tests/support/GradCheck.h"
#include "train/Data.h"

using namespace tensor;

namespace {
std::shared_ptr<nn::TensorDataset> numbers(int64_t n) {
  Tensor x = empty({n, 2}), y = empty({n}, DType::Int64);
  for (int64_t i = 0; i < n; ++i) {
    x.set({i, 0}, static_cast<double>(i));
    x.set({i, 1}, static_cast<double>(-i));
    y.set({i}, static_cast<double>(i));
  }
  return std::make_shared<nn::TensorDataset>(std::vector<Tensor>{x, y});
}

// The labels of every batch of one epoch.
std::vector<std::vector<int64_t>> epoch_labels(nn::DataLoader& l) {
  std::vector<std::vector<int64_t>> out;
  std::vector<Tensor> b;
  while (l.next(b)) {
    REQUIRE(b.size() == 2);
    CHECK(b[0].size(0) == b[1].size(0));
    std::vector<int64_t> labels;
    for (double v : b[1].to_vector<double>()) labels.push_back(static_cast<int64_t>(v));
    for (int64_t i = 0; i < b[0].size(0); ++i) CHECK(b[0].get({i, 0}) == static_cast<double>(labels[i]));
    out.push_back(labels);
  }
  return out;
}
}  // namespace

TEST_CASE("DataLoader: batches in order, the last one smaller or dropped") {
  for (int prefetch : {0, 2}) {
    INFO("prefetch ", prefetch);
    nn::DataLoader l(numbers(10), {.batchSize = 4, .prefetch = prefetch});
    CHECK(l.batchesPerEpoch() == 3);
    const auto e = epoch_labels(l);
    CHECK(e == std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}});
    std::vector<Tensor> b;
    CHECK_FALSE(l.next(b));  // the epoch is over until setEpoch
    nn::DataLoader d(numbers(10), {.batchSize = 4, .dropLast = true, .prefetch = prefetch});
    CHECK(d.batchesPerEpoch() == 2);
    CHECK(epoch_labels(d).size() == 2);
  }
}

TEST_CASE("DataLoader: seeded shuffles per epoch, the same with and without prefetching") {
  nn::DataLoader a(numbers(50), {.batchSize = 8, .shuffle = true, .seed = 3, .prefetch = 0});
  nn::DataLoader b(numbers(50), {.batchSize = 8, .shuffle = true, .seed = 3, .prefetch = 3});
  nn::DataLoader c(numbers(50), {.batchSize = 8, .shuffle = true, .seed = 4, .prefetch = 1});
  const auto a0 = epoch_labels(a), b0 = epoch_labels(b), c0 = epoch_labels(c);
  CHECK(a0 == b0);
  CHECK(a0 != c0);
  std::set<int64_t> seen;
  for (const auto& batch : a0) seen.insert(batch.begin(), batch.end());
  CHECK(seen.size() == 50);  // a permutation
  a.setEpoch(1);
  b.setEpoch(1);
  const auto a1 = epoch_labels(a);
  CHECK(a1 != a0);
  CHECK(a1 == epoch_labels(b));
  a.setEpoch(0);
  CHECK(epoch_labels(a) == a0);  // a function of (seed, epoch)
}

TEST_CASE("DataLoader: a state restored mid-epoch hands out the remaining batches") {
  nn::DataLoader a(numbers(30), {.batchSize = 4, .shuffle = true, .seed = 9});
  a.setEpoch(2);
  std::vector<Tensor> b;
  a.next(b);
  a.next(b);
  const auto state = a.stateDict();
  CHECK(state.at("position") == 2);
  CHECK(state.at("epoch") == 2);
  const auto rest = epoch_labels(a);
  nn::DataLoader r(numbers(30), {.batchSize = 4, .shuffle = true, .seed = 9});
  r.loadStateDict(state);
  CHECK(epoch_labels(r) == rest);
  nn::DataLoader other(numbers(30), {.batchSize = 4, .shuffle = true, .seed = 10});
  CHECK_THROWS_WITH_AS(other.loadStateDict(state),
                       doctest::Contains("nn.DataLoader::loadStateDict: expected the loader's seed 10, got 9"), Error);
}

TEST_CASE("DataLoader and datasets: errors, a dataset's error from the prefetching thread, files") {
  CHECK_THROWS_WITH_AS(nn::DataLoader(numbers(3), {.batchSize = 0}),
                       doctest::Contains("nn.DataLoader: expected batchSize > 0"), Error);
  CHECK_THROWS_WITH_AS(
      nn::TensorDataset({zeros({3, 2}), zeros({4})}),
      doctest::Contains("nn.TensorDataset: expected tensors with a common first dimension 3, got float32 [4]"), Error);
  struct Broken : nn::Dataset {
    int64_t size() const override { return 4; }
    std::vector<Tensor> batch(const std::vector<int64_t>&) const override { throw Error("broken dataset"); }
  };
  nn::DataLoader l(std::make_shared<Broken>(), {.batchSize = 2, .prefetch = 2});
  std::vector<Tensor> b;
  CHECK_THROWS_WITH_AS(l.next(b), "broken dataset", Error);

  const std::string path = "/tmp/cudnn_nn_test_dataset.safetensors";
  save_safetensors(path, {{"images", ones({6, 1, 2, 2})}, {"labels", zeros({6}, DType::Int64)}});
  const auto ds = nn::load_tensor_dataset(path, {"images", "labels"});
  CHECK(ds->size() == 6);
  CHECK_THROWS_WITH_AS(nn::load_tensor_dataset(path, {"x"}),
                       doctest::Contains("expected a tensor named 'x', got 'images', 'labels'"), Error);
  const auto npz = nn::load_tensor_dataset(std::string(CUDNN_NN_TEST_DATA) + "/npy/linear.npz", {"weight", "bias"});
  CHECK(npz->size() == 2);
  std::remove(path.c_str());
}
