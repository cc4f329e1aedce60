// test_Autotune.cpp: cudnn::autotune (Note [Choosing the layout by timing it] in
// cudnn/Autotune.cpp). The network it returns computes what the plain one computes, its state
// (gradients, running statistics, the default generator) is as it was, the rewrites are the
// ones it reports and can be seen in str(), a channels-last network takes and gives row-major
// tensors, a second call does not nest, and what cannot be timed is said, not guessed.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "convert/Convert.h"
#include "cudnn/Autotune.h"
#include "nn/Contiguous.h"
#include "nn/Dropout.h"
#include "nn/Linear.h"
#include "nn/ReLU.h"
#include "nn/Residual.h"
#include "nn/Sequential.h"
#include "nn/SpatialBatchNormalization.h"
#include "nn/SpatialConvolution.h"
#include "nn/SpatialMaxPooling.h"
#include "nn/View.h"
#include "tensor/Generator.h"

using namespace tensor;

namespace {

const Device gpu = Device::cuda(0);

// conv-bn-relu, a residual unit (1x1 conv + bn, then ReLU), max pooling and, with a head,
// dropout and a linear classifier: something of everything autotune rewrites.
nn::ModulePtr network(bool head, DType dt, uint64_t seed) {
  manual_seed(seed);
  auto conv = std::make_shared<nn::SpatialConvolution>(3, 16, 3, 3, 1, 1, 1, 1);
  conv->noBias();  // before a batch norm its gradient is zero up to rounding, which compares badly
  auto inner = std::make_shared<nn::SpatialConvolution>(16, 16, 1, 1);
  inner->noBias();
  auto block = std::make_shared<nn::Sequential>(
      std::initializer_list<nn::ModulePtr>{inner, std::make_shared<nn::SpatialBatchNormalization>(16)});
  auto net = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      conv, std::make_shared<nn::SpatialBatchNormalization>(16), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Residual>(block), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::SpatialMaxPooling>(2, 2)});
  if (head) {
    net->add(std::make_shared<nn::View>(16 * 8 * 8));
    net->add(std::make_shared<nn::Dropout>(0.3));
    net->add(std::make_shared<nn::Linear>(16 * 8 * 8, 10));
  }
  nn::ModulePtr gpuNet = nn::convert(net, cudnn::backend);
  gpuNet->to(dt);
  return gpuNet;
}

// Every gradient and buffer, in the order the network visits them (which fusion keeps; it
// renames them), as float64 row-major CPU tensors.
std::vector<std::pair<std::string, Tensor>> gradients_and_buffers(nn::Module& m) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (auto& [name, g] : m.namedGradParameters())
    out.emplace_back("grad " + name, g.cpu().to(DType::Float64).contiguous());
  for (auto& [name, b] : m.namedBuffers()) out.emplace_back("buffer " + name, b.cpu().to(DType::Float64).contiguous());
  return out;
}

// tol 0: bit for bit
void expect_state_close(nn::Module& got, nn::Module& want, double tol) {
  const auto a = gradients_and_buffers(got), b = gradients_and_buffers(want);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first, " against ", b[i].first);
    REQUIRE(a[i].second.sizes() == b[i].second.sizes());
    if (tol == 0) {
      CHECK(max_abs_diff(a[i].second, b[i].second) == 0);
    } else {
      CHECK(rel_norm_error(a[i].second, b[i].second) < tol);
    }
  }
}

const nn::Sequential* wrapper_of(const nn::ModulePtr& m) { return dynamic_cast<const nn::Sequential*>(m.get()); }

}  // namespace

