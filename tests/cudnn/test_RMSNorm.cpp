// test_RMSNorm.cpp: cudnn.RMSNorm (our kernels, cudnn/kernels/RMSNorm.h, and cuDNN's graph under
// rmsnorm.engine=cudnn) against nn.RMSNorm in float32 (TF32 off), float64, float16 and bfloat16,
// normalised over one and two trailing dimensions, with and without a weight, eps given or the
// dtype's, short and long rows, many rows (several chunks in the weight's sums), a non-contiguous
// input; PyTorch's 16-bit bits; the statistics it keeps; gradient accumulation with a scale and
// the same bits run to run; NaN and Inf rows; an empty batch; no steady-state allocation; the
// flag; the convert round trip and the errors.
#include <doctest/doctest.h>

#include "cudnn/RMSNorm.h"
#include "cudnn/core/Config.h"
#include "cudnn/ops/rms_norm.h"
#include "nn/RMSNorm.h"
#include "tests/support/DecoderNormReference.h"
#include "tests/support/ErrorText.h"
#include "tests/support/SteadyState.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
const DType kDtypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};
const cudnn::RMSNormEngine kEngines[] = {cudnn::RMSNormEngine::Kernel, cudnn::RMSNormEngine::Cudnn};

struct Case {
  Shape normalized, input;
  bool affine;
  std::optional<double> eps = 1e-6;
};
const Case kCases[] = {
    {{10}, {4, 10}, true},           // one trailing dim
    {{4, 5}, {2, 3, 4, 5}, true},    // two trailing dims
    {{6}, {3, 6}, false},            // no weight
    {{7}, {7}, true, std::nullopt},  // one row, the dtype's eps
    {{1000}, {3, 1000}, true},       // several values a thread (Note [RMSNorm's row in registers])
    {{3, 11}, {300, 3, 11}, true},   // many rows: several chunks in the weight's sums
    {{1}, {5, 1}, true, 0.5},        // a row of one (a large eps: dx = rstd g eps / (x^2 + eps) is no cancellation)
    {{768}, {40, 768}, true},        // a Transformer's row
    {{4096}, {6, 4096}, true, std::nullopt},  // a Llama-7B row
    {{64}, {2, 8, 5, 64}, true},              // 4-d input, a head's dims (QK-norm)
    {{10000}, {2, 10000}, true},  // past 16 values a thread: the row read twice (Note [RMSNorm's row in registers])
};

// nn.RMSNorm with its weight drawn (not the 1 of reset), so that it matters.
std::shared_ptr<nn::RMSNorm> reference(const Case& c, Generator& gen) {
  auto m = std::make_shared<nn::RMSNorm>(c.normalized, c.eps, c.affine);
  if (c.affine) m->weight.copy_(uniform(c.normalized, 0.5, 1.5, gen));
  return m;
}
}  // namespace

TEST_CASE("cudnn.RMSNorm matches nn.RMSNorm in every dtype on both engines, contiguous or not") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(4801);
  INFO("seed 4801");
  for (cudnn::RMSNormEngine engine : kEngines) {
    cudnn::ScopedRMSNormEngine use(engine);
    for (const Case& c : kCases) {
      for (DType dt : kDtypes) {
        for (bool nc : {false, true}) {
          if (nc && shape_numel(c.input) < 2) continue;
          INFO("engine ", cudnn::rms_norm_engine_name(engine), " normalized ", shape_str(c.normalized), " input ",
               shape_str(c.input), c.affine ? "" : " no weight", " ", name(dt), nc ? " non-contiguous" : "");
          auto ref = reference(c, gen);
          cudnn::RMSNorm twin(c.normalized, c.eps, c.affine);
          TwinTolerance tol = TwinTolerance::for_dtype(dt);
          if (engine == cudnn::RMSNormEngine::Cudnn) tol.backward *= 2;  // cuDNN's own order of sums
          expect_twin_matches(*ref, twin, uniform(c.input, -2, 2, gen, DType::Float64), dt, tol, nc);
        }
      }
    }
  }
}

