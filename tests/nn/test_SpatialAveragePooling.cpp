// test_SpatialAveragePooling.cpp
#include <doctest/doctest.h>

#include "nn/SpatialAveragePooling.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"
#include "tests/support/PoolingReference.h"

using namespace tensor;
using namespace testing;

TEST_CASE("SpatialAveragePooling defaults and output sizes follow Torch") {
  nn::SpatialAveragePooling d(3, 2);
  CHECK(d.dW == 1);  // Torch's average pooling defaults to stride 1, unlike max pooling
  CHECK(d.dH == 1);
  CHECK(d.count_include_pad);
  CHECK_FALSE(d.ceil_mode);
  CHECK(d.outputShape(zeros({3, 5, 6})) == Shape{3, 4, 4});
  CHECK_FALSE(d.setCountExcludePad().count_include_pad);
  CHECK(d.setCountIncludePad().ceil().count_include_pad);
  // (in, k, d, pad) -> floor / ceil, by hand: floor/ceil((in + 2 pad - k) / d) + 1, then in
  // ceil mode the last window is dropped if it starts at or past in + pad
  nn::SpatialAveragePooling m(2, 2, 2, 2, 1, 1);  // in 5: floor 3; ceil 4, 4th window at 5: dropped
  CHECK(m.outputShape(zeros({1, 5, 5})) == Shape{1, 3, 3});
  CHECK(m.ceil().outputShape(zeros({1, 5, 5})) == Shape{1, 3, 3});
  nn::SpatialAveragePooling r(3, 3, 2, 2, 1, 1);  // in 4: floor 2, ceil 3 (3rd window at 3, inside)
  CHECK(r.outputShape(zeros({2, 1, 4, 6})) == Shape{2, 1, 2, 3});
  CHECK(r.ceil().outputShape(zeros({2, 1, 4, 6})) == Shape{2, 1, 3, 4});  // in 6: floor 3, ceil 4 (start 5)
}

TEST_CASE("SpatialAveragePooling divisors with and without padding counted, floor and ceil (by hand)") {
  // x[r][c] = 4 r + c + 1 on 4x4; 3x3 windows, stride 2, padding 1. Per dim the windows are
  // [-1, 2), [1, 4) and, in ceil mode, [3, 6) clipped to the padded input [-1, 5): [3, 5).
  // Inside the input they hold rows {0,1}, {1,2,3}, {3}: 2, 3, 1 elements; within the padded
  // input 3, 3, 2. Window sums: 14 30 12 / 57 99 36 / 27 45 16.
  const Tensor x = arange(1, 17, 1, DType::Float64).view({1, 4, 4});
  auto run = [&](bool ceil, bool include) {
    nn::SpatialAveragePooling m(3, 3, 2, 2, 1, 1);
    if (ceil) m.ceil();
    if (!include) m.setCountExcludePad();
    return m.forward(x).clone();
  };
  auto expect = [](const Tensor& y, const std::vector<double>& v) {
    CHECK(max_abs_diff(y, from_vector<double>(v, y.sizes())) <= 1e-14);
  };
  expect(run(false, true), {14.0 / 9, 30.0 / 9, 57.0 / 9, 11});
  expect(run(false, false), {14.0 / 4, 30.0 / 6, 57.0 / 6, 11});
  expect(run(true, true), {14.0 / 9, 30.0 / 9, 12.0 / 6, 57.0 / 9, 11, 36.0 / 6, 27.0 / 6, 45.0 / 6, 16.0 / 4});
  expect(run(true, false), {14.0 / 4, 30.0 / 6, 12.0 / 2, 57.0 / 6, 11, 36.0 / 3, 27.0 / 2, 45.0 / 3, 16});

  // backward with ones: gradInput[r][c] = a[r] a[c], a[r] = sum of 1/divisor over the windows
  // holding r: include pad 1/3, 1/3 + 1/3, 1/3, 1/3 + 1/2
  nn::SpatialAveragePooling m(3, 3, 2, 2, 1, 1);
  m.ceil();
  m.forward(x);
  const Tensor g = m.backward(x, ones({1, 3, 3}, DType::Float64));
  const double a[] = {1.0 / 3, 2.0 / 3, 1.0 / 3, 5.0 / 6};
  std::vector<double> expected;
  for (double ar : a)
    for (double ac : a) expected.push_back(ar * ac);
  expect(g, expected);
}

