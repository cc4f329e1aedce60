// test_PointwiseFamily.cpp: the activation twins (cudnn.ReLU, ClippedReLU, ELU, Sigmoid, Tanh, GELU,
// SiLU, LeakyReLU, and the staples Abs, Square, Sqrt, Exp, Log, Power, MulConstant, AddConstant) against
// their nn modules, as one table: each row builds one configuration on both sides and names the
// input range that reaches its interesting parts; every row goes through the same checks
// (tests/support/PointwiseTwinChecks.h): float32 with TF32 off, float64, float16, bfloat16, 1-D
// to 5-D inputs and a non-contiguous one, in place and not, real storage sharing in place, the
// convert round trip and errors, no steady-state allocation, NaN and +-Inf. A new activation is
// one row; the types' own cases follow the table.
#include <doctest/doctest.h>

#include <limits>
#include <type_traits>

#include "cudnn/Abs.h"
#include "cudnn/AddConstant.h"
#include "cudnn/ClippedReLU.h"
#include "cudnn/ELU.h"
#include "cudnn/Exp.h"
#include "cudnn/GELU.h"
#include "cudnn/LeakyReLU.h"
#include "cudnn/Log.h"
#include "cudnn/MulConstant.h"
#include "cudnn/Power.h"
#include "cudnn/ReLU.h"
#include "cudnn/SiLU.h"
#include "cudnn/Sigmoid.h"
#include "cudnn/Sqrt.h"
#include "cudnn/Square.h"
#include "cudnn/Tanh.h"
#include "cudnn/core/Config.h"
#include "nn/Abs.h"
#include "nn/AddConstant.h"
#include "nn/ClippedReLU.h"
#include "nn/ELU.h"
#include "nn/Exp.h"
#include "nn/GELU.h"
#include "nn/LeakyReLU.h"
#include "nn/Log.h"
#include "nn/MulConstant.h"
#include "nn/Power.h"
#include "nn/ReLU.h"
#include "nn/SiLU.h"
#include "nn/Sigmoid.h"
#include "nn/Sqrt.h"
#include "nn/Square.h"
#include "nn/Tanh.h"
#include "tests/support/PointwiseTwinChecks.h"
#include "tests/support/SteadyState.h"

using namespace tensor;
using namespace testing;

