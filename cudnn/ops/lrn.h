// lrn.h: cuDNN cross-channel local response normalisation (AlexNet's LRN), the op behind
// cudnn::SpatialCrossMapLRN: y = x / (k + alpha/size * sum over `size` neighbouring
// channels of x^2)^beta, as Torch's SpatialCrossMapLRN. cuDNN takes size 1..16.
// float16/bfloat16 data that the loaded cuDNN refuses is computed in float32 copies
// (see Note [16-bit LRN]).
#pragma once

#include "cudnn/core/Descriptors.h"

namespace cudnn {

class LRNPlan {
 public:
  void forward(int size, double alpha, double beta, double k, const Tensor& x, const Tensor& y);
  // dx from x and dy alone, by our kernel (Note [LRN backward] in cudnn/kernels/LRN.cu)
  void backward(int size, double alpha, double beta, double k, const Tensor& x, const Tensor& dy, const Tensor& dx);

 private:
  // true once cuDNN said NOT_SUPPORTED for this dtype: later calls go straight to float32
  bool computes_in_float32(DType dtype) const;
  void refuse(cudnnStatus_t status, DType dtype, const char* call);

  unsigned refused_dtypes_ = 0;  // bit per tensor::DType
  LRNDescriptor desc_;
  TensorDescriptor x_desc_, y_desc_;
};

void check_lrn_arguments(const std::string& where, int64_t size, double beta, double k);

}  // namespace cudnn