TEST_CASE("autotune: the tuned network computes what the plain one computes, and its state is untouched") {
  for (DType dt : {DType::Float16, DType::Float32}) {
    INFO(name(dt));
    nn::ModulePtr plain = network(true, dt, 41), tuned = network(true, dt, 41);
    Generator gen(4121);
    const Tensor x = uniform({4, 3, 16, 16}, -1, 1, gen, dt, gpu);
    manual_seed(7);
    cudnn::AutotuneReport report;
    tuned = cudnn::autotune(tuned, x, {}, &report);
    INFO(report.str());
    CHECK(report.timed);
    CHECK(report.fused == 2);  // batch norm + ReLU, the residual unit + ReLU
    CHECK(report.rowMajorMs > 0);
    CHECK(report.channelsLastMs > 0);
    CHECK((report.chosen == MemoryFormat::ChannelsLast) == (report.channelsLastMs <= 0.98 * report.rowMajorMs));
    CHECK((report.chosen == MemoryFormat::ChannelsLast) ==
          (wrapper_of(tuned) != nullptr && tuned != plain && tuned->str().find("Contiguous") != std::string::npos));
    CHECK(default_generator().seed() == 7);
    CHECK(default_generator().offset() == 0);  // the dropout masks of the timing passes are given back
    // nothing of the timing passes is left in the gradients and running statistics
    expect_state_close(*tuned, *plain, 0);

    // one training pass each from the same generator state: the dropout masks agree too
    const Tensor g = uniform({4, 10}, -1, 1, gen, dt, gpu);
    manual_seed(8);
    const Tensor y1 = tuned->forward(x).clone(), gi1 = tuned->backward(x, g).clone();
    manual_seed(8);
    const Tensor y0 = plain->forward(x).clone(), gi0 = plain->backward(x, g).clone();
    const double tol = dt == DType::Float16 ? 2e-2 : 2e-3;
    CHECK(rel_norm_error(y1, y0) < tol);
    CHECK(gi1.is_contiguous());
    CHECK(rel_norm_error(gi1, gi0) < tol);
    expect_state_close(*tuned, *plain, tol);
  }
}

TEST_CASE("autotune: channels-last as asked wraps the network, takes and gives row-major tensors, and does not nest") {
  Generator gen(4122);
  for (bool head : {false, true}) {
    INFO(std::string(head ? "a classifier (2-d output)" : "a feature map (4-d output)"));
    nn::ModulePtr net = network(head, DType::Float16, 42), plain = network(head, DType::Float16, 42);
    const Tensor x = uniform({2, 3, 16, 16}, -1, 1, gen, DType::Float16, gpu);
    cudnn::AutotuneOptions o;
    o.layout = cudnn::LayoutChoice::ChannelsLast;
    cudnn::AutotuneReport report;
    nn::ModulePtr tuned = cudnn::autotune(net, x, o, &report);
    CHECK_FALSE(report.timed);
    CHECK(report.chosen == MemoryFormat::ChannelsLast);
    CHECK(report.str() == "fused 2; channels-last, as asked (not timed)");
    const nn::Sequential* w = wrapper_of(tuned);
    REQUIRE(w);
    REQUIRE(w->modules.size() == (head ? 2u : 3u));
    CHECK(w->modules[0]->str() == "cudnn.Contiguous(channels_last)");
    CHECK(w->modules[1].get() == net.get());
    if (!head) CHECK(w->modules[2]->str() == "cudnn.Contiguous");
    for (const Tensor& p : tuned->parameters()) {
      if (p.dim() == 4) CHECK(p.is_contiguous(MemoryFormat::ChannelsLast));
    }
    CHECK(tuned->str().find("cudnn.FusedResidual") != std::string::npos);

    tuned->evaluate();  // no dropout in the comparison
    plain->evaluate();
    const Tensor y = tuned->forward(x).clone();
    CHECK(y.is_contiguous());
    CHECK(rel_norm_error(y, plain->forward(x)) < 2e-2);
    tuned->train();

    // a second call unwraps first: one wrapper, around the same network
    nn::ModulePtr again = cudnn::autotune(tuned, x, o);
    const nn::Sequential* w2 = wrapper_of(again);
    REQUIRE(w2);
    CHECK(w2->modules[1].get() == net.get());
    CHECK(again->str() == tuned->str());
  }
}

