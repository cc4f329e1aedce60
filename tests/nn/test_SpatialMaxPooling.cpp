// test_SpatialMaxPooling.cpp
#include <doctest/doctest.h>

#include <cmath>

#include "nn/SpatialMaxPooling.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"
#include "tests/support/PoolingReference.h"

using namespace tensor;
using namespace testing;

namespace {

// What a cudnn twin does: derive, take the module by move, override the type name.
struct Twin : nn::SpatialMaxPooling {
  explicit Twin(nn::SpatialMaxPooling&& m) : nn::SpatialMaxPooling(std::move(m)) {}
  std::string type_name() const override { return "cudnn.SpatialMaxPooling"; }
};

// One row per dim: input, kernel, stride, padding, and Torch's floor and ceil output sizes
// (0: too small), worked out by hand from floor/ceil((in + 2 pad - k) / d) + 1 and the drop
// of a last window starting at or past in + pad.
struct SizeRow {
  int64_t in, k, d, pad, floor_out, ceil_out;
};
const SizeRow size_rows[] = {
    {4, 2, 2, 0, 2, 2},  // exact fit
    {5, 2, 2, 0, 2, 3},  // ceil: 1.5 -> 2, third window [4, 6) is clipped to [4, 5)
    {7, 3, 2, 1, 4, 4},  // exact fit with padding
    {6, 3, 2, 1, 3, 4},  // ceil keeps a window starting at 5, inside the input
    {5, 2, 2, 1, 3, 3},  // ceil would add a 4th window starting at 5 = in, all in the right padding: dropped
    {5, 1, 3, 0, 2, 2},  // ceil would add a window starting at 6 > in (PyTorch drops it even without padding)
    {2, 3, 2, 0, 0, 1},  // floor: too small; ceil: one window clipped to the input
    {9, 2, 2, 1, 5, 5},  // ceil: 6 windows, the 6th starts at 10 - 1 = 9 = in: dropped
    {1, 1, 1, 0, 1, 1},  // a single element
    {1, 2, 2, 1, 1, 1},  // ceil: a 2nd window would start at 2 - 1 = 1 = in: dropped
    {3, 3, 1, 1, 3, 3},  // "same" pooling
    {6, 3, 3, 1, 2, 3},  // ceil: a 3rd window starting at 5, inside the input
};

}  // namespace

TEST_CASE("SpatialMaxPooling output sizes follow Torch in floor and ceil mode") {
  for (const auto& h : size_rows) {
    for (const auto& w : size_rows) {
      if (h.k / 2 < h.pad || w.k / 2 < w.pad) continue;
      nn::SpatialMaxPooling m(w.k, h.k, w.d, h.d, w.pad, h.pad);
      INFO(m.str(), " on ", h.in, "x", w.in);
      for (bool ceil : {false, true}) {
        ceil ? m.ceil() : m.floor();
        const int64_t oh = ceil ? h.ceil_out : h.floor_out, ow = ceil ? w.ceil_out : w.floor_out;
        if (oh == 0 || ow == 0) {
          CHECK_THROWS_WITH_AS(m.outputShape(zeros({3, h.in, w.in})), doctest::Contains("is too small"), Error);
          continue;
        }
        CHECK(m.outputShape(zeros({3, h.in, w.in})) == Shape{3, oh, ow});
        CHECK(m.outputShape(zeros({2, 3, h.in, w.in})) == Shape{2, 3, oh, ow});
      }
    }
  }
  CHECK(nn::SpatialMaxPooling(2, 2).ceil().ceil_mode);
  CHECK_FALSE(nn::SpatialMaxPooling(2, 2).ceil().floor().ceil_mode);
}

TEST_CASE("SpatialMaxPooling forward matches a hand computation") {
  // 4x4 input, 2x2 windows, stride 2
  const Tensor x = from_vector<float>({1, 5, 2, 0,    //
                                       3, 4, 8, 1,    //
                                       -1, -2, 6, 6,  //
                                       -3, -4, 7, 9},
                                      {1, 4, 4});
  nn::SpatialMaxPooling m(2, 2);
  CHECK(m.forward(x).to_vector<float>() == std::vector<float>{5, 8, -1, 9});
  CHECK(m.indices.to_vector<int64_t>() == std::vector<int64_t>{1, 6, 8, 15});
  // 3x3 windows, stride 2, padding 1: windows [-1, 2) and [1, 4) per dim
  nn::SpatialMaxPooling p(3, 3, 2, 2, 1, 1);
  CHECK(p.forward(x).to_vector<float>() == std::vector<float>{5, 8, 4, 9});
  // negative values: the padding never wins
  CHECK(p.forward(x.neg()).to_vector<float>() == std::vector<float>{-1, 0, 4, 4});
}

