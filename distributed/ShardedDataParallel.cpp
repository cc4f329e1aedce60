// ShardedDataParallel.cpp
// Note [Shards of a unit]
// A unit is a run of parameters of one block and one dtype, laid end to end in a flat buffer of
// `padded` = ceil(numel / N) * N elements (the padding stays zero), cut into N shards of `shard`
// elements: rank r owns elements [r * shard, (r + 1) * shard). The optimizer sees one piece per
// parameter and rank: the part of the parameter inside this rank's shard, a view of the master
// shard (and of the gradient shard), so its per-element arithmetic is the one process's and
// the padding is never stepped. The averaged gradient of a unit comes from one reduce-scatter
// (average) of its full gradient buffer; the parameters from one all-gather of the shards, in
// place into the full buffer (stages 1 and 2 keep it and, when the master dtype is the
// parameters', the master shard is that buffer's own chunk, so nothing is copied).
// Note [Block wrappers]
// Stages 2 and 3 must act just before a block's backward (bind fresh gradient buffers; stage 3:
// gather the parameters) and stage 3 just before and after its forward, and nn::Module has only
// a backward hook. So while the wrapper lives, each block (Note [Wrap policy]) sits in its
// parent's slot, whatever the parent container, inside a thin private module that calls back
// here around the child's forward and backward and otherwise passes everything through (its
// state is the child's, under the same paths); the child's backward hook starts the block's
// reduce-scatter. The destructor puts the blocks back in their slots. The wrapper is an
// nn::ModuleWrapper, and the containers that reach their children by type cast
// nn::unwrapped(child) (nn::DecoderLM, nn::DecoderBlock, nn::TransformerEncoderLayer,
// nn::TransformerDecoderLayer, the fused pairs), so they still find them, while running each
// child through its slot, the wrapper's calls included; a cudnn fused twin with a wrapper in a
// slot computes the pair in turn (Note [Fused pairs with wrapped children] in
// cudnn/FusedConvolution.cpp). A container that ran a child other than through its slot
// would skip the wrapper (stage 3: with the parameters not gathered). The root block (the
// parameters outside every block: a network without children is all root) has no wrapper: it
// is handled here directly, around the network's whole forward and backward.
// Note [Wrap policy]
// Which modules are blocks decides what stage 3 holds at a time: a block's parameters in full
// (and the tied units it uses). Options::isBlock(path, module) is asked from the network's
// children down, depth first in module order (the order of parameters()), and not below a
// module it selects, so blocks never nest; a module it does not select gives its own
// parameters to the root block and its children are asked. Without one: the top-level
// children, and for an nn::DecoderLM, whose top level is wte, [wpe], h, ln_f, lm_head, every
// top-level child but h and every child of h (its DecoderBlocks), so a transformer block is the
// unit of gathering, not the whole stack. The root is gathered for the whole pass, a block for
// its own part of it, so a tensor tied between the root and a block would be released while
// still in use: refused (choose blocks that hold every use of it).
// Note [Sharded checkpoints]
// A unit's cut does not depend on the world size (only its padding does), so a checkpoint is
// per unit and element: shard file R of N holds, for every unit i, "u<i>.master" (elements
// [R * shard, (R + 1) * shard) of the unit's master weights, padding included), "u<i>.<name>"
// for each optimizer state of one value per element (Adam's moments, SGD's momentum; zeros
// where no parameter lies), "step.<p>" for each parameter with a part here, and (rank 0) the
// buffers "buffer.<path>"; its metadata names the save (a nonce of rank 0's), the rank and
// the state names. manifest.json (written by rank 0 after a barrier, so it exists only when
// every shard does) records the world size, the nonce, and the units: each parameter's path,
// dtype, shape, unit and offset. A load at M ranks reads, for each of its new shards, the
// overlapping ranges of the old files (refusing a file of another save), so N and M are free,
// and one process takes the whole (readFullCheckpoint). Each file is written through
// tensor::write_file_atomic (a temporary file renamed over the target).
// Note [Freed parameters]
// Where a full tensor is freed (stage 3's parameters, stage 2 and 3's gradients between
// backwards), the module's field is not left undefined, which modules read as "no such
// tensor" (Linear's optional bias, and so parameters(), config(), printing), but holds a
// placeholder: a view of the parameter's shape over one zero element (all strides 0), its own
// per parameter so that no two look tied (Note [Tied parameters] in nn/Module.cpp). It holds
// no memory to speak of and, not being contiguous, fails loudly where a kernel would take it
// for the real tensor.
// Note [Tied parameters when sharding]
// A tensor held by several modules (the same view: Note [Tied parameters] in nn/Module.cpp) is
// one parameter, as parameters() lists it: it lives in a unit of the first block that uses it
// in module order (its owner), under its first path, and every field holding it (`ties`) is
// rebound together, to the unit's views or to the parameter's one placeholder (so the modules
// still look tied). Each block knows the units it uses (`uses`: its own and the tied ones of
// earlier blocks), and a unit the range of blocks using it [firstUser, lastUser]. Stage 3
// gathers every unit a block uses before its forward and backward; a tied unit stays gathered
// until the last user of the pass is done (lastUser in a forward, firstUser in a pass in reverse
// block order: updateGradInput, backward), so one pass gathers it once. Its gradient buffer,
// bound at the first use in backward, collects every use's contribution (the modules add into
// the one gradient, as without sharding) and is reduce-scattered at firstUser's end of
// backward, the owner's: backward runs in reverse block order, so the owner comes last. Should
// a container run its blocks in another order, the end of backward reduce-scatters what a tied
// unit still holds. Checkpoints keep one entry per tensor (and the manifest its other paths);
// fullStateDict and readFullCheckpoint give every path, as stateDict() does.
// Note [Overlapped collectives]
// On the GPU at stages 2 and 3 (Options::overlap), the collectives run on the group's
// communication stream instead of the compute stream, ordered by events, so that they overlap
// the compute, as FSDP's:
//   - a block's reduce-scatter is launched from its backward hook and finished (the compute
//     stream waits for it and adds the result into the gradient shard) at the next block's hook,
//     so it runs beside that block's backward; the end of backward finishes the rest;
//   - stage 3 gathers the units the next block uses as soon as this block starts, so that
//     all-gather runs beside this block's forward or backward; the compute stream waits only
//     for the units it is about to use. Which block is next is what the last pass of the same
//     kind (forward, backward, updateGradInput) ran next, as FSDP records its execution order:
//     containers need not run their blocks in module order, nor backward in reverse (DecoderLM's
//     backward runs wte before wpe), and a first pass, or one that leaves the last one's order,
//     gathers on demand. Only passes through this wrapper are recorded and prefetched (a
//     block's forward called on the inner network, as generate() does, gathers on demand). Two
//     blocks are then in full at a time (largestBlockBytes counts one). A prefetched unit the
//     pass then never uses is released at the pass's end.
// The caching allocator assumes one stream per device (Note [Side streams and the caching
// allocator] in tensor/CudaAsync.h), and both rules of that Note hold here: before the group's
// stream first touches a new buffer (the gathered parameters, the reduce-scatter's result) it
// waits for the compute stream's work so far (the block's previous owner may still be read
// there, and the own shard's copy or the gradients must be complete), and no buffer it touched
// is freed before the compute stream has waited for it (release() and finishReduce() wait
// first, and settle() waits for everything before the state is read, zeroed or saved). The
// arithmetic is the same as in the compute stream's order, so the results are bit for bit
// those of Options::overlap off. The group's watchdog follows the group's stream after each
// block's collectives (watchComm), so a lost rank still stops the job within the timeout.
// Note [Sharded model agreement]
// Every rank must cut the same units: at construction the ranks all-gather the world size, the
// stage and the parameter count, then a signature (name, dtype, shape) and the size of every
// parameter, so every rank refuses the same model with the same error, naming the first rank
// and parameter that differ, instead of hanging in mismatched collectives.
#include "distributed/ShardedDataParallel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <random>
#include <set>

#include "distributed/Dist.h"
#include "nn/DecoderLM.h"
#include "nn/ModuleWrapper.h"
#include "nn/Sequential.h"
#include "tensor/Cuda.h"
#include "tensor/CudaAsync.h"
#include "tensor/FileIO.h"
#include "tensor/Json.h"
#include "tensor/Safetensors.h"

