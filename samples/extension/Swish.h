// Swish.h: a user's own module, written outside the library against its installed headers:
// Swish with a learnable beta (Ramachandran et al. 2017), y = x * sigmoid(beta * x), any shape;
// beta = 1 is SiLU. ext::Swish is the nn reference (CPU, float32 and float64, computed in
// float64); ext::CudnnSwish (CudnnSwish.h) is its CUDA twin. register_swish() (Register.cpp)
// makes both known to nn::convert and to model files.
#pragma once

#include <string_view>

#include "nn/Module.h"

namespace ext {

class Swish : public nn::Module {
 public:
  explicit Swish(double beta = 1.0);
  // Public: nn::register_twin<Swish, CudnnSwish>() builds one module by moving the other in.
  Swish(Swish&&) = default;

  static constexpr std::string_view kTypeName = "ext.Swish";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;
  tensor::Json config() const override;
  static nn::ModulePtr fromConfig(const tensor::Json& config);

  const tensor::Tensor& updateOutput(const tensor::Tensor& input) override;
  const tensor::Tensor& updateGradInput(const tensor::Tensor& input, const tensor::Tensor& gradOutput) override;
  void accGradParameters(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale = 1.0) override;

  tensor::Tensor beta, gradBeta;  // [1]

 protected:
  void visitState(nn::StateVisitor& visitor) override;
  // The checks both backends make: a floating input of beta's dtype, a gradOutput of its shape.
  void check(const char* method, const tensor::Tensor& input, const tensor::Tensor* gradOutput = nullptr) const;

 private:
  double beta0_;  // the constructor's beta, for config()
};

}  // namespace ext
