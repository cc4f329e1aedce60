// test_BadInput.cpp: the bad-input matrix on the CPU: every module type of the table
// (tests/support/ModuleTable.h) with a wrong rank, a wrong plane count and a wrong dtype gets an
// error naming the module and the input (docs/architecture.md, "Errors"); an empty batch gives
// an empty output and gradInput; a non-contiguous input gives what its contiguous copy gives;
// an input that is NaN everywhere gives an output that is NaN everywhere. The GPU half
// (tests/cudnn/test_BadInput.cpp) walks the same table with the twins and CUDA inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "convert/ModelFile.h"
#include "tests/support/ErrorText.h"
#include "tests/support/ModuleTable.h"

using namespace tensor;
using namespace testing;

namespace {

// A fresh module of the row, with the same initial state every time.
nn::ModulePtr build(const ModuleSpec& s) {
  manual_seed(2024);
  nn::ModulePtr m = s.make();
  if (s.stochastic) m->evaluate();
  return m;
}

}  // namespace

TEST_CASE("the module table has a row for every built-in model type") {
  for (const std::string& t : nn::model_types()) {
    if (t.rfind("nn.", 0) != 0) continue;
    INFO(t);
    CHECK((find_spec(t.substr(3)) != nullptr || is_table_module_type(t.substr(3))));
  }
  for (const ModuleSpec& s : module_table()) {
    INFO(s.type);
    CHECK(build(s)->type_name() == "nn." + s.type);
  }
}

TEST_CASE("bad-input matrix (nn): a wrong rank is an error naming the module and the input's shape") {
  for (const ModuleSpec& s : module_table()) {
    if (s.indexInput) continue;  // floating inputs: tests/nn/test_Embedding.cpp
    if (s.wrongRank.empty()) continue;
    INFO(s.type, ", input ", shape_str(s.wrongRank));
    nn::ModulePtr m = build(s);
    const std::string e = error_of([&] { m->forward(zeros(s.wrongRank)); });
    CHECK(has(e, "nn." + s.type));
    CHECK(has(e, shape_str(s.wrongRank)));
  }
}

TEST_CASE("bad-input matrix (nn): a wrong plane count is an error naming the module and the input's shape") {
  for (const ModuleSpec& s : module_table()) {
    if (s.indexInput) continue;  // floating inputs: tests/nn/test_Embedding.cpp
    if (s.planeDim < 0) continue;
    const Shape bad = with_size(s.input, s.planeDim, s.input[s.planeDim] + 1);
    INFO(s.type, ", input ", shape_str(bad));
    nn::ModulePtr m = build(s);
    const std::string e = error_of([&] { m->forward(zeros(bad)); });
    INFO(e);
    CHECK(has(e, "nn." + s.type));
    CHECK(has(e, s.childSeesOtherShape ? "In 1 module of nn." + s.type + ": " : shape_str(bad)));
  }
}

TEST_CASE("bad-input matrix (nn): an integer input is an error naming the module and the dtype") {
  for (const ModuleSpec& s : module_table()) {
    if (s.indexInput) continue;  // floating inputs: tests/nn/test_Embedding.cpp
    INFO(s.type);
    nn::ModulePtr m = build(s);
    const Tensor x = arange(0, static_cast<double>(shape_numel(s.input)), 1, DType::Int64).view(s.input);
    const std::string e = error_of([&] { m->forward(x); });
    if (s.anyDtype) {  // handed through: the same integers, arranged as the float32 input would be
      CHECK(e == "(no error)");
      CHECK(m->output.dtype() == DType::Int64);
      CHECK(max_abs_diff(m->output.to(DType::Float64), build(s)->forward(x.to(DType::Float32)).to(DType::Float64)) ==
            0);
    } else {
      CHECK(has(e, "nn." + s.type));
      CHECK(has(e, "int64"));
    }
  }
}

TEST_CASE("bad-input matrix (nn): an empty batch gives an empty output and gradInput, in training and evaluation") {
  Generator gen(3);
  for (const ModuleSpec& s : module_table()) {
    if (s.indexInput) continue;  // floating inputs: tests/nn/test_Embedding.cpp
    for (bool training : {true, false}) {
      INFO(s.type, std::string(training ? ", training" : ", evaluation"));
      nn::ModulePtr m = build(s);
      if (!training) m->evaluate();
      const Shape want = with_size(m->forward(uniform(s.input, s.inputLow, 1, gen)).sizes(), s.batchDim, 0);
      const Tensor x = zeros(with_size(s.input, s.batchDim, 0));
      Shape got;
      CHECK(error_of([&] { got = m->forward(x).sizes(); }) == "(no error)");
      CHECK(shape_str(got) == shape_str(want));
      if (!training) continue;  // backward after an evaluation forward is an error for some (the RNNs)
      Shape gotGrad;
      CHECK(error_of([&] { gotGrad = m->backward(x, zeros(want)).sizes(); }) == "(no error)");
      CHECK(shape_str(gotGrad) == shape_str(x.sizes()));
      for (const Tensor& gp : m->gradParameters()) CHECK_FALSE(has_nonfinite(gp));
    }
  }
}

