// ShardedDataParallel.h: sharded data parallelism (DeepSpeed's ZeRO stages 1-3, PyTorch's
// FSDP): one process per GPU (NCCL) or per CPU rank under mpirun (MPI), as DistributedDataParallel,
// but the optimizer state (stage 1), the gradients (stage 2) and the parameters (stage 3) are
// divided among the ranks instead of repeated on each. The network's parameters are flattened,
// per unit (consecutive parameters of one block, by default a top-level child, and one dtype, up to
// bucketBytes), into flat buffers padded to a multiple of the world size and cut into equal
// shards; rank r owns shard r of every unit: its master weights (float32 for 16-bit parameters,
// else the parameters' dtype), its averaged gradient, and the optimizer state for them alone.
//   stage 1: full parameters and gradients on every rank; backward ends with a reduce-scatter
//            (average) of each unit's gradient into the owner's shard;
//   stage 2: + each block's gradients are reduce-scattered from its backward hook as soon as its
//            backward is done, and the full gradients are freed;
//   stage 3: + parameters are not kept whole: a block's are all-gathered from the shards just
//            before its forward and again before its backward, and freed after each.
// step() runs the optimizer (built by setOptimizer from the shard's pieces, one per parameter
// part this rank owns: nn::AdamW, nn::SGD, any nn::Optimizer, with one process's arithmetic),
// then (stages 1, 2) all-gathers the updated parameters. Shapes are row-major per parameter;
// at construction rank 0's parameters and buffers are broadcast, and the ranks' models are
// compared (Note [Sharded model agreement] in the .cpp).
// Gradient clipping by global norm (clipGradNorm), accumulation without communication
// (setNoSync), loss scaling (unscale / step(GradScaler&), one verdict for every rank), master
// shards of another dtype (mixed precision), and sharded checkpoints that load at any world
// size (saveCheckpoint / loadCheckpoint / readFullCheckpoint) complete it. On the GPU (NCCL)
// stage 2 and 3's collectives run on the group's communication stream, overlapped with the
// compute stream's work (Options::overlap; Note [Overlapped collectives] in the .cpp): each
// block's reduce-scatter, launched from its backward hook, beside the next block's backward,
// and at stage 3 the next block's all-gather (prefetched) beside this block's forward or
// backward; the group's watchdog follows them, and the host waits only where it reads a value
// (the clipping norm, the overflow verdict).
// Tied parameters (one tensor in several modules, as GPT-2's head and embedding) are one
// parameter, in a unit of the first block that uses it, gathered for every block that uses it
// and reduce-scattered once every use has added its gradient (Note [Tied parameters when
// sharding] in the .cpp). The blocks are chosen by a wrap policy (Options::isBlock; an
// nn::DecoderLM's are its transformer blocks, embeddings, final norm and head, so stage 3 holds
// one transformer block in full at a time, and the next, prefetched, on the GPU). Not supported: blocks that take
// tables, Module::to() after wrapping (build the wrapper after moving the network), parameters that are not row-major
// (refused; so is a network a stage-3 wrapper held before, whose fields it left as placeholders), a parameter tied
// between a block and the root (refused), and at stages 2 and 3 blocks in the slots of containers that cast their
// children without nn::unwrapped or run them other than through their slots (the library's all see through the
// wrappers: nn::DecoderLM, nn::DecoderBlock, the transformer layers, the fused pairs). A container of the one network;
// in stage 2 and 3 the blocks are held in their parents' slots through thin wrappers while this lives (Note [Block
// wrappers] in the .cpp), and between steps the modules' own gradients are placeholders (stage 3: their parameters too;
// Note [Freed parameters] in the .cpp): use fullStateDict(), masterShards() and gradientShards().
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "distributed/ProcessGroup.h"
#include "nn/Container.h"
#include "nn/GradScaler.h"
#include "nn/Optimizer.h"

namespace tensor::cuda {
class Event;  // tensor/CudaAsync.h
}

