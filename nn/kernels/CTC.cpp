// CTC.cpp
#include "nn/kernels/CTC.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nn::kernels {

// Note [CTC's gradient]
// PyTorch's ctc_loss backward returns exp(lp) - exp(lcab + nll - lp), with lcab the log of
// sum_{s: l'(s) = c} alpha_t(s) beta_t(s) (beta including lp at t). That is not d loss / d lp
// (which is -exp(lcab + nll - lp)) but the gradient with respect to the logits z of lp =
// log_softmax(z): the two differ by exp(lp) * (the row's sum of d loss / d lp), and that sum is
// -1. Since the rows of this gradient sum to 0, a LogSoftMax before the criterion passes it
// through unchanged, so a network LogSoftMax -> CTCCriterion trains exactly as PyTorch's. cuDNN's
// CTC with CUDNN_LOSS_NORMALIZATION_SOFTMAX returns the same gradient given lp as its
// "unnormalized" input (softmax(lp) = exp(lp)), which is how the twin uses it. The gradient
// checks differentiate loss(log_softmax(z)) in z.

namespace {
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double log_add(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  const double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}
}  // namespace

int64_t CTCProblem::maxTargetLength() const {
  int64_t m = 0;
  for (int64_t l : targetLengths) m = std::max(m, l);
  return m;
}

bool CTCProblem::feasible(int64_t b) const {
  const int64_t L = targetLengths[b];
  int64_t repeats = 0;
  for (int64_t i = 1; i < L; ++i) repeats += targets[offsets[b] + i] == targets[offsets[b] + i - 1];
  return inputLengths[b] >= L + repeats;
}

void ctc_loss(const CTCProblem& p, const tensor::Tensor& logProbs, std::vector<double>& losses,
              const std::vector<double>* scale, bool zeroInfinity, tensor::Tensor* grad) {
  const double* lp = logProbs.data<double>();
  const int64_t T = p.T, N = p.N, C = p.C;
  losses.assign(static_cast<size_t>(N), 0.0);
  double* g = grad ? grad->data<double>() : nullptr;
  if (g) std::fill(g, g + T * N * C, 0.0);
  auto at = [&](int64_t t, int64_t b, int64_t c) { return lp[(t * N + b) * C + c]; };
#pragma omp parallel for if (N > 1 && T * C > 4096)
  for (int64_t b = 0; b < N; ++b) {
    const int64_t Tb = p.inputLengths[b], L = p.targetLengths[b], S = 2 * L + 1;
    const int64_t* lab = p.targets.data() + p.offsets[b];
    auto label = [&](int64_t s) { return s % 2 == 0 ? p.blank : lab[s / 2]; };
    // may s take the skip from s - 2 (a label differing from the one before it)?
    auto skips = [&](int64_t s) { return s >= 2 && s % 2 == 1 && lab[s / 2] != lab[s / 2 - 1]; };
    if (Tb == 0) {
      losses[b] = L == 0 ? 0.0 : std::numeric_limits<double>::infinity();
    } else {
      std::vector<double> alpha(static_cast<size_t>(Tb * S), kNegInf), beta(static_cast<size_t>(Tb * S), kNegInf);
      alpha[0] = at(0, b, p.blank);
      if (S > 1) alpha[1] = at(0, b, label(1));
      for (int64_t t = 1; t < Tb; ++t) {
        for (int64_t s = 0; s < S; ++s) {
          double a = alpha[(t - 1) * S + s];
          if (s >= 1) a = log_add(a, alpha[(t - 1) * S + s - 1]);
          if (skips(s)) a = log_add(a, alpha[(t - 1) * S + s - 2]);
          alpha[t * S + s] = a == kNegInf ? kNegInf : a + at(t, b, label(s));
        }
      }
      const double end =
          S > 1 ? log_add(alpha[(Tb - 1) * S + S - 1], alpha[(Tb - 1) * S + S - 2]) : alpha[(Tb - 1) * S + S - 1];
      // -log p, +Inf where no path ends (log_add keeps NaN: a NaN input gives a NaN loss)
      const double nll = -end;
      losses[b] = nll;
      if (g && !(zeroInfinity && nll == std::numeric_limits<double>::infinity())) {
        beta[(Tb - 1) * S + S - 1] = at(Tb - 1, b, label(S - 1));
        if (S > 1) beta[(Tb - 1) * S + S - 2] = at(Tb - 1, b, label(S - 2));
        for (int64_t t = Tb - 2; t >= 0; --t) {
          for (int64_t s = 0; s < S; ++s) {
            double v = beta[(t + 1) * S + s];
            if (s + 1 < S) v = log_add(v, beta[(t + 1) * S + s + 1]);
            if (s + 2 < S && skips(s + 2)) v = log_add(v, beta[(t + 1) * S + s + 2]);
            beta[t * S + s] = v == kNegInf ? kNegInf : v + at(t, b, label(s));
          }
        }
        const double sc = scale ? (*scale)[b] : 1.0;
        std::vector<double> lcab(static_cast<size_t>(C));
        for (int64_t t = 0; t < Tb; ++t) {
          std::fill(lcab.begin(), lcab.end(), kNegInf);
          for (int64_t s = 0; s < S; ++s) {
            const int64_t c = label(s);
            lcab[c] = log_add(lcab[c], alpha[t * S + s] + beta[t * S + s]);
          }
          for (int64_t c = 0; c < C; ++c) {
            const double l = at(t, b, c);
            g[(t * N + b) * C + c] = (std::exp(l) - std::exp(lcab[c] + nll - l)) * sc;
          }
        }
      }
    }
  }
}

}  // namespace nn::kernels
