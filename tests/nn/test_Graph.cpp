// test_Graph.cpp: nn::Graph (nngraph's gModule): forward and backward through wiring with
// several inputs and outputs, fan-out (gradients summed), table nodes and node[i]; the same
// network as nested containers gives the same numbers; printing, dot, config round trips and
// the errors of bad wiring, from nodes and from configs.
#include <doctest/doctest.h>

#include "nn/CAddTable.h"
#include "nn/CMulTable.h"
#include "nn/ConcatTable.h"
#include "nn/Embedding.h"
#include "nn/Graph.h"
#include "nn/Identity.h"
#include "nn/JoinTable.h"
#include "nn/Linear.h"
#include "nn/ReLU.h"
#include "nn/Sequential.h"
#include "nn/SplitTable.h"
#include "nn/Tanh.h"
#include "tests/support/GradCheck.h"

using namespace tensor;
using namespace testing;
using nn::Node;
using nn::Table;
using nn::Value;

namespace {
Tensor u(const Shape& s, Generator& gen) { return uniform(s, -1, 1, gen, DType::Float64); }

template <class M, class... A>
std::shared_ptr<M> f64(A&&... a) {
  auto m = std::make_shared<M>(std::forward<A>(a)...);
  m->to(DType::Float64);
  return m;
}

// x -> linear -> tanh -> (+ x) : a residual block as a graph
std::shared_ptr<nn::Graph> residual(const std::shared_ptr<nn::Linear>& linear) {
  Node x = nn::Input();
  Node h = nn::call(std::make_shared<nn::Tanh>(), nn::call(linear, x));
  return std::make_shared<nn::Graph>(x, nn::call(std::make_shared<nn::CAddTable>(), {h, x}));
}
}  // namespace

TEST_CASE("a graph equals the same network written as Sequential + ConcatTable, forward and backward") {
  Generator gen(1);
  manual_seed(1);
  auto linear = f64<nn::Linear>(4, 4);
  auto g = residual(linear);
  const Tensor x = u({3, 4}, gen), go = u({3, 4}, gen);
  const Tensor y = g->forward(x).clone();
  g->zeroGradParameters();
  const Tensor gx = g->backward(x, go).clone();
  const Tensor gw = linear->gradWeight.clone();

  auto seq = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::ConcatTable>(std::initializer_list<nn::ModulePtr>{
          std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{linear, std::make_shared<nn::Tanh>()}),
          std::make_shared<nn::Identity>()}),
      std::make_shared<nn::CAddTable>()});
  CHECK(max_abs_diff(seq->forward(x), y) == 0);
  seq->zeroGradParameters();
  CHECK(max_abs_diff(seq->backward(x, go), gx) == 0);
  CHECK(max_abs_diff(linear->gradWeight, gw) == 0);
  expect_gradients_ok(*g, x);
  expect_accumulation_ok(*g, x);
  // a graph of tensors is a module like any other: inside a Sequential, with the tensor interface
  auto outer = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{g, f64<nn::Linear>(4, 2)});
  expect_gradients_ok(*outer, x);
}

