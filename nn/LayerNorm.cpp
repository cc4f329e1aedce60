// LayerNorm.cpp: rows of the normalised size, each reduced in float64-exact two passes (mean,
// then the centred variance) in the input's dtype.
#include "nn/LayerNorm.h"

#include <cmath>
#include <sstream>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"

namespace nn {

LayerNorm::LayerNorm(Shape normalizedShape_, double eps_, bool elementwiseAffine_)
    : normalizedShape(std::move(normalizedShape_)), eps(eps_) {
  bool ok = !normalizedShape.empty();
  for (int64_t s : normalizedShape) ok = ok && s >= 1;
  if (!ok) {
    throw Error(std::string(kTypeName) + ": expected a normalized shape of 1 or more sizes >= 1, got " +
                tensor::shape_str(normalizedShape));
  }
  if (!(std::isfinite(eps) && eps >= 0)) {
    std::ostringstream msg;
    msg << kTypeName << ": expected a finite eps >= 0, got " << eps;
    throw Error(msg.str());
  }
  if (elementwiseAffine_) {
    weight = tensor::empty(normalizedShape);
    bias = tensor::empty(normalizedShape);
    gradWeight = tensor::zeros(normalizedShape);
    gradBias = tensor::zeros(normalizedShape);
    reset();
  }
}

void LayerNorm::reset() {
  if (weight.defined()) weight.fill_(1);
  if (bias.defined()) bias.fill_(0);
}

void LayerNorm::releaseActivations() {
  Module::releaseActivations();
  saveMean = saveRstd = Tensor();
}

void LayerNorm::visitState(StateVisitor& v) {
  if (weight.defined()) {
    v.parameter("weight", weight, gradWeight);
    v.parameter("bias", bias, gradBias);
  }
}

std::pair<int64_t, int64_t> LayerNorm::rowsCols(const Tensor& input, const char* method) const {
  checkParameters(method, false);
  const int64_t k = static_cast<int64_t>(normalizedShape.size());
  bool ok = input.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = input.size(input.dim() - k + i) == normalizedShape[i];
  if (!ok) {
    throw Error(where(method) + "expected input [* x " + tensor::shape_str(normalizedShape).substr(1) +
                " (ending with the normalized shape), got " + tensor::shape_str(input.sizes()));
  }
  int64_t cols = 1;
  for (int64_t s : normalizedShape) cols *= s;
  return {input.numel() / cols, cols};
}

void LayerNorm::checkParameters(const char* method, bool gradients) const {
  if (!weight.defined() && !bias.defined()) return;
  check_parameter(*this, method, "weight", weight, normalizedShape, gradients ? &gradWeight : nullptr);
  check_parameter(*this, method, "bias", bias, normalizedShape, gradients ? &gradBias : nullptr);
  // the kernels read both through the weight's (the input's) type
  if (bias.dtype() != weight.dtype() || bias.device() != weight.device()) {
    throw Error(where(method) + "expected bias of weight's dtype and device (" + tensor::name(weight.dtype()) + " on " +
                weight.device().str() + "), got " + bias.description() + " (convert the module with .to(dtype))");
  }
}

void LayerNorm::checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  if (!gradOutput.defined() || gradOutput.sizes() != input.sizes() || gradOutput.dtype() != input.dtype()) {
    throw Error(where(method) + "expected gradOutput of the input's shape and dtype (" + input.description() +
                "), got " + (gradOutput.defined() ? gradOutput.description() : std::string("an undefined tensor")));
  }
  const auto [rows, cols] = rowsCols(input, method);
  // the statistics have the input's dtype, float32 for a twin's 16-bit input
  const bool half = input.dtype() == tensor::DType::Float16 || input.dtype() == tensor::DType::BFloat16;
  const tensor::DType stats = half ? tensor::DType::Float32 : input.dtype();
  if (!saveMean.defined() || saveMean.numel() != rows || saveMean.dtype() != stats) {
    throw Error(where(method) + "expected a forward() of input " + input.description() + " first");
  }
}

