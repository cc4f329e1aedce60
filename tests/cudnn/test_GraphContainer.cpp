// test_GraphContainer.cpp: nn::Graph and the table modules on the GPU: a graph converted to
// cudnn keeps its wiring and matches the nn graph in every dtype (forward, gradInput, parameter
// gradients), table modules compute on CUDA tensors where they are, tied parameters stay tied
// through convert and to(device), and a graph of cudnn twins with an nn child excluded from
// conversion runs across the device bridge.
#include <doctest/doctest.h>

#include <cmath>

#include "convert/Convert.h"
#include "cudnn/core/Config.h"
#include "nn/CAddTable.h"
#include "nn/CMulTable.h"
#include "nn/ConcatTable.h"
#include "nn/CosineDistance.h"
#include "nn/CosineEmbeddingCriterion.h"
#include "nn/Graph.h"
#include "nn/JoinTable.h"
#include "nn/Linear.h"
#include "nn/MarginRankingCriterion.h"
#include "nn/PairwiseDistance.h"
#include "nn/ReLU.h"
#include "nn/Sequential.h"
#include "nn/SpatialBatchNormalization.h"
#include "nn/SpatialConvolution.h"
#include "nn/SplitTable.h"
#include "nn/Tanh.h"
#include "tests/support/Kit.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;
using nn::Node;

namespace {
const Device gpu = Device::cuda(0);

// conv -> bn -> relu, a second conv on a fan-out, joined along channels, a 1x1 conv, summed
// with the input: fan-out, a table node and a shortcut.
nn::ModulePtr conv_graph() {
  manual_seed(4700);
  Node x = nn::Input();
  // no bias before batch norm: its gradient is zero up to rounding, which no tolerance compares
  auto first = std::make_shared<nn::SpatialConvolution>(3, 4, 3, 3, 1, 1, 1, 1);
  first->noBias();
  Node a = nn::call(std::make_shared<nn::ReLU>(),
                    nn::call(std::make_shared<nn::SpatialBatchNormalization>(4), nn::call(first, x)));
  Node b = nn::call(std::make_shared<nn::SpatialConvolution>(4, 2, 1, 1), a);
  Node joined = nn::call(std::make_shared<nn::JoinTable>(1), {a, b});
  Node out = nn::call(std::make_shared<nn::SpatialConvolution>(6, 3, 1, 1), joined);
  Node sum = nn::call(std::make_shared<nn::CAddTable>(), {out, x});
  return std::make_shared<nn::Graph>(x, nn::call(std::make_shared<nn::Tanh>(), sum));
}

// two inputs, two outputs, a table node in the middle
nn::ModulePtr table_graph() {
  manual_seed(4701);
  Node p = nn::Input(), q = nn::Input();
  Node h = nn::call(std::make_shared<nn::Linear>(5, 5), p);
  Node both = nn::call(std::make_shared<nn::ConcatTable>(std::initializer_list<nn::ModulePtr>{
                           std::make_shared<nn::Tanh>(), std::make_shared<nn::Linear>(5, 5)}),
                       h);
  Node prod = nn::call(std::make_shared<nn::CMulTable>(), {both[0], q});
  Node sum = nn::call(std::make_shared<nn::CAddTable>(), {both[1], h});
  return std::make_shared<nn::Graph>(std::vector<Node>{p, q}, std::vector<Node>{prod, sum});
}

Tensor max_diff(const nn::Value& a, const nn::Value& b) {
  double worst = 0;
  const auto ta = nn::tensors_of(a), tb = nn::tensors_of(b);
  REQUIRE(ta.size() == tb.size());
  for (size_t i = 0; i < ta.size(); ++i) {
    worst = std::max(
        worst, max_abs_diff(ta[i].to(Device::cpu()).to(DType::Float64), tb[i].to(Device::cpu()).to(DType::Float64)));
  }
  return scalar_tensor(worst, DType::Float64);
}
}  // namespace

TEST_CASE("a converted graph matches the nn graph in every dtype, and converts back with its wiring") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(4702);
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    INFO(std::string(name(dt)));
    nn::ModulePtr ref = conv_graph();
    ref->to(DType::Float64);
    nn::ModulePtr twin = nn::convert(conv_graph(), nn::Backend::cudnn);
    CHECK(twin->type_name() == "nn.Graph");
    CHECK((*twin->children())[0]->type_name() == "cudnn.SpatialConvolution");
    CHECK(twin->str().find("n7 = (7)({n6, n0})") != std::string::npos);
    expect_twin_matches(*ref, *twin, uniform({2, 3, 6, 5}, -1, 1, gen, DType::Float64), dt,
                        TwinTolerance::for_dtype(dt), dt == DType::Float32);
  }
  // the graph itself has no twin (it computes nothing; Note [Tables] in nn/Value.cpp): it stays nn.Graph
  expect_ok(nn::testkit::check_convert_roundtrip(conv_graph(), uniform({2, 3, 6, 5}, -1, 1, gen), "nn.Graph"));
}

