// PointwiseTwinChecks.h: the checks every activation twin goes through (the rows of
// tests/cudnn/test_PointwiseFamily.cpp), given factories for the nn module and its twin:
// expect_twin_matches over 1-D to 5-D inputs in place and not, real storage sharing in place
// (a non-contiguous input written through its view), the convert round trip and the errors.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <vector>

#include "convert/Convert.h"
#include "nn/PointwiseBase.h"
#include "tests/support/TwinCheck.h"

namespace testing {

// Builds one side's module, in place or not; nullptr for in place where the type has no in-place
// variant (GELU, SiLU, LeakyReLU with a negative slope), and the checks skip it.
using PointwiseFactory = std::function<nn::ModulePtr(bool inplace)>;

inline nn::PointwiseBase& as_pointwise(const nn::ModulePtr& m) { return dynamic_cast<nn::PointwiseBase&>(*m); }

// Twin against nn for [7], [3 x 5], [2 x 3 x 5], [2 x 3 x 4 x 5], [2 x 2 x 3 x 3 x 4], in place
// and not, inputs uniform in [lo, hi] from `seed`.
inline void expect_pointwise_twin_matches(const PointwiseFactory& makeNn, const PointwiseFactory& makeCu,
                                          tensor::DType dt, bool noncontiguous = false, double lo = -2, double hi = 2,
                                          uint64_t seed = 17) {
  const std::vector<tensor::Shape> shapes = {{7}, {3, 5}, {2, 3, 5}, {2, 3, 4, 5}, {2, 2, 3, 3, 4}};
  tensor::Generator gen(seed);
  INFO("input seed ", seed, ", inputs in [", lo, ", ", hi, "]");
  for (const tensor::Shape& s : shapes) {
    for (bool inplace : {false, true}) {
      INFO("input ", tensor::shape_str(s), std::string(inplace ? ", in place" : ", not in place"));
      nn::ModulePtr ref = makeNn(inplace), twin = makeCu(inplace);
      if (!ref) continue;
      REQUIRE(as_pointwise(twin).inplace == inplace);
      expect_twin_matches(*ref, *twin, tensor::uniform(s, lo, hi, gen, tensor::DType::Float64), dt,
                          TwinTolerance::for_dtype(dt), noncontiguous);
    }
  }
}

// In place the output IS the input and gradInput IS gradOutput (same storage), with nn's
// values; a non-contiguous input is written through its own view; in-place off again
// leaves the caller's tensors alone. Inputs uniform in [lo, hi].
inline void expect_pointwise_in_place(const PointwiseFactory& makeNn, const PointwiseFactory& makeCu, double lo = -2,
                                      double hi = 2) {
  const tensor::Device gpu = tensor::Device::cuda(0);
  tensor::Generator gen(5);
  nn::ModulePtr ref = makeNn(false), twin = makeCu(true);
  if (!twin) return;
  twin->to(gpu);
  const tensor::Tensor x0 = tensor::uniform({4, 6}, lo, hi, gen);
  const tensor::Tensor want = ref->forward(x0).clone();
  tensor::Tensor x = x0.to(gpu);
  const tensor::Tensor y = twin->forward(x);
  CHECK(y.is_same_view(x));
  CHECK(tensor::max_abs_diff(x, want) < 1e-5);  // the caller's tensor holds the output
  const tensor::Tensor g0 = tensor::uniform({4, 6}, -1, 1, gen);
  const tensor::Tensor gwant = ref->backward(x0, g0).clone();
  tensor::Tensor g = g0.to(gpu);
  const tensor::Tensor gi = twin->backward(x, g);
  CHECK(gi.is_same_view(g));
  CHECK(tensor::max_abs_diff(g, gwant) < 1e-5);

  // a transposed (non-contiguous) input: written through its view, gradients still nn's
  const tensor::Tensor b0 = tensor::uniform({3, 5}, lo, hi, gen);
  tensor::Tensor base = b0.to(gpu);
  tensor::Tensor xt = base.t();
  const tensor::Tensor yt = twin->forward(xt);
  CHECK(yt.is_same_view(xt));
  CHECK(tensor::max_abs_diff(base.t(), ref->forward(b0.t())) < 1e-5);
  const tensor::Tensor gt0 = tensor::uniform({5, 3}, -1, 1, gen);
  const tensor::Tensor gt = twin->backward(xt, gt0.to(gpu));
  CHECK(tensor::max_abs_diff(gt, ref->backward(b0.t(), gt0)) < 1e-5);

  // switching in-place off must not keep writing into the caller's tensors
  as_pointwise(twin).inplace = false;
  const tensor::Tensor x2 = tensor::uniform({5}, lo, hi, gen).to(gpu);
  const tensor::Tensor x2copy = x2.clone();
  twin->forward(x2);
  CHECK_FALSE(twin->output.shares_storage(x2));
  CHECK(tensor::max_abs_diff(x2, x2copy) == 0);
}

// convert round trip (in place or not: the flag survives; inputs uniform in [lo, hi]), printing,
// and the errors.
inline void expect_pointwise_convert_and_errors(const PointwiseFactory& makeNn, const PointwiseFactory& makeCu,
                                                double lo = -2, double hi = 2) {
  tensor::Generator gen(9);
  expect_convert_roundtrip(makeNn(false), tensor::uniform({3, 4, 5}, lo, hi, gen));
  if (nn::ModulePtr inplace = makeNn(true)) {
    nn::ModulePtr cu = nn::convert(inplace, cudnn::backend);
    CHECK(cu->type_name().rfind("cudnn.", 0) == 0);
    CHECK(as_pointwise(cu).inplace);
    CHECK(as_pointwise(nn::convert(cu, nn::backend)).inplace);
  }

  nn::ModulePtr twin = makeCu(false);
  CHECK(twin->str().rfind(twin->type_name(), 0) == 0);
  const std::string name = twin->type_name();
  CHECK_THROWS_WITH_AS(twin->forward(tensor::zeros({2, 3})),
                       (name + "::updateOutput: expected input on a CUDA device, got float32 [2 x 3] on cpu (move it "
                               "with .to(tensor::Device::cuda()))")
                           .c_str(),
                       tensor::Error);
  const tensor::Device gpu = tensor::Device::cuda(0);
  CHECK_THROWS_WITH_AS(twin->forward(tensor::zeros({2, 3}, tensor::DType::Int64, gpu)),
                       doctest::Contains((name + "::updateOutput: expected a float32, float64, float16 or bfloat16 "
                                                 "input, got int64 [2 x 3]")
                                             .c_str()),
                       tensor::Error);
  twin->forward(tensor::zeros({2, 3}, tensor::DType::Float32, gpu));
  CHECK_THROWS_WITH_AS(twin->backward(tensor::zeros({2, 3}, tensor::DType::Float32, gpu),
                                      tensor::zeros({3, 2}, tensor::DType::Float32, gpu)),
                       doctest::Contains((name + "::updateGradInput: expected gradOutput of the output's shape and "
                                                 "dtype (float32 [2 x 3]")
                                             .c_str()),
                       tensor::Error);
}

// NaN, +Inf and -Inf inputs (Note [NaN and Inf] in nn/kernels/Activation.h): nn's non-finite
// and finite values, forward and backward, over [3 x 5] and [2 x 3 x 4 x 5], in place and not,
// float32 and float64.
inline void expect_pointwise_nonfinite_matches(const PointwiseFactory& makeNn, const PointwiseFactory& makeCu) {
  tensor::Generator gen(61);
  for (const tensor::Shape& s : {tensor::Shape{3, 5}, tensor::Shape{2, 3, 4, 5}}) {
    for (bool inplace : {false, true}) {
      for (tensor::DType dt : {tensor::DType::Float32, tensor::DType::Float64}) {
        INFO("input ", tensor::shape_str(s), std::string(inplace ? ", in place" : ", not in place"));
        nn::ModulePtr ref = makeNn(inplace), twin = makeCu(inplace);
        if (!ref) continue;
        expect_twin_nonfinite_matches(*ref, *twin, tensor::uniform(s, -2, 2, gen, tensor::DType::Float64), {}, dt,
                                      TwinTolerance::for_dtype(dt));
      }
    }
  }
}

}  // namespace testing
