// Swish.cpp: the reference computes in float64, element by element, as a reference should be
// read: y = x s, dy/dx = s + beta x s (1 - s), dy/dbeta = x^2 s (1 - s), s = sigmoid(beta x).
#include "Swish.h"

#include <cmath>
#include <functional>
#include <sstream>

#include "nn/ModuleConfig.h"

namespace ext {

using tensor::DType;
using tensor::Tensor;

Swish::Swish(double beta0) : beta0_(beta0) {
  beta = tensor::full({1}, beta0, DType::Float32);
  gradBeta = tensor::zeros({1}, DType::Float32);
}

std::string Swish::str() const {
  std::ostringstream os;
  os << type_name() << " (beta:" << beta0_ << ")";
  return os.str();
}

tensor::Json Swish::config() const { return tensor::Json::Object{{"beta", beta0_}}; }

nn::ModulePtr Swish::fromConfig(const tensor::Json& config) {
  nn::ConfigReader c(config, kTypeName);
  const double b = c.number("beta", 1.0);
  c.finish();
  return std::make_shared<Swish>(b);
}

void Swish::visitState(nn::StateVisitor& v) { v.parameter("beta", beta, gradBeta); }

void Swish::check(const char* method, const Tensor& input, const Tensor* gradOutput) const {
  if (!tensor::is_floating(input.dtype()) || input.dtype() != beta.dtype())
    throw tensor::Error(where(method) + "expected a " + std::string(tensor::name(beta.dtype())) +
                        " input (beta's dtype), got " + input.description());
  if (gradOutput && gradOutput->sizes() != input.sizes())
    throw tensor::Error(where(method) + "expected gradOutput of the input's shape " + tensor::shape_str(input.sizes()) +
                        ", got " + tensor::shape_str(gradOutput->sizes()));
}

namespace {
double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

// fn(x, g, s) for every element, in float64; `out` (when given) gets the results, in `like`'s dtype.
Tensor map(const Tensor& x, const Tensor* g, double b, const std::function<double(double, double, double)>& fn) {
  const std::vector<double> xs = x.to(DType::Float64).contiguous().to_vector<double>();
  const std::vector<double> gs = g ? g->to(DType::Float64).contiguous().to_vector<double>() : std::vector<double>{};
  Tensor out = tensor::zeros(x.sizes(), DType::Float64);
  double* o = out.data<double>();
  for (size_t i = 0; i < xs.size(); ++i) o[i] = fn(xs[i], g ? gs[i] : 0.0, sigmoid(b * xs[i]));
  return out;
}
}  // namespace

const Tensor& Swish::updateOutput(const Tensor& input) {
  check("updateOutput", input);
  output = map(input, nullptr, beta.item(), [](double x, double, double s) { return x * s; }).to(input.dtype());
  return output;
}

const Tensor& Swish::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  check("updateGradInput", input, &gradOutput);
  const double b = beta.item();
  gradInput = map(input, &gradOutput, b, [b](double x, double g, double s) {
                return g * (s + b * x * s * (1 - s));
              }).to(input.dtype());
  return gradInput;
}

void Swish::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  check("accGradParameters", input, &gradOutput);
  const Tensor d =
      map(input, &gradOutput, beta.item(), [](double x, double g, double s) { return g * x * x * s * (1 - s); });
  gradBeta.add_(scale * d.sum().item());
}

}  // namespace ext