namespace dist {

using tensor::Tensor;

namespace {

// Module's state walkers are protected; a pointer to member formed through a derived class
// reaches them on any module (the wrapper needs the child's tree under the wrapper's paths).
struct TreeAccess : nn::Module {
  static void tree(nn::Module& m, nn::StateVisitor& v, const std::string& prefix) {
    (m.*(&TreeAccess::visitTree))(v, prefix);
  }
  static void own(nn::Module& m, nn::StateVisitor& v) { (m.*(&TreeAccess::visitState))(v); }
};

std::string shape_str(const tensor::Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? " x " : "") + std::to_string(s[i]);
  return out + "]";
}

int64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return static_cast<int64_t>(h >> 1);
}

bool is_16bit_float(tensor::DType t) { return t == tensor::DType::Float16 || t == tensor::DType::BFloat16; }

// See Note [Block wrappers]
class BlockWrapper final : public nn::Module, public nn::ModuleWrapper {
 public:
  BlockWrapper(nn::ModulePtr inner, ShardedDataParallel& owner, size_t block)
      : inner_(std::move(inner)), owner_(owner), block_(block) {
    training_ = inner_->isTraining();
  }
  nn::ModulePtr inner() const { return inner_; }
  nn::Module& wrapped() const override { return *inner_; }

  const Tensor& updateOutput(const Tensor& input) override {
    owner_.beforeForward(block_);
    try {
      output = inner_->forward(input);
    } catch (...) {
      owner_.afterForward(block_);
      throw;
    }
    owner_.afterForward(block_);
    return output;
  }
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override {
    owner_.beforeForward(block_);  // the parameters alone: no gradient is produced
    try {
      gradInput = inner_->updateGradInput(input, gradOutput);
    } catch (...) {
      owner_.afterForward(block_, true);
      throw;
    }
    owner_.afterForward(block_, true);  // in reverse block order
    return gradInput;
  }
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) override {
    owner_.beforeBackward(block_);
    try {
      inner_->accGradParameters(input, gradOutput, scale);
    } catch (...) {
      owner_.afterBackward(block_);
      throw;
    }
    owner_.blockDone(block_);  // no hook on this path
    owner_.afterBackward(block_);
  }
  void zeroGradParameters() override {}  // the owner's (its gradients are its buffers)
  std::string type_name() const override { return inner_->type_name(); }
  std::string str() const override { return inner_->str(); }
  tensor::Json config() const override { return inner_->config(); }
  bool writesGradOutput() const override { return inner_->writesGradOutput(); }
  bool computesOn(tensor::Device d) const override { return inner_->computesOn(d); }
  void setGradInputNeeded(bool needed) override {
    nn::Module::setGradInputNeeded(needed);
    inner_->setGradInputNeeded(needed);
  }
  void setFreeIntermediateGradients(bool on) override {
    nn::Module::setFreeIntermediateGradients(on);
    inner_->setFreeIntermediateGradients(on);
  }
  void releaseGradInput() override {
    nn::Module::releaseGradInput();
    inner_->releaseGradInput();
  }
  void releaseActivations() override {
    nn::Module::releaseActivations();
    inner_->releaseActivations();
  }
  void train() override {
    nn::Module::train();
    inner_->train();
  }
  void evaluate() override {
    nn::Module::evaluate();
    inner_->evaluate();
  }

 protected:
  void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) override {
    owner_.beforeBackward(block_);
    try {
      gradInput = inner_->backward(input, gradOutput, scale);  // its hook: owner_.blockDone
    } catch (...) {
      owner_.afterBackward(block_);
      throw;
    }
    owner_.afterBackward(block_);
  }
  bool parametersNeedGradInput() const override { return true; }  // always backwardImpl: the child decides
  void visitState(nn::StateVisitor& v) override { TreeAccess::tree(*inner_, v, ""); }

 private:
  nn::ModulePtr inner_;
  ShardedDataParallel& owner_;
  size_t block_;
};

}  // namespace

std::string ShardedDataParallel::where(const char* method) const {
  return tensor::detail::concat("dist.ShardedDataParallel::", method, " (rank ", group_->rank(), " of ",
                                group_->worldSize(), "): ");
}

ShardedDataParallel::ShardedDataParallel(nn::ModulePtr net, Options options, std::shared_ptr<ProcessGroup> group)
    : options_(options), group_(group ? std::move(group) : default_group()) {
  if (options_.stage < 1 || options_.stage > 3) {
    throw tensor::Error(where("ShardedDataParallel") + "expected stage 1, 2 or 3, got " +
                        std::to_string(options_.stage));
  }
  add(std::move(net));
  const auto params = module().parameters();
  device_ = params.empty() ? group_->device() : params.front().device();
  if (!group_->backend(device_)) {
    throw tensor::Error(where("ShardedDataParallel") + "expected a backend for the network's device " + device_.str() +
                        " (NCCL for CUDA, MPI for the CPU), got the group's " + group_->backends());
  }
  collect();
  checkAgreement();
  makeUnits();
  if (options_.broadcastState && group_->worldSize() > 1) {
    std::vector<Tensor> buffers;
    for (auto& [name, b] : module().namedBuffers()) {
      if (!b.is_contiguous())
        throw tensor::Error(where("ShardedDataParallel") + "expected buffer '" + name + "' contiguous, got " +
                            b.description());
      group_->broadcast(b, 0);
    }
    if (device_.is_cpu()) group_->wait(device_, "the broadcast of rank 0's buffers");
  }
  overlap_ = options_.overlap && device_.is_cuda() && options_.stage > 1;
  if (overlap_) {
    commStream_ = group_->commStream();
    computeReady_ = std::make_shared<tensor::cuda::Event>(device_.index);
  }
  wrapBlocks();  // last: nothing after it throws
  peak_ = memory().total();
}