TEST_CASE("bad-input matrix (nn): a non-contiguous input gives what its contiguous copy gives") {
  Generator gen(4);
  for (const ModuleSpec& s : module_table()) {
    if (s.indexInput) continue;  // floating inputs: tests/nn/test_Embedding.cpp
    INFO(s.type);
    const Tensor x = uniform(s.input, s.inputLow, 1, gen);
    const Tensor xn = noncontiguous_copy(x);
    REQUIRE_FALSE(xn.is_contiguous());
    nn::ModulePtr a = build(s), b = build(s);
    const Tensor y = a->forward(x).clone();
    const Tensor g = uniform(y.sizes(), -1, 1, gen);
    const Tensor gi = a->backward(x, g).clone();
    CHECK(max_abs_diff(b->forward(xn), y) <= 1e-6);
    CHECK(max_abs_diff(b->backward(xn, g), gi) <= 1e-6);
    const auto pa = a->gradParameters(), pb = b->gradParameters();
    REQUIRE(pa.size() == pb.size());
    for (size_t i = 0; i < pa.size(); ++i) CHECK(max_abs_diff(pa[i], pb[i]) <= 1e-5);
  }
}

TEST_CASE("bad-input matrix (nn): an input NaN everywhere gives an output NaN everywhere; +-Inf computes") {
  for (const ModuleSpec& s : module_table()) {
    if (s.indexInput) continue;  // floating inputs: tests/nn/test_Embedding.cpp
    for (DType dt : {DType::Float32, DType::Float64}) {
      INFO(s.type, " ", std::string(name(dt)));
      nn::ModulePtr m = build(s);
      m->to(dt);
      const Tensor y = m->forward(full(s.input, std::numeric_limits<double>::quiet_NaN(), dt));
      if (s.nanEverywhere) {
        const std::vector<double> v = y.to(DType::Float64).contiguous().to_vector<double>();
        CHECK(std::count_if(v.begin(), v.end(), [](double e) { return std::isnan(e); }) ==
              static_cast<std::ptrdiff_t>(v.size()));
      }
      for (double inf : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
        nn::ModulePtr mi = build(s);
        mi->to(dt);
        const Tensor xi = full(s.input, inf, dt);
        CHECK(error_of([&] { mi->backward(xi, zeros(mi->forward(xi).sizes(), dt)); }) == "(no error)");
      }
    }
  }
}

TEST_CASE("bad-input matrix (nn): a parameter or gradient replaced by a smaller tensor is an error naming it") {
  // Note [Parameters are checked where they are used]: before, the kernels read (forward) or
  // wrote (backward) past the end of the smaller tensor.
  Generator gen(5);
  for (const ModuleSpec& s : module_table()) {
    nn::ModulePtr probe = build(s);
    const std::vector<ParameterSlot> slots = parameter_slots(*probe);
    INFO(s.type);
    REQUIRE(slots.size() == probe->namedParameters().size());  // every parameter reachable
    for (size_t i = 0; i < slots.size(); ++i) {
      for (bool gradient : {false, true}) {
        nn::ModulePtr m = build(s);
        m->train();
        ParameterSlot slot = parameter_slots(*m)[i];
        INFO(slot.owner, " ", slot.name, gradient ? " (gradient)" : "");
        Tensor& t = gradient ? *slot.grad : *slot.value;
        t = zeros({std::max<int64_t>(t.numel() - 1, 0)});
        // an index-input row (Embedding) takes indices in [0, 2)
        const Tensor x =
            s.indexInput ? uniform(s.input, 0, 2, gen).floor().to(DType::Int64) : uniform(s.input, s.inputLow, 1, gen);
        const std::string e = error_of([&] {
          const Tensor y = m->forward(x).clone();
          m->backward(x, uniform(y.sizes(), -1, 1, gen));
        });
        CHECK(has(e, slot.owner + "::"));
        CHECK(has(e, "expected " + slot.name + (gradient ? "'s gradient" : "")));
        CHECK(has(e, shape_str(t.sizes())));
      }
    }
  }
}
