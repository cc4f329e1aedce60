// Graph.cpp
#include "nn/Graph.h"

#include <map>
#include <set>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"
#include "nn/SelectTable.h"
#include "nn/TableModule.h"

namespace nn {

namespace detail {
struct NodeData {
  ModulePtr module;  // nullptr: a graph input
  std::vector<Node> inputs;
};
}  // namespace detail

// Note [Graph wiring]
// A graph is a list of steps in topological order: graph inputs (no module) and modules applied
// to earlier steps. It is checked once, where it is made (from nodes, or from a model file),
// so forward and backward only walk it: every module sits at exactly one step, every input is
// listed once and reaches an output, every step reaches an output, and a file's wiring has no
// cycle and no reference to a step it does not define. Backward walks the steps in reverse:
// a step's gradient is its one consumer's, aliased, or the sum of its consumers' (`consumers`
// counts them, a graph output counting as one), summed into a buffer the step keeps.

Node Node::operator[](int64_t i) const { return call(std::make_shared<SelectTable>(i), *this); }

std::vector<Node> Node::split(size_t n) const {
  std::vector<Node> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back((*this)[static_cast<int64_t>(i)]);
  return out;
}

Node Input() { return Node(std::make_shared<detail::NodeData>()); }

Node call(ModulePtr module, Node input) { return call(std::move(module), std::vector<Node>{std::move(input)}); }

Node call(ModulePtr module, std::vector<Node> inputs) {
  if (!module) throw Error("nn::call: expected a module, got nullptr");
  if (inputs.empty())
    throw Error("nn::call: expected at least one input node for " + module->type_name() + ", got none");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      throw Error("nn::call: input " + std::to_string(i) + " of " + module->type_name() +
                  " is an undefined node (make nodes with nn::Input() or nn::call)");
    }
  }
  auto d = std::make_shared<detail::NodeData>();
  d->module = std::move(module);
  d->inputs = std::move(inputs);
  return Node(std::move(d));
}

namespace {

struct Wiring {
  std::vector<std::pair<int64_t, std::vector<size_t>>> steps;  // module, inputs
  std::vector<size_t> inputs, outputs;
  std::vector<ModulePtr> children;
};

// Steps from nodes: the inputs first, then every node the outputs reach, depth first (so each
// after its inputs), iteratively (a deep graph must not overflow the stack).
Wiring wire(const std::vector<Node>& inputs, const std::vector<Node>& outputs,
            const std::function<std::shared_ptr<detail::NodeData>(const Node&)>& data) {
  const std::string at = std::string(Graph::kTypeName) + ": ";
  if (inputs.empty()) throw Error(at + "expected at least one input node, got none");
  if (outputs.empty()) throw Error(at + "expected at least one output node, got none");
  Wiring w;
  std::map<const detail::NodeData*, size_t> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto d = data(inputs[i]);
    if (!d) throw Error(at + "input " + std::to_string(i) + " is an undefined node");
    if (d->module) {
      throw Error(at + "input " + std::to_string(i) + " is not a graph input (it applies " + d->module->type_name() +
                  "): make inputs with nn::Input()");
    }
    if (!ids.emplace(d.get(), i).second) throw Error(at + "input " + std::to_string(i) + " is listed twice");
    w.steps.push_back({-1, {}});
    w.inputs.push_back(i);
  }
  std::map<const Module*, size_t> moduleAt;
  for (size_t o = 0; o < outputs.size(); ++o) {
    auto root = data(outputs[o]);
    if (!root) throw Error(at + "output " + std::to_string(o) + " is an undefined node");
    // (node, next input to visit)
    std::vector<std::pair<std::shared_ptr<detail::NodeData>, size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto& [d, next] = stack.back();
      if (ids.count(d.get())) {
        stack.pop_back();
        continue;
      }
      if (!d->module) {
        throw Error(at + "output " + std::to_string(o) +
                    " depends on an input node that is not among the graph's inputs: list it in `inputs`");
      }
      if (next < d->inputs.size()) {
        auto in = data(d->inputs[next++]);
        stack.emplace_back(in, 0);
        continue;
      }
      const size_t id = w.steps.size();
      std::vector<size_t> ins;
      for (const Node& n : d->inputs) ins.push_back(ids.at(data(n).get()));
      auto [it, fresh] = moduleAt.emplace(d->module.get(), id);
      if (!fresh) {
        throw Error(at + "module " + d->module->type_name() + " sits at two nodes (" + std::to_string(it->second) +
                    " and " + std::to_string(id) +
                    "): a module keeps its last forward's state for backward, so give the second use its own "
                    "module and tie their weights with Module::shareParameters");
      }
      w.steps.push_back({static_cast<int64_t>(w.children.size()), std::move(ins)});
      w.children.push_back(d->module);
      ids.emplace(d.get(), id);
      stack.pop_back();
    }
    w.outputs.push_back(ids.at(root.get()));
  }
  return w;
}

}  // namespace