TEST_CASE("SpatialAveragePooling forward matches a naive loop (floor and ceil, include and exclude padding)") {
  Generator gen(424242);
  INFO("size seed 424242");
  struct Cfg {
    int64_t kW, kH, dW, dH, padW, padH;
  };
  const Cfg cfgs[] = {{2, 2, 2, 2, 0, 0}, {3, 3, 2, 2, 1, 1}, {3, 2, 1, 2, 1, 1}, {2, 3, 3, 1, 1, 0},
                      {5, 4, 2, 3, 2, 2}, {1, 1, 2, 2, 0, 0}, {4, 4, 4, 4, 2, 2}};
  for (const Cfg& c : cfgs) {
    for (bool ceil : {false, true}) {
      for (bool include : {true, false}) {
        nn::SpatialAveragePooling m(c.kW, c.kH, c.dW, c.dH, c.padW, c.padH);
        if (ceil) m.ceil();
        m.count_include_pad = include;
        const int64_t h = random_size(gen, c.kH, c.kH + 6), w = random_size(gen, c.kW, c.kW + 6);
        for (DType dt : {DType::Float32, DType::Float64}) {
          for (const Shape& shape : {Shape{random_size(gen, 1, 3), 3, h, w}, Shape{2, h, w}}) {
            INFO(m.str(), (ceil ? " ceil" : " floor"), (include ? " include" : " exclude"), " on ", shape_str(shape));
            const Tensor x = uniform(shape, -1, 1, gen, dt);
            const Tensor y = m.forward(x);
            const Tensor ref =
                pooltest::naive_pool(x, y.sizes(), {{c.kH, c.kW}, {c.dH, c.dW}, {c.padH, c.padW}, false, include});
            CHECK(max_abs_diff(y, ref) <= (dt == DType::Float32 ? 1e-6 : 1e-14));
          }
        }
      }
    }
  }
}

TEST_CASE("SpatialAveragePooling gradient checks (batch and not, odd sizes, overlap, padding, ceil)") {
  Generator gen(11);
  INFO("size seed 11");
  struct Cfg {
    int64_t kW, kH, dW, dH, padW, padH;
    bool ceil, include;
  };
  const Cfg cfgs[] = {{2, 2, 2, 2, 0, 0, false, true}, {3, 3, 2, 2, 1, 1, true, true},
                      {3, 3, 2, 2, 1, 1, true, false}, {3, 2, 1, 1, 1, 1, false, false},
                      {2, 3, 2, 1, 1, 0, true, true},  {4, 2, 3, 1, 2, 1, true, false}};
  for (const Cfg& c : cfgs) {
    nn::SpatialAveragePooling m(c.kW, c.kH, c.dW, c.dH, c.padW, c.padH);
    if (c.ceil) m.ceil();
    m.count_include_pad = c.include;
    const int64_t h = random_size(gen, c.kH, c.kH + 4), w = random_size(gen, c.kW, c.kW + 4);
    expect_gradients_ok(m, uniform({random_size(gen, 1, 3), 2, h, w}, -1, 1, gen, DType::Float64));
    expect_gradients_ok(m, uniform({1, 3, h, w}, -1, 1, gen, DType::Float64));
    expect_gradients_ok(m, uniform({2, h, w}, -1, 1, gen, DType::Float64));
  }
}

TEST_CASE("SpatialAveragePooling matches PyTorch's avg_pool2d (ceil mode, count_include_pad both ways)") {
  for (const char* prefix : {"avg_inc_2d", "avg_exc_2d"}) {
    for (const auto& c : pooltest::reference_cases(prefix)) {
      nn::SpatialAveragePooling m(c.spec.k[1], c.spec.k[0], c.spec.d[1], c.spec.d[0], c.spec.pad[1], c.spec.pad[0]);
      if (c.ceil) m.ceil();
      m.count_include_pad = c.spec.include_pad;
      pooltest::expect_matches_reference(m, c);
    }
  }
}

