// Graph.h: nngraph's gModule: modules wired into a directed acyclic graph, with forward in
// topological order and backward in reverse, gradients summed where a node's output fans out.
// Build it by calling modules on nodes, then name the graph's inputs and outputs:
//   nn::Node x = nn::Input(), pos = nn::Input();
//   nn::Node tok = nn::call(std::make_shared<nn::Embedding>(256, 64), x);
//   nn::Node h = nn::call(std::make_shared<nn::CAddTable>(), {tok, pos});  // a table of two
//   auto g = std::make_shared<nn::Graph>(std::vector<nn::Node>{x, pos}, std::vector<nn::Node>{h});
// As in nngraph, a node with one input passes that input's value to its module, and a node with
// several passes the table of their values; node[i] (split(n)) is entry i of a node's output
// table (a SelectTable node). A graph with one input and one output takes and gives that value
// itself, so one of tensors is a module like any other (Sequential, convert, model files); with
// several, the input and the output are tables, in the order given. The graph's children are
// its modules in topological order (state paths "0.weight", ...); config() holds the wiring, so
// model files save and load it, and convert() replaces the children and keeps the wiring.
// A module sits at one node (Note [Graph wiring] in nn/Graph.cpp): a module keeps the state of
// its last forward for its backward, as
// every Torch module does. For weights used twice (a Siamese network), make a second module and
// tie it to the first with Module::shareParameters (nn/Module.h).
// Errors name the node ("node 3 (nn.Linear)") and its position. Prints its wiring; dot() gives
// Graphviz.
#pragma once

#include <map>
#include <memory>

#include "nn/Container.h"

namespace nn {

namespace detail {
struct NodeData;
}

// A node of a graph being built: a graph input (nn::Input()) or a module applied to nodes
// (nn::call). Nodes are handles: copies name the same node.
class Node {
 public:
  Node() = default;
  bool defined() const { return data_ != nullptr; }
  // Entry i (negative from the end) of this node's output table: a node of nn::SelectTable(i).
  Node operator[](int64_t i) const;
  // nngraph's split: entries 0 .. n-1 of this node's output table.
  std::vector<Node> split(size_t n) const;

 private:
  explicit Node(std::shared_ptr<detail::NodeData> d) : data_(std::move(d)) {}
  std::shared_ptr<detail::NodeData> data_;
  friend class Graph;
  friend Node Input();
  friend Node call(ModulePtr module, std::vector<Node> inputs);
};

// A new graph input.
Node Input();
// `module` applied to `input`'s value, or to the table of `inputs`' values (two or more).
Node call(ModulePtr module, Node input);
Node call(ModulePtr module, std::vector<Node> inputs);

class Graph : public Container {
 public:
  Graph(const std::vector<Node>& inputs, const std::vector<Node>& outputs);
  Graph(const Node& input, const Node& output) : Graph(std::vector<Node>{input}, std::vector<Node>{output}) {}

  // The tensor interface: a graph of one input and one output, both tensors.
  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  const Value& updateOutputValue(const Value& input) override;
  const Value& updateGradInputValue(const Value& input, const Value& gradOutput) override;
  void accGradParametersValue(const Value& input, const Value& gradOutput, double scale = 1.0) override;
  bool usesTables() const override { return inputs_.size() != 1 || outputs_.size() != 1; }

  size_t numInputs() const { return inputs_.size(); }
  size_t numOutputs() const { return outputs_.size(); }
  static constexpr std::string_view kTypeName = "nn.Graph";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;
  // The graph in Graphviz's dot language: one box per node, an edge per input.
  std::string dot() const;
  // {"nodes": [{"module": i, "inputs": [ids]}, ...], "inputs": [ids], "outputs": [ids]}:
  // node ids index "nodes"; an input node has no "module".
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config, std::vector<ModulePtr> children);

 protected:
  void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) override;
  void backwardValueImpl(const Value& input, const Value& gradOutput, double scale) override;
  bool childSeesInput(size_t i) const override;

 private:
  // One node, in topological order: a graph input (module < 0) or child `module` applied to
  // the nodes `inputs`. `consumers`: how many gradients reach its output (its uses as an input,
  // and as a graph output).
  struct Step {
    int64_t module = -1;
    std::vector<size_t> inputs;
    size_t consumers = 0;
  };
  Graph(std::vector<Step> steps, std::vector<size_t> inputs, std::vector<size_t> outputs,
        std::vector<ModulePtr> children);
  void finishWiring();  // consumers, and which children see the graph's input
  std::string nodeName(size_t id) const;

  std::vector<Step> steps_;
  std::vector<size_t> inputs_, outputs_;
  std::vector<bool> seesInput_;  // per child

  // The last forward's node values and each module's input; the last backward's gradients.
  std::vector<Value> values_, moduleInputs_, grads_;
  std::vector<size_t> received_;  // gradients summed into grads_[id] so far
  // Where a fanned-out tensor gradient is summed: the first gradient is held as it is, the
  // second summed with it into sums_[id] in one pass, later ones added there.
  std::vector<Tensor> sums_;
  std::vector<bool> owned_;                    // grads_[id] is this graph's own buffer (sums_ or a copy)
  std::multimap<const void*, size_t> heldBy_;  // this backward's held gradients: storage -> steps
  template <class Step_>
  void backwardPass(const Value& gradOutput, Step_ step);
  void receive(size_t id, const Value& g);
  void ownIfShared(size_t id);
};

}  // namespace nn
