// Module.cpp: device bridging, and everything derived from visitState().
#include "nn/Module.h"

#include <set>
#include <sstream>

namespace nn {

// Note [Device bridging]
// A network converted with an exclusion predicate mixes cudnn modules (CUDA tensors) with
// nn modules (CPU compute). forward()/backward() move such an nn module's input and
// gradOutput to the CPU and its results back to the input's device, so the network runs
// with transfers only at the boundaries. A cudnn module handed CPU tensors is not bridged:
// it throws, because silently copying every layer's input would hide a slow network.

const Tensor& Module::forward(const Tensor& input) {
  if (!input.defined()) throw Error(where("forward") + "input is undefined");
  if (input.is_cuda() && !computesOn(input.device())) {
    bridgedInput_ = input.to(Device::cpu());
    bridgedOutput_ = updateOutput(bridgedInput_).to(input.device());
    return bridgedOutput_;
  }
  return updateOutput(input);
}

// Note [Sums in the product's epilogue]
// A pre-norm block's residual sums (DecoderBlock: h = x + attn(ln_1(x)), y = h + mlp(ln_2(h)))
// were a pass each after the product that ends each branch. In a batch-1 decode step that pass
// is a launch over 768 numbers, about 2 us of the GPU's time twice a block (docs/performance.md,
// the decode trace), as long as the product's own arithmetic. forwardAdding hands the addend to
// the module that computes the branch, which adds it after its last product: nn after the
// product, exactly the sum the container took (a + x, the same IEEE addition); the cudnn twins in
// the few rows' kernel's epilogue (cudnn/kernels/FewRowsLinear.cu), before the one rounding to
// the 16-bit type, else as a pass after cuBLAS's product as before. The module's output is then
// the sum; no module that takes an addend reads its output in backward, so its gradients are
// those of the plain forward.
bool Module::takesAddend(const Tensor& input) const {
  return addsInForward() && input.defined() && !(input.is_cuda() && !computesOn(input.device()));
}

const Tensor& Module::forwardAdding(const Tensor& input, const Tensor& addend) {
  if (!input.defined()) throw Error(where("forwardAdding") + "input is undefined");
  if (!takesAddend(input)) {
    throw Error(where("forwardAdding") + "expected a module that adds in its forward on the input's device (" +
                input.device().str() + "; takesAddend), got " + type_name() +
                (addsInForward() ? ", which would bridge the input to its own device" : ", which has no such form"));
  }
  return updateOutputAdding(input, addend);
}

const Tensor& Module::updateOutputAdding(const Tensor& input, const Tensor& addend) {
  (void)input, (void)addend;
  throw Error(where("updateOutputAdding") + "expected a module that adds in its forward (addsInForward), got " +
              type_name());
}

void check_addend(const std::string& where, const Tensor& addend, const Shape& shape, const Tensor& like) {
  if (!addend.defined() || addend.sizes() != shape || addend.dtype() != like.dtype() ||
      addend.device() != like.device() || !addend.is_contiguous()) {
    throw Error(where + "expected a contiguous addend " + tensor::shape_str(shape) + " of " +
                tensor::name(like.dtype()) + " on " + like.device().str() + ", got " +
                (addend.defined() ? addend.description() + (addend.is_contiguous() ? "" : " (not contiguous)")
                                  : std::string("an undefined tensor")));
  }
}

// The table interface (Note [Tables] in nn/Value.cpp): a tensor goes through the tensor
// interface (bridging, hooks and the gradInput switch included) unless the module uses tables.
const Value& Module::forward(const Value& input) {
  if (input.isTensor() && !usesTables()) {
    outputValue = forward(input.tensorOrUndefined());
    return outputValue;
  }
  return updateOutputValue(input);
}

const Value& Module::updateOutputValue(const Value& input) {
  outputValue = forward(input.tensor(where("forward")));
  return outputValue;
}

const Value& Module::updateGradInputValue(const Value& input, const Value& gradOutput) {
  gradInputValue = updateGradInput(input.tensor(where("updateGradInput")),
                                   gradOutput.tensor(where("updateGradInput"), "gradOutput"));
  return gradInputValue;
}

void Module::accGradParametersValue(const Value& input, const Value& gradOutput, double scale) {
  accGradParameters(input.tensor(where("accGradParameters")),
                    gradOutput.tensor(where("accGradParameters"), "gradOutput"), scale);
}

void Module::backwardValueImpl(const Value& input, const Value& gradOutput, double scale) {
  updateGradInputValue(input, gradOutput);
  accGradParametersValue(input, gradOutput, scale);
}

const Value& Module::backward(const Value& input, const Value& gradOutput, double scale) {
  if (input.isTensor() && !usesTables()) {
    if (gradOutput.isTable()) {
      throw Error(where("backward") + "expected gradOutput to be a tensor, got " + gradOutput.description());
    }
    const Tensor& g = backward(input.tensorOrUndefined(), gradOutput.tensorOrUndefined(), scale);
    gradInputValue = g.defined() ? Value(g) : Value();
    return gradInputValue;
  }
  if (input.empty()) throw Error(where("backward") + "expected an input, got nothing");
  backwardValueImpl(input, gradOutput, scale);
  if (backwardHook_) backwardHook_(*this);
  return gradInputValue;
}

void Module::refuseTensorInterface(const char* method) const {
  throw Error(where(method) +
              "takes or gives a table, not one tensor: call forward(nn::Value) and backward(nn::Value, nn::Value)");
}

// Note [gradInput not needed]
// PyTorch skips the backward-data pass of a layer whose input needs no gradient (an image
// batch); a Torch-style backward always computed it, which is about 40 % of a first
// convolution's training step. setGradInputNeeded(false) says so per module. backward() then
// calls accGradParameters alone, for every leaf and so for every twin (the cudnn convolution's
// backward-data call included), and leaves gradInput empty, so a stale value cannot be read as
// a result and its memory goes back. Containers still run their backwardImpl: their children
// decide for themselves (setGradInputNeeded passed the flag to those that see the input),
// and a container without gradInput skips its own sums. A module whose parameter gradients
// need updateGradInput's work (parametersNeedGradInput) computes it anyway. A module before
// one without gradInput gets no gradOutput: backward() says so by name.

void Module::setGradInputNeeded(bool needed) { gradInputNeeded_ = needed; }
void Module::setFreeIntermediateGradients(bool on) { freeIntermediateGradients_ = on; }

void Module::backwardOrParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  if (gradInputNeeded_ || children() || parametersNeedGradInput()) {
    backwardImpl(input, gradOutput, scale);
    return;
  }
  accGradParameters(input, gradOutput, scale);
  gradInput = Tensor();
}