// Blocks: the modules the wrap policy selects that use parameters, and the root block: the
// parameters outside them (the network itself, without children); each parameter once, with
// pointers to the module's own fields (every field of a tied one: Note [Tied parameters when
// sharding]). See Note [Wrap policy]
void ShardedDataParallel::collect() {
  struct Key {
    const void* storage;
    int64_t offset;
    tensor::Shape sizes, strides;
    auto operator<=>(const Key&) const = default;
  };
  struct Collect : nn::StateVisitor {
    std::vector<Param>* out = nullptr;
    std::vector<size_t>* used = nullptr;
    std::vector<size_t>* own = nullptr;
    std::string prefix;
    std::map<Key, size_t> seen;
    void parameter(const std::string& name, Tensor& v, Tensor& g) override {
      const std::string n = prefix + name;
      if (v.defined()) {
        const Key key{v.storage().get(), v.storage_offset(), v.sizes(), v.strides()};
        auto [it, fresh] = seen.emplace(key, out->size());
        if (!fresh) {
          Param& p = (*out)[it->second];
          p.ties.emplace_back(&v, &g);
          p.tiedNames.push_back(n);
          if (std::find(used->begin(), used->end(), it->second) == used->end()) used->push_back(it->second);
          return;
        }
      }
      Param p;
      p.name = n;
      p.value = &v;
      p.grad = &g;
      used->push_back(out->size());
      own->push_back(out->size());
      out->push_back(std::move(p));
    }
    void buffer(const std::string&, Tensor&) override {}
  };
  nn::Module& net = module();
  std::function<bool(const std::string&, const nn::Module&)> isBlock = options_.isBlock;
  if (!isBlock) {
    if (auto* lm = dynamic_cast<nn::DecoderLM*>(&net)) {
      // its embeddings, ln_f and lm_head (the top level but h), and each block of h
      const nn::Module* h = &lm->blocks();
      isBlock = [h](const std::string& path, const nn::Module& m) {
        const size_t dot = path.find('.');
        return dot == std::string::npos ? &m != h : dot == path.rfind('.');  // h's children alone are asked
      };
    } else {
      isBlock = [](const std::string& path, const nn::Module&) { return path.find('.') == std::string::npos; };
    }
  }
  Collect c;
  c.out = &params_;
  blocks_.emplace_back();  // the root, blocks_[0] while it uses parameters
  blocks_[0].module = &net;
  auto ownState = [&](nn::Module& m, const std::string& prefix) {
    c.used = &blocks_[0].params;
    c.own = &blocks_[0].own;
    c.prefix = prefix;
    TreeAccess::own(m, c);
    c.prefix.clear();
  };
  ownState(net, "");
  std::function<void(nn::Module&, const std::string&)> walk = [&](nn::Module& parent, const std::string& prefix) {
    auto* kids = parent.children();
    if (!kids) return;
    for (size_t i = 0; i < kids->size(); ++i) {
      nn::Module& child = nn::child_at(parent, *kids, i, "ShardedDataParallel");
      const std::string path = prefix + parent.childName(i);
      if (!isBlock(path, child)) {
        ownState(child, path + ".");
        walk(child, path + ".");
        continue;
      }
      Block b;
      b.module = &child;
      b.parent = &parent;
      b.slot = i;
      c.used = &b.params;
      c.own = &b.own;
      TreeAccess::tree(child, c, path + ".");
      if (b.params.empty()) continue;
      blocks_.push_back(std::move(b));
    }
  };
  walk(net, "");
  if (blocks_[0].params.empty()) {
    blocks_.erase(blocks_.begin());
  } else if (blocks_.size() > 1) {
    // The root is gathered around the whole pass, a block around its own: one unit cannot be both
    for (size_t b = 1; b < blocks_.size(); ++b) {
      for (size_t i : blocks_[b].params) {
        const auto& root = blocks_[0].params;  // its own and those it uses
        if (std::find(root.begin(), root.end(), i) != root.end()) {
          throw tensor::Error(where("ShardedDataParallel") + "expected no parameter tied between a block and the " +
                              "parameters outside every block, got '" + params_[i].name + "' (choose blocks that " +
                              "hold every use of it)");
        }
      }
    }
  }
  // a description that shows what fails "row-major": the strides where they are not
  auto layout = [](const Tensor& t) {
    if (!t.defined()) return std::string("undefined");
    return t.is_contiguous() ? t.description() : t.description() + " of strides " + shape_str(t.strides());
  };
  for (Param& p : params_) {
    const Tensor& v = *p.value;
    const Tensor& g = *p.grad;
    if (!v.defined() || !v.is_contiguous() || v.device() != device_ || !g.defined() || g.sizes() != v.sizes() ||
        g.dtype() != v.dtype() || g.device() != v.device()) {
      // Note [Freed parameters]: what a stage-3 wrapper leaves in the fields when it goes
      const tensor::Shape& st = v.defined() ? v.strides() : tensor::Shape{};
      const bool placeholder =
          v.defined() && v.numel() > 1 && std::all_of(st.begin(), st.end(), [](int64_t s) { return s == 0; });
      throw tensor::Error(
          where("ShardedDataParallel") + "expected parameter '" + p.name + "' and its gradient row-major on " +
          device_.str() + ", of one shape and dtype, got " + layout(v) + " with gradient " + layout(g) +
          (placeholder ? " (a placeholder left by a stage-3 ShardedDataParallel, whose shards held the parameters: "
                         "build the network afresh, or load into it the fullStateDict() taken while that one lived)"
                       : ""));
    }
    for (size_t t = 0; t < p.ties.size(); ++t) {
      if (!p.ties[t].second->is_same_view(g)) {
        throw tensor::Error(where("ShardedDataParallel") + "expected tied parameter '" + p.tiedNames[t] +
                            "' to share the gradient of '" + p.name + "' too (as tieParameters ties both), got " +
                            (p.ties[t].second->defined() ? p.ties[t].second->description() : std::string("undefined")) +
                            " and " + g.description());
      }
    }
    p.shape = v.sizes();
    p.numel = v.numel();
    const tensor::Shape ones(p.shape.size(), 1);
    p.valueHolder = tensor::zeros(ones, v.dtype(), device_).expand(p.shape);
    p.gradHolder = tensor::zeros(ones, v.dtype(), device_).expand(p.shape);
  }
}

// See Note [Sharded model agreement]
void ShardedDataParallel::checkAgreement() {
  const int n = group_->worldSize(), r = group_->rank();
  if (n == 1) return;
  auto gather = [&](const std::vector<int64_t>& mine) {
    const auto k = static_cast<int64_t>(mine.size());
    Tensor local = tensor::empty({k}, tensor::DType::Int64, tensor::Device::cpu());
    std::copy(mine.begin(), mine.end(), local.data<int64_t>());
    Tensor all = tensor::zeros({k * n}, tensor::DType::Int64, device_);
    Tensor send = local.to(device_);
    group_->allGather(send, all);
    group_->wait(device_, "the model agreement check");
    return all.cpu();
  };
  const std::vector<int64_t> head = {n, options_.stage, static_cast<int64_t>(params_.size())};
  const Tensor heads = gather(head);
  for (int q = 0; q < n; ++q) {
    const int64_t* h = heads.data<int64_t>() + 3 * q;
    if (h[0] != head[0] || h[1] != head[1] || h[2] != head[2]) {
      throw tensor::Error(tensor::detail::concat(
          where("ShardedDataParallel"), "expected every rank to agree on the world size, the stage and the number of ",
          "parameters, got world size ", h[0], ", stage ", h[1], ", ", h[2], " parameters on rank ", q,
          " and world size ", head[0], ", stage ", head[1], ", ", head[2], " parameters on rank ", r));
    }
  }
  // Per parameter: a hash of its name, its dtype, rank and first kDims sizes (the rest hashed in).
  constexpr size_t kDims = 4, kEach = 3 + kDims;
  std::vector<int64_t> sig;
  for (const Param& p : params_) {
    sig.push_back(fnv1a(p.name + "|" + shape_str(p.shape)));
    sig.push_back(static_cast<int64_t>(p.value->dtype()));
    sig.push_back(static_cast<int64_t>(p.shape.size()));
    for (size_t d = 0; d < kDims; ++d) sig.push_back(d < p.shape.size() ? p.shape[d] : 0);
  }
  if (sig.empty()) return;
  const Tensor sigs = gather(sig);
  const size_t k = sig.size();
  for (size_t i = 0; i < params_.size(); ++i) {
    for (int q = 0; q < n; ++q) {
      const int64_t* s = sigs.data<int64_t>() + k * static_cast<size_t>(q) + kEach * i;
      if (std::equal(s, s + kEach, sig.begin() + static_cast<std::ptrdiff_t>(kEach * i))) continue;
      const Param& p = params_[i];
      std::string theirs = tensor::name(static_cast<tensor::DType>(s[1])) + std::string(" [");
      for (int64_t d = 0; d < s[2]; ++d) {
        theirs += (d ? " x " : "") + (d < static_cast<int64_t>(kDims) ? std::to_string(s[3 + d]) : std::string("?"));
      }
      theirs += "]";
      const bool sameShape = std::equal(s + 1, s + kEach, sig.begin() + static_cast<std::ptrdiff_t>(kEach * i + 1));
      throw tensor::Error(tensor::detail::concat(where("ShardedDataParallel"), "expected parameter '", p.name,
                                                 "' alike on every rank, got ", tensor::name(p.value->dtype()), " ",
                                                 shape_str(p.shape), " on rank ", r, " and ", theirs,
                                                 sameShape ? " under another name" : "", " on rank ", q));
    }
  }
}

