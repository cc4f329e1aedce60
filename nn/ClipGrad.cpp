// ClipGrad.cpp
#include "nn/ClipGrad.h"

#include <algorithm>
#include <cmath>

#include "tensor/Format.h"
#include "tensor/MultiTensor.h"

namespace nn {

using tensor::num_str;

namespace {
// The sum of |x|^p (or the largest |x| for p = inf) of one tensor, in float64 on the host.
double partial_norm(const Tensor& g, double p) {
  if (g.numel() == 0) return 0;
  const Tensor x = g.to(Device::cpu(), DType::Float64).contiguous();
  const double* v = x.data<double>();
  double acc = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double a = std::fabs(v[i]);
    if (std::isinf(p)) {
      acc = std::isnan(a) || std::isnan(acc) ? a + acc : std::max(acc, a);
    } else {
      acc += p == 2 ? a * a : std::pow(a, p);
    }
  }
  return acc;
}

bool fusable(const std::vector<Tensor>& grads, double normType) {
  if (normType != 2 && !std::isinf(normType)) return false;
  for (const Tensor& g : grads) {
    if (!g.is_cuda() || !g.is_non_overlapping_and_dense() || g.device() != grads[0].device() ||
        g.dtype() != grads[0].dtype()) {
      return false;
    }
  }
  return true;
}

[[noreturn]] void non_finite(double total, double normType) {
  throw Error("nn::clipGradNorm: expected a finite total norm of order " + num_str(normType) + ", got " +
              num_str(total) + " (set errorIfNonfinite = false to clip anyway)");
}
}  // namespace

Tensor clipGradNorm(const std::vector<Tensor>& grads, double maxNorm, double normType, bool errorIfNonfinite) {
  if (!(maxNorm > 0) || !std::isfinite(maxNorm)) {
    throw Error("nn::clipGradNorm: expected a finite maxNorm > 0, got " + num_str(maxNorm));
  }
  if (!(normType > 0)) throw Error("nn::clipGradNorm: expected normType > 0 or inf, got " + num_str(normType));
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined() || !tensor::is_floating(grads[i].dtype())) {
      throw Error("nn::clipGradNorm: expected floating gradients, got " +
                  (grads[i].defined() ? grads[i].description() : std::string("an undefined tensor")) + " at position " +
                  std::to_string(i));
    }
  }
  if (grads.empty()) return tensor::scalar_tensor(0);
  const DType dt = grads[0].dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  if (fusable(grads, normType)) {  // Note [Fused clipping]
    if (errorIfNonfinite) {
      const double total = tensor::cuda::multi_tensor_norm(grads, normType).item();
      if (!std::isfinite(total)) non_finite(total, normType);
    }
    return tensor::cuda::clip_by_norm(grads, maxNorm, normType);
  }
  double acc = 0;
  for (const Tensor& g : grads) {
    const double part = partial_norm(g, normType);
    acc = std::isinf(normType) ? (std::isnan(part) || std::isnan(acc) ? part + acc : std::max(acc, part)) : acc + part;
  }
  const double total = std::isinf(normType) ? acc : normType == 2 ? std::sqrt(acc) : std::pow(acc, 1 / normType);
  if (errorIfNonfinite && !std::isfinite(total)) non_finite(total, normType);
  const double coef = std::min(maxNorm / (total + 1e-6), 1.0);  // NaN stays NaN, as torch.clamp
  if (!(coef == 1.0)) {
    for (Tensor g : grads) g.mul_(coef);  // handles: the same storage
  }
  return tensor::scalar_tensor(total, dt, grads[0].device());
}

Tensor clipGradNorm(Module& m, double maxNorm, double normType, bool errorIfNonfinite) {
  return clipGradNorm(m.gradParameters(), maxNorm, normType, errorIfNonfinite);
}

void clipGradValue(const std::vector<Tensor>& grads, double clipValue) {
  if (!(clipValue >= 0) || !std::isfinite(clipValue)) {
    throw Error("nn::clipGradValue: expected a finite clipValue >= 0, got " + num_str(clipValue));
  }
  for (Tensor g : grads) g.clamp_(-clipValue, clipValue);
}

void clipGradValue(Module& m, double clipValue) { clipGradValue(m.gradParameters(), clipValue); }

}  // namespace nn
