// test_VolumetricMaxPooling.cpp
#include <doctest/doctest.h>

#include "nn/SpatialMaxPooling.h"
#include "nn/VolumetricMaxPooling.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"
#include "tests/support/PoolingReference.h"

using namespace tensor;
using namespace testing;

TEST_CASE("VolumetricMaxPooling output sizes follow Torch in floor and ceil mode") {
  // kT=2 kW=3 kH=3, strides 2, padding 1 on T=5, H=6, W=7 (by hand):
  // T: (5+2-2)/2 = 2.5 -> floor 3; ceil 4, but the 4th window starts at 6-1 = 5 = T: dropped -> 3
  // H: (6+2-3)/2 = 2.5 -> floor 3; ceil 4 (starts at 5 < 6)
  // W: (7+2-3)/2 = 3   -> 4 both
  nn::VolumetricMaxPooling m(2, 3, 3, 2, 2, 2, 1, 1, 1);
  CHECK(m.outputShape(zeros({2, 5, 6, 7})) == Shape{2, 3, 3, 4});
  CHECK(m.outputShape(zeros({3, 2, 5, 6, 7})) == Shape{3, 2, 3, 3, 4});
  m.ceil();
  CHECK(m.outputShape(zeros({2, 5, 6, 7})) == Shape{2, 3, 4, 4});
  CHECK(m.outputShape(zeros({1, 2, 5, 6, 7})) == Shape{1, 2, 3, 4, 4});
  // defaults: stride = kernel
  nn::VolumetricMaxPooling d(2, 3, 4);
  CHECK(d.dT == 2);
  CHECK(d.dW == 3);
  CHECK(d.dH == 4);
  CHECK(d.outputShape(zeros({1, 5, 9, 7})) == Shape{1, 2, 2, 2});
  CHECK(d.ceil().outputShape(zeros({1, 5, 9, 7})) == Shape{1, 3, 3, 3});
  CHECK_FALSE(d.floor().ceil_mode);
}

TEST_CASE("VolumetricMaxPooling forward: by hand, against a naive loop, and as SpatialMaxPooling at depth 1") {
  const Tensor x = from_vector<double>({3, 1, 4, 1, 5, 9, 2, 6,  //
                                        5, 3, 5, 8, 9, 7, 9, 3},
                                       {1, 2, 2, 2, 2});
  nn::VolumetricMaxPooling m(2, 2, 2);
  CHECK(m.forward(x).to_vector<double>() == std::vector<double>{9, 9});
  CHECK(m.indices.to_vector<int64_t>() == std::vector<int64_t>{5, 4});  // ties: the first 9

  Generator gen(99);
  INFO("size seed 99");
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
      nn::VolumetricMaxPooling p(c.kT, c.kW, c.kH, c.dT, c.dW, c.dH, c.padT, c.padW, c.padH);
      if (ceil) p.ceil();
      const int64_t t = random_size(gen, c.kT, c.kT + 3), h = random_size(gen, c.kH, c.kH + 3),
                    w = random_size(gen, c.kW, c.kW + 3);
      for (const Shape& shape : {Shape{random_size(gen, 1, 2), 2, t, h, w}, Shape{3, t, h, w}}) {
        for (DType dt : {DType::Float32, DType::Float64}) {
          INFO(p.str(), (ceil ? " ceil" : " floor"), " on ", shape_str(shape));
          const Tensor in = uniform(shape, -1, 1, gen, dt);
          const Tensor y = p.forward(in);
          const pooltest::Spec spec{{c.kT, c.kH, c.kW}, {c.dT, c.dH, c.dW}, {c.padT, c.padH, c.padW}};
          CHECK(max_abs_diff(y, pooltest::naive_pool(in, y.sizes(), spec)) == 0);
        }
      }
    }
  }

  // depth 1 with kT = 1 is spatial pooling
  for (bool ceil : {false, true}) {
    nn::VolumetricMaxPooling v(1, 3, 2, 1, 2, 2, 0, 1, 1);
    nn::SpatialMaxPooling s(3, 2, 2, 2, 1, 1);
    if (ceil) {
      v.ceil();
      s.ceil();
    }
    const Tensor in = uniform({2, 3, 7, 8}, -1, 1, gen, DType::Float64);
    const Tensor yv = v.forward(in.view({2, 3, 1, 7, 8})).clone();
    CHECK(max_abs_diff(yv.squeeze(2), s.forward(in)) == 0);
    const Tensor g = uniform(s.output.sizes(), -1, 1, gen, DType::Float64);
    CHECK(max_abs_diff(v.backward(in.view({2, 3, 1, 7, 8}), g.unsqueeze(2)).squeeze(2), s.backward(in, g)) == 0);
  }
}

