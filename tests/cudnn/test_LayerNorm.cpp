// test_LayerNorm.cpp: cudnn.LayerNorm (our kernels, cudnn/kernels/LayerNorm.h) against nn.LayerNorm
// in float32 (TF32 off), float64, float16 and bfloat16, normalised over one and two trailing
// dimensions, with and without affine parameters, short and long rows, many rows (several
// chunks in the parameter sums), a non-contiguous input; the statistics it keeps; gradient
// accumulation with a scale and the same bits run to run; NaN and Inf rows; an empty batch;
// no steady-state allocation; the convert round trip and the errors.
#include <doctest/doctest.h>

#include "cudnn/LayerNorm.h"
#include "cudnn/core/Config.h"
#include "cudnn/ops/layer_norm.h"
#include "nn/LayerNorm.h"
#include "tests/support/ErrorText.h"
#include "tests/support/SteadyState.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
const DType kDtypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

struct Case {
  Shape normalized, input;
  bool affine;
};
const Case kCases[] = {
    {{10}, {4, 10}, true},          // one trailing dim
    {{4, 5}, {2, 3, 4, 5}, true},   // two trailing dims
    {{6}, {3, 6}, false},           // no affine
    {{7}, {7}, true},               // one row
    {{1000}, {3, 1000}, true},      // rows longer than a block
    {{3, 11}, {300, 3, 11}, true},  // many rows: several chunks in the parameter sums
    {{1}, {5, 1}, true},            // a row of one: xhat 0, var 0
    {{768}, {40, 768}, true},       // a warp a row, 3 packs a lane in 16-bit (Note [Warp-per-row layer norm])
    {{2, 32}, {9, 2, 32}, false},   // a warp a row, lanes without a pack
    {{5}, {2, 3, 4, 5}, true},      // 4-d input, one trailing dim: [* x normalized_shape]
};

// nn.LayerNorm with weight and bias drawn (not the 1 and 0 of reset), so that they matter.
std::shared_ptr<nn::LayerNorm> reference(const Case& c, Generator& gen) {
  auto m = std::make_shared<nn::LayerNorm>(c.normalized, 1e-5, c.affine);
  if (c.affine) {
    m->weight.copy_(uniform(c.normalized, 0.5, 1.5, gen));
    m->bias.copy_(uniform(c.normalized, -0.5, 0.5, gen));
  }
  return m;
}
}  // namespace

TEST_CASE("cudnn.LayerNorm matches nn.LayerNorm in every dtype, contiguous or not") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(2501);
  INFO("seed 2501");
  for (const Case& c : kCases) {
    for (DType dt : kDtypes) {
      for (bool nc : {false, true}) {
        if (nc && shape_numel(c.input) < 2) continue;
        INFO("normalized ", shape_str(c.normalized), " input ", shape_str(c.input), c.affine ? "" : " no affine");
        auto ref = reference(c, gen);
        cudnn::LayerNorm twin(c.normalized, 1e-5, c.affine);
        // inputs off centre, so that the mean matters
        expect_twin_matches(*ref, twin, uniform(c.input, -1, 3, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt),
                            nc);
      }
    }
  }
}

TEST_CASE("cudnn.LayerNorm under layernorm.engine=cudnn runs cuDNN's layer norm and matches nn.LayerNorm") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  cudnn::ScopedLayerNormEngine restore(cudnn::layer_norm_engine());  // ours again at the end
  cudnn::set_flags("layernorm.engine=cudnn");
  Generator gen(2508);
  for (const Case& c : {Case{{768}, {64, 768}, true}, Case{{4, 8}, {6, 4, 8}, true}}) {
    for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
      INFO("normalized ", shape_str(c.normalized), " ", name(dt));
      auto ref = reference(c, gen);
      cudnn::LayerNorm twin(c.normalized, 1e-5, c.affine);
      TwinTolerance tol = TwinTolerance::for_dtype(dt);
      tol.backward *= 2;  // cuDNN sums the parameter gradients in its own order
      expect_twin_matches(*ref, twin, uniform(c.input, -1, 3, gen, DType::Float64), dt, tol, false);
      // the engine that ran: cuDNN's on an sm80+ GPU with cuDNN 9 (a refusal would say why)
      INFO(cudnn::layer_norm_last_path(), " / ", cudnn::layer_norm_last_path(true));
      CHECK(cudnn::layer_norm_last_path().rfind("cudnn engine", 0) == 0);
      CHECK(cudnn::layer_norm_last_path(true).rfind("cudnn engine", 0) == 0);
    }
  }
  // float64 and no affine: our kernels, saying why
  cudnn::LayerNorm f64({5}, 1e-5, true);
  f64.to(gpu);
  f64.to(DType::Float64);
  f64.forward(uniform({3, 5}, -1, 1, gen, DType::Float64, gpu));
  CHECK(cudnn::layer_norm_last_path() == "ours: cuDNN's layer norm takes no float64");
  CHECK_THROWS_WITH_AS(cudnn::set_flags("layernorm.engine=fast"),
                       "cudnn flags: layernorm.engine expects ours or cudnn, got 'fast'", Error);
}