TEST_CASE("several inputs and outputs, fan-out, table nodes and node[i]") {
  Generator gen(2);
  manual_seed(2);
  Node a = nn::Input(), b = nn::Input();
  Node ha = nn::call(f64<nn::Linear>(3, 4), a);
  Node both = nn::call(std::make_shared<nn::ConcatTable>(
                           std::initializer_list<nn::ModulePtr>{f64<nn::Tanh>(), std::make_shared<nn::Identity>()}),
                       ha);
  // ha fans out to `both` and to the product; both[0] and both[1] select from a table node
  Node prod = nn::call(std::make_shared<nn::CMulTable>(), {both[0], ha, b});
  Node sum = nn::call(std::make_shared<nn::CAddTable>(), {both[1], b});
  auto g = std::make_shared<nn::Graph>(std::vector<Node>{a, b}, std::vector<Node>{prod, sum});
  CHECK(g->usesTables());
  CHECK(g->numInputs() == 2);
  const Tensor xa = u({2, 3}, gen), xb = u({2, 4}, gen);
  const Value& out = g->forward(Table{xa, xb});
  REQUIRE(out.size() == 2);
  const Tensor h = std::dynamic_pointer_cast<nn::Linear>(g->get(0))->forward(xa).clone();
  CHECK(max_abs_diff(out[0].tensor(""), h.tanh() * h * xb) < 1e-15);
  CHECK(max_abs_diff(out[1].tensor(""), h + xb) < 1e-15);
  expect_gradients_ok(*g, Table{xa, xb});
  CHECK_THROWS_WITH_AS(g->forward(xa),
                       "nn.Graph::updateOutput: takes or gives a table, not one tensor: call forward(nn::Value) and "
                       "backward(nn::Value, nn::Value)",
                       Error);
  CHECK_THROWS_WITH_AS(g->forward(Table{xa}),
                       "nn.Graph::updateOutput: expected a table of 2 entries (one per graph input), got table "
                       "{float64 [2 x 3] on cpu}",
                       Error);
  // a child's error names the node and its module
  CHECK_THROWS_WITH_AS(g->forward(Table{u({2, 5}, gen), xb}), doctest::Contains("In node 2 (nn.Linear) of nn.Graph: "),
                       Error);
  // split: entries of a table node
  Node x = nn::Input();
  std::vector<Node> parts = nn::call(std::make_shared<nn::SplitTable>(1), x).split(3);
  auto joined = std::make_shared<nn::Graph>(
      x, nn::call(std::make_shared<nn::JoinTable>(0), {parts[2], nn::call(f64<nn::Tanh>(), parts[0])}));
  const Tensor xs = u({2, 3}, gen);
  CHECK(max_abs_diff(joined->forward(xs), cat({xs.select(1, 2), xs.select(1, 0).tanh()}, 0)) < 1e-15);
  expect_gradients_ok(*joined, xs);
}

TEST_CASE("a graph's state paths, training mode, gradInput switch and freed gradients") {
  manual_seed(3);
  Generator gen(3);
  auto first = f64<nn::Linear>(4, 4);
  auto g = residual(first);
  CHECK(g->namedParameters()[0].first == "0.weight");
  g->evaluate();
  CHECK(!first->isTraining());
  g->train();
  // the first Linear sees the graph's input alone: it takes the switch; the sum does not
  g->setGradInputNeeded(false);
  CHECK(!first->gradInputNeeded());
  CHECK(g->get(2)->gradInputNeeded());
  g->setGradInputNeeded(true);
  const Tensor x = u({2, 4}, gen);
  g->setFreeIntermediateGradients(true);
  g->forward(x);
  g->backward(x, ones({2, 4}, DType::Float64));
  CHECK(g->gradInput.defined());
  CHECK(first->gradInput.defined() == false);
  CHECK_THROWS_WITH_AS(g->accGradParameters(x, ones({2, 4}, DType::Float64)),
                       doctest::Contains("expected updateGradInput() first"), Error);
}

TEST_CASE("a graph prints its wiring and writes Graphviz") {
  auto g = residual(std::make_shared<nn::Linear>(4, 4));
  CHECK(g->str() ==
        "nn.Graph {\n  inputs: n0\n  n1 = (1)(n0)\n  n2 = (2)(n1)\n  n3 = (3)({n2, n0})\n  outputs: n3\n"
        "  (1): nn.Linear(4 -> 4)\n  (2): nn.Tanh\n  (3): nn.CAddTable\n}");
  CHECK(g->dot() ==
        "digraph \"nn.Graph\" {\n  node [shape=box];\n  n0 [label=\"input 0\", shape=ellipse];\n"
        "  n1 [label=\"(1) nn.Linear(4 -> 4)\"];\n  n0 -> n1;\n  n2 [label=\"(2) nn.Tanh\"];\n  n1 -> n2;\n"
        "  n3 [label=\"(3) nn.CAddTable\"];\n  n2 -> n3 [label=\"0\"];\n  n0 -> n3 [label=\"1\"];\n"
        "  output0 [label=\"output 0\", shape=ellipse];\n  n3 -> output0;\n}\n");
}

TEST_CASE("a graph rebuilt from its config and children computes the same") {
  Generator gen(4);
  manual_seed(4);
  auto linear = f64<nn::Linear>(4, 4);
  auto g = residual(linear);
  auto back =
      nn::Graph::fromConfig(g->config(), {linear, std::make_shared<nn::Tanh>(), std::make_shared<nn::CAddTable>()});
  const Tensor x = u({2, 4}, gen);
  CHECK(max_abs_diff(back->forward(x), g->forward(x)) == 0);
  CHECK(back->str() == g->str());
}