const Tensor& Module::backward(const Tensor& input, const Tensor& gradOutput, double scale) {
  if (!input.defined()) throw Error(where("backward") + "expected an input, got an undefined tensor");
  if (!gradOutput.defined()) {
    // Nothing to compute without an input gradient or parameters (a layout change at a network's
    // input, after a network that computes none: cudnn::autotune's wrapper)
    if (!gradInputNeeded_ && !children() && parameters().empty()) {
      gradInput = Tensor();
      if (backwardHook_) backwardHook_(*this);
      return gradInput;
    }
    throw Error(where("backward") +
                "expected a gradOutput, got an undefined tensor (does a module after this one have "
                "setGradInputNeeded(false)?)");
  }
  if (input.is_cuda() && !computesOn(input.device())) {
    if (!bridgedInput_.defined() || bridgedInput_.sizes() != input.sizes()) {
      bridgedInput_ = input.to(Device::cpu());
    }
    bridgedGradOutput_ = gradOutput.to(Device::cpu());
    backwardOrParameters(bridgedInput_, bridgedGradOutput_, scale);
    bridgedGradInput_ = gradInput.defined() ? gradInput.to(input.device()) : Tensor();
    if (backwardHook_) backwardHook_(*this);
    return bridgedGradInput_;
  }
  backwardOrParameters(input, gradOutput, scale);
  if (backwardHook_) backwardHook_(*this);
  return gradInput;
}

