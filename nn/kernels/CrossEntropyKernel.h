// CrossEntropyKernel.h: the numeric core the classification criteria share
// (ClassNLL, CrossEntropy, SpatialCrossEntropy, VolumetricCrossEntropy). Every input is a
// contiguous float32/float64 [outer x classes x inner] array (inner = 1 for
// [batch x classes], H*W or T*H*W for per-pixel classes), targets are [outer x inner]
// 0-based class indices (see class_indices). Weighted, with an ignored index, normalised as
// Torch's THNN: sizeAverage divides by the total weight of the counted targets (not at all
// when that is 0, so a batch of ignored targets gives loss 0 and zero gradients).
#pragma once

#include <cstdint>
#include <string>

#include "tensor/Tensor.h"

namespace nn::kernels {

struct ClassLayout {
  int64_t outer = 1, classes = 1, inner = 1;
};

// The target as a contiguous Int64 tensor of class indices (no copy when it already is
// one), after checking every value is an integer in [0, classes) or ignoreIndex. Errors
// name `where`, the offending value and its position: "... got 7 at target[1, 2]".
tensor::Tensor class_indices(const tensor::Tensor& target, int64_t classes, int64_t ignoreIndex,
                             const std::string& where);
// Shape checks, shared by the criteria: input [classes] with a one-element target, or
// [batch x classes] with a [batch] target; and input [N x classes x d1 x ... x dk] with a
// [N x d1 x ... x dk] target (k = spatialDims). Errors name `where` and both shapes.
ClassLayout batch_class_layout(const std::string& where, const tensor::Tensor& input, const tensor::Tensor& target);
ClassLayout pixel_class_layout(const std::string& where, const tensor::Tensor& input, const tensor::Tensor& target,
                               int64_t spatialDims);
// The same shape checks without the float32/float64 check (the cudnn twins take 16-bit inputs).
ClassLayout batch_class_shape(const std::string& where, const tensor::Tensor& input, const tensor::Tensor& target);
ClassLayout pixel_class_shape(const std::string& where, const tensor::Tensor& input, const tensor::Tensor& target,
                              int64_t spatialDims);
// Class weights as a criterion stores them: undefined (all ones) or a 1-d floating tensor.
tensor::Tensor checked_class_weights(const std::string& where, const tensor::Tensor& weights);
// Throws unless weights is undefined or [classes] of the input's dtype and device.
void check_class_weights(const std::string& where, const tensor::Tensor& weights, const tensor::Tensor& input,
                         int64_t classes);

// Sum of -w[t] * input[t] over the counted positions of a log-probability input, divided by
// their total weight under sizeAverage; and its gradient (-w[t] / norm at each target).
double class_nll_loss(const tensor::Tensor& logp, const tensor::Tensor& indices, const tensor::Tensor& weights,
                      int64_t ignoreIndex, bool sizeAverage, const ClassLayout& l);
void class_nll_backward(const tensor::Tensor& logp, const tensor::Tensor& indices, const tensor::Tensor& weights,
                        int64_t ignoreIndex, bool sizeAverage, const ClassLayout& l, tensor::Tensor& gradInput);

// The same on log_softmax(input) over the classes, computed stably (log-sum-exp) into
// `logp` (a reused buffer); the gradient is w[t] / norm * (softmax(input) - onehot(t)).
double cross_entropy_loss(const tensor::Tensor& input, const tensor::Tensor& indices, const tensor::Tensor& weights,
                          int64_t ignoreIndex, bool sizeAverage, const ClassLayout& l, tensor::Tensor& logp);
void cross_entropy_backward(const tensor::Tensor& input, const tensor::Tensor& indices, const tensor::Tensor& weights,
                            int64_t ignoreIndex, bool sizeAverage, const ClassLayout& l, tensor::Tensor& logp,
                            tensor::Tensor& gradInput);

}  // namespace nn::kernels
