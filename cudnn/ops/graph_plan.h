// graph_plan.h: the one graph layer (internal) under every cuDNN operation graph of cudnn/ops/
// (the convolutions' conv_graph.cpp, attention_graph.cpp, layer_norm.cpp, and what comes next):
// tensor descriptors, the search for the first engine configuration that builds an execution
// plan, variant packs remembered by their pointers, and the one plan-cache type, PlanCache,
// whose every instance is bounded by the flag conv.cache_limit (Note [One plan cache] in
// conv_search.cpp).
#pragma once

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cudnn/core/BackendDescriptor.h"
#include "cudnn/core/Config.h"
#include "tensor/LruCache.h"
#include "tensor/Tensor.h"

namespace cudnn::graph {

// A finalized tensor descriptor (16-byte aligned). `used` collects the uids of real tensors.
BackendDescriptor tensor_descriptor(int64_t uid, cudnnDataType_t type, const tensor::Shape& dims,
                                    const tensor::Shape& strides, bool is_virtual = false, bool by_value = false);

// The operation graph of `ops` on handle h, finalized and kept last in `keep`; nullptr where
// cuDNN refuses it, with `why` = "cuDNN builds no <what> graph (<status>)".
cudnnBackendDescriptor_t operation_graph(const std::vector<cudnnBackendDescriptor_t>& ops, cudnnHandle_t h,
                                         const char* what, std::deque<BackendDescriptor>& keep, std::string& why);

// The execution plan of the finalized operation graph `graph`: the first engine configuration,
// heuristics mode A then FALLBACK, whose plan finalizes. The plan goes last into `keep` (its
// configuration and heuristics before it, kept alive with it); false where none does, with
// what was tried appended to `tried`.
struct PlanInfo {
  int64_t engine = -1;  // the engine's global index
  size_t workspace = 0;
};
bool first_plan(cudnnBackendDescriptor_t graph, cudnnHandle_t h, std::deque<BackendDescriptor>& keep, PlanInfo& info,
                std::string& tried);

// Variant packs remembered by their pointers: steady-state calls with the same buffers (the
// caching allocator hands them back) skip building and finalizing one. A few sets, not one: a
// first layer fed by the DataLoader sees its input cycle through the loader's slots (train/Data.h,
// Note [Asynchronous batches]), which with one entry rebuilt the pack on every call. By-value
// scalars (attention's scale, layer norm's epsilon) are held in the entry itself, and their
// values are part of its match, so a pack never reads a value another call left behind however
// cuDNN reads them. Not thread-safe: its owner serialises run() (a ConvPlan pass's cache is its
// own; a cached attention or layer norm plan holds one behind a mutex).
class VariantPackCache {
 public:
  static constexpr int kMaxTensors = 20, kMaxScalars = 2;
  // A real tensor (uid, device pointer) or a by-value float scalar (uid, value).
  struct Tensor {
    int64_t uid;
    void* ptr;
  };
  struct Scalar {
    int64_t uid;
    float value;
  };
  // Executes `plan` with these tensors, scalars and workspace (at most kMaxTensors and
  // kMaxScalars; throws beyond, naming them).
  cudnnStatus_t execute(cudnnHandle_t h, cudnnBackendDescriptor_t plan, const Tensor* tensors, int n,
                        const Scalar* scalars, int m, void* ws);

 private:
  struct Entry {
    std::optional<BackendDescriptor> pack;
    int n = -1, m = 0;
    std::array<int64_t, kMaxTensors + kMaxScalars> uids{};
    std::array<void*, kMaxTensors + 1> ptrs{};  // the tensors', then the workspace
    std::array<float, kMaxScalars> values{};    // the scalars, where the pack points
    uint64_t used = 0;                          // the cache's clock at its last use
  };
  std::array<Entry, 4> entries_;
  uint64_t clock_ = 0;
};

// Variant packs finalized by every VariantPackCache of the process so far: steady-state calls
// add none (tests).
size_t variant_packs_built();

// Runs `plan` with the pointers of the graph's real tensors: the (uid, pointer) pairs whose uid
// is in `used` (cuDNN refuses a variant pack naming others: BAD_PARAM_NULL_POINTER, 9.14), the
// by-value scalars `scalars` likewise, through `packs`.
cudnnStatus_t execute(cudnnHandle_t h, cudnnBackendDescriptor_t plan, const std::set<int64_t>& used,
                      const std::vector<std::pair<int64_t, void*>>& ptrs,
                      const std::vector<VariantPackCache::Scalar>& scalars, void* ws, VariantPackCache& packs);

// FNV-1a over the bytes of a key without padding (ConvKey, the RNN, attention and layer norm
// plans' keys: each static_asserts its size).
struct BytesHash {
  template <class K>
  size_t operator()(const K& k) const {
    static_assert(std::is_trivially_copyable_v<K> && std::has_unique_object_representations_v<K>,
                  "a plan key is compared and hashed as bytes: no padding, no floating point");
    const auto* p = reinterpret_cast<const unsigned char*>(&k);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof k; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

// Equality of such keys, as bytes.
struct BytesEqual {
  template <class K>
  bool operator()(const K& a, const K& b) const {
    static_assert(std::has_unique_object_representations_v<K>);
    return std::memcmp(&a, &b, sizeof(K)) == 0;
  }
};

// The one plan-cache type: plans keyed by a fixed-layout key, bounded by the flag
// conv.cache_limit (least recently used entries go first), thread-safe; find hands back a copy
// (a shared pointer, for plans). See Note [One plan cache] in conv_search.cpp.
template <class Key, class Value>
class PlanCache {
 public:
  std::optional<Value> find(const Key& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    lru_.set_capacity(config().conv_cache_limit);
    const Value* v = lru_.find(key);
    return v ? std::optional<Value>(*v) : std::nullopt;
  }
  void put(const Key& key, Value value) {
    std::lock_guard<std::mutex> lock(mutex_);
    lru_.set_capacity(config().conv_cache_limit);
    lru_.put(key, std::move(value));
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    lru_.clear();
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return lru_.size();
  }

 private:
  std::mutex mutex_;
  tensor::LruCache<Key, Value, BytesHash, BytesEqual> lru_;
};

}  // namespace cudnn::graph