Graph::Graph(const std::vector<Node>& inputs, const std::vector<Node>& outputs) {
  Wiring w = wire(inputs, outputs, [](const Node& n) { return n.data_; });
  for (auto& [module, ins] : w.steps) steps_.push_back({module, std::move(ins), 0});
  inputs_ = std::move(w.inputs);
  outputs_ = std::move(w.outputs);
  for (auto& c : w.children) add(std::move(c));
  finishWiring();
}

Graph::Graph(std::vector<Step> steps, std::vector<size_t> inputs, std::vector<size_t> outputs,
             std::vector<ModulePtr> children)
    : steps_(std::move(steps)), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {
  for (auto& c : children) add(std::move(c));
  finishWiring();
}

void Graph::finishWiring() {
  for (auto& s : steps_) s.consumers = 0;
  for (const auto& s : steps_) {
    for (size_t in : s.inputs) ++steps_[in].consumers;
  }
  for (size_t o : outputs_) ++steps_[o].consumers;
  std::set<size_t> graphInputs(inputs_.begin(), inputs_.end());
  seesInput_.assign(modules.size(), false);
  for (const auto& s : steps_) {
    if (s.module < 0) continue;
    bool all = true;
    for (size_t in : s.inputs) all = all && graphInputs.count(in);
    seesInput_[static_cast<size_t>(s.module)] = all;
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (steps_[inputs_[i]].consumers == 0) {
      throw Error(where("Graph") + "input " + std::to_string(i) + " is not connected to any output");
    }
  }
  values_.assign(steps_.size(), Value());
  moduleInputs_.assign(steps_.size(), Value());
  grads_.assign(steps_.size(), Value());
  received_.assign(steps_.size(), 0);
  sums_.assign(steps_.size(), Tensor());
  owned_.assign(steps_.size(), false);
}

bool Graph::childSeesInput(size_t i) const { return i < seesInput_.size() && seesInput_[i]; }

std::string Graph::nodeName(size_t id) const {
  const Step& s = steps_[id];
  if (s.module < 0) return "node " + std::to_string(id) + " (input)";
  const auto& m = modules[static_cast<size_t>(s.module)];
  return "node " + std::to_string(id) + " (" + (m ? m->type_name() : std::string("nullptr")) + ")";
}

const Value& Graph::updateOutputValue(const Value& input) {
  if (inputs_.size() > 1) {
    const Table& items = input.table(where("updateOutput"));
    if (items.size() != inputs_.size()) {
      throw Error(where("updateOutput") + "expected a table of " + std::to_string(inputs_.size()) +
                  " entries (one per graph input), got " + input.description());
    }
  } else if (input.empty()) {
    throw Error(where("updateOutput") + "expected an input, got nothing");
  }
  for (size_t k = 0; k < inputs_.size(); ++k) values_[inputs_[k]] = inputs_.size() == 1 ? input : input[k];
  for (size_t id = 0; id < steps_.size(); ++id) {
    const Step& s = steps_[id];
    if (s.module < 0) continue;
    if (s.inputs.size() == 1) {
      moduleInputs_[id] = values_[s.inputs[0]];
    } else {
      Table in(s.inputs.size());
      for (size_t j = 0; j < s.inputs.size(); ++j) in[j] = values_[s.inputs[j]];
      moduleInputs_[id] = std::move(in);
    }
    Module& m = child_at(*this, modules, static_cast<size_t>(s.module), "forward");
    try {
      values_[id] = m.forward(moduleInputs_[id]);
    } catch (const Error& e) {
      throw Error("In " + nodeName(id) + " of " + type_name() + ": " + e.what());
    }
  }
  if (outputs_.size() == 1) {
    outputValue = values_[outputs_[0]];
  } else {
    Table out(outputs_.size());
    for (size_t k = 0; k < outputs_.size(); ++k) out[k] = values_[outputs_[k]];
    outputValue = std::move(out);
  }
  output = outputValue.tensorOrUndefined();
  return outputValue;
}

