// CrossEntropyKernel.cpp
#include "nn/kernels/CrossEntropyKernel.h"

#include "nn/Buffers.h"
#include "tensor/Format.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

namespace nn::kernels {

using tensor::DType;
using tensor::Tensor;

namespace {

std::string position(const tensor::Shape& shape, int64_t flat) {
  return "target[" + tensor::join(tensor::unravel(shape, flat), ", ") + "]";
}

template <class T>
void log_softmax_classes(const T* x, T* y, const ClassLayout& l) {
  const int64_t C = l.classes, inner = l.inner;
#pragma omp parallel if (l.outer * C * inner > 32768)
  {
    // per-thread running max and sum for the `inner` positions of one outer slice
    std::vector<double> mx(inner), sum(inner);
#pragma omp for
    for (int64_t o = 0; o < l.outer; ++o) {
      const T* xo = x + o * C * inner;
      T* yo = y + o * C * inner;
      std::fill(mx.begin(), mx.end(), -std::numeric_limits<double>::infinity());
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < inner; ++i) mx[i] = std::max(mx[i], static_cast<double>(xo[c * inner + i]));
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < inner; ++i) sum[i] += std::exp(static_cast<double>(xo[c * inner + i]) - mx[i]);
      for (int64_t i = 0; i < inner; ++i) sum[i] = mx[i] + std::log(sum[i]);  // log-sum-exp
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < inner; ++i) yo[c * inner + i] = static_cast<T>(xo[c * inner + i] - sum[i]);
    }
  }
}

template <class T>
double class_nll_sum(const T* logp, const int64_t* target, const T* weights, int64_t ignoreIndex,
                     const ClassLayout& l, double& totalWeight) {
  const int64_t C = l.classes, inner = l.inner;
  double loss = 0, total = 0;
#pragma omp parallel for reduction(+ : loss, total) if (l.outer * l.inner > 32768)
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t t = target[o * inner + i];
      if (t == ignoreIndex) continue;
      const double w = weights ? static_cast<double>(weights[t]) : 1.0;
      loss -= w * static_cast<double>(logp[(o * C + t) * inner + i]);
      total += w;
    }
  }
  totalWeight = total;
  return loss;
}

template <class T>
void class_nll_grad(const int64_t* target, const T* weights, int64_t ignoreIndex, double scale,
                    const ClassLayout& l, T* grad) {
  const int64_t C = l.classes, inner = l.inner;
  std::fill(grad, grad + l.outer * C * inner, T(0));
#pragma omp parallel for if (l.outer * l.inner > 32768)
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t t = target[o * inner + i];
      if (t == ignoreIndex) continue;
      const double w = weights ? static_cast<double>(weights[t]) : 1.0;
      grad[(o * C + t) * inner + i] = static_cast<T>(-scale * w);
    }
  }
}

template <class T>
void cross_entropy_grad(const T* logp, const int64_t* target, const T* weights, int64_t ignoreIndex,
                        double scale, const ClassLayout& l, T* grad) {
  const int64_t C = l.classes, inner = l.inner;
#pragma omp parallel for if (l.outer * C * inner > 32768)
  for (int64_t o = 0; o < l.outer; ++o) {
    const int64_t* to = target + o * inner;
    // classes outermost: contiguous runs over `inner` for the per-pixel criteria
    for (int64_t c = 0; c < C; ++c) {
      const T* lp = logp + (o * C + c) * inner;
      T* g = grad + (o * C + c) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t t = to[i];
        const double w = t == ignoreIndex ? 0.0 : scale * (weights ? static_cast<double>(weights[t]) : 1.0);
        g[i] = static_cast<T>(w * (std::exp(static_cast<double>(lp[i])) - (c == t ? 1.0 : 0.0)));
      }
    }
  }
}

}  // namespace

