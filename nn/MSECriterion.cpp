// MSECriterion.cpp
#include "nn/MSECriterion.h"

#include "nn/Buffers.h"

namespace nn {

MSECriterion::MSECriterion(bool sizeAverage_) : sizeAverage(sizeAverage_) {}

void MSECriterion::checkInput(const Tensor& input, const Tensor& target, const char* method) const {
  check_float(where(method), input);
  check_matches(where(method), target, input, "target", "input");
  checkSizes(input, target, method);
}

void MSECriterion::checkSizes(const Tensor& input, const Tensor& target, const char* method) const {
  // shapes, not element counts: a [3 x 2] target for a [2 x 3] input pairs the wrong elements
  if (target.sizes() != input.sizes()) {
    throw Error(where(method) + "expected a target of the input's shape " + tensor::shape_str(input.sizes()) +
                ", got " + tensor::shape_str(target.sizes()));
  }
}

double MSECriterion::updateOutput(const Tensor& input, const Tensor& target) {
  checkInput(input, target, "updateOutput");
  const Tensor x = input.contiguous(), y = target.contiguous();
  const int64_t n = x.numel();
  const double sum = tensor::dispatch_f32_f64(x.dtype(), "nn.MSECriterion", [&](auto tag) {
    using T = decltype(tag);
    const T* a = x.data<T>();
    const T* b = y.data<T>();
    double s = 0;
#pragma omp parallel for reduction(+ : s) if (n > 32768)
    for (int64_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
      s += d * d;
    }
    return s;
  });
  output = sizeAverage && n > 0 ? sum / static_cast<double>(n) : sum;
  return output;
}

const Tensor& MSECriterion::updateGradInput(const Tensor& input, const Tensor& target) {
  checkInput(input, target, "updateGradInput");
  const Tensor x = input.contiguous(), y = target.contiguous();
  const int64_t n = x.numel();
  ensure(gradInput, input.sizes(), x);
  const double norm = 2.0 / (sizeAverage && n > 0 ? static_cast<double>(n) : 1.0);
  tensor::dispatch_f32_f64(x.dtype(), "nn.MSECriterion", [&](auto tag) {
    using T = decltype(tag);
    const T* a = x.data<T>();
    const T* b = y.data<T>();
    T* g = gradInput.data<T>();
    const T k = static_cast<T>(norm);
#pragma omp parallel for if (n > 32768)
    for (int64_t i = 0; i < n; ++i) g[i] = k * (a[i] - b[i]);
  });
  return gradInput;
}

}  // namespace nn
