// BackendDescriptor.cpp
#include "cudnn/core/BackendDescriptor.h"

#include <string>
#include <utility>

#include "cudnn/core/Check.h"

namespace cudnn {

namespace {
void check(cudnnStatus_t st, const char* call, cudnnBackendAttributeName_t name) {
  if (st == CUDNN_STATUS_SUCCESS) return;
  const std::string what = std::string(call) + " (attribute " + std::to_string(static_cast<int>(name)) + ")";
  detail::throw_cudnn_error(st, what.c_str(), __FILE__, __LINE__);
}
}  // namespace

BackendDescriptor::BackendDescriptor(cudnnBackendDescriptorType_t type) {
  CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &desc_));
}

BackendDescriptor::~BackendDescriptor() {
  if (desc_) cudnnBackendDestroyDescriptor(desc_);  // a failure here cannot be reported
}

BackendDescriptor::BackendDescriptor(BackendDescriptor&& o) noexcept : desc_(std::exchange(o.desc_, nullptr)) {}

BackendDescriptor& BackendDescriptor::operator=(BackendDescriptor&& o) noexcept {
  std::swap(desc_, o.desc_);
  return *this;
}

void BackendDescriptor::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                            const void* values) {
  check(cudnnBackendSetAttribute(desc_, name, type, count, values), "cudnnBackendSetAttribute", name);
}

void BackendDescriptor::set_int64(cudnnBackendAttributeName_t name, int64_t v) { set(name, CUDNN_TYPE_INT64, 1, &v); }

void BackendDescriptor::set_int64s(cudnnBackendAttributeName_t name, const std::vector<int64_t>& v) {
  set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(v.size()), v.data());
}

void BackendDescriptor::set_data_type(cudnnBackendAttributeName_t name, cudnnDataType_t v) {
  set(name, CUDNN_TYPE_DATA_TYPE, 1, &v);
}

void BackendDescriptor::set_descriptor(cudnnBackendAttributeName_t name, const BackendDescriptor& d) {
  cudnnBackendDescriptor_t raw = d.get();
  set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
}

void BackendDescriptor::set_descriptors(cudnnBackendAttributeName_t name,
                                        const std::vector<cudnnBackendDescriptor_t>& ds) {
  set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(ds.size()), ds.data());
}

void BackendDescriptor::set_handle(cudnnBackendAttributeName_t name, cudnnHandle_t h) {
  set(name, CUDNN_TYPE_HANDLE, 1, &h);
}

cudnnStatus_t BackendDescriptor::try_finalize() { return cudnnBackendFinalize(desc_); }

void BackendDescriptor::finalize(const char* what) {
  const cudnnStatus_t st = cudnnBackendFinalize(desc_);
  if (st != CUDNN_STATUS_SUCCESS) {
    detail::throw_cudnn_error(st, (std::string("cudnnBackendFinalize(") + what + ")").c_str(), __FILE__, __LINE__);
  }
}

int64_t BackendDescriptor::get(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t max,
                               void* out) const {
  int64_t got = 0;
  check(cudnnBackendGetAttribute(desc_, name, type, max, &got, out), "cudnnBackendGetAttribute", name);
  return got;
}

int64_t BackendDescriptor::get_int64(cudnnBackendAttributeName_t name) const {
  int64_t v = 0;
  get(name, CUDNN_TYPE_INT64, 1, &v);
  return v;
}

int64_t BackendDescriptor::count(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type) const {
  return get(name, type, 0, nullptr);
}

HeuristicResults heuristic_configs(cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode, std::string& failed) {
  HeuristicResults r;
  BackendDescriptor heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
  heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (const cudnnStatus_t st = heur.try_finalize(); st != CUDNN_STATUS_SUCCESS) {
    failed += std::string(failed.empty() ? "" : "; ") + "heuristics mode " + std::to_string(static_cast<int>(mode)) +
              ": " + cudnnGetErrorString(st);
    return r;
  }
  const int64_t n = heur.count(CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR);
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < n; ++i) {
    r.configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(r.configs.back().get());
  }
  const int64_t got = n ? heur.get(CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, raw.data()) : 0;
  r.configs.erase(r.configs.begin() + got, r.configs.end());  // cuDNN may fill fewer than it counted
  r.heuristics.emplace(std::move(heur));
  return r;
}

}  // namespace cudnn