void Module::releaseActivations() {
  output = Tensor();
  outputValue = Value();
  bridgedInput_ = bridgedOutput_ = Tensor();
}

void Module::backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) {
  updateGradInput(input, gradOutput);
  accGradParameters(input, gradOutput, scale);
}

void Module::accGradParameters(const Tensor&, const Tensor&, double) {}

void Module::visitState(StateVisitor&) {}

void Module::visitTree(StateVisitor& visitor, const std::string& prefix) {
  struct Prefixed : StateVisitor {
    StateVisitor& inner;
    const std::string& prefix;
    Prefixed(StateVisitor& v, const std::string& p) : inner(v), prefix(p) {}
    void parameter(const std::string& n, Tensor& v, Tensor& g) override { inner.parameter(prefix + n, v, g); }
    void buffer(const std::string& n, Tensor& v) override { inner.buffer(prefix + n, v); }
  } prefixed(visitor, prefix);
  visitState(prefixed);
  if (auto* kids = children()) {
    for (size_t i = 0; i < kids->size(); ++i) {
      child_at(*this, *kids, i, "visitTree").visitTree(visitor, prefix + childName(i) + ".");
    }
  }
}

// Note [Tied parameters]
// Two modules may hold one parameter tensor (shareParameters, tieParameters): Torch's shared
// clones, a Siamese pair, a language model's head tied to its embedding. Tensors are handles,
// so a tie is two fields naming one storage, and each module's accGradParameters adds into
// the one gradient. What enumerates parameters for an optimizer, a gradient clip or a
// collective (parameters(), namedParameters() and their gradients) lists a tied tensor once,
// under its first path, or an optimizer would step it twice; stateDict() lists every path, as
// PyTorch's state_dict does, so a tied network's file loads into an untied one too. to()
// replaces tensors, so a container records its subtree's ties first and restores them after
// (rebuilding them only where a tie was there before); model files record tiedParameters() and
// tie again on load (convert/ModelFile.cpp). A tie is the identical view: same storage, offset,
// shape and strides.

namespace {
struct TensorKey {
  const void* storage;
  int64_t offset;
  Shape sizes, strides;
  auto operator<=>(const TensorKey&) const = default;
};
TensorKey key_of(const Tensor& t) { return {t.storage().get(), t.storage_offset(), t.sizes(), t.strides()}; }

// Collects the tree's tensors; `want` picks parameters, gradients or buffers. Parameters and
// their gradients come once per tensor (Note [Tied parameters]).
struct Collector : StateVisitor {
  enum Want { Params, Grads, Buffers, All } want;
  std::vector<std::pair<std::string, Tensor>> out;
  std::set<TensorKey> seen;
  explicit Collector(Want w) : want(w) {}
  void parameter(const std::string& n, Tensor& v, Tensor& g) override {
    if ((want == Params || want == Grads) && v.defined() && !seen.insert(key_of(v)).second) return;
    if (want == Params || want == All) out.emplace_back(n, v);
    if (want == Grads) out.emplace_back(n, g);
  }
  void buffer(const std::string& n, Tensor& v) override {
    if ((want == Buffers || want == All) && v.defined()) out.emplace_back(n, v);
  }
};

std::vector<Tensor> values_of(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<Tensor> out;
  out.reserve(named.size());
  for (const auto& [_, t] : named) out.push_back(t);
  return out;
}
}  // namespace

std::vector<std::pair<std::string, Tensor>> Module::namedParameters() {
  Collector c(Collector::Params);
  visitTree(c, "");
  return c.out;
}

std::vector<std::pair<std::string, Tensor>> Module::namedGradParameters() {
  Collector c(Collector::Grads);
  visitTree(c, "");
  return c.out;
}

