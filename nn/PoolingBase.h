// PoolingBase.h: the bases of the max and average pooling modules over 2 (Spatial*) and 3
// (Volumetric*) spatial dims. PoolingBase holds what all four and their cudnn twins share:
// argument checks, Torch's output size (outputShape), printing, and the calls into the one
// N-d kernel (nn/kernels/Pooling.h); SpatialPooling and VolumetricPooling hold Torch's fields.
// Input [C x spatial] or [N x C x spatial]; output [.. x C x pooled spatial].
#pragma once

#include <array>

#include "nn/Module.h"
#include "nn/kernels/Pooling.h"

namespace nn {

class PoolingBase : public Module {
 public:
  // The output shape for `input`, as Torch computes it (floor or ceil, see
  // kernels::pool_output_size); throws, naming `method`, for a wrong rank, an empty spatial
  // dim or an input too small for the kernel.
  Shape outputShape(const Tensor& input, const char* method = "outputShape") const;
  // Throws unless kernel and stride are >= 1 and 0 <= padding <= kernel / 2 (Torch's limit).
  // Without a method the message starts with the type name alone (constructors).
  void checkArguments(const char* method = nullptr) const;
  // Throws unless gradOutput has input's dtype and device and the output's shape; returns that
  // shape. Any dtype: the caller checks the input's (the cudnn twins take 16-bit data too).
  Shape checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const;
  // Torch's: nn.SpatialMaxPooling(2x2, 2,2) or nn.VolumetricMaxPooling(2x2x2, 2,2,2, 1,1,1);
  // kernel, stride and padding in the constructor's order, padding only when non-zero.
  std::string str() const override;

  bool ceil_mode = false;

 protected:
  // Kernel, stride and padding in the tensor's dim order (T, H, W); 2-d pooling has dims 2
  // and kernel 1, stride 1, padding 0 along T.
  struct Window {
    int dims;
    std::array<int64_t, 3> k, d, pad;
  };
  virtual Window window() const = 0;

  // The computations of the max and average modules, shared by 2 and 3 dims.
  void maxForward(const Tensor& input, Tensor& indices);
  void maxBackward(const Tensor& input, const Tensor& gradOutput, const Tensor& indices);
  void averageForward(const Tensor& input, bool count_include_pad);
  void averageBackward(const Tensor& input, const Tensor& gradOutput, bool count_include_pad);

 private:
  kernels::PoolGeometry geometry(const Tensor& input, const Shape& outShape) const;
  Shape maxInputShape_;  // the input the indices were computed for
};

// Torch's SpatialMaxPooling / SpatialAveragePooling fields.
class SpatialPooling : public PoolingBase {
 public:
  tensor::Json config() const override;  // the fields and ceil_mode
  int64_t kW, kH, dW, dH, padW, padH;

 protected:
  SpatialPooling(int64_t kW, int64_t kH, int64_t dW, int64_t dH, int64_t padW, int64_t padH)
      : kW(kW), kH(kH), dW(dW), dH(dH), padW(padW), padH(padH) {}
  Window window() const override { return {2, {1, kH, kW}, {1, dH, dW}, {0, padH, padW}}; }
};

// Torch's VolumetricMaxPooling / VolumetricAveragePooling fields.
class VolumetricPooling : public PoolingBase {
 public:
  tensor::Json config() const override;  // the fields and ceil_mode
  int64_t kT, kW, kH, dT, dW, dH, padT, padW, padH;

 protected:
  VolumetricPooling(int64_t kT, int64_t kW, int64_t kH, int64_t dT, int64_t dW, int64_t dH, int64_t padT, int64_t padW,
                    int64_t padH)
      : kT(kT), kW(kW), kH(kH), dT(dT), dW(dW), dH(dH), padT(padT), padW(padW), padH(padH) {}
  Window window() const override { return {3, {kT, kH, kW}, {dT, dH, dW}, {padT, padH, padW}}; }
};

}  // namespace nn