const Tensor& LayerNorm::updateOutput(const Tensor& input) {
  check_float(where("updateOutput"), input);
  if (weight.defined()) check_matches(where("updateOutput"), input, weight);
  // plain variables, not a structured binding: clang 14 cannot capture those in a lambda
  const std::pair<int64_t, int64_t> shape = rowsCols(input, "updateOutput");
  const int64_t rows = shape.first, cols = shape.second;
  const Tensor x = input.contiguous();
  ensure(output, x.sizes(), x);
  ensure(saveMean, {rows}, x);
  ensure(saveRstd, {rows}, x);
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    T* yp = output.data<T>();
    T* mp = saveMean.data<T>();
    T* rp = saveRstd.data<T>();
    const T* w = weight.defined() ? weight.data<T>() : nullptr;
    const T* b = weight.defined() ? bias.data<T>() : nullptr;
    const T e = static_cast<T>(eps);
#pragma omp parallel for schedule(static) if (rows * cols > 32768)
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = xp + r * cols;
      T* yr = yp + r * cols;
      T mean = 0;
      for (int64_t c = 0; c < cols; ++c) mean += xr[c];
      mean /= static_cast<T>(cols);
      T var = 0;
      for (int64_t c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
      var /= static_cast<T>(cols);
      const T rstd = T(1) / std::sqrt(var + e);
      mp[r] = mean;
      rp[r] = rstd;
      for (int64_t c = 0; c < cols; ++c) {
        const T xhat = (xr[c] - mean) * rstd;
        yr[c] = w ? xhat * w[c] + b[c] : xhat;
      }
    }
  });
  return output;
}

// dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy * weight
const Tensor& LayerNorm::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  check_float(where("updateGradInput"), input);
  checkGradOutput(input, gradOutput, "updateGradInput");
  // plain variables, not a structured binding: clang 14 cannot capture those in a lambda
  const std::pair<int64_t, int64_t> shape = rowsCols(input, "updateGradInput");
  const int64_t rows = shape.first, cols = shape.second;
  const Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  ensure(gradInput, x.sizes(), x);
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    const T* gp = gy.data<T>();
    T* dp = gradInput.data<T>();
    const T* mp = saveMean.data<T>();
    const T* rp = saveRstd.data<T>();
    const T* w = weight.defined() ? weight.data<T>() : nullptr;
    const T n = static_cast<T>(cols);
#pragma omp parallel for schedule(static) if (rows * cols > 32768)
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = xp + r * cols;
      const T* gr = gp + r * cols;
      T* dr = dp + r * cols;
      T sg = 0, sgx = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const T g = w ? gr[c] * w[c] : gr[c];
        sg += g;
        sgx += g * (xr[c] - mp[r]) * rp[r];
      }
      for (int64_t c = 0; c < cols; ++c) {
        const T g = w ? gr[c] * w[c] : gr[c];
        const T xhat = (xr[c] - mp[r]) * rp[r];
        dr[c] = rp[r] * (g - sg / n - xhat * sgx / n);
      }
    }
  });
  return gradInput;
}

void LayerNorm::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  if (!weight.defined()) return;
  check_float(where("accGradParameters"), input);
  checkGradOutput(input, gradOutput, "accGradParameters");
  // plain variables, not a structured binding: clang 14 cannot capture those in a lambda
  const std::pair<int64_t, int64_t> shape = rowsCols(input, "accGradParameters");
  const int64_t rows = shape.first, cols = shape.second;
  checkParameters("accGradParameters", true);
  const Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    const T* gp = gy.data<T>();
    const T* mp = saveMean.data<T>();
    const T* rp = saveRstd.data<T>();
    T* gw = gradWeight.data<T>();
    T* gb = gradBias.data<T>();
    const T s = static_cast<T>(scale);
    // columns in parallel, rows in order: the sums are the same from run to run
#pragma omp parallel for schedule(static) if (rows * cols > 32768)
    for (int64_t c = 0; c < cols; ++c) {
      T sw = 0, sb = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const T g = gp[r * cols + c];
        sw += g * (xp[r * cols + c] - mp[r]) * rp[r];
        sb += g;
      }
      gw[c] += s * sw;
      gb[c] += s * sb;
    }
  });
}

std::string LayerNorm::str() const {
  std::ostringstream s;
  s << type_name() << "(" << tensor::shape_str(normalizedShape) << ", eps=" << eps
    << (weight.defined() ? "" : ", elementwise_affine=false") << ")";
  return s.str();
}

tensor::Json LayerNorm::config() const {
  tensor::Json::Array shape(normalizedShape.begin(), normalizedShape.end());
  return tensor::Json::Object{
      {"normalized_shape", tensor::Json(std::move(shape))}, {"eps", eps}, {"elementwise_affine", weight.defined()}};
}

ModulePtr LayerNorm::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const Shape shape = c.shape("normalized_shape");
  const double eps = c.number("eps", 1e-5);
  const bool affine = c.flag("elementwise_affine", true);
  c.finish();
  return std::make_shared<LayerNorm>(shape, eps, affine);
}

}  // namespace nn