TEST_CASE("SpatialMaxPooling forward matches a naive loop (floor and ceil, padding, batch and not)") {
  Generator gen(20261122);
  INFO("size seed 20261122");
  struct Cfg {
    int64_t kW, kH, dW, dH, padW, padH;
  };
  const Cfg cfgs[] = {{2, 2, 2, 2, 0, 0}, {3, 3, 2, 2, 1, 1}, {3, 2, 1, 2, 1, 0}, {2, 3, 3, 1, 0, 1},
                      {5, 4, 2, 3, 2, 2}, {1, 1, 2, 2, 0, 0}, {4, 4, 4, 4, 2, 2}};
  for (const Cfg& c : cfgs) {
    for (bool ceil : {false, true}) {
      for (DType dt : {DType::Float32, DType::Float64}) {
        nn::SpatialMaxPooling m(c.kW, c.kH, c.dW, c.dH, c.padW, c.padH);
        if (ceil) m.ceil();
        const int64_t h = random_size(gen, c.kH, c.kH + 6), w = random_size(gen, c.kW, c.kW + 6);
        for (const Shape& shape : {Shape{random_size(gen, 1, 3), 3, h, w}, Shape{2, h, w}}) {
          INFO(m.str(), (ceil ? " ceil" : " floor"), " on ", shape_str(shape));
          const Tensor x = uniform(shape, -1, 1, gen, dt);
          const Tensor y = m.forward(x);
          CHECK(y.dtype() == dt);
          CHECK(max_abs_diff(y, pooltest::naive_pool(x, y.sizes(), {{c.kH, c.kW}, {c.dH, c.dW}, {c.padH, c.padW}})) ==
                0);
        }
      }
    }
  }
  // non-contiguous input
  nn::SpatialMaxPooling m(2, 2, 1, 1);
  const Tensor x = uniform({2, 5, 6}, -1, 1, gen).transpose(1, 2);
  const Tensor y = m.forward(x);
  CHECK(max_abs_diff(y, pooltest::naive_pool(x, y.sizes(), {{2, 2}, {1, 1}, {0, 0}})) == 0);
}

namespace {
// Max pooling of one [H x W] plane by the documented rule, in doubles: each window in
// row-major order, the first maximum and the first NaN win; indices are flat in the plane.
void rule_pool(const std::vector<double>& x, int64_t H, int64_t W, int64_t OH, int64_t OW, const int64_t k[2],
               const int64_t d[2], const int64_t pad[2], std::vector<double>& y, std::vector<int64_t>& idx) {
  for (int64_t oh = 0; oh < OH; ++oh) {
    for (int64_t ow = 0; ow < OW; ++ow) {
      int64_t best_i = -1;
      for (int64_t h = oh * d[0] - pad[0]; h < oh * d[0] - pad[0] + k[0]; ++h) {
        for (int64_t w = ow * d[1] - pad[1]; w < ow * d[1] - pad[1] + k[1]; ++w) {
          if (h < 0 || h >= H || w < 0 || w >= W) continue;
          const int64_t i = h * W + w;
          const bool take = best_i < 0 || (!std::isnan(x[best_i]) && (std::isnan(x[i]) || x[i] > x[best_i]));
          if (take) best_i = i;
        }
      }
      y.push_back(x[best_i]);
      idx.push_back(best_i);
    }
  }
}
}  // namespace

