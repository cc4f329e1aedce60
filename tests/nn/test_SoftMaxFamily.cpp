// test_SoftMaxFamily.cpp: the per-location softmax modules (nn.SpatialSoftMax, SpatialLogSoftMax,
// VolumetricSoftMax, VolumetricLogSoftMax) as one table: each row names the type, whether it takes
// the log, its input shapes (one sample, batched, large) and a shape it refuses with its message;
// every row goes through the same checks: closed forms across channels, a reference over the
// channel dimension (batched and not, float32 on the parallel path, non-contiguous), finite
// differences over random shapes, a state round trip, printing and errors. A new type is one row;
// the types' own cases follow the table. (nn.SoftMax and nn.LogSoftMax, with Torch's dimension
// rules, keep their own suites.)
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <memory>

#include "nn/SpatialLogSoftMax.h"
#include "nn/SpatialSoftMax.h"
#include "nn/VolumetricLogSoftMax.h"
#include "nn/VolumetricSoftMax.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;

namespace {

struct SoftMaxType {
  const char* name;  // prints as "nn." + name
  std::function<std::shared_ptr<nn::SoftMaxBase>()> make;
  bool log;
  bool volumetric;  // [C x T x H x W] samples (else [C x H x W])
  Shape sample;     // one sample of 3 channels, for the closed forms and the dtype error
  Shape unbatched;  // [5 x ...] and [2 x 5 x ...] compared with the reference
  Shape batched;
  Shape large;  // float32, large enough for the parallel path
  uint64_t gradientSeed;
  Shape bad;  // a rank it refuses, and its message
  std::string badMessage;
};

template <class M>
std::function<std::shared_ptr<nn::SoftMaxBase>()> make() {
  return [] { return std::make_shared<M>(); };
}

const std::vector<SoftMaxType>& types() {
  // one row per type, laid out by hand
  // clang-format off
  static const std::vector<SoftMaxType> rows = {
      {"SpatialSoftMax", make<nn::SpatialSoftMax>(), false, false, {3, 2, 2}, {5, 3, 4}, {2, 5, 3, 4}, {4, 16, 32, 33},
       20261208, {2, 3}, "expected input of [C x H x W] or [N x C x H x W], got [2 x 3]"},
      {"SpatialLogSoftMax", make<nn::SpatialLogSoftMax>(), true, false, {3, 2, 2}, {5, 3, 4}, {2, 5, 3, 4},
       {4, 16, 32, 33}, 20261209, {2, 3, 4, 5, 6},
       "expected input of [C x H x W] or [N x C x H x W], got [2 x 3 x 4 x 5 x 6]"},
      {"VolumetricSoftMax", make<nn::VolumetricSoftMax>(), false, true, {3, 2, 2, 2}, {5, 2, 3, 4}, {2, 5, 2, 3, 4},
       {4, 16, 8, 16, 9}, 20261210, {2, 3, 4},
       "expected input of [C x T x H x W] or [N x C x T x H x W], got [2 x 3 x 4]"},
      {"VolumetricLogSoftMax", make<nn::VolumetricLogSoftMax>(), true, true, {3, 2, 2, 2}, {5, 2, 3, 4},
       {2, 5, 2, 3, 4}, {4, 16, 8, 16, 9}, 20261211, {2, 3, 4, 5, 6, 7},
       "expected input of [C x T x H x W] or [N x C x T x H x W], got [2 x 3 x 4 x 5 x 6 x 7]"},
  };
  // clang-format on
  return rows;
}

// (log-)softmax over `dim` with the tensor library's own operators
Tensor reference(const Tensor& x, int64_t dim, bool log) {
  const Tensor e = x.sub(x.max(dim, true).first).exp();
  return log ? x.sub(x.max(dim, true).first).sub(e.sum(dim, true).log()) : e.div(e.sum(dim, true));
}

}  // namespace

