// SpatialTransformer.h: the spatial transformer's sampling (Jaderberg et al.; Theano's
// dnn_spatialtf), the CPU reference of cudnn/ops/spatial_tf.h and the compute of
// nn::SpatialTransformer:
//   spatial_tf(img [N x C x H x W], theta [N x 2 x 3], outH, outW) -> [N x C x outH x outW]
// an affine grid, then bilinear sampling with zeros outside the image, corners aligned
// (Note [Spatial transformer grid]); spatial_tf_backward gives the gradients with respect to
// img and theta. float32 and float64; N may be 0.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/Tensor.h"

namespace nn {

// Note [Spatial transformer grid]
// Output pixel (i, j) sits at x = -1 + 2 j / (outW - 1), y = -1 + 2 i / (outH - 1) (0 for a
// dim of size 1), goes through theta to (gx, gy) = theta [x, y, 1]^T, and reads the image at
// the (fractional) pixel ix = (gx + 1) / 2 * (W - 1), iy = (gy + 1) / 2 * (H - 1): corners are
// aligned, so gx = -1 and 1 are the centres of the first and last columns. The value is the
// bilinear blend of the four pixels around (ix, iy) (floor's cell: a sample exactly on a pixel
// takes the cell to its right and below, with weight 0 there), pixels outside the image being
// 0. This is cuDNN's sampler (cudnnSpatialTfGridGenerator / Sampler) and PyTorch's
// affine_grid + grid_sample(mode='bilinear', padding_mode='zeros', align_corners=True).
// The derivative with respect to (ix, iy) is that cell's one-sided slope: the map is
// continuous but has kinks on the pixel grid lines.
//
// Note [Spatial transformer NaN]
// NaN or Inf in the image reaches every output whose cell holds it (0 * NaN is NaN, even for a
// sample exactly on a pixel), and the theta gradient of those samples; the image gradient
// depends on gradOutput and the weights only. NaN or Inf in a sample's theta leaves its whole
// transform undefined: that sample's output, image gradient and theta gradient are all NaN
// (cuDNN alone gives a mix of NaN and numbers there; cudnn::spatial_tf makes it this). A sample
// position more than one pixel outside the image (one that overflowed to Inf from a finite theta
// included) reads zeros.

double spatial_tf_coordinate(int64_t i, int64_t n);  // the x or y of output index i of n

struct SpatialTfGrads {
  tensor::Tensor gradImage;  // [N x C x H x W]
  tensor::Tensor gradTheta;  // [N x 2 x 3]
};

// Shape checks shared by both backends (dtype and device are each backend's): img 4-d with
// C, H, W >= 1, theta [N x 2 x 3], outH, outW >= 1, gradOutput [N x C x outH x outW], all of
// one dtype on one device. `where` prefixes the messages ("nn::spatial_tf: ").
void check_spatial_tf_arguments(const std::string& where, const tensor::Tensor& img, const tensor::Tensor& theta,
                                int64_t outH, int64_t outW);
void check_spatial_tf_gradient(const std::string& where, const tensor::Tensor& img, const tensor::Tensor& theta,
                               const tensor::Tensor& gradOutput);

tensor::Tensor spatial_tf(const tensor::Tensor& img, const tensor::Tensor& theta, int64_t outH, int64_t outW);
SpatialTfGrads spatial_tf_backward(const tensor::Tensor& img, const tensor::Tensor& theta,
                                   const tensor::Tensor& gradOutput);

// The same into the caller's buffers (reused when they fit, see nn::ensure); every argument
// checked as above. The gradients are written, not accumulated.
void spatial_tf_forward(const tensor::Tensor& img, const tensor::Tensor& theta, int64_t outH, int64_t outW,
                        tensor::Tensor& output);
void spatial_tf_backward(const tensor::Tensor& img, const tensor::Tensor& theta, const tensor::Tensor& gradOutput,
                         tensor::Tensor& gradImage, tensor::Tensor& gradTheta);

}  // namespace nn