Tensor class_indices(const Tensor& targetIn, int64_t classes, int64_t ignoreIndex, const std::string& where) {
  // indices are read on the host, whichever device the caller's target is on
  const Tensor target = targetIn.is_cpu() ? targetIn : targetIn.to(tensor::Device::cpu());
  Tensor out = target.dtype() == DType::Int64 ? target.contiguous() : tensor::empty(target.sizes(), DType::Int64);
  int64_t* dst = out.data<int64_t>();
  const int64_t n = target.numel();
  if (target.dtype() != DType::Int64) {
    const Tensor src = target.contiguous();
    tensor::dispatch(src.dtype(), [&](auto tag) {
      using S = decltype(tag);
      const S* p = src.data<S>();
      for (int64_t i = 0; i < n; ++i) {
        const double v = static_cast<double>(static_cast<tensor::acc_t<S>>(p[i]));
        if (!(std::isfinite(v) && v == std::floor(v) && std::abs(v) < 9.0e15)) {
          std::ostringstream msg;
          msg << where << "expected integer class indices in the target, got " << v << " at "
              << position(target.sizes(), i);
          throw tensor::Error(msg.str());
        }
        dst[i] = static_cast<int64_t>(v);
      }
    });
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = dst[i];
    if ((t < 0 || t >= classes) && t != ignoreIndex) {
      throw tensor::Error(where + "expected target class indices in [0, " + std::to_string(classes - 1) +
                          "] (0-based) or ignoreIndex " + std::to_string(ignoreIndex) + ", got " +
                          std::to_string(t) + " at " + position(target.sizes(), i));
    }
  }
  return out;
}

ClassLayout batch_class_layout(const std::string& where, const Tensor& input, const Tensor& target) {
  check_float(where, input);
  return batch_class_shape(where, input, target);
}

ClassLayout batch_class_shape(const std::string& where, const Tensor& input, const Tensor& target) {
  if (input.dim() == 1) {
    if (target.numel() != 1 || target.dim() > 1) {
      throw tensor::Error(where + "expected a one-element target for input " + tensor::shape_str(input.sizes()) +
                          ", got " + tensor::shape_str(target.sizes()));
    }
    return {1, input.size(0), 1};
  }
  if (input.dim() == 2) {
    if (target.dim() != 1 || target.size(0) != input.size(0)) {
      throw tensor::Error(where + "expected a target of [" + std::to_string(input.size(0)) + "] for input " +
                          tensor::shape_str(input.sizes()) + ", got " + tensor::shape_str(target.sizes()));
    }
    return {input.size(0), input.size(1), 1};
  }
  throw tensor::Error(where + "expected input of [classes] or [batch x classes], got " +
                      tensor::shape_str(input.sizes()));
}

ClassLayout pixel_class_layout(const std::string& where, const Tensor& input, const Tensor& target,
                               int64_t spatialDims) {
  check_float(where, input);
  return pixel_class_shape(where, input, target, spatialDims);
}

ClassLayout pixel_class_shape(const std::string& where, const Tensor& input, const Tensor& target,
                              int64_t spatialDims) {
  const std::string dims = spatialDims == 2 ? "H x W" : "T x H x W";
  if (input.dim() != spatialDims + 2) {
    throw tensor::Error(where + "expected input of [N x C x " + dims + "], got " + tensor::shape_str(input.sizes()));
  }
  tensor::Shape expected{input.size(0)};
  for (int64_t d = 2; d < input.dim(); ++d) expected.push_back(input.size(d));
  if (target.sizes() != expected) {
    throw tensor::Error(where + "expected a target of " + tensor::shape_str(expected) + " ([N x " + dims +
                        "]) for input " + tensor::shape_str(input.sizes()) + ", got " +
                        tensor::shape_str(target.sizes()));
  }
  int64_t inner = 1;
  for (int64_t d = 2; d < input.dim(); ++d) inner *= input.size(d);
  return {input.size(0), input.size(1), inner};
}

Tensor checked_class_weights(const std::string& where, const Tensor& weights) {
  if (!weights.defined()) return weights;
  check_float(where, weights, "weights");
  if (weights.dim() != 1) {
    throw tensor::Error(where + "expected 1-d class weights, got " + tensor::shape_str(weights.sizes()));
  }
  return weights.contiguous();
}

