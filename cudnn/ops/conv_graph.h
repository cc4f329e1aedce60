// conv_graph.h: one convolution pass as a cuDNN graph-API operation graph, and the engine
// configurations cuDNN offers for it (internal to ops/conv.cpp: ConvPlan lists them as
// candidates ahead of the legacy algorithms, see Note [Candidates] there).
//   conv_engines(spec)   builds the graph, asks heuristics mode A then the fallback list,
//                        and returns one ConvEngine per engine, best first;
//   ConvEngine::build    finalizes its execution plan (once; cuDNN may refuse);
//   ConvEngine::run      executes it on three device pointers (four with a bias) and a workspace.
// A forward graph may carry a fused epilogue: + bias (broadcast over all but the channels),
// then an activation, through virtual intermediates (cudnn::fuse, Note [Fusion] in conv_search.cpp).
// Tensors are described by their real strides, so a plan is only reused for the same shapes,
// strides, dtypes, geometry and handle (ConvPlan's key holds all of them). The operation
// computes out = op(...) (alpha 1, beta 0: engines refuse other factors at execution with
// BAD_PARAM, measured on cuDNN 9.14); ConvPlan blends other factors in itself.
#pragma once

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cudnn/core/BackendDescriptor.h"
#include "cudnn/core/Config.h"
#include "cudnn/core/Descriptors.h"
#include "cudnn/ops/graph_plan.h"

namespace cudnn::graph {

// Everything the graph of one pass depends on. x/w/y are the convolution's input, filter
// and output (dx/dw/dy in the backward passes), each with its sizes and strides.
struct ConvGraphSpec {
  ConvPass pass = ConvPass::Forward;
  cudnnDataType_t data = CUDNN_DATA_FLOAT, compute = CUDNN_DATA_FLOAT;
  Shape x_sizes, x_strides, w_sizes, w_strides, y_sizes, y_strides;
  ConvSpec geometry;
  bool bias = false;                               // forward only: y = conv + bias[1 x K x 1...]
  std::optional<cudnnPointwiseMode_t> activation;  // forward only: then y = act(...)
};

// The uids the graph gives x, w, y and the bias; run() takes their pointers in this order.
// The virtual intermediates of a fused epilogue take kVirtual and up.
enum Uid : int64_t { kX = 1, kW = 2, kY = 3, kB = 4, kVirtual = 10 };

struct GraphObjects;  // the graph and heuristics descriptors the engine configs refer to

class ConvEngine {
 public:
  ConvEngine(std::shared_ptr<GraphObjects> graph, BackendDescriptor config, int64_t global_index, int config_rank,
             std::vector<cudnnBackendNumericalNote_t> notes, bool runtime_compiled);

  int64_t global_index() const { return global_index_; }
  bool has_note(cudnnBackendNumericalNote_t n) const;
  bool runtime_compiled() const { return runtime_compiled_; }
  std::string name() const;  // "graph engine 12 [tensor_core]", "graph engine 12 (config 2) [...]"

  // Finalizes the execution plan on first call (thread-safe); false with `why` when cuDNN
  // cannot. Later calls return the first answer.
  bool build(cudnnHandle_t h, std::string& why);
  size_t workspace() const { return workspace_; }  // after a successful build
  // Runs the built plan: x, w, y (and the bias of a fused graph) as in Uid, and a workspace
  // of workspace() bytes.
  cudnnStatus_t run(cudnnHandle_t h, void* x, void* w, void* y, void* ws, VariantPackCache& cache,
                    void* bias = nullptr) const;

 private:
  std::shared_ptr<GraphObjects> graph_;
  BackendDescriptor config_;
  int64_t global_index_;
  int config_rank_;  // 0: the engine's best-ranked configuration
  std::vector<cudnnBackendNumericalNote_t> notes_;
  bool runtime_compiled_;
  std::mutex mutex_;
  bool built_ = false;
  std::string failed_;  // why the plan could not be built, once tried
  std::optional<BackendDescriptor> plan_;
  size_t workspace_ = 0;
};

// The engine configurations cuDNN's heuristics rank for the pass (mode A, or B then A where
// `mode_b`, then the fallback list), at most `max` of them and the best-ranked `per_engine` of each engine (an engine's
// configurations differ in knobs such as tile sizes: Note [Engine configurations] in
// conv_search.cpp). Engines that convert inputs to a lower precision are left out. Empty, with
// `why`, when cuDNN builds no graph.
std::vector<std::shared_ptr<ConvEngine>> conv_engines(const ConvGraphSpec& spec, cudnnHandle_t h, size_t max,
                                                      int per_engine, std::string& why, bool mode_b = false);

}  // namespace cudnn::graph
