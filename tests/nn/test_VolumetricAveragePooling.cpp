// test_VolumetricAveragePooling.cpp
#include <doctest/doctest.h>

#include "nn/SpatialAveragePooling.h"
#include "nn/VolumetricAveragePooling.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"
#include "tests/support/PoolingReference.h"

using namespace tensor;
using namespace testing;

TEST_CASE("VolumetricAveragePooling defaults and output sizes follow Torch") {
  nn::VolumetricAveragePooling d(2, 3, 4);
  CHECK(d.dT == 2);  // Torch's VolumetricAveragePooling strides by the kernel by default
  CHECK(d.dW == 3);
  CHECK(d.dH == 4);
  CHECK(d.padT == 0);
  CHECK(d.count_include_pad);
  CHECK(d.outputShape(zeros({1, 5, 9, 7})) == Shape{1, 2, 2, 2});
  CHECK(d.ceil().outputShape(zeros({2, 1, 5, 9, 7})) == Shape{2, 1, 3, 3, 3});
  CHECK_FALSE(d.setCountExcludePad().count_include_pad);
  CHECK(d.setCountIncludePad().floor().count_include_pad);
  // T=5, kT=2, dT=2, padT=1: floor 3; ceil 4 but the 4th window starts at 5 = T: dropped
  nn::VolumetricAveragePooling p(2, 1, 1, 2, 1, 1, 1, 0, 0);
  CHECK(p.outputShape(zeros({1, 5, 2, 2})) == Shape{1, 3, 2, 2});
  CHECK(p.ceil().outputShape(zeros({1, 5, 2, 2})) == Shape{1, 3, 2, 2});
}

TEST_CASE("VolumetricAveragePooling divisors along T with and without padding counted (by hand)") {
  // x[t] = t + 1 on T=4; kT=3, dT=2, padT=1. Windows [-1, 2), [1, 4) and in ceil mode [3, 5)
  // (clipped to the padded input): sums 3, 9, 4 over 2, 3, 1 input and 3, 3, 2 padded entries.
  const Tensor x = from_vector<double>({1, 2, 3, 4}, {1, 4, 1, 1});
  auto run = [&](bool ceil, bool include) {
    nn::VolumetricAveragePooling m(3, 1, 1, 2, 1, 1, 1, 0, 0);
    if (ceil) m.ceil();
    m.count_include_pad = include;
    return m.forward(x).to_vector<double>();
  };
  CHECK(run(false, true) == std::vector<double>{1, 3});
  CHECK(run(false, false) == std::vector<double>{1.5, 3});
  CHECK(run(true, true) == std::vector<double>{1, 3, 2});
  CHECK(run(true, false) == std::vector<double>{1.5, 3, 4});
}

TEST_CASE("VolumetricAveragePooling forward: naive loop, and SpatialAveragePooling at depth 1") {
  Generator gen(31);
  INFO("size seed 31");
  struct Cfg {
    int64_t kT, kW, kH, dT, dW, dH, padT, padW, padH;
  };
  const Cfg cfgs[] = {{2, 2, 2, 2, 2, 2, 0, 0, 0},
                      {3, 3, 3, 2, 2, 2, 1, 1, 1},
                      {1, 3, 2, 1, 2, 1, 0, 1, 1},
                      {2, 1, 3, 3, 1, 2, 1, 0, 1},
                      {3, 2, 2, 1, 3, 1, 1, 1, 0}};
  for (const Cfg& c : cfgs) {
    for (bool ceil : {false, true}) {
      for (bool include : {true, false}) {
        nn::VolumetricAveragePooling p(c.kT, c.kW, c.kH, c.dT, c.dW, c.dH, c.padT, c.padW, c.padH);
        if (ceil) p.ceil();
        p.count_include_pad = include;
        const int64_t t = random_size(gen, c.kT, c.kT + 3), h = random_size(gen, c.kH, c.kH + 3),
                      w = random_size(gen, c.kW, c.kW + 3);
        for (const Shape& shape : {Shape{random_size(gen, 1, 2), 2, t, h, w}, Shape{3, t, h, w}}) {
          for (DType dt : {DType::Float32, DType::Float64}) {
            INFO(p.str(), (ceil ? " ceil" : " floor"), (include ? " include" : " exclude"), " on ", shape_str(shape));
            const Tensor in = uniform(shape, -1, 1, gen, dt);
            const Tensor y = p.forward(in);
            const pooltest::Spec spec{{c.kT, c.kH, c.kW}, {c.dT, c.dH, c.dW}, {c.padT, c.padH, c.padW}, false, include};
            CHECK(max_abs_diff(y, pooltest::naive_pool(in, y.sizes(), spec)) <= (dt == DType::Float32 ? 1e-6 : 1e-14));
          }
        }
      }
    }
  }
  for (bool ceil : {false, true}) {
    for (bool include : {true, false}) {
      nn::VolumetricAveragePooling v(1, 3, 2, 1, 2, 2, 0, 1, 1);
      nn::SpatialAveragePooling s(3, 2, 2, 2, 1, 1);
      if (ceil) {
        v.ceil();
        s.ceil();
      }
      v.count_include_pad = s.count_include_pad = include;
      const Tensor in = uniform({2, 3, 7, 8}, -1, 1, gen, DType::Float64);
      const Tensor yv = v.forward(in.view({2, 3, 1, 7, 8})).clone();
      CHECK(max_abs_diff(yv.squeeze(2), s.forward(in)) == 0);
      const Tensor g = uniform(s.output.sizes(), -1, 1, gen, DType::Float64);
      CHECK(max_abs_diff(v.backward(in.view({2, 3, 1, 7, 8}), g.unsqueeze(2)).squeeze(2), s.backward(in, g)) == 0);
    }
  }
}

