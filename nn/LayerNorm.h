// LayerNorm.h: y = (x - mean) / sqrt(var + eps) * weight + bias over the last k dimensions of
// the input (Ba et al. 2016), which must equal normalizedShape (PyTorch's nn.LayerNorm;
// biased variance). weight (ones) and bias (zeros) have normalizedShape; with
// elementwiseAffine = false there are none. Inputs of any rank >= k, float32 or float64.
// Each forward keeps the per-row statistics in saveMean and saveRstd ([rows], rows = numel /
// prod(normalizedShape); the input's dtype, float32 for 16-bit inputs in the twin) for the
// backward pass; a twin fills the same members. Prints as "nn.LayerNorm([4 x 8], eps=1e-05)".
// Twin: cudnn.LayerNorm.
#pragma once

#include "nn/Module.h"

namespace nn {

class LayerNorm : public Module {
 public:
  explicit LayerNorm(Shape normalizedShape, double eps = 1e-5, bool elementwiseAffine = true);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  void reset();  // weight 1, bias 0
  // output and the statistics (Module::releaseActivations); the twin's too.
  void releaseActivations() override;
  static constexpr std::string_view kTypeName = "nn.LayerNorm";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;

  bool elementwiseAffine() const { return weight.defined(); }

  Shape normalizedShape;
  double eps;
  Tensor weight, bias, gradWeight, gradBias;
  // The last forward's per-row mean and 1/sqrt(var + eps), [rows]: what backward reads.
  Tensor saveMean, saveRstd;

 protected:
  void visitState(StateVisitor& v) override;
  // {rows, cols}: the input's shape must end with normalizedShape (any dtype: shapes only).
  std::pair<int64_t, int64_t> rowsCols(const Tensor& input, const char* method) const;
  // gradOutput of the input's shape and dtype, and statistics from a forward of this shape.
  void checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const;
  // weight and bias (and with `gradients` their gradients) of normalizedShape, dense, bias of
  // weight's dtype and device, where affine (Note [Parameters are checked where they are used]
  // in nn/Buffers.h); rowsCols() checks the values, both backends' accGradParameters the
  // gradients.
  void checkParameters(const char* method, bool gradients) const;
};

}  // namespace nn
