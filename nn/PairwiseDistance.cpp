// PairwiseDistance.cpp
#include "nn/PairwiseDistance.h"

#include <cmath>
#include <cstdio>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"

namespace nn {

PairwiseDistance::PairwiseDistance(double p_, double eps_) : p(p_), eps(eps_) {
  if (!(p >= 1) || !std::isfinite(p) || !std::isfinite(eps)) {
    throw Error(std::string(kTypeName) + ": expected a finite p >= 1 and a finite eps, got p " + std::to_string(p) +
                ", eps " + std::to_string(eps));
  }
}

const Value& PairwiseDistance::updateOutputValue(const Value& input) {
  const std::vector<Tensor> xs = rowPair(input, "updateOutput");
  const Tensor diff = xs[0].sub(xs[1]).add(eps);
  output = p == 2 ? diff.square().sum(-1).sqrt() : diff.abs().pow(p).sum(-1).pow(1 / p);
  outputValue = output;
  return outputValue;
}

const Value& PairwiseDistance::updateGradInputValue(const Value& input, const Value& gradOutput) {
  const std::vector<Tensor> xs = rowPair(input, "updateGradInput");
  Shape outShape = xs[0].sizes();
  outShape.pop_back();
  const Tensor& g = gradOutput.tensor(where("updateGradInput"), "gradOutput");
  check_grad_output_shape(where("updateGradInput"), outShape, g);
  const Tensor diff = xs[0].sub(xs[1]).add(eps);
  const Tensor d = p == 2 ? diff.square().sum(-1, true).sqrt() : diff.abs().pow(p).sum(-1, true).pow(1 / p);
  // g / d^(p-1), zero where d is zero (PyTorch's masked norm backward)
  const Tensor scale = g.unsqueeze(-1).div(p == 2 ? d : d.pow(p - 1)).mul(d.ne(0).to(d.dtype()));
  // diff |diff|^(p-2) as sign(diff) |diff|^(p-1): finite at diff = 0 for p >= 1
  const Tensor g1 = p == 2 ? diff.mul(scale) : diff.sign().mul(diff.abs().pow(p - 1)).mul(scale);
  gradInputValue = Table{g1, g1.neg()};
  return gradInputValue;
}

std::string PairwiseDistance::str() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "(p=%g)", p);
  return type_name() + buf;
}

tensor::Json PairwiseDistance::config() const { return tensor::Json::Object{{"p", p}, {"eps", eps}}; }

ModulePtr PairwiseDistance::fromConfig(const tensor::Json& config) {
  ConfigReader r(config, kTypeName);
  const double p = r.number("p", 2), eps = r.number("eps", 1e-6);
  r.finish();
  return std::make_shared<PairwiseDistance>(p, eps);
}

}  // namespace nn
