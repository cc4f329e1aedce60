// test_Tables.cpp: Torch's table modules (nn/Value.h, nn/TableModule.h): values against closed
// forms, finite-difference gradients through the table interface (testkit's Value check),
// broadcasting, nesting, the tensor interface where a container's input and output are tensors,
// printing, model-file configs and errors that name the module and the entry.
#include <doctest/doctest.h>

#include <cmath>

#include "nn/CAddTable.h"
#include "nn/CDivTable.h"
#include "nn/CMulTable.h"
#include "nn/CSubTable.h"
#include "nn/ConcatTable.h"
#include "nn/CosineDistance.h"
#include "nn/FlattenTable.h"
#include "nn/Identity.h"
#include "nn/JoinTable.h"
#include "nn/Linear.h"
#include "nn/NarrowTable.h"
#include "nn/PairwiseDistance.h"
#include "nn/ParallelTable.h"
#include "nn/SelectTable.h"
#include "nn/Sequential.h"
#include "nn/SplitTable.h"
#include "nn/Tanh.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;
using nn::Table;
using nn::Value;

namespace {
Tensor u(const Shape& s, Generator& gen, double lo = -1, double hi = 1) {
  return uniform(s, lo, hi, gen, DType::Float64);
}

template <class M, class... A>
std::shared_ptr<M> f64(A&&... a) {
  auto m = std::make_shared<M>(std::forward<A>(a)...);
  m->to(DType::Float64);
  return m;
}
}  // namespace

TEST_CASE("CAddTable, CSubTable, CMulTable, CDivTable: values, broadcasting and gradients") {
  Generator gen(47);
  const Tensor a = u({2, 3, 4}, gen), b = u({2, 3, 4}, gen), c = u({3, 4}, gen), d = u({2, 1, 4}, gen, 0.5, 2);
  nn::CAddTable add;
  CHECK(max_abs_diff(add.forward(Table{a, b, c}).tensor(""), a + b + c) == 0);
  CHECK(add.output.sizes() == Shape{2, 3, 4});
  nn::CSubTable sub;
  CHECK(max_abs_diff(sub.forward(Table{a, c}).tensor(""), a - c) == 0);
  nn::CMulTable mul;
  CHECK(max_abs_diff(mul.forward(Table{a, b, d}).tensor(""), a * b * d) < 1e-15);
  nn::CDivTable div;
  CHECK(max_abs_diff(div.forward(Table{a, d}).tensor(""), a / d) < 1e-15);
  // the broadcast entries' gradients are reduced to their shapes
  const Tensor g = u({2, 3, 4}, gen);
  const Value& gi = add.backward(Table{a, b, c}, g);
  REQUIRE(gi.size() == 3);
  CHECK(gi[2].tensor("").sizes() == Shape{3, 4});
  CHECK(max_abs_diff(gi[2].tensor(""), g.sum(0)) < 1e-15);
  for (const Value& in : {Value(Table{a, b, c}), Value(Table{c, a}), Value(Table{d, c})}) {
    CAPTURE(in.description());
    nn::CAddTable m1;
    expect_gradients_ok(m1, in);
    nn::CMulTable m2;
    expect_gradients_ok(m2, in);
  }
  nn::CSubTable m3;
  expect_gradients_ok(m3, Table{a, d});
  nn::CDivTable m4;
  expect_gradients_ok(m4, Table{a, d});
  expect_gradients_ok(m4, Table{c, d});
  nn::CMulTable m5;  // a zero entry: the product of the others, not output / x
  const Tensor z = zeros({3, 4}, DType::Float64);
  const Value& gz = m5.backward(Table{z, c}, m5.forward(Table{z, c}).tensor("").clone().fill_(1));
  CHECK(max_abs_diff(gz[0].tensor(""), c) == 0);
  CHECK(max_abs_diff(gz[1].tensor(""), z) == 0);
}

TEST_CASE("element-wise tables: NaN and Inf follow the arithmetic") {
  const Tensor x = from_vector<double>({kNaN, kInf, 1, 0}, {4});
  const Tensor y = from_vector<double>({1, 1, kInf, 0}, {4});
  nn::CAddTable add;
  expect_values("sum", add.forward(Table{x, y}).tensor(""), {kNaN, kInf, kInf, 0}, 0);
  nn::CDivTable div;
  expect_values("quotient", div.forward(Table{x, y}).tensor(""), {kNaN, kInf, 0, kNaN}, 0);
}