void ShardedDataParallel::makeUnits() {
  const int n = group_->worldSize(), r = group_->rank();
  for (size_t b = 0; b < blocks_.size(); ++b) {
    const std::vector<size_t>& own = blocks_[b].own;
    size_t bytes = 0;
    for (size_t i : own) {
      const Param& p = params_[i];
      const size_t pb = static_cast<size_t>(p.numel) * tensor::itemsize(p.value->dtype());
      const bool fresh = i == own.front() || p.value->dtype() != units_.back().dtype ||
                         (bytes > 0 && bytes + pb > options_.bucketBytes);
      if (fresh) {
        Unit u;
        u.block = b;
        u.dtype = p.value->dtype();
        u.masterDtype = !tensor::is_floating(u.dtype) ? u.dtype
                        : options_.masterDtype        ? *options_.masterDtype
                        : is_16bit_float(u.dtype)     ? tensor::DType::Float32
                                                      : u.dtype;
        units_.push_back(std::move(u));
        blocks_[b].units.push_back(units_.size() - 1);
        bytes = 0;
      }
      Unit& u = units_.back();
      params_[i].unit = units_.size() - 1;
      params_[i].offset = u.numel;
      u.numel += p.numel;
      u.params.push_back(i);
      bytes += pb;
    }
  }
  for (Unit& u : units_) u.firstUser = u.lastUser = u.block;
  for (size_t b = 0; b < blocks_.size(); ++b) {
    Block& k = blocks_[b];
    for (size_t i : k.params) {
      const size_t unit = params_[i].unit;
      if (std::find(k.uses.begin(), k.uses.end(), unit) == k.uses.end()) k.uses.push_back(unit);
      units_[unit].firstUser = std::min(units_[unit].firstUser, b);
      units_[unit].lastUser = std::max(units_[unit].lastUser, b);
    }
    std::sort(k.uses.begin(), k.uses.end());
  }
  for (Unit& u : units_) {
    u.shard = (u.numel + n - 1) / n;
    u.padded = u.shard * n;
    u.flat = tensor::zeros({u.padded}, u.dtype, device_);
    for (size_t i : u.params) {
      Param& p = params_[i];
      u.flat.narrow(0, p.offset, p.numel).copy_(tensor::flat_view(*p.value));
    }
    if (options_.broadcastState && n > 1) group_->broadcast(u.flat, 0);
  }
  if (options_.broadcastState && n > 1 && device_.is_cpu())
    group_->wait(device_, "the broadcast of rank 0's parameters");
  for (Unit& u : units_) {
    const Tensor own = u.flat.narrow(0, r * u.shard, u.shard);
    u.master = options_.stage < 3 && u.masterDtype == u.dtype ? own : own.to(u.masterDtype).clone();
    u.grad = tensor::zeros({u.shard}, u.masterDtype, device_);
    for (size_t i : u.params) {
      Param& p = params_[i];
      bindValue(p, u.flat.narrow(0, p.offset, p.numel).view(p.shape));
      bindGrad(p, p.gradHolder);
    }
    if (options_.stage == 1) bindGrads(u);
    if (options_.stage == 3) release(u);
  }
}

void ShardedDataParallel::wrapBlocks() {
  if (options_.stage == 1) return;
  for (size_t b = 0; b < blocks_.size(); ++b) {
    Block& k = blocks_[b];
    k.module->setBackwardHook([this, b](nn::Module&) { blockDone(b); });
    if (!k.parent) continue;  // the root: handled here directly
    nn::ModulePtr& slot = k.parent->children()->at(k.slot);
    if (slot.get() != k.module) continue;
    slot = std::make_shared<BlockWrapper>(slot, *this, b);
    k.wrapped = true;
  }
}

ShardedDataParallel::~ShardedDataParallel() {
  try {
    settle();
  } catch (...) {
  }
  try {
    for (Block& b : blocks_) b.module->setBackwardHook({});
    for (Block& b : blocks_) {
      if (!b.wrapped) continue;
      nn::ModulePtr& slot = b.parent->children()->at(b.slot);
      if (auto* w = dynamic_cast<BlockWrapper*>(slot.get())) slot = w->inner();
    }
    // The modules get gradients of their own again (stage 3 leaves their parameters empty).
    for (Param& p : params_) {
      if (p.grad->is_same_view(p.gradHolder)) bindGrad(p, tensor::zeros(p.shape, p.value->dtype(), device_));
    }
  } catch (...) {
  }
}

void ShardedDataParallel::gather(Unit& u) {
  if (u.flat.defined()) return;
  const int r = group_->rank();
  u.flat = tensor::empty({u.padded}, u.dtype, device_);
  Tensor own = u.flat.narrow(0, r * u.shard, u.shard);
  own.copy_(u.master);
  ++traffic_.allGathers;
  if (overlap_) {  // Note [Overlapped collectives]
    markCommReady();
    group_->allGather(own, u.flat, commStream_);
    if (!u.gathered) u.gathered = std::make_shared<tensor::cuda::Event>(device_.index);
    u.gathered->record(commStream_);
    u.inFlight = true;
    ++traffic_.overlapped;
  } else {
    group_->allGather(own, u.flat);
    if (device_.is_cpu()) group_->wait(device_, "the parameters' all-gather");  // CUDA: in the stream's order
  }
  for (size_t i : u.params) {
    Param& p = params_[i];
    bindValue(p, u.flat.narrow(0, p.offset, p.numel).view(p.shape));
  }
}

void ShardedDataParallel::awaitGathered(Unit& u) {
  if (!u.inFlight) return;
  u.gathered->block(tensor::cuda::stream(device_.index));
  u.inFlight = false;
}

void ShardedDataParallel::prefetch(size_t block) {
  for (size_t i : blocks_[block].uses) {
    Unit& u = units_[i];
    if (u.flat.defined()) continue;
    gather(u);
    u.prefetched = true;
    ++traffic_.prefetched;
  }
}

// The block the last pass of this kind ran after `block` at this point, gathered now (Note
// [Overlapped collectives]); the order of this pass recorded for the next.
void ShardedDataParallel::prefetchAfter(size_t block) {
  if (pass_ < 0) return;
  std::vector<size_t>& now = passOrder_[pass_];
  const std::vector<size_t>& last = lastPassOrder_[pass_];
  const size_t at = now.size();
  now.push_back(block);
  if (at + 1 < last.size() && last[at] == block) prefetch(last[at + 1]);
}

void ShardedDataParallel::beginPass(int kind) {
  pass_ = kind;
  passOrder_[kind].clear();
}

void ShardedDataParallel::endPass(bool completed) {
  if (pass_ < 0) return;
  if (completed) lastPassOrder_[pass_] = passOrder_[pass_];
  pass_ = -1;
  releasePrefetched();
}

void ShardedDataParallel::release(Unit& u) {
  awaitGathered(u);  // the allocator's next user runs on the compute stream
  for (size_t i : u.params) bindValue(params_[i], params_[i].valueHolder);
  u.flat = Tensor();
  u.prefetched = false;
}

void ShardedDataParallel::markCommReady() {
  computeReady_->record(tensor::cuda::stream(device_.index));
  computeReady_->block(commStream_);
  commIssued_ = true;
}

void ShardedDataParallel::watchComm(const char* what) {
  if (!commIssued_) return;
  group_->watch(commStream_, what);
  commIssued_ = false;
}

void ShardedDataParallel::bindValue(Param& p, const Tensor& t) {
  *p.value = t;
  for (auto& [v, g] : p.ties) *v = t;
}

void ShardedDataParallel::bindGrad(Param& p, const Tensor& t) {
  *p.grad = t;
  for (auto& [v, g] : p.ties) *g = t;
}

void ShardedDataParallel::bindGrads(Unit& u) {
  if (u.flatGrad.defined()) return;
  u.flatGrad = tensor::zeros({u.padded}, u.dtype, device_);
  for (size_t i : u.params) {
    Param& p = params_[i];
    bindGrad(p, u.flatGrad.narrow(0, p.offset, p.numel).view(p.shape));
  }
}

// The unit's full gradient, averaged over the ranks, added into this rank's shard of it.
void ShardedDataParallel::reduceGrads(Unit& u) {
  if (!u.flatGrad.defined()) return;
  // MPI reduces no 16-bit floats: there, 16-bit gradients are reduced in float32
  const bool widen = device_.is_cpu() && is_16bit_float(u.dtype);
  const Tensor whole = widen ? u.flatGrad.to(tensor::DType::Float32) : u.flatGrad;  // alive until the wait
  Tensor part = tensor::empty({u.shard}, whole.dtype(), device_);
  ++traffic_.reduceScatters;
  if (overlap_) {     // finished by finishReduce (Note [Overlapped collectives])
    finishReduce(u);  // one in flight per unit
    markCommReady();
    group_->reduceScatter(whole, part, ReduceOp::Avg, commStream_);
    if (!u.reduced) u.reduced = std::make_shared<tensor::cuda::Event>(device_.index);
    u.reduced->record(commStream_);
    ++traffic_.overlapped;
    u.reduceInput = whole;
    u.reduceOutput = part;
    u.pending = false;
    for (size_t i : u.params) bindGrad(params_[i], params_[i].gradHolder);
    u.flatGrad = Tensor();
    return;
  }
  group_->reduceScatter(whole, part, ReduceOp::Avg);
  if (device_.is_cpu()) group_->wait(device_, "the gradients' reduce-scatter");
  u.grad.add_(part.dtype() == u.masterDtype ? part : part.to(u.masterDtype));
  u.pending = false;
  if (options_.stage == 1) {
    u.flatGrad.zero_();
    return;
  }
  for (size_t i : u.params) bindGrad(params_[i], params_[i].gradHolder);
  u.flatGrad = Tensor();
}

