// AddingChecks.h: forwardAdding (Note [Sums in the product's epilogue] in nn/Module.cpp) on nn
// modules and on their cudnn twins.
#pragma once

#include <doctest/doctest.h>

#include <vector>

#include "nn/Module.h"
#include "tensor/Tensor.h"
#include "testkit/Compare.h"
#include "testkit/Inputs.h"

namespace testing {

// nn: forwardAdding(input, addend) is forward(input) + addend bit for bit, and a backward after
// it gives the plain forward's gradients bit for bit (no module that adds reads its output).
inline void expect_adding_exact(nn::Module& m, const tensor::Tensor& input) {
  using tensor::Tensor;
  tensor::Generator gen(77);
  REQUIRE(m.takesAddend(input));
  const Tensor plain = m.forward(input).clone();
  const Tensor addend = tensor::uniform(plain.sizes(), -2, 2, gen, plain.dtype()).to(plain.device());
  const Tensor gy = tensor::uniform(plain.sizes(), -1, 1, gen, plain.dtype()).to(plain.device());
  m.zeroGradParameters();
  const Tensor gx = m.backward(input, gy).clone();
  std::vector<Tensor> grads;
  for (const Tensor& g : m.gradParameters()) grads.push_back(g.clone());
  const Tensor sum = m.forwardAdding(input, addend).clone();
  CHECK(tensor::max_abs_diff(sum, plain.add(addend)) == 0);
  m.zeroGradParameters();
  CHECK(tensor::max_abs_diff(m.backward(input, gy), gx) == 0);
  const std::vector<Tensor> again = m.gradParameters();
  REQUIRE(again.size() == grads.size());
  for (size_t i = 0; i < grads.size(); ++i) CHECK(tensor::max_abs_diff(again[i], grads[i]) == 0);
  // NaN, +Inf and -Inf in the addend, then in the input: the same kinds at the same places as
  // forward + addend, the finite values bit for bit.
  const Tensor badAddend = nn::testkit::with_nonfinite(addend);
  const Tensor badInput = nn::testkit::with_nonfinite(input);
  const auto exact = [&](const Tensor& x, const Tensor& a, const char* what) {
    const Tensor want = m.forward(x).add(a).clone();
    const nn::testkit::Report r = nn::testkit::compare_nonfinite(what, m.forwardAdding(x, a), want, 0);
    CHECK_MESSAGE(r.ok(), r.str());
  };
  exact(input, badAddend, "forwardAdding, NaN and Inf in the addend");
  exact(badInput, addend, "forwardAdding, NaN and Inf in the input");
}

// A twin on `device` in `dtype` with its nn reference's state (float64 on the CPU):
// forwardAdding's sum within `tol` (relative norm) of the reference's and of the twin's own
// forward + addend (the one rounding of the few rows' kernel against two).
inline void expect_twin_adding_matches(nn::Module& reference, nn::Module& twin, const tensor::Tensor& input,
                                       tensor::DType dtype, double tol,
                                       tensor::Device device = tensor::Device::cuda(0)) {
  using tensor::DType;
  using tensor::Tensor;
  tensor::Generator gen(78);
  reference.to(DType::Float64);
  twin.to(device);
  twin.to(dtype);
  twin.loadStateDict(reference.stateDict());
  const Tensor x64 = input.to(DType::Float64);
  const Tensor plain64 = reference.forward(x64).clone();
  const Tensor addend64 = tensor::uniform(plain64.sizes(), -2, 2, gen, DType::Float64);
  const Tensor want = reference.forwardAdding(x64, addend64).clone();
  const Tensor x = x64.to(device, dtype), addend = addend64.to(device, dtype);
  REQUIRE(twin.takesAddend(x));
  const Tensor got = twin.forwardAdding(x, addend).to(tensor::Device::cpu(), DType::Float64);
  CHECK(tensor::rel_norm_error(got, want) < tol);
  const Tensor twinPlain = twin.forward(x).add(addend).to(tensor::Device::cpu(), DType::Float64);
  CHECK(tensor::rel_norm_error(got, twinPlain) < tol);
  // NaN, +Inf and -Inf in the addend, then in the input: the twin's sum has them where nn's has
  // (Both backends give the same answer, NaN and Inf included).
  const auto same = [&](const Tensor& x64i, const Tensor& a64, const char* what) {
    const Tensor want64 = reference.forwardAdding(x64i, a64).clone();
    const Tensor got64 =
        twin.forwardAdding(x64i.to(device, dtype), a64.to(device, dtype)).to(tensor::Device::cpu(), DType::Float64);
    const nn::testkit::Report r = nn::testkit::compare_nonfinite(what, got64, want64, tol);
    CHECK_MESSAGE(r.ok(), r.str());
  };
  same(x64, nn::testkit::with_nonfinite(addend64), "twin forwardAdding, NaN and Inf in the addend");
  same(nn::testkit::with_nonfinite(x64), addend64, "twin forwardAdding, NaN and Inf in the input");
}

}  // namespace testing
