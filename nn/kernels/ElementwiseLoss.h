// ElementwiseLoss.h: the per-element losses of the elementwise criteria (BCE, BCEWithLogits,
// SmoothL1, Abs, DistKLDiv, HingeEmbedding, MultiLabelSoftMargin) and their derivatives with
// respect to the input, in double, as PyTorch defines them. One definition serves both
// backends: the nn criteria's loops (nn/ElementwiseCriterionBase.cpp) and the cudnn twins'
// kernel (cudnn/kernels/ElementwiseLoss.cu) call these same functions, so the two agree to the
// last bit before rounding to the data's dtype. No CUDA header: nvcc sees the qualifiers only.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define NN_LOSS_HD __host__ __device__ inline
#else
#define NN_LOSS_HD inline
#endif

namespace nn::kernels {

enum class ElementLoss : uint8_t { BCE, BCEWithLogits, SmoothL1, Abs, DistKLDiv, HingeEmbedding, MultiLabelSoftMargin };

// A criterion's constants, for one call.
struct ElementLossParams {
  ElementLoss kind = ElementLoss::Abs;
  double beta = 1;         // SmoothL1
  double margin = 1;       // HingeEmbedding
  bool logTarget = false;  // DistKLDiv: the target holds log-probabilities
};

namespace detail {
// std::fmax / std::fmin drop a NaN; these keep it (Note [NaN and Inf] in nn/kernels/Activation.h).
NN_LOSS_HD double nan_max(double a, double b) { return a != a ? a : (a < b ? b : a); }
NN_LOSS_HD double nan_min(double a, double b) { return a != a ? a : (a > b ? b : a); }
NN_LOSS_HD double sign_of(double d) { return d != d ? d : (d > 0 ? 1.0 : (d < 0 ? -1.0 : 0.0)); }
// log(sigmoid(x)) without overflow: min(x, 0) - log1p(exp(-|x|))
NN_LOSS_HD double log_sigmoid(double x) { return nan_min(x, 0.0) - log1p(exp(-fabs(x))); }
NN_LOSS_HD double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
}  // namespace detail

// The loss of one element: x the input, y the target, w its weight (1 without weights), pw its
// positive weight (BCEWithLogits; 1 without).
NN_LOSS_HD double element_loss(const ElementLossParams& p, double x, double y, double w, double pw) {
  using namespace detail;
  switch (p.kind) {
    case ElementLoss::BCE: {
      // PyTorch clamps each log at -100, so a probability of exactly 0 or 1 costs 100, not Inf
      const double lx = nan_max(log(x), -100.0), l1x = nan_max(log1p(-x), -100.0);
      return -w * (y * lx + (1 - y) * l1x);
    }
    case ElementLoss::BCEWithLogits: {
      // (1 - y) x + (1 + (pw - 1) y) log(1 + exp(-x)), the log in its stable form
      const double lw = (pw - 1) * y + 1;
      return w * ((1 - y) * x + lw * (log1p(exp(-fabs(x))) + nan_max(-x, 0.0)));
    }
    case ElementLoss::SmoothL1: {
      const double d = fabs(x - y);
      if (p.beta == 0) return d;
      return d < p.beta ? 0.5 * d * d / p.beta : d - 0.5 * p.beta;
    }
    case ElementLoss::Abs:
      return fabs(x - y);
    case ElementLoss::DistKLDiv: {
      if (p.logTarget) return exp(y) * (y - x);
      // xlogy(y, y) - y x: a zero target contributes 0 (NaN stays NaN)
      const double ylogy = y == 0 ? 0.0 : y * log(y);
      return ylogy - y * x;
    }
    case ElementLoss::HingeEmbedding: {
      // PyTorch's form: a target other than 1 takes the margin term, one other than -1 the input
      const double hinge = y != 1 ? nan_max(p.margin - x, 0.0) : 0.0;
      return hinge + (y != -1 ? x : 0.0);
    }
    case ElementLoss::MultiLabelSoftMargin:
      return -w * (y * log_sigmoid(x) + (1 - y) * log_sigmoid(-x));
  }
  return 0;
}

// d element_loss / d x, as PyTorch's backward computes it (its choices at the kinks included).
NN_LOSS_HD double element_grad(const ElementLossParams& p, double x, double y, double w, double pw) {
  using namespace detail;
  switch (p.kind) {
    case ElementLoss::BCE: {
      // PyTorch's bound on the denominator, a float constant: 1e-12f, not 1e-12
      constexpr double kEps = static_cast<double>(1e-12f);
      return w * (x - y) / nan_max((1 - x) * x, kEps);
    }
    case ElementLoss::BCEWithLogits: {
      const double s = sigmoid(x);
      const double t = pw * y;
      return w * ((t + 1 - y) * s - t);
    }
    case ElementLoss::SmoothL1: {
      const double d = x - y;
      if (p.beta == 0 || !(fabs(d) < p.beta)) return d != d ? d : sign_of(d);
      return d / p.beta;
    }
    case ElementLoss::Abs:
      return sign_of(x - y);
    case ElementLoss::DistKLDiv:
      return p.logTarget ? -exp(y) : -y;
    case ElementLoss::HingeEmbedding: {
      // clamp_min's backward passes the gradient where margin - x >= 0 (PyTorch's choice at the kink)
      const double m = p.margin - x;
      const double hinge = y != 1 ? (m != m ? m : (m >= 0 ? -1.0 : 0.0)) : 0.0;
      return hinge + (y != -1 ? 1.0 : 0.0);
    }
    case ElementLoss::MultiLabelSoftMargin:
      return w * (sigmoid(x) - y);
  }
  return 0;
}

}  // namespace nn::kernels
