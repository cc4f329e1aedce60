// test_CriterionFamily.cpp: the five cudnn criteria (ClassNLL, CrossEntropy, MSE,
// SpatialCrossEntropy, VolumetricCrossEntropy) against their nn criteria, as one table: the rows
// of tests/support/CriterionTable.h, each its input shapes, value range and seed, go through the
// same checks (tests/support/ClassCriterionCases.h): every dtype, sizeAverage on and off, and for
// the class criteria class weights, ignored targets (-100 and an ignoreIndex naming a class) and
// NaN and +-Inf; convert round trips. The types' own cases follow the table: scalar targets, a
// batch spread over the NLL kernel's threads, targets of any dtype, every target ignored,
// stability for large scores and logProbs, float16 sums beyond float16's range, non-contiguous
// inputs, printing and nn's error messages.
#include <doctest/doctest.h>

#include <cmath>

#include "cudnn/ClassNLLCriterion.h"
#include "cudnn/CrossEntropyCriterion.h"
#include "cudnn/MSECriterion.h"
#include "cudnn/SpatialCrossEntropyCriterion.h"
#include "cudnn/VolumetricCrossEntropyCriterion.h"
#include "nn/ClassNLLCriterion.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/MSECriterion.h"
#include "nn/SpatialCrossEntropyCriterion.h"
#include "nn/VolumetricCrossEntropyCriterion.h"
#include "tests/support/ClassCriterionCases.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
}  // namespace

TEST_CASE("criterion twins match nn in every dtype (sizeAverage; weights and ignoreIndex; batch, single, odd sizes)") {
  for (const CriterionSpec& s : criterion_table()) expect_criterion_twin_matches(s);
}

TEST_CASE("class criterion twins: NaN and +-Inf inputs give nn's loss and gradient (Note [NaN and Inf])") {
  for (const CriterionSpec& s : criterion_table()) {
    if (s.classes) expect_class_criterion_nonfinite(s);
  }
}

TEST_CASE("criterion twins: convert round trip (with weights, sizeAverage off and an ignoreIndex; a float target)") {
  Generator gen(3804);
  for (const CriterionSpec& s : criterion_table()) {
    INFO(s.type);
    const Tensor x = spec_input(s, s.input).to(DType::Float32), t = s.target(s.input);
    expect_criterion_convert_roundtrip(s.makeWith({}, true, -100), x, t);
    expect_criterion_convert_roundtrip(s.makeWith({}, false, -100), x, t);
    if (!s.classes) continue;
    const Tensor w = uniform({s.input[1]}, 0.1, 2, gen);
    expect_criterion_convert_roundtrip(s.makeWith(w, true, 1), x, t);
    expect_criterion_convert_roundtrip(s.makeWith(w, false, 2), x, t.to(DType::Float64));
  }
}

// ---- ClassNLLCriterion: its own cases

TEST_CASE("cudnn.ClassNLLCriterion: a scalar target, and a batch spread over the kernel's threads in every dtype") {
  // a scalar target for a single sample
  nn::ClassNLLCriterion ref;
  cudnn::ClassNLLCriterion twin;
  Generator gen(3805);
  expect_twin_criterion_matches(ref, twin, uniform({4}, -3, 0, gen, DType::Float64), scalar_tensor(1, DType::Int64));
  // many samples: the reduction spreads over all of the kernel's threads, in every dtype
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    nn::ClassNLLCriterion big(uniform({10}, 0.1, 2, gen, DType::Float64));
    cudnn::ClassNLLCriterion bigTwin(big.weights);
    expect_twin_criterion_matches(big, bigTwin, uniform({3000, 10}, -3, 0, gen, DType::Float64),
                                  class_targets(gen, {3000}, 10, 7), dt, TwinTolerance::for_dtype(dt));
  }
}

