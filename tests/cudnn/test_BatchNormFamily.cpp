// test_BatchNormFamily.cpp: the three batch-normalisation twins (cudnn.BatchNormalization,
// SpatialBatchNormalization, VolumetricBatchNormalization) against their nn modules, as one table:
// each row names the type pair and its input shapes; every row goes through the same checks
// (tests/support/BatchNormTwinChecks.h): training and evaluation (forward, running statistics,
// both backward passes), affine on and off, several eps and momentum values, batch 1, single
// samples in evaluation, float32 with TF32 off, float64, float16 and bfloat16 data with float32
// parameters, a non-contiguous input, updateGradInput/accGradParameters separately, the convert
// round trip and errors, no steady-state allocation, NaN and +-Inf. A new batch-norm twin is one
// row; each type's own shape errors follow the table.
#include <doctest/doctest.h>

#include <functional>

#include "cudnn/BatchNormalization.h"
#include "cudnn/core/Config.h"
#include "cudnn/SpatialBatchNormalization.h"
#include "cudnn/VolumetricBatchNormalization.h"
#include "nn/BatchNormalization.h"
#include "nn/SpatialBatchNormalization.h"
#include "nn/VolumetricBatchNormalization.h"
#include "tests/support/BatchNormTwinChecks.h"
#include "tests/support/SteadyState.h"

using namespace tensor;
using namespace testing;

namespace {

struct BatchNormTwin {
  const char* name = "";
  std::vector<Shape> batched;    // batch 3, batch 1, odd sizes (with batch 2 the training gradient is ~0:
                                 // xhat is +-1 whatever x, so relative errors say nothing)
  std::vector<Shape> batched16;  // 16-bit data: at least 6 values per channel (with fewer, the training
                                 // gradient's cancellation amplifies the inputs' rounding beyond the tolerances)
  std::vector<Shape> single;     // single samples, in evaluation
  Shape errorShape;              // a good input for expect_batch_norm_errors
  int64_t printedPlanes = 0;     // Cu(printedPlanes).str() == printed
  std::string printed;
  // the checks of tests/support/BatchNormTwinChecks.h, for this row's types
  std::function<void(const std::vector<Shape>&, bool batched, bool training, DType, bool noncontiguous)> matches;
  std::function<void()> parameterDtypes;
  std::function<void(const Shape&, DType)> runningStatistics;
  std::function<void(const Shape&, bool training)> separateGradients;
  std::function<void()> convertAndErrors;
  std::function<nn::ModulePtr(int64_t C)> makeTwin;
  std::function<void()> nonfinite;
};

template <class Nn, class Cu>
BatchNormTwin row(const char* name, std::vector<Shape> batched, std::vector<Shape> batched16, std::vector<Shape> single,
                  Shape errorShape, int64_t printedPlanes, std::string printed) {
  BatchNormTwin r;
  r.name = name;
  r.batched = std::move(batched);
  r.batched16 = std::move(batched16);
  r.single = std::move(single);
  r.errorShape = std::move(errorShape);
  r.printedPlanes = printedPlanes;
  r.printed = std::move(printed);
  r.matches = [](const std::vector<Shape>& shapes, bool batched_, bool training, DType dt, bool noncontiguous) {
    expect_batch_norm_twin_matches<Nn, Cu>(shapes, batched_, training, dt, noncontiguous);
  };
  r.parameterDtypes = [] { expect_batch_norm_parameter_dtypes<Cu>(3); };
  r.runningStatistics = [](const Shape& s, DType dt) { expect_batch_norm_running_statistics<Nn, Cu>(s, dt); };
  r.separateGradients = [](const Shape& s, bool training) {
    expect_batch_norm_separate_gradients<Nn, Cu>(s, training);
  };
  r.convertAndErrors = [first = r.batched[0], planes = r.printedPlanes, str = r.printed, good = r.errorShape] {
    expect_batch_norm_convert_roundtrip<Nn>(first);
    CHECK(Cu(planes).str() == str);
    expect_batch_norm_errors<Cu>(good);
  };
  r.makeTwin = [](int64_t C) { return nn::ModulePtr(std::make_shared<Cu>(C)); };
  r.nonfinite = [shapes = r.batched] { expect_batch_norm_nonfinite<Nn, Cu>(shapes); };
  return r;
}

const std::vector<BatchNormTwin>& batch_norms() {
  static const std::vector<BatchNormTwin> rows = {
      // [N x C]; single samples [C]
      row<nn::BatchNormalization, cudnn::BatchNormalization>("BatchNormalization", {{8, 4}, {3, 5}, {5, 7}},
                                                             {{8, 4}, {5, 7}, {16, 3}}, {{4}, {1}}, {6, 4}, 64,
                                                             "cudnn.BatchNormalization (2D) (64)"),
      // [N x C x H x W]: batch 1, a 1x1 image, odd sizes; single samples [C x H x W]
      row<nn::SpatialBatchNormalization, cudnn::SpatialBatchNormalization>(
          "SpatialBatchNormalization", {{4, 3, 5, 5}, {1, 3, 4, 5}, {3, 2, 1, 1}, {2, 5, 3, 7}},
          {{4, 3, 5, 5}, {1, 3, 4, 5}, {2, 5, 3, 7}}, {{3, 4, 5}, {2, 1, 1}}, {2, 4, 3, 3}, 16,
          "cudnn.SpatialBatchNormalization (4D) (16)"),
      // [N x C x T x H x W]: batch 1, odd sizes; single samples [C x T x H x W]
      row<nn::VolumetricBatchNormalization, cudnn::VolumetricBatchNormalization>(
          "VolumetricBatchNormalization", {{2, 3, 3, 4, 5}, {1, 3, 2, 3, 4}, {3, 2, 1, 2, 1}},
          {{2, 3, 3, 4, 5}, {1, 3, 2, 3, 4}, {3, 2, 1, 2, 1}}, {{3, 2, 3, 4}, {2, 1, 1, 1}}, {2, 4, 2, 2, 3}, 8,
          "cudnn.VolumetricBatchNormalization (5D) (8)"),
  };
  return rows;
}

}  // namespace

