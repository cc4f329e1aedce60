// CudaAsync.cpp: the CUDA half of tensor/CudaAsync.h. Every status is checked; destructors
// report on stderr instead of throwing.
#include "tensor/CudaAsync.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <utility>

#include "tensor/Cuda.h"
#include "tensor/cuda/CudaCheck.h"

namespace tensor::cuda {

namespace {
// Destructors: a failure (the runtime unloading at exit, a sticky fault) is reported, never thrown.
void report(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  if (status != cudaErrorCudartUnloading) {
    std::fprintf(stderr, "%s failed: %s (%s)\n", what, cudaGetErrorName(status), cudaGetErrorString(status));
  }
}

int resolve(int index, const char* op) {
  const int count = device_count();
  TENSOR_CHECK(count > 0, op, ": no CUDA device is visible");
  if (index == -1) index = current_device();
  TENSOR_CHECK(index >= 0 && index < count, op, ": invalid device cuda:", index, " (", count, " device",
               count == 1 ? "" : "s", " visible)");
  return index;
}
}  // namespace

PinnedBuffer::PinnedBuffer(size_t nbytes) : size_(nbytes) {
  if (nbytes == 0) return;
  const cudaError_t status = cudaHostAlloc(&data_, nbytes, cudaHostAllocDefault);
  if (status != cudaSuccess) {
    cudaGetLastError();
    data_ = nullptr;
    throw Error(::tensor::detail::concat("tensor::cuda::PinnedBuffer: cannot allocate ", nbytes,
                                         " bytes of page-locked host memory: ", cudaGetErrorName(status), " (",
                                         cudaGetErrorString(status), ")"));
  }
}

PinnedBuffer::~PinnedBuffer() {
  if (data_) report(cudaFreeHost(data_), "tensor::cuda::PinnedBuffer: cudaFreeHost");
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) report(cudaFreeHost(data_), "tensor::cuda::PinnedBuffer: cudaFreeHost");
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Stream::Stream(int index) : device_(resolve(index, "tensor::cuda::Stream")) {
  DeviceGuard guard(device_);
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  stream_ = s;
}

Stream::~Stream() {
  if (!stream_) return;
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) cudaGetLastError();
  report(cudaSetDevice(device_), "tensor::cuda::Stream: cudaSetDevice");
  report(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "tensor::cuda::Stream: cudaStreamSynchronize");
  report(cudaStreamDestroy(static_cast<cudaStream_t>(stream_)), "tensor::cuda::Stream: cudaStreamDestroy");
  if (previous >= 0 && previous != device_) report(cudaSetDevice(previous), "tensor::cuda::Stream: cudaSetDevice");
}

void Stream::synchronize() const {
  DeviceGuard guard(device_);
  CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)));
}

Event::Event(int index) : device_(resolve(index, "tensor::cuda::Event")) {
  DeviceGuard guard(device_);
  cudaEvent_t e = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  event_ = e;
}

Event::~Event() {
  if (event_) report(cudaEventDestroy(static_cast<cudaEvent_t>(event_)), "tensor::cuda::Event: cudaEventDestroy");
}

void Event::record(void* stream) {
  DeviceGuard guard(device_);
  CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event_), static_cast<cudaStream_t>(stream)));
  recorded_ = true;
}

void Event::block(void* stream) const {
  if (!recorded_) return;
  DeviceGuard guard(device_);
  CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event_), 0));
}

void Event::synchronize() const {
  if (!recorded_) return;
  CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)));
}

void copy_async(void* dst, bool dst_on_device, const void* src, bool src_on_device, size_t nbytes, void* stream,
                int device) {
  if (nbytes == 0) return;
  device = resolve(device, "tensor::cuda::copy_async");
  TENSOR_CHECK(dst && src && stream, "tensor::cuda::copy_async: null pointer or stream for ", nbytes, " bytes");
  const cudaMemcpyKind kind = dst_on_device ? (src_on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                                            : (src_on_device ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  DeviceGuard guard(device);
  CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, kind, static_cast<cudaStream_t>(stream)));
}

}  // namespace tensor::cuda
