// SoftMaxTwinChecks.h: the checks every softmax twin goes through (the rows of
// tests/cudnn/test_SoftMaxFamily.cpp): expect_twin_matches over the ranks the family accepts
// (batch and not, batch 1, odd sizes), fast mode, large inputs, the convert round trip and
// the errors.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "convert/Convert.h"
#include "cudnn/SoftMaxBase.h"
#include "tests/support/TwinCheck.h"

namespace testing {

// Twin against nn for each of `shapes`, inputs uniform in [-scale, scale].
template <class Nn, class Cu>
void expect_softmax_twin_matches(const std::vector<tensor::Shape>& shapes, tensor::DType dt, bool noncontiguous = false,
                                 double scale = 3, bool fast = false, uint64_t seed = 23) {
  tensor::Generator gen(seed);
  INFO("input seed ", seed, ", inputs in [-", scale, ", ", scale, "]", std::string(fast ? ", fast mode" : ""));
  for (const tensor::Shape& s : shapes) {
    INFO("input ", tensor::shape_str(s));
    Nn ref;
    Cu twin;
    twin.fastMode(fast);
    expect_twin_matches(ref, twin, tensor::uniform(s, -scale, scale, gen, tensor::DType::Float64), dt,
                        TwinTolerance::for_dtype(dt), noncontiguous);
  }
}

// Accurate mode subtracts the maximum: inputs in [-1000, 1000] (exp overflows float32 past
// ~88) stay finite and match nn's float64 output in float32, up to the inputs' rounding to
// float32 (half an ulp of 1000 is 3e-5). The gradient is not compared: with near one-hot
// outputs it is ~exp(-300), zero in float32.
template <class Nn, class Cu>
void expect_softmax_large_inputs(const std::vector<tensor::Shape>& shapes, uint64_t seed = 29) {
  tensor::Generator gen(seed);
  INFO("input seed ", seed);
  for (const tensor::Shape& s : shapes) {
    INFO("input ", tensor::shape_str(s));
    Nn ref;
    ref.to(tensor::DType::Float64);
    Cu twin;
    twin.to(tensor::Device::cuda(0));
    const tensor::Tensor x = tensor::uniform(s, -1000, 1000, gen, tensor::DType::Float64);
    const tensor::Tensor want = ref.forward(x);
    const tensor::Tensor got = twin.forward(x.to(tensor::Device::cuda(0), tensor::DType::Float32));
    CHECK_FALSE(tensor::has_nonfinite(got));
    const double scale = 1 + want.abs().max().item();
    CHECK(tensor::max_abs_diff(got, want) / scale < 2e-5);
  }
}

// convert round trip, fast mode's switch, printing, and the errors; `bad` is a shape the
// family rejects, with nn's message for it.
template <class Nn, class Cu>
void expect_softmax_convert_and_errors(const tensor::Shape& good, const tensor::Shape& bad,
                                       const std::string& badMessage) {
  tensor::Generator gen(9);
  expect_convert_roundtrip(std::make_shared<Nn>(), tensor::uniform(good, -2, 2, gen));
  Cu twin;
  CHECK_FALSE(twin.fastMode());
  twin.fastMode(true);
  CHECK(twin.fastMode());
  twin.fastMode(false);
  // fast mode is kept on the nn module, so it survives nn -> cudnn -> nn -> cudnn
  {
    auto m = std::make_shared<Nn>();
    m->fast = true;
    auto cu = nn::convert(nn::convert(nn::convert(m, cudnn::backend), nn::backend), cudnn::backend);
    CHECK(dynamic_cast<Cu&>(*cu).fastMode());
  }
  const std::string name = twin.type_name();
  CHECK(twin.str() == name);
  CHECK(name == "cudnn" + Nn().type_name().substr(2));
  const tensor::Device gpu = tensor::Device::cuda(0);
  CHECK_THROWS_WITH_AS(twin.forward(tensor::zeros(good)),
                       doctest::Contains((name + "::updateOutput: expected input on a CUDA device, got float32 " +
                                          tensor::shape_str(good) + " on cpu")
                                             .c_str()),
                       tensor::Error);
  CHECK_THROWS_WITH_AS(twin.forward(tensor::zeros(bad, tensor::DType::Float32, gpu)),
                       (name + "::updateOutput: " + badMessage).c_str(), tensor::Error);
  CHECK_THROWS_WITH_AS(twin.forward(tensor::zeros(good, tensor::DType::Int64, gpu)),
                       doctest::Contains("expected a float32, float64, float16 or bfloat16 input, got int64"),
                       tensor::Error);
  const tensor::Tensor x = tensor::zeros(good, tensor::DType::Float32, gpu);
  twin.forward(x);
  CHECK_THROWS_WITH_AS(
      twin.backward(x, tensor::zeros({3}, tensor::DType::Float32, gpu)),
      doctest::Contains((name + "::updateGradInput: expected gradOutput of the input's shape and dtype").c_str()),
      tensor::Error);
  CHECK_THROWS_WITH_AS(twin.backward(x.to(tensor::DType::Float64), x.to(tensor::DType::Float64)),
                       doctest::Contains((name + "::updateGradInput: no output for input").c_str()), tensor::Error);
}

// NaN, +Inf and -Inf inputs (Note [NaN and Inf] in nn/kernels/Activation.h), accurate mode:
// rows holding a NaN or +Inf are NaN on both backends, the others nn's values; float32.
template <class Nn, class Cu>
void expect_softmax_nonfinite(const std::vector<tensor::Shape>& shapes, uint64_t seed = 67) {
  tensor::Generator gen(seed);
  for (const tensor::Shape& s : shapes) {
    INFO("input ", tensor::shape_str(s));
    Nn ref;
    Cu twin;
    expect_twin_nonfinite_matches(ref, twin, tensor::uniform(s, -3, 3, gen, tensor::DType::Float64));
  }
}

}  // namespace testing