namespace dist {

struct ShardedDataParallelOptions {
  int stage = 3;                   // 1, 2 or 3 (see above)
  size_t bucketBytes = 25u << 20;  // at most this much of one block and dtype per unit (one larger parameter alone)
  bool broadcastState = true;      // rank 0's parameters and buffers at construction
  // The master weights' dtype (and so the optimizer state's) where the parameters' is other:
  // float32 for float16 / bfloat16 parameters by default, as nn::MasterWeights; float64 gives
  // a float32 network float64 masters (what the CPU tests of mixed precision use).
  std::optional<tensor::DType> masterDtype;
  // The wrap policy (FSDP's auto-wrap policy): which modules are blocks, by path ("h.0") and
  // module, asked top-down from the network's children and not below a module it selects (so
  // blocks never nest). Empty: the network's top-level children, and for an nn::DecoderLM its
  // embeddings, each nn::DecoderBlock of h, ln_f and lm_head. Parameters outside every block
  // form the root block, kept gathered through the whole forward and backward at stage 3.
  std::function<bool(const std::string& path, const nn::Module& module)> isBlock;
  // CUDA: stage 2 and 3's collectives on the group's stream beside the compute (a block's
  // reduce-scatter during the next block's backward; stage 3: the next block's all-gather during
  // this block's run, so stage 3 holds up to two blocks in full at a time). Off: every collective
  // in the compute stream's order, one block at a time (the CPU's way, whatever this says).
  bool overlap = true;
};

class ShardedDataParallel : public nn::Container {
 public:
  using Options = ShardedDataParallelOptions;
  // Builds the optimizer over this rank's pieces: `params` are views of the master shards,
  // `grads` of the averaged gradient shards (contiguous, one per parameter part owned here).
  using OptimizerFactory = std::function<std::unique_ptr<nn::Optimizer>(std::vector<tensor::Tensor> params,
                                                                        std::vector<tensor::Tensor> grads)>;

  // `group`: the default group (dist::init()) when nullptr.
  explicit ShardedDataParallel(nn::ModulePtr net, Options options = {}, std::shared_ptr<ProcessGroup> group = nullptr);
  ~ShardedDataParallel() override;  // gives the children back (stage 3: parameters left as placeholders)

  nn::Module& module() const { return *modules.at(0); }
  ProcessGroup& group() const { return *group_; }
  int stage() const { return options_.stage; }

  const tensor::Tensor& updateOutput(const tensor::Tensor& input) override;
  const tensor::Tensor& updateGradInput(const tensor::Tensor& input, const tensor::Tensor& gradOutput) override;
  void accGradParameters(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale = 1.0) override;
  // The sharded gradients (and stage 1's full ones) to zero; stages 2 and 3 free the full ones.
  void zeroGradParameters() override;
  static constexpr std::string_view kTypeName = "dist.ShardedDataParallel";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;

  // ---- training ----
  void setOptimizer(const OptimizerFactory& make);
  nn::Optimizer* optimizer() const { return optimizer_.get(); }  // nullptr: none, or no piece here
  // Gradient accumulation: while set, backward() accumulates the full gradients locally with no
  // communication; the next backward without it reduce-scatters the sum (stages 2, 3 keep the
  // full gradients of the accumulation steps meanwhile, as FSDP's no_sync does).
  void setNoSync(bool on) { noSync_ = on; }
  bool noSync() const { return noSync_; }
  // Scales the sharded gradients so that their global norm (2 or inf) over every rank is at most
  // maxNorm, as nn::clipGradNorm (same coefficient); returns the norm. One all-reduce.
  double clipGradNorm(double maxNorm, double normType = 2.0);
  // The optimizer's step on this rank's pieces, then (stages 1, 2) the parameters all-gathered.
  void step();
  // Loss scaling (nn::GradScaler): unscale() multiplies the gradient shards by 1 / scale and
  // makes the ranks agree on the verdict (Note [One verdict for every rank] in the .cpp);
  // step(scaler) unscales unless done this step (clip in between, as with one process), steps
  // unless a gradient anywhere was non-finite, and returns whether it stepped; then
  // scaler.update() on every rank keeps their scales equal.
  void unscale(nn::GradScaler& scaler);
  bool step(nn::GradScaler& scaler);
  // The master shards to the full parameters again (stages 1, 2; stage 3 gathers before use):
  // after changing masterShards() by hand.
  void syncParameters();

