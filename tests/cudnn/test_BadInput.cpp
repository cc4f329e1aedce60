// test_BadInput.cpp: the bad-input matrix on the GPU, over the table of tests/nn/test_BadInput.cpp
// (tests/support/ModuleTable.h), each row's twin made by nn::convert: a wrong rank, plane count
// or dtype is an error naming the twin and the input; a CPU input is an error for the twin,
// while the nn module bridges a CUDA input (the same values, on the input's device); an empty
// batch gives nn's empty shapes; a non-contiguous input gives nn's values; NaN and +-Inf give
// nn's values element by element (Note [NaN and Inf]), an input NaN everywhere included, and in
// gradOutput give nn's gradInput and parameter gradients element by element.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "convert/Convert.h"
#include "cudnn/core/Config.h"
#include "tests/support/ErrorText.h"
#include "tests/support/ModuleTable.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {

const Device gpu = Device::cuda(0);

// The row's nn module (on the CPU) and its twin (on the GPU), with the same initial state.
nn::ModulePtr build(const ModuleSpec& s) {
  manual_seed(2024);
  nn::ModulePtr m = s.make();
  if (s.stochastic) m->evaluate();
  return m;
}
nn::ModulePtr build_twin(const ModuleSpec& s) {
  nn::ModulePtr m = nn::convert(build(s), cudnn::backend);
  m->to(gpu);
  return m;
}

}  // namespace

// Whether nn/modules.def lists `type` without a twin (a container such as nn.DecoderLM, whose
// own compute is tensor ops: convert twins its children and keeps it).
bool has_no_twin(const std::string& type) {
  static const std::vector<std::string> untwinned = {
#define NN_TWIN(X)
#define NN_MODULE(X) #X,
#include "nn/modules.def"
  };
  return std::find(untwinned.begin(), untwinned.end(), type) != untwinned.end();
}

TEST_CASE("bad-input matrix (cudnn): every row converts to its twin (containers without one stay, holding twins)") {
  for (const ModuleSpec& s : module_table()) {
    INFO(s.type);
    CHECK(build_twin(s)->type_name() == (has_no_twin(s.type) ? "nn." : "cudnn.") + s.type);
  }
}

TEST_CASE("bad-input matrix (cudnn): a wrong rank is an error naming the twin and the input's shape") {
  for (const ModuleSpec& s : module_table()) {
    if (s.indexInput) continue;  // floating inputs: tests/cudnn/test_Embedding.cpp
    if (s.wrongRank.empty()) continue;
    INFO(s.type, ", input ", shape_str(s.wrongRank));
    nn::ModulePtr m = build_twin(s);
    const std::string e = error_of([&] { m->forward(zeros(s.wrongRank, DType::Float32, gpu)); });
    INFO(e);
    CHECK(has(e, m->type_name()));
    CHECK(has(e, shape_str(s.wrongRank)));
  }
}

TEST_CASE("bad-input matrix (cudnn): a wrong plane count is an error naming the twin and the input's shape") {
  for (const ModuleSpec& s : module_table()) {
    if (s.indexInput) continue;  // floating inputs: tests/cudnn/test_Embedding.cpp
    if (s.planeDim < 0) continue;
    const Shape bad = with_size(s.input, s.planeDim, s.input[s.planeDim] + 1);
    INFO(s.type, ", input ", shape_str(bad));
    nn::ModulePtr m = build_twin(s);
    const std::string e = error_of([&] { m->forward(zeros(bad, DType::Float32, gpu)); });
    INFO(e);
    CHECK(has(e, m->type_name()));
    CHECK(has(e, s.childSeesOtherShape ? "In 1 module of " + m->type_name() + ": " : shape_str(bad)));
  }
}

TEST_CASE("bad-input matrix (cudnn): an integer input is an error naming the twin, or handed through as nn does") {
  for (const ModuleSpec& s : module_table()) {
    if (s.indexInput) continue;  // floating inputs: tests/cudnn/test_Embedding.cpp
    INFO(s.type);
    nn::ModulePtr m = build_twin(s);
    const Tensor x = arange(0, static_cast<double>(shape_numel(s.input)), 1, DType::Int64).view(s.input);
    const std::string e = error_of([&] { m->forward(x.to(gpu)); });
    INFO(e);
    if (s.anyDtype) {
      CHECK(e == "(no error)");
      CHECK(m->output.dtype() == DType::Int64);
      CHECK(max_abs_diff(m->output.cpu(), build(s)->forward(x)) == 0);
    } else {
      CHECK(has(e, m->type_name()));
      CHECK(has(e, "int64"));
    }
  }
}