TEST_CASE("cudnn.RMSNorm under rmsnorm.engine=cudnn runs cuDNN's RMS norm where it takes the problem") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  cudnn::ScopedRMSNormEngine use(cudnn::RMSNormEngine::Cudnn);
  Generator gen(4802);
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
    INFO(name(dt));
    cudnn::RMSNorm twin({768}, 1e-6);
    twin.to(gpu);
    twin.to(dt);
    const Tensor x = uniform({64, 768}, -2, 2, gen, dt, gpu);
    twin.forward(x);
    twin.backward(x, uniform({64, 768}, -1, 1, gen, dt, gpu));
    // the engine that ran: cuDNN's on an sm80+ GPU with cuDNN 9 (a refusal would say why)
    INFO(cudnn::rms_norm_last_path(), " / ", cudnn::rms_norm_last_path(true));
    CHECK(cudnn::rms_norm_last_path().rfind("cudnn engine", 0) == 0);
    CHECK(cudnn::rms_norm_last_path(true).rfind("cudnn engine", 0) == 0);
  }
  // a 16-bit forward in evaluation mode (decoding's norms) takes our kernel; float32 stays on cuDNN's
  for (DType dt : {DType::Float32, DType::BFloat16}) {
    cudnn::RMSNorm twin({768}, 1e-6);
    twin.to(gpu);
    twin.to(dt);
    twin.evaluate();
    twin.forward(uniform({2, 768}, -2, 2, gen, dt, gpu));
    INFO(name(dt), ": ", cudnn::rms_norm_last_path());
    CHECK(cudnn::rms_norm_last_path().rfind(dt == DType::Float32 ? "cudnn engine" : "kernel: evaluation mode", 0) == 0);
  }
  // float64, no weight, empty: our kernel, saying why
  cudnn::RMSNorm f64({5}, 1e-5);
  f64.to(gpu);
  f64.to(DType::Float64);
  f64.forward(uniform({3, 5}, -1, 1, gen, DType::Float64, gpu));
  CHECK(cudnn::rms_norm_last_path() == "kernel: cuDNN's RMS norm takes no float64");
  cudnn::RMSNorm plain({5}, 1e-5, false);
  plain.to(gpu);
  plain.forward(uniform({3, 5}, -1, 1, gen, DType::Float32, gpu));
  CHECK(cudnn::rms_norm_last_path() == "kernel: cuDNN's RMS norm needs a weight (elementwise_affine)");
  cudnn::RMSNorm empty({5}, 1e-5);
  empty.to(gpu);
  empty.forward(zeros({0, 5}, DType::Float32, gpu));
  CHECK(cudnn::rms_norm_last_path() == "kernel: an empty input");
  cudnn::set_rms_norm_last_path(false, "");
  cudnn::ScopedRMSNormEngine kernel(cudnn::RMSNormEngine::Kernel);
  f64.forward(uniform({3, 5}, -1, 1, gen, DType::Float64, gpu));
  CHECK(cudnn::rms_norm_last_path() == "kernel");
}

TEST_CASE("rmsnorm.engine: a field of config(), cudnn by default, parsed, refused by name, restored") {
  using cudnn::RMSNormEngine;
  CHECK(cudnn::config().rmsnorm_engine == RMSNormEngine::Cudnn);
  {
    cudnn::ScopedConfig scoped("rmsnorm.engine=kernel");
    CHECK(cudnn::config().rmsnorm_engine == RMSNormEngine::Kernel);
    cudnn::set_flags("rmsnorm.engine=cudnn");
    CHECK(cudnn::config().rmsnorm_engine == RMSNormEngine::Cudnn);
    cudnn::set_flags("rmsnorm.engine=kernel");
  }
  CHECK(cudnn::config().rmsnorm_engine == RMSNormEngine::Cudnn);
  CHECK(std::string(cudnn::rms_norm_engine_name(RMSNormEngine::Kernel)) == "kernel");
  CHECK(std::string(cudnn::rms_norm_engine_name(RMSNormEngine::Cudnn)) == "cudnn");
  CHECK_THROWS_WITH_AS(cudnn::set_flags("rmsnorm.engine=ours"),
                       "cudnn flags: rmsnorm.engine expects kernel or cudnn, got 'ours'", Error);
  CHECK_THROWS_WITH_AS(cudnn::set_flags("rms_norm.engine=cudnn"), doctest::Contains("rmsnorm.engine"), Error);
  CHECK(cudnn::config().rmsnorm_engine == RMSNormEngine::Cudnn);
}

