// batch_norm.h: cuDNN batch normalization, Theano's dnn_batch_normalization_train/test.
//   batch_norm_train(x, gamma, beta, mode, epsilon, running_average_factor,
//                    running_mean, running_var)  -> out, mean, invstd
//     out = gamma * (x - mean) * invstd + beta with the batch mean and
//     invstd = 1/sqrt(var + epsilon) (biased variance); when running averages are given
//     they are updated in place: running = (1 - factor) * running + factor * batch_stat,
//     the variance term unbiased (m / (m - 1)), as Theano documents.
//   batch_norm_test(x, gamma, beta, mean, var, mode, epsilon)
//     out = gamma * (x - mean) / sqrt(var + epsilon) + beta
//   batch_norm_grad(...) -> dx, dgamma, dbeta (the training-mode gradient)
// mode per_activation normalises each feature of [N x C] (or each of C*H*W over N); spatial
// normalises each channel of [N x C x (D x) H x W] over N and the spatial dims.
// For float16/bfloat16 data gamma, beta and the statistics are float32, as cuDNN requires.
#pragma once

#include "cudnn/Functional.h"
#include "cudnn/core/Descriptors.h"

namespace cudnn {

// BatchNormMode, the functional ops and their results: cudnn/Functional.h.

// What a training forward computes after the normalisation (Note [Batch norm epilogues] in
// batch_norm.cpp): y = bn(x), plus z where z is given (x's shape and layout), then max(., 0)
// where relu is set.
struct BatchNormEpilogue {
  bool relu = false;
  Tensor z;
};

// Its backward: y is the forward's output (relu's gradient reads it); dz, where the forward
// had a z, receives z's gradient (dy through the relu); beta is the forward's shift, which
// cuDNN's fused backward reads to form the pre-activation again.
struct BatchNormEpilogueGrad {
  bool relu = false;
  Tensor y, dz, beta;
};

class BatchNormPlan {
 public:
  // count, where defined (an int64 scalar on x's device: num_batches_tracked), gains one: in the
  // running statistics' fold kernel where one runs, else by an add of its own (Note [The count
  // in the fold] in cudnn/kernels/BatchNorm.h).
  void forward_train(BatchNormMode mode, const Tensor& x, const Tensor& y, const Tensor& gamma, const Tensor& beta,
                     double factor, const Tensor& running_mean, const Tensor& running_var, double epsilon,
                     const Tensor& save_mean, const Tensor& save_invstd, const BatchNormEpilogue& epilogue = {},
                     const Tensor& count = Tensor());
  void forward_inference(BatchNormMode mode, const Tensor& x, const Tensor& y, const Tensor& gamma, const Tensor& beta,
                         const Tensor& mean, const Tensor& var, double epsilon);
  // dx = gradient (beta_data 0: overwrite); dgamma/dbeta = alpha_param * gradient + beta_param * old.
  // With an epilogue, dy is the gradient of the epilogue's output.
  void backward(BatchNormMode mode, const Tensor& x, const Tensor& dy, const Tensor& dx, const Tensor& gamma,
                const Tensor& dgamma, const Tensor& dbeta, double alpha_param, double beta_param, double epsilon,
                const Tensor& save_mean, const Tensor& save_invstd, const BatchNormEpilogueGrad& epilogue = {});

 private:
  // Channels-last training through the Ex calls (Note [Channels-last batch norm through the Ex
  // calls] in batch_norm.cpp); false where cuDNN refuses them.
  bool forward_train_ex(const Tensor& x, const Tensor& y, const Tensor& gamma, const Tensor& beta, double factor,
                        const Tensor& running_mean, const Tensor& running_var, double epsilon, const Tensor& save_mean,
                        const Tensor& save_invstd, const Shape& ps, const BatchNormEpilogue& epilogue);
  void backward_ex(const Tensor& x, const Tensor& dy, const Tensor& dx, const Tensor& gamma, const Tensor& dgamma,
                   const Tensor& dbeta, double alpha_param, double beta_param, double epsilon, const Tensor& save_mean,
                   const Tensor& save_invstd, const Shape& ps, const BatchNormEpilogueGrad& epilogue);

  TensorDescriptor x_desc_, y_desc_, dx_desc_, z_desc_, param_desc_;
  ActivationDescriptor relu_desc_;
  Tensor fresh_params_;              // cuDNN's dgamma, dbeta of a fused ReLU backward, before the blend
  Tensor nan_flags_;                 // C ints: the fused forward's channels that may hold a NaN
  Tensor increments_;                // 2 C zeros the persistent forward updates (Note [Persistent batch norm and Inf])
  bool increments_clean_ = false;    // zero since the last fold (false while a call is under way)
  int reserve_ops_ = 0;              // the cudnnBatchNormOps_t of the Ex forward that filled it
  Tensor reserve_;                   // the Ex forward's reserve space, read by its backward
  const void* reserve_x_ = nullptr;  // the x it belongs to (address and size); null: none
  int64_t reserve_x_numel_ = 0;
  size_t reserve_bytes_ = 0;
};

}  // namespace cudnn