TEST_CASE("bad wiring from nodes is refused, naming the node or the position") {
  auto lin = std::make_shared<nn::Linear>(4, 4);
  Node x = nn::Input(), y = nn::Input();
  Node h = nn::call(lin, x);
  CHECK_THROWS_WITH_AS(nn::Graph(std::vector<Node>{x}, std::vector<Node>{nn::call(lin, h)}),
                       doctest::Contains("nn.Graph: module nn.Linear sits at two nodes (1 and 2)"), Error);
  CHECK_THROWS_WITH_AS(nn::Graph(x, nn::call(std::make_shared<nn::CAddTable>(), {h, y})),
                       "nn.Graph: output 0 depends on an input node that is not among the graph's inputs: list it in "
                       "`inputs`",
                       Error);
  CHECK_THROWS_WITH_AS(nn::Graph(std::vector<Node>{x, y}, std::vector<Node>{h}),
                       "nn.Graph::Graph: input 1 is not connected to any output", Error);
  CHECK_THROWS_WITH_AS(nn::Graph(std::vector<Node>{h}, std::vector<Node>{h}),
                       "nn.Graph: input 0 is not a graph input (it applies nn.Linear): make inputs with nn::Input()",
                       Error);
  CHECK_THROWS_WITH_AS(nn::Graph(std::vector<Node>{x, x}, std::vector<Node>{h}), "nn.Graph: input 1 is listed twice",
                       Error);
  CHECK_THROWS_WITH_AS(nn::call(nullptr, x), "nn::call: expected a module, got nullptr", Error);
  CHECK_THROWS_WITH_AS(nn::call(lin, Node()),
                       "nn::call: input 0 of nn.Linear is an undefined node (make nodes with nn::Input() or nn::call)",
                       Error);
  CHECK_THROWS_WITH_AS(nn::Graph(std::vector<Node>{}, std::vector<Node>{h}),
                       "nn.Graph: expected at least one input node, got none", Error);
}

TEST_CASE("bad wiring in a config is refused: cycles, undefined nodes, unused or shared modules") {
  auto children = [] { return std::vector<nn::ModulePtr>{std::make_shared<nn::Tanh>(), std::make_shared<nn::ReLU>()}; };
  auto config = [](const std::string& nodes, const std::string& inputs = "[0]", const std::string& outputs = "[2]") {
    return Json::parse(R"({"nodes": )" + nodes + R"(, "inputs": )" + inputs + R"(, "outputs": )" + outputs + "}");
  };
  const std::string good = R"([{"inputs": []}, {"module": 0, "inputs": [0]}, {"module": 1, "inputs": [1]}])";
  CHECK(nn::Graph::fromConfig(config(good), children())->forward(ones({2})).sizes() == Shape{2});
  // stored out of topological order: reordered
  CHECK(nn::Graph::fromConfig(
            config(R"([{"inputs": []}, {"module": 1, "inputs": [2]}, {"module": 0, "inputs": [0]}])", "[0]", "[1]"),
            children())
            ->forward(ones({2}))
            .sizes() == Shape{2});
  CHECK_THROWS_WITH_AS(
      nn::Graph::fromConfig(config(R"([{"inputs": []}, {"module": 0, "inputs": [2]}, {"module": 1, "inputs": [1]}])"),
                            children()),
      "nn.Graph config: the wiring has a cycle: node 1 -> 2 -> 1", Error);
  CHECK_THROWS_WITH_AS(
      nn::Graph::fromConfig(config(R"([{"inputs": []}, {"module": 0, "inputs": [5]}, {"module": 1, "inputs": [1]}])"),
                            children()),
      "nn.Graph config: node 1 refers to node 5, which is not defined (3 nodes)", Error);
  CHECK_THROWS_WITH_AS(
      nn::Graph::fromConfig(config(R"([{"inputs": []}, {"module": 0, "inputs": [0]}, {"module": 0, "inputs": [1]}])"),
                            children()),
      "nn.Graph config: module 0 sits at two nodes (a module sits at one)", Error);
  CHECK_THROWS_WITH_AS(
      nn::Graph::fromConfig(config(R"([{"inputs": []}, {"module": 0, "inputs": [0]}, {"module": 3, "inputs": [1]}])"),
                            children()),
      "nn.Graph config: node 2 applies module 3, but the graph has 2 modules", Error);
  CHECK_THROWS_WITH_AS(
      nn::Graph::fromConfig(config(R"([{"inputs": []}, {"module": 0, "inputs": [0]}])", "[0]", "[1]"), children()),
      "nn.Graph config: module 1 is not used by any node", Error);
  CHECK_THROWS_WITH_AS(
      nn::Graph::fromConfig(config(R"([{"inputs": []}, {"module": 0, "inputs": [0]}, {"module": 1, "inputs": [0]}])"),
                            children()),
      "nn.Graph config: node 1 is not connected to any output", Error);
  CHECK_THROWS_WITH_AS(
      nn::Graph::fromConfig(config(R"([{"inputs": []}, {"inputs": []}, {"module": 0, "inputs": [0]}])", "[0]", "[2]"),
                            children()),
      "nn.Graph config: node 1 has no module and is not among the inputs", Error);
  CHECK_THROWS_WITH_AS(
      nn::Graph::fromConfig(
          config(R"([{"inputs": [], "kind": 1}, {"module": 0, "inputs": [0]}, {"module": 1, "inputs": [1]}])"),
          children()),
      "nn.Graph config: node 0: unknown key 'kind'", Error);
  CHECK_THROWS_WITH_AS(nn::Graph::fromConfig(config(good, "[1]"), children()),
                       "nn.Graph config: inputs lists node 1, which applies a module", Error);
}