TEST_CASE("cudnn.ClassNLLCriterion takes targets of any dtype holding integers") {
  Generator gen(3802);
  nn::ClassNLLCriterion ref;
  ref.to(DType::Float64);
  cudnn::ClassNLLCriterion twin;
  twin.to(gpu);
  twin.to(DType::Float64);
  const Tensor x = uniform({6, 4}, -3, 0, gen, DType::Float64);
  const Tensor t = from_vector<double>({1, 0, 3, 2, 2, 0});
  const double want = ref.forward(x, t);
  const Tensor gwant = ref.backward(x, t).clone();
  for (DType dt : {DType::Int64, DType::UInt8, DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    INFO("target ", name(dt));
    const Tensor tg = t.to(gpu, dt);
    CHECK(twin.forward(x.to(gpu), tg) == doctest::Approx(want).epsilon(1e-14));
    CHECK(max_abs_diff(twin.backward(x.to(gpu), tg), gwant) < 1e-15);
  }
  // non-contiguous input and target
  const Tensor xt = x.t().contiguous().to(gpu).t();
  const Tensor tt = from_vector<int64_t>({1, 9, 0, 9, 3, 9, 2, 9, 2, 9, 0, 9}, {6, 2}).to(gpu).select(1, 0);
  CHECK(twin.forward(xt, tt) == doctest::Approx(want).epsilon(1e-14));
  CHECK(max_abs_diff(twin.backward(xt, tt), gwant) < 1e-15);
}

TEST_CASE("cudnn.ClassNLLCriterion with every target ignored gives loss 0 and zero gradients") {
  Generator gen(3803);
  for (bool weighted : {false, true}) {
    cudnn::ClassNLLCriterion twin(weighted ? uniform({4}, 0.1, 2, gen) : Tensor(), true, 0);
    twin.to(gpu);
    const Tensor x = uniform({3, 4}, -3, 0, gen, DType::Float32, gpu);
    const Tensor t = zeros({3}, DType::Int64, gpu);
    CHECK(twin.forward(x, t) == 0);
    CHECK(twin.backward(x, t).abs().sum().item() == 0);
  }
}

TEST_CASE("cudnn.ClassNLLCriterion errors name the bad target and its position, as nn's do") {
  cudnn::ClassNLLCriterion w(from_vector<float>({1, 2, 3}));
  CHECK(w.str() == "cudnn.ClassNLLCriterion");
  w.to(gpu);
  const Tensor x = zeros({2, 3}, DType::Float32, gpu);
  CHECK_THROWS_WITH_AS(w.forward(x, from_vector<int64_t>({1, 3}).to(gpu)),
                       "cudnn.ClassNLLCriterion::updateOutput: expected target class indices in [0, 2] (0-based) or "
                       "ignoreIndex -100, got 3 at target[1]",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(x, from_vector<int64_t>({-1, 0}).to(gpu)),
                       "cudnn.ClassNLLCriterion::updateOutput: expected target class indices in [0, 2] (0-based) or "
                       "ignoreIndex -100, got -1 at target[0]",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(x, from_vector<float>({0, 1.5f}).to(gpu)),
                       "cudnn.ClassNLLCriterion::updateOutput: expected integer class indices in the target, got 1.5 "
                       "at target[1]",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(x, from_vector<double>({NAN, 1}).to(gpu)),
                       "cudnn.ClassNLLCriterion::updateOutput: expected integer class indices in the target, got nan "
                       "at target[0]",
                       Error);
  // backward does not wait for the device to check targets: a bad one contributes nothing
  const Tensor g = w.backward(x, from_vector<int64_t>({1, 7}).to(gpu));
  CHECK(g.get({0, 1}) == doctest::Approx(-1.0));
  CHECK(g.select(0, 1).abs().sum().item() == 0);
  CHECK_THROWS_WITH_AS(w.forward(x, from_vector<int64_t>({1, 2})),
                       "cudnn.ClassNLLCriterion::updateOutput: expected the target on cuda:0 (the input's device), "
                       "got int64 [2] on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(zeros({2, 3}), from_vector<int64_t>({1, 2})),
                       "cudnn.ClassNLLCriterion::updateOutput: expected input on a CUDA device, got float32 [2 x 3] "
                       "on cpu (move it with .to(tensor::Device::cuda()))",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(x, zeros({2, 1}, DType::Int64, gpu)),
                       "cudnn.ClassNLLCriterion::updateOutput: expected a target of [2] for input [2 x 3], got [2 x 1]",
                       Error);
  CHECK_THROWS_WITH_AS(w.backward(zeros({2, 3, 1}, DType::Float32, gpu), zeros({2}, DType::Int64, gpu)),
                       "cudnn.ClassNLLCriterion::updateGradInput: expected input of [classes] or [batch x classes], "
                       "got [2 x 3 x 1]",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(zeros({2, 4}, DType::Float32, gpu), zeros({2}, DType::Int64, gpu)),
                       "cudnn.ClassNLLCriterion::updateOutput: expected weights of [4] for 4 classes (input [2 x 4]), "
                       "got [3]",
                       Error);
  CHECK_THROWS_WITH_AS(
      w.forward(zeros({2, 3}, DType::Float64, gpu), zeros({2}, DType::Int64, gpu)),
      doctest::Contains("expected input of weights's dtype and device (float32 on cuda:0), got float64"), Error);
  CHECK_THROWS_WITH_AS(w.forward(zeros({2, 3}, DType::Int64, gpu), zeros({2}, DType::Int64, gpu)),
                       "cudnn.ClassNLLCriterion::updateOutput: expected a float32, float64, float16 or bfloat16 input, "
                       "got int64 [2 x 3] on cuda:0",
                       Error);
}

// ---- CrossEntropyCriterion: its own cases

TEST_CASE("cudnn.CrossEntropyCriterion: a scalar target for a single sample") {
  nn::CrossEntropyCriterion ref;
  cudnn::CrossEntropyCriterion twin;
  Generator gen(3902);
  expect_twin_criterion_matches(ref, twin, uniform({4}, -3, 3, gen, DType::Float64), scalar_tensor(1, DType::Int64));
}

TEST_CASE("cudnn.CrossEntropyCriterion is stable for large scores and keeps logProbs") {
  const Tensor x = from_vector<double>({1000, 0, -1000, -1000, 1000, 999}, {2, 3});
  for (DType dt : {DType::Float32, DType::Float64}) {
    INFO(name(dt));
    cudnn::CrossEntropyCriterion ce({}, false);
    ce.to(gpu);
    const Tensor xg = x.to(gpu, dt);
    CHECK(ce.forward(xg, from_vector<int64_t>({0, 1}).to(gpu)) ==
          doctest::Approx(std::log1p(std::exp(-1.0))).epsilon(1e-6));
    CHECK(ce.forward(xg, from_vector<int64_t>({1, 2}).to(gpu)) ==
          doctest::Approx(1000 + 1 + std::log1p(std::exp(-1.0))).epsilon(1e-6));
    CHECK_FALSE(has_nonfinite(ce.backward(xg, from_vector<int64_t>({1, 2}).to(gpu))));
    CHECK(ce.logProbs.is_cuda());
    CHECK(ce.logProbs.sizes() == x.sizes());
    CHECK(ce.logProbs.get({1, 1}) == doctest::Approx(-std::log1p(std::exp(-1.0))).epsilon(1e-6));
  }
  // 16-bit scores compute in float32; logProbs and gradInput keep the input's dtype
  cudnn::CrossEntropyCriterion h;
  h.to(gpu);
  const Tensor xh = from_vector<double>({1, 2, 3, 0.5, -1, 0}, {2, 3}).to(gpu, DType::Float16);
  h.forward(xh, from_vector<int64_t>({2, 0}).to(gpu));
  CHECK(h.logProbs.dtype() == DType::Float16);
  CHECK(h.backward(xh, from_vector<int64_t>({2, 0}).to(gpu)).dtype() == DType::Float16);
}

TEST_CASE(
    "cudnn.CrossEntropyCriterion over many classes: rows in registers and rows read twice (Note [Online "
    "log-sum-exp]), NaN and +-Inf at a row's unaligned ends and inside it; loss, gradient and logProbs as nn's") {
  // 2001 and 4099 classes: each row held in a block's registers (float64's 4099 read twice);
  // 40007: too long for them, read twice. Every row but the first starts off a 16-byte boundary,
  // so the kernels read each row's ends element by element and its middle in packs, over
  // several warps.
  for (const int64_t classes : {int64_t(2001), int64_t(4099), int64_t(40007)}) {
    const int64_t rows = 7;
    Generator gen(3903);
    const Tensor base = uniform({rows, classes}, -3, 3, gen, DType::Float64);
    Tensor t = class_targets(gen, {rows}, classes);
    t.set({3}, 1500);  // row 3's target is one of its -Inf scores: an infinite loss, finite gradients
    Tensor odd = base.clone();
    odd.set({1, 1}, NAN);                  // row 1: NaN near its start
    odd.set({2, 2000}, INFINITY);          // row 2: +Inf in its middle
    odd.set({3, 1500}, -INFINITY);         // row 3: -Inf scores leave the row finite
    odd.set({3, classes - 1}, -INFINITY);  //        (its last element too)
    odd.select(0, 4).fill_(-INFINITY);     // row 4: all -Inf
    odd.set({5, 0}, -INFINITY);            // row 5: -Inf first, before any finite score
    odd.set({6, classes - 1}, INFINITY);   // row 6: +Inf last
    for (bool finite : {true, false}) {
      const Tensor& x = finite ? base : odd;
      for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
        for (bool avg : {true, false}) {
          INFO(classes, " classes ", name(dt), avg ? " sizeAverage" : " sum", finite ? " finite" : " NaN and +-Inf");
          const Tensor xd = x.to(dt);
          nn::CrossEntropyCriterion ref({}, avg);
          ref.to(DType::Float64);
          cudnn::CrossEntropyCriterion twin({}, avg);
          twin.to(gpu);
          const double want = ref.forward(xd.to(DType::Float64), t);
          const double got = twin.forward(xd.to(gpu), t.to(gpu));
          // the loss computes in float32 or float64, from the log-probabilities before their
          // rounding to logProbs' dtype (the scores')
          const double tol = dt == DType::Float64 ? 1e-12 : 1e-5;
          const double logp_tol = dt == DType::Float16 ? 1e-3 : dt == DType::BFloat16 ? 5e-3 : tol;
          if (std::isnan(want)) {
            CHECK(std::isnan(got));
          } else {
            CHECK(got == doctest::Approx(want).epsilon(tol));
          }
          expect_same_nonfinite("logProbs", twin.logProbs, ref.logProbs, logp_tol);
          const Tensor gwant = ref.backward(xd.to(DType::Float64), t).clone();
          const Tensor g = twin.backward(xd.to(gpu), t.to(gpu));
          CHECK(g.dtype() == dt);
          expect_same_nonfinite("gradInput", g, gwant, TwinTolerance::for_dtype(dt).backward);
          expect_same_nonfinite("logProbs after backward", twin.logProbs, ref.logProbs, logp_tol);
          if (classes != 2001) continue;
          // rows 1.. of the same storage: a base off every 16-byte boundary, so packs of one
          const Tensor rest = xd.to(gpu).narrow(0, 1, rows - 1), trest = t.narrow(0, 1, rows - 1);
          const double want_rest = ref.forward(xd.to(DType::Float64).narrow(0, 1, rows - 1), trest);
          const double got_rest = twin.forward(rest, trest.to(gpu));
          CHECK((std::isnan(want_rest) ? std::isnan(got_rest) : got_rest == doctest::Approx(want_rest).epsilon(tol)));
          expect_same_nonfinite("gradInput of rows 1..", twin.backward(rest, trest.to(gpu)),
                                ref.backward(xd.to(DType::Float64).narrow(0, 1, rows - 1), trest),
                                TwinTolerance::for_dtype(dt).backward);
          expect_same_nonfinite("logProbs of rows 1..", twin.logProbs, ref.logProbs, logp_tol);
        }
      }
    }
  }
}