std::vector<std::pair<std::string, Tensor>> Module::namedBuffers() {
  Collector c(Collector::Buffers);
  visitTree(c, "");
  return c.out;
}

std::vector<Tensor> Module::parameters() { return values_of(namedParameters()); }
std::vector<Tensor> Module::gradParameters() { return values_of(namedGradParameters()); }

std::map<std::string, Tensor> Module::stateDict() {
  Collector c(Collector::All);
  visitTree(c, "");
  return {c.out.begin(), c.out.end()};
}

namespace {
struct StateSlots : StateVisitor {
  std::map<std::string, Tensor*> slots;
  void parameter(const std::string& n, Tensor& v, Tensor&) override { slots[n] = &v; }
  void buffer(const std::string& n, Tensor& v) override {
    if (v.defined()) slots[n] = &v;
  }
};
}  // namespace

void Module::checkStateDict(const std::map<std::string, Tensor>& state, bool strict) {
  StateSlots targets;
  visitTree(targets, "");
  std::vector<std::string> problems;
  for (const auto& [name, slot] : targets.slots) {
    auto it = state.find(name);
    if (it == state.end()) {
      // batch norm's counter may be absent, as PyTorch allows (Note [num_batches_tracked] in
      // nn/BatchNormalization.h): older checkpoints and model files predate it
      const bool optional = name == "num_batches_tracked" || name.ends_with(".num_batches_tracked");
      if (strict && !optional) problems.push_back("missing '" + name + "' " + tensor::shape_str(slot->sizes()));
      continue;
    }
    if (it->second.sizes() != slot->sizes()) {
      problems.push_back("'" + name + "' has shape " + tensor::shape_str(it->second.sizes()) + ", expected " +
                         tensor::shape_str(slot->sizes()));
    } else if (tensor::is_floating(it->second.dtype()) != tensor::is_floating(slot->dtype())) {
      problems.push_back("'" + name + "' is " + tensor::name(it->second.dtype()) + ", expected " +
                         (tensor::is_floating(slot->dtype()) ? "a floating dtype" : tensor::name(slot->dtype())));
    }
  }
  if (strict) {
    for (const auto& [name, t] : state) {
      if (!targets.slots.count(name)) problems.push_back("unexpected '" + name + "' " + tensor::shape_str(t.sizes()));
    }
  }
  if (!problems.empty()) {
    std::ostringstream msg;
    msg << where("loadStateDict") << problems.size() << " mismatch" << (problems.size() > 1 ? "es" : "") << ":";
    for (const auto& p : problems) msg << "\n  " << p;
    throw Error(msg.str());
  }
}

void Module::loadStateDict(const std::map<std::string, Tensor>& state, bool strict) {
  checkStateDict(state, strict);
  StateSlots targets;
  visitTree(targets, "");
  for (const auto& [name, slot] : targets.slots) {
    auto it = state.find(name);
    if (it != state.end()) slot->copy_(it->second);
  }
}

namespace {
struct ParameterSlots : StateVisitor {
  std::vector<std::string> order;
  std::map<std::string, std::pair<Tensor*, Tensor*>> slots;
  void parameter(const std::string& n, Tensor& v, Tensor& g) override {
    order.push_back(n);
    slots[n] = {&v, &g};
  }
  void buffer(const std::string&, Tensor&) override {}
};

void check_tie(const std::string& where, const std::string& name, const Tensor& value, const Tensor& source) {
  if (!value.defined() || !source.defined() || value.sizes() != source.sizes() || value.dtype() != source.dtype() ||
      value.device() != source.device()) {
    throw Error(where + "expected '" + name + "' (" + (value.defined() ? value.description() : "undefined") +
                ") to match its source (" + (source.defined() ? source.description() : "undefined") +
                ") in shape, dtype and device");
  }
}

// Each group of slots holding one tensor, in visiting order (Note [Tied parameters]).
std::vector<std::vector<std::pair<Tensor*, Tensor*>>> tied_slots(ParameterSlots& slots,
                                                                 std::vector<std::vector<std::string>>* names) {
  std::map<TensorKey, size_t> group;
  std::vector<std::vector<std::pair<Tensor*, Tensor*>>> out;
  std::vector<std::vector<std::string>> found;
  for (const auto& n : slots.order) {
    auto [v, g] = slots.slots[n];
    if (!v->defined()) continue;
    auto [it, fresh] = group.emplace(key_of(*v), found.size());
    if (fresh) {
      found.push_back({});
      out.push_back({});
    }
    found[it->second].push_back(n);
    out[it->second].emplace_back(v, g);
  }
  std::vector<std::vector<std::pair<Tensor*, Tensor*>>> ties;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].size() < 2) continue;
    ties.push_back(out[i]);
    if (names) names->push_back(found[i]);
  }
  return ties;
}

