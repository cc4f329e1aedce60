// test_PointwiseStaples.cpp: Abs, Square, Sqrt, Exp, Log, Power, MulConstant, AddConstant (on
// nn::PointwiseBase) and PReLU: closed forms, finite-difference gradients over several shapes
// and configurations, NaN and Inf (Note [NaN and Inf], Note [Element-wise staples]), in place
// where the type has it, printing, config and state round trips, empty inputs and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <memory>

#include "nn/Abs.h"
#include "nn/AddConstant.h"
#include "nn/Exp.h"
#include "nn/Log.h"
#include "nn/MulConstant.h"
#include "nn/PReLU.h"
#include "nn/Power.h"
#include "nn/Sqrt.h"
#include "nn/Square.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;

namespace {

struct Staple {
  const char* name;
  std::function<nn::ModulePtr()> make;
  double lo, hi;  // where the gradient check draws (away from a kink or a pole)
  std::function<double(double)> f, df;
};

const std::vector<Staple>& staples() {
  static const std::vector<Staple> rows = {
      {"Abs", [] { return nn::ModulePtr(std::make_shared<nn::Abs>()); }, -2, 2, [](double v) { return std::abs(v); },
       [](double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0); }},
      {"Square", [] { return nn::ModulePtr(std::make_shared<nn::Square>()); }, -2, 2, [](double v) { return v * v; },
       [](double v) { return 2 * v; }},
      {"Sqrt", [] { return nn::ModulePtr(std::make_shared<nn::Sqrt>()); }, 0.2, 3,
       [](double v) { return std::sqrt(v); }, [](double v) { return 0.5 / std::sqrt(v); }},
      {"Exp", [] { return nn::ModulePtr(std::make_shared<nn::Exp>()); }, -2, 2, [](double v) { return std::exp(v); },
       [](double v) { return std::exp(v); }},
      {"Log", [] { return nn::ModulePtr(std::make_shared<nn::Log>()); }, 0.2, 3, [](double v) { return std::log(v); },
       [](double v) { return 1 / v; }},
      {"Power(3)", [] { return nn::ModulePtr(std::make_shared<nn::Power>(3)); }, -2, 2,
       [](double v) { return v * v * v; }, [](double v) { return 3 * v * v; }},
      {"Power(2.5)", [] { return nn::ModulePtr(std::make_shared<nn::Power>(2.5)); }, 0.2, 3,
       [](double v) { return std::pow(v, 2.5); }, [](double v) { return 2.5 * std::pow(v, 1.5); }},
      {"Power(-1)", [] { return nn::ModulePtr(std::make_shared<nn::Power>(-1)); }, 0.3, 3,
       [](double v) { return 1 / v; }, [](double v) { return -1 / (v * v); }},
      {"MulConstant(-1.5)", [] { return nn::ModulePtr(std::make_shared<nn::MulConstant>(-1.5)); }, -2, 2,
       [](double v) { return -1.5 * v; }, [](double) { return -1.5; }},
      {"AddConstant(0.75)", [] { return nn::ModulePtr(std::make_shared<nn::AddConstant>(0.75)); }, -2, 2,
       [](double v) { return v + 0.75; }, [](double) { return 1.0; }},
  };
  return rows;
}

}  // namespace

TEST_CASE("element-wise staples: closed forms forward and backward, float32 and float64") {
  Generator gen(401);
  for (const Staple& s : staples()) {
    for (DType dt : {DType::Float64, DType::Float32}) {
      INFO(s.name, " ", std::string(name(dt)));
      nn::ModulePtr m = s.make();
      m->to(dt);
      const Tensor x = uniform({3, 4}, s.lo, s.hi, gen, DType::Float64);
      const Tensor g = uniform({3, 4}, -1, 1, gen, DType::Float64);
      const std::vector<double> xv = x.to_vector<double>(), gv = g.to_vector<double>();
      std::vector<double> y, dx;
      for (size_t i = 0; i < xv.size(); ++i) {
        y.push_back(s.f(xv[i]));
        dx.push_back(gv[i] * s.df(xv[i]));
      }
      const double tol = dt == DType::Float64 ? 1e-12 : 2e-5;
      expect_values("output", m->forward(x.to(dt)).to(DType::Float64), y, tol * 10);
      expect_values("gradInput", m->backward(x.to(dt), g.to(dt)).to(DType::Float64), dx, tol * 10);
    }
  }
}