TEST_CASE("cudnn.CrossEntropyCriterion of an empty batch: loss 0, empty gradient and logProbs, as nn's") {
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64}) {
    INFO(name(dt));
    nn::CrossEntropyCriterion ref;
    ref.to(DType::Float64);
    cudnn::CrossEntropyCriterion twin;
    twin.to(gpu);
    const Tensor x = zeros({0, 4099}, DType::Float64), t = zeros({0}, DType::Int64);
    CHECK(twin.forward(x.to(gpu, dt), t.to(gpu)) == ref.forward(x, t));
    CHECK(twin.logProbs.sizes() == Shape{0, 4099});
    CHECK(twin.logProbs.dtype() == dt);
    const Tensor g = twin.backward(x.to(gpu, dt), t.to(gpu));
    CHECK(g.sizes() == ref.backward(x, t).sizes());
    CHECK(g.dtype() == dt);
  }
}

TEST_CASE("cudnn.CrossEntropyCriterion printing and errors") {
  cudnn::CrossEntropyCriterion ce;
  CHECK(ce.str() == "cudnn.CrossEntropyCriterion");
  ce.to(gpu);
  const Tensor x = zeros({3, 2}, DType::Float32, gpu);
  CHECK_THROWS_WITH_AS(ce.forward(x, from_vector<double>({0, 1, 2}).to(gpu)),
                       "cudnn.CrossEntropyCriterion::updateOutput: expected target class indices in [0, 1] (0-based) "
                       "or ignoreIndex -100, got 2 at target[2]",
                       Error);
  CHECK_THROWS_WITH_AS(ce.forward(x, from_vector<double>({0, NAN, 1}).to(gpu)),
                       "cudnn.CrossEntropyCriterion::updateOutput: expected integer class indices in the target, got "
                       "nan at target[1]",
                       Error);
  CHECK_THROWS_WITH_AS(ce.backward(x, zeros({2}, DType::Int64, gpu)),
                       "cudnn.CrossEntropyCriterion::updateGradInput: expected a target of [3] for input [3 x 2], got "
                       "[2]",
                       Error);
  CHECK_THROWS_WITH_AS(ce.forward(zeros({3, 2}), zeros({3})),
                       doctest::Contains("cudnn.CrossEntropyCriterion::updateOutput: expected input on a CUDA device"),
                       Error);
  CHECK_THROWS_WITH_AS(ce.forward(x, zeros({3})),
                       "cudnn.CrossEntropyCriterion::updateOutput: expected the target on cuda:0 (the input's "
                       "device), got float32 [3] on cpu",
                       Error);
}

