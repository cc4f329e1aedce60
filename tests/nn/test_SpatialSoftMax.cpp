// test_SpatialSoftMax.cpp
#include <doctest/doctest.h>

#include <cmath>

#include "nn/SpatialSoftMax.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;

namespace {
// softmax over `dim` with the tensor library's own operators
Tensor reference(const Tensor& x, int64_t dim) {
  const Tensor e = x.sub(x.max(dim, true).first).exp();
  return e.div(e.sum(dim, true));
}
}  // namespace

TEST_CASE("SpatialSoftMax across channels at each location: [0, ln 2, ln 3] gives [1/6, 2/6, 3/6]") {
  nn::SpatialSoftMax m;
  // unbatched input of 3 channels; every location holds [0, ln 2, ln 3] shifted by its own offset
  Tensor x = zeros({3, 2, 2}, DType::Float64);
  const int64_t per = x.numel() / 3;
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t i = 0; i < per; ++i) x.flatten().set({c * per + i}, std::log(c + 1.0) + 100.0 * i);
  const Tensor y = m.forward(x);
  REQUIRE(y.sizes() == x.sizes());
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t i = 0; i < per; ++i)
      CHECK(y.flatten().get({c * per + i}) == doctest::Approx((c + 1) / 6.0).epsilon(1e-12));
  // large inputs stay finite (exp(1000) overflows without the max subtracted)
  CHECK_FALSE(has_nonfinite(m.forward(full({3, 2, 2}, 1000.0, DType::Float32))));
  CHECK(m.output.get({0, 0, 0}) == doctest::Approx(1.0 / 3).epsilon(1e-6));
}

TEST_CASE("SpatialSoftMax matches a reference over the channel dimension, batched and not") {
  nn::SpatialSoftMax m;
  Generator gen(13);
  const Tensor xu = uniform({5, 3, 4}, -4, 4, gen, DType::Float64);
  CHECK(max_abs_diff(m.forward(xu), reference(xu, 0)) < 1e-14);
  const Tensor xb = uniform({2, 5, 3, 4}, -4, 4, gen, DType::Float64);
  CHECK(max_abs_diff(m.forward(xb), reference(xb, 1)) < 1e-14);
  CHECK(max_abs_diff(m.output.sum(1), ones(m.output.sum(1).sizes(), DType::Float64)) < 1e-14);
  // float32, large enough for the parallel path, and a non-contiguous input
  const Tensor xl = uniform({4, 16, 32, 33}, -20, 20, gen, DType::Float32);
  CHECK(max_abs_diff(m.forward(xl), reference(xl.to(DType::Float64), 1)) < 1e-5);
  const Tensor xt = xb.transpose(0, 1).contiguous().transpose(0, 1);
  REQUIRE_FALSE(xt.is_contiguous());
  CHECK(max_abs_diff(m.forward(xt), reference(xb, 1)) < 1e-14);
}

TEST_CASE("SpatialSoftMax gradients (random shapes, batched and not)") {
  Generator gen(20261208);
  INFO("size seed 20261208");
  for (int trial = 0; trial < 3; ++trial) {
    const int64_t c = random_size(gen, 1, 4), h = random_size(gen, 1, 3), w = random_size(gen, 1, 3);
    const int64_t n = random_size(gen, 1, 3);
    nn::SpatialSoftMax m;
    m.to(DType::Float64);
    expect_gradients_ok(m, uniform({c, h, w}, -2, 2, gen, DType::Float64));
    expect_gradients_ok(m, uniform({n, c, h, w}, -2, 2, gen, DType::Float64));
  }
}

TEST_CASE("SpatialSoftMax state round trip, printing and errors") {
  Generator gen(2);
  nn::SpatialSoftMax a, b;
  expect_state_roundtrip_ok(a, b, uniform({2, 5, 3, 4}, -2, 2, gen));
  CHECK(a.str() == "nn.SpatialSoftMax");
  expect_prints_type(a);
  CHECK_FALSE(a.isLog());
  CHECK_THROWS_WITH_AS(a.forward(zeros({2, 3})),
                       "nn.SpatialSoftMax::updateOutput: expected input of [C x H x W] or [N x C x H x W], "
                       "got [2 x 3]",
                       Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({3, 2, 2}, DType::Int64)),
                       doctest::Contains("::updateOutput: expected float32 or float64 input, got int64"), Error);
}

TEST_CASE("SpatialSoftMax: the planes at a NaN's or +Inf's position are NaN, the others finite (Note [NaN and Inf])") {
  nn::SpatialSoftMax m;
  // [1 x 2 x 1 x 3]: position 0 holds a NaN, position 1 a +Inf, position 2 a -Inf
  const Tensor x = from_vector<double>({kNaN, kInf, -kInf, 1, 2, 3}, {1, 2, 1, 3});
  expect_values("output", m.forward(x), {kNaN, kNaN, 0, kNaN, kNaN, 1});
}
