// BatchNormTwinChecks.h: the checks every batch-normalisation twin goes through (the rows of
// tests/cudnn/test_BatchNormFamily.cpp):
// expect_twin_matches in training and evaluation (affine on and off, several eps and
// momentum values), single samples in evaluation, 16-bit data with float32 parameters,
// running statistics over several steps, updateGradInput and accGradParameters called
// separately, the convert round trip and the errors.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "convert/Convert.h"
#include "cudnn/BatchNormalization.h"
#include "tests/support/TwinCheck.h"

namespace testing {

struct BatchNormConfig {
  bool affine;
  double eps, momentum;
};

inline const std::vector<BatchNormConfig>& batch_norm_configs() {
  static const std::vector<BatchNormConfig> c = {
      {true, 1e-5, 0.1}, {false, 1e-5, 0.1}, {true, 1e-3, 0.3}, {false, 1e-4, 1.0}, {true, 1e-5, 0.0}};
  return c;
}

// Channel c of x (dim 1 when batched, else dim 0) drawn around c - 1 with spread 1 + c/2, so
// every channel has its own statistics.
inline tensor::Tensor batch_norm_input(const tensor::Shape& s, bool batched, tensor::Generator& gen) {
  const int64_t cdim = batched ? 1 : 0, C = s[cdim];
  tensor::Shape cs(s.size(), 1);
  cs[cdim] = C;
  std::vector<double> spread, shift;
  for (int64_t c = 0; c < C; ++c) {
    spread.push_back(1 + 0.5 * static_cast<double>(c));
    shift.push_back(static_cast<double>(c) - 1);
  }
  return tensor::uniform(s, -1, 1, gen, tensor::DType::Float64)
      .mul(tensor::from_vector(spread, cs))
      .add(tensor::from_vector(shift, cs));
}

template <class M>
M make_batch_norm(int64_t C, const BatchNormConfig& c) {
  return M(C, c.eps, c.momentum, c.affine);
}

// Random weight and bias (affine), and, for evaluation, random running statistics.
template <class Nn>
void randomize_batch_norm(Nn& m, tensor::Generator& gen, bool statistics) {
  if (m.affine) {
    m.weight.uniform_(0.5, 1.5, gen);
    m.bias.uniform_(-1, 1, gen);
  }
  if (statistics) {
    m.running_mean.uniform_(-1, 1, gen);
    m.running_var.uniform_(0.5, 2, gen);
  }
}

// expect_twin_matches for every config and shape; `batched` false: single samples (evaluation only).
template <class Nn, class Cu>
void expect_batch_norm_twin_matches(const std::vector<tensor::Shape>& shapes, bool batched, bool training,
                                    tensor::DType dt, bool noncontiguous = false, uint64_t seed = 31) {
  tensor::Generator gen(seed);
  INFO("seed ", seed, std::string(training ? ", training" : ", evaluation"));
  for (const tensor::Shape& s : shapes) {
    for (const BatchNormConfig& c : batch_norm_configs()) {
      INFO("input ", tensor::shape_str(s), " affine ", c.affine, " eps ", c.eps, " momentum ", c.momentum);
      const int64_t C = s[batched ? 1 : 0];
      Nn ref = make_batch_norm<Nn>(C, c);
      Cu twin = make_batch_norm<Cu>(C, c);
      randomize_batch_norm(ref, gen, !training);
      if (training) {
        ref.train();
      } else {
        ref.evaluate();
      }
      expect_twin_matches(ref, twin, batch_norm_input(s, batched, gen), dt, TwinTolerance::for_dtype(dt),
                          noncontiguous);
    }
  }
}

// to(float16/bfloat16) keeps the parameters, gradients and statistics float32; float64 makes them float64.
template <class Cu>
void expect_batch_norm_parameter_dtypes(int64_t C) {
  using tensor::DType;
  Cu twin(C);
  twin.to(tensor::Device::cuda(0));
  for (DType dt : {DType::Float16, DType::BFloat16, DType::Float64, DType::Float32}) {
    INFO(std::string(tensor::name(dt)));
    twin.to(dt);
    const DType want = dt == DType::Float64 ? DType::Float64 : DType::Float32;
    for (const auto& [name, t] : twin.stateDict()) {
      // num_batches_tracked is int64 in every dtype (Note [num_batches_tracked])
      CHECK(t.dtype() == (name == "num_batches_tracked" ? DType::Int64 : want));
    }
    for (const auto& t : twin.gradParameters()) CHECK(t.dtype() == want);
  }
}

// Several training steps move the running statistics as nn's do (unbiased variance,
// momentum), the saved batch statistics agree, and evaluation then agrees. A 4-d input runs
// channels-last too: cuDNN's persistent kernels, whose statistics arrive through increments
// that must be zero again for every next step (Note [Persistent batch norm and Inf]).
template <class Nn, class Cu>
void expect_batch_norm_running_statistics(const tensor::Shape& s, tensor::DType dt, uint64_t seed = 37) {
  const tensor::Device gpu = tensor::Device::cuda(0);
  const TwinTolerance tol = TwinTolerance::for_dtype(dt);
  for (bool channels_last : {false, true}) {
    if (channels_last && s.size() != 4) continue;
    const tensor::MemoryFormat format =
        channels_last ? tensor::MemoryFormat::ChannelsLast : tensor::MemoryFormat::Contiguous;
    tensor::Generator gen(seed);
    INFO("input ", tensor::shape_str(s), " in ", std::string(tensor::name(dt)), ", seed ", seed,
         (channels_last ? ", channels-last" : ""));
    const int64_t C = s[1];
    Nn ref(C, 1e-5, 0.2, true);
    ref.to(tensor::DType::Float64);
    randomize_batch_norm(ref, gen, false);
    Cu twin(C, 1e-5, 0.2, true);
    twin.to(gpu);
    twin.to(dt);
    twin.loadStateDict(ref.stateDict());  // after to(dt): no detour through float32
    for (int step = 0; step < 4; ++step) {
      INFO("step ", step);
      const tensor::Tensor x = batch_norm_input(s, true, gen).add(0.5 * step);
      ref.forward(x);
      twin.forward(x.to(gpu, dt).contiguous(format));
      CHECK(tensor::rel_norm_error(twin.running_mean, ref.running_mean) < tol.forward);
      CHECK(tensor::rel_norm_error(twin.running_var, ref.running_var) < tol.forward);
      CHECK(tensor::rel_norm_error(twin.save_mean, ref.save_mean) < tol.forward);
      CHECK(tensor::rel_norm_error(twin.save_invstd, ref.save_invstd) < tol.forward);
      // the one count of nn's base (Note [num_batches_tracked] in nn/BatchNormalization.h)
      CHECK(twin.num_batches_tracked.item() == ref.num_batches_tracked.item());
    }
    ref.evaluate();
    twin.evaluate();
    const tensor::Tensor x = batch_norm_input(s, true, gen);
    CHECK(tensor::rel_norm_error(twin.forward(x.to(gpu, dt).contiguous(format)), ref.forward(x)) < tol.forward);
  }
}

// updateGradInput leaves the parameter gradients alone; accGradParameters(scale) adds
// scale times them without touching gradInput; backward(scale) does both at once.
template <class Nn, class Cu>
void expect_batch_norm_separate_gradients(const tensor::Shape& s, bool training, uint64_t seed = 41) {
  const tensor::Device gpu = tensor::Device::cuda(0);
  tensor::Generator gen(seed);
  INFO("input ", tensor::shape_str(s), std::string(training ? ", training" : ", evaluation"), ", seed ", seed);
  const int64_t C = s[1];
  Nn ref(C);
  ref.to(tensor::DType::Float64);
  randomize_batch_norm(ref, gen, true);
  Cu twin(C);
  twin.to(gpu);
  twin.to(tensor::DType::Float64);
  twin.loadStateDict(ref.stateDict());  // after to(Float64): no detour through float32
  if (!training) {
    ref.evaluate();
    twin.evaluate();
  }
  const double tol = 1e-10;
  const tensor::Tensor x = batch_norm_input(s, true, gen), g = tensor::uniform(s, -1, 1, gen, tensor::DType::Float64);
  const tensor::Tensor xg = x.to(gpu), gg = g.to(gpu);
  ref.forward(x);
  twin.forward(xg);
  ref.zeroGradParameters();
  twin.zeroGradParameters();
  CHECK(tensor::rel_norm_error(twin.updateGradInput(xg, gg), ref.updateGradInput(x, g)) < tol);
  CHECK(tensor::max_abs_diff(twin.gradWeight, tensor::zeros({C})) == 0);
  CHECK(tensor::max_abs_diff(twin.gradBias, tensor::zeros({C})) == 0);
  const tensor::Tensor gradInput = twin.gradInput.clone();
  ref.accGradParameters(x, g, 0.5);
  twin.accGradParameters(xg, gg, 0.5);
  CHECK(tensor::max_abs_diff(twin.gradInput, gradInput) == 0);
  CHECK(tensor::rel_norm_error(twin.gradWeight, ref.gradWeight) < tol);
  CHECK(tensor::rel_norm_error(twin.gradBias, ref.gradBias) < tol);
  ref.backward(x, g, 2);
  twin.backward(xg, gg, 2);
  CHECK(tensor::rel_norm_error(twin.gradInput, ref.gradInput) < tol);
  CHECK(tensor::rel_norm_error(twin.gradWeight, ref.gradWeight) < tol);
  CHECK(tensor::rel_norm_error(twin.gradBias, ref.gradBias) < tol);
  // accGradParameters with no updateGradInput since the forward
  ref.forward(x);
  twin.forward(xg);
  const tensor::Tensor before = twin.gradInput.clone();
  ref.accGradParameters(x, g, 1);
  twin.accGradParameters(xg, gg, 1);
  CHECK(tensor::max_abs_diff(twin.gradInput, before) == 0);
  CHECK(tensor::rel_norm_error(twin.gradWeight, ref.gradWeight) < tol);
  CHECK(tensor::rel_norm_error(twin.gradBias, ref.gradBias) < tol);
}

// The convert round trip, in evaluation and in training with momentum 0 (so that the
// converted module's forward leaves the running statistics as they were).
template <class Nn>
void expect_batch_norm_convert_roundtrip(const tensor::Shape& s) {
  tensor::Generator gen(43);
  const int64_t C = s[1];
  auto m = std::make_shared<Nn>(C);
  randomize_batch_norm(*m, gen, true);
  m->evaluate();
  expect_convert_roundtrip(m, batch_norm_input(s, true, gen));
  auto t = std::make_shared<Nn>(C, 1e-5, 0.0, true);
  randomize_batch_norm(*t, gen, true);
  expect_convert_roundtrip(t, batch_norm_input(s, true, gen));
}

// Errors every twin gives the same way; `good` is a batched shape with C = 4 channels.
template <class Cu>
void expect_batch_norm_errors(const tensor::Shape& good) {
  using tensor::DType;
  using tensor::Error;
  const tensor::Device gpu = tensor::Device::cuda(0);
  Cu m(4);
  const std::string name = m.type_name();
  CHECK(m.str().rfind(name + " (", 0) == 0);
  CHECK_THROWS_WITH_AS(m.forward(tensor::zeros(good)),
                       doctest::Contains((name + "::updateOutput: expected input on a CUDA device, got float32 " +
                                          tensor::shape_str(good) + " on cpu")
                                             .c_str()),
                       Error);
  CHECK_THROWS_WITH_AS(
      m.forward(tensor::zeros(good, DType::Float32, gpu)),
      doctest::Contains((name + "::updateOutput: parameters are on cpu but the input is on cuda:0").c_str()), Error);
  m.to(gpu);
  CHECK_THROWS_WITH_AS(m.forward(tensor::zeros(good, DType::Float64, gpu)),
                       doctest::Contains((name +
                                          "::updateOutput: expected float32, float16 or bfloat16 input for the "
                                          "module's float32 statistics, got float64 " +
                                          tensor::shape_str(good))
                                             .c_str()),
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(tensor::zeros(good, DType::Int64, gpu)),
                       doctest::Contains("expected a float32, float64, float16 or bfloat16 input, got int64"), Error);
  // backward in training needs the batch statistics of a forward
  tensor::Generator gen(1);
  const tensor::Tensor x = batch_norm_input(good, true, gen).to(gpu, DType::Float32);
  CHECK_THROWS_WITH_AS(m.backward(x, x),
                       doctest::Contains((name + "::backward: no batch statistics for input").c_str()), Error);
  m.forward(x);
  CHECK_THROWS_WITH_AS(
      m.backward(x, x.sum(0)),
      doctest::Contains((name + "::backward: expected gradOutput of the input's shape and dtype").c_str()), Error);
  m.eps = -1;
  CHECK_THROWS_WITH_AS(m.forward(x),
                       (name + "::updateOutput: expected eps >= 0 (CUDNN_BN_MIN_EPSILON), got -1").c_str(), Error);
}

// NaN, +Inf and -Inf inputs (Note [NaN and Inf] in nn/kernels/Activation.h), training and
// evaluation: nn's non-finite and finite outputs, gradients and running statistics; float32.
template <class Nn, class Cu>
void expect_batch_norm_nonfinite(const std::vector<tensor::Shape>& shapes, uint64_t seed = 73) {
  tensor::Generator gen(seed);
  for (const tensor::Shape& s : shapes) {
    for (bool training : {true, false}) {
      INFO("input ", tensor::shape_str(s), std::string(training ? ", training" : ", evaluation"));
      const BatchNormConfig& c = batch_norm_configs().front();
      Nn ref = make_batch_norm<Nn>(s[1], c);
      Cu twin = make_batch_norm<Cu>(s[1], c);
      randomize_batch_norm(ref, gen, !training);
      if (training)
        ref.train();
      else
        ref.evaluate();
      expect_twin_nonfinite_matches(ref, twin, batch_norm_input(s, true, gen));
    }
  }
}

}  // namespace testing
