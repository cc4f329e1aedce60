// test_Data.cpp: TensorDataset, RandomSampler and DataLoader (train/Data.h): batching,
// drop_last, seeded shuffles that depend on (seed, epoch) only, prefetching with the same
// batches as none, a resumed position (Note [Loader positions]), errors, files as datasets;
// the slots of asynchronous copies (Note [Asynchronous batches]) through a checking copier.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

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

namespace {
// A BatchCopier on the CPU that checks the loader's slot discipline (Note [Asynchronous
// batches]): a slot is never staged while the batch in it is handed out and not released.
// Its stage() is slow so that the loader's thread is always as far ahead as it may be.
struct CheckingCopier : nn::BatchCopier {
  std::mutex m;
  int slots = 0;
  std::vector<std::vector<Tensor>> buffers;
  std::vector<int> held;  // per slot: acquired and not released
  int violations = 0, reserves = 0, drains = 0, maxHeld = 0;
  int64_t staged = 0;
  void reserve(int n, const std::vector<Tensor>& example, int64_t rows) override {
    std::lock_guard<std::mutex> lock(m);
    ++reserves;
    slots = n;
    buffers.assign(static_cast<size_t>(n), {});
    held.assign(static_cast<size_t>(n), 0);
    CHECK(rows >= 1);
    CHECK(example.size() == 2);
  }
  void stage(int slot, const std::vector<Tensor>& batch) override {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    std::lock_guard<std::mutex> lock(m);
    if (slot < 0 || slot >= slots || held[static_cast<size_t>(slot)]) ++violations;
    std::vector<Tensor> copy;
    for (const Tensor& t : batch) copy.push_back(t.clone());
    buffers[static_cast<size_t>(slot)] = std::move(copy);
    ++staged;
  }
  std::vector<Tensor> acquire(int slot) override {
    std::lock_guard<std::mutex> lock(m);
    held[static_cast<size_t>(slot)] = 1;
    int n = 0;
    for (int h : held) n += h;
    maxHeld = std::max(maxHeld, n);
    return buffers[static_cast<size_t>(slot)];  // the slot's own tensors, as on the GPU
  }
  void release(int slot) override {
    std::lock_guard<std::mutex> lock(m);
    held[static_cast<size_t>(slot)] = 0;
  }
  void drain() override {
    std::lock_guard<std::mutex> lock(m);
    ++drains;
    std::fill(held.begin(), held.end(), 0);
  }
};
}  // namespace

TEST_CASE("DataLoader with a copier: the synchronous path's batches, no slot overwritten while handed out") {
  for (int prefetch : {1, 2, 3}) {
    INFO("prefetch ", prefetch);
    auto copier = std::make_shared<CheckingCopier>();
    nn::DataLoader sync(numbers(50), {.batchSize = 8, .shuffle = true, .seed = 5, .prefetch = 0});
    nn::DataLoader async(numbers(50),
                         {.batchSize = 8, .shuffle = true, .seed = 5, .prefetch = prefetch, .copier = copier});
    CHECK(copier->reserves == 1);
    CHECK(copier->slots == prefetch + 1);
    for (int64_t epoch : {0, 1}) {
      sync.setEpoch(epoch);
      async.setEpoch(epoch);
      std::vector<Tensor> a, s;
      while (sync.next(s)) {
        REQUIRE(async.next(a));
        // the loader's thread runs ahead as far as it may; the batch handed out stays intact
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        CHECK(a[1].to_vector<double>() == s[1].to_vector<double>());
        CHECK(max_abs_diff(a[0], s[0]) == 0);
      }
      CHECK_FALSE(async.next(a));
    }
    CHECK(copier->violations == 0);
    CHECK(copier->maxHeld == 1);
    CHECK(copier->staged >= 2 * 7);
    CHECK(copier->drains >= 2);  // at each setEpoch: the last batch is no longer the caller's
  }
}

TEST_CASE("DataLoader with a copier: many small batches, resumed mid-epoch, a dataset's error") {
  auto copier = std::make_shared<CheckingCopier>();
  nn::DataLoader plain(numbers(600), {.batchSize = 1, .shuffle = true, .seed = 8, .prefetch = 0});
  nn::DataLoader async(numbers(600), {.batchSize = 1, .shuffle = true, .seed = 8, .prefetch = 3, .copier = copier});
  const auto want = epoch_labels(plain);
  CHECK(epoch_labels(async) == want);
  CHECK(copier->violations == 0);
  async.setEpoch(0);
  std::vector<Tensor> b;
  for (int i = 0; i < 250; ++i) REQUIRE(async.next(b));
  auto other = std::make_shared<CheckingCopier>();  // one loader per copier
  nn::DataLoader resumed(numbers(600), {.batchSize = 1, .shuffle = true, .seed = 8, .prefetch = 2, .copier = other});
  resumed.loadStateDict(async.stateDict());
  const auto rest = epoch_labels(resumed);
  CHECK(rest == std::vector<std::vector<int64_t>>(want.begin() + 250, want.end()));
  CHECK(copier->violations == 0);
  CHECK(other->violations == 0);

  struct Broken : nn::Dataset {
    int64_t size() const override { return 6; }
    std::vector<Tensor> batch(const std::vector<int64_t>& i) const override {
      if (i[0] >= 4) throw Error("broken example");
      return {zeros({static_cast<int64_t>(i.size()), 2}), zeros({static_cast<int64_t>(i.size())}, DType::Int64)};
    }
  };
  nn::DataLoader broken(std::make_shared<Broken>(),
                        {.batchSize = 2, .prefetch = 2, .copier = std::make_shared<CheckingCopier>()});
  CHECK(broken.next(b));
  CHECK(broken.next(b));
  CHECK_THROWS_WITH_AS(broken.next(b), "broken example", Error);
}