TEST_CASE("token embeddings plus learned positions (the README's graph): broadcast sum, gradients to both tables") {
  manual_seed(5);
  auto tok = std::make_shared<nn::Embedding>(11, 4), pos = std::make_shared<nn::Embedding>(6, 4);
  tok->to(DType::Float64);
  pos->to(DType::Float64);
  auto head = f64<nn::Linear>(4, 11);
  Node tokens = nn::Input(), positions = nn::Input();
  Node sum = nn::call(std::make_shared<nn::CAddTable>(), {nn::call(tok, tokens), nn::call(pos, positions)});
  nn::Graph g(std::vector<Node>{tokens, positions}, std::vector<Node>{nn::call(head, sum)});
  const Tensor ids = from_vector<int64_t>({1, 5, 10, 0, 3, 3, 7, 2}, {2, 4});
  const Tensor at = from_vector<int64_t>({0, 1, 2, 3}, {4});
  const Tensor& y = g.forward(Table{ids, at}).tensor("");
  CHECK(y.sizes() == Shape{2, 4, 11});
  const Tensor h = tok->forward(ids).clone() + pos->forward(at).clone();
  CHECK(max_abs_diff(y, head->forward(h)) < 1e-15);
  g.zeroGradParameters();
  Generator gen(5);
  const Tensor go = u({2, 4, 11}, gen);
  const Value& gi = g.backward(Table{ids, at}, go);
  CHECK(gi[0].empty());  // indices have no gradient
  // the positions' gradient is the batch's sum of the head's gradInput
  const Tensor gh = head->updateGradInput(h, go).clone();
  CHECK(max_abs_diff(pos->gradWeight.narrow(0, 0, 4), gh.sum(0)) < 1e-14);
}

TEST_CASE("a gradient tensor shared by two steps is copied for a module that writes into its gradOutput") {
  // CAddTable hands gradOutput to both entries; an in-place ReLU changes it in backward, which
  // must not reach the other entry's step
  Generator gen(6);
  const Tensor x = u({3, 4}, gen), go = u({3, 4}, gen);
  for (bool writerFirst : {false, true}) {  // the in-place step runs before or after the other
    CAPTURE(writerFirst);
    std::vector<Tensor> grads;
    for (bool inplace : {false, true}) {
      manual_seed(6);
      Node in = nn::Input();
      auto lp = f64<nn::Linear>(4, 4), lq = f64<nn::Linear>(4, 4);
      Node p = nn::call(lp, in), q = nn::call(lq, in);
      Node r = nn::call(std::make_shared<nn::ReLU>(inplace), p);
      nn::Graph g(in, nn::call(std::make_shared<nn::CAddTable>(),
                               writerFirst ? std::vector<Node>{q, r} : std::vector<Node>{r, q}));
      g.forward(x);
      g.zeroGradParameters();
      grads.push_back(g.backward(x, go.clone()).clone());
      grads.push_back(lp->gradWeight.clone());
      grads.push_back(lq->gradWeight.clone());
    }
    for (size_t i = 0; i < 3; ++i) CHECK(max_abs_diff(grads[i], grads[i + 3]) == 0);
  }
}