// ---- MSECriterion: its own cases

TEST_CASE("cudnn.MSECriterion sums float16 squares beyond float16's range without overflow") {
  cudnn::MSECriterion sum(false);
  sum.to(gpu);
  const Tensor x = full({100, 100}, 30.0, DType::Float16, gpu), y = zeros({100, 100}, DType::Float16, gpu);
  CHECK(sum.forward(x, y) == doctest::Approx(9.0e6));  // 10000 * 900: far above 65504
  cudnn::MSECriterion avg;
  avg.to(gpu);
  CHECK(avg.forward(x, y) == doctest::Approx(900));
}

TEST_CASE("cudnn.MSECriterion takes non-contiguous inputs and targets") {
  const Tensor x = from_vector<double>({1, 2, 3, 4}, {2, 2});
  const Tensor y = from_vector<double>({0, 2, 5, 4.5});
  cudnn::MSECriterion mse;
  mse.to(gpu);
  const Tensor xt = from_vector<double>({1, 3, 2, 4}, {2, 2}).to(gpu).t();
  const Tensor yt = from_vector<double>({0, 5, 2, 4.5}, {2, 2}).to(gpu).t();
  CHECK(mse.forward(xt, yt) == doctest::Approx(5.25 / 4).epsilon(1e-15));
  CHECK(mse.forward(x.to(gpu), y.view({2, 2}).to(gpu)) == doctest::Approx(5.25 / 4).epsilon(1e-15));
  // a target with the right count but another shape is refused on both backends (issue 15)
  CHECK_THROWS_WITH_AS(mse.forward(x.to(gpu), y.to(gpu)),
                       "cudnn.MSECriterion::updateOutput: expected a target of the input's shape [2 x 2], got [4]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::MSECriterion().forward(x, y),
                       "nn.MSECriterion::updateOutput: expected a target of the input's shape [2 x 2], got [4]", Error);
  CHECK(mse.backward(xt, yt).to_vector<double>() == std::vector<double>{0.5, 0, -1, -0.25});
  CHECK(mse.gradInput.is_cuda());
}

