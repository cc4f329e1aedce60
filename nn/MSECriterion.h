// MSECriterion.h: loss = sum (input - target)^2, divided by the number of elements under
// sizeAverage; gradInput = 2 (input - target) / n. Input and target have the same shape
// (stricter than Torch, which compared element counts and so paired [3 x 2] with [2 x 3]
// silently) and dtype. Twin: cudnn::MSECriterion.
#pragma once

#include "nn/Criterion.h"

namespace nn {

class MSECriterion : public Criterion {
 public:
  explicit MSECriterion(bool sizeAverage = true);

  double updateOutput(const Tensor& input, const Tensor& target) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& target) override;
  static constexpr std::string_view kTypeName = "nn.MSECriterion";
  std::string type_name() const override { return std::string(kTypeName); }

  bool sizeAverage;

 protected:
  void checkInput(const Tensor& input, const Tensor& target, const char* method) const;
  // The shape half of checkInput (the cudnn twin checks dtypes its own way).
  void checkSizes(const Tensor& input, const Tensor& target, const char* method) const;
};

}  // namespace nn
