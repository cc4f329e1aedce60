// MSECriterion.h: loss = sum (input - target)^2, divided by the number of elements under
// sizeAverage; gradInput = 2 (input - target) / n. Input and target hold the same number of
// elements (Torch's contract; shapes may differ, gradInput has the input's); the target
// has the input's dtype. Twin: cudnn::MSECriterion.
#pragma once

#include "nn/Criterion.h"

namespace nn {

class MSECriterion : public Criterion {
 public:
  explicit MSECriterion(bool sizeAverage = true);

  double updateOutput(const Tensor& input, const Tensor& target) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& target) override;
  std::string type_name() const override { return "nn.MSECriterion"; }

  bool sizeAverage;

 protected:
  void checkInput(const Tensor& input, const Tensor& target, const char* method) const;
  // The element-count half of checkInput (the cudnn twin checks dtypes its own way).
  void checkSizes(const Tensor& input, const Tensor& target, const char* method) const;
};

}  // namespace nn