TEST_CASE("SpatialMaxPooling values and indices follow the rule on wide rows (ties, NaN, edges)") {
  // wide enough rows for the row-at-once path (Note [Max pooling by rows]), with windows
  // clipped at both edges, and the 2x2 stride-2 path on odd and even sizes; values from a small
  // set, so ties are common
  Generator gen(20261126);
  struct Cfg {
    int64_t kW, kH, dW, dH, padW, padH;
    bool ceil;
  };
  const Cfg cfgs[] = {{3, 3, 2, 2, 1, 1, false}, {3, 3, 1, 1, 1, 1, false}, {3, 2, 2, 1, 1, 0, true},
                      {5, 5, 2, 2, 2, 2, false}, {3, 3, 2, 2, 0, 0, true},  {2, 2, 1, 1, 0, 0, false},
                      {4, 3, 3, 2, 2, 1, true},  {2, 2, 2, 2, 0, 0, false}};  // the last: max_pool_2x2
  for (const Cfg& c : cfgs) {
    for (DType dt : {DType::Float32, DType::Float64}) {
      for (int64_t W : {c.kW, int64_t{37}, int64_t{64}}) {
        nn::SpatialMaxPooling m(c.kW, c.kH, c.dW, c.dH, c.padW, c.padH);
        if (c.ceil) m.ceil();
        const int64_t H = 11, planes = 3;
        std::vector<double> xv = uniform({planes * H * W}, 0, 1, gen, DType::Float64).to_vector<double>();
        for (double& v : xv) v = v < 0.05 ? NAN : v < 0.1 ? INFINITY : std::floor(v * 6) - 3;
        const Tensor x = from_vector<double>(xv, {1, planes, H, W}).to(dt);
        const Tensor y = m.forward(x);
        INFO(m.str(), " on W ", W, " ", name(dt));
        const int64_t OH = y.size(2), OW = y.size(3), k[2] = {c.kH, c.kW}, d[2] = {c.dH, c.dW},
                      pad[2] = {c.padH, c.padW};
        std::vector<double> want;
        std::vector<int64_t> want_idx;
        for (int64_t p = 0; p < planes; ++p) {
          const std::vector<double> plane(xv.begin() + p * H * W, xv.begin() + (p + 1) * H * W);
          rule_pool(plane, H, W, OH, OW, k, d, pad, want, want_idx);
        }
        const std::vector<double> got = y.to_vector<double>();
        CHECK(m.indices.to_vector<int64_t>() == want_idx);
        REQUIRE(got.size() == want.size());
        for (size_t i = 0; i < got.size(); ++i) {
          if (std::isnan(want[i]) ? !std::isnan(got[i]) : got[i] != want[i]) FAIL_CHECK("output ", i);
        }
      }
    }
  }
}

TEST_CASE("SpatialMaxPooling gradients: ties go to the first maximum, overlapping windows accumulate") {
  nn::SpatialMaxPooling m(2, 2);
  const Tensor ones_in = ones({1, 4, 4}, DType::Float64);
  m.forward(ones_in);
  const Tensor g = m.backward(ones_in, from_vector<double>({1, 2, 3, 4}, {1, 2, 2}));
  CHECK(g.to_vector<double>() == std::vector<double>{1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4, 0, 0, 0, 0, 0});
  // 2x2 windows at stride 1 over a 3x3 input whose maximum is the centre: all four pick it
  nn::SpatialMaxPooling o(2, 2, 1, 1);
  const Tensor x = from_vector<double>({0, 1, 0, 1, 9, 1, 0, 1, 0}, {1, 3, 3});
  CHECK(o.forward(x).to_vector<double>() == std::vector<double>{9, 9, 9, 9});
  CHECK(o.backward(x, from_vector<double>({1, 2, 3, 4}, {1, 2, 2})).to_vector<double>() ==
        std::vector<double>{0, 0, 0, 0, 10, 0, 0, 0, 0});
  // a NaN wins its window, as in THNN
  const Tensor nan_in = from_vector<double>({1, NAN, 2, 3}, {1, 2, 2});
  CHECK(std::isnan(m.forward(nan_in).item()));
}