TEST_CASE("element-wise staples: finite-difference gradients over several shapes") {
  Generator gen(402);
  INFO("size seed 402");
  for (const Staple& s : staples()) {
    INFO(s.name);
    for (int trial = 0; trial < 2; ++trial) {
      nn::ModulePtr m = s.make();
      m->to(DType::Float64);
      expect_gradients_ok(*m,
                          uniform({random_size(gen, 1, 4), random_size(gen, 1, 5)}, s.lo, s.hi, gen, DType::Float64));
      expect_gradients_ok(
          *m, uniform({random_size(gen, 1, 3), 2, random_size(gen, 1, 3), 2}, s.lo, s.hi, gen, DType::Float64));
      expect_gradients_ok(*m, uniform({random_size(gen, 1, 9)}, s.lo, s.hi, gen, DType::Float64));
    }
  }
}

TEST_CASE("element-wise staples: NaN and Inf as PyTorch's float64 (Note [Element-wise staples])") {
  // inputs NaN, +0, -0, +Inf, -Inf, -1, 2; gradOutput ones. PyTorch 2.x float64 values.
  const std::vector<double> xs{kNaN, 0.0, -0.0, kInf, -kInf, -1, 2};
  struct Case {
    std::function<nn::ModulePtr()> make;
    std::vector<double> y, dx;
  };
  const std::vector<Case> cases = {
      {[] { return nn::ModulePtr(std::make_shared<nn::Abs>()); },
       {kNaN, 0, 0, kInf, kInf, 1, 2},
       {0, 0, 0, 1, -1, -1, 1}},
      {[] { return nn::ModulePtr(std::make_shared<nn::Square>()); },
       {kNaN, 0, 0, kInf, kInf, 1, 4},
       {kNaN, 0, -0.0, kInf, -kInf, -2, 4}},
      {[] { return nn::ModulePtr(std::make_shared<nn::Sqrt>()); },
       {kNaN, 0, -0.0, kInf, kNaN, kNaN, std::sqrt(2.0)},
       {kNaN, kInf, -kInf, 0, kNaN, kNaN, 0.5 / std::sqrt(2.0)}},
      {[] { return nn::ModulePtr(std::make_shared<nn::Exp>()); },
       {kNaN, 1, 1, kInf, 0, std::exp(-1.0), std::exp(2.0)},
       {kNaN, 1, 1, kInf, 0, std::exp(-1.0), std::exp(2.0)}},
      {[] { return nn::ModulePtr(std::make_shared<nn::Log>()); },
       {kNaN, -kInf, -kInf, kInf, kNaN, kNaN, std::log(2.0)},
       {kNaN, kInf, -kInf, 0, -0.0, -1, 0.5}},
      {[] { return nn::ModulePtr(std::make_shared<nn::Power>(0)); }, {1, 1, 1, 1, 1, 1, 1}, {0, 0, 0, 0, 0, 0, 0}},
      {[] { return nn::ModulePtr(std::make_shared<nn::Power>(2.5)); },
       {kNaN, 0, 0, kInf, kInf, kNaN, std::pow(2.0, 2.5)},
       {kNaN, 0, 0, kInf, kInf, kNaN, 2.5 * std::pow(2.0, 1.5)}},
      {[] { return nn::ModulePtr(std::make_shared<nn::Power>(-1)); },
       {kNaN, kInf, -kInf, 0, -0.0, -1, 0.5},
       {kNaN, -kInf, -kInf, -0.0, -0.0, -1, -0.25}},
      {[] { return nn::ModulePtr(std::make_shared<nn::MulConstant>(2)); },
       {kNaN, 0, -0.0, kInf, -kInf, -2, 4},
       {2, 2, 2, 2, 2, 2, 2}},
      {[] { return nn::ModulePtr(std::make_shared<nn::AddConstant>(1)); },
       {kNaN, 1, 1, kInf, -kInf, 0, 3},
       {1, 1, 1, 1, 1, 1, 1}},
  };
  for (DType dt : {DType::Float64, DType::Float32}) {
    for (const Case& c : cases) {
      nn::ModulePtr m = c.make();
      m->to(dt);
      INFO(m->type_name(), " ", std::string(name(dt)));
      const Tensor x = from_vector<double>(xs, {7}).to(dt);
      expect_values("output", m->forward(x), c.y, 1e-5);
      expect_values("gradInput", m->backward(x, ones({7}, dt)), c.dx, 1e-5);
    }
  }
}

TEST_CASE("element-wise staples: Abs's gradient at 0 is 0 and a NaN gradOutput stays NaN") {
  nn::Abs m;
  m.to(DType::Float64);
  const Tensor x = from_vector<double>({0, 0, 1}, {3});
  m.forward(x);
  expect_values("gradInput", m.backward(x, from_vector<double>({5, kNaN, kNaN}, {3})), {0, kNaN, kNaN}, 0);
}

