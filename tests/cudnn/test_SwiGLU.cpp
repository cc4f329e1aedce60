// test_SwiGLU.cpp: cudnn.SwiGLU (cuBLAS projections, the fused gate kernel of
// cudnn/kernels/SwiGLU.h) against nn.SwiGLU in float32 (TF32 off), float64, float16 and
// bfloat16, with and without bias, over leading dims and a non-contiguous input; NaN and Inf in
// the input and gradOutput; an empty batch; setGradInputNeeded(false); the same bits run to run;
// no steady-state allocation; the convert round trip and the errors.
#include <doctest/doctest.h>

#include "cudnn/SwiGLU.h"
#include "cudnn/core/Config.h"
#include "nn/SwiGLU.h"
#include "tests/support/AddingChecks.h"
#include "tests/support/ErrorText.h"
#include "tests/support/SteadyState.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
const DType kDtypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

struct Case {
  int64_t dim, hidden;
  bool bias;
  Shape input;
};
const Case kCases[] = {
    {8, 12, false, {5, 8}},          // Llama's: no bias
    {6, 10, true, {2, 3, 6}},        // with bias, leading dims
    {16, 40, false, {2, 2, 3, 16}},  // 4-d input
    {4, 7, true, {4}},               // one row
    {64, 172, false, {33, 64}},      // a 2/3 * 4 * dim hidden, odd rows
};
}  // namespace

TEST_CASE("cudnn.SwiGLU matches nn.SwiGLU in every dtype, contiguous or not") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(4811);
  INFO("seed 4811");
  for (const Case& c : kCases) {
    for (DType dt : kDtypes) {
      for (bool nc : {false, true}) {
        if (nc && c.input.size() < 2) continue;
        INFO("dim ", c.dim, " hidden ", c.hidden, c.bias ? " bias" : "", " input ", shape_str(c.input), " ", name(dt),
             nc ? " non-contiguous" : "");
        manual_seed(7);
        nn::SwiGLU ref(c.dim, c.hidden, c.bias);
        manual_seed(7);
        cudnn::SwiGLU twin(c.dim, c.hidden, c.bias);
        expect_twin_matches(ref, twin, uniform(c.input, -2, 2, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt),
                            nc);
      }
    }
  }
}

TEST_CASE("cudnn.SwiGLU: NaN and Inf in the input and in gradOutput as nn's (Note [NaN and Inf])") {
  cudnn::ScopedConfig flags("allow_tf32=false");  // the finite values are compared at float32's tolerance
  Generator gen(4812);
  for (const Case& c : {kCases[0], kCases[1]}) {
    for (DType dt : {DType::Float32, DType::Float64}) {
      INFO("dim ", c.dim, " hidden ", c.hidden, " ", name(dt));
      manual_seed(8);
      nn::SwiGLU ref(c.dim, c.hidden, c.bias);
      manual_seed(8);
      cudnn::SwiGLU twin(c.dim, c.hidden, c.bias);
      expect_twin_nonfinite_matches(ref, twin, uniform(c.input, -2, 2, gen, DType::Float64), {}, dt,
                                    TwinTolerance::for_dtype(dt));
      manual_seed(9);
      nn::SwiGLU ref2(c.dim, c.hidden, c.bias);
      manual_seed(9);
      cudnn::SwiGLU twin2(c.dim, c.hidden, c.bias);
      expect_twin_nonfinite_gradient_matches(ref2, twin2, uniform(c.input, -2, 2, gen, DType::Float64), {}, dt,
                                             TwinTolerance::for_dtype(dt));
    }
  }
}