TEST_CASE("batch-norm twins: training matches nn in float32 (TF32 off) and float64") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (const BatchNormTwin& t : batch_norms()) {
    INFO(t.name);
    t.matches(t.batched, true, true, DType::Float32, false);
    t.matches(t.batched, true, true, DType::Float64, false);
  }
}

TEST_CASE("batch-norm twins: evaluation matches nn (fixed-statistics backward), batched and single samples") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (const BatchNormTwin& t : batch_norms()) {
    INFO(t.name);
    for (DType dt : {DType::Float32, DType::Float64}) {
      t.matches(t.batched, true, false, dt, false);
      t.matches(t.single, false, false, dt, false);
    }
  }
}

TEST_CASE("batch-norm twins: float16 and bfloat16 data with float32 parameters, training and evaluation") {
  for (const BatchNormTwin& t : batch_norms()) {
    INFO(t.name);
    t.parameterDtypes();
    for (DType dt : {DType::Float16, DType::BFloat16}) {
      t.matches(t.batched16, true, true, dt, false);
      t.matches(t.batched16, true, false, dt, false);
      t.matches(t.single, false, false, dt, false);
    }
  }
}

TEST_CASE("batch-norm twins with a non-contiguous input, training and evaluation") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (const BatchNormTwin& t : batch_norms()) {
    INFO(t.name);
    t.matches(t.batched, true, true, DType::Float32, true);
    t.matches(t.batched, true, false, DType::Float32, true);
  }
}

TEST_CASE("batch-norm twins: running statistics over several steps (momentum 0.2, unbiased variance)") {
  for (const BatchNormTwin& t : batch_norms()) {
    INFO(t.name);
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      for (const Shape& s : t.batched16) t.runningStatistics(s, dt);
    }
  }
}

TEST_CASE("batch-norm twins: updateGradInput and accGradParameters separately, training and evaluation") {
  for (const BatchNormTwin& t : batch_norms()) {
    INFO(t.name);
    for (const Shape& s : t.batched) {
      t.separateGradients(s, true);
      t.separateGradients(s, false);
    }
  }
}

TEST_CASE("batch-norm twins: convert round trip, printing and errors") {
  for (const BatchNormTwin& t : batch_norms()) {
    INFO(t.name);
    t.convertAndErrors();
  }
}

