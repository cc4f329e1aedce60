// graph_plan.cpp: see graph_plan.h.
#include "cudnn/ops/graph_plan.h"

#include <atomic>
#include <cstring>

namespace cudnn::graph {

namespace {
std::atomic<size_t> g_packs_built{0};
}  // namespace

size_t variant_packs_built() { return g_packs_built.load(); }

BackendDescriptor tensor_descriptor(int64_t uid, cudnnDataType_t type, const tensor::Shape& dims,
                                    const tensor::Shape& strides, bool is_virtual, bool by_value) {
  BackendDescriptor d(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  d.set_data_type(CUDNN_ATTR_TENSOR_DATA_TYPE, type);
  d.set_int64s(CUDNN_ATTR_TENSOR_DIMENSIONS, dims);
  d.set_int64s(CUDNN_ATTR_TENSOR_STRIDES, strides);
  d.set_int64(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid);
  d.set_int64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 16);
  const bool yes = true;
  if (is_virtual) d.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes);
  if (by_value) d.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes);
  d.finalize("tensor");
  return d;
}

cudnnBackendDescriptor_t operation_graph(const std::vector<cudnnBackendDescriptor_t>& ops, cudnnHandle_t h,
                                         const char* what, std::deque<BackendDescriptor>& keep, std::string& why) {
  BackendDescriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph.set_descriptors(CUDNN_ATTR_OPERATIONGRAPH_OPS, ops);
  graph.set_handle(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, h);
  if (const cudnnStatus_t st = graph.try_finalize(); st != CUDNN_STATUS_SUCCESS) {
    why = std::string("cuDNN builds no ") + what + " graph (" + cudnnGetErrorString(st) + ")";
    return nullptr;
  }
  keep.push_back(std::move(graph));
  return keep.back().get();
}

bool first_plan(cudnnBackendDescriptor_t graph, cudnnHandle_t h, std::deque<BackendDescriptor>& keep, PlanInfo& info,
                std::string& tried) {
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    HeuristicResults ranked = heuristic_configs(graph, mode, tried);
    std::vector<BackendDescriptor>& configs = ranked.configs;
    for (BackendDescriptor& config : configs) {
      BackendDescriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      plan.set_handle(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, h);
      plan.set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
      const cudnnStatus_t st = plan.try_finalize();
      if (st != CUDNN_STATUS_SUCCESS) {
        tried += std::string(tried.empty() ? "" : "; ") + "plan: " + cudnnGetErrorString(st);
        continue;
      }
      BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
      cudnnBackendDescriptor_t engine_raw = engine.get();
      config.get(CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &engine_raw);
      info.engine = engine.get_int64(CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
      info.workspace = static_cast<size_t>(plan.get_int64(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE));
      keep.push_back(std::move(config));
      keep.push_back(std::move(*ranked.heuristics));
      keep.push_back(std::move(plan));
      return true;
    }
  }
  return false;
}

cudnnStatus_t VariantPackCache::execute(cudnnHandle_t h, cudnnBackendDescriptor_t plan, const Tensor* tensors, int n,
                                        const Scalar* scalars, int m, void* ws) {
  if (n < 0 || n > kMaxTensors || m < 0 || m > kMaxScalars) {
    throw tensor::Error("cudnn::graph::VariantPackCache: expected at most " + std::to_string(kMaxTensors) +
                        " tensors and " + std::to_string(kMaxScalars) + " scalars, got " + std::to_string(n) + " and " +
                        std::to_string(m));
  }
  auto matches = [&](const Entry& e) {
    if (!e.pack || e.n != n || e.m != m || e.ptrs[n] != ws) return false;
    for (int i = 0; i < n; ++i) {
      if (e.uids[i] != tensors[i].uid || e.ptrs[i] != tensors[i].ptr) return false;
    }
    for (int i = 0; i < m; ++i) {
      // bitwise: a NaN scale matches itself, 0.0 and -0.0 do not match
      if (e.uids[n + i] != scalars[i].uid || std::memcmp(&e.values[i], &scalars[i].value, sizeof(float)) != 0) {
        return false;
      }
    }
    return true;
  };
  Entry* entry = &entries_[0];
  bool hit = false;
  for (Entry& e : entries_) {
    if (matches(e)) {
      entry = &e;
      hit = true;
      break;
    }
    if (e.used < entry->used) entry = &e;  // the least recently used, or an empty one
  }
  if (!hit) {
    entry->pack.reset();
    entry->n = n, entry->m = m;
    std::array<void*, kMaxTensors + kMaxScalars> data{};
    for (int i = 0; i < n; ++i) {
      entry->uids[i] = tensors[i].uid;
      entry->ptrs[i] = data[i] = tensors[i].ptr;
    }
    entry->ptrs[n] = ws;
    for (int i = 0; i < m; ++i) {
      entry->uids[n + i] = scalars[i].uid;
      entry->values[i] = scalars[i].value;
      data[n + i] = &entry->values[i];  // the entry's own copy: stable while the pack lives
    }
    BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n + m, entry->uids.data());
    pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n + m, data.data());
    pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &entry->ptrs[n]);
    if (const cudnnStatus_t st = pack.try_finalize(); st != CUDNN_STATUS_SUCCESS) {
      entry->n = -1;
      return st;
    }
    entry->pack.emplace(std::move(pack));
    ++g_packs_built;
  }
  entry->used = ++clock_;
  return cudnnBackendExecute(h, plan, entry->pack->get());
}

cudnnStatus_t execute(cudnnHandle_t h, cudnnBackendDescriptor_t plan, const std::set<int64_t>& used,
                      const std::vector<std::pair<int64_t, void*>>& ptrs,
                      const std::vector<VariantPackCache::Scalar>& scalars, void* ws, VariantPackCache& packs) {
  std::array<VariantPackCache::Tensor, VariantPackCache::kMaxTensors> tensors{};
  std::array<VariantPackCache::Scalar, VariantPackCache::kMaxScalars> values{};
  int n = 0, m = 0;
  for (const auto& [uid, p] : ptrs) {
    if (!used.count(uid)) continue;
    if (n == VariantPackCache::kMaxTensors) return CUDNN_STATUS_BAD_PARAM;
    tensors[n++] = {uid, p};
  }
  for (const VariantPackCache::Scalar& v : scalars) {
    if (!used.count(v.uid)) continue;
    if (m == VariantPackCache::kMaxScalars) return CUDNN_STATUS_BAD_PARAM;
    values[m++] = v;
  }
  return packs.execute(h, plan, tensors.data(), n, values.data(), m, ws);
}

}  // namespace cudnn::graph
