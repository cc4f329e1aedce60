// test_GroupNorm.cpp: cudnn.GroupNorm and cudnn.InstanceNorm on each engine of groupnorm.engine
// (our kernels, cudnn/kernels/GroupNorm.h; cuDNN's layer norm, cudnn/ops/group_norm.h) against
// nn's in float32 (TF32 off), float64, float16 and bfloat16:
// 2-d to 5-d inputs, one group to a group a channel, with and without affine parameters, large
// groups (several thousand values), many samples (several chunks in the parameter sums),
// non-contiguous input; InstanceNorm's running statistics in training and evaluation; the
// statistics kept; accumulation with a scale and the same bits run to run; NaN and Inf; empty
// batches; no steady-state allocation; the convert round trip and the errors. Then the path
// each engine takes (cuDNN's, or our kernels saying why), evaluation mode, and a forward on one
// engine with the backward on the other.
#include <doctest/doctest.h>

#include "cudnn/GroupNorm.h"
#include "cudnn/InstanceNorm.h"
#include "cudnn/core/Config.h"
#include "cudnn/ops/group_norm.h"
#include "nn/GroupNorm.h"
#include "nn/InstanceNorm.h"
#include "tests/support/ErrorText.h"
#include "tests/support/SteadyState.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
const DType kDtypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};
// Every twin check runs under each value of the flag (cudnn falls back to our kernels where it
// must: float64, running statistics, empty input, a shape cuDNN refuses).
const char* const kEngines[] = {"groupnorm.engine=kernel", "groupnorm.engine=cudnn"};

struct Case {
  int64_t groups, channels;
  Shape input;
  bool affine;
};
const Case kCases[] = {
    {2, 6, {3, 6, 4, 5}, true},      // 4-d
    {1, 4, {5, 4}, true},            // 2-d, one group
    {4, 8, {2, 8, 3, 2, 2}, false},  // 5-d, no affine
    {3, 3, {2, 3, 7}, true},         // a group a channel
    {2, 4, {2, 4, 40, 50}, true},    // groups of 4000 values: many threads a block
    {8, 32, {130, 32, 3}, true},     // many samples: several chunks in the parameter sums
    {1, 1, {3, 1, 1}, true},         // a group of one value: xhat 0, var 0
};

// weight and bias drawn (not the 1 and 0 of reset), so that they matter
template <class M>
void draw(M& m, Generator& gen) {
  if (!m.affine()) return;
  m.weight.copy_(uniform({m.numChannels}, 0.5, 1.5, gen));
  m.bias.copy_(uniform({m.numChannels}, -0.5, 0.5, gen));
}
}  // namespace

TEST_CASE("cudnn.GroupNorm matches nn.GroupNorm in every dtype, contiguous or not, on each engine") {
  for (const char* engine : kEngines) {
    cudnn::ScopedConfig flags(std::string("allow_tf32=false,") + engine);
    Generator gen(4701);
    INFO("seed 4701, ", engine);
    for (const Case& c : kCases) {
      for (DType dt : kDtypes) {
        for (bool nc : {false, true}) {
          INFO(c.groups, " groups of ", c.channels, " channels, input ", shape_str(c.input),
               c.affine ? "" : " no affine", nc ? " non-contiguous" : "", " ", std::string(name(dt)));
          nn::GroupNorm ref(c.groups, c.channels, 1e-5, c.affine);
          draw(ref, gen);
          cudnn::GroupNorm twin(c.groups, c.channels, 1e-5, c.affine);
          // inputs off centre, so that the mean matters
          expect_twin_matches(ref, twin, uniform(c.input, -1, 3, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt),
                              nc);
        }
      }
    }
  }
}