TEST_CASE("cudnn.LayerNorm keeps nn's statistics, in float32 for 16-bit input") {
  Generator gen(2502);
  nn::LayerNorm ref({8});
  ref.to(DType::Float64);
  const Tensor x = uniform({5, 8}, -2, 2, gen, DType::Float64);
  ref.forward(x);
  for (DType dt : kDtypes) {
    INFO(std::string(name(dt)));
    cudnn::LayerNorm twin({8});
    twin.to(gpu);
    twin.to(dt);
    twin.forward(x.to(gpu, dt));
    const DType stats = dt == DType::Float64 ? DType::Float64 : DType::Float32;
    CHECK(twin.saveMean.dtype() == stats);
    CHECK(twin.saveRstd.dtype() == stats);
    CHECK(twin.saveMean.sizes() == Shape{5});
    const double tol = dt == DType::Float64 ? 1e-12 : dt == DType::Float32 ? 1e-6 : 3e-2;  // 16 bits: x rounded
    CHECK(rel_norm_error(twin.saveMean, ref.saveMean) <= tol);
    CHECK(rel_norm_error(twin.saveRstd, ref.saveRstd) <= tol);
  }
}

TEST_CASE("cudnn.LayerNorm accumulates parameter gradients with a scale, the same bits run to run") {
  Generator gen(2503);
  nn::LayerNorm ref({3, 40});
  ref.to(DType::Float64);
  cudnn::LayerNorm twin({3, 40});
  twin.to(gpu);
  twin.to(DType::Float64);
  twin.loadStateDict(ref.stateDict());
  ref.zeroGradParameters();
  twin.zeroGradParameters();
  const Tensor x = uniform({130, 3, 40}, -1, 1, gen, DType::Float64);
  for (double scale : {1.0, 0.5, -2.0}) {
    const Tensor g = uniform({130, 3, 40}, -1, 1, gen, DType::Float64);
    ref.forward(x);
    twin.forward(x.to(gpu));
    ref.backward(x, g, scale);
    twin.backward(x.to(gpu), g.to(gpu), scale);
  }
  CHECK(rel_norm_error(twin.gradWeight, ref.gradWeight) < 1e-12);
  CHECK(rel_norm_error(twin.gradBias, ref.gradBias) < 1e-12);

  // float32 and float16: two runs from zero give the same bits
  for (DType dt : {DType::Float32, DType::Float16}) {
    INFO(std::string(name(dt)));
    twin.to(dt);
    const Tensor xg = uniform({1000, 3, 40}, -1, 1, gen, dt, gpu), g = uniform({1000, 3, 40}, -1, 1, gen, dt, gpu);
    Tensor first[3];
    for (int run = 0; run < 2; ++run) {
      twin.zeroGradParameters();
      twin.forward(xg);
      const Tensor gi = twin.backward(xg, g).clone();
      if (run == 0) {
        first[0] = gi;
        first[1] = twin.gradWeight.clone();
        first[2] = twin.gradBias.clone();
      } else {
        CHECK(max_abs_diff(gi, first[0]) == 0);
        CHECK(max_abs_diff(twin.gradWeight, first[1]) == 0);
        CHECK(max_abs_diff(twin.gradBias, first[2]) == 0);
      }
    }
  }
}