TEST_CASE("VolumetricMaxPooling gradient checks (batch and not, odd sizes, overlap, padding, ceil)") {
  Generator gen(13);
  INFO("size seed 13");
  struct Cfg {
    int64_t kT, kW, kH, dT, dW, dH, padT, padW, padH;
    bool ceil;
  };
  const Cfg cfgs[] = {{2, 2, 2, 2, 2, 2, 0, 0, 0, false},
                      {3, 3, 3, 2, 2, 2, 1, 1, 1, true},
                      {2, 3, 2, 1, 1, 1, 1, 1, 0, false},
                      {3, 2, 3, 2, 3, 1, 1, 0, 1, true}};
  for (const Cfg& c : cfgs) {
    nn::VolumetricMaxPooling m(c.kT, c.kW, c.kH, c.dT, c.dW, c.dH, c.padT, c.padW, c.padH);
    if (c.ceil) m.ceil();
    const int64_t t = random_size(gen, c.kT, c.kT + 2), h = random_size(gen, c.kH, c.kH + 3),
                  w = random_size(gen, c.kW, c.kW + 3);
    expect_gradients_ok(m, uniform({2, 2, t, h, w}, -1, 1, gen, DType::Float64));
    expect_gradients_ok(m, uniform({1, 1, t, h, w}, -1, 1, gen, DType::Float64));
    expect_gradients_ok(m, uniform({2, t, h, w}, -1, 1, gen, DType::Float64));
  }
  // ties: a constant input sends every gradient to its window's first element
  nn::VolumetricMaxPooling m(2, 2, 2);
  const Tensor x = ones({1, 2, 2, 4}, DType::Float64);
  m.forward(x);
  const std::vector<double> g = m.backward(x, from_vector<double>({5, 7}, {1, 1, 1, 2})).to_vector<double>();
  CHECK(g == std::vector<double>{5, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
}

TEST_CASE("VolumetricMaxPooling matches PyTorch's max_pool3d (ceil mode, padding, dropped windows)") {
  for (const auto& c : pooltest::reference_cases("max_3d")) {
    nn::VolumetricMaxPooling m(c.spec.k[0], c.spec.k[2], c.spec.k[1], c.spec.d[0], c.spec.d[2], c.spec.d[1],
                               c.spec.pad[0], c.spec.pad[2], c.spec.pad[1]);
    if (c.ceil) m.ceil();
    pooltest::expect_matches_reference(m, c);
  }
}

TEST_CASE("VolumetricMaxPooling state round trip, printing and errors") {
  Generator gen(17);
  nn::VolumetricMaxPooling a(3, 3, 3, 2, 2, 2, 1, 1, 1), b(3, 3, 3, 2, 2, 2, 1, 1, 1);
  a.ceil();
  b.ceil();
  expect_state_roundtrip_ok(a, b, uniform({2, 2, 5, 5, 5}, -1, 1, gen));
  CHECK(nn::VolumetricMaxPooling(2, 2, 2).str() == "nn.VolumetricMaxPooling(2x2x2, 2,2,2)");
  CHECK(nn::VolumetricMaxPooling(1, 2, 3, 1, 2, 1).str() == "nn.VolumetricMaxPooling(1x2x3, 1,2,1)");
  CHECK(nn::VolumetricMaxPooling(2, 3, 4, 1, 1, 1, 1, 0, 2).str() == "nn.VolumetricMaxPooling(2x3x4, 1,1,1, 1,0,2)");
  expect_prints_type(a);

  nn::VolumetricMaxPooling m(2, 3, 4);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 1, 2, 3, 3})),
                       "nn.VolumetricMaxPooling::updateOutput: expected input of at least 2x4x3 (with padding), got "
                       "[1 x 1 x 2 x 3 x 3]: calculated output size [1 x 1 x 1 x 0 x 1] is too small",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({3, 4, 4})),
                       "nn.VolumetricMaxPooling::updateOutput: expected 4D [C x T x H x W] or 5D [N x C x T x H x W] "
                       "input, got [3 x 4 x 4]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::VolumetricMaxPooling(2, 2, 2, 1, 1, 1, 2, 0, 0),
                       "nn.VolumetricMaxPooling: expected padding <= kernel / 2, got kernel 2x2x2, stride 1,1,1, "
                       "padding 2,0,0",
                       Error);
  CHECK_THROWS_AS(nn::VolumetricMaxPooling(0, 2, 2), Error);
  const Tensor x = uniform({1, 2, 4, 6}, -1, 1, gen);
  CHECK_THROWS_WITH_AS(m.backward(x, zeros({1, 1, 1, 2})), doctest::Contains("after updateOutput on nothing"), Error);
  m.forward(x);
  CHECK_THROWS_WITH_AS(m.backward(x, zeros({1, 1, 2, 1})),
                       "nn.VolumetricMaxPooling::updateGradInput: expected gradOutput of the output's shape "
                       "[1 x 1 x 1 x 2], got [1 x 1 x 2 x 1]",
                       Error);
}

