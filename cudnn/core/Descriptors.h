// Descriptors.h: RAII cuDNN descriptors, created on first use and destroyed with their
// owner (destructors never throw). A descriptor remembers what it was last set to, so
// a module that calls set() every iteration with unchanged shapes does no cuDNN work
// (cudnn.torch's iSize check, in one place).
#pragma once

#include <cudnn.h>

#include <array>
#include <utility>
#include <vector>

#include "cudnn/TensorChecks.h"
#include "cudnn/core/Check.h"
#include "nn/ConvSpec.h"
#include "tensor/Tensor.h"

namespace cudnn {

using tensor::DType;
using tensor::Shape;
using tensor::Tensor;
using nn::ConvSpec;  // a convolution's settings (nn/ConvSpec.h)

cudnnDataType_t data_type(DType dtype);  // throws for dtypes cuDNN has no use for

// Alpha/beta blending factors: cuDNN reads double for double data, float otherwise.
class Scalar {
 public:
  Scalar(double v, DType dtype) : d_(v), f_(static_cast<float>(v)), is_double_(dtype == DType::Float64) {}
  const void* ptr() const { return is_double_ ? static_cast<const void*>(&d_) : static_cast<const void*>(&f_); }

 private:
  double d_;
  float f_;
  bool is_double_;
};

template <class T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class Descriptor {
 public:
  Descriptor() = default;
  ~Descriptor() {
    if (desc_) Destroy(desc_);  // a failure here cannot be reported: ignore it
  }
  Descriptor(Descriptor&& o) noexcept : desc_(std::exchange(o.desc_, nullptr)) {}
  Descriptor& operator=(Descriptor&& o) noexcept {
    std::swap(desc_, o.desc_);
    return *this;
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  T get() {
    if (!desc_) CUDNN_CHECK(Create(&desc_));
    return desc_;
  }

 private:
  T desc_ = nullptr;
};

class TensorDescriptor
    : public Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor> {
 public:
  // Describes `t` with at least `min_dims` dimensions (trailing size-1 dims are added, as
  // cuDNN wants 4-d or more). Returns the descriptor.
  cudnnTensorDescriptor_t set(const Tensor& t, int min_dims = 4);
  cudnnTensorDescriptor_t set(DType dtype, const Shape& sizes, const Shape& strides, int min_dims = 4);
  cudnnTensorDescriptor_t set(DType dtype, const Shape& contiguous_sizes);  // packed strides

 private:
  DType dtype_ = DType::UInt8;
  Shape sizes_, strides_;
};

class FilterDescriptor
    : public Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor> {
 public:
  // channels_last: the filter's memory is [K x kH x kW x C] (NHWC), as a channels-last
  // activation's convolution wants it (Note [Channels-last filters] in cudnn/ops/conv_search.cpp).
  cudnnFilterDescriptor_t set(DType dtype, const Shape& sizes, bool channels_last = false);

 private:
  DType dtype_ = DType::UInt8;
  Shape sizes_;
  bool channels_last_ = false;
};

class ConvolutionDescriptor : public Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                                                cudnnDestroyConvolutionDescriptor> {
 public:
  // cuDNN takes the nd used slots of pad, stride and dilation, and groups and the mode.
  cudnnConvolutionDescriptor_t set(const ConvSpec& s, cudnnDataType_t compute_type, cudnnMathType_t math);
  void set_math(cudnnMathType_t math);

 private:
  bool valid_ = false;
  ConvSpec spec_;
  cudnnDataType_t compute_ = CUDNN_DATA_FLOAT;
  cudnnMathType_t math_ = CUDNN_DEFAULT_MATH;
};

class PoolingDescriptor
    : public Descriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor, cudnnDestroyPoolingDescriptor> {
 public:
  cudnnPoolingDescriptor_t set(cudnnPoolingMode_t mode, int nd, const int* window, const int* pad, const int* stride);
};

class ActivationDescriptor : public Descriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor,
                                               cudnnDestroyActivationDescriptor> {
 public:
  cudnnActivationDescriptor_t set(cudnnActivationMode_t mode, double coef);
};

class LRNDescriptor : public Descriptor<cudnnLRNDescriptor_t, cudnnCreateLRNDescriptor, cudnnDestroyLRNDescriptor> {
 public:
  cudnnLRNDescriptor_t set(unsigned size, double alpha, double beta, double k);
};

class SpatialTransformerDescriptor
    : public Descriptor<cudnnSpatialTransformerDescriptor_t, cudnnCreateSpatialTransformerDescriptor,
                        cudnnDestroySpatialTransformerDescriptor> {
 public:
  cudnnSpatialTransformerDescriptor_t set(DType dtype, const Shape& output_sizes);
  // The same, handing back cuDNN's status (a dtype it refuses) instead of throwing.
  cudnnStatus_t try_set(DType dtype, const Shape& output_sizes);
};

// Input checks shared by every op (check_cuda: cudnn/TensorChecks.h): matching dtype and device.
void check_same(const std::string& where, const Tensor& a, const char* a_name, const Tensor& b, const char* b_name);

}  // namespace cudnn
