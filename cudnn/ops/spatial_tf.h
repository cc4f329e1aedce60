// spatial_tf.h: cuDNN's spatial transformer, Theano's dnn_spatialtf and its gradients:
//   spatial_tf(img [N x C x H x W], theta [N x 2 x 3], outH, outW)   out [N x C x outH x outW]
//   spatial_tf_backward(img, theta, gradOutput)                      {gradImage, gradTheta}
// cudnnSpatialTfGridGeneratorForward (theta -> grid [N x outH x outW x 2]) then
// cudnnSpatialTfSamplerForward; backward: cudnnSpatialTfSamplerBackward (image and grid
// gradients) then cudnnSpatialTfGridGeneratorBackward (theta's). The semantics are
// nn::spatial_tf's (Note [Spatial transformer grid] in nn/kernels/SpatialTransformer.h), its
// CPU twin, NaN and Inf included (Note [Non-finite theta]). float32, float64, float16, bfloat16
// (Note [16-bit spatial transformer]); N may be 0.
#pragma once

#include "cudnn/Functional.h"
#include "cudnn/core/Descriptors.h"
#include "nn/kernels/SpatialTransformer.h"

namespace cudnn {

// Descriptors, grid buffers and the dtypes cuDNN refused, kept between calls (a module owns one).
// Arguments: contiguous tensors of one dtype on one CUDA device, shapes checked, N >= 1.
class SpatialTfPlan {
 public:
  void forward(const Tensor& img, const Tensor& theta, const Tensor& out);
  // gradImage and gradTheta are written, not accumulated.
  void backward(const Tensor& img, const Tensor& theta, const Tensor& gradOutput, const Tensor& gradImage,
                const Tensor& gradTheta);
  // true once cuDNN refused a forward in `dtype` (Note [16-bit spatial transformer]): float32 copies
  bool computes_in_float32(DType dtype) const;

 private:
  struct Attempt {
    cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
    const char* call = "";
  };
  Attempt try_forward(const Tensor& img, const Tensor& theta, const Tensor& out);
  Attempt try_backward(const Tensor& img, const Tensor& theta, const Tensor& gradOutput, const Tensor& gradImage,
                      const Tensor& gradTheta);
  // theta -> grid_ [N x outH x outW x 2] (Note [Size-1 output dims])
  Attempt make_grid(const Tensor& theta, int64_t C, int64_t outH, int64_t outW, Tensor& grid);
  void refuse(const Attempt& a, DType dtype);

  unsigned refused_dtypes_ = 0;  // bit per tensor::DType
  SpatialTransformerDescriptor grid_desc_, sampler_desc_;
  TensorDescriptor x_desc_, y_desc_;
  Tensor grid_full_, grid_, dgrid_, dgrid_full_, chunk_x_, chunk_y_, chunk_dx_;
};

// Checked entry points (shapes as nn::check_spatial_tf_arguments, CUDA tensors of a cuDNN
// dtype, at most 2^31 - 1 elements each); the output buffers are reused when they fit.
void spatial_tf_forward(SpatialTfPlan& plan, const Tensor& img, const Tensor& theta, int64_t outH, int64_t outW,
                        Tensor& output);
void spatial_tf_backward(SpatialTfPlan& plan, const Tensor& img, const Tensor& theta, const Tensor& gradOutput,
                         Tensor& gradImage, Tensor& gradTheta);

// spatial_tf and spatial_tf_backward: cudnn/Functional.h.

}  // namespace cudnn
