// Descriptors.cpp
#include "cudnn/core/Descriptors.h"

#include <algorithm>

namespace cudnn {

cudnnDataType_t data_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return CUDNN_DATA_FLOAT;
    case DType::Float64: return CUDNN_DATA_DOUBLE;
    case DType::Float16: return CUDNN_DATA_HALF;
    case DType::BFloat16: return CUDNN_DATA_BFLOAT16;
    default: break;
  }
  throw tensor::Error(std::string("cudnn: no cuDNN data type for ") + tensor::name(dtype) +
                      " (expected float32, float64, float16 or bfloat16)");
}

cudnnTensorDescriptor_t TensorDescriptor::set(const Tensor& t, int min_dims) {
  return set(t.dtype(), t.sizes(), t.strides(), min_dims);
}

cudnnTensorDescriptor_t TensorDescriptor::set(DType dtype, const Shape& sizes, const Shape& strides, int min_dims) {
  cudnnTensorDescriptor_t d = get();
  if (dtype == dtype_ && sizes == sizes_ && strides == strides_) return d;
  std::vector<int> dims, str;
  for (size_t i = 0; i < sizes.size(); ++i) {
    dims.push_back(static_cast<int>(sizes[i]));
    // cuDNN rejects a zero stride; a size-1 dim's stride is never used, so make it sane
    str.push_back(static_cast<int>(sizes[i] == 1 ? std::max<int64_t>(strides[i], 1) : strides[i]));
  }
  while (static_cast<int>(dims.size()) < min_dims) {
    dims.push_back(1);
    str.push_back(1);
  }
  CUDNN_CHECK(cudnnSetTensorNdDescriptor(d, data_type(dtype), static_cast<int>(dims.size()), dims.data(), str.data()));
  dtype_ = dtype;
  sizes_ = sizes;
  strides_ = strides;
  return d;
}

cudnnTensorDescriptor_t TensorDescriptor::set(DType dtype, const Shape& sizes) {
  Shape strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= sizes[i];
  }
  return set(dtype, sizes, strides);
}

cudnnFilterDescriptor_t FilterDescriptor::set(DType dtype, const Shape& sizes, bool channels_last) {
  cudnnFilterDescriptor_t d = get();
  if (dtype == dtype_ && sizes == sizes_ && channels_last == channels_last_) return d;
  std::vector<int> dims(sizes.begin(), sizes.end());
  CUDNN_CHECK(cudnnSetFilterNdDescriptor(d, data_type(dtype), channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                         static_cast<int>(dims.size()), dims.data()));
  dtype_ = dtype;
  sizes_ = sizes;
  channels_last_ = channels_last;
  return d;
}

cudnnConvolutionDescriptor_t ConvolutionDescriptor::set(const ConvSpec& s, cudnnDataType_t compute,
                                                       cudnnMathType_t math) {
  cudnnConvolutionDescriptor_t d = get();
  if (!valid_ || !(s == spec_) || compute != compute_) {
    int pad[3], stride[3], dilation[3];
    for (int i = 0; i < s.nd; ++i) {
      pad[i] = static_cast<int>(s.pad[s.first() + i]);
      stride[i] = static_cast<int>(s.stride[s.first() + i]);
      dilation[i] = static_cast<int>(s.dilation[s.first() + i]);
    }
    CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(d, s.nd, pad, stride, dilation,
                                                s.cross_correlation ? CUDNN_CROSS_CORRELATION : CUDNN_CONVOLUTION,
                                                compute));
    CUDNN_CHECK(cudnnSetConvolutionGroupCount(d, static_cast<int>(s.groups)));
    spec_ = s;
    compute_ = compute;
    valid_ = true;
    math_ = static_cast<cudnnMathType_t>(-1);
  }
  set_math(math);
  return d;
}

void ConvolutionDescriptor::set_math(cudnnMathType_t math) {
  if (math == math_) return;
  CUDNN_CHECK(cudnnSetConvolutionMathType(get(), math));
  math_ = math;
}

cudnnPoolingDescriptor_t PoolingDescriptor::set(cudnnPoolingMode_t mode, int nd, const int* window, const int* pad,
                                                const int* stride) {
  cudnnPoolingDescriptor_t d = get();
  CUDNN_CHECK(cudnnSetPoolingNdDescriptor(d, mode, CUDNN_PROPAGATE_NAN, nd, window, pad, stride));
  return d;
}

cudnnActivationDescriptor_t ActivationDescriptor::set(cudnnActivationMode_t mode, double coef) {
  cudnnActivationDescriptor_t d = get();
  CUDNN_CHECK(cudnnSetActivationDescriptor(d, mode, CUDNN_PROPAGATE_NAN, coef));
  return d;
}

cudnnLRNDescriptor_t LRNDescriptor::set(unsigned size, double alpha, double beta, double k) {
  cudnnLRNDescriptor_t d = get();
  CUDNN_CHECK(cudnnSetLRNDescriptor(d, size, alpha, beta, k));
  return d;
}

cudnnSpatialTransformerDescriptor_t SpatialTransformerDescriptor::set(DType dtype, const Shape& output_sizes) {
  cudnnSpatialTransformerDescriptor_t d = get();
  std::vector<int> dims(output_sizes.begin(), output_sizes.end());
  CUDNN_CHECK(cudnnSetSpatialTransformerNdDescriptor(d, CUDNN_SAMPLER_BILINEAR, data_type(dtype),
                                                     static_cast<int>(dims.size()), dims.data()));
  return d;
}

cudnnStatus_t SpatialTransformerDescriptor::try_set(DType dtype, const Shape& output_sizes) {
  std::vector<int> dims(output_sizes.begin(), output_sizes.end());
  return cudnnSetSpatialTransformerNdDescriptor(get(), CUDNN_SAMPLER_BILINEAR, data_type(dtype),
                                                static_cast<int>(dims.size()), dims.data());
}

void check_same(const std::string& where, const Tensor& a, const char* a_name, const Tensor& b, const char* b_name) {
  if (a.dtype() != b.dtype() || a.device() != b.device()) {
    throw tensor::Error(where + "expected " + a_name + " and " + b_name + " of one dtype on one device, got " +
                        a.description() + " and " + b.description());
  }
}

}  // namespace cudnn
