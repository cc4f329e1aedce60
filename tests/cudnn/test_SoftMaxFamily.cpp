// test_SoftMaxFamily.cpp: the six softmax twins (cudnn.SoftMax, LogSoftMax, SpatialSoftMax,
// SpatialLogSoftMax, VolumetricSoftMax, VolumetricLogSoftMax) against their nn modules, as one
// table: each row names the type pair, the shapes its nn module accepts (batch and not, batch 1,
// odd sizes) and a shape it refuses with nn's message; every row goes through the same checks
// (tests/support/SoftMaxTwinChecks.h): float32 with TF32 off, float64, float16, bfloat16, a
// non-contiguous input, fast mode (ignored by the log types: one log algorithm), large inputs,
// the convert round trip and errors, no steady-state allocation, NaN and +-Inf. A new softmax
// twin is one row.
#include <doctest/doctest.h>

#include "cudnn/core/Config.h"
#include "cudnn/LogSoftMax.h"
#include "cudnn/SoftMax.h"
#include "cudnn/SpatialLogSoftMax.h"
#include "cudnn/SpatialSoftMax.h"
#include "cudnn/VolumetricLogSoftMax.h"
#include "cudnn/VolumetricSoftMax.h"
#include "nn/LogSoftMax.h"
#include "nn/SoftMax.h"
#include "nn/SpatialLogSoftMax.h"
#include "nn/SpatialSoftMax.h"
#include "nn/VolumetricLogSoftMax.h"
#include "nn/VolumetricSoftMax.h"
#include "tests/support/SoftMaxTwinChecks.h"
#include "tests/support/SteadyState.h"

using namespace tensor;
using namespace testing;

namespace {

struct SoftMaxTwin {
  const char* name;
  std::vector<Shape> shapes;  // what the nn module accepts
  Shape good, bad;            // for the convert round trip, and a shape it refuses
  std::string badMessage;     // nn's message for `bad`
  // the checks of tests/support/SoftMaxTwinChecks.h, for this row's types
  void (*matches)(const std::vector<Shape>&, DType, bool, double, bool, uint64_t);
  void (*large)(const std::vector<Shape>&, uint64_t);
  void (*convertAndErrors)(const Shape&, const Shape&, const std::string&);
  void (*nonfinite)(const std::vector<Shape>&, uint64_t);
  std::function<nn::ModulePtr()> makeTwin;
};

template <class Nn, class Cu>
SoftMaxTwin row(const char* name, std::vector<Shape> shapes, Shape good, Shape bad, std::string badMessage) {
  return {name,
          std::move(shapes),
          std::move(good),
          std::move(bad),
          std::move(badMessage),
          &expect_softmax_twin_matches<Nn, Cu>,
          &expect_softmax_large_inputs<Nn, Cu>,
          &expect_softmax_convert_and_errors<Nn, Cu>,
          &expect_softmax_nonfinite<Nn, Cu>,
          [] { return nn::ModulePtr(std::make_shared<Cu>()); }};
}

const std::vector<SoftMaxTwin>& softmaxes() {
  const std::vector<Shape> flat = {{7}, {4, 9}, {1, 13}, {5, 3, 4}, {2, 5, 3, 4}, {1, 3, 1, 1}, {3, 1, 2, 5}};
  const std::vector<Shape> spatial = {{5, 3, 4}, {2, 5, 3, 4}, {1, 3, 1, 1}, {1, 7, 5, 3}, {3, 1, 2, 5}};
  const std::vector<Shape> volumetric = {
      {4, 2, 3, 3}, {2, 4, 2, 3, 3}, {1, 3, 1, 1, 1}, {1, 5, 3, 2, 3}, {3, 1, 2, 2, 3}};
  const std::string flatBad =
      "expected input of [n], [batch x n], [C x H x W] or [N x C x H x W], got [2 x 3 x 4 x 5 x 6]";
  const std::string spatialBad = "expected input of [C x H x W] or [N x C x H x W], got [2 x 3]";
  const std::string volumetricBad = "expected input of [C x T x H x W] or [N x C x T x H x W], got [2 x 3 x 4]";
  static const std::vector<SoftMaxTwin> rows = {
      row<nn::SoftMax, cudnn::SoftMax>("SoftMax", flat, {2, 5}, {2, 3, 4, 5, 6}, flatBad),
      row<nn::LogSoftMax, cudnn::LogSoftMax>("LogSoftMax", flat, {2, 5}, {2, 3, 4, 5, 6}, flatBad),
      row<nn::SpatialSoftMax, cudnn::SpatialSoftMax>("SpatialSoftMax", spatial, {2, 3, 2, 2}, {2, 3}, spatialBad),
      row<nn::SpatialLogSoftMax, cudnn::SpatialLogSoftMax>("SpatialLogSoftMax", spatial, {2, 3, 2, 2}, {2, 3},
                                                           spatialBad),
      row<nn::VolumetricSoftMax, cudnn::VolumetricSoftMax>("VolumetricSoftMax", volumetric, {2, 3, 2, 2, 2}, {2, 3, 4},
                                                           volumetricBad),
      row<nn::VolumetricLogSoftMax, cudnn::VolumetricLogSoftMax>("VolumetricLogSoftMax", volumetric, {2, 3, 2, 2, 2},
                                                                 {2, 3, 4}, volumetricBad),
  };
  return rows;
}

}  // namespace

