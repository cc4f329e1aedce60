// TwinCheck.cpp
#include "tests/support/TwinCheck.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "convert/Convert.h"
#include "tensor/Safetensors.h"
#include "tests/support/NonContiguous.h"

namespace testing {

using tensor::Device;
using tensor::DType;
using tensor::Tensor;

TwinTolerance TwinTolerance::for_dtype(DType dt) {
  switch (dt) {
    case DType::Float64:
      return {1e-10, 1e-9};
    case DType::Float16:
      return {4e-3, 1e-2};
    case DType::BFloat16:
      return {3e-2, 6e-2};
    default:
      return {1e-5, 1e-4};
  }
}

namespace {
const Device gpu = Device::cuda(0);

void compare(const char* what, const Tensor& got, const Tensor& want, double tol) {
  INFO(std::string(what), ": twin ", got.description(), " vs nn ", want.description());
  REQUIRE(got.sizes() == want.sizes());
  CHECK_FALSE(tensor::has_nonfinite(got));
  const double err = tensor::rel_norm_error(got, want);
  INFO("relative error ", err, " (tolerance ", tol, ")");
  CHECK(err <= tol);
}
}  // namespace

Tensor with_nonfinite(const Tensor& input, const std::vector<int64_t>& positions) {
  Tensor x = input.to(tensor::Device::cpu(), DType::Float64).contiguous().clone();
  const int64_t n = x.numel();
  std::vector<int64_t> at = positions;
  if (at.empty())
    at = n >= 8 ? std::vector<int64_t>{n / 7, 3 * n / 7 + 1, 5 * n / 7 + 2} : std::vector<int64_t>{0, 1, 2};
  if (static_cast<int64_t>(at.size()) > n) at.resize(static_cast<size_t>(n));
  const double values[3] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity()};
  double* p = x.data<double>();
  for (size_t i = 0; i < at.size(); ++i) {
    REQUIRE(at[i] >= 0);
    REQUIRE(at[i] < n);
    p[at[i]] = values[i % 3];
  }
  return x.to(input.dtype());
}

namespace {
// 0 finite, 1 NaN, 2 +Inf, 3 -Inf
int kind_of(double v) { return std::isnan(v) ? 1 : std::isinf(v) ? (v > 0 ? 2 : 3) : 0; }
}  // namespace

void expect_same_nonfinite(const char* what, const Tensor& got, const Tensor& want, double tol) {
  INFO(std::string(what), ": twin ", got.description(), " vs nn ", want.description());
  REQUIRE(got.sizes() == want.sizes());
  const Tensor a = got.to(tensor::Device::cpu(), DType::Float64).contiguous();
  const Tensor b = want.to(tensor::Device::cpu(), DType::Float64).contiguous();
  const double* pa = a.data<double>();
  const double* pb = b.data<double>();
  int64_t mismatches = 0, nonfinite = 0;
  double diff2 = 0, ref2 = 0;
  std::ostringstream listed;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const int ka = kind_of(pa[i]), kb = kind_of(pb[i]);
    if (kb != 0) ++nonfinite;
    if (ka != kb) {
      if (mismatches < 12) listed << " [" << i << "] twin " << pa[i] << " nn " << pb[i] << ";";
      ++mismatches;
    } else if (ka == 0) {
      diff2 += (pa[i] - pb[i]) * (pa[i] - pb[i]);
      ref2 += pb[i] * pb[i];
    }
  }
  INFO(mismatches, " element(s) differ in kind (NaN / +Inf / -Inf / finite):", listed.str());
  CHECK(mismatches == 0);
  const double err = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  INFO("relative error of the finite values ", err, " (tolerance ", tol, "); ", nonfinite, " non-finite in nn's");
  CHECK(err <= tol);
}

void expect_twin_nonfinite_matches(nn::Module& reference, nn::Module& twin, const Tensor& input,
                                   const std::vector<int64_t>& positions, DType dtype, TwinTolerance tol) {
  INFO(twin.str(), " vs ", reference.str(), " in ", std::string(tensor::name(dtype)), " with NaN and Inf inputs");
  reference.to(DType::Float64);
  twin.to(gpu);
  twin.to(dtype);
  twin.loadStateDict(reference.stateDict());
  if (reference.isTraining())
    twin.train();
  else
    twin.evaluate();
  reference.zeroGradParameters();
  twin.zeroGradParameters();
  const Tensor x = with_nonfinite(input.to(DType::Float64), positions);
  const Tensor xg = x.to(gpu, dtype);
  tensor::manual_seed(99);
  const Tensor y = reference.forward(x.clone()).clone();
  tensor::manual_seed(99);
  const Tensor yg = twin.forward(xg.clone()).clone();
  expect_same_nonfinite("output", yg, y, tol.forward);
  tensor::Generator gen(4243);
  const Tensor g = tensor::uniform(y.sizes(), -1, 1, gen, DType::Float64);
  const Tensor gx = reference.backward(x.clone(), g.clone()).clone();
  const Tensor gxg = twin.backward(xg.clone(), g.to(gpu, dtype)).clone();
  expect_same_nonfinite("gradInput", gxg, gx, tol.backward);
  const auto rp = reference.namedGradParameters(), tp = twin.namedGradParameters();
  REQUIRE(rp.size() == tp.size());
  for (size_t i = 0; i < rp.size(); ++i) {
    expect_same_nonfinite(("grad of " + rp[i].first).c_str(), tp[i].second, rp[i].second, tol.backward);
  }
  const auto rb = reference.namedBuffers(), tb = twin.namedBuffers();
  REQUIRE(rb.size() == tb.size());
  for (size_t i = 0; i < rb.size(); ++i)
    expect_same_nonfinite(rb[i].first.c_str(), tb[i].second, rb[i].second, tol.forward);
}

