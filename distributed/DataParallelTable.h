// DataParallelTable.h: cunn's nn.DataParallelTable: one process drives several GPUs. The
// network is replicated on each GPU of `gpus` (the first holds the network itself); forward
// splits the batch along dimension 0 into one chunk per GPU (chunks of ceil(N / #gpus) rows),
// runs the replicas, and gathers their outputs on the first GPU; backward does the same with
// gradOutput, then sums the replicas' gradients with NCCL all-reduce, so the first replica's
// gradients are those of single-GPU training on the whole batch (up to float32 summation
// order). The next forward broadcasts the first replica's parameters and buffers to the
// others (after the optimizer stepped them), so the replicas stay identical.
// To printing, convert and model files it is a container of the original network: its one
// child (the first replica); saving saves that replica, with the GPUs in its config.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nn/Container.h"

struct ncclComm;  // nccl.h's communicator; no NCCL header here (Note [NCCL flags stay local])

namespace dist {

class DataParallelTable : public nn::Container {
 public:
  // net: cudnn twins (convert first) or nn modules; gpus: distinct visible device indices.
  DataParallelTable(nn::ModulePtr net, std::vector<int> gpus);
  ~DataParallelTable() override;

  const nn::Tensor& updateOutput(const nn::Tensor& input) override;
  const nn::Tensor& updateGradInput(const nn::Tensor& input, const nn::Tensor& gradOutput) override;
  void accGradParameters(const nn::Tensor& input, const nn::Tensor& gradOutput, double scale = 1.0) override;
  void zeroGradParameters() override;
  void train() override;
  void evaluate() override;
  // Replicas stay on their GPUs: only the first GPU (or where they are) is accepted.
  nn::Module& to(nn::Device device) override;
  nn::Module& to(nn::DType dtype) override;
  nn::Module& to(tensor::MemoryFormat format) override;  // every replica's

  // The name model files know it by (kept from its cudnn/ days).
  static constexpr std::string_view kTypeName = "cudnn.DataParallelTable";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;
  tensor::Json config() const override;  // {"gpus": [0, 1]}
  // Rebuilds it around children[0] on the listed GPUs that are visible; with fewer than one
  // visible, the network alone (a model trained on 8 GPUs loads on a laptop).
  static nn::ModulePtr fromConfig(const tensor::Json& config, std::vector<nn::ModulePtr> children);
  // Makes model files know "cudnn.DataParallelTable" (the constructor does it too).
  static void registerModelType();

  const std::vector<int>& gpus() const { return gpus_; }
  nn::Module& replica(size_t i) const { return *replicas_.at(i); }
  // Copies the first replica's parameters and buffers to the others now (forward does it
  // after each backward; call it after changing parameters otherwise, e.g. loading weights).
  void syncParameters();

 protected:
  void backwardImpl(const nn::Tensor& input, const nn::Tensor& gradOutput, double scale) override;

 private:
  struct Chunk {
    int64_t offset = 0, length = 0;
  };
  void replicate();      // (re)builds replicas_ 1.. from modules[0]
  // `convert` applied to every replica on its GPU; the next forward syncs them from the first
  nn::Module& convertReplicas(const std::function<void(nn::Module&)>& convert);
  void checkReplicas();  // rebuilds when modules[0] was replaced (convert)
  std::vector<Chunk> split(int64_t n) const;
  // Each chunk of `t` (CPU, or CUDA on the first GPU) on its GPU, NCCL moving the bytes.
  std::vector<nn::Tensor> scatter(const nn::Tensor& t, const std::vector<Chunk>& chunks, const char* what);
  // Rows from each GPU into one tensor on the first GPU.
  nn::Tensor gather(const std::vector<const nn::Tensor*>& parts, const std::vector<Chunk>& chunks, const char* what);
  void allReduceGradients();
  void runReplicas(const std::function<void(size_t)>& step, const std::vector<Chunk>& chunks);

  std::vector<int> gpus_;
  std::vector<nn::ModulePtr> replicas_;  // [0] is modules[0]
  std::vector<ncclComm*> comms_;
  std::vector<Chunk> chunks_;
  std::vector<nn::Tensor> inputs_, gradOutputs_;
  bool needSync_ = true;
};

}  // namespace dist