TEST_CASE("bad-input matrix (cudnn): a CPU input is an error for the twin; the nn module bridges a CUDA input") {
  Generator gen(5);
  for (const ModuleSpec& s : module_table()) {
    if (s.indexInput) continue;  // floating inputs: tests/cudnn/test_Embedding.cpp
    INFO(s.type);
    const Tensor x = uniform(s.input, s.inputLow, 1, gen);
    nn::ModulePtr twin = build_twin(s);
    const std::string e = error_of([&] { twin->forward(x); });
    INFO(e);
    CHECK(has(e, "expected input on a CUDA device"));
    CHECK(has(e, "cudnn."));

    // Each module its own copy of x, which its forward and backward both see: an in-place module
    // (AddConstant(0.5, true)) overwrites its input, and a bridged one only its host copy of it
    // (Note [Device bridging] in nn/Module.cpp), so a shared x would reach the second module
    // already shifted.
    nn::ModulePtr cpu = build(s), bridged = build(s);
    const Tensor xc = x.clone(), xg = x.to(gpu);
    manual_seed(6);
    const Tensor y = cpu->forward(xc).clone();
    const Tensor g = uniform(y.sizes(), -1, 1, gen);
    const Tensor gi = cpu->backward(xc, g).clone();
    manual_seed(6);
    const Tensor yb = bridged->forward(xg);
    CHECK(yb.device() == gpu);
    CHECK(max_abs_diff(yb.cpu(), y) == 0);
    const Tensor gib = bridged->backward(xg, g.to(gpu));
    CHECK(gib.device() == gpu);
    CHECK(max_abs_diff(gib.cpu(), gi) == 0);
  }
}

// The recurrent twins included: an empty batch never reaches cuDNN (Note [Empty RNN batches] in
// cudnn/ops/rnn.cpp), and their final states and state gradients come out empty as nn's do.
namespace {
// The empty-batch, non-contiguous and non-finite rows, with the cudnn flags `flags` in force:
// as given, and again under channels_last=true, where every 4-d and 5-d activation is computed
// channels-last (Note [Channels-last twins] in cudnn/core/Layout.h) and must still give nn's
// shapes and values.
void expect_empty_batches_match(const char* flags) {
  cudnn::ScopedConfig scoped(flags);
  Generator gen(9);
  for (const ModuleSpec& s : module_table()) {
    if (s.indexInput) continue;  // floating inputs: tests/cudnn/test_Embedding.cpp
    for (bool training : {true, false}) {
      INFO(s.type, std::string(training ? ", training" : ", evaluation"));
      nn::ModulePtr ref = build(s), twin = build_twin(s);
      if (!training) {
        ref->evaluate();
        twin->evaluate();
      }
      // parameter gradients that are not zero, so "left unchanged" is seen
      const auto rg = ref->gradParameters(), tg = twin->gradParameters();
      REQUIRE(rg.size() == tg.size());
      for (size_t i = 0; i < rg.size(); ++i) {
        Tensor(rg[i]).copy_(uniform(rg[i].sizes(), -1, 1, gen));
        Tensor(tg[i]).copy_(rg[i].to(gpu));
      }
      const Tensor x = zeros(with_size(s.input, s.batchDim, 0));
      const Shape want = ref->forward(x).sizes();
      Shape got;
      CHECK(error_of([&] { got = twin->forward(x.to(gpu)).sizes(); }) == "(no error)");
      CHECK(shape_str(got) == shape_str(want));
      if (!training) continue;  // backward after an evaluation forward is an error for some (the RNNs)
      const Shape wantGrad = ref->backward(x, zeros(want)).sizes();
      Shape gotGrad;
      CHECK(error_of([&] { gotGrad = twin->backward(x.to(gpu), zeros(want, DType::Float32, gpu)).sizes(); }) ==
            "(no error)");
      CHECK(shape_str(gotGrad) == shape_str(wantGrad));
      CHECK(shape_str(gotGrad) == shape_str(x.sizes()));
      const auto pr = ref->namedGradParameters(), pt = twin->namedGradParameters();
      REQUIRE(pr.size() == pt.size());
      for (size_t i = 0; i < pr.size(); ++i) {
        INFO(pr[i].first);
        CHECK_FALSE(has_nonfinite(pt[i].second));
        CHECK(max_abs_diff(pt[i].second.cpu(), pr[i].second) == 0);
      }
    }
  }
}

void expect_noncontiguous_match(const char* flags) {
  cudnn::ScopedConfig scoped(flags);
  Generator gen(7);
  const TwinTolerance tol = TwinTolerance::for_dtype(DType::Float64);
  for (const ModuleSpec& s : module_table()) {
    if (s.indexInput) continue;  // floating inputs: tests/cudnn/test_Embedding.cpp
    INFO(s.type);
    nn::ModulePtr ref = build(s), twin = build_twin(s);
    ref->to(DType::Float64);
    twin->to(DType::Float64);
    const Tensor x = uniform(s.input, s.inputLow, 1, gen, DType::Float64);
    const Tensor xn = noncontiguous_copy(x.to(gpu));
    REQUIRE_FALSE(xn.is_contiguous());
    const Tensor y = ref->forward(x).clone();
    const Tensor g = uniform(y.sizes(), -1, 1, gen, DType::Float64);
    const Tensor gi = ref->backward(x, g).clone();
    CHECK(rel_norm_error(twin->forward(xn).cpu(), y) <= tol.forward);
    CHECK(rel_norm_error(twin->backward(xn, g.to(gpu)).cpu(), gi) <= tol.backward);
    const auto pr = ref->gradParameters(), pt = twin->gradParameters();
    REQUIRE(pr.size() == pt.size());
    for (size_t i = 0; i < pr.size(); ++i) CHECK(rel_norm_error(pt[i].cpu(), pr[i]) <= tol.backward);
  }
}

void expect_nonfinite_match(const char* flags) {
  cudnn::ScopedConfig scoped(flags);
  Generator gen(8);
  for (const ModuleSpec& s : module_table()) {
    if (s.indexInput) continue;  // floating inputs: tests/cudnn/test_Embedding.cpp
    INFO(s.type);
    nn::ModulePtr ref = build(s), twin = build_twin(s);
    expect_twin_nonfinite_matches(*ref, *twin, uniform(s.input, s.inputLow, 1, gen, DType::Float64));
    {
      nn::ModulePtr ref2 = build(s), twin2 = build_twin(s);
      expect_twin_nonfinite_gradient_matches(*ref2, *twin2, uniform(s.input, s.inputLow, 1, gen, DType::Float64));
    }
    // NaN everywhere
    const Tensor nan = full(s.input, std::numeric_limits<double>::quiet_NaN(), DType::Float64);
    expect_same_nonfinite("output for an input NaN everywhere", twin->forward(nan.to(gpu, twin->output.dtype())),
                          ref->forward(nan), 1e-5);
  }
}
}  // namespace

