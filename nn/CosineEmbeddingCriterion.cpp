// CosineEmbeddingCriterion.cpp
#include "nn/CosineEmbeddingCriterion.h"

#include <cmath>

namespace nn {

namespace {
constexpr double kEps = 1e-12;  // PyTorch's EPSILON in cosine_embedding_loss

struct Cosine {
  Tensor dot, n1, n2, cos;  // per row, keepdim
};
Cosine cosine(const Tensor& x1, const Tensor& x2) {
  Cosine c;
  c.dot = x1.mul(x2).sum(-1, true);
  c.n1 = x1.square().sum(-1, true).add(kEps);
  c.n2 = x2.square().sum(-1, true).add(kEps);
  c.cos = c.dot.mul(c.n1.mul(c.n2).rsqrt());
  return c;
}
}  // namespace

CosineEmbeddingCriterion::CosineEmbeddingCriterion(double margin_, bool sizeAverage_)
    : margin(margin_), sizeAverage(sizeAverage_) {
  if (!std::isfinite(margin))
    throw Error(std::string(kTypeName) + ": expected a finite margin, got " + std::to_string(margin));
}

std::pair<Tensor, Tensor> CosineEmbeddingCriterion::lossAndSlope(const Tensor& cos, const Tensor& y) const {
  const Tensor pos = y.gt(0).to(cos.dtype()), neg = y.lt(0).to(cos.dtype());
  const Tensor hinge = cos.sub(margin);
  const Tensor active = hinge.gt(0).to(cos.dtype());
  const Tensor loss = cos.neg().add(1).mul(pos).add(hinge.relu().mul(neg));
  const Tensor slope = pos.neg().add(active.mul(neg));
  return {loss, slope};
}

double CosineEmbeddingCriterion::updateOutputValue(const Value& input, const Tensor& target) {
  const auto [x1, x2] = pair(input, target, 2, "updateOutput");
  const Cosine c = cosine(x1, x2);
  const Tensor y = target.reshape(c.cos.sizes());
  const double sum = lossAndSlope(c.cos, y).first.sum().item();
  const int64_t n = c.cos.numel();
  return sizeAverage ? sum / static_cast<double>(std::max<int64_t>(n, 1)) : sum;
}

const Value& CosineEmbeddingCriterion::updateGradInputValue(const Value& input, const Tensor& target) {
  const auto [x1, x2] = pair(input, target, 2, "updateGradInput");
  const Cosine c = cosine(x1, x2);
  const Tensor y = target.reshape(c.cos.sizes());
  Tensor slope = lossAndSlope(c.cos, y).second;
  if (sizeAverage && slope.numel() > 0) slope = slope.div(static_cast<double>(slope.numel()));
  const Tensor w = c.n1.mul(c.n2).rsqrt();
  const Tensor g1 = x2.mul(w).sub(x1.mul(c.cos.div(c.n1))).mul(slope);
  const Tensor g2 = x1.mul(w).sub(x2.mul(c.cos.div(c.n2))).mul(slope);
  gradInputValue = Table{g1, g2};
  return gradInputValue;
}

}  // namespace nn