TEST_CASE("element-wise staples: in place (Sqrt, Exp, MulConstant, AddConstant) and refused in place") {
  for (const Staple& s : staples()) {
    INFO(s.name);
    nn::ModulePtr ref = s.make(), m = s.make();
    auto& pw = dynamic_cast<nn::PointwiseBase&>(*m);
    pw.inplace = true;
    Generator gen(403);
    const Tensor x0 = uniform({2, 5}, std::max(s.lo, 0.3), s.hi, gen);
    Tensor x = x0.clone();
    if (nn::kernels::activation_needs_input(pw.activation(), pw.coef())) {
      CHECK_THROWS_WITH_AS(m->forward(x),
                           (m->type_name() + "::updateOutput: expected inplace = false (the backward pass reads "
                                             "the input), got true")
                               .c_str(),
                           Error);
      continue;
    }
    const Tensor want = ref->forward(x0).clone();
    CHECK(m->forward(x).is_same_view(x));
    CHECK(max_abs_diff(x, want) < 1e-6);
    const Tensor g0 = uniform({2, 5}, -1, 1, gen);
    const Tensor gwant = ref->backward(x0, g0).clone();
    Tensor g = g0.clone();
    CHECK(m->backward(x, g).shares_storage(g));
    CHECK(max_abs_diff(g, gwant) < 1e-5);
  }
}

TEST_CASE("element-wise staples: printing, config and state round trips, empty inputs, errors") {
  CHECK(nn::Abs().str() == "nn.Abs");
  CHECK(nn::Square().str() == "nn.Square");
  CHECK(nn::Sqrt().str() == "nn.Sqrt");
  CHECK(nn::Exp().str() == "nn.Exp");
  CHECK(nn::Log().str() == "nn.Log");
  CHECK(nn::Power(2).str() == "nn.Power");
  CHECK(nn::MulConstant(3, true).str() == "nn.MulConstant");
  CHECK(nn::AddConstant(-1).str() == "nn.AddConstant");
  CHECK(nn::Power(2.5).config().dump() == tensor::Json(tensor::Json::Object{{"pow", 2.5}, {"inplace", false}}).dump());
  CHECK(nn::MulConstant(3, true).config().dump() ==
        tensor::Json(tensor::Json::Object{{"constant", 3.0}, {"inplace", true}}).dump());
  {
    auto back =
        std::dynamic_pointer_cast<nn::MulConstant>(nn::MulConstant::fromConfig(nn::MulConstant(3, true).config()));
    REQUIRE(back);
    CHECK(back->constant == 3);
    CHECK(back->inplace);
    auto p = std::dynamic_pointer_cast<nn::Power>(nn::Power::fromConfig(nn::Power(-0.5).config()));
    REQUIRE(p);
    CHECK(p->pow == -0.5);
    auto a = std::dynamic_pointer_cast<nn::AddConstant>(nn::AddConstant::fromConfig(nn::AddConstant(7).config()));
    REQUIRE(a);
    CHECK(a->constant == 7);
  }
  CHECK_THROWS_WITH_AS(nn::Power{kInf}, "nn.Power: expected a finite pow, got inf", Error);
  CHECK_THROWS_WITH_AS(nn::MulConstant{kNaN}, "nn.MulConstant: expected a finite constant, got nan", Error);
  CHECK_THROWS_WITH_AS(nn::AddConstant::fromConfig(tensor::Json::Object{}), doctest::Contains("constant"), Error);
  Generator gen(404);
  for (const Staple& s : staples()) {
    INFO(s.name);
    nn::ModulePtr a = s.make(), b = s.make();
    expect_state_roundtrip_ok(*a, *b, uniform({2, 3}, s.lo, s.hi, gen));
    expect_prints_type(*a);
    nn::ModulePtr e = s.make();
    CHECK(e->forward(zeros({0, 3})).sizes() == Shape{0, 3});
    CHECK(e->backward(zeros({0, 3}), zeros({0, 3})).sizes() == Shape{0, 3});
    CHECK_THROWS_WITH_AS(
        e->forward(zeros({3}, DType::Int64)),
        (e->type_name() + "::updateOutput: expected float32 or float64 input, got int64 [3] on cpu").c_str(), Error);
  }
}

// ---- PReLU

