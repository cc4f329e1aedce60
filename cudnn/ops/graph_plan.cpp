// graph_plan.cpp: see graph_plan.h.
#include "cudnn/ops/graph_plan.h"

namespace cudnn::graph {

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

cudnnStatus_t execute(cudnnHandle_t h, cudnnBackendDescriptor_t plan, const std::set<int64_t>& used,
                      const std::vector<std::pair<int64_t, void*>>& ptrs, void* ws) {
  std::vector<int64_t> uids;
  std::vector<void*> data;
  for (const auto& [uid, p] : ptrs) {
    if (!used.count(uid)) continue;
    uids.push_back(uid);
    data.push_back(p);
  }
  BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, static_cast<int64_t>(uids.size()), uids.data());
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(data.size()), data.data());
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
  if (const cudnnStatus_t st = pack.try_finalize(); st != CUDNN_STATUS_SUCCESS) return st;
  return cudnnBackendExecute(h, plan, pack.get());
}

}  // namespace cudnn::graph