TEST_CASE("cudnn.SwiGLU: an empty batch, no gradInput, the same bits run to run") {
  Generator gen(4813);
  for (DType dt : kDtypes) {
    INFO(name(dt));
    cudnn::SwiGLU twin(8, 12, true);
    twin.to(gpu);
    twin.to(dt);
    twin.zeroGradParameters();
    for (const Shape& empty : {Shape{0, 8}, Shape{2, 0, 8}}) {
      const Tensor x = zeros(empty, dt, gpu);
      CHECK(twin.forward(x).sizes() == empty);
      CHECK(twin.backward(x, zeros(empty, dt, gpu)).sizes() == empty);
    }
    for (const auto& [k, g] : twin.namedGradParameters()) {
      INFO(k);
      CHECK(max_abs_diff(g.to(DType::Float64), zeros(g.sizes(), DType::Float64, gpu)) == 0);
    }
    // two runs from zero give the same bits; without gradInput the parameters' gradients too
    const Tensor x = uniform({50, 8}, -1, 1, gen, dt, gpu), gy = uniform({50, 8}, -1, 1, gen, dt, gpu);
    std::map<std::string, Tensor> first;
    Tensor gi;
    for (int run = 0; run < 3; ++run) {
      twin.setGradInputNeeded(run < 2);
      twin.zeroGradParameters();
      twin.forward(x);
      const Tensor g = twin.backward(x, gy);
      if (run == 0) gi = g.clone();
      if (run == 1) CHECK(max_abs_diff(g, gi) == 0);
      if (run == 2) CHECK(!g.defined());
      for (const auto& [k, p] : twin.namedGradParameters()) {
        if (run == 0) {
          first[k] = p.clone();
        } else {
          INFO(k, " run ", run);
          CHECK(max_abs_diff(p, first[k]) == 0);
        }
      }
    }
  }
}

TEST_CASE("cudnn.SwiGLU steady state: no device allocation after a warm-up") {
  Generator gen(4814);
  for (bool bias : {false, true}) {
    cudnn::SwiGLU twin(8, 12, bias);
    twin.to(gpu);
    expect_no_steady_state_allocations(twin, uniform({3, 5, 8}, -2, 2, gen).to(gpu));
  }
}

TEST_CASE("cudnn.SwiGLU: convert round trip, printing and errors") {
  Generator gen(4815);
  expect_convert_roundtrip(std::make_shared<nn::SwiGLU>(6, 10), uniform({2, 3, 6}, -2, 2, gen));
  expect_convert_roundtrip(std::make_shared<nn::SwiGLU>(4, 7, true), uniform({5, 4}, -2, 2, gen));
  CHECK(cudnn::SwiGLU(4, 6).str() == "cudnn.SwiGLU(4 -> 6 -> 4)");

  cudnn::SwiGLU twin(4, 6);
  CHECK_THROWS_WITH_AS(twin.forward(zeros({2, 4})),
                       "cudnn.SwiGLU::updateOutput: expected input on a CUDA device, got float32 [2 x 4] on cpu "
                       "(move it with .to(tensor::Device::cuda()))",
                       Error);
  twin.to(gpu);
  std::string e = error_of([&] { twin.forward(zeros({2, 5}, DType::Float32, gpu)); });
  INFO(e);
  CHECK(has(e, "cudnn.SwiGLU::updateOutput: expected input of [* x 4] (any leading dims), got [2 x 5]"));
  e = error_of([&] { twin.forward(zeros({2, 4}, DType::Float64, gpu)); });
  CHECK(has(e, "cudnn.SwiGLU::updateOutput: expected input of gate_proj.weight's dtype and device"));
  e = error_of([&] { twin.forward(zeros({2, 4}, DType::Int64, gpu)); });
  CHECK(has(e, "int64"));
  twin.forward(zeros({2, 4}, DType::Float32, gpu));
  e = error_of([&] { twin.backward(zeros({2, 4}, DType::Float32, gpu), zeros({4, 2}, DType::Float32, gpu)); });
  CHECK(has(e, "cudnn.SwiGLU::updateGradInput: expected gradOutput of the output's shape [2 x 4]"));
  e = error_of([&] { twin.backward(zeros({3, 4}, DType::Float32, gpu), zeros({3, 4}, DType::Float32, gpu)); });
  CHECK(has(e, "cudnn.SwiGLU::updateGradInput: expected a forward() of input"));
}

TEST_CASE("cudnn.SwiGLU forwardAdding matches nn's: a few rows' down projection takes the addend") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(4817);
  for (DType dt : kDtypes) {
    for (const Shape& s : {Shape{1, 64}, Shape{2, 2, 64}, Shape{9, 64}}) {
      INFO(name(dt), " input ", shape_str(s));
      nn::SwiGLU ref(64, 176, false);
      cudnn::SwiGLU twin(64, 176, false);
      expect_twin_adding_matches(ref, twin, uniform(s, -1, 1, gen, DType::Float64), dt,
                                 TwinTolerance::for_dtype(dt).forward);
    }
  }
}