// AsyncCopy.cpp: cuda_batch_copier (train/Data.h): the DataLoader's slots on a CUDA device,
// filled from page-locked host buffers on a side stream (Note [Asynchronous batches] in
// train/Data.h; Note [Side streams and the caching allocator] in tensor/CudaAsync.h).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include "tensor/Cuda.h"
#include "tensor/CudaAsync.h"
#include "train/Data.h"

namespace nn {

namespace {

using tensor::Error;
namespace cuda = tensor::cuda;

class CudaBatchCopier : public BatchCopier {
 public:
  explicit CudaBatchCopier(Device device) : device_(device), side_(device.index) {}

  ~CudaBatchCopier() override {
    try {
      side_.synchronize();  // no copy may still write a block that goes back to the cache
    } catch (const std::exception& e) {
      std::fprintf(stderr, "nn.DataLoader: %s\n", e.what());
    }
  }

  void reserve(int slots, const std::vector<Tensor>& example, int64_t rows) override {
    for (int i = 0; i < slots; ++i) {
      Slot s;
      for (const Tensor& t : example) {
        if (!t.is_cpu()) {
          throw Error("nn.DataLoader: expected a dataset whose batches are on the CPU for asynchronous copies to " +
                      device_.str() + " (prefetch > 0), got " + t.description() +
                      "; a dataset already on the GPU needs prefetch 0");
        }
        tensor::Shape shape = t.sizes();
        if (shape.empty())
          throw Error("nn.DataLoader: expected batches of tensors with a batch dimension, got a scalar");
        shape[0] = rows;
        s.device.push_back(tensor::empty(shape, t.dtype(), device_));
        s.pinned.emplace_back(s.device.back().nbytes());
      }
      s.copied = std::make_unique<cuda::Event>(device_.index);
      s.released = std::make_unique<cuda::Event>(device_.index);
      slots_.push_back(std::move(s));
    }
    // the new blocks' previous owners may still be in use on the device's stream
    cuda::Event allocated(device_.index);
    allocated.record(compute());
    allocated.block(side_.handle());
  }

  void stage(int slot, const std::vector<Tensor>& batch) override {
    Slot& s = slots_.at(static_cast<size_t>(slot));
    if (batch.size() != s.device.size()) {
      throw Error("nn.DataLoader: expected batches of " + std::to_string(s.device.size()) +
                  " tensors (as the first), got " + std::to_string(batch.size()));
    }
    s.copied->synchronize();            // the pinned buffers' previous copy has completed
    s.released->block(side_.handle());  // the step that read the slot's previous batch is done with it
    for (size_t k = 0; k < batch.size(); ++k) {
      const Tensor& slot_tensor = s.device[k];
      const Tensor b = batch[k].contiguous();
      tensor::Shape expected = slot_tensor.sizes();
      tensor::Shape got = b.sizes();
      const bool fits = b.dtype() == slot_tensor.dtype() && got.size() == expected.size() && !got.empty() &&
                        got[0] <= expected[0] && std::equal(got.begin() + 1, got.end(), expected.begin() + 1);
      if (!fits) {
        throw Error("nn.DataLoader: expected every batch shaped as the first but for up to " +
                    std::to_string(expected[0]) + " rows (" + slot_tensor.description() + "), got " + b.description() +
                    " at position " + std::to_string(k));
      }
      std::memcpy(s.pinned[k].data(), b.raw_data(), b.nbytes());
      cuda::copy_async(slot_tensor.raw_data(), true, s.pinned[k].data(), false, b.nbytes(), side_.handle(),
                       device_.index);
    }
    s.rows = batch.empty() ? 0 : batch[0].size(0);
    s.copied->record(side_.handle());
  }

  std::vector<Tensor> acquire(int slot) override {
    Slot& s = slots_.at(static_cast<size_t>(slot));
    s.copied->block(compute());
    std::vector<Tensor> out;
    for (const Tensor& t : s.device) out.push_back(s.rows == t.size(0) ? t : t.narrow(0, 0, s.rows));
    return out;
  }

  void release(int slot) override { slots_.at(static_cast<size_t>(slot)).released->record(compute()); }

  void drain() override {
    side_.synchronize();
    cuda::Event now(device_.index);
    now.record(compute());
    now.block(side_.handle());
  }

 private:
  void* compute() const { return cuda::stream(device_.index); }

  struct Slot {
    std::vector<Tensor> device;  // batchSize rows each
    std::vector<cuda::PinnedBuffer> pinned;
    std::unique_ptr<cuda::Event> copied, released;
    int64_t rows = 0;  // of the batch staged last
  };
  Device device_;
  cuda::Stream side_;
  std::vector<Slot> slots_;
};

}  // namespace

std::shared_ptr<BatchCopier> cuda_batch_copier(Device device) {
  if (!device.is_cuda()) {
    throw Error("nn::cuda_batch_copier: expected a CUDA device, got " + device.str());
  }
  return std::make_shared<CudaBatchCopier>(device);
}

}  // namespace nn
