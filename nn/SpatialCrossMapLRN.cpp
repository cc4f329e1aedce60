// SpatialCrossMapLRN.cpp: both passes work on whole [H x W] planes, one (n, c) plane per
// iteration, so the inner loops run over contiguous memory.
#include "nn/SpatialCrossMapLRN.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"

namespace nn {

namespace {

// s^-beta; the default beta 0.75 as 1 / sqrt(s sqrt(s)), several times faster than pow.
template <class T>
inline T pow_neg(T s, T beta, bool three_quarters) {
  return three_quarters ? T(1) / std::sqrt(s * std::sqrt(s)) : std::pow(s, -beta);
}

// Below this many elements a pass runs on one thread: a parallel region costs more than the work.
constexpr int64_t kParallelGrain = 1 << 15;

// [N, C, H*W] view of a 3-d or 4-d input.
struct Planes {
  int64_t n, c, hw;
  explicit Planes(const Tensor& x)
      : n(x.dim() == 4 ? x.size(0) : 1),
        c(x.size(-3)),
        hw(x.size(-2) * x.size(-1)),
        parallel(n * c * hw >= kParallelGrain) {}
  bool parallel;
};

}  // namespace

SpatialCrossMapLRN::SpatialCrossMapLRN(int64_t size_, double alpha_, double beta_, double k_)
    : size(size_), alpha(alpha_), beta(beta_), k(k_) {
  if (size < 1) throw Error(std::string(kTypeName) + ": expected size >= 1, got " + std::to_string(size));
  // non-finite values compute nothing useful and cannot be written to a model file
  if (!std::isfinite(alpha) || !std::isfinite(beta) || !std::isfinite(k)) {
    std::ostringstream msg;
    msg << std::string(kTypeName) + ": expected finite alpha, beta and k, got alpha " << alpha << ", beta " << beta
        << ", k " << k;
    throw Error(msg.str());
  }
}

void SpatialCrossMapLRN::checkInput(const Tensor& input, const char* method) const {
  check_float(where(method), input);
  checkShape(input, method);
}

void SpatialCrossMapLRN::checkShape(const Tensor& input, const char* method) const {
  if (!input.defined()) throw Error(where(method) + "input is undefined");
  if (input.dim() != 3 && input.dim() != 4) {
    throw Error(where(method) + "expected 3D [C x H x W] or 4D [N x C x H x W] input, got " +
                tensor::shape_str(input.sizes()));
  }
  if (size < 1) throw Error(where(method) + "expected size >= 1, got " + std::to_string(size));
}

void SpatialCrossMapLRN::checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  if (!gradOutput.defined()) throw Error(where(method) + "gradOutput is undefined");
  check_matches(where(method), gradOutput, input, "gradOutput", "input");
  if (gradOutput.sizes() != input.sizes()) {
    throw Error(where(method) + "expected gradOutput of the input's shape " + tensor::shape_str(input.sizes()) +
                ", got " + tensor::shape_str(gradOutput.sizes()));
  }
}

const Tensor& SpatialCrossMapLRN::updateOutput(const Tensor& input) {
  checkInput(input, "updateOutput");
  const Tensor x = input.contiguous();
  ensure(output, x.sizes(), x);
  ensure(scale, x.sizes(), x);
  const Planes p(x);
  const int64_t before = (size - 1) / 2, after = size / 2;
  tensor::dispatch_f32_f64(x.dtype(), "nn.SpatialCrossMapLRN", [&](auto tag) {
    using T = decltype(tag);
    const T* xd = x.data<T>();
    T* yd = output.data<T>();
    T* sd = scale.data<T>();
    const T a = static_cast<T>(alpha / static_cast<double>(size)), kk = static_cast<T>(k), b = static_cast<T>(beta);
    const bool tq = beta == 0.75;
#pragma omp parallel for schedule(static) if (p.parallel)
    for (int64_t nc = 0; nc < p.n * p.c; ++nc) {
      const int64_t c = nc % p.c;
      const T* xn = xd + (nc - c) * p.hw;  // channel 0 of this sample
      T* s = sd + nc * p.hw;
      std::fill(s, s + p.hw, T(0));
      for (int64_t j = std::max<int64_t>(c - before, 0); j <= std::min(c + after, p.c - 1); ++j) {
        const T* xj = xn + j * p.hw;
        for (int64_t i = 0; i < p.hw; ++i) s[i] += xj[i] * xj[i];
      }
      const T* xc = xd + nc * p.hw;
      T* y = yd + nc * p.hw;
      for (int64_t i = 0; i < p.hw; ++i) {
        s[i] = kk + a * s[i];
        y[i] = xc[i] * pow_neg(s[i], b, tq);
      }
    }
  });
  return output;
}

// gradInput_c = g_c scale_c^-beta - 2 alpha beta / size * x_c * sum over the channels i whose
// window holds c (i in [c - size / 2, c + (size - 1) / 2]) of g_i x_i scale_i^(-beta - 1).
const Tensor& SpatialCrossMapLRN::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  checkInput(input, "updateGradInput");
  checkGradOutput(input, gradOutput, "updateGradInput");
  // scale comes from updateOutput on this input (Torch's contract); recomputed when it cannot be.
  if (!scale.defined() || scale.sizes() != input.sizes() || scale.dtype() != input.dtype()) updateOutput(input);
  const Tensor x = input.contiguous();
  const Tensor gy = gradOutput.contiguous();
  ensure(gradInput, x.sizes(), x);
  ensure(ratio_, x.sizes(), x);
  const Planes p(x);
  const int64_t before = (size - 1) / 2, after = size / 2;
  tensor::dispatch_f32_f64(x.dtype(), "nn.SpatialCrossMapLRN", [&](auto tag) {
    using T = decltype(tag);
    const T* xd = x.data<T>();
    const T* gd = gy.data<T>();
    const T* sd = scale.data<T>();
    T* gx = gradInput.data<T>();
    T* rd = ratio_.data<T>();
    const T b = static_cast<T>(beta);
    const T coef = static_cast<T>(2 * alpha * beta / static_cast<double>(size));
    const bool tq = beta == 0.75;
    const int64_t total = p.n * p.c * p.hw;
#pragma omp parallel for schedule(static) if (p.parallel)
    for (int64_t i = 0; i < total; ++i) {
      gx[i] = gd[i] * pow_neg(sd[i], b, tq);
      rd[i] = gx[i] * xd[i] / sd[i];
    }
#pragma omp parallel for schedule(static) if (p.parallel)
    for (int64_t nc = 0; nc < p.n * p.c; ++nc) {
      const int64_t c = nc % p.c;
      const T* rn = rd + (nc - c) * p.hw;
      const T* xc = xd + nc * p.hw;
      T* g = gx + nc * p.hw;
      for (int64_t j = std::max<int64_t>(c - after, 0); j <= std::min(c + before, p.c - 1); ++j) {
        const T* rj = rn + j * p.hw;
        for (int64_t i = 0; i < p.hw; ++i) g[i] -= coef * xc[i] * rj[i];
      }
    }
  });
  return gradInput;
}

tensor::Json SpatialCrossMapLRN::config() const {
  return tensor::Json::Object{{"size", size}, {"alpha", alpha}, {"beta", beta}, {"k", k}};
}

ModulePtr SpatialCrossMapLRN::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t size = c.integer("size", 5);
  const double alpha = c.number("alpha", 1e-4), beta = c.number("beta", 0.75), k = c.number("k", 1);
  c.finish();
  return std::make_shared<SpatialCrossMapLRN>(size, alpha, beta, k);
}

}  // namespace nn
