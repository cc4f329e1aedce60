// SpatialMaxPooling.cpp
#include "nn/SpatialMaxPooling.h"

#include "nn/ModuleConfig.h"

namespace nn {

SpatialMaxPooling::SpatialMaxPooling(int64_t kW, int64_t kH, int64_t dW, int64_t dH, int64_t padW, int64_t padH)
    : SpatialPooling(kW, kH, dW, dH, padW, padH) {
  checkArguments();
}

const Tensor& SpatialMaxPooling::updateOutput(const Tensor& input) {
  maxForward(input, indices);
  return output;
}

const Tensor& SpatialMaxPooling::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  maxBackward(input, gradOutput, indices);
  return gradInput;
}

ModulePtr SpatialMaxPooling::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t kW = c.integer("kW"), kH = c.integer("kH"), dW = c.integer("dW"), dH = c.integer("dH");
  const int64_t padW = c.integer("padW", 0), padH = c.integer("padH", 0);
  auto m = std::make_shared<SpatialMaxPooling>(kW, kH, dW, dH, padW, padH);
  m->ceil_mode = c.flag("ceil_mode", false);
  c.finish();
  return m;
}

}  // namespace nn