TEST_CASE("cudnn.RMSNorm gives torch.rms_norm's float16 and bfloat16 bits (Note [RMSNorm's rounding])") {
  for (const char* dtname : {"float16", "bfloat16"}) {
    for (bool none : {false, true}) {
      INFO(dtname, none ? " eps None" : " eps 1e-6");
      const std::string p = std::string("half.") + dtname + ".";
      const Tensor x = decoder_ref(p + "x"), w = decoder_ref(p + "w"), want = decoder_ref(p + (none ? "y_none" : "y"));
      cudnn::RMSNorm twin({64}, none ? std::nullopt : std::optional<double>(1e-6));
      twin.to(gpu);
      twin.to(x.dtype());
      twin.weight.copy_(w.to(gpu));
      const Tensor got = twin.forward(x.to(gpu)).to(Device::cpu()).to(DType::Float64);
      const Tensor ref = want.to(DType::Float64);
      // PyTorch's float32 sums run in another order: an element may round the other way (an ulp)
      const double ulp = std::string(dtname) == "float16" ? 1.0 / 1024 : 1.0 / 128;
      const auto g = got.to_vector<double>(), r = ref.to_vector<double>();
      size_t off = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        if (g[i] != r[i]) {
          ++off;
          CHECK(std::abs(g[i] - r[i]) <= ulp * std::max(1.0, std::abs(r[i])));
        }
      }
      CHECK(off <= g.size() / 50);  // almost all the same bits
    }
  }
}

TEST_CASE("cudnn.RMSNorm keeps nn's statistics, in float32 for 16-bit input") {
  Generator gen(4803);
  nn::RMSNorm ref({8}, 1e-6);
  ref.to(DType::Float64);
  const Tensor x = uniform({5, 8}, -2, 2, gen, DType::Float64);
  ref.forward(x);
  for (cudnn::RMSNormEngine engine : kEngines) {
    cudnn::ScopedRMSNormEngine use(engine);
    for (DType dt : kDtypes) {
      INFO(cudnn::rms_norm_engine_name(engine), " ", std::string(name(dt)));
      cudnn::RMSNorm twin({8}, 1e-6);
      twin.to(gpu);
      twin.to(dt);
      twin.forward(x.to(gpu, dt));
      const DType stats = dt == DType::Float64 ? DType::Float64 : DType::Float32;
      CHECK(twin.saveRstd.dtype() == stats);
      CHECK(twin.saveRstd.sizes() == Shape{5});
      const double tol = dt == DType::Float64 ? 1e-12 : dt == DType::Float32 ? 1e-6 : 3e-2;  // 16 bits: x rounded
      CHECK(rel_norm_error(twin.saveRstd, ref.saveRstd) <= tol);
    }
  }
}

TEST_CASE("cudnn.RMSNorm accumulates the weight's gradient with a scale, the same bits run to run") {
  Generator gen(4804);
  nn::RMSNorm ref({3, 40}, 1e-5);
  ref.to(DType::Float64);
  ref.weight.uniform_(0.5, 1.5, gen);
  cudnn::RMSNorm twin({3, 40}, 1e-5);
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

  // float32 and float16 on our kernel: two runs from zero give the same bits
  for (DType dt : {DType::Float32, DType::Float16}) {
    INFO(std::string(name(dt)));
    twin.to(dt);
    const Tensor xg = uniform({1000, 3, 40}, -1, 1, gen, dt, gpu), g = uniform({1000, 3, 40}, -1, 1, gen, dt, gpu);
    Tensor first[2];
    for (int run = 0; run < 2; ++run) {
      twin.zeroGradParameters();
      twin.forward(xg);
      const Tensor gi = twin.backward(xg, g).clone();
      if (run == 0) {
        first[0] = gi;
        first[1] = twin.gradWeight.clone();
      } else {
        CHECK(max_abs_diff(gi, first[0]) == 0);
        CHECK(max_abs_diff(twin.gradWeight, first[1]) == 0);
      }
    }
  }
}

TEST_CASE("cudnn.RMSNorm: NaN and Inf in the input and in gradOutput as nn's (Note [NaN and Inf])") {
  Generator gen(4805);
  for (cudnn::RMSNormEngine engine : kEngines) {
    cudnn::ScopedRMSNormEngine use(engine);
    for (const Case& c : {kCases[0], kCases[1], kCases[2]}) {
      for (DType dt : {DType::Float32, DType::Float64}) {
        INFO(cudnn::rms_norm_engine_name(engine), " normalized ", shape_str(c.normalized), " input ",
             shape_str(c.input), " ", std::string(name(dt)));
        auto ref = reference(c, gen);
        cudnn::RMSNorm twin(c.normalized, c.eps, c.affine);
        expect_twin_nonfinite_matches(*ref, twin, uniform(c.input, -2, 2, gen, DType::Float64), {}, dt,
                                      TwinTolerance::for_dtype(dt));
        auto ref2 = reference(c, gen);
        cudnn::RMSNorm twin2(c.normalized, c.eps, c.affine);
        expect_twin_nonfinite_gradient_matches(*ref2, twin2, uniform(c.input, -2, 2, gen, DType::Float64), {}, dt,
                                               TwinTolerance::for_dtype(dt));
      }
    }
  }
}

