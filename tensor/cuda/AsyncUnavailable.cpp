// AsyncUnavailable.cpp: tensor/CudaAsync.h for a build without CUDA: everything throws
// "built without CUDA"; destructors have nothing to free.
#include <string>

#include "tensor/CudaAsync.h"
#include "tensor/DType.h"

namespace tensor::cuda {

namespace {
[[noreturn]] void unavailable(const char* function) {
  throw Error(std::string(function) + ": cudnn-nn was built without CUDA");
}
}  // namespace

PinnedBuffer::PinnedBuffer(size_t) { unavailable("tensor::cuda::PinnedBuffer"); }
PinnedBuffer::~PinnedBuffer() = default;
PinnedBuffer::PinnedBuffer(PinnedBuffer&&) noexcept = default;
PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&&) noexcept = default;
Stream::Stream(int) { unavailable("tensor::cuda::Stream"); }
Stream::~Stream() = default;
void Stream::synchronize() const { unavailable("tensor::cuda::Stream::synchronize"); }
Event::Event(int) { unavailable("tensor::cuda::Event"); }
Event::~Event() = default;
void Event::record(void*) { unavailable("tensor::cuda::Event::record"); }
void Event::block(void*) const { unavailable("tensor::cuda::Event::block"); }
void Event::synchronize() const { unavailable("tensor::cuda::Event::synchronize"); }
void copy_async(void*, bool, const void*, bool, size_t, void*, int) { unavailable("tensor::cuda::copy_async"); }

}  // namespace tensor::cuda