void expect_twin_criterion_nonfinite_matches(nn::Criterion& reference, nn::Criterion& twin, const Tensor& input,
                                             const Tensor& target, const std::vector<int64_t>& positions, DType dtype,
                                             TwinTolerance tol) {
  INFO(twin.str(), " vs ", reference.str(), " in ", std::string(tensor::name(dtype)), " with NaN and Inf inputs");
  reference.to(DType::Float64);
  twin.to(gpu);
  twin.to(dtype);
  const Tensor x = with_nonfinite(input.to(DType::Float64), positions);
  const Tensor xg = x.to(gpu, dtype);
  const bool like_input = target.dtype() == input.dtype();
  const Tensor t = like_input ? target.to(DType::Float64) : target;
  const Tensor tg = like_input ? target.to(gpu, dtype) : target.to(gpu);
  const double loss = reference.forward(x, t);
  const double loss_g = twin.forward(xg, tg);
  INFO("loss: twin ", loss_g, ", nn ", loss);
  CHECK(kind_of(loss_g) == kind_of(loss));
  if (kind_of(loss) == 0 && kind_of(loss_g) == 0) CHECK(loss_g == doctest::Approx(loss).epsilon(tol.forward * 10));
  expect_same_nonfinite("gradInput", twin.backward(xg, tg), reference.backward(x, t), tol.backward);
}

namespace {
// cudnn.X for nn.X; a container without a twin (nn.Sequential) holding twins keeps its nn type.
bool is_twin_of(const nn::Module& twin, nn::Module& reference) {
  if (twin.type_name() == "cudnn" + reference.type_name().substr(2)) return true;
  return reference.children() && twin.type_name() == reference.type_name();
}
}  // namespace

void expect_twin_matches(nn::Module& reference, nn::Module& twin, const Tensor& input, DType dtype, TwinTolerance tol,
                         bool noncontiguous) {
  // doctest prints a const char* as a pointer: strings only
  INFO(twin.str(), " vs ", reference.str(), " in ", std::string(tensor::name(dtype)),
       std::string(noncontiguous ? ", non-contiguous input" : ""));
  CHECK(is_twin_of(twin, reference));
  reference.to(DType::Float64);
  // convert first, then load: a float64 twin then holds the reference's exact values
  twin.to(gpu);
  twin.to(dtype);
  twin.loadStateDict(reference.stateDict());
  if (reference.isTraining())
    twin.train();
  else
    twin.evaluate();
  reference.zeroGradParameters();
  twin.zeroGradParameters();

  tensor::Generator gen(4242);
  const Tensor x = input.to(DType::Float64);
  Tensor xg = x.to(gpu, dtype);
  if (noncontiguous) xg = noncontiguous_copy(xg, 0, 1);  // the layout these checks always used, where it is one
  tensor::manual_seed(99);
  const Tensor y = reference.forward(x.clone()).clone();
  tensor::manual_seed(99);
  const Tensor yg = twin.forward(xg).clone();
  compare("output", yg, y, tol.forward);
  const Tensor g = tensor::uniform(y.sizes(), -1, 1, gen, DType::Float64);
  const Tensor gx = reference.backward(x.clone(), g.clone()).clone();
  const Tensor gxg = twin.backward(xg, g.to(gpu, dtype)).clone();
  compare("gradInput", gxg, gx, tol.backward);
  const auto rp = reference.namedGradParameters(), tp = twin.namedGradParameters();
  REQUIRE(rp.size() == tp.size());
  for (size_t i = 0; i < rp.size(); ++i)
    compare(("grad of " + rp[i].first).c_str(), tp[i].second, rp[i].second, tol.backward);
  const auto rb = reference.namedBuffers(), tb = twin.namedBuffers();
  REQUIRE(rb.size() == tb.size());
  for (size_t i = 0; i < rb.size(); ++i) compare(rb[i].first.c_str(), tb[i].second, rb[i].second, tol.forward);

  // state round trip through safetensors bytes, into the twin itself
  const auto bytes = tensor::serialize_safetensors(twin.stateDict());
  const auto loaded = tensor::parse_safetensors(bytes.data(), bytes.size(), "twin state");
  const auto before = twin.stateDict();
  twin.loadStateDict(loaded.tensors);
  for (const auto& [name, t] : twin.stateDict()) CHECK(tensor::max_abs_diff(t, before.at(name)) == 0);
}