TEST_CASE("VolumetricAveragePooling gradient checks (batch and not, odd sizes, overlap, padding, ceil)") {
  Generator gen(37);
  INFO("size seed 37");
  struct Cfg {
    int64_t kT, kW, kH, dT, dW, dH, padT, padW, padH;
    bool ceil, include;
  };
  const Cfg cfgs[] = {{2, 2, 2, 2, 2, 2, 0, 0, 0, false, true},
                      {3, 3, 3, 2, 2, 2, 1, 1, 1, true, true},
                      {3, 3, 3, 2, 2, 2, 1, 1, 1, true, false},
                      {2, 3, 2, 1, 1, 1, 1, 1, 0, false, false},
                      {3, 2, 3, 2, 3, 1, 1, 0, 1, true, true}};
  for (const Cfg& c : cfgs) {
    nn::VolumetricAveragePooling m(c.kT, c.kW, c.kH, c.dT, c.dW, c.dH, c.padT, c.padW, c.padH);
    if (c.ceil) m.ceil();
    m.count_include_pad = c.include;
    const int64_t t = random_size(gen, c.kT, c.kT + 2), h = random_size(gen, c.kH, c.kH + 3),
                  w = random_size(gen, c.kW, c.kW + 3);
    expect_gradients_ok(m, uniform({2, 2, t, h, w}, -1, 1, gen, DType::Float64));
    expect_gradients_ok(m, uniform({1, 1, t, h, w}, -1, 1, gen, DType::Float64));
    expect_gradients_ok(m, uniform({2, t, h, w}, -1, 1, gen, DType::Float64));
  }
}

TEST_CASE("VolumetricAveragePooling matches PyTorch's avg_pool3d (ceil mode, count_include_pad both ways)") {
  for (const char* prefix : {"avg_inc_3d", "avg_exc_3d"}) {
    for (const auto& c : pooltest::reference_cases(prefix)) {
      nn::VolumetricAveragePooling m(c.spec.k[0], c.spec.k[2], c.spec.k[1], c.spec.d[0], c.spec.d[2], c.spec.d[1],
                                     c.spec.pad[0], c.spec.pad[2], c.spec.pad[1]);
      if (c.ceil) m.ceil();
      m.count_include_pad = c.spec.include_pad;
      pooltest::expect_matches_reference(m, c);
    }
  }
}

TEST_CASE("VolumetricAveragePooling state round trip, printing and errors") {
  Generator gen(41);
  nn::VolumetricAveragePooling a(3, 3, 3, 2, 2, 2, 1, 1, 1), b(3, 3, 3, 2, 2, 2, 1, 1, 1);
  a.ceil().setCountExcludePad();
  b.ceil().setCountExcludePad();
  expect_state_roundtrip_ok(a, b, uniform({2, 2, 5, 4, 5}, -1, 1, gen));
  CHECK(nn::VolumetricAveragePooling(2, 2, 2).str() == "nn.VolumetricAveragePooling(2x2x2, 2,2,2)");
  CHECK(a.str() == "nn.VolumetricAveragePooling(3x3x3, 2,2,2, 1,1,1)");
  CHECK(nn::VolumetricAveragePooling(1, 2, 3, 1, 1, 2, 0, 1, 0).str() ==
        "nn.VolumetricAveragePooling(1x2x3, 1,1,2, 0,1,0)");
  expect_prints_type(a);

  CHECK_THROWS_WITH_AS(
      nn::VolumetricAveragePooling(3, 2, 2).forward(zeros({1, 2, 4, 4})),
      "nn.VolumetricAveragePooling::updateOutput: expected input of at least 3x2x2 (with padding), got "
      "[1 x 2 x 4 x 4]: calculated output size [1 x 0 x 2 x 2] is too small",
      Error);
  CHECK_THROWS_WITH_AS(nn::VolumetricAveragePooling(3, 3, 3, 1, 1, 1, 1, 1, 2),
                       "nn.VolumetricAveragePooling: expected padding <= kernel / 2, got kernel 3x3x3, stride 1,1,1, "
                       "padding 1,1,2",
                       Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({2, 2, 2, 3, 4, 5})), doctest::Contains("got [2 x 2 x 2 x 3 x 4 x 5]"), Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({2, 3, 3, 3}, DType::Int64)),
                       doctest::Contains("expected float32 or float64 input, got int64"), Error);
}

TEST_CASE("VolumetricAveragePooling on a batch large enough to run in parallel") {
  Generator gen(47);
  for (bool include : {true, false}) {
    nn::VolumetricAveragePooling m(2, 3, 3, 2, 2, 2, 1, 1, 1);
    m.ceil();
    m.count_include_pad = include;
    const Tensor x = uniform({8, 2, 8, 16, 15}, -1, 1, gen, DType::Float64);
    const Tensor ref = pooltest::naive_pool(x, m.outputShape(x), {{2, 3, 3}, {2, 2, 2}, {1, 1, 1}, false, include});
    CHECK(max_abs_diff(m.forward(x), ref) <= 1e-14);
    pooltest::expect_batch_matches_samples(m, x, gen);
  }
}

TEST_CASE("VolumetricAveragePooling: NaN and infinities enter the window sums (Note [NaN and Inf])") {
  nn::VolumetricAveragePooling m(2, 2, 2);
  std::vector<double> v(16, 1.0);
  v[5] = kNaN;
  v[14] = -kInf;
  const Tensor x = from_vector<double>(v, {1, 2, 2, 4});
  expect_values("output", m.forward(x), {kNaN, -kInf});
  expect_values("gradInput", m.backward(x, ones({1, 1, 1, 2}, DType::Float64)), std::vector<double>(16, 0.125));
}
