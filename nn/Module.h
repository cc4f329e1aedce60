// Module.h: the base of every layer, with Torch's interface: forward = updateOutput,
// backward = updateGradInput + accGradParameters (accumulating, times `scale`).
// A module names its own state once in visitState(); parameters(), zeroGradParameters(),
// to(), stateDict() and loadStateDict() are derived from it here, for nn modules and their
// cudnn twins alike. Modules are moved, never copied: a twin is built by moving its nn
// module into it (docs/architecture.md, "Twins": conversion moves state, never re-derives it).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nn/Value.h"
#include "tensor/Json.h"
#include "tensor/Tensor.h"

namespace nn {

using tensor::Device;
using tensor::DType;
using tensor::Error;
using tensor::Shape;
using tensor::Tensor;

// Which module family computes: the CPU reference (nn) or cuDNN (cudnn).
enum class Backend { nn, cudnn };
inline constexpr Backend backend = Backend::nn;

class Module;
using ModulePtr = std::shared_ptr<Module>;

// What a module holds: parameters with their gradients, and buffers (running statistics).
struct StateVisitor {
  virtual ~StateVisitor() = default;
  virtual void parameter(const std::string& name, Tensor& value, Tensor& grad) = 0;
  virtual void buffer(const std::string& name, Tensor& value) = 0;
};

class Module {
 public:
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // ---- computation (Torch) ----
  // forward/backward also bridge devices: an nn module handed CUDA tensors computes on the
  // CPU and hands back tensors on the input's device (Note [Device bridging] in Module.cpp).
  const Tensor& forward(const Tensor& input);
  const Tensor& backward(const Tensor& input, const Tensor& gradOutput, double scale = 1.0);
  virtual const Tensor& updateOutput(const Tensor& input) = 0;
  virtual const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) = 0;
  virtual void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0);
  virtual void zeroGradParameters();

  // ---- a sum after the forward (Note [Sums in the product's epilogue] in Module.cpp) ----
  // forwardAdding(input, addend): output = forward(input) + addend, a container's residual sum
  // taken by the module itself, where takesAddend(input) says it can: a module whose forward ends
  // in a product (Linear, MultiheadAttention's output projection, SwiGLU's down projection, a
  // Sequential whose last child is one) adds the addend after it, and the cudnn twins in that
  // product's epilogue for a decode step's few rows, one pass fewer. The addend has the output's
  // shape, dtype and device, is contiguous and overlaps no tensor the forward reads or writes;
  // output is then the sum (backward does not read it). takesAddend is false where forward would
  // bridge devices or the module has no such form (addsInForward()): the caller runs forward()
  // and adds; forwardAdding throws there.
  bool takesAddend(const Tensor& input) const;
  const Tensor& forwardAdding(const Tensor& input, const Tensor& addend);
  virtual bool addsInForward() const { return false; }
  // forwardAdding's computation where addsInForward(); the base throws.
  virtual const Tensor& updateOutputAdding(const Tensor& input, const Tensor& addend);

  // ---- an activation in the product's epilogue (Note [Activations in the epilogue] in Sequential.cpp) ----
  // A Sequential offers each child the child after it. A module whose forward ends in a product
  // that can apply `next` (a pointwise activation) in its epilogue computes both here, its own
  // output and next's exactly as forward(input) then next.forward(output) leave them (the same
  // values and state, so both backwards run as after those calls), and returns true: the cudnn
  // Linear twin, a few 16-bit rows followed by a cudnn GELU. Otherwise (the default) it returns
  // false having computed nothing: the container runs the two forwards.
  virtual bool forwardThrough(const Tensor& input, Module& next) {
    (void)input, (void)next;
    return false;
  }

  // ---- tables (Note [Tables] in nn/Value.cpp) ----
  // forward and backward of a Value: a tensor or a table of values, for modules with several
  // inputs or outputs (ConcatTable, CAddTable, JoinTable, nn::Graph, ...). A module of one tensor
  // takes a Value holding one and runs the tensor interface above; results are also kept in
  // `outputValue` and `gradInputValue`. A module whose input or output is a table refuses the
  // tensor interface, naming forward(nn::Value).
  const Value& forward(const Value& input);
  const Value& backward(const Value& input, const Value& gradOutput, double scale = 1.0);
  virtual const Value& updateOutputValue(const Value& input);
  virtual const Value& updateGradInputValue(const Value& input, const Value& gradOutput);
  virtual void accGradParametersValue(const Value& input, const Value& gradOutput, double scale = 1.0);
  // True where backward may write into gradOutput's storage (the in-place modules: Torch's
  // ReLU(true) hands gradOutput back as gradInput, changed); a graph then gives such a module
  // a gradient of its own where another node holds the same tensor. Containers say true
  // unless they know better (Sequential asks its last child).
  virtual bool writesGradOutput() const { return false; }
  // True where this module's input or output is a table (table modules; containers holding one),
  // so a container must run it through the Value interface.
  virtual bool usesTables() const { return false; }

  // ---- gradInput switch (Note [gradInput not needed] in Module.cpp) ----
  // With false, backward() does not compute gradInput: it runs accGradParameters alone and
  // leaves gradInput empty (undefined). For the module that sees a network's input when that
  // input needs no gradient (its image batch): it removes the first layer's backward-data
  // pass. Containers pass it to the children that see their input (Sequential: the first;
  // Concat, Residual, SpatialTransformer: all), and to such children added later.
  // updateGradInput() called directly always computes. A module with this switch off and no
  // parameters (nothing to compute) takes an undefined gradOutput in backward().
  virtual void setGradInputNeeded(bool needed);
  bool gradInputNeeded() const { return gradInputNeeded_; }

  // ---- intermediate gradients (Note [Freeing intermediate gradients] in nn/Container.cpp) ----
  // With true, containers give their children's gradInput buffers back as soon as backward()
  // has used them, as PyTorch's autograd frees intermediate gradients: a step's peak memory
  // holds one layer's gradients, not all of them. The network's own gradInput stays; the
  // children's read empty after backward(), and accGradParameters() then needs
  // updateGradInput() first. Off by default (Torch keeps every gradInput). Set on a network,
  // it reaches every container inside it, and containers added later.
  virtual void setFreeIntermediateGradients(bool on);
  bool freesIntermediateGradients() const { return freeIntermediateGradients_; }
  // Drops gradInput (and, for a container whose gradInput is a child's, that child's too).
  virtual void releaseGradInput() {
    gradInput = Tensor();
    gradInputValue = Value();
  }
  // ---- forward state (activation checkpointing, nn::DecoderBlock::setActivationCheckpointing) ----
  // Drops what the last forward kept for backward: output and outputValue (and a bridged module's
  // copies) here; containers recurse into their children and drop their own records of the
  // children's inputs; a module that saves intermediates drops them too (MultiheadAttention's
  // projections, attention output and sdpa's saved state; the norms' statistics; SwiGLU's
  // projections; Dropout's mask), with the backward intermediates that only accGradParameters
  // reads alongside them. Parameters, their gradients, buffers and gradInput stay. A backward
  // without a new forward then throws naming the module and that a forward must come first
  // (Linear, whose backward reads nothing but its input, computes from the input it is handed);
  // it never reads released memory.
  virtual void releaseActivations();

  // ---- state ----
  std::vector<Tensor> parameters();
  std::vector<Tensor> gradParameters();
  std::vector<std::pair<std::string, Tensor>> namedParameters();      // "0.weight", ...
  std::vector<std::pair<std::string, Tensor>> namedGradParameters();  // same names
  std::vector<std::pair<std::string, Tensor>> namedBuffers();
  // Parameters and buffers by path; what model files hold.
  std::map<std::string, Tensor> stateDict();
  // Copies values into this module's tensors (converting dtype and device). With strict,
  // missing keys, unexpected keys and shape mismatches are all listed in one Error.
  void loadStateDict(const std::map<std::string, Tensor>& state, bool strict = true);
  // The checks of loadStateDict alone (names, shapes, floating or not), copying nothing.
  void checkStateDict(const std::map<std::string, Tensor>& state, bool strict = true);

  // ---- tied parameters (Note [Tied parameters] in nn/Module.cpp) ----
  // Makes every parameter of this subtree, and its gradient, the very tensors of `source`'s
  // parameter of the same path (Torch's share('weight', 'bias', 'gradWeight', 'gradBias')): a
  // Siamese network's second encoder, a decoder's head tied to its embedding. Both modules then
  // accumulate into one gradient. Throws, changing nothing, unless the paths, shapes, dtypes
  // and devices agree.
  void shareParameters(Module& source);
  // Parameter `name` (a path: "2.weight") made parameter `sourceName`'s tensors, checked alike.
  void tieParameters(const std::string& name, const std::string& sourceName);
  // Groups of parameter paths that hold one tensor, each group's first path first ({} if none).
  // parameters() and namedParameters() list such a tensor once, under its first path;
  // stateDict() lists every path, as PyTorch's state_dict does; to() keeps the ties.
  std::vector<std::vector<std::string>> tiedParameters();

  // ---- mode and placement ----
  virtual void train();
  virtual void evaluate();
  bool isTraining() const { return training_; }
  // Moves state to `device` where this module computes there (nn modules compute on the
  // CPU and keep their state there; cudnn twins compute on CUDA devices). Containers recurse.
  virtual Module& to(Device device);
  // Converts floating parameters, gradients and buffers (and later outputs) to `dtype`.
  virtual Module& to(DType dtype);
  // Lays out every parameter of 4 or 5 dimensions, and its gradient, in `format`, in the modules
  // that read such parameters in either layout (takesChannelsLastParameters: the convolutions);
  // PyTorch's model.to(memory_format=...). Values and shapes stay; ChannelsLast spares the cudnn
  // convolutions of a channels-last network a filter copy per pass and a gradient blend per
  // backward (Note [Channels-last filters] in cudnn/ops/conv_search.cpp). Like to(device), it
  // replaces the tensors: build the optimizer afterwards. Containers recurse.
  virtual Module& to(tensor::MemoryFormat format);
  virtual bool takesChannelsLastParameters() const { return false; }
  virtual bool computesOn(Device device) const { return device.is_cpu(); }
  Device device() const { return device_; }

  // ---- identity and printing ----
  virtual std::string type_name() const = 0;  // "nn.ReLU", "cudnn.ReLU"
  virtual std::string str() const { return type_name(); }
  // "<type_name>::<method>: " for error messages
  std::string where(const char* method) const { return type_name() + "::" + method + ": "; }
  virtual Backend backendKind() const { return Backend::nn; }
  // The constructor arguments and every option that changes behaviour, as a JSON object
  // (Linear: {"inputSize": 4, "outputSize": 3, "bias": true}); each module type also has a
  // static fromConfig() that rebuilds it (children, parameters and buffers not included).
  // Model files (convert/ModelFile.h) are made of these.
  virtual tensor::Json config() const { return tensor::Json::Object{}; }

  // ---- tree ----
  // A container's children (the slots convert() replaces), nullptr for a leaf.
  virtual std::vector<ModulePtr>* children() { return nullptr; }
  // Child i's name in state paths: its position ("0.weight") unless the container names its
  // children as PyTorch's modules do ("self_attn.in_proj_weight").
  virtual std::string childName(size_t i) const { return std::to_string(i); }
  // Calls fn on this module, then on every descendant, depth first.
  void apply(const std::function<void(Module&)>& fn);

  // ---- hooks ----
  // Called at the end of backward(), once this module's gradients (and its children's) are
  // accumulated: DistributedDataParallel launches a gradient all-reduce from it while the
  // rest of the network's backward still runs. One hook per module; an empty one clears it.
  void setBackwardHook(std::function<void(Module&)> hook) { backwardHook_ = std::move(hook); }

  Tensor output;
  Tensor gradInput;
  Value outputValue;     // forward(const Value&)'s result
  Value gradInputValue;  // backward(const Value&, ...)'s result

 protected:
  Module() = default;
  Module(Module&&) = default;  // for twins: cudnn::X(nn::X&& m) : nn::X(std::move(m)) {}
  Module& operator=(Module&&) = delete;

  // backward() minus the device bridging; containers override it to call their children's
  // backward() once instead of updateGradInput and accGradParameters separately.
  virtual void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale);
  // backward(const Value&, ...) minus the hook: updateGradInputValue then accGradParametersValue;
  // containers of tables override it to call their children's backward() once.
  virtual void backwardValueImpl(const Value& input, const Value& gradOutput, double scale);
  // The error of a table module's tensor interface: "<where>takes a table ...: call forward(nn::Value)".
  [[noreturn]] void refuseTensorInterface(const char* method) const;
  // True where accGradParameters needs updateGradInput's work first (the recurrent modules:
  // the weight gradients come out of the same pass); such a module computes gradInput even
  // when it is not needed.
  virtual bool parametersNeedGradInput() const { return false; }
  // Names this module's own parameters and buffers (not its children's).
  virtual void visitState(StateVisitor& visitor);
  // Every tensor of the subtree, with its path.
  void visitTree(StateVisitor& visitor, const std::string& prefix);

  bool training_ = true;
  Device device_ = Device::cpu();

 private:
  bool gradInputNeeded_ = true;
  bool freeIntermediateGradients_ = false;
  // backwardImpl, or accGradParameters alone where gradInput is not needed
  void backwardOrParameters(const Tensor& input, const Tensor& gradOutput, double scale);
  Tensor bridgedInput_, bridgedOutput_, bridgedGradOutput_, bridgedGradInput_;
  std::function<void(Module&)> backwardHook_;
};

// kids[i] of `parent`, or an Error naming the parent, `method` and the position when it is
// nullptr: a container's `modules` is public (convert() replaces children through it), so a
// nullptr can be put there directly, past add()'s check.
Module& child_at(const Module& parent, const std::vector<ModulePtr>& kids, size_t i, const char* method);

// The check of a module whose output has a known shape: throws "<where>expected gradOutput of the
// output's shape [2 x 3], got [2 x 4]" (or "got an undefined tensor").
void check_grad_output_shape(const std::string& where, const Shape& expected, const Tensor& gradOutput);

// forwardAdding's check of its addend: defined, `shape`, like's dtype and device, contiguous;
// throws "<where>expected a contiguous addend [2 x 3] of float32 on cpu, got ...".
void check_addend(const std::string& where, const Tensor& addend, const Shape& shape, const Tensor& like);

// Torch's printing helpers: containers indent their children's lines.
std::string indent_lines(const std::string& text, const std::string& pad);

}  // namespace nn
