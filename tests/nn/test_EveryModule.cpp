// test_EveryModule.cpp: the checks every module type gets, driven by the module table
// (tests/support/ModuleTable.h) so that a new type is covered by adding its row: finite
// differences over the input and every parameter at the row's input (float64, training and
// evaluation), accumulation of parameter gradients, a state round trip through safetensors
// bytes into a module built differently, and printing that starts with the type's name. The
// types' own suites check their configurations and closed forms in depth.
#include <doctest/doctest.h>

#include "tests/support/GradCheck.h"
#include "tests/support/ModuleTable.h"

using namespace tensor;
using namespace testing;

namespace {

nn::ModulePtr build(const ModuleSpec& s, uint64_t seed) {
  manual_seed(seed);
  return s.make();
}

}  // namespace

TEST_CASE("every module type: finite differences at its table input, training and evaluation (float64)") {
  Generator gen(20261123);
  for (const ModuleSpec& s : module_table()) {
    if (s.indexInput) continue;  // floating inputs: tests/nn/test_Embedding.cpp
    for (bool training : {true, false}) {
      if (!training && !s.backwardInEvaluation) continue;
      INFO(s.type, std::string(training ? ", training" : ", evaluation"));
      nn::ModulePtr m = build(s, 11);
      m->to(DType::Float64);
      if (!training) m->evaluate();
      expect_gradients_ok(*m, uniform(s.input, s.inputLow, 1, gen, DType::Float64));
    }
  }
}

TEST_CASE("every module type: parameter gradients accumulate with the scale, and zeroGradParameters clears them") {
  Generator gen(20261124);
  for (const ModuleSpec& s : module_table()) {
    if (s.indexInput) continue;  // floating inputs: tests/nn/test_Embedding.cpp
    INFO(s.type);
    nn::ModulePtr m = build(s, 12);
    m->to(DType::Float64);
    expect_accumulation_ok(*m, uniform(s.input, s.inputLow, 1, gen, DType::Float64));
  }
}

TEST_CASE("every module type: state round trip into a differently initialised module, and printing") {
  Generator gen(20261125);
  for (const ModuleSpec& s : module_table()) {
    if (s.indexInput) continue;  // floating inputs: tests/nn/test_Embedding.cpp
    INFO(s.type);
    nn::ModulePtr a = build(s, 13), b = build(s, 14);
    expect_state_roundtrip_ok(*a, *b, uniform(s.input, s.inputLow, 1, gen));
    expect_prints_type(*a);
  }
}