namespace {
// Whether f() returns within `seconds`; a call that hangs is left behind on a detached thread
// (with what it uses: `keep`), so that the test fails instead of waiting forever.
bool finishes_within(double seconds, std::function<void()> f, std::shared_ptr<void> keep) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  auto error = std::make_shared<std::exception_ptr>();
  std::thread([f = std::move(f), done, error, keep] {
    try {
      f();
    } catch (...) {
      *error = std::current_exception();
    }
    done->store(true);
  }).detach();
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done->load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (done->load() && *error) std::rethrow_exception(*error);
  return done->load();
}

// 0..n-1 in order, but epoch `bad` throws (a distributed sampler's collective failing, say).
struct ThrowingSampler : nn::Sampler {
  int64_t n, bad;
  ThrowingSampler(int64_t n, int64_t bad) : n(n), bad(bad) {}
  std::vector<int64_t> indices(int64_t epoch) const override {
    if (epoch == bad) throw Error("sampler failed");
    std::vector<int64_t> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = i;
    return out;
  }
};
}  // namespace

TEST_CASE("DataLoader: a sampler that throws in setEpoch leaves the loader as it was, next() does not hang") {
  for (int prefetch : {0, 2}) {
    INFO("prefetch ", prefetch);
    auto l =
        std::make_shared<nn::DataLoader>(numbers(10), nn::DataLoader::Options{.batchSize = 4, .prefetch = prefetch},
                                         std::make_shared<ThrowingSampler>(10, 1));
    std::vector<Tensor> b;
    REQUIRE(l->next(b));
    CHECK_THROWS_WITH_AS(l->setEpoch(1), "sampler failed", Error);
    CHECK(l->epoch() == 0);
    CHECK(l->position() == 1);
    std::vector<std::vector<int64_t>> rest;
    REQUIRE(finishes_within(
        10, [&] { rest = epoch_labels(*l); }, l));
    CHECK(rest == std::vector<std::vector<int64_t>>{{4, 5, 6, 7}, {8, 9}});  // the epoch goes on
    CHECK_THROWS_WITH_AS(l->loadStateDict({{"seed", 0}, {"epoch", 1}, {"position", 0}}), "sampler failed", Error);
    l->setEpoch(2);  // and the loader goes on
    CHECK(epoch_labels(*l).size() == 3);
  }
}

TEST_CASE("DataLoader: what fails after the old epoch stopped is rethrown by next(), not waited for") {
  // no example in epoch 0, so the copier reserves at setEpoch(1), and fails there
  struct EmptyFirst : nn::Sampler {
    std::vector<int64_t> indices(int64_t epoch) const override {
      return epoch == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{0, 1, 2};
    }
  };
  struct FailingCopier : CheckingCopier {
    void reserve(int, const std::vector<Tensor>&, int64_t) override { throw Error("no pinned memory"); }
  };
  auto l = std::make_shared<nn::DataLoader>(
      numbers(3), nn::DataLoader::Options{.batchSize = 2, .prefetch = 2, .copier = std::make_shared<FailingCopier>()},
      std::make_shared<EmptyFirst>());
  CHECK_THROWS_WITH_AS(l->setEpoch(1), "no pinned memory", Error);
  std::vector<Tensor> b;
  bool threw = false;
  REQUIRE(finishes_within(
      10,
      [&] {
        try {
          l->next(b);
        } catch (const Error& e) {
          threw = std::string(e.what()) == "no pinned memory";
        }
      },
      l));
  CHECK(threw);
}

TEST_CASE("DataLoader: a batch size of INT64_MAX is one batch of the whole epoch (PyTorch's), none with dropLast") {
  for (int prefetch : {0, 2}) {
    INFO("prefetch ", prefetch);
    nn::DataLoader l(numbers(10), {.batchSize = INT64_MAX, .prefetch = prefetch});
    CHECK(l.batchesPerEpoch() == 1);
    CHECK(epoch_labels(l) == std::vector<std::vector<int64_t>>{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}});
    nn::DataLoader d(numbers(10), {.batchSize = INT64_MAX, .dropLast = true, .prefetch = prefetch});
    CHECK(d.batchesPerEpoch() == 0);
    std::vector<Tensor> b;
    CHECK_FALSE(d.next(b));
    nn::DataLoader near(numbers(10), {.batchSize = INT64_MAX - 1, .prefetch = prefetch});
    CHECK(near.batchesPerEpoch() == 1);
  }
  // a copier's buffers: the epoch's rows, not INT64_MAX of them
  struct Rows : CheckingCopier {
    int64_t reserved = 0;
    void reserve(int n, const std::vector<Tensor>& example, int64_t rows) override {
      reserved = rows;
      CheckingCopier::reserve(n, example, rows);
    }
  };
  auto copier = std::make_shared<Rows>();
  nn::DataLoader c(numbers(10), {.batchSize = INT64_MAX, .prefetch = 1, .copier = copier});
  CHECK(copier->reserved == 10);
  CHECK(epoch_labels(c).size() == 1);
}
