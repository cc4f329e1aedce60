// GradCheck.h: doctest adapters over the testing kit's gradient checker (testkit/GradCheck.h:
// central differences in float64, kinks skipped, sampled entries), which every nn module test
// uses, and small helpers the suites share.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "nn/Criterion.h"
#include "nn/Module.h"
#include "testkit/GradCheck.h"

namespace testing {

using nn::testkit::check_criterion_gradient;
using nn::testkit::check_gradients;
using nn::testkit::GradCheckOptions;
using nn::testkit::GradCheckReport;

// CHECK that the worst error is within tolerance and that something was checked; on failure
// the message names the worst entry.
void expect_gradients_ok(nn::Module& module, const tensor::Tensor& input, const GradCheckOptions& options = {});
// The same for a module that takes or gives tables (nn/Value.h).
void expect_gradients_ok(nn::Module& module, const nn::Value& input, const GradCheckOptions& options = {});
void expect_criterion_gradient_ok(nn::Criterion& criterion, const tensor::Tensor& input, const tensor::Tensor& target,
                                  const GradCheckOptions& options = {});

// nn::testkit::check_accumulation: backward(x, g, scale) accumulates scale * gradient, two
// calls accumulate twice, and zeroGradParameters() clears them.
void expect_accumulation_ok(nn::Module& module, const tensor::Tensor& input);

// nn::testkit::check_state_roundtrip: the state through safetensors bytes into `fresh` (built
// with the same arguments) gives identical forward and backward results.
void expect_state_roundtrip_ok(nn::Module& module, nn::Module& fresh, const tensor::Tensor& input);

// Every module prints starting with its type name (torch/nn's test does the same).
void expect_prints_type(nn::Module& module);

// Draws "random sizes from a fixed, printed seed": uniform integer in [lo, hi].
int64_t random_size(tensor::Generator& gen, int64_t lo, int64_t hi);

}  // namespace testing
