// test_Reductions.cpp: Sum, Mean, Max and Min over one dimension (nn::ReductionBase): closed
// forms over every dimension of a 3-d input (negative ones too), the dimension dropped (a vector
// gives a 0-d output), finite-difference gradients, first-index ties and NaN propagation
// (PyTorch's max), empty dimensions, printing, config and state round trips, errors.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "nn/Max.h"
#include "nn/Mean.h"
#include "nn/Min.h"
#include "nn/Sum.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;

namespace {

nn::ModulePtr make(const std::string& kind, int64_t dim) {
  if (kind == "Sum") return std::make_shared<nn::Sum>(dim);
  if (kind == "SumAvg") return std::make_shared<nn::Sum>(dim, true);
  if (kind == "Mean") return std::make_shared<nn::Mean>(dim);
  if (kind == "Max") return std::make_shared<nn::Max>(dim);
  return std::make_shared<nn::Min>(dim);
}

// The reduction of x over d by hand, with the (first) index of the extremum.
Tensor reference(const std::string& kind, const Tensor& x, int64_t d) {
  const Tensor xd = x.to(DType::Float64);
  if (kind == "Sum") return xd.sum(d);
  if (kind == "SumAvg" || kind == "Mean") return xd.mean(d);
  return kind == "Max" ? xd.max(d).first : xd.min(d).first;
}

const char* const kKinds[] = {"Sum", "SumAvg", "Mean", "Max", "Min"};

}  // namespace

TEST_CASE("reductions: values over every dimension, negative ones too, the dimension dropped") {
  Generator gen(501);
  const Tensor x = uniform({2, 3, 4}, -2, 2, gen, DType::Float64);
  for (const char* kind : kKinds) {
    for (int64_t d = -3; d < 3; ++d) {
      INFO(kind, " dimension ", d);
      nn::ModulePtr m = make(kind, d);
      m->to(DType::Float64);
      const Tensor y = m->forward(x);
      Shape want = x.sizes();
      want.erase(want.begin() + (d < 0 ? d + 3 : d));
      CHECK(y.sizes() == want);
      CHECK(max_abs_diff(y, reference(kind, x, d)) < 1e-14);
    }
  }
  // by hand: [[1, 5, 2], [7, -1, 7]]
  const Tensor s = from_vector<double>({1, 5, 2, 7, -1, 7}, {2, 3}).to(DType::Float32);
  expect_values("Sum(1)", nn::Sum(1).forward(s), {8, 13}, 0);
  expect_values("Sum(0, true)", nn::Sum(0, true).forward(s), {4, 2, 4.5}, 0);
  expect_values("Mean(-1)", nn::Mean(-1).forward(s), {8.0 / 3, 13.0 / 3}, 1e-6);
  expect_values("Max(1)", nn::Max(1).forward(s), {5, 7}, 0);
  expect_values("Min(0)", nn::Min(0).forward(s), {1, -1, 2}, 0);
  // a vector gives a 0-d output (PyTorch's keepdim = false)
  nn::Max v(0);
  CHECK(v.forward(from_vector<double>({3, 9, 1}, {3}).to(DType::Float32)).dim() == 0);
  CHECK(v.output.item() == 9);
  CHECK(v.backward(from_vector<double>({3, 9, 1}, {3}).to(DType::Float32), full({}, 2.0)).to_vector<double>() ==
        std::vector<double>{0, 2, 0});
}

TEST_CASE("reductions: gradients by hand and by finite differences") {
  const Tensor s = from_vector<double>({1, 5, 2, 7, -1, 7}, {2, 3});
  const Tensor g = from_vector<double>({10, 20}, {2});
  for (const char* kind : kKinds) nn::ModulePtr(make(kind, 1))->to(DType::Float64);
  auto grad = [&](const char* kind) {
    nn::ModulePtr m = make(kind, 1);
    m->to(DType::Float64);
    m->forward(s);
    return m->backward(s, g).to_vector<double>();
  };
  CHECK(grad("Sum") == std::vector<double>{10, 10, 10, 20, 20, 20});
  expect_values("Mean", from_vector<double>(grad("Mean"), {6}), {10. / 3, 10. / 3, 10. / 3, 20. / 3, 20. / 3, 20. / 3},
                1e-14);
  // ties: the first index takes the gradient (7 at 0 and 2 of the second row)
  CHECK(grad("Max") == std::vector<double>{0, 10, 0, 20, 0, 0});
  CHECK(grad("Min") == std::vector<double>{10, 0, 0, 0, 20, 0});

  Generator gen(502);
  INFO("size seed 502");
  for (const char* kind : kKinds) {
    for (int trial = 0; trial < 2; ++trial) {
      const Shape shape{random_size(gen, 1, 3), random_size(gen, 2, 5), random_size(gen, 1, 4)};
      for (int64_t d : {0, 1, 2, -1}) {
        INFO(kind, " dimension ", d, " input ", shape_str(shape));
        nn::ModulePtr m = make(kind, d);
        m->to(DType::Float64);
        // distinct values: no ties, so max and min are differentiable
        expect_gradients_ok(*m, uniform(shape, -3, 3, gen, DType::Float64));
      }
    }
  }
}