TEST_CASE("bad-input matrix (cudnn): an empty batch gives nn's empty output, gradInput and gradients") {
  expect_empty_batches_match("");
}

TEST_CASE("bad-input matrix (cudnn): a non-contiguous input gives nn's values (float64)") {
  expect_noncontiguous_match("");
}

TEST_CASE("bad-input matrix (cudnn): NaN and +-Inf in the input or in gradOutput give nn's values element by element") {
  expect_nonfinite_match("allow_tf32=false");
}

TEST_CASE("bad-input matrix (cudnn) under channels_last=true: empty batches, non-contiguous and non-finite inputs") {
  expect_empty_batches_match("channels_last=true");
  expect_noncontiguous_match("channels_last=true");
  expect_nonfinite_match("allow_tf32=false,channels_last=true");
}

TEST_CASE("bad-input matrix (cudnn): a parameter or gradient replaced by a smaller tensor is an error naming it") {
  // Note [Parameters are checked where they are used]: the twins call the nn base's checks
  Generator gen(5);
  for (const ModuleSpec& s : module_table()) {
    nn::ModulePtr probe = build_twin(s);
    const std::vector<ParameterSlot> slots = parameter_slots(*probe);
    INFO(s.type);
    REQUIRE(slots.size() == probe->namedParameters().size());
    for (size_t i = 0; i < slots.size(); ++i) {
      for (bool gradient : {false, true}) {
        nn::ModulePtr m = build_twin(s);
        m->train();
        ParameterSlot slot = parameter_slots(*m)[i];
        INFO(slot.owner, " ", slot.name, gradient ? " (gradient)" : "");
        Tensor& t = gradient ? *slot.grad : *slot.value;
        t = zeros({std::max<int64_t>(t.numel() - 1, 0)}, t.dtype(), t.device());
        // an index-input row (Embedding) takes indices in [0, 2)
        const Tensor x =
            (s.indexInput ? uniform(s.input, 0, 2, gen).floor().to(DType::Int64) : uniform(s.input, s.inputLow, 1, gen))
                .to(gpu);
        const std::string e = error_of([&] {
          const Tensor y = m->forward(x).clone();
          m->backward(x, uniform(y.sizes(), -1, 1, gen).to(gpu));
        });
        INFO(e);
        CHECK(has(e, slot.owner + "::"));
        CHECK(has(e, "expected " + slot.name + (gradient ? "'s gradient" : "")));
        CHECK(has(e, shape_str(t.sizes())));
      }
    }
  }
}
