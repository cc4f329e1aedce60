// Normalize.cpp: checks and buffers around kernels::normalize_* (nn/kernels/Reduce.h).
#include "nn/Normalize.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"
#include "nn/kernels/Reduce.h"

namespace nn {

namespace {
bool valid(double p, double eps) { return p > 0 && !std::isnan(p) && std::isfinite(eps) && eps >= 0; }

std::string describe(double p, double eps) {
  std::ostringstream s;
  s << "p = " << p << ", eps = " << eps;
  return s.str();
}
}  // namespace

Normalize::Normalize(double p_, double eps_) : p(p_), eps(eps_) {
  if (!valid(p, eps)) {
    throw Error(std::string(kTypeName) + ": expected p > 0 (inf allowed) and a finite eps >= 0, got " +
                describe(p, eps));
  }
}

std::pair<int64_t, int64_t> Normalize::checkInput(const Tensor& input, const char* method, bool dtypes) const {
  if (dtypes) check_float(where(method), input);
  if (!valid(p, eps)) {
    throw Error(where(method) + "expected p > 0 (inf allowed) and a finite eps >= 0, got " + describe(p, eps));
  }
  if (input.dim() != 1 && input.dim() != 2) {
    throw Error(where(method) + "expected a [N x D] or [D] input, got " + input.description());
  }
  const int64_t d = input.size(input.dim() - 1);
  return {input.dim() == 2 ? input.size(0) : 1, d};
}

void Normalize::checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  if (gradOutput.sizes() != input.sizes() || gradOutput.dtype() != input.dtype()) {
    throw Error(where(method) + "expected gradOutput of the input's shape and dtype (" + input.description() +
                "), got " + gradOutput.description());
  }
}

const Tensor& Normalize::updateOutput(const Tensor& input) {
  // named copies, not structured bindings: clang 14 cannot capture those in the lambda below
  const auto shape = checkInput(input, "updateOutput");
  const int64_t rows = shape.first, d = shape.second;
  const Tensor x = input.contiguous();
  ensure(output, x.sizes(), x);
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    kernels::normalize_forward<T>(x.data<T>(), output.data<T>(), rows, d, p, eps);
  });
  return output;
}

const Tensor& Normalize::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const auto shape = checkInput(input, "updateGradInput");
  const int64_t rows = shape.first, d = shape.second;
  checkGradOutput(input, gradOutput, "updateGradInput");
  const Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  ensure(gradInput, x.sizes(), x);
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    kernels::normalize_backward<T>(x.data<T>(), gy.data<T>(), gradInput.data<T>(), rows, d, p, eps);
  });
  return gradInput;
}

std::string Normalize::str() const {
  // Torch: "%d" for an integer p, else "%f" (which prints inf as "inf")
  char buf[64];
  if (std::isfinite(p) && std::floor(p) == p) {
    std::snprintf(buf, sizeof buf, "(%lld)", static_cast<long long>(p));
  } else {
    std::snprintf(buf, sizeof buf, "(%f)", p);
  }
  return type_name() + buf;
}

tensor::Json Normalize::config() const {
  if (std::isinf(p)) return tensor::Json::Object{{"p", "inf"}, {"eps", eps}};
  return tensor::Json::Object{{"p", p}, {"eps", eps}};
}

ModulePtr Normalize::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const tensor::Json* pj = config.is_object() ? config.find("p") : nullptr;
  double p = 2;
  if (pj && pj->is_string()) {
    const std::string s = c.string("p", "");
    if (s != "inf") throw Error(std::string(kTypeName) + " config: expected p a number or \"inf\", got \"" + s + "\"");
    p = std::numeric_limits<double>::infinity();
  } else {
    p = c.number("p", 2);
  }
  const double eps = c.number("eps", 1e-10);
  c.finish();
  return std::make_shared<Normalize>(p, eps);
}

}  // namespace nn
