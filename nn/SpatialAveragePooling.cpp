// SpatialAveragePooling.cpp
#include "nn/SpatialAveragePooling.h"

#include "nn/ModuleConfig.h"

namespace nn {

SpatialAveragePooling::SpatialAveragePooling(int64_t kW, int64_t kH, int64_t dW, int64_t dH, int64_t padW, int64_t padH)
    : SpatialPooling(kW, kH, dW, dH, padW, padH) {
  checkArguments();
}

const Tensor& SpatialAveragePooling::updateOutput(const Tensor& input) {
  averageForward(input, count_include_pad);
  return output;
}

const Tensor& SpatialAveragePooling::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  averageBackward(input, gradOutput, count_include_pad);
  return gradInput;
}

tensor::Json SpatialAveragePooling::config() const {
  tensor::Json c = SpatialPooling::config();
  c.set("count_include_pad", count_include_pad);
  return c;
}

ModulePtr SpatialAveragePooling::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t kW = c.integer("kW"), kH = c.integer("kH"), dW = c.integer("dW", 1), dH = c.integer("dH", 1);
  const int64_t padW = c.integer("padW", 0), padH = c.integer("padH", 0);
  auto m = std::make_shared<SpatialAveragePooling>(kW, kH, dW, dH, padW, padH);
  m->ceil_mode = c.flag("ceil_mode", false);
  m->count_include_pad = c.flag("count_include_pad", true);
  c.finish();
  return m;
}

}  // namespace nn