// Note [Graph wiring]: a step's gradient is its one consumer's, held as it is, or the sum of
// its consumers': the first held as it is, the second summed with it into the step's own
// buffer in one pass (add_out), the rest added there. Only the graph's own buffers are written.
void Graph::receive(size_t id, const Value& g) {
  if (g.empty()) return;
  const size_t n = received_[id]++;
  if (n == 0) {
    grads_[id] = g;  // a module's gradInput, read before that module runs again
    owned_[id] = false;
    if (g.isTensor()) heldBy_.emplace(g.tensorOrUndefined().storage().get(), id);
    return;
  }
  if (!owned_[id]) {
    const Tensor& a = grads_[id].tensorOrUndefined();
    const Tensor& b = g.tensorOrUndefined();
    if (grads_[id].isTensor() && g.isTensor() && a.sizes() == b.sizes() && a.dtype() == b.dtype() &&
        a.device() == b.device()) {
      ensure(sums_[id], a.sizes(), a, tensor::suggest_memory_format(a));
      add_out(sums_[id], a, b);
      grads_[id] = sums_[id];
      owned_[id] = true;
      return;
    }
    grads_[id] = clone(grads_[id]);
    owned_[id] = true;
  }
  accumulate(grads_[id], g, where("backward"));
}

// One gradient tensor can be held by two steps (CAddTable hands its gradOutput to both
// entries). A module that writes into its gradOutput (an in-place ReLU) must not change it for a
// step that reads it later, a smaller one (steps run in reverse): that module gets a copy.
void Graph::ownIfShared(size_t id) {
  if (owned_[id] || !grads_[id].isTensor()) return;
  const Tensor& t = grads_[id].tensorOrUndefined();
  auto [first, last] = heldBy_.equal_range(t.storage().get());
  bool readLater = false;
  for (auto it = first; it != last; ++it) readLater = readLater || it->second < id;
  if (!readLater) return;
  ensure(sums_[id], t.sizes(), t, tensor::suggest_memory_format(t)).copy_(t);
  grads_[id] = sums_[id];
  owned_[id] = true;
}

template <class Step_>
void Graph::backwardPass(const Value& gradOutput, Step_ step) {
  if (outputValue.empty()) throw Error(where("backward") + "expected a forward() first");
  check_grad_structure(where("backward"), outputValue, gradOutput);
  std::fill(received_.begin(), received_.end(), 0);
  heldBy_.clear();
  for (size_t k = 0; k < outputs_.size(); ++k) receive(outputs_[k], outputs_.size() == 1 ? gradOutput : gradOutput[k]);
  const bool release = freesIntermediateGradients();
  for (size_t id = steps_.size(); id-- > 0;) {
    const Step& s = steps_[id];
    if (s.module < 0) continue;
    Module& m = child_at(*this, modules, static_cast<size_t>(s.module), "backward");
    const Value* gi = nullptr;
    try {
      if (received_[id] == 0) grads_[id] = Value();
      if (m.writesGradOutput()) ownIfShared(id);
      gi = &step(m, moduleInputs_[id], grads_[id]);
      if (!gi->empty() && s.inputs.size() > 1 && (!gi->isTable() || gi->size() != s.inputs.size())) {
        throw Error("expected a gradInput table of " + std::to_string(s.inputs.size()) + " entries, got " +
                    gi->description());
      }
    } catch (const Error& e) {
      throw Error("In " + nodeName(id) + " of " + type_name() + ": " + e.what());
    }
    if (!gi->empty()) {
      if (s.inputs.size() == 1) {
        receive(s.inputs[0], *gi);
      } else {
        for (size_t j = 0; j < s.inputs.size(); ++j) receive(s.inputs[j], (*gi)[j]);
      }
    }
    if (release) {  // Note [Freeing intermediate gradients] in Container.cpp
      grads_[id] = Value();
      sums_[id] = Tensor();
      m.releaseGradInput();
    }
  }
  if (inputs_.size() == 1) {
    gradInputValue = received_[inputs_[0]] ? grads_[inputs_[0]] : Value();
  } else {
    Table g(inputs_.size());
    for (size_t k = 0; k < inputs_.size(); ++k) g[k] = received_[inputs_[k]] ? grads_[inputs_[k]] : Value();
    gradInputValue = std::move(g);
  }
  gradInput = gradInputValue.tensorOrUndefined();
}

