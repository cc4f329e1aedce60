// test_Normalize.cpp: nn.Normalize (Torch's): closed forms for p = 1, 2, 3, 1.5 and inf, the
// [D] and [N x D] forms, finite-difference gradients (Torch's gradient is the exact one for
// finite p; for p = inf it is x_j / norm in place of sgn(x_j), exact up to eps), PyTorch
// float64 values (F.normalize, whose norm clamps at eps: equal away from 0), NaN and Inf,
// printing, config (p = inf included) and state round trips, errors.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "nn/Normalize.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;

TEST_CASE("Normalize: closed forms for p = 1, 2, 3, 1.5 and inf") {
  const Tensor x = from_vector<double>({3, -4, 0, 1, 2, -2}, {2, 3});
  auto run = [&](double p) {
    nn::Normalize m(p, 0);
    m.to(DType::Float64);
    return m.forward(x);
  };
  expect_values("p = 2", run(2), {0.6, -0.8, 0, 1. / 3, 2. / 3, -2. / 3}, 1e-15);
  expect_values("p = 1", run(1), {3. / 7, -4. / 7, 0, 0.2, 0.4, -0.4}, 1e-15);
  const double n3a = std::cbrt(27 + 64.0), n3b = std::cbrt(17.0);
  expect_values("p = 3", run(3), {3 / n3a, -4 / n3a, 0, 1 / n3b, 2 / n3b, -2 / n3b}, 1e-14);
  const double n15 = std::pow(std::pow(3, 1.5) + std::pow(4, 1.5), 1 / 1.5);
  expect_values("p = 1.5", run(1.5).narrow(0, 0, 1), {3 / n15, -4 / n15, 0}, 1e-14);
  expect_values("p = inf", run(kInf), {0.75, -1, 0, 0.5, 1, -1}, 1e-15);
  // [D]: the same as one row; eps enters Torch's way: (sum |x|^p + eps)^(1/p)
  nn::Normalize v(2, 0.5);
  v.to(DType::Float64);
  expect_values("[D], eps 0.5", v.forward(from_vector<double>({3, 4}, {2})), {3 / std::sqrt(25.5), 4 / std::sqrt(25.5)},
                1e-15);
  nn::Normalize vi(kInf, 0.5);
  vi.to(DType::Float64);
  expect_values("[D], inf, eps 0.5", vi.forward(from_vector<double>({3, -4}, {2})), {3 / 4.5, -4 / 4.5}, 1e-15);
}

TEST_CASE("Normalize: PyTorch float64 values (F.normalize, away from the eps clamp)") {
  // torch.nn.functional.normalize(x, p, dim=-1) for x = [[0.5, -1.25, 2], [-0.3, 0.7, 0.1]]
  const Tensor x = from_vector<double>({0.5, -1.25, 2, -0.3, 0.7, 0.1}, {2, 3});
  nn::Normalize m2(2, 0), m3(3, 0);
  m2.to(DType::Float64);
  m3.to(DType::Float64);
  expect_values("p = 2", m2.forward(x),
                {0.20739033894608505, -0.5184758473652127, 0.8295613557843402, -0.3905667329424716, 0.911322376865767,
                 0.13018891098082386},
                1e-14);
  expect_values("p = 3", m3.forward(x),
                {0.23147819691004087, -0.5786954922751022, 0.9259127876401635, -0.41750654192424136, 0.9741819311565632,
                 0.13916884730808046},
                1e-14);
}

TEST_CASE("Normalize: finite-difference gradients, batch and vector, every p") {
  Generator gen(601);
  INFO("size seed 601");
  for (double p : {1.0, 2.0, 3.0, 4.0, 1.5, 2.5}) {
    for (int trial = 0; trial < 2; ++trial) {
      INFO("p = ", p);
      nn::Normalize m(p, 1e-10);
      m.to(DType::Float64);
      // away from 0, where |x|^p has a kink for p <= 1
      Tensor x = uniform({random_size(gen, 1, 4), random_size(gen, 2, 6)}, 0.2, 2, gen, DType::Float64);
      x.mul_(uniform(x.sizes(), -1, 1, gen, DType::Float64).sign());
      expect_gradients_ok(m, x);
      expect_gradients_ok(m, x.select(0, 0).contiguous());
    }
  }
  // p = inf: Torch's gradient uses x_j / norm for sgn(x_j): exact when eps = 0
  nn::Normalize mi(kInf, 0);
  mi.to(DType::Float64);
  expect_gradients_ok(mi, from_vector<double>({0.5, -2, 1, 1.5, 0.25, -0.75}, {2, 3}));
}

