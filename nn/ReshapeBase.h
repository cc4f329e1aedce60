// ReshapeBase.h: the shared base of Reshape and View, which differ only in the shape they give
// an input (outputShape): output is the input reshaped to it (sharing the input's storage where
// the strides allow, a copy otherwise), and gradInput is gradOutput, checked to have the
// output's shape, reshaped as the input. Views only, so it computes on any device. Twins:
// cudnn::Reshape and cudnn::View (cudnn::TensorOpBase).
#pragma once

#include <optional>

#include "nn/Module.h"

namespace nn {

class ReshapeBase : public Module {
 public:
  // What a subclass defines: the shape `input` is reshaped to (with the batch dimension where
  // there is one).
  virtual Shape outputShape(const Tensor& input) const = 0;

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  bool computesOn(Device) const override { return true; }  // views only

 protected:
  // Reshape's and View's config(): the requested sizes, and the option that picks the batch
  // dimension under `key` (null while unset: the module decides from the input).
  template <class T>
  static tensor::Json sizeConfig(const Shape& size, const char* key, const std::optional<T>& option) {
    return tensor::Json::Object{{"size", tensor::Json::Array(size.begin(), size.end())},
                                {key, option ? tensor::Json(*option) : tensor::Json()}};
  }
};

}  // namespace nn