// Restores ties recorded before a to(): every member takes its group's first tensors.
struct TieKeeper {
  ParameterSlots slots;
  std::vector<std::vector<std::pair<Tensor*, Tensor*>>> ties;
  explicit TieKeeper(const std::function<void(StateVisitor&)>& visit) {
    visit(slots);
    ties = tied_slots(slots, nullptr);
  }
  void restore() {
    for (auto& group : ties) {
      for (size_t i = 1; i < group.size(); ++i) {
        *group[i].first = *group[0].first;
        *group[i].second = *group[0].second;
      }
    }
  }
};
}  // namespace

void Module::shareParameters(Module& source) {
  ParameterSlots mine, theirs;
  visitTree(mine, "");
  source.visitTree(theirs, "");
  const std::string at = where("shareParameters");
  std::vector<std::string> problems;
  for (const auto& n : mine.order) {
    if (!theirs.slots.count(n)) problems.push_back("'" + n + "' is not a parameter of " + source.type_name());
  }
  for (const auto& n : theirs.order) {
    if (!mine.slots.count(n)) problems.push_back("'" + n + "' of " + source.type_name() + " is not a parameter here");
  }
  if (!problems.empty()) {
    std::string msg = at + "expected the parameters of " + source.type_name() + ", got " +
                      std::to_string(problems.size()) + " mismatch" + (problems.size() > 1 ? "es" : "") + ":";
    for (const auto& p : problems) msg += "\n  " + p;
    throw Error(msg);
  }
  for (const auto& n : mine.order) check_tie(at, n, *mine.slots[n].first, *theirs.slots[n].first);
  for (const auto& n : mine.order) {
    *mine.slots[n].first = *theirs.slots[n].first;
    *mine.slots[n].second = *theirs.slots[n].second;
  }
}

void Module::tieParameters(const std::string& name, const std::string& sourceName) {
  ParameterSlots slots;
  visitTree(slots, "");
  const std::string at = where("tieParameters");
  for (const std::string* n : {&name, &sourceName}) {
    if (!slots.slots.count(*n)) throw Error(at + "'" + *n + "' is not a parameter of this " + type_name());
  }
  auto [v, g] = slots.slots[name];
  auto [sv, sg] = slots.slots[sourceName];
  check_tie(at, name, *v, *sv);
  *v = *sv;
  *g = *sg;
}

std::vector<std::vector<std::string>> Module::tiedParameters() {
  ParameterSlots slots;
  visitTree(slots, "");
  std::vector<std::vector<std::string>> names;
  tied_slots(slots, &names);
  return names;
}

void Module::zeroGradParameters() {
  for (auto& [_, g] : namedGradParameters()) {
    if (g.defined()) g.zero_();
  }
}

void Module::train() {
  training_ = true;
  if (auto* kids = children()) {
    for (size_t i = 0; i < kids->size(); ++i) child_at(*this, *kids, i, "train").train();
  }
}

void Module::evaluate() {
  training_ = false;
  if (auto* kids = children()) {
    for (size_t i = 0; i < kids->size(); ++i) child_at(*this, *kids, i, "evaluate").evaluate();
  }
}