TEST_CASE("reductions: NaN propagates (Max and Min take the first NaN and its gradient), Inf sums") {
  // rows: [1, NaN, 3, NaN], [+Inf, -Inf, 2, 2], [-Inf, -Inf, -Inf, -Inf]
  const Tensor x = from_vector<double>({1, kNaN, 3, kNaN, kInf, -kInf, 2, 2, -kInf, -kInf, -kInf, -kInf}, {3, 4});
  const Tensor g = from_vector<double>({1, 2, 3}, {3});
  for (DType dt : {DType::Float64, DType::Float32}) {
    INFO(std::string(name(dt)));
    nn::Sum sum(1);
    sum.to(dt);
    expect_values("Sum", sum.forward(x.to(dt)), {kNaN, kNaN, -kInf}, 0);
    nn::Mean mean(1);
    mean.to(dt);
    expect_values("Mean", mean.forward(x.to(dt)), {kNaN, kNaN, -kInf}, 0);
    nn::Max max(1);
    max.to(dt);
    expect_values("Max", max.forward(x.to(dt)), {kNaN, kInf, -kInf}, 0);
    CHECK(max.indices.to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0});
    expect_values("Max gradInput", max.backward(x.to(dt), g.to(dt)), {0, 1, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}, 0);
    nn::Min min(1);
    min.to(dt);
    expect_values("Min", min.forward(x.to(dt)), {kNaN, -kInf, -kInf}, 0);
    CHECK(min.indices.to_vector<int64_t>() == std::vector<int64_t>{1, 1, 0});
    // a NaN gradOutput goes to the one index only
    expect_values("Min gradInput", min.backward(x.to(dt), from_vector<double>({kNaN, 1, 1}, {3}).to(dt)),
                  {0, kNaN, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0}, 0);
  }
}

TEST_CASE("reductions: empty dimensions and empty batches") {
  // an empty batch: [0 x 3] over 1 gives [0]
  for (const char* kind : kKinds) {
    INFO(kind);
    nn::ModulePtr m = make(kind, 1);
    CHECK(m->forward(zeros({0, 3})).sizes() == Shape{0});
    CHECK(m->backward(zeros({0, 3}), zeros({0})).sizes() == Shape{0, 3});
  }
  // reducing an empty dimension: Sum 0, Mean NaN (0 / 0), Max and Min refuse
  CHECK(nn::Sum(1).forward(zeros({2, 0})).to_vector<double>() == std::vector<double>{0, 0});
  expect_values("Mean", nn::Mean(1).forward(zeros({2, 0})), {kNaN, kNaN}, 0);
  nn::Sum s(1);
  s.forward(zeros({2, 0}));
  CHECK(s.backward(zeros({2, 0}), ones({2})).sizes() == Shape{2, 0});
  CHECK_THROWS_WITH_AS(nn::Max(1).forward(zeros({2, 0})),
                       "nn.Max::updateOutput: expected a non-empty dimension 1 to take the maximum over, got float32 "
                       "[2 x 0] on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(nn::Min(-1).forward(zeros({2, 0})),
                       doctest::Contains("nn.Min::updateOutput: expected a "
                                         "non-empty dimension -1"),
                       Error);
}

TEST_CASE("reductions: printing, config and state round trips, errors") {
  CHECK(nn::Sum(1).str() == "nn.Sum");
  CHECK(nn::Mean(-1).str() == "nn.Mean");
  CHECK(nn::Max(0).str() == "nn.Max");
  CHECK(nn::Min(2).str() == "nn.Min");
  CHECK(nn::Sum(1, true).config().dump() ==
        tensor::Json(tensor::Json::Object{{"dimension", int64_t{1}}, {"sizeAverage", true}}).dump());
  CHECK(nn::Max(-2).config().dump() == tensor::Json(tensor::Json::Object{{"dimension", int64_t{-2}}}).dump());
  auto s = std::dynamic_pointer_cast<nn::Sum>(nn::Sum::fromConfig(nn::Sum(-1, true).config()));
  REQUIRE(s);
  CHECK(s->dimension == -1);
  CHECK(s->sizeAverage);
  CHECK(s->kind() == nn::ReductionBase::Kind::Mean);
  auto mn = std::dynamic_pointer_cast<nn::Min>(nn::Min::fromConfig(nn::Min(2).config()));
  REQUIRE(mn);
  CHECK(mn->dimension == 2);
  Generator gen(503);
  for (const char* kind : kKinds) {
    INFO(kind);
    nn::ModulePtr a = make(kind, 1), b = make(kind, 1);
    expect_state_roundtrip_ok(*a, *b, uniform({2, 3, 4}, -1, 1, gen));
    expect_prints_type(*a);
    CHECK(a->namedParameters().empty());
  }
  CHECK_THROWS_WITH_AS(nn::Sum(3).forward(zeros({2, 3, 4})),
                       "nn.Sum::updateOutput: expected an input with dimension 3, got float32 [2 x 3 x 4] on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(nn::Max(-4).forward(zeros({2, 3, 4})), doctest::Contains("dimension -4"), Error);
  CHECK_THROWS_WITH_AS(nn::Mean(0).forward(zeros({}, DType::Float32)), doctest::Contains("got float32 [] on cpu"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::Min(0).forward(zeros({3}, DType::Int64)),
                       "nn.Min::updateOutput: expected float32 or float64 input, got int64 [3] on cpu", Error);
  nn::Sum sum(1);
  sum.forward(zeros({2, 3}));
  CHECK_THROWS_WITH_AS(sum.backward(zeros({2, 3}), zeros({3})),
                       "nn.Sum::updateGradInput: expected gradOutput of [2] and the input's dtype (float32 [2 x 3] on "
                       "cpu), got float32 [3] on cpu",
                       Error);
  nn::Max max(1);
  CHECK_THROWS_WITH_AS(max.backward(zeros({2, 3}), zeros({2})), doctest::Contains("call updateOutput first"), Error);
}