TEST_CASE("SpatialAveragePooling state round trip, printing and errors") {
  Generator gen(5);
  nn::SpatialAveragePooling a(3, 3, 2, 2, 1, 1), b(3, 3, 2, 2, 1, 1);
  a.ceil().setCountExcludePad();
  b.ceil().setCountExcludePad();
  expect_state_roundtrip_ok(a, b, uniform({2, 3, 6, 6}, -1, 1, gen));
  CHECK(nn::SpatialAveragePooling(2, 2).str() == "nn.SpatialAveragePooling(2x2, 1,1)");
  CHECK(nn::SpatialAveragePooling(2, 3, 2, 1).str() == "nn.SpatialAveragePooling(2x3, 2,1)");
  CHECK(a.str() == "nn.SpatialAveragePooling(3x3, 2,2, 1,1)");
  expect_prints_type(a);

  CHECK_THROWS_WITH_AS(nn::SpatialAveragePooling(3, 3, 2, 2).forward(zeros({1, 2, 2, 2})),
                       "nn.SpatialAveragePooling::updateOutput: expected input of at least 3x3 (with padding), got "
                       "[1 x 2 x 2 x 2]: calculated output size [1 x 2 x 0 x 0] is too small",
                       Error);
  // in ceil mode one window needs only one element of its first stride step
  nn::SpatialAveragePooling c(5, 5, 2, 2);
  c.ceil();
  CHECK(c.outputShape(zeros({1, 4, 4})) == Shape{1, 1, 1});
  CHECK_THROWS_WITH_AS(c.forward(zeros({1, 4, 2})),
                       "nn.SpatialAveragePooling::updateOutput: expected input of at least 4x4 (with padding), got "
                       "[1 x 4 x 2]: calculated output size [1 x 1 x 0] is too small",
                       Error);
  CHECK_THROWS_WITH_AS(
      nn::SpatialAveragePooling(2, 2, 1, 1, 0, 2),
      "nn.SpatialAveragePooling: expected padding <= kernel / 2, got kernel 2x2, stride 1,1, padding 0,2", Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({6, 6})),
                       doctest::Contains("expected 3D [C x H x W] or 4D [N x C x H x W] input"), Error);
  const Tensor x = uniform({1, 6, 6}, -1, 1, gen);
  a.forward(x);
  CHECK_THROWS_WITH_AS(
      a.backward(x, zeros({1, 4, 3})),
      "nn.SpatialAveragePooling::updateGradInput: expected gradOutput of the output's shape [1 x 4 x 4], "
      "got [1 x 4 x 3]",
      Error);
}

TEST_CASE("SpatialAveragePooling on a batch large enough to run in parallel") {
  Generator gen(29);
  for (bool include : {true, false}) {
    nn::SpatialAveragePooling m(3, 3, 2, 2, 1, 1);
    m.ceil();
    m.count_include_pad = include;
    const Tensor x = uniform({8, 16, 24, 23}, -1, 1, gen, DType::Float64);
    const Tensor ref = pooltest::naive_pool(x, m.outputShape(x), {{3, 3}, {2, 2}, {1, 1}, false, include});
    CHECK(max_abs_diff(m.forward(x), ref) <= 1e-14);
    pooltest::expect_batch_matches_samples(m, x, gen);
  }
}

TEST_CASE(
    "SpatialAveragePooling: NaN and infinities enter the window sums, the gradient does not read the input (Note [NaN "
    "and Inf])") {
  nn::SpatialAveragePooling m(2, 2, 2, 2);
  const Tensor x =
      from_vector<double>({0.5, 0.25, -1, kInf, -0.5, kNaN, 2, 1, -kInf, -2, 3, 0.125, 0.75, -3, -0.25, 4}, {1, 4, 4});
  expect_values("output", m.forward(x), {kNaN, kInf, -kInf, (3 + 0.125 - 0.25 + 4) / 4});
  expect_values("gradInput", m.backward(x, ones({1, 2, 2}, DType::Float64)), std::vector<double>(16, 0.25));
  // +Inf and -Inf in one window: NaN
  const Tensor both = from_vector<double>({kInf, -kInf, 1, 2}, {1, 2, 2});
  expect_values("output", m.forward(both), {kNaN});
}

TEST_CASE("SpatialAveragePooling config round trip; a stride absent from the config is the constructor's 1") {
  nn::SpatialAveragePooling a(3, 2, 2, 1, 1, 0);
  a.ceil().setCountExcludePad();
  CHECK(nn::SpatialAveragePooling::fromConfig(a.config())->config().dump() == a.config().dump());
  const Json noStride = Json::Object{{"kW", 3}, {"kH", 2}};
  CHECK(nn::SpatialAveragePooling::fromConfig(noStride)->str() == "nn.SpatialAveragePooling(3x2, 1,1)");
}