TEST_CASE("element-wise tables: errors name the module and the entry") {
  nn::CAddTable add;
  CHECK_THROWS_WITH_AS(add.forward(ones({2, 3})),
                       "nn.CAddTable::updateOutput: takes or gives a table, not one tensor: call forward(nn::Value) "
                       "and backward(nn::Value, nn::Value)",
                       Error);
  CHECK_THROWS_WITH_AS(add.forward(Value(ones({2}))),
                       "nn.CAddTable::updateOutput: expected the input to be a table, got float32 [2] on cpu", Error);
  CHECK_THROWS_WITH_AS(add.forward(Table{ones({2, 3}), ones({4})}),
                       "nn.CAddTable::updateOutput: expected entries that broadcast to one shape, got [2 x 3], [4]",
                       Error);
  CHECK_THROWS_WITH_AS(add.forward(Table{ones({2}), ones({2}, DType::Float64)}),
                       "nn.CAddTable::updateOutput: expected entry 1 of the input to have entry 0's dtype and device "
                       "(float32 [2] on cpu), got float64 [2] on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(add.forward(Table{ones({2}), Table{ones({2})}}),
                       "nn.CAddTable::updateOutput: expected entry 1 of the input to be a tensor, got table {float32 "
                       "[2] on cpu}",
                       Error);
  nn::CSubTable sub;
  CHECK_THROWS_WITH_AS(sub.forward(Table{ones({2}), ones({2}), ones({2})}),
                       "nn.CSubTable::updateOutput: expected a table of 2 tensors, got table {float32 [2] on cpu, "
                       "float32 [2] on cpu, float32 [2] on cpu}",
                       Error);
  CHECK_THROWS_WITH_AS(add.forward(Table{}),
                       "nn.CAddTable::updateOutput: expected a table of at least 1 tensors, got table {}", Error);
  add.forward(Table{ones({2}), ones({2})});
  CHECK_THROWS_WITH_AS(add.backward(Table{ones({2}), ones({2})}, ones({3})),
                       "nn.CAddTable::updateGradInput: expected gradOutput of the output's shape [2], got [3]", Error);
}

TEST_CASE("JoinTable and SplitTable: values, batch dimensions and gradients") {
  Generator gen(5);
  const Tensor a = u({2, 3}, gen), b = u({2, 5}, gen);
  nn::JoinTable join(1);
  const Tensor& y = join.forward(Table{a, b}).tensor("");
  CHECK(y.sizes() == Shape{2, 8});
  CHECK(max_abs_diff(y.narrow(1, 3, 5), b) == 0);
  expect_gradients_ok(join, Table{a, b});
  nn::JoinTable last(-1);
  expect_gradients_ok(last, Table{a, b});
  // nInputDims: vectors and batches of them join along their own dimension
  nn::JoinTable vectors(0, 1);
  CHECK(vectors.forward(Table{u({3}, gen), u({4}, gen)}).tensor("").sizes() == Shape{7});
  CHECK(vectors.forward(Table{u({2, 3}, gen), u({2, 4}, gen)}).tensor("").sizes() == Shape{2, 7});
  CHECK_THROWS_WITH_AS(join.forward(Table{a, u({3, 5}, gen)}),
                       "nn.JoinTable::updateOutput: expected entry 1 to match [2 x 3] (entry 0) except in dimension "
                       "1, got [3 x 5]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::JoinTable(2).forward(Table{a}),
                       "nn.JoinTable::updateOutput: expected dimension in [-2, 1] for entries of [2 x 3], got 2",
                       Error);

  nn::SplitTable split(1);
  const Tensor x = u({2, 3, 4}, gen);
  const Value& parts = split.forward(Value(x));
  REQUIRE(parts.size() == 3);
  CHECK(parts[1].tensor("").is_same_view(x.select(1, 1)));
  expect_gradients_ok(split, Value(x));
  nn::SplitTable batched(0, 2);  // [3 x 4] splits along 0, [2 x 3 x 4] along 1
  CHECK(batched.forward(Value(u({3, 4}, gen))).size() == 3);
  CHECK(batched.forward(Value(x)).size() == 3);
  // the tensor interface cannot hold a table output
  CHECK_THROWS_WITH_AS(split.forward(x), doctest::Contains("takes or gives a table"), Error);
  CHECK_THROWS_WITH_AS(split.forward(Value(x.select(0, 0).select(0, 0))),
                       "nn.SplitTable::updateOutput: expected an input with dimension 1, got float64 [4] on cpu",
                       Error);
}

