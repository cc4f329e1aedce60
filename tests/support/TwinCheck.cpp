// TwinCheck.cpp: doctest adapters over testkit/TwinCheck.h, the twin on cuda:0.
#include "tests/support/TwinCheck.h"

#include "testkit/Compare.h"
#include "tests/support/Kit.h"

namespace testing {

using tensor::DType;
using tensor::Tensor;

namespace {
nn::testkit::TwinOptions on_gpu(DType dtype, TwinTolerance tol, bool noncontiguous = false) {
  nn::testkit::TwinOptions o;
  o.dtype = dtype;
  o.tolerance = tol;
  o.noncontiguous = noncontiguous;
  o.device = tensor::Device::cuda(0);
  return o;
}
}  // namespace

void expect_twin_matches(nn::Module& reference, nn::Module& twin, const Tensor& input, DType dtype, TwinTolerance tol,
                         bool noncontiguous) {
  expect_ok(nn::testkit::check_twin(reference, twin, input, on_gpu(dtype, tol, noncontiguous)));
}

void expect_twin_criterion_matches(nn::Criterion& reference, nn::Criterion& twin, const Tensor& input,
                                   const Tensor& target, DType dtype, TwinTolerance tol) {
  expect_ok(nn::testkit::check_twin_criterion(reference, twin, input, target, on_gpu(dtype, tol)));
}

void expect_twin_nonfinite_matches(nn::Module& reference, nn::Module& twin, const Tensor& input,
                                   const std::vector<int64_t>& positions, DType dtype, TwinTolerance tol) {
  expect_ok(nn::testkit::check_twin_nonfinite(reference, twin, input, positions, on_gpu(dtype, tol)));
}

void expect_twin_nonfinite_gradient_matches(nn::Module& reference, nn::Module& twin, const Tensor& input,
                                            const std::vector<int64_t>& positions, DType dtype, TwinTolerance tol) {
  expect_ok(nn::testkit::check_twin_nonfinite_gradient(reference, twin, input, positions, on_gpu(dtype, tol)));
}

void expect_twin_criterion_nonfinite_matches(nn::Criterion& reference, nn::Criterion& twin, const Tensor& input,
                                             const Tensor& target, const std::vector<int64_t>& positions, DType dtype,
                                             TwinTolerance tol) {
  expect_ok(nn::testkit::check_twin_criterion_nonfinite(reference, twin, input, target, positions, on_gpu(dtype, tol)));
}

void expect_same_nonfinite(const char* what, const Tensor& got, const Tensor& want, double tol) {
  expect_ok(nn::testkit::compare_nonfinite(what, got, want, tol));
}

void expect_convert_roundtrip(nn::ModulePtr module, const Tensor& input) {
  expect_ok(nn::testkit::check_convert_roundtrip(module, input));
}

void expect_criterion_convert_roundtrip(nn::CriterionPtr criterion, const Tensor& input, const Tensor& target) {
  expect_ok(nn::testkit::check_criterion_convert_roundtrip(criterion, input, target));
}

}  // namespace testing