void ShardedDataParallel::finishReduce(Unit& u) {
  if (!u.reduceOutput.defined()) return;
  u.reduced->block(tensor::cuda::stream(device_.index));
  const Tensor& part = u.reduceOutput;
  u.grad.add_(part.dtype() == u.masterDtype ? part : part.to(u.masterDtype));
  u.reduceInput = Tensor();  // freed after the compute stream's wait: its next user is ordered after
  u.reduceOutput = Tensor();
}

void ShardedDataParallel::finishReductions() {
  for (Unit& u : units_) finishReduce(u);
}

void ShardedDataParallel::settle() {
  if (!overlap_) return;
  finishReductions();
  for (Unit& u : units_) awaitGathered(u);
}

// NCCL: the collectives run in the compute stream's order and the host does not wait for them;
// the group's watchdog follows them (ProcessGroup::watch), so a lost rank or a stuck collective
// still aborts the group within its timeout and the next call here throws.
void ShardedDataParallel::watchDevice(const char* what) {
  if (device_.is_cuda()) group_->watch(tensor::cuda::stream(device_.index), what);
}

void ShardedDataParallel::notePeak() { peak_ = std::max(peak_, memory().total()); }

// A tied unit stays gathered for the pass's later users (Note [Tied parameters when sharding]).
void ShardedDataParallel::beforeForward(size_t block) {
  if (options_.stage != 3) return;
  const Block& k = blocks_[block];
  for (size_t u : k.uses) {
    gather(units_[u]);
    units_[u].prefetched = false;
  }
  if (overlap_) {  // the next block's all-gather beside this one's run (Note [Overlapped collectives])
    prefetchAfter(block);
    for (size_t u : k.uses) awaitGathered(units_[u]);
    watchComm("the parameters' all-gather");
  }
  notePeak();
}

void ShardedDataParallel::afterForward(size_t block, bool reversed) {
  if (options_.stage != 3) return;
  for (size_t u : blocks_[block].uses) {
    if (block == (reversed ? units_[u].firstUser : units_[u].lastUser)) release(units_[u]);
  }
}

void ShardedDataParallel::beforeBackward(size_t block) {
  const Block& k = blocks_[block];
  for (size_t u : k.uses) {
    if (options_.stage == 3) {
      gather(units_[u]);
      units_[u].prefetched = false;
    }
    bindGrads(units_[u]);
  }
  if (overlap_ && options_.stage == 3) {
    prefetchAfter(block);
    for (size_t u : k.uses) awaitGathered(units_[u]);
    watchComm("the parameters' all-gather");
  }
  notePeak();
}

void ShardedDataParallel::blockDone(size_t block) {
  if (!inBackward_ || options_.stage == 1) return;
  // The earlier blocks' reduce-scatters ran beside this block's backward, which the compute
  // stream has already been given (Note [Overlapped collectives])
  if (overlap_) finishReductions();
  for (size_t u : blocks_[block].uses) {
    if (block != units_[u].firstUser) continue;  // a tied unit: an earlier block's backward is to come
    if (noSync_) {
      units_[u].pending = units_[u].flatGrad.defined();
    } else {
      reduceGrads(units_[u]);
    }
  }
  if (overlap_) {
    watchComm("the gradients' reduce-scatter");
    notePeak();
  }
}

void ShardedDataParallel::afterBackward(size_t block) {
  if (options_.stage != 3) return;
  for (size_t u : blocks_[block].uses) {
    if (block == units_[u].firstUser) release(units_[u]);
  }
}

const Tensor& ShardedDataParallel::updateOutput(const Tensor& input) {
  group_->check("ShardedDataParallel::forward");
  const bool direct = !blocks_.empty() && blocks_[0].module == &module();
  beginPass(kForwardPass);
  try {
    if (direct) beforeForward(0);
    output = module().forward(input);
  } catch (...) {
    if (direct) afterForward(0);
    endPass(false);
    throw;
  }
  if (direct) afterForward(0);
  endPass(true);
  return output;
}

// Units gathered ahead for a block the pass then did not run (a network that runs its blocks
// out of module order): not kept beyond the pass (Note [Overlapped collectives]).
void ShardedDataParallel::releasePrefetched() {
  for (Unit& u : units_) {
    if (u.prefetched) release(u);
  }
}

const Tensor& ShardedDataParallel::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const bool direct = !blocks_.empty() && blocks_[0].module == &module();
  beginPass(kGradInputPass);
  try {
    if (direct) beforeForward(0);
    gradInput = module().updateGradInput(input, gradOutput);
  } catch (...) {
    if (direct) afterForward(0, true);
    endPass(false);
    throw;
  }
  if (direct) afterForward(0, true);
  endPass(true);
  return gradInput;
}

void ShardedDataParallel::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  group_->check("ShardedDataParallel::backward");
  const bool direct = !blocks_.empty() && blocks_[0].module == &module();
  inBackward_ = true;
  beginPass(kBackwardPass);
  try {
    if (direct) beforeBackward(0);
    module().accGradParameters(input, gradOutput, scale);
    if (direct) {
      blockDone(0);
      afterBackward(0);
    }
  } catch (...) {
    inBackward_ = false;
    endPass(false);
    throw;
  }
  endPass(true);
  finishBackward();
}

void ShardedDataParallel::backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) {
  group_->check("ShardedDataParallel::backward");
  const bool direct = !blocks_.empty() && blocks_[0].module == &module();
  inBackward_ = true;
  beginPass(kBackwardPass);
  try {
    if (direct) beforeBackward(0);
    gradInput = module().backward(input, gradOutput, scale);  // direct: its hook runs blockDone(0)
    if (direct) afterBackward(0);
  } catch (...) {
    inBackward_ = false;
    endPass(false);
    throw;
  }
  endPass(true);
  finishBackward();
}

void ShardedDataParallel::finishBackward() {
  inBackward_ = false;
  for (Unit& u : units_) {
    // stages 2, 3: a tied unit whose owner ran before another user (Note [Tied parameters when sharding])
    if (options_.stage == 1 || (u.tied() && u.flatGrad.defined() && !u.pending)) {
      if (noSync_)
        u.pending = true;
      else
        reduceGrads(u);
    }
  }
  notePeak();
  if (overlap_) {
    watchComm("the gradients' reduce-scatter");
    settle();
  }
  watchDevice("the gradients' reduce-scatter");
}

void ShardedDataParallel::zeroGradParameters() {
  settle();
  for (Unit& u : units_) {
    u.grad.zero_();
    u.pending = false;
    if (options_.stage == 1) {
      u.flatGrad.zero_();
    } else if (u.flatGrad.defined()) {
      for (size_t i : u.params) bindGrad(params_[i], params_[i].gradHolder);
      u.flatGrad = Tensor();
    }
  }
}

void ShardedDataParallel::setOptimizer(const OptimizerFactory& make) {
  const int r = group_->rank();
  std::vector<Tensor> params, grads;
  std::vector<Piece> pieces;
  for (Unit& u : units_) {
    const int64_t lo = r * u.shard, hi = lo + u.shard;
    for (size_t i : u.params) {
      const Param& p = params_[i];
      const int64_t a = std::max(lo, p.offset), b = std::min(hi, p.offset + p.numel);
      if (a >= b) continue;
      params.push_back(u.master.narrow(0, a - lo, b - a));
      grads.push_back(u.grad.narrow(0, a - lo, b - a));
      pieces.push_back(Piece{static_cast<size_t>(&u - units_.data()), i, a - lo, b - a});
    }
  }
  optimizer_.reset();
  pieces_.clear();
  if (!params.empty()) optimizer_ = make(std::move(params), std::move(grads));
  if (optimizer_) pieces_ = std::move(pieces);
  countOptimizerState();
  notePeak();
}

