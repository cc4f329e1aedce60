// ConvTwinChecks.h: the checks every convolution twin runs (the rows of
// tests/cudnn/test_ConvolutionFamily.cpp), given a factory that builds the nn module
// (twin = false) or its twin (twin = true) from one configuration: the twin against nn in every
// dtype, TF32, accumulation with a scale, steady state, pinned algorithms; and conv_twin_cases,
// which turns a family's configurations into its cases.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "convert/Convert.h"
#include "cudnn/core/Config.h"
#include "cudnn/ops/conv.h"
#include "tensor/Cuda.h"
#include "tensor/Generator.h"
#include "tests/support/TwinCheck.h"

namespace testing {

using ConvFactory = std::function<nn::ModulePtr(bool twin)>;

// One configuration and an input for it (float64, CPU; batched or not).
struct ConvTwinCase {
  std::string name;
  ConvFactory make;
  tensor::Tensor input;
};

// A factory of family F's module of configuration c: F::Nn or its twin F::Cu, through
// F::make<M>(c, bias). F names the family: F::Config, F::Nn, F::Cu, F::make and F::input.
template <class F>
ConvFactory conv_twin_factory(const typename F::Config& c, bool bias = true) {
  return [c, bias](bool twin) -> nn::ModulePtr {
    if (twin) return F::template make<typename F::Cu>(c, bias);
    return F::template make<typename F::Nn>(c, bias);
  };
}

// One case per configuration of `cfgs`, batched, with bias, on an input of F::input(c) drawn
// from `seed`; for the configurations `nonBatched(i)` picks, also that input's first sample
// alone, and for those `noBias(i)` picks, the batched input through a module without bias.
template <class F>
std::vector<ConvTwinCase> conv_twin_cases(const std::vector<typename F::Config>& cfgs, uint64_t seed,
                                          const std::function<bool(size_t)>& nonBatched,
                                          const std::function<bool(size_t)>& noBias) {
  tensor::Generator gen(seed);
  std::vector<ConvTwinCase> out;
  for (size_t i = 0; i < cfgs.size(); ++i) {
    const tensor::Tensor x = tensor::uniform(F::input(cfgs[i]), -1, 1, gen, tensor::DType::Float64);
    const std::string name = "config " + std::to_string(i);
    out.push_back({name, conv_twin_factory<F>(cfgs[i], true), x});
    if (nonBatched(i)) out.push_back({name + " non-batched", conv_twin_factory<F>(cfgs[i], true), x[0].contiguous()});
    if (noBias(i)) out.push_back({name + " without bias", conv_twin_factory<F>(cfgs[i], false), x});
  }
  return out;
}

// TF32 keeps a 10-bit mantissa: each operand is off by up to 2^-11 (about 5e-4) relative, a
// product by about 1e-3. Norm-wise that is about 1e-3 for the output and the gradients;
// layers with a handful of outputs (a temporal convolution with 6) reach a few 1e-3, hence
// 5e-3 and 1e-2 (the same layers are within 1e-5 and 1e-4 with TF32 off, and a wrong
// result is off by O(1)).
inline TwinTolerance tf32_tolerance() { return {5e-3, 1e-2}; }

// expect_twin_matches for every case in `dt` (float32 runs with TF32 off).
inline void expect_conv_cases_match(const std::vector<ConvTwinCase>& cases, tensor::DType dt,
                                    bool noncontiguous = false) {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (const ConvTwinCase& c : cases) {
    INFO("case ", c.name, ", input ", tensor::shape_str(c.input.sizes()), ", ", std::string(tensor::name(dt)),
         std::string(noncontiguous ? ", non-contiguous input" : ""));
    nn::ModulePtr ref = c.make(false), twin = c.make(true);
    expect_twin_matches(*ref, *twin, c.input, dt, TwinTolerance::for_dtype(dt), noncontiguous);
  }
}

// float32 with TF32 allowed, within tf32_tolerance().
inline void expect_conv_cases_match_tf32(const std::vector<ConvTwinCase>& cases) {
  cudnn::ScopedConfig flags("allow_tf32=true");
  for (const ConvTwinCase& c : cases) {
    INFO("case ", c.name, ", input ", tensor::shape_str(c.input.sizes()), ", float32 with TF32 allowed");
    nn::ModulePtr ref = c.make(false), twin = c.make(true);
    expect_twin_matches(*ref, *twin, c.input, tensor::DType::Float32, tf32_tolerance());
  }
}

// Two backward passes with scale 0.5 (the first through backward(), the second through
// updateGradInput + accGradParameters) accumulate into the parameter gradients as nn's do.
inline void expect_conv_accumulates(const ConvTwinCase& c) {
  cudnn::ScopedConfig flags("allow_tf32=false");
  INFO("case ", c.name, ", input ", tensor::shape_str(c.input.sizes()));
  const tensor::Device gpu = tensor::Device::cuda(0);
  nn::ModulePtr ref = c.make(false), twin = c.make(true);
  ref->to(tensor::DType::Float64);
  twin->loadStateDict(ref->stateDict());
  twin->to(gpu);
  ref->zeroGradParameters();
  twin->zeroGradParameters();
  tensor::Generator gen(808);
  const tensor::Tensor x = c.input.to(tensor::DType::Float64);
  const tensor::Tensor xg = x.to(gpu, tensor::DType::Float32);
  const tensor::Tensor y = ref->forward(x).clone();
  twin->forward(xg);
  const tensor::Tensor g1 = tensor::uniform(y.sizes(), -1, 1, gen, tensor::DType::Float64);
  const tensor::Tensor g2 = tensor::uniform(y.sizes(), -1, 1, gen, tensor::DType::Float64);
  ref->backward(x, g1, 0.5);
  twin->backward(xg, g1.to(gpu, tensor::DType::Float32), 0.5);
  ref->backward(x, g2, 0.5);
  twin->updateGradInput(xg, g2.to(gpu, tensor::DType::Float32));
  twin->accGradParameters(xg, g2.to(gpu, tensor::DType::Float32), 0.5);
  const auto rp = ref->namedGradParameters(), tp = twin->namedGradParameters();
  REQUIRE(rp.size() == tp.size());
  for (size_t i = 0; i < rp.size(); ++i) {
    INFO("grad of ", rp[i].first);
    CHECK(tensor::rel_norm_error(tp[i].second, rp[i].second) < 1e-4);
  }
  CHECK(tensor::rel_norm_error(twin->gradInput, ref->gradInput) < 1e-4);
}

// After one warm-up iteration, five forward + backward iterations allocate no device memory
// and search no algorithm. `searches` reads the twin's plan.
inline void expect_conv_steady_state(nn::Module& twin, const tensor::Tensor& input,
                                     const std::function<int()>& searches) {
  const tensor::Device gpu = tensor::Device::cuda(0);
  twin.to(gpu);
  tensor::Generator gen(91);
  const tensor::Tensor x = input.to(gpu, tensor::DType::Float32);
  const tensor::Tensor y = twin.forward(x);
  const tensor::Tensor g = tensor::uniform(y.sizes(), -1, 1, gen, tensor::DType::Float32, gpu);
  twin.backward(x, g);
  tensor::cuda::synchronize();
  const auto mallocs = tensor::cuda::memory_stats().device_mallocs;
  const int searched = searches();
  for (int i = 0; i < 5; ++i) {
    twin.forward(x);
    twin.backward(x, g);
  }
  tensor::cuda::synchronize();
  CHECK(tensor::cuda::memory_stats().device_mallocs == mallocs);
  CHECK(searches() == searched);
}

// Each forward algorithm name, pinned on the twin with `setMode`, computes what nn does
// (algorithms cuDNN does not offer for the shapes fall back: correctness is the check);
// likewise each backward-data and backward-filter name. `algorithm` reads what the twin's
// plan ran; returns the "pass:name" pins that ran as pinned.
inline std::string expect_pinned_algorithms_match(
    const ConvTwinCase& c,
    const std::function<void(nn::Module&, const std::string&, const std::string&, const std::string&)>& setMode,
    const std::function<int(nn::Module&, cudnn::ConvPass)>& algorithm) {
  cudnn::ScopedConfig flags("allow_tf32=false");
  struct Pin {
    cudnn::ConvPass pass;
    const char* name;
  };
  const std::vector<Pin> pins = {
      {cudnn::ConvPass::Forward, "none"},
      {cudnn::ConvPass::Forward, "small"},
      {cudnn::ConvPass::Forward, "large"},
      {cudnn::ConvPass::Forward, "fft"},
      {cudnn::ConvPass::Forward, "fft_tiling"},
      {cudnn::ConvPass::Forward, "winograd"},
      {cudnn::ConvPass::Forward, "winograd_non_fused"},
      {cudnn::ConvPass::BackwardData, "none"},
      {cudnn::ConvPass::BackwardData, "deterministic"},
      {cudnn::ConvPass::BackwardData, "fft"},
      {cudnn::ConvPass::BackwardData, "fft_tiling"},
      {cudnn::ConvPass::BackwardData, "winograd"},
      {cudnn::ConvPass::BackwardData, "winograd_non_fused"},
      {cudnn::ConvPass::BackwardFilter, "none"},
      {cudnn::ConvPass::BackwardFilter, "deterministic"},
      {cudnn::ConvPass::BackwardFilter, "small"},
      {cudnn::ConvPass::BackwardFilter, "fft"},
      {cudnn::ConvPass::BackwardFilter, "fft_tiling"},
      {cudnn::ConvPass::BackwardFilter, "winograd_non_fused"},
  };
  // FFT and Winograd transform the data: their float32 error is larger than direct sums'
  const TwinTolerance tol{2e-4, 5e-4};
  std::string ran;
  for (const Pin& p : pins) {
    const std::string flag = p.name;
    INFO("case ", c.name, ", conv.algo_", std::string(cudnn::pass_name(p.pass)), "=", flag);
    nn::ModulePtr ref = c.make(false), twin = c.make(true);
    setMode(*twin, p.pass == cudnn::ConvPass::Forward ? flag : "",
            p.pass == cudnn::ConvPass::BackwardFilter ? flag : "", p.pass == cudnn::ConvPass::BackwardData ? flag : "");
    expect_twin_matches(*ref, *twin, c.input, tensor::DType::Float32, tol);
    if (algorithm(*twin, p.pass) == cudnn::AlgoSetting::parse(p.pass, flag).algo) {
      ran += std::string(ran.empty() ? "" : " ") + cudnn::pass_name(p.pass) + ":" + flag;
    }
  }
  return ran;
}

}  // namespace testing