  // ---- state ----
  // Every parameter in full (all-gathered, a collective: call on every rank) and every buffer,
  // by path, as module().stateDict() would give without sharding.
  std::map<std::string, tensor::Tensor> fullStateDict();
  std::vector<tensor::Tensor> masterShards() const;    // one per unit: this rank's master weights
  std::vector<tensor::Tensor> gradientShards() const;  // one per unit: this rank's averaged gradients
  // Bytes this rank holds for parameters, gradients and optimizer state (distinct storages of
  // the tensors it owns: full buffers where resident, shards, optimizer state), now and at the
  // most since construction (or resetPeak()); `largestBlock` a block's padded parameters and
  // gradients in full (with the tied units gathered across it, and the root block's), what
  // stage 3 holds beyond its shards at a time.
  struct Memory {
    size_t parameters = 0, gradients = 0, optimizer = 0;
    size_t total() const { return parameters + gradients + optimizer; }
  };
  Memory memory() const;
  size_t peakBytes() const { return peak_; }
  void resetPeak() { peak_ = memory().total(); }
  size_t largestBlockBytes() const;
  size_t units() const { return units_.size(); }
  // The collectives this wrapper issued since construction: all-gathers of a unit's parameters
  // (stage 3's before use, and after each step at stages 1 and 2), how many of those were
  // prefetched for the next block, reduce-scatters of a unit's gradients, and how many of all of
  // them ran on the group's stream beside the compute (Options::overlap).
  struct Traffic {
    uint64_t allGathers = 0, prefetched = 0, reduceScatters = 0, overlapped = 0;
  };
  Traffic traffic() const { return traffic_; }

  // ---- sharded checkpoints (Note [Sharded checkpoints] in the .cpp) ----
  // Every rank writes its shard (master weights, optimizer state) to `dir`/shard-R-of-N.safetensors,
  // atomically; rank 0 then writes `dir`/manifest.json, atomically, once every shard is in. A
  // collective: call on every rank. Each file is whole or absent, and a load refuses shards of
  // another save; a crash in the middle of a save over an older one in the same directory
  // leaves neither loadable, so give each checkpoint its own directory (and rename it last).
  void saveCheckpoint(const std::string& dir);
  // Loads a checkpoint saved at any world size and stage into this model of the same units (the
  // same network, blocks and bucketBytes), resharding as needed, and the optimizer state into the
  // optimizer (setOptimizer first); the gradients are zeroed. Every rank calls it (stages 1, 2
  // end with the parameters' all-gather).
  void loadCheckpoint(const std::string& dir);
  // A sharded checkpoint whole, for one process without sharding: `model` by parameter path
  // (and buffers), for Module::loadStateDict; `optimizer` keyed "<parameter index>.<name>" in
  // Module::parameters() order, for Optimizer::loadStateDict.
  struct FullCheckpoint {
    std::map<std::string, tensor::Tensor> model, optimizer;
    int worldSize = 0;  // the one it was saved at
  };
  static FullCheckpoint readFullCheckpoint(const std::string& dir);

  // ---- used by the block wrappers (Note [Block wrappers]) ----
  void beforeForward(size_t block);
  void afterForward(size_t block, bool reversed = false);  // reversed: a pass in reverse block order
  void beforeBackward(size_t block);
  void blockDone(size_t block);
  void afterBackward(size_t block);

 protected:
  void backwardImpl(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale) override;