double ShardedDataParallel::clipGradNorm(double maxNorm, double normType) {
  if (!(maxNorm > 0) || !std::isfinite(maxNorm)) {
    throw tensor::Error(where("clipGradNorm") + "expected a finite maxNorm > 0, got " + std::to_string(maxNorm));
  }
  const bool inf = std::isinf(normType);
  if (normType != 2 && !inf) {
    throw tensor::Error(where("clipGradNorm") + "expected normType 2 or inf, got " + std::to_string(normType));
  }
  settle();
  // As nn::clipGradNorm: the sum of squares (or the largest |g|) in float64, here over this
  // rank's shards (the padding is zero), then over the ranks.
  double acc = 0;
  for (const Unit& u : units_) {
    const Tensor x = u.grad.to(tensor::Device::cpu(), tensor::DType::Float64).contiguous();
    const double* v = x.data<double>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double a = std::fabs(v[i]);
      acc = inf ? (std::isnan(a) || std::isnan(acc) ? a + acc : std::max(acc, a)) : acc + a * a;
    }
  }
  Tensor total = tensor::full({1}, acc, tensor::DType::Float64, device_);
  group_->allReduce(total, inf ? ReduceOp::Max : ReduceOp::Sum);
  group_->wait(device_, "the gradient norm's all-reduce");
  const double sum = total.item();
  const double norm = inf ? sum : std::sqrt(sum);
  const double coef = std::min(maxNorm / (norm + 1e-6), 1.0);
  if (!(coef == 1.0)) {
    for (Unit& u : units_) u.grad.mul_(coef);
  }
  return norm;
}

void ShardedDataParallel::checkReduced(const char* method) const {
  group_->check(method);
  for (const Unit& u : units_) {
    if (u.pending) {
      throw tensor::Error(where(method) + "expected the gradients reduce-scattered, got those of '" +
                          params_[u.params.front()].name +
                          "' still accumulated under noSync (run the last micro-batch's backward without it)");
    }
  }
}

void ShardedDataParallel::step() {
  checkReduced("step");
  settle();
  if (optimizer_) optimizer_->step();
  unscaled_ = false;
  countOptimizerState();
  syncParameters();
  notePeak();
}

// Note [One verdict for every rank]: GradScaler decides from the gradients it unscales, and
// each rank unscales only its shard, so an overflow in one rank's shard would skip the step
// (and back the scale off) there alone, and the replicas would part. So the ranks first agree,
// in one all-reduce (max), on whether any shard holds an Inf or NaN; where one does and this
// rank's shards do not, one element of them is made NaN before the scaler sees them: every
// scaler then finds the overflow, every optimizer skips the step (the poisoned gradient is
// never used: the next zeroGradParameters() clears it) and every scale backs off alike.
void ShardedDataParallel::unscale(nn::GradScaler& scaler) {
  checkReduced("unscale");
  settle();
  if (unscaled_) throw tensor::Error(where("unscale") + "expected one unscale() per step, got a second");
  if (scaler.enabled()) {
    double local = 0;
    for (const Unit& u : units_) {
      const Tensor x = u.grad.to(tensor::Device::cpu(), tensor::DType::Float64).contiguous();
      const double* v = x.data<double>();
      for (int64_t i = 0; i < x.numel() && local == 0; ++i) local = std::isfinite(v[i]) ? 0 : 1;
    }
    Tensor any = tensor::full({1}, local, tensor::DType::Float64, device_);
    group_->allReduce(any, ReduceOp::Max);
    group_->wait(device_, "the non-finite gradients' all-reduce");
    if (any.item() != 0 && local == 0) {
      for (Unit& u : units_) {
        if (u.shard == 0) continue;
        u.grad.narrow(0, 0, 1).fill_(std::nan(""));
        break;
      }
    }
  }
  std::vector<Tensor> grads;
  for (const Unit& u : units_) {
    if (u.shard > 0) grads.push_back(u.grad);
  }
  if (grads.empty()) grads.push_back(tensor::zeros({1}, tensor::DType::Float32, device_));  // the verdict needs one
  scaler.unscale(grads);
  unscaled_ = true;
}

bool ShardedDataParallel::step(nn::GradScaler& scaler) {
  checkReduced("step");
  settle();
  if (!unscaled_ && scaler.enabled()) unscale(scaler);
  unscaled_ = false;
  // The scaler steps the optimizer (and counts a skipped step); a rank without a piece has no
  // optimizer and follows the common verdict.
  const bool stepped = optimizer_ ? scaler.step(*optimizer_) : !(scaler.enabled() && scaler.foundInf());
  countOptimizerState();
  if (stepped) syncParameters();  // (on the scaler's device path a skip happens inside the kernels)
  notePeak();
  return stepped;
}

void ShardedDataParallel::syncParameters() {
  if (options_.stage == 3) return;
  const int r = group_->rank();
  for (Unit& u : units_) {
    Tensor own = u.flat.narrow(0, r * u.shard, u.shard);
    if (!own.is_same_view(u.master)) own.copy_(u.master);
    group_->allGather(own, u.flat);
    ++traffic_.allGathers;
  }
  if (device_.is_cpu() && !units_.empty()) group_->wait(device_, "the parameters' all-gather");
  watchDevice("the parameters' all-gather");
}

std::map<std::string, Tensor> ShardedDataParallel::fullStateDict() {
  std::map<std::string, Tensor> out;
  for (Unit& u : units_) {
    const bool gathered = u.flat.defined();
    gather(u);
    awaitGathered(u);
    for (size_t i : u.params) {
      const Param& p = params_[i];
      out[p.name] = u.flat.narrow(0, p.offset, p.numel).view(p.shape).clone();
      for (const auto& name : p.tiedNames) out[name] = out[p.name];  // one tensor, as stateDict()
    }
    if (!gathered) release(u);
  }
  for (auto& [name, b] : module().namedBuffers()) out[name] = b.clone();
  return out;
}

std::vector<Tensor> ShardedDataParallel::masterShards() const {
  std::vector<Tensor> out;
  for (const Unit& u : units_) out.push_back(u.master);
  return out;
}

std::vector<Tensor> ShardedDataParallel::gradientShards() const {
  std::vector<Tensor> out;
  for (const Unit& u : units_) out.push_back(u.grad);
  return out;
}

ShardedDataParallel::Memory ShardedDataParallel::memory() const {
  Memory m;
  std::set<const void*> seen;
  auto count = [&](const Tensor& t, size_t& into) {
    if (t.defined() && seen.insert(t.storage().get()).second) into += t.storage()->nbytes();
  };
  for (const Unit& u : units_) {
    count(u.flat, m.parameters);
    count(u.master, m.parameters);
    count(u.flatGrad, m.gradients);
    count(u.reduceInput, m.gradients);  // in flight (Note [Overlapped collectives])
    count(u.reduceOutput, m.gradients);
    count(u.grad, m.gradients);
  }
  m.optimizer = optimizerBytes_;
  return m;
}

// The optimizer's state changes only in its step and in a load: counted then, not at every
// block's gather (notePeak).
void ShardedDataParallel::countOptimizerState() {
  optimizerBytes_ = 0;
  if (!optimizer_) return;
  std::set<const void*> seen;
  for (const auto& [name, t] : optimizer_->stateDict()) {
    if (t.defined() && seen.insert(t.storage().get()).second) optimizerBytes_ += t.storage()->nbytes();
  }
}

size_t ShardedDataParallel::largestBlockBytes() const {
  const bool root = !blocks_.empty() && blocks_[0].module == &module();  // in use through every block's run
  size_t most = 0;
  for (size_t b = 0; b < blocks_.size(); ++b) {
    size_t bytes = 0;  // the units in use while it runs: its own, and tied ones (Note [Tied parameters when sharding])
    for (const Unit& u : units_) {
      if ((u.firstUser <= b && b <= u.lastUser) || (root && u.block == 0))
        bytes += 2 * static_cast<size_t>(u.padded) * tensor::itemsize(u.dtype);
    }
    most = std::max(most, bytes);
  }
  return most;
}

namespace {

const char* kCheckpointFormat = "cudnn-nn sharded checkpoint 1";

std::string shard_path(const std::string& dir, int64_t rank, int64_t world) {
  return dir + "/shard-" + std::to_string(rank) + "-of-" + std::to_string(world) + ".safetensors";
}

std::string unit_key(size_t unit, const std::string& name) { return tensor::detail::concat("u", unit, ".", name); }

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    const size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// A saved checkpoint: its manifest and its shard files, read on demand.
struct CheckpointReader {
  std::string dir, nonce;
  int64_t world = 0;
  tensor::Json manifest;
  std::map<int64_t, tensor::SafetensorsFile> files;
  std::string who;