const Value& Graph::updateGradInputValue(const Value&, const Value& gradOutput) {
  backwardPass(gradOutput, [](Module& m, const Value& in, const Value& g) -> const Value& {
    return m.updateGradInputValue(in, g);
  });
  return gradInputValue;
}

void Graph::accGradParametersValue(const Value&, const Value& gradOutput, double scale) {
  check_grad_structure(where("accGradParameters"), outputValue, gradOutput);
  for (size_t id = steps_.size(); id-- > 0;) {
    const Step& s = steps_[id];
    if (s.module < 0) continue;
    if (received_[id] == 0 || grads_[id].empty()) {
      throw Error(where("accGradParameters") + "expected updateGradInput() first (" + nodeName(id) +
                  " has no gradient; setFreeIntermediateGradients frees them in backward())");
    }
    try {
      child_at(*this, modules, static_cast<size_t>(s.module), "accGradParameters")
          .accGradParametersValue(moduleInputs_[id], grads_[id], scale);
    } catch (const Error& e) {
      throw Error("In " + nodeName(id) + " of " + type_name() + ": " + e.what());
    }
  }
}

void Graph::backwardValueImpl(const Value&, const Value& gradOutput, double scale) {
  backwardPass(gradOutput, [scale](Module& m, const Value& in, const Value& g) -> const Value& {
    return m.backward(in, g, scale);
  });
}

const Tensor& Graph::updateOutput(const Tensor& input) {
  if (usesTables()) refuseTensorInterface("updateOutput");
  output = updateOutputValue(input).tensor(where("updateOutput"), "the output");
  return output;
}

const Tensor& Graph::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  if (usesTables()) refuseTensorInterface("updateGradInput");
  gradInput = updateGradInputValue(input, gradOutput).tensorOrUndefined();
  return gradInput;
}

void Graph::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  if (usesTables()) refuseTensorInterface("accGradParameters");
  accGradParametersValue(input, gradOutput, scale);
}

void Graph::backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) {
  if (usesTables()) refuseTensorInterface("backward");
  backwardValueImpl(input, gradOutput, scale);
}

namespace {
std::string ids_str(const std::vector<size_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", n" : "n") + std::to_string(ids[i]);
  return s;
}
std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out;
}
}  // namespace

std::string Graph::str() const {
  std::string s = type_name() + " {\n  inputs: " + ids_str(inputs_);
  for (size_t id = 0; id < steps_.size(); ++id) {
    const Step& st = steps_[id];
    if (st.module < 0) continue;
    const std::string args = ids_str(st.inputs);
    s += "\n  n" + std::to_string(id) + " = (" + std::to_string(st.module + 1) + ")(" +
         (st.inputs.size() > 1 ? "{" + args + "}" : args) + ")";
  }
  s += "\n  outputs: " + ids_str(outputs_);
  for (size_t i = 0; i < modules.size(); ++i) {
    s += "\n  (" + std::to_string(i + 1) + "): " + indent_lines(child_at(*this, modules, i, "str").str(), "  ");
  }
  return s + "\n}";
}