void check_class_weights(const std::string& where, const Tensor& weights, const Tensor& input, int64_t classes) {
  if (!weights.defined()) return;
  check_matches(where, input, weights, "input", "weights");
  if (weights.dim() != 1 || weights.size(0) != classes) {
    throw tensor::Error(where + "expected weights of [" + std::to_string(classes) + "] for " +
                        std::to_string(classes) + " classes (input " + tensor::shape_str(input.sizes()) +
                        "), got " + tensor::shape_str(weights.sizes()));
  }
}

namespace {
double norm_of(bool sizeAverage, double totalWeight) { return sizeAverage && totalWeight > 0 ? totalWeight : 1.0; }

// `weights` must outlive the pointer: callers pass a contiguous tensor they hold.
template <class T>
const T* weights_ptr(const Tensor& weights) {
  return weights.defined() ? weights.data<T>() : nullptr;
}
}  // namespace

double class_nll_loss(const Tensor& logp, const Tensor& indices, const Tensor& weightsIn, int64_t ignoreIndex,
                      bool sizeAverage, const ClassLayout& l) {
  const Tensor weights = weightsIn.defined() ? weightsIn.contiguous() : Tensor();
  return tensor::dispatch_f32_f64(logp.dtype(), "nn::kernels::class_nll_loss", [&](auto tag) {
    using T = decltype(tag);
    double total = 0;
    const double loss = class_nll_sum<T>(logp.data<T>(), indices.data<int64_t>(), weights_ptr<T>(weights),
                                         ignoreIndex, l, total);
    return loss / norm_of(sizeAverage, total);
  });
}

void class_nll_backward(const Tensor& logp, const Tensor& indices, const Tensor& weightsIn, int64_t ignoreIndex,
                        bool sizeAverage, const ClassLayout& l, Tensor& gradInput) {
  const Tensor weights = weightsIn.defined() ? weightsIn.contiguous() : Tensor();
  ensure(gradInput, logp.sizes(), logp);
  tensor::dispatch_f32_f64(logp.dtype(), "nn::kernels::class_nll_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* w = weights_ptr<T>(weights);
    double total = 0;
    class_nll_sum<T>(logp.data<T>(), indices.data<int64_t>(), w, ignoreIndex, l, total);
    class_nll_grad<T>(indices.data<int64_t>(), w, ignoreIndex, 1.0 / norm_of(sizeAverage, total), l,
                      gradInput.data<T>());
  });
}

double cross_entropy_loss(const Tensor& input, const Tensor& indices, const Tensor& weightsIn, int64_t ignoreIndex,
                          bool sizeAverage, const ClassLayout& l, Tensor& logp) {
  const Tensor weights = weightsIn.defined() ? weightsIn.contiguous() : Tensor();
  ensure(logp, input.sizes(), input);
  return tensor::dispatch_f32_f64(input.dtype(), "nn::kernels::cross_entropy_loss", [&](auto tag) {
    using T = decltype(tag);
    log_softmax_classes<T>(input.data<T>(), logp.data<T>(), l);
    double total = 0;
    const double loss = class_nll_sum<T>(logp.data<T>(), indices.data<int64_t>(), weights_ptr<T>(weights),
                                         ignoreIndex, l, total);
    return loss / norm_of(sizeAverage, total);
  });
}

void cross_entropy_backward(const Tensor& input, const Tensor& indices, const Tensor& weightsIn, int64_t ignoreIndex,
                            bool sizeAverage, const ClassLayout& l, Tensor& logp, Tensor& gradInput) {
  const Tensor weights = weightsIn.defined() ? weightsIn.contiguous() : Tensor();
  ensure(logp, input.sizes(), input);
  ensure(gradInput, input.sizes(), input);
  tensor::dispatch_f32_f64(input.dtype(), "nn::kernels::cross_entropy_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* w = weights_ptr<T>(weights);
    log_softmax_classes<T>(input.data<T>(), logp.data<T>(), l);
    double total = 0;
    class_nll_sum<T>(logp.data<T>(), indices.data<int64_t>(), w, ignoreIndex, l, total);
    cross_entropy_grad<T>(logp.data<T>(), indices.data<int64_t>(), w, ignoreIndex, 1.0 / norm_of(sizeAverage, total),
                          l, gradInput.data<T>());
  });
}

}  // namespace nn::kernels