TEST_CASE("autotune keeps the network's switches: no input gradient, freed gradients, evaluation mode") {
  Generator gen(4123);
  nn::ModulePtr net = network(false, DType::Float16, 43);
  net->setGradInputNeeded(false);
  net->setFreeIntermediateGradients(true);
  const Tensor x = uniform({2, 3, 16, 16}, -1, 1, gen, DType::Float16, gpu);
  cudnn::AutotuneOptions o;
  o.layout = cudnn::LayoutChoice::ChannelsLast;
  nn::ModulePtr tuned = cudnn::autotune(net, x, o);
  REQUIRE(wrapper_of(tuned));
  CHECK_FALSE(tuned->gradInputNeeded());
  CHECK_FALSE(net->gradInputNeeded());  // no input gradient anywhere: the front module takes none
  CHECK(tuned->freesIntermediateGradients());
  const Tensor& y = tuned->forward(x);
  tuned->backward(x, uniform(y.sizes(), -1, 1, gen, DType::Float16, gpu));
  CHECK_FALSE(tuned->gradInput.defined());
  CHECK_FALSE(net->gradInput.defined());  // the network computed no input gradient either

  o.layout = cudnn::LayoutChoice::Keep;
  nn::ModulePtr back = cudnn::autotune(tuned, x, o);  // unwraps
  CHECK(back.get() == net.get());
  CHECK_FALSE(back->gradInputNeeded());

  nn::ModulePtr evaluating = network(false, DType::Float16, 44);
  evaluating->evaluate();
  o.layout = cudnn::LayoutChoice::ChannelsLast;
  nn::ModulePtr tunedEval = cudnn::autotune(evaluating, x, o);
  CHECK_FALSE(tunedEval->isTraining());
  o.layout = cudnn::LayoutChoice::Timed;
  cudnn::AutotuneReport report;
  cudnn::autotune(network(false, DType::Float16, 45), x, o, &report);  // forward-only timing in evaluation
  CHECK(report.timed);
}

TEST_CASE("autotune says why it did not time the layouts, and refuses what it cannot do") {
  Generator gen(4124);
  cudnn::AutotuneReport report;
  nn::ModulePtr net = network(true, DType::Float64, 46);
  nn::ModulePtr same = cudnn::autotune(net, uniform({2, 3, 16, 16}, -1, 1, gen, DType::Float64, gpu), {}, &report);
  CHECK(same.get() == net.get());
  CHECK_FALSE(report.timed);
  CHECK(report.str() == "fused 2; layout not timed: float64 data always computes row-major");

  nn::ModulePtr f32 = network(true, DType::Float32, 47);
  cudnn::autotune(f32, uniform({2, 3, 16, 16}, -1, 1, gen), {}, &report);
  CHECK(report.skipped == "the example is on cpu, not a CUDA device");
  cudnn::AutotuneOptions keep;
  keep.layout = cudnn::LayoutChoice::Keep;
  cudnn::autotune(f32, uniform({2, 3, 16, 16}, -1, 1, gen, DType::Float32, gpu), keep, &report);
  CHECK(report.str() == "fused 0; layout not timed: layout: keep");  // fused by the call before

  auto cpuNet = std::make_shared<nn::Sequential>(
      std::initializer_list<nn::ModulePtr>{std::make_shared<nn::SpatialConvolution>(3, 4, 3, 3)});
  CHECK(cudnn::autotune(cpuNet, uniform({2, 3, 8, 8}, -1, 1, gen), {}, &report) == cpuNet);
  CHECK(report.skipped == "the network has no cudnn module (convert it first)");

  cudnn::AutotuneOptions cl;
  cl.layout = cudnn::LayoutChoice::ChannelsLast;
  CHECK_THROWS_WITH_AS(cudnn::autotune(f32, uniform({2, 768}, -1, 1, gen, DType::Float32, gpu), cl),
                       "cudnn::autotune: layout ChannelsLast: the example is [2 x 768], not a 4-d or 5-d batch", Error);
  cudnn::AutotuneOptions bad;
  bad.iterations = 0;
  CHECK_THROWS_WITH_AS(cudnn::autotune(f32, Tensor(), bad),
                       "cudnn::autotune: expected iterations >= 1, warmup >= 0 and 0 <= minGain < 1, got 0, 3 and "
                       "0.020000",
                       Error);
  CHECK_THROWS_WITH_AS(cudnn::autotune(nullptr, Tensor()), "cudnn::autotune: expected a network, got nullptr", Error);

  // an example the network refuses: the error names the pass, and the network is as it was
  const auto before = gradients_and_buffers(*f32);
  CHECK_THROWS_WITH_AS(cudnn::autotune(f32, uniform({2, 5, 16, 16}, -1, 1, gen, DType::Float32, gpu)),
                       doctest::Contains("cudnn::autotune: a pass on the example failed: "), Error);
  for (const Tensor& p : f32->parameters()) CHECK(p.is_contiguous());
  const auto after = gradients_and_buffers(*f32);
  REQUIRE(before.size() == after.size());
  for (size_t i = 0; i < before.size(); ++i) CHECK(max_abs_diff(before[i].second, after[i].second) == 0);
}
