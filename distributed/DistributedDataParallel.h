// DistributedDataParallel.h: data-parallel training, one process per GPU or, on the CPU, one
// process per rank under mpirun (PyTorch's DDP). Wraps a network already on this rank's GPU
// (NCCL) or on the CPU (MPI; Note [CPU buckets] in the .cpp); at construction rank 0's parameters and buffers
// are broadcast to every rank. forward() is the network's; backward() runs the network's and
// averages the gradients over the ranks with NCCL all-reduces in buckets of about 25 MB, in
// reverse module order, on the group's own stream: each bucket is launched as soon as the
// last module owning one of its gradients has finished its backward (Module::setBackwardHook),
// so communication overlaps the rest of backward. backward() returns without waiting: the
// device's stream waits for the last all-reduce, so whatever is queued after it (the optimizer
// step, a copy to the host) sees the same averaged gradients on every rank, and the replicas
// stay identical. A lost rank or a stuck collective aborts the group within its timeout (its
// watchdog); the next forward() or backward() throws that error.
// Parameters may be row-major or channels-last (Module::to(MemoryFormat)), laid out alike on
// every rank: the constructor checks that (Note [Parameter layouts across ranks] in the .cpp).
// A container of the one network: printing shows it; save module(), not the wrapper.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "distributed/ProcessGroup.h"
#include "nn/Container.h"

namespace dist {

struct DistributedDataParallelOptions {
  size_t bucketBytes = 25u << 20;      // gradients per all-reduce (the last bucket may be smaller)
  size_t firstBucketBytes = 1u << 20;  // the first (the network's last layers): starts early
  bool broadcastBuffers = true;        // rank 0's buffers (running statistics) before each training forward
};

class DistributedDataParallel : public nn::Container {
 public:
  using Options = DistributedDataParallelOptions;

  // `group`: the default group (dist::init()) when nullptr.
  explicit DistributedDataParallel(nn::ModulePtr net, Options options = {},
                                   std::shared_ptr<ProcessGroup> group = nullptr);
  DistributedDataParallel(nn::ModulePtr net, std::shared_ptr<ProcessGroup> group)
      : DistributedDataParallel(std::move(net), Options{}, std::move(group)) {}
  ~DistributedDataParallel() override;

  nn::Module& module() const { return *modules.at(0); }
  ProcessGroup& group() const { return *group_; }

  const tensor::Tensor& updateOutput(const tensor::Tensor& input) override;
  const tensor::Tensor& updateGradInput(const tensor::Tensor& input, const tensor::Tensor& gradOutput) override;
  // Accumulates the network's gradients, then averages them over the ranks (no overlap on
  // this path: backward() is the fast one).
  void accGradParameters(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale = 1.0) override;
  static constexpr std::string_view kTypeName = "dist.DistributedDataParallel";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;

  // How many buckets the last backward launched from module hooks, before the network's
  // backward returned (the rest were launched at its end): the overlap, for tests.
  size_t bucketsLaunchedInBackward() const { return launchedInBackward_; }
  // The buckets in launch order, as parameter paths ("3.weight"): for tests and logging.
  std::vector<std::vector<std::string>> bucketLayout() const;

  // Splits parameters (in launch order: `bytes` and `dtypes` per parameter) into buckets:
  // consecutive runs of one dtype, the first up to firstBytes, the others up to capBytes, a
  // parameter larger than the cap alone in its bucket. Returns the parameter indices of each.
  static std::vector<std::vector<size_t>> assignBuckets(const std::vector<size_t>& bytes,
                                                        const std::vector<tensor::DType>& dtypes, size_t firstBytes,
                                                        size_t capBytes);

 protected:
  void backwardImpl(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale) override;

 private:
  struct Param {
    std::string name;
    tensor::Tensor grad;
    int64_t layout = 0;  // 0 row-major, 1 channels-last (Note [Parameter layouts across ranks])
    size_t bucket = 0;
    int64_t offset = 0;  // elements into the bucket's buffer
  };
  struct Bucket {
    std::vector<size_t> params;  // indices into params_
    tensor::Tensor buffer;       // flat, the bucket's dtype, on this rank's device
    size_t pending = 0;          // gradients not produced yet in this backward
    bool launched = false;
    void* ready = nullptr;  // cudaEvent_t on the compute stream
  };
  // Modules that own parameters, each with its own parameters' indices into params_.
  using Owners = std::vector<std::pair<nn::Module*, std::vector<size_t>>>;
  // The constructor's steps, in order.
  Owners collectParameters();
  void checkLayouts();
  void checkBuffers();
  void makeBuckets();
  void hookOwners(const Owners& owners);
  void beginBackward();
  void onModuleDone(nn::Module& m);
  void launchReady();
  void launch(Bucket& b);
  void finishBackward();
  void broadcastState(bool parameters);

  Options options_;
  std::shared_ptr<ProcessGroup> group_;
  std::vector<Param> params_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<nn::Module*, std::vector<size_t>>> owners_;  // module -> its params
  std::vector<nn::Module*> hooked_;
  size_t nextBucket_ = 0;
  size_t launchedInBackward_ = 0;
  tensor::Device device_;  // the network's: CUDA (NCCL buckets on streams) or CPU (MPI)
  bool inBackward_ = false;
};

}  // namespace dist
