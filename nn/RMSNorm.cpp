// RMSNorm.cpp: rows of the normalised size, each reduced in one pass (the sum of squares) in the
// input's dtype, as torch.rms_norm computes float32 and float64 data.
//
// Note [RMSNorm's rounding]
// For 16-bit data the twin computes mean(x^2), rstd and y = x rstd weight in float32 and rounds y
// once to the data's dtype, as torch.rms_norm does (PyTorch 2.15's CPU kernel gives those bits:
// scripts/make_decoder_norm_reference.py's half.* cases, which tests/cudnn/test_RMSNorm.cpp
// compares with). HF's LlamaRMSNorm rounds twice (x rstd to the dtype, then times the weight
// in the dtype): at most an ulp from ours. For float32 and float64 data the formula is the
// plain x rstd weight in the data's type on both backends.
#include "nn/RMSNorm.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"

namespace nn {

namespace {
void check_eps(const std::string& where, const std::optional<double>& eps) {
  if (eps && !(std::isfinite(*eps) && *eps >= 0)) {
    std::ostringstream msg;
    msg << where << "expected a finite eps >= 0 (or none: the dtype's epsilon), got " << *eps;
    throw Error(msg.str());
  }
}
}  // namespace

RMSNorm::RMSNorm(Shape normalizedShape_, std::optional<double> eps_, bool elementwiseAffine_)
    : normalizedShape(std::move(normalizedShape_)), eps(eps_) {
  bool ok = !normalizedShape.empty();
  for (int64_t s : normalizedShape) ok = ok && s >= 1;
  if (!ok) {
    throw Error(std::string(kTypeName) + ": expected a normalized shape of 1 or more sizes >= 1, got " +
                tensor::shape_str(normalizedShape));
  }
  check_eps(std::string(kTypeName) + ": ", eps);
  if (elementwiseAffine_) {
    weight = tensor::empty(normalizedShape);
    gradWeight = tensor::zeros(normalizedShape);
    reset();
  }
}

void RMSNorm::reset() {
  if (weight.defined()) weight.fill_(1);
}

void RMSNorm::releaseActivations() {
  Module::releaseActivations();
  saveRstd = Tensor();
}

void RMSNorm::visitState(StateVisitor& v) {
  if (weight.defined()) v.parameter("weight", weight, gradWeight);
}

double RMSNorm::epsFor(tensor::DType dtype) const {
  if (eps) return *eps;
  // torch.rms_norm's: the epsilon of its opmath type, not torch.finfo(x.dtype).eps (PyTorch
  // 2.15 gives float16 data float32's 2^-23, not float16's 2^-10; make_decoder_norm_reference.py)
  return dtype == tensor::DType::Float64 ? std::numeric_limits<double>::epsilon()
                                         : std::numeric_limits<float>::epsilon();
}

std::pair<int64_t, int64_t> RMSNorm::rowsCols(const Tensor& input, const char* method) const {
  check_eps(where(method), eps);  // a public field
  checkParameters(method, false);
  const int64_t k = static_cast<int64_t>(normalizedShape.size());
  bool ok = k >= 1 && input.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = input.size(input.dim() - k + i) == normalizedShape[i];
  if (!ok) {
    throw Error(where(method) + "expected input [* x " + tensor::shape_str(normalizedShape).substr(1) +
                " (ending with the normalized shape), got " + tensor::shape_str(input.sizes()));
  }
  int64_t cols = 1;
  for (int64_t s : normalizedShape) cols *= s;
  return {cols == 0 ? 0 : input.numel() / cols, cols};
}

void RMSNorm::checkParameters(const char* method, bool gradients) const {
  if (!weight.defined()) return;
  check_parameter(*this, method, "weight", weight, normalizedShape, gradients ? &gradWeight : nullptr);
}

void RMSNorm::checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  if (!gradOutput.defined() || gradOutput.sizes() != input.sizes() || gradOutput.dtype() != input.dtype()) {
    throw Error(where(method) + "expected gradOutput of the input's shape and dtype (" + input.description() +
                "), got " + (gradOutput.defined() ? gradOutput.description() : std::string("an undefined tensor")));
  }
  const int64_t rows = rowsCols(input, method).first;
  // the statistics have the input's dtype, float32 for a twin's 16-bit input
  const bool half = input.dtype() == tensor::DType::Float16 || input.dtype() == tensor::DType::BFloat16;
  const tensor::DType stats = half ? tensor::DType::Float32 : input.dtype();
  if (!saveRstd.defined() || saveRstd.numel() != rows || saveRstd.dtype() != stats) {
    throw Error(where(method) + "expected a forward() of input " + input.description() + " first");
  }
}

