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

}  // namespace cudnn