TEST_CASE("SelectTable, NarrowTable and FlattenTable: nesting, negative positions and zero gradients elsewhere") {
  Generator gen(6);
  const Tensor a = u({2}, gen), b = u({3}, gen), c = u({1, 2}, gen);
  const Value nested = Table{a, Table{b, c}};
  nn::SelectTable last(-1);
  const Value& inner = last.forward(nested);
  CHECK(inner.isTable());
  CHECK(inner[1].tensor("").is_same_view(c));
  const Value& g = last.backward(nested, Table{ones({3}, DType::Float64), ones({1, 2}, DType::Float64)});
  CHECK(g.sameStructure(nested));
  CHECK(max_abs_diff(g[0].tensor(""), zeros({2}, DType::Float64)) == 0);
  expect_gradients_ok(last, nested);
  nn::SelectTable first(0);
  expect_gradients_ok(first, nested);
  CHECK_THROWS_WITH_AS(nn::SelectTable(2).forward(nested),
                       "nn.SelectTable::updateOutput: expected a position in [-2, 1] of a table of 2 entries, got 2",
                       Error);

  const Value three = Table{a, b, c};
  nn::NarrowTable window(1, 2);
  const Value& w = window.forward(three);
  CHECK(w.size() == 2);
  CHECK(w[0].tensor("").is_same_view(b));
  expect_gradients_ok(window, three);
  nn::NarrowTable toEnd(0, -1);
  CHECK(toEnd.forward(three).size() == 3);
  nn::NarrowTable fromBack(-2, 1);
  CHECK(fromBack.forward(three)[0].tensor("").is_same_view(b));
  CHECK_THROWS_WITH_AS(nn::NarrowTable(2, 2).forward(three),
                       "nn.NarrowTable::updateOutput: expected offset 2 and length 2 to lie in a table of 3 entries",
                       Error);

  nn::FlattenTable flat;
  const Value& f = flat.forward(Table{a, Table{b, Table{c}}});
  REQUIRE(f.size() == 3);
  CHECK(f[2].tensor("").is_same_view(c));
  expect_gradients_ok(flat, Table{a, Table{b, Table{c}}});
  const Value& gf = flat.backward(Table{a, Table{b, Table{c}}}, Table{a, b, c});
  CHECK(gf.sameStructure(Table{a, Table{b, Table{c}}}));
}

TEST_CASE("ConcatTable and ParallelTable: children, parameter gradients, gradient sums") {
  Generator gen(7);
  manual_seed(7);
  auto concat = std::make_shared<nn::ConcatTable>(
      std::initializer_list<nn::ModulePtr>{f64<nn::Linear>(4, 3), f64<nn::Identity>(), f64<nn::Tanh>()});
  const Tensor x = u({2, 4}, gen);
  const Value& outs = concat->forward(Value(x));
  REQUIRE(outs.size() == 3);
  CHECK(outs[1].tensor("").is_same_view(x));
  expect_gradients_ok(*concat, Value(x));
  // a table input reaches every child as it is
  auto tables = std::make_shared<nn::ConcatTable>(
      std::initializer_list<nn::ModulePtr>{std::make_shared<nn::SelectTable>(0), std::make_shared<nn::CAddTable>()});
  expect_gradients_ok(*tables, Table{u({3}, gen), u({3}, gen)});

  auto parallel =
      std::make_shared<nn::ParallelTable>(std::initializer_list<nn::ModulePtr>{f64<nn::Linear>(4, 2), f64<nn::Tanh>()});
  expect_gradients_ok(*parallel, Table{u({3, 4}, gen), u({5}, gen)});
  CHECK_THROWS_WITH_AS(parallel->forward(Table{u({3, 4}, gen)}),
                       "nn.ParallelTable::updateOutput: expected a table of 2 entries (one per module), got table "
                       "{float64 [3 x 4] on cpu}",
                       Error);
  // a child's error names its position, as Sequential's do
  CHECK_THROWS_WITH_AS(parallel->forward(Table{u({3, 5}, gen), u({5}, gen)}),
                       doctest::Contains("In 1 module of nn.ParallelTable: nn.Linear"), Error);
  CHECK(parallel->namedParameters().front().first == "0.weight");
}

