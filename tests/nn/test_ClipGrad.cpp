// test_ClipGrad.cpp: clipGradNorm and clipGradValue on CPU gradients against hand-computed
// norms (torch.nn.utils.clip_grad_norm_'s semantics: factor min(maxNorm / (total + 1e-6), 1)),
// norms 2, inf and 1, non-finite totals, and errors. The fused CUDA path: tests/cudnn/test_TrainingMachinery.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "nn/ClipGrad.h"
#include "nn/Linear.h"
#include "tests/support/GradCheck.h"

using namespace tensor;

TEST_CASE("clipGradNorm: the total 2-norm over every gradient, scaled when above maxNorm") {
  for (DType dt : {DType::Float32, DType::Float64}) {
    INFO(name(dt));
    Tensor a = from_vector<double>({3, 0}, {2}).to(dt), b = from_vector<double>({4}, {1}).to(dt);
    const Tensor total = nn::clipGradNorm({a, b}, 1.0);
    CHECK(total.dtype() == dt);
    CHECK(total.item() == doctest::Approx(5));
    const double f = 1 / (5 + 1e-6);
    CHECK(a.get({0}) == doctest::Approx(3 * f).epsilon(1e-6));
    CHECK(b.get({0}) == doctest::Approx(4 * f).epsilon(1e-6));
    // below maxNorm: untouched, bit for bit
    const Tensor a0 = a.clone();
    CHECK(nn::clipGradNorm({a, b}, 10.0).item() == doctest::Approx(1).epsilon(1e-5));
    CHECK(max_abs_diff(a, a0) == 0);
  }
}

TEST_CASE("clipGradNorm: inf and 1 norms, a module, an empty list") {
  Tensor a = from_vector<double>({-3, 1}, {2}), b = from_vector<double>({2}, {1});
  CHECK(nn::clipGradNorm({a, b}, 1.5, std::numeric_limits<double>::infinity()).item() == 3);
  CHECK(a.get({0}) == doctest::Approx(-3 * 1.5 / (3 + 1e-6)));
  Tensor c = from_vector<double>({-3, 1}, {2}), d = from_vector<double>({2}, {1});
  CHECK(nn::clipGradNorm({c, d}, 3.0, 1.0).item() == 6);
  CHECK(d.get({0}) == doctest::Approx(2 * 3 / (6 + 1e-6)));
  nn::Linear m(3, 2);
  m.gradWeight.fill_(1);
  m.gradBias.fill_(1);
  CHECK(nn::clipGradNorm(m, 1.0).item() == doctest::Approx(std::sqrt(8.0)));
  CHECK(m.gradBias.get({0}) == doctest::Approx(1 / std::sqrt(8.0)).epsilon(1e-6));
  CHECK(nn::clipGradNorm(std::vector<Tensor>{}, 1.0).item() == 0);
}

TEST_CASE("clipGradNorm: a non-finite total makes NaN gradients, or throws with errorIfNonfinite") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (double bad : {nan, inf}) {
    Tensor a = from_vector<double>({1, bad}, {2}), b = from_vector<double>({2}, {1});
    CHECK_THROWS_WITH_AS(nn::clipGradNorm({a, b}, 1.0, 2.0, true),
                         doctest::Contains("nn::clipGradNorm: expected a finite total norm of order 2, got"), Error);
    CHECK(b.get({0}) == 2);  // untouched
    const Tensor total = nn::clipGradNorm({a, b}, 1.0);
    CHECK_FALSE(std::isfinite(total.item()));
    // PyTorch's: the factor clamp(1 / (total + 1e-6), max=1) is NaN for a NaN total, 0 for an
    // infinite one (finite gradients become 0, the infinite one NaN)
    if (std::isnan(bad)) {
      CHECK(std::isnan(b.get({0})));
    } else {
      CHECK(b.get({0}) == 0);
      CHECK(std::isnan(a.get({1})));
    }
  }
}

TEST_CASE("clipGradNorm and clipGradValue check their arguments; clipGradValue clamps") {
  Tensor a = from_vector<double>({-3, 0.5, 2}, {3});
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    CHECK_THROWS_WITH_AS(nn::clipGradNorm({a}, bad),
                         doctest::Contains("nn::clipGradNorm: expected a finite maxNorm > 0, got"), Error);
  }
  CHECK_THROWS_WITH_AS(nn::clipGradNorm({a}, 1.0, 0.0), doctest::Contains("expected normType > 0 or inf, got 0"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::clipGradNorm({zeros({2}, DType::Int64)}, 1.0),
                       doctest::Contains("expected floating gradients, got int64 [2]"), Error);
  nn::clipGradValue({a}, 1.0);
  CHECK(a.to_vector<double>() == std::vector<double>{-1, 0.5, 1});
  CHECK_THROWS_WITH_AS(nn::clipGradValue({a}, -1),
                       doctest::Contains("nn::clipGradValue: expected a finite clipValue >= 0"), Error);
}