  CheckpointReader(std::string d, std::string w) : dir(std::move(d)), who(std::move(w)) {
    const std::vector<uint8_t> bytes = tensor::read_file(dir + "/manifest.json", "dist.ShardedDataParallel");
    manifest = tensor::Json::parse(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                                   dir + "/manifest.json");
    if (manifest.at("format", "the manifest").as_string() != kCheckpointFormat) {
      throw tensor::Error(who + "expected a manifest of format '" + kCheckpointFormat + "' in " + dir + ", got '" +
                          manifest.at("format").as_string() + "'");
    }
    world = manifest.at("worldSize").as_int();
    nonce = manifest.at("nonce").as_string();
  }
  const tensor::SafetensorsFile& file(int64_t q) {
    auto it = files.find(q);
    if (it != files.end()) return it->second;
    tensor::SafetensorsFile f = tensor::load_safetensors(shard_path(dir, q, world));
    const auto n = f.metadata.find("nonce");
    if (n == f.metadata.end() || n->second != nonce) {
      throw tensor::Error(who + "expected " + shard_path(dir, q, world) + " of the save the manifest names (" + nonce +
                          "), got " + (n == f.metadata.end() ? std::string("no save") : "save " + n->second) +
                          " (a shard of another save?)");
    }
    return files.emplace(q, std::move(f)).first->second;
  }
  // Elements [begin, end) of unit `unit`'s flat tensor `key` ("master", a state name) into
  // `out` from `at` on, from the files that hold them; false when one lacks the key.
  bool read(size_t unit, int64_t numel, const std::string& key, int64_t begin, int64_t end, Tensor out, int64_t at) {
    const int64_t shard = (numel + world - 1) / world;
    end = std::min(end, numel);
    for (int64_t q = begin / std::max<int64_t>(shard, 1); q < world && q * shard < end; ++q) {
      const int64_t lo = std::max(begin, q * shard), hi = std::min(end, (q + 1) * shard);
      if (lo >= hi) continue;
      const auto& f = file(q);
      auto t = f.tensors.find(unit_key(unit, key));
      if (t == f.tensors.end()) return false;
      if (t->second.numel() != shard) {
        throw tensor::Error(tensor::detail::concat(who, "expected '", t->first, "' of ", shard, " elements in ",
                                                   shard_path(dir, q, world), ", got ", t->second.description()));
      }
      out.narrow(0, at + lo - begin, hi - lo).copy_(t->second.narrow(0, lo - q * shard, hi - lo));
    }
    return true;
  }
  // Elements [begin, end) of saved parameter k's `key`, wherever the saved units put them.
  bool readParam(size_t k, const std::string& key, int64_t begin, int64_t end, Tensor out, int64_t at) {
    const tensor::Json& p = manifest.at("params").as_array().at(k);
    const auto unit = static_cast<size_t>(p.at("unit").as_int());
    const int64_t offset = p.at("offset").as_int();
    const int64_t numel = manifest.at("units").as_array().at(unit).at("numel").as_int();
    return read(unit, numel, key, offset + begin, offset + end, out, at);
  }
  // The shard file holding element `e` of saved parameter k.
  const tensor::SafetensorsFile& fileOf(size_t k, int64_t e) {
    const tensor::Json& p = manifest.at("params").as_array().at(k);
    const int64_t numel =
        manifest.at("units").as_array().at(static_cast<size_t>(p.at("unit").as_int())).at("numel").as_int();
    return file((p.at("offset").as_int() + e) / ((numel + world - 1) / world));
  }
};

}  // namespace

void ShardedDataParallel::saveCheckpoint(const std::string& dir) {
  group_->check("ShardedDataParallel::saveCheckpoint");
  settle();
  const int r = group_->rank(), n = group_->worldSize();
  // rank 0's nonce names the save in every file (Note [Sharded checkpoints])
  Tensor nonce = tensor::empty({1}, tensor::DType::Int64, tensor::Device::cpu());
  nonce.data<int64_t>()[0] = static_cast<int64_t>(
      (std::random_device{}() ^ static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())) &
      0x7fffffffffffffffull);
  if (n > 1) {
    Tensor shared = nonce.to(device_);
    group_->broadcast(shared, 0);
    group_->wait(device_, "the checkpoint's nonce broadcast");
    nonce = shared.cpu();
  }
  const std::string tag = std::to_string(nonce.data<int64_t>()[0]);
  std::filesystem::create_directories(dir);
  std::map<std::string, Tensor> tensors;
  std::vector<std::string> stateNames;
  std::map<std::string, std::vector<Tensor>> stateFlat;  // name -> per unit [shard]
  if (optimizer_) {
    const auto state = optimizer_->stateDict();
    for (const auto& [key, t] : state) {
      const size_t dot = key.find('.');
      const size_t piece = std::stoul(key.substr(0, dot));
      const std::string name = key.substr(dot + 1);
      const Piece& pc = pieces_.at(piece);
      if (name == "step") {
        tensors["step." + std::to_string(pc.param)] = t.cpu().to(tensor::DType::Int64).reshape({1});
        continue;
      }
      auto& flats = stateFlat[name];
      if (flats.empty()) {
        stateNames.push_back(name);
        for (const Unit& u : units_) flats.push_back(tensor::zeros({u.shard}, u.masterDtype, tensor::Device::cpu()));
      }
      flats[pc.unit].narrow(0, pc.begin, pc.length).copy_(tensor::flat_view(t));
    }
  }
  for (size_t i = 0; i < units_.size(); ++i) {
    tensors[unit_key(i, "master")] = units_[i].master.cpu().contiguous();
    for (const auto& [name, flats] : stateFlat) tensors[unit_key(i, name)] = flats[i];
  }
  std::vector<std::string> bufferNames;
  for (auto& [name, b] : module().namedBuffers()) {
    bufferNames.push_back(name);
    if (r == 0) tensors["buffer." + name] = b.cpu().contiguous();
  }
  tensor::save_safetensors(shard_path(dir, r, n), tensors,
                           {{"nonce", tag}, {"rank", std::to_string(r)}, {"stateNames", join(stateNames)}});
  if (n > 1) group_->barrier();  // every shard is in before the manifest names them
  if (r == 0) {
    tensor::Json units = tensor::Json::Array{};
    for (const Unit& u : units_) {
      tensor::Json j = tensor::Json::Object{};
      j.set("dtype", tensor::name(u.dtype));
      j.set("masterDtype", tensor::name(u.masterDtype));
      j.set("numel", u.numel);
      units.push(std::move(j));
    }
    tensor::Json params = tensor::Json::Array{};
    for (const Param& p : params_) {
      tensor::Json j = tensor::Json::Object{};
      j.set("name", p.name);
      j.set("dtype", tensor::name(units_[p.unit].dtype));
      tensor::Json shape = tensor::Json::Array{};
      for (int64_t d : p.shape) shape.push(d);
      j.set("shape", std::move(shape));
      j.set("unit", static_cast<int64_t>(p.unit));
      j.set("offset", p.offset);
      if (!p.tiedNames.empty()) {  // its other paths (Note [Tied parameters when sharding])
        tensor::Json tied = tensor::Json::Array{};
        for (const auto& name : p.tiedNames) tied.push(name);
        j.set("tied", std::move(tied));
      }
      params.push(std::move(j));
    }
    tensor::Json buffers = tensor::Json::Array{};
    for (const auto& b : bufferNames) buffers.push(b);
    tensor::Json m = tensor::Json::Object{};
    m.set("format", kCheckpointFormat);
    m.set("worldSize", static_cast<int64_t>(n));
    m.set("stage", static_cast<int64_t>(options_.stage));
    m.set("nonce", tag);
    m.set("optimizer", optimizer_ ? optimizer_->type_name() : std::string());
    m.set("units", std::move(units));
    m.set("params", std::move(params));
    m.set("buffers", std::move(buffers));
    const std::string text = m.dump(1);
    tensor::write_file_atomic(dir + "/manifest.json", text.data(), text.size(), "dist.ShardedDataParallel");
  }
  if (n > 1) group_->barrier();
}