Module& Module::to(Device device) {
  if (auto* kids = children()) {
    TieKeeper ties([&](StateVisitor& v) { visitTree(v, ""); });  // Note [Tied parameters]
    for (size_t i = 0; i < kids->size(); ++i) child_at(*this, *kids, i, "to").to(device);
    ties.restore();
  }
  if (!computesOn(device)) return *this;
  struct Mover : StateVisitor {
    Device d;
    explicit Mover(Device dev) : d(dev) {}
    void parameter(const std::string&, Tensor& v, Tensor& g) override {
      if (v.defined()) v = v.to(d);
      if (g.defined()) g = g.to(d);
    }
    void buffer(const std::string&, Tensor& v) override {
      if (v.defined()) v = v.to(d);
    }
  } mover(device);
  visitState(mover);
  if (output.defined() && output.device() != device) output = Tensor();
  if (gradInput.defined() && gradInput.device() != device) gradInput = Tensor();
  outputValue = Value();
  gradInputValue = Value();
  device_ = device;
  return *this;
}

Module& Module::to(DType dtype) {
  if (auto* kids = children()) {
    TieKeeper ties([&](StateVisitor& v) { visitTree(v, ""); });  // Note [Tied parameters]
    for (size_t i = 0; i < kids->size(); ++i) child_at(*this, *kids, i, "to").to(dtype);
    ties.restore();
  }
  struct Caster : StateVisitor {
    DType t;
    explicit Caster(DType dt) : t(dt) {}
    void cast(Tensor& v) const {
      if (v.defined() && tensor::is_floating(v.dtype())) v = v.to(t);
    }
    void parameter(const std::string&, Tensor& v, Tensor& g) override {
      cast(v);
      cast(g);
    }
    void buffer(const std::string&, Tensor& v) override { cast(v); }
  } caster(dtype);
  visitState(caster);
  output = Tensor();
  gradInput = Tensor();
  outputValue = Value();
  gradInputValue = Value();
  return *this;
}

Module& Module::to(tensor::MemoryFormat format) {
  if (auto* kids = children()) {
    TieKeeper ties([&](StateVisitor& v) { visitTree(v, ""); });  // Note [Tied parameters]
    for (size_t i = 0; i < kids->size(); ++i) child_at(*this, *kids, i, "to").to(format);
    ties.restore();
  }
  if (format != tensor::MemoryFormat::Contiguous && !takesChannelsLastParameters()) return *this;
  struct Layout : StateVisitor {
    tensor::MemoryFormat f;
    explicit Layout(tensor::MemoryFormat fmt) : f(fmt) {}
    void lay(Tensor& v) const {
      if (v.defined() && (v.dim() == 4 || v.dim() == 5)) v = v.contiguous(f);
    }
    void parameter(const std::string&, Tensor& v, Tensor& g) override {
      lay(v);
      lay(g);
    }
    void buffer(const std::string&, Tensor&) override {}
  } layout(format);
  visitState(layout);
  return *this;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  fn(*this);
  if (auto* kids = children()) {
    for (size_t i = 0; i < kids->size(); ++i) child_at(*this, *kids, i, "apply").apply(fn);
  }
}

Module& child_at(const Module& parent, const std::vector<ModulePtr>& kids, size_t i, const char* method) {
  if (!kids.at(i)) {
    throw Error(parent.type_name() + "::" + method + ": module " + std::to_string(i + 1) + " of " +
                std::to_string(kids.size()) + " is nullptr (put into modules directly: add() refuses nullptr)");
  }
  return *kids[i];
}

void check_grad_output_shape(const std::string& where, const Shape& expected, const Tensor& gradOutput) {
  if (gradOutput.defined() && gradOutput.sizes() == expected) return;
  throw Error(where + "expected gradOutput of the output's shape " + tensor::shape_str(expected) + ", got " +
              (gradOutput.defined() ? tensor::shape_str(gradOutput.sizes()) : std::string("an undefined tensor")));
}

std::string indent_lines(const std::string& text, const std::string& pad) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += pad;
  }
  return out;
}

}  // namespace nn