TEST_CASE(
    "cudnn.InstanceNorm matches nn.InstanceNorm in every dtype: affine or not, tracked, training and evaluation, "
    "on each engine") {
  for (const char* engine : kEngines) {
    cudnn::ScopedConfig flags(std::string("allow_tf32=false,") + engine);
    Generator gen(4702);
    INFO("seed 4702, ", engine);
    for (const Shape& input : {Shape{2, 3, 5}, Shape{2, 3, 4, 5}, Shape{1, 3, 2, 3, 2}, Shape{70, 3, 9}}) {
      for (bool affine : {true, false}) {
        for (bool track : {false, true}) {
          for (bool eval : {false, true}) {
            if (eval && !track) continue;  // the same as training
            for (DType dt : kDtypes) {
              INFO(shape_str(input), affine ? " affine" : "", track ? " tracked" : "", eval ? " evaluation" : "", " ",
                   std::string(name(dt)));
              nn::InstanceNorm ref(3, 1e-5, 0.2, affine, track);
              draw(ref, gen);
              if (track) {
                ref.running_mean.copy_(uniform({3}, -1, 1, gen));
                ref.running_var.copy_(uniform({3}, 0.5, 2, gen));
              }
              cudnn::InstanceNorm twin(3, 1e-5, 0.2, affine, track);
              if (eval) {
                ref.evaluate();
                twin.evaluate();
              }
              // the twin check compares the buffers too: the running statistics after the forward
              expect_twin_matches(ref, twin, uniform(input, -1, 3, gen, DType::Float64), dt,
                                  TwinTolerance::for_dtype(dt), input[0] > 1);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("cudnn.GroupNorm keeps nn's statistics [N x G], in float32 for 16-bit input, on each engine") {
  Generator gen(4703);
  nn::GroupNorm ref(2, 6);
  ref.to(DType::Float64);
  const Tensor x = uniform({5, 6, 7}, -2, 2, gen, DType::Float64);
  ref.forward(x);
  for (const char* engine : kEngines) {
    for (DType dt : kDtypes) {
      cudnn::ScopedConfig flags(engine);
      INFO(engine, " ", std::string(name(dt)));
      cudnn::GroupNorm twin(2, 6);
      twin.to(gpu);
      twin.to(dt);
      twin.forward(x.to(gpu, dt));
      const DType stats = dt == DType::Float64 ? DType::Float64 : DType::Float32;
      CHECK(twin.saveMean.dtype() == stats);
      CHECK(twin.saveRstd.dtype() == stats);
      CHECK(twin.saveMean.sizes() == Shape{5, 2});
      const double tol = dt == DType::Float64 ? 1e-12 : dt == DType::Float32 ? 1e-6 : 3e-2;  // 16 bits: x rounded
      CHECK(rel_norm_error(twin.saveMean, ref.saveMean) <= tol);
      CHECK(rel_norm_error(twin.saveRstd, ref.saveRstd) <= tol);
    }
  }
}

TEST_CASE("cudnn.GroupNorm accumulates parameter gradients with a scale, the same bits run to run, on each engine") {
  for (const char* engine : kEngines) {
    cudnn::ScopedConfig flags(engine);
    INFO(engine);
    Generator gen(4704);
    nn::GroupNorm ref(4, 16);
    ref.to(DType::Float64);
    cudnn::GroupNorm twin(4, 16);
    twin.to(gpu);
    twin.to(DType::Float64);
    twin.loadStateDict(ref.stateDict());
    ref.zeroGradParameters();
    twin.zeroGradParameters();
    const Tensor x = uniform({130, 16, 5}, -1, 1, gen, DType::Float64);
    for (double scale : {1.0, 0.5, -2.0}) {
      const Tensor g = uniform({130, 16, 5}, -1, 1, gen, DType::Float64);
      ref.forward(x);
      twin.forward(x.to(gpu));
      ref.backward(x, g, scale);
      twin.backward(x.to(gpu), g.to(gpu), scale);
    }
    CHECK(rel_norm_error(twin.gradWeight, ref.gradWeight) < 1e-12);
    CHECK(rel_norm_error(twin.gradBias, ref.gradBias) < 1e-12);
    // updateGradInput and accGradParameters on their own, as Torch calls them
    const Tensor g = uniform({130, 16, 5}, -1, 1, gen, DType::Float64);
    CHECK(rel_norm_error(twin.updateGradInput(x.to(gpu), g.to(gpu)), ref.updateGradInput(x, g)) < 1e-12);
    ref.accGradParameters(x, g, 3.0);
    twin.accGradParameters(x.to(gpu), g.to(gpu), 3.0);
    CHECK(rel_norm_error(twin.gradWeight, ref.gradWeight) < 1e-12);

    for (DType dt : {DType::Float32, DType::Float16}) {
      INFO(std::string(name(dt)));
      twin.to(dt);
      const Tensor xg = uniform({300, 16, 30}, -1, 1, gen, dt, gpu), gg = uniform({300, 16, 30}, -1, 1, gen, dt, gpu);
      Tensor first[3];
      for (int run = 0; run < 2; ++run) {
        twin.zeroGradParameters();
        twin.forward(xg);
        const Tensor gi = twin.backward(xg, gg).clone();
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
}

TEST_CASE("cudnn.GroupNorm and cudnn.InstanceNorm: NaN and Inf as nn's (Note [NaN and Inf]), on each engine") {
  for (const char* engine : kEngines) {
    cudnn::ScopedConfig flags(engine);
    INFO(engine);
    Generator gen(4705);
    for (DType dt : {DType::Float32, DType::Float64}) {
      INFO(std::string(name(dt)));
      for (const Case& c : {kCases[0], kCases[2], kCases[3]}) {
        INFO(c.groups, " groups, input ", shape_str(c.input));
        nn::GroupNorm ref(c.groups, c.channels, 1e-5, c.affine);
        draw(ref, gen);
        cudnn::GroupNorm twin(c.groups, c.channels, 1e-5, c.affine);
        expect_twin_nonfinite_matches(ref, twin, uniform(c.input, -2, 2, gen, DType::Float64), {}, dt,
                                      TwinTolerance::for_dtype(dt));
        nn::GroupNorm ref2(c.groups, c.channels, 1e-5, c.affine);
        draw(ref2, gen);
        cudnn::GroupNorm twin2(c.groups, c.channels, 1e-5, c.affine);
        expect_twin_nonfinite_gradient_matches(ref2, twin2, uniform(c.input, -2, 2, gen, DType::Float64), {}, dt,
                                               TwinTolerance::for_dtype(dt));
      }
      for (bool eval : {false, true}) {
        INFO((eval ? "evaluation" : "training"));
        nn::InstanceNorm ref(3, 1e-5, 0.1, true, true);
        draw(ref, gen);
        cudnn::InstanceNorm twin(3, 1e-5, 0.1, true, true);
        if (eval) {
          ref.evaluate();
          twin.evaluate();
        }
        expect_twin_nonfinite_matches(ref, twin, uniform({2, 3, 4, 3}, -2, 2, gen, DType::Float64), {}, dt,
                                      TwinTolerance::for_dtype(dt));
      }
    }
  }
}

TEST_CASE(
    "cudnn.GroupNorm and cudnn.InstanceNorm: an empty batch gives nn's empty shapes and leaves state alone, on each "
    "engine") {
  for (const char* engine : kEngines) {
    cudnn::ScopedConfig flags(engine);
    INFO(engine);
    for (DType dt : kDtypes) {
      INFO(std::string(name(dt)));
      cudnn::GroupNorm twin(2, 4);
      twin.to(gpu);
      twin.to(dt);
      twin.zeroGradParameters();
      for (const Shape& shape : {Shape{0, 4}, Shape{0, 4, 3}, Shape{2, 4, 0}}) {
        INFO(shape_str(shape));
        const Tensor x = zeros(shape, dt, gpu);
        CHECK(twin.forward(x).sizes() == shape);
        CHECK(twin.backward(x, zeros(shape, dt, gpu)).sizes() == shape);
        CHECK(max_abs_diff(twin.gradWeight.to(DType::Float64), zeros({4}, DType::Float64, gpu)) == 0);
      }
      cudnn::InstanceNorm in(3, 1e-5, 0.1, true, true);
      in.to(gpu);
      in.to(dt);
      const Tensor x = zeros({0, 3, 4}, dt, gpu);
      CHECK(in.forward(x).sizes() == x.sizes());
      CHECK(in.backward(x, x).sizes() == x.sizes());
      CHECK(max_abs_diff(in.running_var.to(DType::Float64), ones({3}, DType::Float64, gpu)) == 0);
      CHECK(max_abs_diff(in.running_mean.to(DType::Float64), zeros({3}, DType::Float64, gpu)) == 0);
    }
  }
}

TEST_CASE("cudnn.GroupNorm and cudnn.InstanceNorm steady state: no device allocation after a warm-up, on each engine") {
  for (const char* engine : kEngines) {
    cudnn::ScopedConfig flags(engine);
    INFO(engine);
    Generator gen(4706);
    for (bool affine : {true, false}) {
      cudnn::GroupNorm twin(2, 6, 1e-5, affine);
      twin.to(gpu);
      expect_no_steady_state_allocations(twin, uniform({3, 6, 4, 4}, -2, 2, gen).to(gpu));
    }
    cudnn::InstanceNorm in(6, 1e-5, 0.1, true, true);
    in.to(gpu);
    expect_no_steady_state_allocations(in, uniform({3, 6, 4, 4}, -2, 2, gen).to(gpu));
  }
}

TEST_CASE("groupnorm.engine=cudnn runs cuDNN's layer norm where it can, and our kernels elsewhere, saying why") {
  cudnn::ScopedConfig flags("allow_tf32=false,groupnorm.engine=cudnn");
  Generator gen(4708);
  // shapes a network has: the engine that ran is cuDNN's on an sm80+ GPU with cuDNN 9 (a
  // refusal would say why), in training and in evaluation (which keeps its statistics too)
  const Case shaped[] = {{8, 64, {4, 64, 8, 8}, true}, {32, 128, {2, 128, 16, 16}, false}, {4, 32, {3, 32, 10}, true}};
  for (const Case& c : shaped) {
    for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
      for (bool eval : {false, true}) {
        INFO(c.groups, " groups of ", c.channels, " channels, input ", shape_str(c.input), c.affine ? "" : " no affine",
             eval ? " evaluation " : " training ", std::string(name(dt)));
        nn::GroupNorm ref(c.groups, c.channels, 1e-5, c.affine);
        draw(ref, gen);
        cudnn::GroupNorm twin(c.groups, c.channels, 1e-5, c.affine);
        if (eval) {
          ref.evaluate();
          twin.evaluate();
        }
        expect_twin_matches(ref, twin, uniform(c.input, -1, 3, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt));
        INFO(cudnn::group_norm_last_path(), " / ", cudnn::group_norm_last_path(true));
        CHECK(cudnn::group_norm_last_path().rfind("cudnn engine", 0) == 0);
        CHECK(cudnn::group_norm_last_path(true).rfind("cudnn engine", 0) == 0);
      }
    }
  }
  // InstanceNorm without running statistics: a layer norm over each channel's positions
  {
    nn::InstanceNorm ref(6, 1e-5, 0.1, true, false);
    draw(ref, gen);
    cudnn::InstanceNorm twin(6, 1e-5, 0.1, true, false);
    expect_twin_matches(ref, twin, uniform({4, 6, 8, 8}, -1, 3, gen, DType::Float64), DType::Float16,
                        TwinTolerance::for_dtype(DType::Float16));
    INFO(cudnn::group_norm_last_path(), " / ", cudnn::group_norm_last_path(true));
    CHECK(cudnn::group_norm_last_path().rfind("cudnn engine", 0) == 0);
    CHECK(cudnn::group_norm_last_path(true).rfind("cudnn engine", 0) == 0);
  }
  // our kernels, saying why: float64; running statistics, tracked in training, normalising in
  // evaluation; an empty input
  cudnn::GroupNorm f64(2, 4);
  f64.to(gpu);
  f64.to(DType::Float64);
  const Tensor x64 = uniform({3, 4, 5}, -1, 1, gen, DType::Float64, gpu);
  f64.forward(x64);
  CHECK(cudnn::group_norm_last_path() == "kernel: cuDNN's layer norm takes no float64");
  f64.backward(x64, x64);
  CHECK(cudnn::group_norm_last_path(true) == "kernel: cuDNN's layer norm takes no float64");
  cudnn::InstanceNorm tracked(3, 1e-5, 0.1, true, true);
  tracked.to(gpu);
  const Tensor x = uniform({2, 3, 4, 4}, -1, 1, gen, DType::Float32, gpu);
  tracked.forward(x);
  CHECK(cudnn::group_norm_last_path().rfind("kernel: InstanceNorm's running statistics", 0) == 0);
  tracked.backward(x, x);  // the statistics are the input's: cuDNN's backward serves
  CHECK(cudnn::group_norm_last_path(true).rfind("cudnn engine", 0) == 0);
  tracked.evaluate();
  tracked.forward(x);
  CHECK(cudnn::group_norm_last_path().rfind("kernel: InstanceNorm's running statistics", 0) == 0);
  tracked.backward(x, x);
  CHECK(cudnn::group_norm_last_path(true).rfind("kernel: the running statistics normalised", 0) == 0);
  cudnn::GroupNorm empty(2, 4);
  empty.to(gpu);
  empty.forward(zeros({0, 4, 3}, DType::Float32, gpu));
  CHECK(cudnn::group_norm_last_path() == "kernel: an empty input");
  // the kernel engine names itself
  cudnn::set_flags("groupnorm.engine=kernel");
  tracked.train();
  tracked.forward(x);
  tracked.backward(x, x);
  CHECK(cudnn::group_norm_last_path() == "kernel");
  CHECK(cudnn::group_norm_last_path(true) == "kernel");
}

TEST_CASE("groupnorm.engine: a forward on one engine and its backward on the other give nn's gradients") {
  Generator gen(4709);
  const Shape shape{4, 64, 8, 8};
  for (DType dt : {DType::Float32, DType::Float16}) {
    for (bool cudnnForward : {false, true}) {
      INFO(std::string(name(dt)), cudnnForward ? " cudnn forward, kernel backward" : " kernel forward, cudnn backward");
      cudnn::ScopedConfig flags("allow_tf32=false");
      nn::GroupNorm ref(8, 64);
      draw(ref, gen);
      ref.to(DType::Float64);
      cudnn::GroupNorm twin(8, 64);
      twin.to(gpu);
      twin.to(dt);
      twin.loadStateDict(ref.stateDict());
      ref.zeroGradParameters();
      twin.zeroGradParameters();
      const Tensor x = uniform(shape, -1, 3, gen, DType::Float64), g = uniform(shape, -1, 1, gen, DType::Float64);
      const Tensor xt = x.to(gpu, dt), gt = g.to(gpu, dt);
      ref.forward(x);
      ref.backward(x, g);
      cudnn::set_flags(cudnnForward ? "groupnorm.engine=cudnn" : "groupnorm.engine=kernel");
      twin.forward(xt);
      cudnn::set_flags(cudnnForward ? "groupnorm.engine=kernel" : "groupnorm.engine=cudnn");
      twin.backward(xt, gt);
      INFO(cudnn::group_norm_last_path(), " / ", cudnn::group_norm_last_path(true));
      CHECK(cudnn::group_norm_last_path(!cudnnForward).rfind("cudnn engine", 0) == 0);
      const TwinTolerance tol = TwinTolerance::for_dtype(dt);
      CHECK(rel_norm_error(twin.output, ref.output) <= tol.forward);
      CHECK(rel_norm_error(twin.gradInput, ref.gradInput) <= tol.backward);
      CHECK(rel_norm_error(twin.gradWeight, ref.gradWeight) <= tol.backward);
      CHECK(rel_norm_error(twin.gradBias, ref.gradBias) <= tol.backward);
    }
  }
}

TEST_CASE("cudnn.GroupNorm and cudnn.InstanceNorm: convert round trip, printing and errors") {
  Generator gen(4707);
  expect_convert_roundtrip(std::make_shared<nn::GroupNorm>(2, 6), uniform({3, 6, 4, 5}, -2, 2, gen));
  expect_convert_roundtrip(std::make_shared<nn::GroupNorm>(3, 3, 1e-3, false), uniform({2, 3}, -2, 2, gen));
  expect_convert_roundtrip(std::make_shared<nn::InstanceNorm>(3), uniform({2, 3, 5}, -2, 2, gen));
  expect_convert_roundtrip(std::make_shared<nn::InstanceNorm>(3, 1e-5, 0.2, true, true),
                           uniform({2, 3, 4, 4}, -2, 2, gen));
  CHECK(cudnn::GroupNorm(2, 6).str() == "cudnn.GroupNorm(2, 6, eps=1e-05)");
  CHECK(cudnn::InstanceNorm(3).str() == "cudnn.InstanceNorm(3, eps=1e-05, momentum=0.1)");
  CHECK(cudnn::GroupNorm(2, 6).type_name() == "cudnn.GroupNorm");

  cudnn::GroupNorm twin(2, 4);
  CHECK_THROWS_WITH_AS(twin.forward(zeros({2, 4, 3})),
                       "cudnn.GroupNorm::updateOutput: expected input on a CUDA device, got float32 [2 x 4 x 3] on cpu "
                       "(move it with .to(tensor::Device::cuda()))",
                       Error);
  twin.to(gpu);
  std::string e = error_of([&] { twin.forward(zeros({2, 5, 3}, DType::Float32, gpu)); });
  INFO(e);
  CHECK(has(e, "cudnn.GroupNorm::updateOutput: expected input of [N x 4] or [N x 4 x *], got [2 x 5 x 3]"));
  e = error_of([&] { twin.forward(zeros({2, 4}, DType::Float64, gpu)); });
  CHECK(has(e, "cudnn.GroupNorm::updateOutput: expected input of weight's dtype and device (float32 on cuda:0)"));
  e = error_of([&] { twin.forward(zeros({2, 4}, DType::Int64, gpu)); });
  CHECK(has(e, "int64"));
  twin.forward(zeros({2, 4, 3}, DType::Float32, gpu));
  e = error_of([&] { twin.backward(zeros({2, 4, 3}, DType::Float32, gpu), zeros({2, 3, 4}, DType::Float32, gpu)); });
  CHECK(has(e, "cudnn.GroupNorm::updateGradInput: expected gradOutput of the input's shape and dtype"));
  e = error_of([&] { twin.backward(zeros({3, 4, 3}, DType::Float32, gpu), zeros({3, 4, 3}, DType::Float32, gpu)); });
  CHECK(has(e, "cudnn.GroupNorm::updateGradInput: expected a forward() of input"));
  cudnn::InstanceNorm in(3, 1e-5, 0.1, false, true);
  in.to(gpu);
  e = error_of([&] { in.forward(zeros({2, 3, 1}, DType::Float32, gpu)); });
  CHECK(has(e, "cudnn.InstanceNorm::updateOutput: expected more than 1 spatial element a channel"));
  e = error_of([&] { in.forward(zeros({2, 3, 4}, DType::Float16, gpu)); });
  CHECK(has(e, "expected input of running_mean's dtype and device (float32 on cuda:0)"));
}