TEST_CASE("softmax twins match nn in float32 (TF32 off) and float64") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (const SoftMaxTwin& t : softmaxes()) {
    INFO(t.name);
    t.matches(t.shapes, DType::Float32, false, 3, false, 23);
    t.matches(t.shapes, DType::Float64, false, 3, false, 23);
  }
}

TEST_CASE("softmax twins match nn in float16 and bfloat16") {
  for (const SoftMaxTwin& t : softmaxes()) {
    INFO(t.name);
    t.matches(t.shapes, DType::Float16, false, 2, false, 23);
    t.matches(t.shapes, DType::BFloat16, false, 2, false, 23);
  }
}

TEST_CASE("softmax twins match nn with a non-contiguous input") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (const SoftMaxTwin& t : softmaxes()) {
    INFO(t.name);
    t.matches(t.shapes, DType::Float32, true, 3, false, 23);
  }
}

TEST_CASE("softmax twins in fast mode (CUDNN_SOFTMAX_FAST) match nn on moderate inputs") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (const SoftMaxTwin& t : softmaxes()) {
    INFO(t.name);
    t.matches(t.shapes, DType::Float32, false, 3, true, 23);
    t.matches(t.shapes, DType::Float64, false, 3, true, 23);
  }
}

TEST_CASE("softmax twins (accurate) stay finite and match nn for large inputs") {
  for (const SoftMaxTwin& t : softmaxes()) {
    INFO(t.name);
    t.large(t.shapes, 29);
  }
}

TEST_CASE("softmax twins: convert round trip, printing and errors") {
  for (const SoftMaxTwin& t : softmaxes()) {
    INFO(t.name);
    t.convertAndErrors(t.good, t.bad, t.badMessage);
  }
}

TEST_CASE("softmax twins steady state: no device allocation after a warm-up") {
  const Device gpu = Device::cuda(0);
  for (const SoftMaxTwin& t : softmaxes()) {
    INFO(t.name);
    Generator gen(47);
    nn::ModulePtr m = t.makeTwin();
    m->to(gpu);
    expect_no_steady_state_allocations(*m, uniform(t.shapes.back(), -2, 2, gen).to(gpu));
  }
}

TEST_CASE("softmax twins: NaN and +-Inf inputs give nn's values (Note [NaN and Inf])") {
  for (const SoftMaxTwin& t : softmaxes()) {
    INFO(t.name);
    t.nonfinite(t.shapes, 67);
  }
}
