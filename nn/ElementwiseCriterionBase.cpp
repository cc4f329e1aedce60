// ElementwiseCriterionBase.cpp: the checks, then one loop over the elements in double.
#include "nn/ElementwiseCriterionBase.h"

#include <algorithm>

#include "nn/Buffers.h"

namespace nn {

void check_element_weights(const std::string& where, const Tensor& weights, const Tensor& input, const char* what) {
  if (!weights.defined()) return;
  const tensor::Shape& w = weights.sizes();
  const tensor::Shape& x = input.sizes();
  const bool suffix = w.size() <= x.size() && std::equal(w.begin(), w.end(), x.end() - static_cast<int64_t>(w.size()));
  if (!suffix || w.empty()) {
    throw Error(where + "expected " + what + " of a shape that ends the input's " + tensor::shape_str(x) + ", got " +
                tensor::shape_str(w));
  }
}

Tensor checked_element_weights(std::string_view name, Tensor weights) {
  if (!weights.defined()) return weights;
  check_float(std::string(name) + ": ", weights, "weights");
  return weights.contiguous();
}

double ElementwiseCriterionBase::divisor(const tensor::Shape& input) const {
  const int64_t n = tensor::shape_numel(input);
  return sizeAverage && n > 0 ? static_cast<double>(n) : 1.0;
}

ElementTerms ElementwiseCriterionBase::checkedTerms(const Tensor& input, const Tensor& target,
                                                    const char* method) const {
  const std::string w = where(method);
  if (target.sizes() != input.sizes()) {
    throw Error(w + "expected a target of the input's shape " + tensor::shape_str(input.sizes()) + ", got " +
                tensor::shape_str(target.sizes()));
  }
  ElementTerms t{params(), elementWeights(), elementPosWeights(), divisor(input.sizes())};
  if (t.params.kind == kernels::ElementLoss::SmoothL1 && !(t.params.beta >= 0)) {
    throw Error(w + "expected beta >= 0, got " + std::to_string(t.params.beta));
  }
  check_element_weights(w, t.weights, input, "weights");
  check_element_weights(w, t.posWeight, input, "posWeight");
  if (t.weights.defined()) check_matches(w, input, t.weights, "input", "weights");
  if (t.posWeight.defined()) check_matches(w, input, t.posWeight, "input", "posWeight");
  return t;
}

namespace {
// sum_i l_i (grad: dx_i = dl_i / divisor), in double, weights read cyclically (they end the shape).
template <class T>
double element_pass(const Tensor& x, const Tensor& y, const Tensor& w, const Tensor& pw,
                    const kernels::ElementLossParams& p, double divisor, T* grad) {
  const int64_t n = x.numel(), wn = w.defined() ? w.numel() : 1, pwn = pw.defined() ? pw.numel() : 1;
  const T* a = x.data<T>();
  const T* b = y.data<T>();
  const T* wp = w.defined() ? w.data<T>() : nullptr;
  const T* pp = pw.defined() ? pw.data<T>() : nullptr;
  const double scale = 1.0 / divisor;
  double s = 0;
#pragma omp parallel for reduction(+ : s) if (n > 32768)
  for (int64_t i = 0; i < n; ++i) {
    const double wi = wp ? static_cast<double>(wp[i % wn]) : 1.0, pwi = pp ? static_cast<double>(pp[i % pwn]) : 1.0;
    const double xi = static_cast<double>(a[i]), yi = static_cast<double>(b[i]);
    if (grad) {
      grad[i] = static_cast<T>(kernels::element_grad(p, xi, yi, wi, pwi) * scale);
    } else {
      s += kernels::element_loss(p, xi, yi, wi, pwi);
    }
  }
  return s;
}
}  // namespace

double ElementwiseCriterionBase::updateOutput(const Tensor& input, const Tensor& target) {
  check_float(where("updateOutput"), input);
  check_matches(where("updateOutput"), target, input, "target", "input");
  const ElementTerms t = checkedTerms(input, target, "updateOutput");
  const Tensor x = input.contiguous(), y = target.contiguous();
  const Tensor w = t.weights.defined() ? t.weights.contiguous() : Tensor();
  const Tensor pw = t.posWeight.defined() ? t.posWeight.contiguous() : Tensor();
  const double sum = tensor::dispatch_f32_f64(x.dtype(), "nn.ElementwiseCriterionBase", [&](auto tag) {
    return element_pass<decltype(tag)>(x, y, w, pw, t.params, t.divisor, nullptr);
  });
  output = sum / t.divisor;
  return output;
}

const Tensor& ElementwiseCriterionBase::updateGradInput(const Tensor& input, const Tensor& target) {
  check_float(where("updateGradInput"), input);
  check_matches(where("updateGradInput"), target, input, "target", "input");
  const ElementTerms t = checkedTerms(input, target, "updateGradInput");
  const Tensor x = input.contiguous(), y = target.contiguous();
  const Tensor w = t.weights.defined() ? t.weights.contiguous() : Tensor();
  const Tensor pw = t.posWeight.defined() ? t.posWeight.contiguous() : Tensor();
  ensure(gradInput, input.sizes(), x);
  tensor::dispatch_f32_f64(x.dtype(), "nn.ElementwiseCriterionBase", [&](auto tag) {
    using T = decltype(tag);
    element_pass<T>(x, y, w, pw, t.params, t.divisor, gradInput.data<T>());
  });
  return gradInput;
}

}  // namespace nn
