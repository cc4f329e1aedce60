// test_SpatialCrossEntropyCriterion.cpp
#include <doctest/doctest.h>

#include <cmath>

#include "nn/CrossEntropyCriterion.h"
#include "nn/SpatialCrossEntropyCriterion.h"
#include "tests/support/GradCheck.h"

using namespace tensor;
using namespace testing;

namespace {
// Loss and gradient by a direct loop over pixels: -w[t] log softmax_c(x[n, :, h, w])[t].
struct Reference {
  double loss = 0;
  std::vector<double> grad;
};
Reference naive(const Tensor& x, const Tensor& t, const std::vector<double>& w, bool sizeAverage) {
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  Reference r;
  r.grad.assign(static_cast<size_t>(x.numel()), 0.0);
  double total = 0;
  std::vector<double> lsm(C);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t ww = 0; ww < W; ++ww) {
        const auto c_t = static_cast<int64_t>(t.get({n, h, ww}));
        double s = 0;
        for (int64_t c = 0; c < C; ++c) s += std::exp(x.get({n, c, h, ww}));
        for (int64_t c = 0; c < C; ++c) lsm[c] = x.get({n, c, h, ww}) - std::log(s);
        const double wt = w.empty() ? 1 : w[c_t];
        r.loss -= wt * lsm[c_t];
        total += wt;
        for (int64_t c = 0; c < C; ++c) {
          r.grad[((n * C + c) * H + h) * W + ww] = wt * (std::exp(lsm[c]) - (c == c_t ? 1 : 0));
        }
      }
  const double norm = sizeAverage ? total : 1;
  r.loss /= norm;
  for (double& g : r.grad) g /= norm;
  return r;
}

Tensor random_targets(const Shape& shape, int64_t classes, Generator& gen) {
  Tensor t = empty(shape, DType::Int64);
  int64_t* p = t.data<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = gen.randint(classes);
  return t;
}
}  // namespace

TEST_CASE("SpatialCrossEntropyCriterion matches a direct per-pixel loop, averaged over all pixels") {
  Generator gen(808);
  INFO("seed 808");
  const Tensor x = uniform({2, 3, 2, 4}, -2, 2, gen, DType::Float64);
  const Tensor t = random_targets({2, 2, 4}, 3, gen);
  for (bool avg : {true, false}) {
    for (const std::vector<double>& w : {std::vector<double>{}, std::vector<double>{0.5, 2, 1}}) {
      INFO("sizeAverage ", avg, ", weights ", w.size());
      nn::SpatialCrossEntropyCriterion sce(w.empty() ? Tensor() : from_vector<double>(w), avg);
      const Reference r = naive(x, t, w, avg);
      CHECK(sce.forward(x, t) == doctest::Approx(r.loss).epsilon(1e-13));
      CHECK(max_abs_diff(sce.backward(x, t), from_vector<double>(r.grad, x.sizes())) < 1e-14);
    }
  }
  // unweighted and averaged: the mean over the N*H*W = 16 pixels
  nn::SpatialCrossEntropyCriterion sce;
  nn::SpatialCrossEntropyCriterion sum({}, false);
  CHECK(sce.forward(x, t) == doctest::Approx(sum.forward(x, t) / 16).epsilon(1e-14));
  // and the same as CrossEntropy on pixels folded into the batch
  nn::CrossEntropyCriterion ce;
  const Tensor folded = x.permute({0, 2, 3, 1}).reshape({16, 3});
  CHECK(ce.forward(folded, t.reshape({16})) == doctest::Approx(sce.forward(x, t)).epsilon(1e-14));
  // float targets and float32 inputs
  CHECK(sce.forward(x.to(DType::Float32), t.to(DType::Float32)) == doctest::Approx(ce.output).epsilon(1e-6));
}

TEST_CASE("SpatialCrossEntropyCriterion ignoreIndex: the pixels of the ignored class") {
  Generator gen(909);
  // pixels of the ignored class leave the loss and have zero gradient
  const Tensor x = uniform({1, 2, 1, 3}, -1, 1, gen, DType::Float64);
  nn::SpatialCrossEntropyCriterion ign({}, true, 1);
  nn::SpatialCrossEntropyCriterion ce;
  const Tensor t = from_vector<int64_t>({0, 1, 0}, {1, 1, 3});
  const double both = ce.forward(x.narrow(3, 0, 1), zeros({1, 1, 1})) + ce.forward(x.narrow(3, 2, 1), zeros({1, 1, 1}));
  CHECK(ign.forward(x, t) == doctest::Approx(both / 2).epsilon(1e-14));
  const Tensor g = ign.backward(x, t);
  CHECK(g.get({0, 0, 0, 1}) == 0);
  CHECK(g.get({0, 1, 0, 1}) == 0);
}

TEST_CASE("SpatialCrossEntropyCriterion printing and errors") {
  nn::SpatialCrossEntropyCriterion sce(from_vector<double>({1, 2}));
  CHECK(sce.str() == "nn.SpatialCrossEntropyCriterion");
  CHECK(sce.stateDict().count("weights"));
  const Tensor x = zeros({2, 2, 3, 4}, DType::Float64);
  CHECK_THROWS_WITH_AS(sce.forward(zeros({2, 3, 4}, DType::Float64), zeros({2, 3, 4})),
                       "nn.SpatialCrossEntropyCriterion::updateOutput: expected input of [N x C x H x W], got "
                       "[2 x 3 x 4]",
                       Error);
  CHECK_THROWS_WITH_AS(sce.forward(x, zeros({2, 4, 3})),
                       "nn.SpatialCrossEntropyCriterion::updateOutput: expected a target of [2 x 3 x 4] ([N x H x W]) "
                       "for input [2 x 2 x 3 x 4], got [2 x 4 x 3]",
                       Error);
  Tensor t = zeros({2, 3, 4}, DType::Int64);
  t.set({1, 0, 2}, 2);
  CHECK_THROWS_WITH_AS(sce.backward(x, t),
                       "nn.SpatialCrossEntropyCriterion::updateGradInput: expected target class indices in [0, 1] "
                       "(0-based) or ignoreIndex -100, got 2 at target[1, 0, 2]",
                       Error);
}