TEST_CASE("cudnn.MSECriterion printing and errors") {
  cudnn::MSECriterion mse;
  CHECK(mse.str() == "cudnn.MSECriterion");
  mse.to(gpu);
  CHECK_THROWS_WITH_AS(mse.forward(zeros({2, 2}, DType::Float32, gpu), zeros({5}, DType::Float32, gpu)),
                       "cudnn.MSECriterion::updateOutput: expected a target of the input's shape [2 x 2], got [5]",
                       Error);
  CHECK_THROWS_WITH_AS(mse.backward(zeros({2, 2}, DType::Float32, gpu), zeros({4}, DType::Float64, gpu)),
                       doctest::Contains("cudnn.MSECriterion::updateGradInput: expected target of input's dtype and "
                                         "device (float32 on cuda:0), got float64 [4] on cuda:0"),
                       Error);
  CHECK_THROWS_WITH_AS(mse.forward(zeros({2, 2}, DType::Float32, gpu), zeros({4})),
                       doctest::Contains("cudnn.MSECriterion::updateOutput: expected target of input's dtype and "
                                         "device (float32 on cuda:0), got float32 [4] on cpu"),
                       Error);
  CHECK_THROWS_WITH_AS(mse.forward(zeros({2, 2}), zeros({4})),
                       "cudnn.MSECriterion::updateOutput: expected input on a CUDA device, got float32 [2 x 2] on cpu "
                       "(move it with .to(tensor::Device::cuda()))",
                       Error);
  CHECK_THROWS_WITH_AS(mse.forward(zeros({2}, DType::Int64, gpu), zeros({2}, DType::Int64, gpu)),
                       "cudnn.MSECriterion::updateOutput: expected a float32, float64, float16 or bfloat16 input, got "
                       "int64 [2] on cuda:0",
                       Error);
}

