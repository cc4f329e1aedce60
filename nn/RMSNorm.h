// RMSNorm.h: y = x / sqrt(mean(x^2) + eps) * weight over the last k dimensions of the input,
// which must equal normalizedShape (Zhang and Sennrich 2019; PyTorch's nn.RMSNorm, HF Llama's
// LlamaRMSNorm). weight (ones) has normalizedShape; with elementwiseAffine = false there is none.
// eps = nullopt takes the epsilon of the type the pass computes in, as torch.rms_norm does
// (std::numeric_limits<opmath_t>::epsilon(): float64's for float64 data, float32's for float32
// and 16-bit data, whose sums are float32; epsFor). Inputs of any rank >= k, float32 or float64 here (the twin also
// takes float16 and bfloat16, accumulated in float32). Each forward keeps the per-row 1/sqrt(mean(x^2) + eps) in
// saveRstd ([rows], rows = numel / prod(normalizedShape); the input's dtype, float32 for 16-bit
// input in the twin) for the backward pass; a twin fills the same member. Prints as
// "nn.RMSNorm([4 x 8], eps=1e-06)" ("eps=None" for the dtype's epsilon).
// Twin: cudnn.RMSNorm.
#pragma once

#include <optional>

#include "nn/Module.h"

namespace nn {

class RMSNorm : public Module {
 public:
  explicit RMSNorm(Shape normalizedShape, std::optional<double> eps = std::nullopt, bool elementwiseAffine = true);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  void reset();  // weight 1
  // output and the statistics (Module::releaseActivations); the twin's too.
  void releaseActivations() override;
  static constexpr std::string_view kTypeName = "nn.RMSNorm";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;

  bool elementwiseAffine() const { return weight.defined(); }
  // The epsilon a pass over data of `dtype` adds: eps, or without one the epsilon of the type it
  // computes in: 2^-52 for float64, 2^-23 (float32's) for float32, float16 and bfloat16.
  double epsFor(tensor::DType dtype) const;

  Shape normalizedShape;
  std::optional<double> eps;
  Tensor weight, gradWeight;
  // The last forward's per-row 1/sqrt(mean(x^2) + eps), [rows]: what backward reads.
  Tensor saveRstd;

 protected:
  void visitState(StateVisitor& v) override;
  // {rows, cols}: the input's shape must end with normalizedShape (any dtype: shapes only);
  // checks the weight too (checkParameters).
  std::pair<int64_t, int64_t> rowsCols(const Tensor& input, const char* method) const;
  // gradOutput of the input's shape and dtype, and statistics from a forward of this shape.
  void checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const;
  // weight (and with `gradients` its gradient) of normalizedShape, dense, where affine (Note
  // [Parameters are checked where they are used] in nn/Buffers.h).
  void checkParameters(const char* method, bool gradients) const;
};

}  // namespace nn