TEST_CASE("cudnn.RMSNorm: an empty batch gives nn's empty shapes and leaves the gradient alone") {
  for (cudnn::RMSNormEngine engine : kEngines) {
    cudnn::ScopedRMSNormEngine use(engine);
    for (DType dt : kDtypes) {
      INFO(cudnn::rms_norm_engine_name(engine), " ", std::string(name(dt)));
      cudnn::RMSNorm twin({5});
      twin.to(gpu);
      twin.to(dt);
      twin.zeroGradParameters();
      const Tensor x = zeros({0, 5}, dt, gpu);
      CHECK(twin.forward(x).sizes() == Shape{0, 5});
      CHECK(twin.saveRstd.sizes() == Shape{0});
      const Tensor gi = twin.backward(x, zeros({0, 5}, dt, gpu));
      CHECK(gi.sizes() == Shape{0, 5});
      CHECK(max_abs_diff(twin.gradWeight.to(DType::Float64), zeros({5}, DType::Float64, gpu)) == 0);
    }
  }
}

TEST_CASE("cudnn.RMSNorm steady state: no device allocation after a warm-up") {
  Generator gen(4806);
  for (bool affine : {true, false}) {
    cudnn::RMSNorm twin({4, 6}, 1e-5, affine);
    twin.to(gpu);
    expect_no_steady_state_allocations(twin, uniform({3, 4, 6}, -2, 2, gen).to(gpu));
  }
}

TEST_CASE("cudnn.RMSNorm: convert round trip, printing and errors") {
  Generator gen(4807);
  expect_convert_roundtrip(std::make_shared<nn::RMSNorm>(Shape{4, 5}), uniform({3, 4, 5}, -2, 2, gen));
  expect_convert_roundtrip(std::make_shared<nn::RMSNorm>(Shape{5}, 1e-6, false), uniform({3, 5}, -2, 2, gen));
  CHECK(cudnn::RMSNorm({4, 8}, 1e-5).str() == "cudnn.RMSNorm([4 x 8], eps=1e-05)");
  CHECK(cudnn::RMSNorm({8}).str() == "cudnn.RMSNorm([8], eps=None)");

  cudnn::RMSNorm twin({4});
  CHECK_THROWS_WITH_AS(twin.forward(zeros({2, 4})),
                       "cudnn.RMSNorm::updateOutput: expected input on a CUDA device, got float32 [2 x 4] on cpu "
                       "(move it with .to(tensor::Device::cuda()))",
                       Error);
  twin.to(gpu);
  std::string e = error_of([&] { twin.forward(zeros({2, 5}, DType::Float32, gpu)); });
  INFO(e);
  CHECK(has(e, "cudnn.RMSNorm::updateOutput: expected input [* x 4]"));
  CHECK(has(e, "[2 x 5]"));
  e = error_of([&] { twin.forward(zeros({2, 4}, DType::Float64, gpu)); });
  CHECK(has(e, "cudnn.RMSNorm::updateOutput: expected input of weight's dtype and device (float32 on cuda:0)"));
  e = error_of([&] { twin.forward(zeros({2, 4}, DType::Int64, gpu)); });
  CHECK(has(e, "int64"));
  twin.forward(zeros({2, 4}, DType::Float32, gpu));
  e = error_of([&] { twin.backward(zeros({2, 4}, DType::Float32, gpu), zeros({4, 2}, DType::Float32, gpu)); });
  CHECK(has(e, "cudnn.RMSNorm::updateGradInput: expected gradOutput of the input's shape and dtype"));
  e = error_of([&] { twin.backward(zeros({3, 4}, DType::Float32, gpu), zeros({3, 4}, DType::Float32, gpu)); });
  CHECK(has(e, "cudnn.RMSNorm::updateGradInput: expected a forward() of input"));
  // the cuDNN engine's backward checks the same, with the same words
  cudnn::ScopedRMSNormEngine use(cudnn::RMSNormEngine::Cudnn);
  e = error_of([&] { twin.backward(zeros({3, 4}, DType::Float32, gpu), zeros({3, 4}, DType::Float32, gpu)); });
  CHECK(has(e, "cudnn.RMSNorm::updateGradInput: expected a forward() of input"));
}