namespace {

// Factories for one side, in place or not: M(args..., inplace), or M() with the public
// `inplace` field for the types that take no arguments (as nn.Pointwise allows).
template <class M, class... A>
PointwiseFactory make(A... args) {
  return [=](bool ip) -> nn::ModulePtr {
    if constexpr (sizeof...(A) == 0 && !std::is_constructible_v<M, bool>) {
      auto m = std::make_shared<M>();
      m->inplace = ip;
      return m;
    } else {
      return std::make_shared<M>(args..., ip);
    }
  };
}

// A type without an in-place variant: M(args...), and nullptr for in place (the checks skip it).
template <class M, class... A>
PointwiseFactory not_in_place(A... args) {
  return [=](bool ip) -> nn::ModulePtr { return ip ? nullptr : std::make_shared<M>(args...); };
}

struct Activation {
  const char* name;  // the configuration, for messages
  PointwiseFactory nn, cu;
  double lo, hi;  // inputs uniform in [lo, hi]: past the ceilings and into the saturations
};

const std::vector<Activation>& activations() {
  static const std::vector<Activation> rows = {
      {"ReLU", make<nn::ReLU>(), make<cudnn::ReLU>(), -2, 2},
      // ceilings 1 and 6 (relu6); inputs reach past them so that clipped entries are checked
      {"ClippedReLU(1)", make<nn::ClippedReLU>(1.0), make<cudnn::ClippedReLU>(1.0), -2, 7},
      {"ClippedReLU(6)", make<nn::ClippedReLU>(6.0), make<cudnn::ClippedReLU>(6.0), -2, 7},
      // alpha 1 (the default) and 0.3
      {"ELU(1)", make<nn::ELU>(1.0), make<cudnn::ELU>(1.0), -3, 1.5},
      {"ELU(0.3)", make<nn::ELU>(0.3), make<cudnn::ELU>(0.3), -3, 1.5},
      {"Sigmoid", make<nn::Sigmoid>(), make<cudnn::Sigmoid>(), -4, 4},
      {"Tanh", make<nn::Tanh>(), make<cudnn::Tanh>(), -3, 3},
      // our kernels (cudnn/kernels/Activation.h): erf and tanh GELU, SiLU, LeakyReLU in place with
      // PyTorch's slope and a larger one, and not in place with a negative slope
      {"GELU", not_in_place<nn::GELU>(), not_in_place<cudnn::GELU>(), -4, 4},
      {"GELU(tanh)", not_in_place<nn::GELU>(std::string("tanh")), not_in_place<cudnn::GELU>(std::string("tanh")), -4,
       4},
      {"SiLU", not_in_place<nn::SiLU>(), not_in_place<cudnn::SiLU>(), -6, 6},
      {"LeakyReLU(0.01)", make<nn::LeakyReLU>(0.01), make<cudnn::LeakyReLU>(0.01), -2, 2},
      {"LeakyReLU(0.3)", make<nn::LeakyReLU>(0.3), make<cudnn::LeakyReLU>(0.3), -2, 2},
      {"LeakyReLU(-0.2)", not_in_place<nn::LeakyReLU>(-0.2), not_in_place<cudnn::LeakyReLU>(-0.2), -2, 2},
      // the staples, on our kernels (Note [Element-wise staples]): Log, Sqrt and the fractional power over
      // positive inputs (negative ones are NaN on both sides: the NaN check covers them); Sqrt and Exp in
      // place through the public field, their gradients from the output; MulConstant and AddConstant in place
      {"Abs", not_in_place<nn::Abs>(), not_in_place<cudnn::Abs>(), -2, 2},
      {"Square", not_in_place<nn::Square>(), not_in_place<cudnn::Square>(), -2, 2},
      {"Sqrt", make<nn::Sqrt>(), make<cudnn::Sqrt>(), 0.1, 3},
      {"Exp", make<nn::Exp>(), make<cudnn::Exp>(), -3, 3},
      {"Log", not_in_place<nn::Log>(), not_in_place<cudnn::Log>(), 0.1, 3},
      {"Power(3)", not_in_place<nn::Power>(3.0), not_in_place<cudnn::Power>(3.0), -2, 2},
      {"Power(2.5)", not_in_place<nn::Power>(2.5), not_in_place<cudnn::Power>(2.5), 0.1, 3},
      {"Power(-1)", not_in_place<nn::Power>(-1.0), not_in_place<cudnn::Power>(-1.0), 0.5, 3},
      {"MulConstant(-1.5)", make<nn::MulConstant>(-1.5), make<cudnn::MulConstant>(-1.5), -2, 2},
      {"AddConstant(0.75)", make<nn::AddConstant>(0.75), make<cudnn::AddConstant>(0.75), -2, 2},
  };
  return rows;
}

}  // namespace

TEST_CASE("activation twins match nn in float32 (TF32 off) and float64, 1-D to 5-D, in place and not") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (const Activation& a : activations()) {
    INFO(a.name);
    expect_pointwise_twin_matches(a.nn, a.cu, DType::Float32, false, a.lo, a.hi);
    expect_pointwise_twin_matches(a.nn, a.cu, DType::Float64, false, a.lo, a.hi);
  }
}

TEST_CASE("activation twins match nn in float16 and bfloat16, in place and not") {
  for (const Activation& a : activations()) {
    INFO(a.name);
    expect_pointwise_twin_matches(a.nn, a.cu, DType::Float16, false, a.lo, a.hi);
    expect_pointwise_twin_matches(a.nn, a.cu, DType::BFloat16, false, a.lo, a.hi);
  }
}

TEST_CASE("activation twins match nn with a non-contiguous input, in place and not") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (const Activation& a : activations()) {
    INFO(a.name);
    expect_pointwise_twin_matches(a.nn, a.cu, DType::Float32, true, a.lo, a.hi);
  }
}

TEST_CASE("activation twins in place share the input's and gradOutput's storage, with nn's values") {
  for (const Activation& a : activations()) {
    INFO(a.name);
    expect_pointwise_in_place(a.nn, a.cu, a.lo, a.hi);
  }
}