TEST_CASE("a Sequential with table modules inside keeps the tensor interface (residual by ConcatTable + CAddTable)") {
  Generator gen(8);
  manual_seed(8);
  auto linear = f64<nn::Linear>(4, 4);
  auto residual = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::ConcatTable>(std::initializer_list<nn::ModulePtr>{linear, std::make_shared<nn::Identity>()}),
      std::make_shared<nn::CAddTable>(), f64<nn::Tanh>()});
  CHECK(residual->usesTables());
  const Tensor x = u({3, 4}, gen);
  const Tensor y = residual->forward(x).clone();
  CHECK(max_abs_diff(y, (linear->forward(x) + x).tanh()) < 1e-15);
  expect_gradients_ok(*residual, x);
  expect_accumulation_ok(*residual, x);
  // split into rows, each through its own module, joined back: tensors in, tensors out
  auto rows = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::SplitTable>(0),
      std::make_shared<nn::ParallelTable>(std::initializer_list<nn::ModulePtr>{f64<nn::Linear>(4, 2), f64<nn::Tanh>(),
                                                                               std::make_shared<nn::Identity>()}),
      std::make_shared<nn::FlattenTable>(), std::make_shared<nn::JoinTable>(0)});
  CHECK(rows->forward(x).sizes() == Shape{10});
  expect_gradients_ok(*rows, x);
  // the table path frees intermediate gradients as the tensor path does
  residual->setFreeIntermediateGradients(true);
  residual->forward(x);
  residual->backward(x, ones({3, 4}, DType::Float64));
  CHECK(residual->gradInput.defined());
  CHECK(residual->get(2)->gradInputValue.empty());
  // a Sequential's output must be a tensor for the tensor interface
  auto open =
      std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{std::make_shared<nn::SplitTable>(0)});
  CHECK_THROWS_WITH_AS(
      open->forward(x),
      "nn.Sequential::updateOutput: expected the output to be a tensor, got table {float64 [4] on cpu, "
      "float64 [4] on cpu, float64 [4] on cpu}",
      Error);
  CHECK(open->forward(Value(x)).size() == 3);
}

TEST_CASE("Identity passes tables through; a tensor module given a table says so") {
  Generator gen(9);
  const Value t = Table{u({2}, gen), Table{u({3}, gen)}};
  nn::Identity id;
  CHECK(id.forward(t).sameStructure(t));
  CHECK(id.backward(t, t).sameStructure(t));
  nn::Tanh tanh;
  CHECK_THROWS_WITH_AS(tanh.forward(t),
                       "nn.Tanh::forward: expected the input to be a tensor, got table {float64 [2] on cpu, table "
                       "{float64 [3] on cpu}}",
                       Error);
}

TEST_CASE("table modules print as Torch's and carry their options in config()") {
  CHECK(nn::JoinTable(1).str() == "nn.JoinTable(1)");
  CHECK(nn::JoinTable(0, 1).str() == "nn.JoinTable(0, 1)");
  CHECK(nn::SplitTable(-1).str() == "nn.SplitTable(-1)");
  CHECK(nn::SelectTable(-1).str() == "nn.SelectTable(-1)");
  CHECK(nn::NarrowTable(1, 2).str() == "nn.NarrowTable(1, 2)");
  CHECK(nn::CAddTable().str() == "nn.CAddTable");
  nn::ConcatTable c{std::make_shared<nn::Identity>(), std::make_shared<nn::Tanh>()};
  CHECK(c.str() == "nn.ConcatTable {\n  input\n    |`-> (1): nn.Identity\n    `-> (2): nn.Tanh\n     ... -> output\n}");
  CHECK(nn::JoinTable::fromConfig(nn::JoinTable(2, 3).config())->str() == "nn.JoinTable(2, 3)");
  CHECK(nn::NarrowTable::fromConfig(nn::NarrowTable(-2, 1).config())->str() == "nn.NarrowTable(-2, 1)");
  CHECK_THROWS_WITH_AS(nn::SelectTable::fromConfig(tensor::Json::Object{{"index", 1}, {"dim", 2}}),
                       doctest::Contains("dim"), Error);
}