TEST_CASE("per-location softmaxes across channels: [0, ln 2, ln 3] gives (log) [1/6, 2/6, 3/6]") {
  for (const SoftMaxType& t : types()) {
    INFO(t.name);
    auto m = t.make();
    // unbatched input of 3 channels; every location holds [0, ln 2, ln 3] shifted by its own offset
    Tensor x = zeros(t.sample, DType::Float64);
    const int64_t per = x.numel() / 3;
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < per; ++i) x.flatten().set({c * per + i}, std::log(c + 1.0) + 100.0 * i);
    const Tensor y = m->forward(x);
    REQUIRE(y.sizes() == x.sizes());
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < per; ++i) {
        const double p = (c + 1) / 6.0;
        CHECK(y.flatten().get({c * per + i}) == doctest::Approx(t.log ? std::log(p) : p).epsilon(1e-12));
      }
    // large inputs stay finite (exp(1000) overflows without the max subtracted)
    CHECK_FALSE(has_nonfinite(m->forward(full(t.sample, 1000.0, DType::Float32))));
    CHECK(m->output.flatten().get({0}) == doctest::Approx(t.log ? -std::log(3.0) : 1.0 / 3).epsilon(1e-6));
  }
}

TEST_CASE("per-location softmaxes match a reference over the channel dimension, batched and not") {
  for (const SoftMaxType& t : types()) {
    INFO(t.name);
    auto m = t.make();
    Generator gen(13);
    const Tensor xu = uniform(t.unbatched, -4, 4, gen, DType::Float64);
    CHECK(max_abs_diff(m->forward(xu), reference(xu, 0, t.log)) < 1e-14);
    const Tensor xb = uniform(t.batched, -4, 4, gen, DType::Float64);
    CHECK(max_abs_diff(m->forward(xb), reference(xb, 1, t.log)) < 1e-14);
    const Tensor probabilities = t.log ? m->output.exp() : m->output;
    CHECK(max_abs_diff(probabilities.sum(1), ones(m->output.sum(1).sizes(), DType::Float64)) < 1e-14);
    // float32, large enough for the parallel path, and a non-contiguous input
    const Tensor xl = uniform(t.large, -20, 20, gen, DType::Float32);
    CHECK(max_abs_diff(m->forward(xl), reference(xl.to(DType::Float64), 1, t.log)) < 1e-5);
    const Tensor xt = xb.transpose(0, 1).contiguous().transpose(0, 1);
    REQUIRE_FALSE(xt.is_contiguous());
    CHECK(max_abs_diff(m->forward(xt), reference(xb, 1, t.log)) < 1e-14);
  }
}

TEST_CASE("per-location softmaxes: gradients (random shapes, batched and not)") {
  for (const SoftMaxType& t : types()) {
    Generator gen(t.gradientSeed);
    INFO(t.name, ", size seed ", t.gradientSeed);
    for (int trial = 0; trial < 3; ++trial) {
      const int64_t c = random_size(gen, 1, 4), h = random_size(gen, 1, 3), w = random_size(gen, 1, 3);
      Shape sample = {c, h, w};
      if (t.volumetric) sample.insert(sample.begin() + 1, random_size(gen, 1, 3));  // T, drawn after W
      const int64_t n = random_size(gen, 1, 3);
      Shape batch = sample;
      batch.insert(batch.begin(), n);
      auto m = t.make();
      m->to(DType::Float64);
      expect_gradients_ok(*m, uniform(sample, -2, 2, gen, DType::Float64));
      expect_gradients_ok(*m, uniform(batch, -2, 2, gen, DType::Float64));
    }
  }
}

TEST_CASE("per-location softmaxes: state round trip, printing and errors") {
  for (const SoftMaxType& t : types()) {
    INFO(t.name);
    Generator gen(2);
    auto a = t.make(), b = t.make();
    expect_state_roundtrip_ok(*a, *b, uniform(t.batched, -2, 2, gen));
    CHECK(a->str() == std::string("nn.") + t.name);
    expect_prints_type(*a);
    CHECK(a->isLog() == t.log);
    CHECK_THROWS_WITH_AS(a->forward(zeros(t.bad)),
                         (std::string("nn.") + t.name + "::updateOutput: " + t.badMessage).c_str(), Error);
    CHECK_THROWS_WITH_AS(a->forward(zeros(t.sample, DType::Int64)),
                         doctest::Contains("::updateOutput: expected float32 or float64 input, got int64"), Error);
  }
}

// ---- the types' own cases ----

TEST_CASE("SpatialSoftMax: the planes at a NaN's or +Inf's position are NaN, the others finite (Note [NaN and Inf])") {
  nn::SpatialSoftMax m;
  // [1 x 2 x 1 x 3]: position 0 holds a NaN, position 1 a +Inf, position 2 a -Inf
  const Tensor x = from_vector<double>({kNaN, kInf, -kInf, 1, 2, 3}, {1, 2, 1, 3});
  expect_values("output", m.forward(x), {kNaN, kNaN, 0, kNaN, kNaN, 1});
}