TEST_CASE("PReLU: closed forms with one shared weight and per channel, batch and vector inputs") {
  nn::PReLU shared;
  CHECK(shared.weight.sizes() == Shape{1});
  CHECK(shared.weight.get({0}) == 0.25);
  shared.to(DType::Float64);
  const Tensor x = from_vector<double>({-2, 3, -4, 0, 1, -1}, {2, 3});
  expect_values("output", shared.forward(x), {-0.5, 3, -1, 0, 1, -0.25}, 0);
  const Tensor g = from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  shared.zeroGradParameters();
  expect_values("gradInput", shared.backward(x, g), {0.25, 2, 0.75, 1, 5, 1.5}, 0);
  // sum of x dy over x <= 0: -2*1 + -4*3 + 0*4 + -1*6
  expect_values("gradWeight", shared.gradWeight, {-20}, 0);

  nn::PReLU per(3);
  per.to(DType::Float64);
  per.weight.copy_(from_vector<double>({0.1, 0.2, 0.3}, {3}));
  // [2 x 3 x 2]: channels are dimension 1
  const Tensor xb = from_vector<double>({-1, 1, -1, -2, 2, -3, -1, -1, 1, 1, -2, 0}, {2, 3, 2});
  expect_values("output", per.forward(xb), {-0.1, 1, -0.2, -0.4, 2, -0.9, -0.1, -0.1, 1, 1, -0.6, 0}, 1e-15);
  per.zeroGradParameters();
  per.backward(xb, ones({2, 3, 2}, DType::Float64), 2.0);
  expect_values("gradWeight", per.gradWeight, {2 * -3.0, 2 * -3.0, 2 * -5.0}, 1e-15);
  // a vector: channels are dimension 0
  const Tensor xv = from_vector<double>({-1, -1, -1}, {3});
  expect_values("output", per.forward(xv), {-0.1, -0.2, -0.3}, 1e-15);
}

TEST_CASE("PReLU: finite-difference gradients (input and weight), shared and per channel") {
  Generator gen(405);
  INFO("size seed 405");
  for (int trial = 0; trial < 3; ++trial) {
    const int64_t c = random_size(gen, 1, 4);
    nn::PReLU per(c), shared;
    per.to(DType::Float64);
    shared.to(DType::Float64);
    per.weight.copy_(uniform({c}, -0.5, 0.8, gen));
    const Tensor x4 = uniform({random_size(gen, 1, 3), c, random_size(gen, 1, 3), 2}, -2, 2, gen, DType::Float64);
    expect_gradients_ok(per, x4);
    expect_gradients_ok(per, uniform({random_size(gen, 1, 4), c}, -2, 2, gen, DType::Float64));
    expect_gradients_ok(per, uniform({c}, -2, 2, gen, DType::Float64));
    expect_gradients_ok(shared, uniform({3, random_size(gen, 1, 5)}, -2, 2, gen, DType::Float64));
    expect_accumulation_ok(per, x4);
  }
}

TEST_CASE("PReLU: NaN and Inf (Note [NaN and Inf])") {
  for (DType dt : {DType::Float64, DType::Float32}) {
    nn::PReLU m;
    m.to(dt);
    const Tensor x = from_vector<double>({kNaN, kInf, -kInf, -2}, {4}).to(dt);
    expect_values("output", m.forward(x), {kNaN, kInf, -kInf, -0.5}, 0);
    m.zeroGradParameters();
    expect_values("gradInput", m.backward(x, ones({4}, dt)), {0.25, 1, 0.25, 0.25}, 0);
    expect_values("gradWeight", m.gradWeight, {kNaN}, 0);
  }
}

TEST_CASE("PReLU: printing, config, state round trip, empty batch and errors") {
  nn::PReLU m(3);
  CHECK(m.str() == "nn.PReLU");
  expect_prints_type(m);
  CHECK(m.config().dump() == tensor::Json(tensor::Json::Object{{"nOutputPlane", int64_t{3}}}).dump());
  auto back = std::dynamic_pointer_cast<nn::PReLU>(nn::PReLU::fromConfig(m.config()));
  REQUIRE(back);
  CHECK(back->nOutputPlane == 3);
  CHECK(back->weight.sizes() == Shape{3});
  CHECK(m.namedParameters().size() == 1);
  CHECK(m.namedParameters()[0].first == "weight");
  Generator gen(406);
  nn::PReLU a(3), b(3);
  a.weight.copy_(uniform({3}, 0, 1, gen));
  expect_state_roundtrip_ok(a, b, uniform({2, 3, 2}, -2, 2, gen));
  CHECK(a.forward(zeros({0, 3, 2})).sizes() == Shape{0, 3, 2});
  CHECK(a.backward(zeros({0, 3, 2}), zeros({0, 3, 2})).sizes() == Shape{0, 3, 2});
  CHECK_THROWS_WITH_AS(nn::PReLU(-1), "nn.PReLU: expected nOutputPlane >= 0 (0: one shared weight), got -1", Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({2, 4})),
                       "nn.PReLU::updateOutput: expected an input with 3 channels in dimension 1 (0 for a vector), "
                       "got float32 [2 x 4] on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({4})), doctest::Contains("got float32 [4]"), Error);
  a.forward(zeros({2, 3}));
  CHECK_THROWS_WITH_AS(a.backward(zeros({2, 3}), zeros({3, 2})),
                       doctest::Contains("nn.PReLU::updateGradInput: expected gradOutput of the input's shape"), Error);
  a.weight = zeros({2});
  CHECK_THROWS_WITH_AS(a.forward(zeros({2, 3})), doctest::Contains("nn.PReLU::updateOutput: expected weight of [3]"),
                       Error);
}
