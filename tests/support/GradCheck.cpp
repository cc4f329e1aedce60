// GradCheck.cpp: doctest adapters over testkit/GradCheck.h.
#include "tests/support/GradCheck.h"

#include <doctest/doctest.h>

#include "tests/support/Kit.h"

namespace testing {

using tensor::Tensor;

void expect_gradients_ok(nn::Module& module, const Tensor& input, const GradCheckOptions& o) {
  const GradCheckReport r = check_gradients(module, input, o);
  INFO(module.str(), " at input ", tensor::shape_str(input.sizes()), ": ", r.str());
  CHECK(r.checked > 0);
  CHECK(r.max_error <= o.tolerance);
}

void expect_gradients_ok(nn::Module& module, const nn::Value& input, const GradCheckOptions& o) {
  const GradCheckReport r = check_gradients(module, input, o);
  INFO(module.str(), " at input ", input.description(), ": ", r.str());
  CHECK(r.checked > 0);
  CHECK(r.max_error <= o.tolerance);
}

void expect_criterion_gradient_ok(nn::Criterion& criterion, const Tensor& input, const Tensor& target,
                                  const GradCheckOptions& o) {
  const GradCheckReport r = check_criterion_gradient(criterion, input, target, o);
  INFO(criterion.str(), " at input ", tensor::shape_str(input.sizes()), ": ", r.str());
  CHECK(r.checked > 0);
  CHECK(r.max_error <= o.tolerance);
}

void expect_accumulation_ok(nn::Module& module, const Tensor& input) {
  expect_ok(nn::testkit::check_accumulation(module, input));
}

void expect_state_roundtrip_ok(nn::Module& module, nn::Module& fresh, const Tensor& input) {
  expect_ok(nn::testkit::check_state_roundtrip(module, fresh, input));
}

void expect_prints_type(nn::Module& module) { CHECK(module.str().rfind(module.type_name(), 0) == 0); }

int64_t random_size(tensor::Generator& gen, int64_t lo, int64_t hi) { return lo + gen.randint(hi - lo + 1); }

}  // namespace testing