TEST_CASE("activation twins: convert round trip, printing and errors") {
  for (const Activation& a : activations()) {
    INFO(a.name);
    expect_pointwise_convert_and_errors(a.nn, a.cu, a.lo, a.hi);
  }
}

TEST_CASE("activation twins steady state: no device allocation after a warm-up") {
  const Device gpu = Device::cuda(0);
  Generator gen(47);
  for (const Activation& a : activations()) {
    for (bool inplace : {false, true}) {
      INFO(a.name, std::string(inplace ? ", in place" : ""));
      nn::ModulePtr m = a.cu(inplace);
      if (!m) continue;
      m->to(gpu);
      expect_no_steady_state_allocations(*m, uniform({4, 5, 6}, -2, 2, gen).to(gpu));
    }
  }
}

TEST_CASE("activation twins: NaN and +-Inf inputs give nn's values (Note [NaN and Inf])") {
  for (const Activation& a : activations()) {
    INFO(a.name);
    expect_pointwise_nonfinite_matches(a.nn, a.cu);
  }
}

// ---- the types' own cases ----

TEST_CASE("cudnn.ReLU, Sigmoid and Tanh print as their type") {
  CHECK(cudnn::ReLU().str() == "cudnn.ReLU");
  CHECK(cudnn::ReLU(true).str() == "cudnn.ReLU");
  CHECK(cudnn::Sigmoid().str() == "cudnn.Sigmoid");
  CHECK(cudnn::Tanh().str() == "cudnn.Tanh");
}

TEST_CASE("cudnn.ClippedReLU prints, keeps its ceiling and refuses a non-positive one") {
  CHECK(cudnn::ClippedReLU(6).str() == "cudnn.ClippedReLU");
  CHECK(cudnn::ClippedReLU(6, true).ceiling == 6);
  CHECK_THROWS_WITH_AS(cudnn::ClippedReLU(0), "nn.ClippedReLU: expected a positive finite ceiling, got 0", Error);
}

// In place cuDNN would see y for x, and clipped entries (y = ceiling) would pass the
// gradient: the in-place gradient comes from y (Note [In-place activation gradients]).
TEST_CASE("cudnn.ClippedReLU in place: no gradient through clipped entries, in every dtype") {
  const Device gpu = Device::cuda(0);
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    INFO(std::string(name(dt)));
    cudnn::ClippedReLU m(1.0, true);
    m.to(gpu);
    m.to(dt);
    Tensor x = from_vector<double>({-1, 0.5, 1, 1.5, 3, 0.25}, {6}).to(gpu, dt);
    m.forward(x);
    CHECK(x.to_vector<double>() == std::vector<double>{0, 0.5, 1, 1, 1, 0.25});
    Tensor g = from_vector<double>({1, 2, 3, 4, 5, 6}, {6}).to(gpu, dt);
    const Tensor gi = m.backward(x, g);
    CHECK(gi.is_same_view(g));
    // nn takes the kink at y = ceiling as clipped (gradient 0), as here
    CHECK(g.to_vector<double>() == std::vector<double>{0, 2, 0, 0, 0, 6});
  }
}

TEST_CASE("cudnn.ELU prints and keeps its alpha") {
  CHECK(cudnn::ELU().str() == "cudnn.ELU (alpha:1.000000)");
  CHECK(cudnn::ELU(0.5, true).str() == "cudnn.ELU (alpha:0.500000)");
  CHECK(cudnn::ELU(0.5, true).alpha == 0.5);
}

TEST_CASE("cudnn.GELU, SiLU and LeakyReLU print as nn's, and GELU and SiLU refuse inplace as nn does") {
  CHECK(cudnn::GELU().str() == "cudnn.GELU");
  CHECK(cudnn::GELU("tanh").str() == "cudnn.GELU(approximate='tanh')");
  CHECK(cudnn::SiLU().str() == "cudnn.SiLU");
  CHECK(cudnn::LeakyReLU(0.2, true).str() == "cudnn.LeakyReLU(0.2, inplace)");
  const Device gpu = Device::cuda(0);
  for (const nn::ModulePtr& m :
       {nn::ModulePtr(std::make_shared<cudnn::GELU>()), nn::ModulePtr(std::make_shared<cudnn::SiLU>())}) {
    as_pointwise(m).inplace = true;
    m->to(gpu);
    CHECK_THROWS_WITH_AS(m->forward(zeros({2, 3}, DType::Float32, gpu)),
                         (m->type_name() + "::updateOutput: expected inplace = false (the backward pass reads the "
                                           "input), got true")
                             .c_str(),
                         Error);
  }
}