TEST_CASE("a graph of tables on the GPU: table modules compute on CUDA tensors, gradients match nn") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(4703);
  nn::ModulePtr ref = table_graph();
  ref->to(DType::Float64);
  nn::ModulePtr twin = nn::convert(table_graph(), nn::Backend::cudnn);
  twin->to(DType::Float64);
  const Tensor p = uniform({3, 5}, -1, 1, gen, DType::Float64), q = uniform({3, 5}, -1, 1, gen, DType::Float64);
  const nn::Value y = ref->forward(nn::Table{p, q});
  const nn::Value yt = twin->forward(nn::Table{p.to(gpu), q.to(gpu)});
  CHECK(nn::tensors_of(yt)[0].is_cuda());
  CHECK(max_diff(y, yt).item() < 1e-12);
  const nn::Value g =
      nn::Table{uniform({3, 5}, -1, 1, gen, DType::Float64), uniform({3, 5}, -1, 1, gen, DType::Float64)};
  ref->zeroGradParameters();
  twin->zeroGradParameters();
  const nn::Value gi = ref->backward(nn::Table{p, q}, g);
  const nn::Value git =
      twin->backward(nn::Table{p.to(gpu), q.to(gpu)}, nn::Table{g[0].tensor("").to(gpu), g[1].tensor("").to(gpu)});
  CHECK(max_diff(gi, git).item() < 1e-12);
  const auto pr = ref->gradParameters(), pt = twin->gradParameters();
  REQUIRE(pr.size() == pt.size());
  for (size_t i = 0; i < pr.size(); ++i) CHECK(max_abs_diff(pr[i], pt[i].to(Device::cpu())) < 1e-12);
  // NaN in one input reaches the outputs that read it, on both
  Tensor pn = p.clone();
  pn.narrow(0, 0, 1).fill_(std::nan(""));
  expect_same_nonfinite("output 0",
                        nn::tensors_of(twin->forward(nn::Table{pn.to(gpu), q.to(gpu)}))[0].to(Device::cpu()),
                        nn::tensors_of(ref->forward(nn::Table{pn, q}))[0], 1e-12);
}

TEST_CASE("tied parameters stay one tensor through convert and to(device)") {
  manual_seed(4704);
  auto a = std::make_shared<nn::Linear>(4, 3), b = std::make_shared<nn::Linear>(4, 3);
  b->shareParameters(*a);
  Node x = nn::Input(), y = nn::Input();
  auto g = std::make_shared<nn::Graph>(
      std::vector<Node>{x, y},
      std::vector<Node>{nn::call(std::make_shared<nn::CAddTable>(), {nn::call(a, x), nn::call(b, y)})});
  nn::ModulePtr twin = nn::convert(g, nn::Backend::cudnn);
  CHECK(twin->tiedParameters().size() == 2);
  CHECK(twin->parameters().size() == 2);
  CHECK(twin->parameters()[0].is_cuda());
  twin->to(Device::cpu());
  twin->to(gpu);
  CHECK(twin->tiedParameters().size() == 2);
}

TEST_CASE("a converted graph's second forward reuses its buffers and gives the same output") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(4705);
  nn::ModulePtr g = nn::convert(conv_graph(), nn::Backend::cudnn);
  const Tensor x = uniform({4, 3, 8, 8}, -1, 1, gen).to(gpu);
  const Tensor y1 = g->forward(x).clone();
  const Tensor y2 = g->forward(x).clone();
  CHECK(max_abs_diff(y1, y2) == 0);
}

TEST_CASE("the distances and the pair criteria compute on CUDA tensors as on the CPU, in every floating dtype") {
  Generator gen(4706);
  const Tensor a = uniform({5, 7}, -1, 1, gen, DType::Float64), b = uniform({5, 7}, -1, 1, gen, DType::Float64);
  const Tensor y = from_vector<double>({1, -1, 1, -1, 1}, {5});
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    INFO(std::string(name(dt)));
    const double tol = dt == DType::Float64 ? 1e-12 : dt == DType::Float32 ? 1e-5 : 5e-2;
    const Tensor ag = a.to(gpu, dt), bg = b.to(gpu, dt);
    const Tensor ar = ag.cpu().to(DType::Float64), br = bg.cpu().to(DType::Float64);  // what the GPU sees
    for (const nn::ModulePtr& m : {nn::ModulePtr(std::make_shared<nn::PairwiseDistance>(2)),
                                   nn::ModulePtr(std::make_shared<nn::PairwiseDistance>(3)),
                                   nn::ModulePtr(std::make_shared<nn::CosineDistance>())}) {
      INFO(m->str());
      const Tensor out = m->forward(nn::Table{ag, bg}).tensor("").clone();
      CHECK(out.is_cuda());
      const nn::Value gi = m->backward(nn::Table{ag, bg}, ones({5}, dt, gpu));
      const Tensor g0 = gi[0].tensor("").clone();
      const Tensor want = m->forward(nn::Table{ar, br}).tensor("").clone();
      const nn::Value wgi = m->backward(nn::Table{ar, br}, ones({5}, DType::Float64));
      CHECK(max_abs_diff(out.cpu().to(DType::Float64), want) <= tol * std::max(1.0, want.abs().max().item()));
      CHECK(max_abs_diff(g0.cpu().to(DType::Float64), wgi[0].tensor("")) <=
            tol * std::max(1.0, wgi[0].tensor("").abs().max().item()));
    }
    nn::MarginRankingCriterion rank(0.2);
    nn::CosineEmbeddingCriterion cosine(0.1);
    const Tensor yg = y.to(gpu, dt);
    CHECK(rank.forward(nn::Table{ag.select(1, 0), bg.select(1, 0)}, yg) ==
          doctest::Approx(rank.forward(nn::Table{ar.select(1, 0), br.select(1, 0)}, y)).epsilon(tol));
    CHECK(cosine.forward(nn::Table{ag, bg}, yg) == doctest::Approx(cosine.forward(nn::Table{ar, br}, y)).epsilon(tol));
    CHECK(cosine.backward(nn::Table{ag, bg}, yg)[1].tensor("").is_cuda());
  }
}