TEST_CASE("SpatialMaxPooling gradient checks (batch and not, odd sizes, overlap, padding, ceil)") {
  Generator gen(7);
  INFO("size seed 7");
  struct Cfg {
    int64_t kW, kH, dW, dH, padW, padH;
    bool ceil;
  };
  const Cfg cfgs[] = {{2, 2, 2, 2, 0, 0, false}, {3, 3, 2, 2, 1, 1, true}, {3, 2, 1, 1, 1, 1, false},
                      {2, 3, 2, 1, 1, 0, true},  {3, 3, 3, 3, 0, 0, true}, {4, 2, 2, 1, 2, 1, true}};
  for (const Cfg& c : cfgs) {
    nn::SpatialMaxPooling m(c.kW, c.kH, c.dW, c.dH, c.padW, c.padH);
    if (c.ceil) m.ceil();
    const int64_t h = random_size(gen, c.kH, c.kH + 4), w = random_size(gen, c.kW, c.kW + 4);
    expect_gradients_ok(m, uniform({random_size(gen, 1, 3), 2, h, w}, -1, 1, gen, DType::Float64));
    expect_gradients_ok(m, uniform({1, 3, h, w}, -1, 1, gen, DType::Float64));
    expect_gradients_ok(m, uniform({2, h, w}, -1, 1, gen, DType::Float64));
  }
}

TEST_CASE("SpatialMaxPooling matches PyTorch's max_pool2d (ceil mode, padding, dropped windows)") {
  for (const auto& c : pooltest::reference_cases("max_2d")) {
    nn::SpatialMaxPooling m(c.spec.k[1], c.spec.k[0], c.spec.d[1], c.spec.d[0], c.spec.pad[1], c.spec.pad[0]);
    if (c.ceil) m.ceil();
    pooltest::expect_matches_reference(m, c);
  }
}

TEST_CASE("SpatialMaxPooling state round trip, printing and errors") {
  Generator gen(3);
  nn::SpatialMaxPooling a(3, 3, 2, 2, 1, 1), b(3, 3, 2, 2, 1, 1);
  expect_state_roundtrip_ok(a, b, uniform({2, 3, 7, 7}, -1, 1, gen));
  CHECK(a.stateDict().empty());
  CHECK(nn::SpatialMaxPooling(2, 2).str() == "nn.SpatialMaxPooling(2x2, 2,2)");
  CHECK(nn::SpatialMaxPooling(3, 2, 1, 2).str() == "nn.SpatialMaxPooling(3x2, 1,2)");
  CHECK(a.str() == "nn.SpatialMaxPooling(3x3, 2,2, 1,1)");
  CHECK(nn::SpatialMaxPooling(3, 3, 2, 2, 1, 0).ceil().str() == "nn.SpatialMaxPooling(3x3, 2,2, 1,0)");
  expect_prints_type(a);
  nn::SpatialMaxPooling c(3, 3, 2, 2, 1, 1);
  const Twin twin(std::move(c.ceil()));
  CHECK(twin.str() == "cudnn.SpatialMaxPooling(3x3, 2,2, 1,1)");
  CHECK(twin.ceil_mode);
  CHECK(twin.outputShape(zeros({1, 6, 6})) == Shape{1, 4, 4});

  nn::SpatialMaxPooling m(3, 3);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 2, 2, 2})),
                       "nn.SpatialMaxPooling::updateOutput: expected input of at least 3x3 (with padding), got "
                       "[1 x 2 x 2 x 2]: calculated output size [1 x 2 x 0 x 0] is too small",
                       Error);
  CHECK_THROWS_WITH_AS(nn::SpatialMaxPooling(4, 3, 1, 1, 1, 1).forward(zeros({2, 2, 1})),
                       "nn.SpatialMaxPooling::updateOutput: expected input of at least 3x4 (with padding), got "
                       "[2 x 2 x 1]: calculated output size [2 x 2 x 0] is too small",
                       Error);
  CHECK_THROWS_WITH_AS(
      m.forward(zeros({4, 4})),
      "nn.SpatialMaxPooling::updateOutput: expected 3D [C x H x W] or 4D [N x C x H x W] input, got [4 x 4]", Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 1, 2, 4, 4})), doctest::Contains("got [1 x 1 x 2 x 4 x 4]"), Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 0, 4})),
                       "nn.SpatialMaxPooling::updateOutput: expected non-empty spatial dims, got [1 x 0 x 4]", Error);
  CHECK_THROWS_WITH_AS(
      m.forward(zeros({1, 4, 4}, DType::Int64)),
      "nn.SpatialMaxPooling::updateOutput: expected float32 or float64 input, got int64 [1 x 4 x 4] on cpu", Error);
  CHECK_THROWS_WITH_AS(nn::SpatialMaxPooling(3, 3, 1, 1, 2, 1),
                       "nn.SpatialMaxPooling: expected padding <= kernel / 2, got kernel 3x3, stride 1,1, padding 2,1",
                       Error);
  CHECK_THROWS_WITH_AS(nn::SpatialMaxPooling(2, 0),
                       doctest::Contains("expected kernel and stride >= 1 and padding >= 0"), Error);
  CHECK_THROWS_AS(nn::SpatialMaxPooling(2, 2, 0, 1), Error);
  CHECK_THROWS_AS(nn::SpatialMaxPooling(2, 2, 1, 1, -1, 0), Error);

  // backward: gradOutput shape, and indices from a forward on this input's shape
  nn::SpatialMaxPooling fresh(2, 2);
  const Tensor x = uniform({1, 4, 4}, -1, 1, gen);
  CHECK_THROWS_WITH_AS(fresh.backward(x, zeros({1, 2, 2})),
                       "nn.SpatialMaxPooling::updateGradInput: expected updateOutput to have run on an input of this "
                       "shape, got input [1 x 4 x 4] after updateOutput on nothing",
                       Error);
  fresh.forward(uniform({1, 5, 5}, -1, 1, gen));
  CHECK_THROWS_WITH_AS(fresh.backward(x, zeros({1, 2, 2})), doctest::Contains("after updateOutput on [1 x 5 x 5]"),
                       Error);
  fresh.forward(x);
  CHECK_THROWS_WITH_AS(fresh.backward(x, zeros({1, 3, 2})),
                       "nn.SpatialMaxPooling::updateGradInput: expected gradOutput of the output's shape [1 x 2 x 2], "
                       "got [1 x 3 x 2]",
                       Error);
  CHECK_THROWS_WITH_AS(fresh.backward(x, zeros({1, 2, 2}, DType::Float64)),
                       doctest::Contains("expected gradOutput of input's dtype and device"), Error);

  // fields changed after construction are checked again
  fresh.padW = 2;
  CHECK_THROWS_WITH_AS(fresh.forward(x),
                       "nn.SpatialMaxPooling::updateOutput: expected padding <= kernel / 2, got kernel 2x2, stride "
                       "2,2, padding 2,0",
                       Error);
}

