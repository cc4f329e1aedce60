// GradCheck.h: the finite-difference gradient checker (torch/nn's Jacobian.lua and Caffe's
// GradientChecker, in one), and the checks of how a module keeps its gradients and state.
// The scalar checked is L(x, params) = sum(forward(x) .* R) for a fixed random R, so one
// backward(x, R) gives every analytic derivative; each sampled entry of the input and of
// every parameter is then perturbed by +-eps (central differences, float64). Errors are
// relative, scaled by max(|analytic|, |numeric|, 1) as Caffe does; points where the
// one-sided differences disagree (a kink: ReLU at 0, max pooling ties) are skipped.
// The module is reseeded before every forward, so stochastic modules repeat their noise.
#pragma once

#include <cstdint>
#include <string>

#include "nn/Criterion.h"
#include "nn/Module.h"
#include "testkit/Report.h"

namespace nn::testkit {

struct GradCheckOptions {
  double eps = 1e-6;
  double tolerance = 1e-6;    // on the scaled relative error
  int64_t max_samples = 150;  // entries checked per tensor (all when fewer)
  uint64_t seed = 1234;       // picks sampled entries, R, and reseeds the module
  bool check_parameters = true;
  double kink_threshold = 1e-9;  // |L+ - 2 L0 + L-| above this (relative) marks a kink
  // false: a parameter-only check. The input is not perturbed and its gradient is not read,
  // so it may be of any dtype (an Embedding's int64 indices); the parameters must be float64.
  bool check_input = true;
};

// A Report whose expectations are "something was checked" and "the worst error is within
// the tolerance"; str() gives the numbers and the worst entry.
struct GradCheckReport : Report {
  double max_error = 0;
  std::string worst;  // "input[3]", "weight[0 x 2 x 1 x 1]", ...
  int64_t checked = 0;
  int64_t skipped = 0;  // kinks
  std::string str() const;
};

// Checks gradInput and every parameter gradient of `module` (already float64, on the CPU) at
// `input` (float64; any dtype with check_input = false, which checks the parameters alone).
GradCheckReport check_gradients(nn::Module& module, const tensor::Tensor& input, const GradCheckOptions& options = {});
// The same for a module that takes or gives tables (nn/Value.h): the input's tensors (float64)
// are perturbed entry by entry, and every tensor of the output enters the loss.
GradCheckReport check_gradients(nn::Module& module, const nn::Value& input, const GradCheckOptions& options = {});
// Same for a criterion's gradInput, for a fixed target.
GradCheckReport check_criterion_gradient(nn::Criterion& criterion, const tensor::Tensor& input,
                                         const tensor::Tensor& target, const GradCheckOptions& options = {});

// backward(x, g, scale) accumulates scale * gradient into the parameter gradients, two calls
// accumulate twice, and zeroGradParameters() clears them.
Report check_accumulation(nn::Module& module, const tensor::Tensor& input);

// Saves the module's state (safetensors bytes), loads it into `fresh` (a module built with the
// same arguments, different initialisation) and expects identical forward and backward results.
Report check_state_roundtrip(nn::Module& module, nn::Module& fresh, const tensor::Tensor& input);

}  // namespace nn::testkit