TEST_CASE("cudnn.MSECriterion: NaN and +-Inf inputs give nn's loss and gradient (Note [NaN and Inf])") {
  Generator gen(4211);
  for (const Shape& s : {Shape{4, 5}, Shape{33, 17}}) {
    for (bool avg : {true, false}) {
      INFO("input ", shape_str(s), avg ? " sizeAverage" : " sum");
      nn::MSECriterion ref(avg);
      cudnn::MSECriterion twin(avg);
      const Tensor x = uniform(s, -1, 1, gen, DType::Float64), t = uniform(s, -1, 1, gen, DType::Float64);
      expect_twin_criterion_nonfinite_matches(ref, twin, x, t);  // NaN, +Inf and -Inf: a NaN loss
      // +Inf and -Inf alone: an infinite loss, infinite gradients at those two entries
      Tensor xi = x.clone();
      xi.view({-1}).narrow(0, 3, 1).fill_(INFINITY);
      xi.view({-1}).narrow(0, 5, 1).fill_(-INFINITY);
      const double loss = ref.forward(xi, t);
      CHECK(loss == INFINITY);
      twin.to(gpu);
      CHECK(twin.forward(xi.to(gpu, DType::Float32), t.to(gpu, DType::Float32)) == loss);
      expect_same_nonfinite("gradInput", twin.backward(xi.to(gpu, DType::Float32), t.to(gpu, DType::Float32)),
                            ref.backward(xi, t), 1e-4);
    }
  }
}

// ---- SpatialCrossEntropyCriterion: its own cases

TEST_CASE("cudnn.SpatialCrossEntropyCriterion takes a non-contiguous input and a float target") {
  Generator gen(4002);
  nn::SpatialCrossEntropyCriterion ref(from_vector<double>({1, 0.5, 2}));
  cudnn::SpatialCrossEntropyCriterion twin(from_vector<double>({1, 0.5, 2}));
  twin.to(gpu);
  twin.to(DType::Float64);
  const Tensor x = uniform({2, 3, 4, 5}, -3, 3, gen, DType::Float64);
  const Tensor t = class_targets(gen, {2, 4, 5}, 3, 4);
  const Tensor xt = x.transpose(2, 3).contiguous().to(gpu).transpose(2, 3);  // same values, other strides
  CHECK(twin.forward(xt, t.to(gpu, DType::Float32)) == doctest::Approx(ref.forward(x, t)).epsilon(1e-12));
  CHECK(max_rel_error(twin.backward(xt, t.to(gpu, DType::Float32)), ref.backward(x, t)) < 1e-12);
}

