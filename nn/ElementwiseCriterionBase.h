// ElementwiseCriterionBase.h: the shared base of the criteria whose loss is a sum of one term
// per input element (BCE, BCEWithLogits, SmoothL1, Abs, DistKLDiv, HingeEmbedding,
// MultiLabelSoftMargin): loss = sum_i l(input_i, target_i, w_i, pw_i) / divisor, gradInput_i =
// dl/dinput_i / divisor, the terms of nn/kernels/ElementwiseLoss.h. Input and target have the
// same shape (MSECriterion's rule) and dtype; weights (per element, the criteria that take
// them) have a shape that ends the input's ([C] for [N x C], or the input's own) and broadcast
// over the leading dimensions. The divisor is the element count under sizeAverage and 1
// otherwise (a criterion may say otherwise: divisor()); an empty input costs 0.
// Twins: cudnn::ElementwiseCriterionBase, over the same terms.
#pragma once

#include <string>
#include <string_view>

#include "nn/Criterion.h"
#include "nn/kernels/ElementwiseLoss.h"

namespace nn {

// What one call computes: the constants, the weights (undefined: none) and the divisor.
struct ElementTerms {
  kernels::ElementLossParams params;
  Tensor weights, posWeight;
  double divisor = 1;
};

class ElementwiseCriterionBase : public Criterion {
 public:
  double updateOutput(const Tensor& input, const Tensor& target) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& target) override;

  bool sizeAverage;

 protected:
  explicit ElementwiseCriterionBase(bool sizeAverage) : sizeAverage(sizeAverage) {}

  virtual kernels::ElementLossParams params() const = 0;
  virtual Tensor elementWeights() const { return Tensor(); }
  virtual Tensor elementPosWeights() const { return Tensor(); }
  // Under sizeAverage the element count, else 1; 0 elements divide by 1.
  virtual double divisor(const tensor::Shape& input) const;
  // Checks the target's shape and the weights against `input` (not dtypes: each backend
  // checks those its own way) and gathers the call's terms.
  ElementTerms checkedTerms(const Tensor& input, const Tensor& target, const char* method) const;
};

// Weights as a criterion stores them: undefined, or a floating tensor (contiguous). name: the
// criterion's type name (a constructor cannot call type_name()).
Tensor checked_element_weights(std::string_view name, Tensor weights);
// Throws unless `weights` (called `what`) is undefined or has a shape that ends `input`'s.
void check_element_weights(const std::string& where, const Tensor& weights, const Tensor& input, const char* what);

}  // namespace nn