void expect_twin_criterion_matches(nn::Criterion& reference, nn::Criterion& twin, const Tensor& input,
                                   const Tensor& target, DType dtype, TwinTolerance tol) {
  INFO(twin.str(), " vs ", reference.str(), " in ", std::string(tensor::name(dtype)));
  CHECK(twin.type_name() == "cudnn" + reference.type_name().substr(2));
  reference.to(DType::Float64);
  twin.to(gpu);
  twin.to(dtype);
  const Tensor x = input.to(DType::Float64);
  const Tensor xg = x.to(gpu, dtype);
  // a target of the input's dtype (MSE's) goes with the input: float64 for nn, `dtype` for the twin
  const bool like_input = target.dtype() == input.dtype();
  const Tensor t = like_input ? target.to(DType::Float64) : target;
  const Tensor tg = like_input ? target.to(gpu, dtype) : target.to(gpu);
  const double loss = reference.forward(x, t);
  const double loss_g = twin.forward(xg, tg);
  CHECK(loss_g == doctest::Approx(loss).epsilon(tol.forward * 10));
  compare("gradInput", twin.backward(xg, tg), reference.backward(x, t), tol.backward);
}

void expect_convert_roundtrip(nn::ModulePtr module, const Tensor& input) {
  INFO("convert round trip of ", module->str());
  const std::string nn_name = module->type_name();
  module->to(DType::Float32);
  const Tensor x = input.to(DType::Float32);
  tensor::manual_seed(7);
  const Tensor y_nn = module->forward(x.clone()).clone();
  const auto state_before = module->stateDict();
  const bool training = module->isTraining();

  nn::ConvertReport report;
  nn::ModulePtr cu = nn::convert(module, cudnn::backend, {}, &report);
  CHECK(cu->type_name() == "cudnn" + nn_name.substr(2));
  CHECK(cu->isTraining() == training);
  for (const auto& [name, t] : cu->stateDict()) {
    CHECK(t.is_cuda());
    CHECK(tensor::max_abs_diff(t.cpu(), state_before.at(name)) == 0);  // nn -> cudnn loses nothing
  }
  tensor::manual_seed(7);
  const Tensor y_cu = cu->forward(x.to(gpu)).clone();
  CHECK(tensor::rel_norm_error(y_cu, y_nn) < 1e-3);  // TF32 may be on: a loose bound

  const auto gpu_state = cu->stateDict();
  nn::ModulePtr back = nn::convert(cu, nn::backend);
  CHECK(back->type_name() == nn_name);
  CHECK(back->isTraining() == training);
  // cudnn -> nn loses nothing either: the state as the twin's forward left it (a training
  // forward counts a batch in num_batches_tracked, whatever the momentum)
  for (const auto& [name, t] : back->stateDict()) {
    CHECK(t.is_cpu());
    CHECK(tensor::max_abs_diff(t, gpu_state.at(name).cpu()) == 0);
  }
  // already on the GPU: converting a cudnn module to cudnn again keeps the very storage
  nn::ModulePtr again = nn::convert(nn::convert(back, cudnn::backend), cudnn::backend);
  const auto s1 = again->stateDict();
  nn::ModulePtr same = nn::convert(again, cudnn::backend);
  for (const auto& [name, t] : same->stateDict()) CHECK(t.shares_storage(s1.at(name)));
}

void expect_criterion_convert_roundtrip(nn::CriterionPtr criterion, const Tensor& input, const Tensor& target) {
  INFO("convert round trip of ", criterion->str());
  const std::string nn_name = criterion->type_name();
  criterion->to(DType::Float32);
  const Tensor x = input.to(DType::Float32);
  const Tensor t = tensor::is_floating(target.dtype()) ? target.to(DType::Float32) : target;
  const double loss = criterion->forward(x, t);
  const Tensor grad = criterion->backward(x, t).clone();
  const auto state_before = criterion->stateDict();

  nn::CriterionPtr cu = nn::convert(criterion, cudnn::backend);
  CHECK(cu->type_name() == "cudnn" + nn_name.substr(2));
  for (const auto& [name, s] : cu->stateDict()) CHECK(s.is_cuda());
  CHECK(cu->forward(x.to(gpu), t.to(gpu)) == doctest::Approx(loss).epsilon(1e-5));
  const Tensor grad_cu = cu->backward(x.to(gpu), t.to(gpu));
  CHECK(grad_cu.is_cuda());
  CHECK(tensor::max_rel_error(grad_cu, grad) < 1e-5);
  CHECK(nn::convert(cu, cudnn::backend) == cu);  // already there: the same object

  nn::CriterionPtr back = nn::convert(cu, nn::backend);
  CHECK(back->type_name() == nn_name);
  for (const auto& [name, s] : back->stateDict()) {
    CHECK(s.is_cpu());
    CHECK(tensor::max_abs_diff(s, state_before.at(name)) == 0);
  }
  CHECK(back->forward(x, t) == loss);
}

}  // namespace testing