TEST_CASE("Normalize: p = inf gradient is Torch's, the argmax the first one") {
  nn::Normalize m(kInf, 0);
  m.to(DType::Float64);
  // ties at |x| = 2: index 1 is the argmax
  const Tensor x = from_vector<double>({1, -2, 2}, {3});
  m.forward(x);
  const Tensor g = from_vector<double>({1, 1, 1}, {3});
  // cross = 1 - 2 + 2 = 1; norm 2: (2 dy - [j = 1] (-2 / 2) 1) / 4
  expect_values("gradInput", m.backward(x, g), {0.5, 0.75, 0.5}, 1e-15);
}

TEST_CASE("Normalize: NaN and Inf") {
  for (DType dt : {DType::Float64, DType::Float32}) {
    INFO(std::string(name(dt)));
    for (double p : {2.0, 1.5, kInf}) {
      INFO("p = ", p);
      nn::Normalize m(p);
      m.to(dt);
      const Tensor x = from_vector<double>({1, kNaN, 2, 3, kInf, 4}, {2, 3}).to(dt);
      // a NaN row is NaN; an Inf row is NaN at the Inf (Inf / Inf) and 0 elsewhere
      expect_values("output", m.forward(x), {kNaN, kNaN, kNaN, 0, kNaN, 0}, 0);
      const Tensor gi = m.backward(x, ones({2, 3}, dt));
      expect_values("gradInput row 0", gi.select(0, 0).contiguous(), {kNaN, kNaN, kNaN}, 0);
    }
    nn::Normalize z(2);
    z.to(dt);
    // a zero row: 0 / sqrt(eps) = 0
    expect_values("zero row", z.forward(zeros({3}, dt)), {0, 0, 0}, 0);
  }
}

TEST_CASE("Normalize: printing, config and state round trips, empty batch, errors") {
  CHECK(nn::Normalize().str() == "nn.Normalize(2)");
  CHECK(nn::Normalize(1).str() == "nn.Normalize(1)");
  CHECK(nn::Normalize(1.5).str() == "nn.Normalize(1.500000)");
  CHECK(nn::Normalize(kInf).str() == "nn.Normalize(inf)");
  expect_prints_type(*std::make_shared<nn::Normalize>(3));
  for (double p : {2.0, 1.5, kInf}) {
    auto back = std::dynamic_pointer_cast<nn::Normalize>(nn::Normalize::fromConfig(nn::Normalize(p, 1e-6).config()));
    REQUIRE(back);
    CHECK(back->p == p);
    CHECK(back->eps == 1e-6);
  }
  CHECK(nn::Normalize(kInf).config().dump() == tensor::Json(tensor::Json::Object{{"p", "inf"}, {"eps", 1e-10}}).dump());
  CHECK_THROWS_WITH_AS(nn::Normalize::fromConfig(tensor::Json::Object{{"p", "two"}}), doctest::Contains("\"two\""),
                       Error);
  Generator gen(602);
  nn::Normalize a(3), b(3);
  expect_state_roundtrip_ok(a, b, uniform({2, 5}, -1, 1, gen));
  CHECK(a.forward(zeros({0, 5})).sizes() == Shape{0, 5});
  CHECK(a.backward(zeros({0, 5}), zeros({0, 5})).sizes() == Shape{0, 5});
  CHECK_THROWS_WITH_AS(nn::Normalize(0),
                       "nn.Normalize: expected p > 0 (inf allowed) and a finite eps >= 0, got p = 0, "
                       "eps = 1e-10",
                       Error);
  CHECK_THROWS_WITH_AS(nn::Normalize(2, -1), doctest::Contains("eps = -1"), Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({2, 3, 4})),
                       "nn.Normalize::updateOutput: expected a [N x D] or [D] input, got float32 [2 x 3 x 4] on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({3}, DType::Int64)),
                       "nn.Normalize::updateOutput: expected float32 or float64 input, got int64 [3] on cpu", Error);
  a.forward(zeros({2, 3}));
  CHECK_THROWS_WITH_AS(a.backward(zeros({2, 3}), zeros({3, 2})),
                       doctest::Contains("nn.Normalize::updateGradInput: expected gradOutput of the input's shape"),
                       Error);
}