const Tensor& RMSNorm::updateOutput(const Tensor& input) {
  check_float(where("updateOutput"), input);
  if (weight.defined()) check_matches(where("updateOutput"), input, weight);
  // plain variables, not a structured binding: clang 14 cannot capture those in a lambda
  const std::pair<int64_t, int64_t> shape = rowsCols(input, "updateOutput");
  const int64_t rows = shape.first, cols = shape.second;
  const Tensor x = input.contiguous();
  ensure(output, x.sizes(), x);
  ensure(saveRstd, {rows}, x);
  const double e = epsFor(x.dtype());
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    T* yp = output.data<T>();
    T* rp = saveRstd.data<T>();
    const T* w = weight.defined() ? weight.data<T>() : nullptr;
    const T eT = static_cast<T>(e);
#pragma omp parallel for schedule(static) if (rows * cols > 32768)
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = xp + r * cols;
      T* yr = yp + r * cols;
      T ss = 0;
      for (int64_t c = 0; c < cols; ++c) ss += xr[c] * xr[c];
      const T rstd = T(1) / std::sqrt(ss / static_cast<T>(cols) + eT);
      rp[r] = rstd;
      for (int64_t c = 0; c < cols; ++c)
        yr[c] = w ? xr[c] * rstd * w[c] : xr[c] * rstd;  // See Note [RMSNorm's rounding]
    }
  });
  return output;
}

// dx = rstd (g - xhat mean(g xhat)), g = dy * weight, xhat = x rstd
const Tensor& RMSNorm::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  check_float(where("updateGradInput"), input);
  checkGradOutput(input, gradOutput, "updateGradInput");
  const std::pair<int64_t, int64_t> shape = rowsCols(input, "updateGradInput");
  const int64_t rows = shape.first, cols = shape.second;
  const Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  ensure(gradInput, x.sizes(), x);
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    const T* gp = gy.data<T>();
    T* dp = gradInput.data<T>();
    const T* rp = saveRstd.data<T>();
    const T* w = weight.defined() ? weight.data<T>() : nullptr;
    const T n = static_cast<T>(cols);
#pragma omp parallel for schedule(static) if (rows * cols > 32768)
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = xp + r * cols;
      const T* gr = gp + r * cols;
      T* dr = dp + r * cols;
      const T rstd = rp[r];
      T sgx = 0;
      for (int64_t c = 0; c < cols; ++c) sgx += (w ? gr[c] * w[c] : gr[c]) * (xr[c] * rstd);
      for (int64_t c = 0; c < cols; ++c) {
        const T g = w ? gr[c] * w[c] : gr[c];
        dr[c] = rstd * (g - xr[c] * rstd * sgx / n);
      }
    }
  });
  return gradInput;
}

void RMSNorm::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  if (!weight.defined()) return;
  check_float(where("accGradParameters"), input);
  checkGradOutput(input, gradOutput, "accGradParameters");
  const std::pair<int64_t, int64_t> shape = rowsCols(input, "accGradParameters");
  const int64_t rows = shape.first, cols = shape.second;
  checkParameters("accGradParameters", true);
  const Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    const T* gp = gy.data<T>();
    const T* rp = saveRstd.data<T>();
    T* gw = gradWeight.data<T>();
    const T s = static_cast<T>(scale);
    // columns in parallel, rows in order: the sums are the same from run to run
#pragma omp parallel for schedule(static) if (rows * cols > 32768)
    for (int64_t c = 0; c < cols; ++c) {
      T sw = 0;
      for (int64_t r = 0; r < rows; ++r) sw += gp[r * cols + c] * (xp[r * cols + c] * rp[r]);
      gw[c] += s * sw;
    }
  });
}

std::string RMSNorm::str() const {
  std::ostringstream s;
  s << type_name() << "(" << tensor::shape_str(normalizedShape) << ", eps=";
  if (eps) {
    s << *eps;
  } else {
    s << "None";
  }
  s << (weight.defined() ? "" : ", elementwise_affine=false") << ")";
  return s.str();
}

// eps is left out when it is the dtype's (PyTorch's None): a JSON number cannot say "none".
tensor::Json RMSNorm::config() const {
  tensor::Json::Array shape(normalizedShape.begin(), normalizedShape.end());
  tensor::Json::Object c{{"normalized_shape", tensor::Json(std::move(shape))},
                         {"elementwise_affine", weight.defined()}};
  if (eps) c.emplace_back("eps", *eps);
  return c;
}

ModulePtr RMSNorm::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const Shape shape = c.shape("normalized_shape");
  const double e = c.number("eps", std::numeric_limits<double>::quiet_NaN());
  const bool affine = c.flag("elementwise_affine", true);
  c.finish();
  return std::make_shared<RMSNorm>(shape, std::isnan(e) ? std::nullopt : std::optional<double>(e), affine);
}

}  // namespace nn