void ShardedDataParallel::loadCheckpoint(const std::string& dir) {
  group_->check("ShardedDataParallel::loadCheckpoint");
  settle();
  const std::string who = where("loadCheckpoint");
  CheckpointReader ck(dir, who);
  const auto& units = ck.manifest.at("units").as_array();
  const auto& params = ck.manifest.at("params").as_array();
  if (params.size() != params_.size()) {
    throw tensor::Error(tensor::detail::concat(who, "expected a checkpoint of ", params_.size(),
                                               " parameters (the same network), got ", params.size(), " in ", dir));
  }
  (void)units;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Param& p = params_[i];
    const tensor::Json& j = params[i];
    tensor::Shape shape;
    for (const auto& d : j.at("shape").as_array()) shape.push_back(d.as_int());
    if (j.at("name").as_string() != p.name || shape != p.shape ||
        j.at("dtype").as_string() != tensor::name(units_[p.unit].dtype)) {
      throw tensor::Error(who + "expected parameter " + std::to_string(i) + " '" + p.name + "' " +
                          tensor::name(units_[p.unit].dtype) + " " + shape_str(p.shape) + ", got '" +
                          j.at("name").as_string() + "' " + j.at("dtype").as_string() + " " + shape_str(shape) +
                          " in " + dir);
    }
  }
  const std::string savedOptimizer = ck.manifest.at("optimizer").as_string();
  if (optimizer_ && !savedOptimizer.empty() && savedOptimizer != optimizer_->type_name()) {
    throw tensor::Error(who + "expected the state of " + optimizer_->type_name() + ", got " + savedOptimizer +
                        "'s in " + dir);
  }
  const int r = group_->rank();
  // This rank's part [a, b) of parameter i (elements into the parameter), at `at` in its shard.
  struct Part {
    size_t param, unit;
    int64_t a, b, at;
  };
  std::vector<Part> parts;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Param& p = params_[i];
    const Unit& u = units_[p.unit];
    const int64_t lo = std::max(r * u.shard, p.offset), hi = std::min((r + 1) * u.shard, p.offset + p.numel);
    if (lo < hi) parts.push_back(Part{i, p.unit, lo - p.offset, hi - p.offset, lo - r * u.shard});
  }
  // Every value is read before any is written: a bad checkpoint changes nothing.
  std::vector<Tensor> masters;
  for (const Unit& u : units_) masters.push_back(tensor::zeros({u.shard}, u.masterDtype, tensor::Device::cpu()));
  for (const Part& pt : parts) ck.readParam(pt.param, "master", pt.a, pt.b, masters[pt.unit], pt.at);
  std::map<std::string, Tensor> optState;
  if (optimizer_) {
    std::vector<std::string> names;
    for (const Part& pt : parts) {
      for (const auto& name : split(ck.fileOf(pt.param, pt.a).metadata.at("stateNames"))) {
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      }
    }
    std::map<std::string, std::vector<Tensor>> states;  // name -> per unit [shard] on the CPU
    for (const auto& name : names) {
      auto& flats = states[name];
      for (const Unit& u : units_) flats.push_back(tensor::zeros({u.shard}, u.masterDtype, tensor::Device::cpu()));
      for (const Part& pt : parts) {
        if (!ck.readParam(pt.param, name, pt.a, pt.b, flats[pt.unit], pt.at)) {
          throw tensor::Error(who + "expected optimizer state '" + name + "' of parameter '" + params_[pt.param].name +
                              "' in " + dir + ", got a shard without it");
        }
      }
    }
    for (size_t k = 0; k < pieces_.size(); ++k) {
      const Piece& pc = pieces_[k];
      for (const auto& name : names) {
        optState[std::to_string(k) + "." + name] = states[name][pc.unit].narrow(0, pc.begin, pc.length).clone();
      }
      // the parameter's step counter, from the file holding this piece's first element
      const Unit& u = units_[pc.unit];
      const int64_t element = r * u.shard + pc.begin - params_[pc.param].offset;
      const auto& f = ck.fileOf(pc.param, element);
      auto step = f.tensors.find("step." + std::to_string(pc.param));
      if (step != f.tensors.end()) optState[std::to_string(k) + ".step"] = step->second.reshape({});
    }
    optimizer_->checkStateDict(optState);
  }
  std::map<std::string, Tensor> buffers;
  for (const auto& b : ck.manifest.at("buffers").as_array()) {
    const auto& f = ck.file(0);
    auto t = f.tensors.find("buffer." + b.as_string());
    if (t == f.tensors.end()) throw tensor::Error(who + "expected buffer '" + b.as_string() + "' in shard 0 of " + dir);
    buffers[b.as_string()] = t->second;
  }
  for (size_t i = 0; i < units_.size(); ++i) units_[i].master.copy_(masters[i]);
  if (optimizer_) optimizer_->loadStateDict(optState);
  countOptimizerState();
  for (auto& [name, b] : module().namedBuffers()) {
    auto it = buffers.find(name);
    if (it != buffers.end()) b.copy_(it->second);
  }
  zeroGradParameters();
  syncParameters();
}

ShardedDataParallel::FullCheckpoint ShardedDataParallel::readFullCheckpoint(const std::string& dir) {
  const std::string who = "dist.ShardedDataParallel::readFullCheckpoint: ";
  CheckpointReader ck(dir, who);
  FullCheckpoint out;
  out.worldSize = static_cast<int>(ck.world);
  const auto& units = ck.manifest.at("units").as_array();
  std::vector<Tensor> masters;
  std::map<std::string, std::vector<Tensor>> states;
  for (int64_t q = 0; q < ck.world; ++q) ck.file(q);
  std::vector<std::string> names;
  for (auto& [q, f] : ck.files) {
    for (const auto& name : split(f.metadata["stateNames"])) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  for (size_t i = 0; i < units.size(); ++i) {
    const int64_t numel = units[i].at("numel").as_int();
    const tensor::DType md = tensor::dtype_from_name(units[i].at("masterDtype").as_string());
    Tensor m = tensor::zeros({numel}, md, tensor::Device::cpu());
    ck.read(i, numel, "master", 0, numel, m, 0);
    masters.push_back(m);
    for (const auto& name : names) {
      Tensor t = tensor::zeros({numel}, md, tensor::Device::cpu());
      ck.read(i, numel, name, 0, numel, t, 0);
      states[name].push_back(t);
    }
  }
  const auto& params = ck.manifest.at("params").as_array();
  for (size_t k = 0; k < params.size(); ++k) {
    const tensor::Json& j = params[k];
    tensor::Shape shape;
    int64_t numel = 1;
    for (const auto& d : j.at("shape").as_array()) {
      shape.push_back(d.as_int());
      numel *= d.as_int();
    }
    const size_t unit = static_cast<size_t>(j.at("unit").as_int());
    const int64_t offset = j.at("offset").as_int();
    const tensor::DType dt = tensor::dtype_from_name(j.at("dtype").as_string());
    const Tensor value = masters.at(unit).narrow(0, offset, numel).to(dt).view(shape).clone();
    out.model[j.at("name").as_string()] = value;
    if (const tensor::Json* tied = j.find("tied")) {
      for (const auto& name : tied->as_array()) out.model[name.as_string()] = value;  // one tensor, as stateDict()
    }
    for (const auto& name : names) {
      out.optimizer[std::to_string(k) + "." + name] = states[name][unit].narrow(0, offset, numel).view(shape).clone();
    }
    for (auto& [q, f] : ck.files) {
      auto step = f.tensors.find("step." + std::to_string(k));
      if (step == f.tensors.end()) continue;
      out.optimizer[std::to_string(k) + ".step"] = step->second.reshape({});
      break;
    }
  }
  for (const auto& b : ck.manifest.at("buffers").as_array()) {
    const auto& f = ck.file(0);
    auto t = f.tensors.find("buffer." + b.as_string());
    if (t == f.tensors.end()) throw tensor::Error(who + "expected buffer '" + b.as_string() + "' in shard 0 of " + dir);
    out.model[b.as_string()] = t->second;
  }
  return out;
}

std::string ShardedDataParallel::str() const {
  return type_name() + " (stage " + std::to_string(options_.stage) + ", " + std::to_string(units_.size()) +
         " units over " + std::to_string(group_->worldSize()) +
         " ranks) {\n  (1): " + nn::indent_lines(module().str(), "  ") + "\n}";
}

}  // namespace dist