TEST_CASE("cudnn.SpatialCrossEntropyCriterion of 16-bit scores: the loss and gradient in float32, logProbs rounded") {
  // cuDNN's log-softmax over the channels runs on a float32 copy; logProbs gets its values
  // rounded to the scores' dtype, after the loss and the gradient used them unrounded
  Generator gen(4003);
  const Tensor w = uniform({5}, 0.5, 2, gen, DType::Float64);
  const Tensor x = uniform({2, 5, 3, 4}, -3, 3, gen, DType::Float64);
  const Tensor t = class_targets(gen, {2, 3, 4}, 5);
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    INFO(name(dt));
    const Tensor xd = x.to(dt).to(DType::Float64), wd = w.to(dt).to(DType::Float64);  // what both sides see
    nn::SpatialCrossEntropyCriterion ref(wd);
    cudnn::SpatialCrossEntropyCriterion twin(wd);
    twin.to(gpu);
    twin.to(dt);  // the weights too, as the scores
    const double want = ref.forward(xd, t);
    CHECK(twin.forward(xd.to(gpu, dt), t.to(gpu)) == doctest::Approx(want).epsilon(1e-5));
    CHECK(twin.logProbs.dtype() == dt);
    expect_same_nonfinite("logProbs", twin.logProbs, ref.logProbs, dt == DType::Float16 ? 1e-3 : 5e-3);
    const Tensor g = twin.backward(xd.to(gpu, dt), t.to(gpu));
    CHECK(g.dtype() == dt);
    expect_same_nonfinite("gradInput", g, ref.backward(xd, t), TwinTolerance::for_dtype(dt).backward);
    expect_same_nonfinite("logProbs after backward", twin.logProbs, ref.logProbs, dt == DType::Float16 ? 1e-3 : 5e-3);
  }
}

TEST_CASE("cudnn.SpatialCrossEntropyCriterion printing and errors") {
  cudnn::SpatialCrossEntropyCriterion sce;
  CHECK(sce.str() == "cudnn.SpatialCrossEntropyCriterion");
  sce.to(gpu);
  const Tensor x = zeros({2, 2, 3, 4}, DType::Float64, gpu);
  CHECK_THROWS_WITH_AS(sce.forward(zeros({2, 3, 4}, DType::Float64, gpu), zeros({2, 3, 4}, DType::Float64, gpu)),
                       "cudnn.SpatialCrossEntropyCriterion::updateOutput: expected input of [N x C x H x W], got "
                       "[2 x 3 x 4]",
                       Error);
  CHECK_THROWS_WITH_AS(sce.forward(x, zeros({2, 4, 3}, DType::Int64, gpu)),
                       "cudnn.SpatialCrossEntropyCriterion::updateOutput: expected a target of [2 x 3 x 4] "
                       "([N x H x W]) for input [2 x 2 x 3 x 4], got [2 x 4 x 3]",
                       Error);
  Tensor t = zeros({2, 3, 4}, DType::Int64);
  t.set({1, 0, 2}, 2);
  CHECK_THROWS_WITH_AS(sce.forward(x, t.to(gpu)),
                       "cudnn.SpatialCrossEntropyCriterion::updateOutput: expected target class indices in [0, 1] "
                       "(0-based) or ignoreIndex -100, got 2 at target[1, 0, 2]",
                       Error);
}

// ---- VolumetricCrossEntropyCriterion: its own cases

TEST_CASE("cudnn.VolumetricCrossEntropyCriterion printing and errors") {
  cudnn::VolumetricCrossEntropyCriterion vce;
  CHECK(vce.str() == "cudnn.VolumetricCrossEntropyCriterion");
  vce.to(gpu);
  CHECK_THROWS_WITH_AS(vce.forward(zeros({2, 3, 4, 5}, DType::Float32, gpu), zeros({2, 4, 5}, DType::Int64, gpu)),
                       "cudnn.VolumetricCrossEntropyCriterion::updateOutput: expected input of [N x C x T x H x W], "
                       "got [2 x 3 x 4 x 5]",
                       Error);
  Tensor t = zeros({1, 2, 2, 2}, DType::Int64);
  t.set({0, 1, 1, 0}, -3);
  CHECK_THROWS_WITH_AS(vce.forward(zeros({1, 2, 2, 2, 2}, DType::Float32, gpu), t.to(gpu)),
                       "cudnn.VolumetricCrossEntropyCriterion::updateOutput: expected target class indices in [0, 1] "
                       "(0-based) or ignoreIndex -100, got -3 at target[0, 1, 1, 0]",
                       Error);
}
