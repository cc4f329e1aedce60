// SiLU.h: y = x sigmoid(x) (swish; Elfwing et al. 2017), any shape. The backward pass reads
// the input, so there is no in-place variant. Twin: cudnn::SiLU (cudnn/SiLU.h).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class SiLU : public ActivationModule<SiLU, Activation::SiLU> {
 public:
  static constexpr std::string_view kTypeName = "nn.SiLU";
  // no "inplace": SiLU has no in-place variant
  tensor::Json config() const override { return tensor::Json::Object{}; }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn
