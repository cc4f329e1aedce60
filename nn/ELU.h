// ELU.h: y = x for x > 0, alpha * (exp(x) - 1) otherwise, any shape (Clevert et al. 2015);
// gradInput from the output as Torch computes it (y <= 0: gradOutput * (y + alpha)).
// In place as ReLU. Prints as Torch: "nn.ELU (alpha:1.000000)".
// Twin: cudnn::ELU (CUDNN_ACTIVATION_ELU, coef = alpha).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class ELU : public ActivationModule<ELU, Activation::ELU> {
 public:
  explicit ELU(double alpha = 1.0, bool inplace = false);
  double coef() const override { return alpha; }
  static constexpr std::string_view kTypeName = "nn.ELU";
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;

  double alpha;
};

}  // namespace nn
