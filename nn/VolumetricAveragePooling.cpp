// VolumetricAveragePooling.cpp
#include "nn/VolumetricAveragePooling.h"

#include "nn/ModuleConfig.h"

namespace nn {

VolumetricAveragePooling::VolumetricAveragePooling(int64_t kT, int64_t kW, int64_t kH, int64_t dT, int64_t dW,
                                                   int64_t dH, int64_t padT, int64_t padW, int64_t padH)
    : VolumetricPooling(kT, kW, kH, dT, dW, dH, padT, padW, padH) {
  checkArguments();
}

const Tensor& VolumetricAveragePooling::updateOutput(const Tensor& input) {
  averageForward(input, count_include_pad);
  return output;
}

const Tensor& VolumetricAveragePooling::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  averageBackward(input, gradOutput, count_include_pad);
  return gradInput;
}

tensor::Json VolumetricAveragePooling::config() const {
  tensor::Json c = VolumetricPooling::config();
  c.set("count_include_pad", count_include_pad);
  return c;
}

ModulePtr VolumetricAveragePooling::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t kT = c.integer("kT"), kW = c.integer("kW"), kH = c.integer("kH");
  const int64_t dT = c.integer("dT"), dW = c.integer("dW"), dH = c.integer("dH");
  const int64_t padT = c.integer("padT", 0), padW = c.integer("padW", 0), padH = c.integer("padH", 0);
  auto m = std::make_shared<VolumetricAveragePooling>(kT, kW, kH, dT, dW, dH, padT, padW, padH);
  m->ceil_mode = c.flag("ceil_mode", false);
  m->count_include_pad = c.flag("count_include_pad", true);
  c.finish();
  return m;
}

}  // namespace nn