TEST_CASE("PairwiseDistance and CosineDistance: PyTorch's and Torch's numbers, gradients, errors") {
  Generator gen(10);
  const Tensor a = u({3, 5}, gen), b = u({3, 5}, gen);
  for (double p : {1.0, 2.0, 3.0}) {
    CAPTURE(p);
    nn::PairwiseDistance d(p);
    const Tensor& y = d.forward(Table{a, b}).tensor("");
    CHECK(y.sizes() == Shape{3});
    const Tensor want = a.sub(b).add(1e-6).abs().pow(p).sum(-1).pow(1 / p);
    CHECK(max_abs_diff(y, want) < 1e-14);
    expect_gradients_ok(d, Table{a, b});
    expect_gradients_ok(d, Table{a.select(0, 1), b.select(0, 1)});  // [D]: a 0-d distance
  }
  // equal rows: distance eps * D^(1/p), finite gradients
  nn::PairwiseDistance same;
  same.forward(Table{a, a});
  const Value& gs = same.backward(Table{a, a}, ones({3}, DType::Float64));
  CHECK(std::isfinite(gs[0].tensor("").abs().max().item()));
  CHECK_THROWS_WITH_AS(nn::PairwiseDistance(0.5), doctest::Contains("expected a finite p >= 1"), Error);
  CHECK_THROWS_WITH_AS(same.forward(Table{a, u({3, 4}, gen)}),
                       "nn.PairwiseDistance::updateOutput: expected two [N x D] or [D] tensors of one shape, got [3 x "
                       "5] and [3 x 4]",
                       Error);
  CHECK(nn::PairwiseDistance(3).str() == "nn.PairwiseDistance(p=3)");

  nn::CosineDistance c;
  const Tensor& cy = c.forward(Table{a, b}).tensor("");
  const Tensor want = a.mul(b).sum(-1).div(a.square().sum(-1).sqrt().mul(b.square().sum(-1).sqrt()));
  CHECK(max_abs_diff(cy, want) < 1e-10);
  CHECK(max_abs_diff(c.forward(Table{a, a.mul(3.0)}).tensor(""), ones({3}, DType::Float64)) < 1e-12);
  expect_gradients_ok(c, Table{a, b});
  expect_gradients_ok(c, Table{a.select(0, 0), b.select(0, 2)});
}

TEST_CASE("table modules and a graph take empty batches") {
  Generator gen(13);
  const Tensor e = zeros({0, 3}, DType::Float64), f = zeros({0, 3}, DType::Float64);
  nn::CAddTable add;
  CHECK(add.forward(Table{e, f}).tensor("").sizes() == Shape{0, 3});
  CHECK(add.backward(Table{e, f}, e)[1].tensor("").sizes() == Shape{0, 3});
  nn::CMulTable mul;
  CHECK(mul.backward(Table{e, f}, mul.forward(Table{e, f}).tensor(""))[0].tensor("").sizes() == Shape{0, 3});
  nn::JoinTable join(1);
  CHECK(join.forward(Table{e, zeros({0, 2}, DType::Float64)}).tensor("").sizes() == Shape{0, 5});
  CHECK(join.backward(Table{e, zeros({0, 2}, DType::Float64)}, zeros({0, 5}, DType::Float64))[1].tensor("").sizes() ==
        Shape{0, 2});
  nn::SplitTable split(0);
  CHECK(split.forward(Value(e)).size() == 0);
  CHECK(split.backward(Value(e), Table{}).tensor("").sizes() == Shape{0, 3});
  nn::PairwiseDistance d;
  CHECK(d.forward(Table{e, f}).tensor("").sizes() == Shape{0});
  auto concat =
      std::make_shared<nn::ConcatTable>(std::initializer_list<nn::ModulePtr>{f64<nn::Linear>(3, 2), f64<nn::Tanh>()});
  CHECK(concat->forward(Value(e))[0].tensor("").sizes() == Shape{0, 2});
  CHECK(concat->backward(Value(e), Table{zeros({0, 2}, DType::Float64), e}).tensor("").sizes() == Shape{0, 3});
}
