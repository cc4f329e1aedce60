// CudaAsync.h: page-locked host memory, side streams, events and copies that do not wait, for
// work that overlaps the device's own stream (the DataLoader's host-to-device copies,
// train/AsyncCopy.h). No CUDA header in sight; in a build without CUDA every constructor and
// function throws "built without CUDA" (tensor/cuda/AsyncUnavailable.cpp).
// Note [Side streams and the caching allocator]: the allocator hands a freed block to the next
// request at once because all work runs on the device's stream (Note [One stream per device]
// in Cuda.h). Work on a side stream is outside that rule, so its user orders it by events:
// before a side stream first writes a block it waits for the device stream (the block's
// previous owner may still be read there), and before such a block is freed the side stream's
// work on it is waited for. The device's side stream (Note [The device's side stream] in
// Cuda.h) keeps the same rule with a fork and a join.
#pragma once

#include <cstddef>

namespace tensor::cuda {

// Page-locked (pinned) host memory, from cudaHostAlloc: copies from it to a device can run
// asynchronously, at full bus speed. Freed by the destructor.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t nbytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

// A stream of its own on a device (non-blocking with respect to the legacy default stream).
// The destructor waits for its work, then destroys it.
class Stream {
 public:
  explicit Stream(int index = -1);  // -1: the current device
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void* handle() const { return stream_; }  // cudaStream_t, as void*
  int device() const { return device_; }
  void synchronize() const;

 private:
  void* stream_ = nullptr;
  int device_ = -1;
};

// A CUDA event without timing (the cheapest kind), for ordering streams.
class Event {
 public:
  explicit Event(int index = -1);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Marks the work enqueued on `stream` (a cudaStream_t) so far.
  void record(void* stream);
  // Work enqueued on `stream` from now on waits for the recorded work (no host wait). An event
  // never recorded is complete: waiting on it does nothing.
  void block(void* stream) const;
  void synchronize() const;  // the host waits for the recorded work
  bool recorded() const { return recorded_; }

 private:
  void* event_ = nullptr;
  int device_ = -1;
  bool recorded_ = false;
};

// Enqueues a copy of nbytes between host and device memory (or within devices) on `stream` of
// `device` and returns without waiting. A host side must be page-locked (PinnedBuffer) and
// stay untouched until the copy is complete (an event recorded after it).
void copy_async(void* dst, bool dst_on_device, const void* src, bool src_on_device, size_t nbytes, void* stream,
                int device);

}  // namespace tensor::cuda