// LeakyReLU is one product per element each way: every dtype gives nn's bits on nn's own
// dtype, and in 16 bits the float32 result rounded once.
TEST_CASE("cudnn.LeakyReLU gives nn's bits in float32 and float64, forward and backward, in place or not") {
  const Device gpu = Device::cuda(0);
  Generator gen(48);
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (double slope : {0.01, 0.3, -0.2}) {
      for (bool inplace : {false, true}) {
        if (inplace && slope < 0) continue;
        INFO(std::string(name(dt)), " slope ", slope, inplace ? " in place" : "");
        nn::LeakyReLU ref(slope, inplace);
        cudnn::LeakyReLU twin(slope, inplace);
        ref.to(dt);
        twin.to(gpu);
        twin.to(dt);
        const Tensor x = uniform({5, 7}, -2, 2, gen, dt), g = uniform({5, 7}, -1, 1, gen, dt);
        const Tensor xg = x.to(gpu);
        const Tensor y = ref.forward(x.clone()).clone();
        CHECK(max_abs_diff(twin.forward(xg).cpu(), y) == 0);
        const Tensor gi = ref.backward(x.clone(), g.clone()).clone();
        CHECK(max_abs_diff(twin.backward(xg, g.to(gpu)).cpu(), gi) == 0);
      }
    }
  }
}

// The staples at the points where Torch and PyTorch differ, and their non-finite values,
// element by element on the GPU in float32 and float64 (Note [Element-wise staples]).
TEST_CASE("cudnn staples: PyTorch's values at 0, NaN and +-Inf, forward and backward") {
  const Device gpu = Device::cuda(0);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<double> xs{nan, 0.0, -0.0, inf, -inf, -1, 2};
  std::vector<std::pair<nn::ModulePtr, nn::ModulePtr>> pairs = {
      {std::make_shared<nn::Abs>(), std::make_shared<cudnn::Abs>()},
      {std::make_shared<nn::Square>(), std::make_shared<cudnn::Square>()},
      {std::make_shared<nn::Sqrt>(), std::make_shared<cudnn::Sqrt>()},
      {std::make_shared<nn::Exp>(), std::make_shared<cudnn::Exp>()},
      {std::make_shared<nn::Log>(), std::make_shared<cudnn::Log>()},
      {std::make_shared<nn::Power>(0.0), std::make_shared<cudnn::Power>(0.0)},
      {std::make_shared<nn::Power>(2.5), std::make_shared<cudnn::Power>(2.5)},
      {std::make_shared<nn::Power>(-1.0), std::make_shared<cudnn::Power>(-1.0)},
      {std::make_shared<nn::MulConstant>(2.0), std::make_shared<cudnn::MulConstant>(2.0)},
      {std::make_shared<nn::AddConstant>(1.0), std::make_shared<cudnn::AddConstant>(1.0)},
  };
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (auto& [ref, twin] : pairs) {
      INFO(twin->type_name(), " ", std::string(name(dt)));
      ref->to(dt);
      twin->to(gpu);
      twin->to(dt);
      const Tensor x = from_vector<double>(xs, {7}).to(dt);
      const Tensor g = from_vector<double>({1, 1, 1, 1, 1, nan, 1}, {7}).to(dt);
      expect_same_nonfinite("output", twin->forward(x.to(gpu)).cpu(), ref->forward(x), 1e-6);
      expect_same_nonfinite("gradInput", twin->backward(x.to(gpu), g.to(gpu)).cpu(), ref->backward(x, g), 1e-6);
    }
  }
}

TEST_CASE("cudnn staples print as nn's and keep their coefficients") {
  CHECK(cudnn::Abs().str() == "cudnn.Abs");
  CHECK(cudnn::Power(2.5).pow == 2.5);
  CHECK(cudnn::Power(2.5).str() == "cudnn.Power");
  CHECK(cudnn::MulConstant(3.0, true).inplace);
  CHECK(cudnn::AddConstant(-1.0).constant == -1);
}