TEST_CASE("VolumetricMaxPooling on a batch large enough to run in parallel") {
  Generator gen(43);
  nn::VolumetricMaxPooling m(2, 3, 3, 2, 2, 2, 1, 1, 1);
  m.ceil();
  const Tensor x = uniform({8, 2, 8, 16, 15}, -1, 1, gen);
  CHECK(max_abs_diff(m.forward(x), pooltest::naive_pool(x, m.outputShape(x), {{2, 3, 3}, {2, 2, 2}, {1, 1, 1}})) == 0);
  pooltest::expect_batch_matches_samples(m, x, gen);
}

TEST_CASE("VolumetricMaxPooling: a NaN window gives NaN and takes the gradient, +Inf wins (Note [NaN and Inf])") {
  nn::VolumetricMaxPooling m(2, 2, 2);
  std::vector<double> v(16);
  for (int i = 0; i < 16; ++i) v[i] = i * 0.5 - 4;
  v[5] = kNaN;   // in window 0 (depth 0-1, rows 0-1, columns 0-1)
  v[14] = kInf;  // in window 1 (columns 2-3)... of a [1 x 2 x 2 x 4] input
  v[8] = -kInf;  // in window 0 too: NaN still wins
  const Tensor x = from_vector<double>(v, {1, 2, 2, 4});
  expect_values("output", m.forward(x), {kNaN, kInf});
  const std::vector<double> g = m.backward(x, ones({1, 1, 1, 2}, DType::Float64)).to_vector<double>();
  CHECK(g[5] == 1);
  CHECK(g[14] == 1);
  CHECK(g[0] + g[1] + g[4] + g[8] + g[9] + g[12] + g[13] == 0);
}

TEST_CASE("VolumetricMaxPooling config round trip; the stride is required and count_include_pad unknown") {
  nn::VolumetricMaxPooling a(3, 2, 2, 2, 1, 1, 1, 1, 0);
  a.ceil();
  CHECK(nn::VolumetricMaxPooling::fromConfig(a.config())->config().dump() == a.config().dump());
  CHECK_THROWS_WITH_AS(nn::VolumetricMaxPooling::fromConfig(Json::Object{{"kT", 2}, {"kW", 2}, {"kH", 2}}),
                       "nn.VolumetricMaxPooling config: missing key 'dT'", Error);
  Json withPad = a.config();
  withPad.set("count_include_pad", true);
  CHECK_THROWS_WITH_AS(nn::VolumetricMaxPooling::fromConfig(withPad),
                       doctest::Contains("unknown key 'count_include_pad'"), Error);
}
