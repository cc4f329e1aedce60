// SpatialTransformer.cpp
#include "cudnn/SpatialTransformer.h"

#include "cudnn/core/Opaque.h"
#include "cudnn/ops/spatial_tf.h"

template class cudnn::detail::Opaque<cudnn::SpatialTfPlan>;

namespace cudnn {

void SpatialTransformer::sample(const Tensor& input, const Tensor& th) {
  check_on_device(where("updateOutput"), input, Tensor());
  spatial_tf_forward(*plan_, input, th, outH, outW, output);
}

void SpatialTransformer::sampleBackward(const Tensor& input, const Tensor& th, const Tensor& gradOutput,
                                        Tensor& gradImage, Tensor& gradTh) {
  check_grad_on_device(where("backward"), input, gradOutput);
  spatial_tf_backward(*plan_, input, th, gradOutput, gradImage, gradTh);
}

}  // namespace cudnn