 private:
  struct Param {
    std::string name;
    tensor::Tensor* value = nullptr;  // the module's own fields (rebound to views of the unit's buffers)
    tensor::Tensor* grad = nullptr;
    // The other fields holding the same tensors (Note [Tied parameters when sharding]), by path
    std::vector<std::pair<tensor::Tensor*, tensor::Tensor*>> ties;
    std::vector<std::string> tiedNames;
    // What the fields hold while the full tensors are freed (Note [Freed parameters] in the .cpp)
    tensor::Tensor valueHolder, gradHolder;
    tensor::Shape shape;
    int64_t numel = 0;
    size_t unit = 0;
    int64_t offset = 0;  // elements into the unit's flat buffer
  };
  struct Unit {
    std::vector<size_t> params;
    size_t block = 0;
    tensor::DType dtype = tensor::DType::Float32, masterDtype = tensor::DType::Float32;
    int64_t numel = 0, padded = 0, shard = 0;
    tensor::Tensor flat;  // [padded] full parameters: stages 1, 2 always; stage 3 while gathered
    tensor::Tensor
        flatGrad;  // [padded] full gradients: stage 1 always; 2, 3 from a block's backward to its reduce-scatter
    tensor::Tensor master;  // [shard] (stages 1, 2 with masterDtype == dtype: flat's own chunk)
    tensor::Tensor grad;    // [shard] averaged gradient, accumulated until zeroGradParameters()
    bool pending = false;   // flatGrad holds gradients not yet reduce-scattered (noSync)
    // Note [Overlapped collectives]: `flat` written on the group's stream, which the compute
    // stream has not yet waited for (`gathered` marks the end); gathered ahead of its block
    // (`prefetched`, until a block uses it); a reduce-scatter in flight on the group's stream
    // from `reduceInput` (the full gradients) into `reduceOutput`, ended by `reduced`.
    std::shared_ptr<tensor::cuda::Event> gathered, reduced;
    bool inFlight = false, prefetched = false;
    tensor::Tensor reduceInput, reduceOutput;
    // The blocks using it, [firstUser, lastUser]: `block` alone but for tied parameters
    size_t firstUser = 0, lastUser = 0;
    bool tied() const { return firstUser != lastUser; }
  };
  struct Piece {  // one optimizer parameter: a part of parameter `param` in this rank's shard of `unit`
    size_t unit = 0, param = 0;
    int64_t begin = 0, length = 0;  // elements into the shard
  };
  struct Block {
    nn::Module* module = nullptr;  // the network itself for the root block
    nn::Module* parent = nullptr;  // whose slot `slot` holds it (nullptr: the root)
    size_t slot = 0;
    std::vector<size_t> own;     // its own parameters (first used here) in params_
    std::vector<size_t> params;  // every parameter it uses: its own and tied ones of earlier blocks
    std::vector<size_t> units;   // its own units
    std::vector<size_t> uses;    // the units of `params`, in order
    bool wrapped = false;
  };

  void collect();
  void checkAgreement();
  void makeUnits();
  void wrapBlocks();
  void gather(Unit& u);              // issues the all-gather (the group's stream when overlapping)
  void awaitGathered(Unit& u);       // the compute stream waits for it
  void prefetch(size_t block);       // gathers the units `block` uses ahead of its run
  void prefetchAfter(size_t block);  // what followed `block` in the last pass of this kind
  void beginPass(int kind);
  void endPass(bool completed);
  void release(Unit& u);
  void bindGrads(Unit& u);
  static void bindValue(Param& p, const tensor::Tensor& t);  // into every field of the parameter
  static void bindGrad(Param& p, const tensor::Tensor& t);
  void reduceGrads(Unit& u);
  void finishReduce(Unit& u);  // the compute stream waits for an overlapped reduce-scatter and adds it in
  void finishReductions();
  void releasePrefetched();          // units gathered ahead that the pass did not use
  void settle();                     // every collective in flight awaited by the compute stream
  void markCommReady();              // the group's stream waits for the compute stream's work so far
  void watchComm(const char* what);  // the watchdog follows what the group's stream was given
  void finishBackward();
  void checkReduced(const char* method) const;  // no gradient left under noSync
  void notePeak();
  void countOptimizerState();
  void watchDevice(const char* what);
  std::string where(const char* method) const;

  Options options_;
  std::shared_ptr<ProcessGroup> group_;
  tensor::Device device_;
  std::vector<Param> params_;
  std::vector<Unit> units_;
  std::vector<Block> blocks_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  std::vector<Piece> pieces_;
  bool noSync_ = false;
  bool unscaled_ = false;  // unscale() ran since the last step
  bool inBackward_ = false;
  bool overlap_ = false;  // options_.overlap on a CUDA device, stages 2 and 3
  bool commIssued_ = false;
  void* commStream_ = nullptr;
  std::shared_ptr<tensor::cuda::Event> computeReady_;
  // The blocks in the order this pass and the last completed one of each kind ran them
  static constexpr int kForwardPass = 0, kBackwardPass = 1, kGradInputPass = 2;
  int pass_ = -1;  // a pass through this wrapper under way: its kind
  std::vector<size_t> passOrder_[3], lastPassOrder_[3];
  Traffic traffic_;
  size_t peak_ = 0;
  size_t optimizerBytes_ = 0;
};

}  // namespace dist
