// CosineDistance.cpp
#include "nn/CosineDistance.h"

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"

namespace nn {

namespace {
constexpr double kEps = 1e-12;  // Torch's
}

const Value& CosineDistance::updateOutputValue(const Value& input) {
  const std::vector<Tensor> xs = rowPair(input, "updateOutput");
  const Tensor n1 = xs[0].square().sum(-1).add(kEps), n2 = xs[1].square().sum(-1).add(kEps);
  output = xs[0].mul(xs[1]).sum(-1).mul(n1.mul(n2).rsqrt());
  outputValue = output;
  return outputValue;
}

const Value& CosineDistance::updateGradInputValue(const Value& input, const Value& gradOutput) {
  const std::vector<Tensor> xs = rowPair(input, "updateGradInput");
  Shape outShape = xs[0].sizes();
  outShape.pop_back();
  const Tensor& g = gradOutput.tensor(where("updateGradInput"), "gradOutput");
  check_grad_output_shape(where("updateGradInput"), outShape, g);
  const Tensor n1 = xs[0].square().sum(-1, true).add(kEps), n2 = xs[1].square().sum(-1, true).add(kEps);
  const Tensor w = n1.mul(n2).rsqrt();
  const Tensor out = xs[0].mul(xs[1]).sum(-1, true).mul(w);
  const Tensor gu = g.unsqueeze(-1);
  const Tensor g1 = xs[1].mul(w).sub(xs[0].mul(out.div(n1))).mul(gu);
  const Tensor g2 = xs[0].mul(w).sub(xs[1].mul(out.div(n2))).mul(gu);
  gradInputValue = Table{g1, g2};
  return gradInputValue;
}

ModulePtr CosineDistance::fromConfig(const tensor::Json& config) {
  ConfigReader(config, kTypeName).finish();
  return std::make_shared<CosineDistance>();
}

}  // namespace nn