std::string Graph::dot() const {
  std::string s = "digraph \"" + type_name() + "\" {\n  node [shape=box];\n";
  for (size_t k = 0; k < inputs_.size(); ++k) {
    s += "  n" + std::to_string(inputs_[k]) + " [label=\"input " + std::to_string(k) + "\", shape=ellipse];\n";
  }
  for (size_t id = 0; id < steps_.size(); ++id) {
    const Step& st = steps_[id];
    if (st.module < 0) continue;
    const std::string text = child_at(*this, modules, static_cast<size_t>(st.module), "dot").str();
    const std::string first = text.substr(0, text.find('\n'));
    s += "  n" + std::to_string(id) + " [label=\"(" + std::to_string(st.module + 1) + ") " + dot_escape(first) +
         "\"];\n";
    for (size_t j = 0; j < st.inputs.size(); ++j) {
      s += "  n" + std::to_string(st.inputs[j]) + " -> n" + std::to_string(id) +
           (st.inputs.size() > 1 ? " [label=\"" + std::to_string(j) + "\"]" : "") + ";\n";
    }
  }
  for (size_t k = 0; k < outputs_.size(); ++k) {
    s += "  output" + std::to_string(k) + " [label=\"output " + std::to_string(k) + "\", shape=ellipse];\n";
    s += "  n" + std::to_string(outputs_[k]) + " -> output" + std::to_string(k) + ";\n";
  }
  return s + "}\n";
}

tensor::Json Graph::config() const {
  tensor::Json::Array nodes;
  for (const Step& st : steps_) {
    tensor::Json::Array ins;
    for (size_t in : st.inputs) ins.emplace_back(static_cast<int64_t>(in));
    tensor::Json::Object node;
    if (st.module >= 0) node.emplace_back("module", st.module);
    node.emplace_back("inputs", tensor::Json(std::move(ins)));
    nodes.emplace_back(std::move(node));
  }
  auto ids = [](const std::vector<size_t>& v) {
    tensor::Json::Array a;
    for (size_t i : v) a.emplace_back(static_cast<int64_t>(i));
    return tensor::Json(std::move(a));
  };
  return tensor::Json::Object{
      {"nodes", tensor::Json(std::move(nodes))}, {"inputs", ids(inputs_)}, {"outputs", ids(outputs_)}};
}