TEST_CASE("SpatialMaxPooling on a batch large enough to run in parallel") {
  Generator gen(23);
  nn::SpatialMaxPooling m(3, 3, 2, 2, 1, 1);
  m.ceil();
  const Tensor x = uniform({8, 16, 24, 23}, -1, 1, gen);
  CHECK(max_abs_diff(m.forward(x), pooltest::naive_pool(x, m.outputShape(x), {{3, 3}, {2, 2}, {1, 1}})) == 0);
  pooltest::expect_batch_matches_samples(m, x, gen);
}

TEST_CASE(
    "SpatialMaxPooling: a NaN window gives NaN and takes the gradient, +Inf wins, -Inf loses (Note [NaN and Inf])") {
  for (bool ceil : {false, true}) {
    INFO(std::string(ceil ? "ceil mode, a 5 x 5 input (extra windows)" : "floor mode"));
    nn::SpatialMaxPooling m(2, 2);
    m.ceil_mode = ceil;
    std::vector<double> v = {0.5, 0.25, -1, kInf, -0.5, kNaN, 2, 1, -kInf, -2, 3, 0.125, 0.75, -3, -0.25, 4};
    Shape shape{1, 4, 4};
    if (ceil) {  // a fifth row and column: ceil mode adds windows over them; a NaN in the corner one
      std::vector<double> w(25, -5.0);
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) w[r * 5 + c] = v[r * 4 + c];
      w[24] = kNaN;
      v = w;
      shape = {1, 5, 5};
    }
    const Tensor x = from_vector<double>(v, shape);
    const Tensor y = m.forward(x);
    const Tensor g = m.backward(x, ones(y.sizes(), DType::Float64));
    if (!ceil) {
      expect_values("output", y, {kNaN, kInf, 0.75, 4});
      expect_values("gradInput", g, {0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1});
    } else {
      expect_values("output", y, {kNaN, kInf, -5, 0.75, 4, -5, -5, -5, kNaN});
      CHECK(g.to_vector<double>()[24] == 1);  // the corner NaN took its window's gradient
      CHECK(g.to_vector<double>()[6] == 1);   // the first NaN too
    }
  }
}
