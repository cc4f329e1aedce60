// graph_plan.h: what the fixed-pattern graphs of ops/attention_graph.cpp and
// ops/layer_norm_graph.cpp share around their operations (internal): tensor descriptors, the
// search for the first engine configuration that builds an execution plan, and execution with
// exactly the graph's real tensors.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cudnn/core/BackendDescriptor.h"
#include "tensor/Tensor.h"

namespace cudnn::graph {

// A finalized tensor descriptor (16-byte aligned). `used` collects the uids of real tensors.
BackendDescriptor tensor_descriptor(int64_t uid, cudnnDataType_t type, const tensor::Shape& dims,
                                    const tensor::Shape& strides, bool is_virtual = false, bool by_value = false);

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

// Runs `plan` with the pointers of the graph's real tensors: the (uid, pointer) pairs whose uid
// is in `used` (cuDNN refuses a variant pack naming others: BAD_PARAM_NULL_POINTER, 9.14).
cudnnStatus_t execute(cudnnHandle_t h, cudnnBackendDescriptor_t plan, const std::set<int64_t>& used,
                      const std::vector<std::pair<int64_t, void*>>& ptrs, void* ws);

}  // namespace cudnn::graph