ModulePtr Graph::fromConfig(const tensor::Json& config, std::vector<ModulePtr> children) {
  ConfigReader r(config, kTypeName);
  const std::string at = std::string(kTypeName) + " config: ";
  const tensor::Json::Array& nodes = r.array("nodes");
  const tensor::Shape inputs = r.shape("inputs"), outputs = r.shape("outputs");
  const size_t n = nodes.size();
  auto node_ref = [&](int64_t id, const std::string& what) {
    if (id < 0 || static_cast<size_t>(id) >= n) {
      throw Error(at + what + " refers to node " + std::to_string(id) + ", which is not defined (" + std::to_string(n) +
                  " nodes)");
    }
    return static_cast<size_t>(id);
  };
  std::vector<Step> steps(n);
  for (size_t id = 0; id < n; ++id) {
    const std::string what = r.describe("nodes") + "[" + std::to_string(id) + "]";
    const auto& obj = nodes[id].as_object(what);
    for (const auto& [key, _] : obj) {
      if (key != "module" && key != "inputs")
        throw Error(at + "node " + std::to_string(id) + ": unknown key '" + key + "'");
    }
    if (const tensor::Json* m = nodes[id].find("module")) steps[id].module = m->as_int(what + ".module");
    const auto& ins = nodes[id].at("inputs", what).as_array(what + ".inputs");
    for (size_t j = 0; j < ins.size(); ++j) {
      steps[id].inputs.push_back(node_ref(ins[j].as_int(what + ".inputs"), "node " + std::to_string(id)));
    }
    if (steps[id].module < -1)
      throw Error(at + "node " + std::to_string(id) + " has module " + std::to_string(steps[id].module));
    if (steps[id].module >= 0 && steps[id].inputs.empty()) {
      throw Error(at + "node " + std::to_string(id) + " applies a module to no input");
    }
    if (steps[id].module < 0 && !steps[id].inputs.empty()) {
      throw Error(at + "node " + std::to_string(id) + " has inputs but no module");
    }
  }
  std::vector<size_t> ins, outs;
  std::set<size_t> listed;
  for (int64_t i : inputs) {
    const size_t id = node_ref(i, "inputs");
    if (steps[id].module >= 0) throw Error(at + "inputs lists node " + std::to_string(id) + ", which applies a module");
    if (!listed.insert(id).second) throw Error(at + "inputs lists node " + std::to_string(id) + " twice");
    ins.push_back(id);
  }
  for (size_t id = 0; id < n; ++id) {
    if (steps[id].module < 0 && !listed.count(id)) {
      throw Error(at + "node " + std::to_string(id) + " has no module and is not among the inputs");
    }
  }
  for (int64_t o : outputs) outs.push_back(node_ref(o, "outputs"));
  if (ins.empty()) throw Error(at + "expected at least one input, got none");
  if (outs.empty()) throw Error(at + "expected at least one output, got none");
  // a topological order, refusing cycles (depth first, iteratively)
  std::vector<int> state(n, 0);  // 0 new, 1 on the path, 2 placed
  std::vector<size_t> order;
  for (size_t root = 0; root < n; ++root) {
    std::vector<std::pair<size_t, size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      if (state[id] == 2) {
        stack.pop_back();
        continue;
      }
      state[id] = 1;
      if (next < steps[id].inputs.size()) {
        const size_t in = steps[id].inputs[next++];
        if (state[in] == 1) {
          std::string path;
          bool on = false;
          for (const auto& [p, _] : stack) {
            on = on || p == in;
            if (on) path += std::to_string(p) + " -> ";
          }
          throw Error(at + "the wiring has a cycle: node " + path + std::to_string(in));
        }
        if (state[in] == 0) stack.emplace_back(in, 0);
        continue;
      }
      state[id] = 2;
      order.push_back(id);
      stack.pop_back();
    }
  }
  // every node reaches an output
  std::vector<bool> live(n, false);
  std::vector<size_t> todo(outs.begin(), outs.end());
  while (!todo.empty()) {
    const size_t id = todo.back();
    todo.pop_back();
    if (live[id]) continue;
    live[id] = true;
    for (size_t in : steps[id].inputs) todo.push_back(in);
  }
  for (size_t id = 0; id < n; ++id) {
    if (!live[id]) throw Error(at + "node " + std::to_string(id) + " is not connected to any output");
  }
  r.finish();
  // what needs the children (a model file's validation stops at finish() above)
  std::vector<int> uses(children.size(), 0);
  for (size_t id = 0; id < n; ++id) {
    const int64_t m = steps[id].module;
    if (m < 0) continue;
    if (static_cast<size_t>(m) >= children.size()) {
      throw Error(at + "node " + std::to_string(id) + " applies module " + std::to_string(m) + ", but the graph has " +
                  std::to_string(children.size()) + " modules");
    }
    if (++uses[static_cast<size_t>(m)] > 1) {
      throw Error(at + "module " + std::to_string(m) + " sits at two nodes (a module sits at one)");
    }
  }
  for (size_t m = 0; m < children.size(); ++m) {
    if (!uses[m]) throw Error(at + "module " + std::to_string(m) + " is not used by any node");
  }
  // renumber in topological order
  std::vector<size_t> newId(n);
  for (size_t k = 0; k < n; ++k) newId[order[k]] = k;
  std::vector<Step> sorted(n);
  for (size_t k = 0; k < n; ++k) {
    sorted[k].module = steps[order[k]].module;
    for (size_t in : steps[order[k]].inputs) sorted[k].inputs.push_back(newId[in]);
  }
  for (auto& id : ins) id = newId[id];
  for (auto& id : outs) id = newId[id];
  return std::shared_ptr<Graph>(new Graph(std::move(sorted), std::move(ins), std::move(outs), std::move(children)));
}

}  // namespace nn
