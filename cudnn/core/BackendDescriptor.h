// BackendDescriptor.h: one cuDNN backend-API (graph API, cudnn_graph.h) descriptor, owned.
// The backend API builds everything from untyped descriptors: create, set attributes,
// finalize, then read attributes back. This wrapper keeps that shape (no framework on top)
// and adds ownership, typed setters and getters, and errors that name the attribute.
// Convolution graphs are built from these in cudnn/ops/conv_graph.cpp.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cudnn {

class BackendDescriptor {
 public:
  // Creates a descriptor of `type`; throws tensor::Error when cuDNN refuses.
  explicit BackendDescriptor(cudnnBackendDescriptorType_t type);
  ~BackendDescriptor();  // never throws
  BackendDescriptor(BackendDescriptor&& o) noexcept;
  BackendDescriptor& operator=(BackendDescriptor&& o) noexcept;
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return desc_; }

  // Setters throw naming the attribute: a refused attribute is a programming error here.
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* values);
  void set_int64(cudnnBackendAttributeName_t name, int64_t v);
  void set_int64s(cudnnBackendAttributeName_t name, const std::vector<int64_t>& v);
  void set_data_type(cudnnBackendAttributeName_t name, cudnnDataType_t v);
  void set_descriptor(cudnnBackendAttributeName_t name, const BackendDescriptor& d);
  void set_descriptors(cudnnBackendAttributeName_t name, const std::vector<cudnnBackendDescriptor_t>& ds);
  void set_handle(cudnnBackendAttributeName_t name, cudnnHandle_t h);

  // Finalize hands cuDNN's status back: NOT_SUPPORTED is an answer ("this engine cannot do
  // this graph"), not an error.
  cudnnStatus_t try_finalize();
  void finalize(const char* what);

  // Reads a scalar (count 1) or up to `max` values; returns how many cuDNN wrote.
  int64_t get_int64(cudnnBackendAttributeName_t name) const;
  int64_t get(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t max, void* out) const;
  // How many elements an array attribute holds (a get with room for none).
  int64_t count(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type) const;

 private:
  cudnnBackendDescriptor_t desc_ = nullptr;
};

// What cuDNN's heuristics rank for a finalized operation graph in one mode: the engine
// configurations, best first, and the heuristics descriptor they came from (kept alive with
// them). The graph searches of ops/conv_graph.cpp and ops/attention_graph.cpp share it.
struct HeuristicResults {
  std::optional<BackendDescriptor> heuristics;
  std::vector<BackendDescriptor> configs;
};
// Empty, with "heuristics mode N: <status>" appended to `failed` ("; "-separated), where the
// heuristics refuse the graph.
HeuristicResults heuristic_configs(cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode, std::string& failed);

}  // namespace cudnn
