// SpatialTransformer.h: cudnn.SpatialTransformer, nn::SpatialTransformer with the sampling on
// cuDNN (cudnn::SpatialTfPlan: cudnnSpatialTfGridGenerator* and cudnnSpatialTfSampler*): the
// localisation network (its child, cudnn or nn) maps the input [N x C x H x W] on a CUDA
// device to theta [N x 6] or [N x 2 x 3]; the input is sampled on theta's grid into
// [N x C x outH x outW], and backward sends gradOutput through the sampler to the input and to
// theta, then theta's gradient through the localisation network. float32, float64, float16 and
// bfloat16 (16-bit data cuDNN refuses runs in float32 copies, Note [16-bit spatial transformer]).
#pragma once

#include "cudnn/Opaque.h"
#include "cudnn/TensorOpBase.h"
#include "nn/SpatialTransformer.h"

namespace cudnn {

class SpatialTfPlan;  // cudnn/ops/spatial_tf.h (not installed)

class SpatialTransformer : public TensorOpBase<nn::SpatialTransformer> {
 public:
  using TensorOpBase::TensorOpBase;

 protected:
  void sample(const Tensor& input, const Tensor& theta) override;
  void sampleBackward(const Tensor& input, const Tensor& theta, const Tensor& gradOutput, Tensor& gradImage,
                      Tensor& gradTheta) override;

 private:
  detail::Opaque<SpatialTfPlan> plan_;
};

}  // namespace cudnn
