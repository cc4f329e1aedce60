// Linear.h: y = x W^T + b for x of [nInput], [batch x nInput] or, as PyTorch's nn.Linear,
// [* x nInput] with any leading dims (y is [* x nOutput]; Note [Linear over leading dims] in
// nn/Linear.cpp); W is [nOutput x nInput].
// Initialised as Torch does: U(-1/sqrt(nInput), 1/sqrt(nInput)) for weight and bias.
// Twin: cudnn::Linear (cuBLAS).
#pragma once

#include "nn/Module.h"

namespace nn {

class Linear : public Module {
 public:
  Linear(int64_t inputSize, int64_t outputSize, bool bias = true);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  // x W^T + b + addend (Note [Sums in the product's epilogue] in nn/Module.cpp)
  bool addsInForward() const override { return true; }
  const Tensor& updateOutputAdding(const Tensor& input, const Tensor& addend) override;
  void reset(double stdv = -1);  // stdv < 0: Torch's default 1/sqrt(inputSize)
  static constexpr std::string_view kTypeName = "nn.Linear";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;

  int64_t inputSize, outputSize;
  Tensor weight, bias, gradWeight, gradBias;

 protected:
  void visitState(StateVisitor& v) override;
  // [rows x inputSize] of a float32/float64 input [* x inputSize] of the weight's dtype and
  // device (a view where the strides allow, else a copy); throws naming the shapes, dtypes or
  // devices otherwise.
  Tensor batched(const Tensor& input, const char* method) const;
  // The shape half of batched() alone (the cudnn twin checks dtypes and devices its own way);
  // checks the parameters' shapes too (Note [Parameters are checked where they are used]).
  Tensor asBatch(const Tensor& input, const char* method) const;
  // The rows asBatch() would have (numel / inputSize), after its checks, without the view or copy.
  int64_t batchRows(const Tensor& input, const char* method) const;
  // The output's shape for `input`: its shape with the last size outputSize.
  Shape outputShape(const Tensor& input) const;
  // Throws unless gradOutput has the output's shape for `input` ([* x outputSize]): shapes,
  // not element counts, so [3 x 2] for [2 x 3] is refused.
  void checkGradOutputShape(const Tensor& input, const Tensor& gradOutput, const char* method) const;
  // weight and bias of the configured shapes, and with `gradients` gradWeight and gradBias too.
  void checkParameters(const char* method, bool gradients) const;
};

}  // namespace nn