TEST_CASE("cudnn.LayerNorm: NaN and Inf make their rows NaN as nn's (Note [NaN and Inf])") {
  Generator gen(2504);
  for (const Case& c : {kCases[0], kCases[1], kCases[2]}) {
    for (DType dt : {DType::Float32, DType::Float64}) {
      INFO("normalized ", shape_str(c.normalized), " input ", shape_str(c.input), " ", std::string(name(dt)));
      auto ref = reference(c, gen);
      cudnn::LayerNorm twin(c.normalized, 1e-5, c.affine);
      expect_twin_nonfinite_matches(*ref, twin, uniform(c.input, -2, 2, gen, DType::Float64), {}, dt,
                                    TwinTolerance::for_dtype(dt));
    }
  }
}

TEST_CASE("cudnn.LayerNorm: an empty batch gives nn's empty shapes and leaves the gradients alone") {
  for (DType dt : kDtypes) {
    INFO(std::string(name(dt)));
    cudnn::LayerNorm twin({5});
    twin.to(gpu);
    twin.to(dt);
    twin.zeroGradParameters();
    const Tensor x = zeros({0, 5}, dt, gpu);
    CHECK(twin.forward(x).sizes() == Shape{0, 5});
    CHECK(twin.saveMean.sizes() == Shape{0});
    const Tensor gi = twin.backward(x, zeros({0, 5}, dt, gpu));
    CHECK(gi.sizes() == Shape{0, 5});
    CHECK(max_abs_diff(twin.gradWeight.to(DType::Float64), zeros({5}, DType::Float64, gpu)) == 0);
  }
}

TEST_CASE("cudnn.LayerNorm steady state: no device allocation after a warm-up") {
  Generator gen(2505);
  for (bool affine : {true, false}) {
    cudnn::LayerNorm twin({4, 6}, 1e-5, affine);
    twin.to(gpu);
    expect_no_steady_state_allocations(twin, uniform({3, 4, 6}, -2, 2, gen).to(gpu));
  }
}

TEST_CASE("cudnn.LayerNorm: convert round trip, printing and errors") {
  Generator gen(2506);
  expect_convert_roundtrip(std::make_shared<nn::LayerNorm>(Shape{4, 5}), uniform({3, 4, 5}, -2, 2, gen));
  expect_convert_roundtrip(std::make_shared<nn::LayerNorm>(Shape{5}, 1e-6, false), uniform({3, 5}, -2, 2, gen));
  CHECK(cudnn::LayerNorm({4, 8}).str() == "cudnn.LayerNorm([4 x 8], eps=1e-05)");

  cudnn::LayerNorm twin({4});
  CHECK_THROWS_WITH_AS(twin.forward(zeros({2, 4})),
                       "cudnn.LayerNorm::updateOutput: expected input on a CUDA device, got float32 [2 x 4] on cpu "
                       "(move it with .to(tensor::Device::cuda()))",
                       Error);
  twin.to(gpu);
  std::string e = error_of([&] { twin.forward(zeros({2, 5}, DType::Float32, gpu)); });
  INFO(e);
  CHECK(has(e, "cudnn.LayerNorm::updateOutput: expected input [* x 4]"));
  CHECK(has(e, "[2 x 5]"));
  e = error_of([&] { twin.forward(zeros({2, 4}, DType::Float64, gpu)); });
  CHECK(has(e, "cudnn.LayerNorm::updateOutput: expected input of weight's dtype and device (float32 on cuda:0)"));
  e = error_of([&] { twin.forward(zeros({2, 4}, DType::Int64, gpu)); });
  CHECK(has(e, "int64"));
  twin.forward(zeros({2, 4}, DType::Float32, gpu));
  e = error_of([&] { twin.backward(zeros({2, 4}, DType::Float32, gpu), zeros({4, 2}, DType::Float32, gpu)); });
  CHECK(has(e, "cudnn.LayerNorm::updateGradInput: expected gradOutput of the input's shape and dtype"));
  e = error_of([&] { twin.backward(zeros({3, 4}, DType::Float32, gpu), zeros({3, 4}, DType::Float32, gpu)); });
  CHECK(has(e, "cudnn.LayerNorm::updateGradInput: expected a forward() of input"));
}