TEST_CASE("batch-norm twins steady state: no device allocation after a warm-up") {
  const Device gpu = Device::cuda(0);
  for (const BatchNormTwin& t : batch_norms()) {
    Generator gen(47);
    for (bool training : {true, false}) {
      for (DType dt : {DType::Float32, DType::Float16}) {
        INFO(t.name, std::string(training ? " training " : " evaluation "), std::string(name(dt)));
        const Shape& s = t.batched[0];
        nn::ModulePtr m = t.makeTwin(s[1]);
        m->to(gpu);
        m->to(dt);
        if (!training) m->evaluate();
        expect_no_steady_state_allocations(*m, batch_norm_input(s, true, gen).to(gpu, dt));
      }
    }
  }
}

TEST_CASE("batch-norm twins: NaN and +-Inf inputs give nn's values, training and evaluation (Note [NaN and Inf])") {
  for (const BatchNormTwin& t : batch_norms()) {
    INFO(t.name);
    t.nonfinite();
  }
}

// ---- each type's own shape errors ----

TEST_CASE("cudnn.BatchNormalization: plane count, rank, single samples in training") {
  const Device gpu = Device::cuda(0);
  cudnn::BatchNormalization m(4);
  m.to(gpu);
  CHECK_THROWS_WITH_AS(m.forward(zeros({8, 3}, DType::Float32, gpu)),
                       "cudnn.BatchNormalization::updateOutput: expected input of [N x C] with C = 4, got [8 x 3]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3, 4}, DType::Float32, gpu)),
                       "cudnn.BatchNormalization::updateOutput: expected input of [N x C] (or [C] in evaluation), got "
                       "[2 x 3 x 4]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({4}, DType::Float32, gpu)),
                       "cudnn.BatchNormalization::updateOutput: expected input of [N x C] (or [C] in evaluation), got "
                       "[4] in training",
                       Error);
  // one value per channel: no unbiased variance; an error, and nothing is updated
  CHECK_THROWS_WITH_AS(m.forward(ones({1, 4}, DType::Float32, gpu)),
                       "cudnn.BatchNormalization::updateOutput: expected more than 1 value per channel in training, "
                       "got input [1 x 4]",
                       Error);
  CHECK(m.running_mean.to_vector<float>() == std::vector<float>(4, 0));
  CHECK(m.running_var.to_vector<float>() == std::vector<float>(4, 1));
  m.evaluate();
  CHECK(m.forward(ones({1, 4}, DType::Float32, gpu)).sizes() == Shape{1, 4});
  CHECK(m.forward(ones({4}, DType::Float32, gpu)).sizes() == Shape{4});
}

TEST_CASE("cudnn.SpatialBatchNormalization: plane count, rank, one value per channel in training") {
  const Device gpu = Device::cuda(0);
  cudnn::SpatialBatchNormalization m(4);
  m.to(gpu);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3, 5, 5}, DType::Float32, gpu)),
                       "cudnn.SpatialBatchNormalization::updateOutput: expected input of [N x C x H x W] with C = 4, "
                       "got [2 x 3 x 5 x 5]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 4}, DType::Float32, gpu)),
                       "cudnn.SpatialBatchNormalization::updateOutput: expected input of [N x C x H x W] (or "
                       "[C x H x W] in evaluation), got [2 x 4]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(ones({1, 4, 1, 1}, DType::Float32, gpu)),
                       "cudnn.SpatialBatchNormalization::updateOutput: expected more than 1 value per channel in "
                       "training, got input [1 x 4 x 1 x 1]",
                       Error);
  m.evaluate();
  CHECK(m.forward(ones({4, 3, 2}, DType::Float32, gpu)).sizes() == Shape{4, 3, 2});
}

TEST_CASE("cudnn.VolumetricBatchNormalization: plane count, rank in training") {
  const Device gpu = Device::cuda(0);
  cudnn::VolumetricBatchNormalization m(4);
  m.to(gpu);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3, 2, 2, 2}, DType::Float32, gpu)),
                       "cudnn.VolumetricBatchNormalization::updateOutput: expected input of [N x C x T x H x W] with "
                       "C = 4, got [2 x 3 x 2 x 2 x 2]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 4, 3, 3}, DType::Float32, gpu)),
                       "cudnn.VolumetricBatchNormalization::updateOutput: expected input of [N x C x T x H x W] (or "
                       "[C x T x H x W] in evaluation), got [2 x 4 x 3 x 3] in training",
                       Error);
  m.evaluate();
  CHECK(m.forward(ones({4, 2, 3, 2}, DType::Float32, gpu)).sizes() == Shape{4, 2, 3, 2});
}
