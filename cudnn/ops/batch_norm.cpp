// batch_norm.cpp
#include "cudnn/ops/batch_norm.h"

#include "cudnn/core/Handle.h"
#include "cudnn/kernels/Activation.h"
#include "cudnn/kernels/BatchNorm.h"
#include "tensor/Cuda.h"

namespace cudnn {

namespace {
cudnnBatchNormMode_t cudnn_mode(BatchNormMode m) {
  return m == BatchNormMode::Spatial ? CUDNN_BATCHNORM_SPATIAL : CUDNN_BATCHNORM_PER_ACTIVATION;
}

// Training (forward and backward, which must agree): channels-last 16/32-bit data takes the
// persistent NHWC kernels, as PyTorch does; NCHW data never does (that mode can overflow on
// it). See Note [Channels-last twins] in cudnn/core/Layout.h.
cudnnBatchNormMode_t training_mode(BatchNormMode m, const Tensor& x) {
  if (m == BatchNormMode::Spatial && x.dtype() != DType::Float64 &&
      tensor::suggest_memory_format(x) == tensor::MemoryFormat::ChannelsLast) {
    return CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
  }
  return cudnn_mode(m);
}

// call(mode) in training_mode(m, x); should cuDNN refuse the persistent mode for these
// descriptors (NOT_SUPPORTED, BAD_PARAM), SPATIAL runs instead: it computes the same batch
// statistics and keeps save_mean / save_invstd in the same form, so the passes may differ.
template <class Call>
cudnnStatus_t run_training(BatchNormMode m, const Tensor& x, Call&& call) {
  const cudnnBatchNormMode_t mode = training_mode(m, x);
  const cudnnStatus_t st = call(mode);
  const bool refused =
      CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED || CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_BAD_PARAM;
  if (mode == CUDNN_BATCHNORM_SPATIAL_PERSISTENT && refused) return call(cudnn_mode(m));
  return st;
}

// [N x C] is described as [N x C x 1 x 1]; the parameter shape follows from the mode.
Shape param_shape(const Tensor& x, BatchNormMode m) {
  Shape s(static_cast<size_t>(std::max<int64_t>(x.dim(), 4)), 1);
  if (m == BatchNormMode::Spatial) {
    s[1] = x.size(1);
  } else {
    for (int64_t d = 1; d < x.dim(); ++d) s[d] = x.size(d);
  }
  return s;
}

void check_epsilon(double eps, const char* where) {
  if (eps < CUDNN_BN_MIN_EPSILON) {
    throw tensor::Error(std::string(where) + "epsilon " + std::to_string(eps) + " is below cuDNN's minimum " +
                        std::to_string(CUDNN_BN_MIN_EPSILON));
  }
}
}  // namespace

DType batch_norm_param_dtype(DType dtype) { return dtype == DType::Float64 ? DType::Float64 : DType::Float32; }

// Note [Channels-last batch norm through the Ex calls]
// cuDNN's fast NHWC batch-norm kernels sit behind cudnnBatchNormalizationForwardTrainingEx /
// BackwardEx (mode SPATIAL_PERSISTENT, ops BN); the plain calls in that mode took 2.47 ms
// against 0.32 ms for NCHW on ResNet-50's first batch norm in float16 (H100). The Ex forward
// fills a reserve space its backward reads, so the plan keeps it with the address and size of
// the x it belongs to; a backward on any other x (the functional batch_norm_grad, which has no
// forward) takes the plain call, which computes the same gradient from save_mean/save_invstd.
//
// Note [Batch norm epilogues]
// The same Ex kernels can finish the output themselves: ops BN_ACTIVATION writes relu(bn(x)),
// BN_ADD_ACTIVATION relu(bn(x) + z), and their backwards take dy of that output, mask it by y
// (y > 0, so a NaN y passes nothing, as our relu' does) and, for the sum, write z's gradient.
// That saves the separate passes over the activations: ResNet-50's shapes at batch 64 in
// float16 on the H200 (.data/bnprobe.cu), batch norm + ReLU forward and backward 1.52 -> 0.94
// ms summed over one of each shape, with the residual sum 1.84 -> 1.22 ms. With the activation
// descriptor's CUDNN_PROPAGATE_NAN a NaN channel stays NaN (measured), as nn's relu gives.
// Where the Ex kernels do not run (row-major or float64 data, per-activation mode, a refusal)
// the epilogue is the separate passes: y += z, then our relu in place; backward relu' from y,
// into dz where z was given, then the plain backward on that gradient.
namespace {
cudnnBatchNormOps_t ex_ops(bool relu, bool addend) {
  if (!relu) return CUDNN_BATCHNORM_OPS_BN;  // cuDNN has no sum without the activation
  return addend ? CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION : CUDNN_BATCHNORM_OPS_BN_ACTIVATION;
}
}  // namespace

bool BatchNormPlan::forward_train_ex(const Tensor& x, const Tensor& y, const Tensor& gamma, const Tensor& beta,
                                     double factor, const Tensor& running_mean, const Tensor& running_var,
                                     double epsilon, const Tensor& save_mean, const Tensor& save_invstd,
                                     const Shape& ps, const BatchNormEpilogue& epilogue) {
  const DType t = x.dtype();
  constexpr cudnnBatchNormMode_t m = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
  const cudnnBatchNormOps_t ops = ex_ops(epilogue.relu, epilogue.z.defined());
  const bool act = ops != CUDNN_BATCHNORM_OPS_BN, add = ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
  cudnnTensorDescriptor_t xd = x_desc_.set(x), yd = y_desc_.set(y), pd = param_desc_.set(gamma.dtype(), ps);
  cudnnTensorDescriptor_t zd = add ? z_desc_.set(epilogue.z) : nullptr;
  cudnnActivationDescriptor_t ad = act ? relu_desc_.set(CUDNN_ACTIVATION_RELU, 0) : nullptr;
  size_t ws = 0, rs = 0;
  if (cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(handle(), m, ops, xd, zd, yd, pd, ad, &ws) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnGetBatchNormalizationTrainingExReserveSpaceSize(handle(), m, ops, ad, xd, &rs) != CUDNN_STATUS_SUCCESS) {
    return false;
  }
  if (!reserve_.defined() || static_cast<size_t>(reserve_.numel()) < rs || reserve_.device() != x.device()) {
    reserve_ = tensor::empty({static_cast<int64_t>(std::max<size_t>(rs, 1))}, DType::UInt8, x.device());
  }
  const Tensor work = tensor::empty({static_cast<int64_t>(std::max<size_t>(ws, 1))}, DType::UInt8, x.device());
  const cudnnStatus_t st = cudnnBatchNormalizationForwardTrainingEx(
      handle(), m, ops, Scalar(1, t).ptr(), Scalar(0, t).ptr(), xd, x.raw_data(), zd,
      add ? epilogue.z.raw_data() : nullptr, yd, y.raw_data(), pd, gamma.raw_data(), beta.raw_data(), factor,
      running_mean.defined() ? running_mean.raw_data() : nullptr,
      running_var.defined() ? running_var.raw_data() : nullptr, epsilon, save_mean.raw_data(), save_invstd.raw_data(),
      ad, work.raw_data(), ws, reserve_.raw_data(), rs);
  if (CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED || CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_BAD_PARAM) {
    return false;
  }
  CUDNN_CHECK(st);
  if (epilogue.z.defined() && !add) Tensor(y).add_(epilogue.z);  // a sum without the activation
  if (add) {  // the channels whose output holds a NaN (Note [Fused ReLU backward and non-finite values])
    const int64_t C = gamma.numel();
    if (!nan_flags_.defined() || nan_flags_.numel() != 4 * C || nan_flags_.device() != x.device()) {
      nan_flags_ = tensor::empty({4 * C}, DType::UInt8, x.device());  // C ints (there is no int32 dtype)
    }
    kernels::batch_norm_flag_nan_channels(y, C, nan_flags_);
  }
  reserve_x_ = x.raw_data();
  reserve_x_numel_ = x.numel();
  reserve_bytes_ = rs;
  reserve_ops_ = static_cast<int>(ops);
  return true;
}

void BatchNormPlan::forward_train(BatchNormMode mode, const Tensor& x, const Tensor& y, const Tensor& gamma,
                                  const Tensor& beta, double factor, const Tensor& running_mean,
                                  const Tensor& running_var, double epsilon, const Tensor& save_mean,
                                  const Tensor& save_invstd, const BatchNormEpilogue& epilogue, const Tensor& count) {
  check_epsilon(epsilon, "cudnn::batch_norm_train: ");
  tensor::cuda::DeviceGuard guard(x.device().index);
  const DType t = x.dtype();
  const Shape ps = param_shape(x, mode);
  reserve_x_ = nullptr;
  const bool persistent = training_mode(mode, x) == CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
  // Note [Persistent batch norm and Inf]: the persistent kernels update `increments` (zeros) in
  // place of the running statistics, and a kernel folds them in, mending channels holding +-Inf.
  const bool fold =
      persistent && running_mean.defined() && running_var.defined() && running_mean.numel() > 0 && x.numel() > 0;
  if (fold) {
    const int64_t C = running_mean.numel();
    if (!increments_clean_ || !increments_.defined() || increments_.numel() != 2 * C ||
        increments_.dtype() != running_mean.dtype() || increments_.device() != x.device()) {
      increments_ = tensor::zeros({2 * C}, running_mean.dtype(), x.device());
    }
    increments_clean_ = false;  // until the fold has zeroed them again
  }
  const Tensor cudnn_mean = fold ? increments_.narrow(0, 0, running_mean.numel()) : running_mean;
  const Tensor cudnn_var = fold ? increments_.narrow(0, running_mean.numel(), running_mean.numel()) : running_var;
  const auto fold_in = [&] {
    if (!fold) {
      if (count.defined()) Tensor(count).add_(1.0);
      return;
    }
    const int64_t N = x.size(0), C = x.size(1);
    kernels::batch_norm_fold_running_stats(x, {N, C, x.numel() / (N * C), x.stride(0), x.stride(1), C}, increments_,
                                           running_mean, running_var, factor, count);
    increments_clean_ = true;
  };
  if (persistent && forward_train_ex(x, y, gamma, beta, factor, cudnn_mean, cudnn_var, epsilon, save_mean, save_invstd,
                                     ps, epilogue)) {
    fold_in();
    return;
  }
  CUDNN_CHECK(run_training(mode, x, [&](cudnnBatchNormMode_t m) {
    return cudnnBatchNormalizationForwardTraining(
        handle(), m, Scalar(1, t).ptr(), Scalar(0, t).ptr(), x_desc_.set(x), x.raw_data(), y_desc_.set(y), y.raw_data(),
        param_desc_.set(gamma.dtype(), ps), gamma.raw_data(), beta.raw_data(), factor,
        cudnn_mean.defined() ? cudnn_mean.raw_data() : nullptr, cudnn_var.defined() ? cudnn_var.raw_data() : nullptr,
        epsilon, save_mean.raw_data(), save_invstd.raw_data());
  }));
  fold_in();
  if (epilogue.z.defined()) Tensor(y).add_(epilogue.z);
  if (epilogue.relu) kernels::relu_forward(y, y);
}

void BatchNormPlan::forward_inference(BatchNormMode mode, const Tensor& x, const Tensor& y, const Tensor& gamma,
                                      const Tensor& beta, const Tensor& mean, const Tensor& var, double epsilon) {
  check_epsilon(epsilon, "cudnn::batch_norm_test: ");
  tensor::cuda::DeviceGuard guard(x.device().index);
  const DType t = x.dtype();
  const Shape ps = param_shape(x, mode);
  CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
      handle(), cudnn_mode(mode), Scalar(1, t).ptr(), Scalar(0, t).ptr(), x_desc_.set(x), x.raw_data(), y_desc_.set(y),
      y.raw_data(), param_desc_.set(gamma.dtype(), ps), gamma.raw_data(), beta.raw_data(), mean.raw_data(),
      var.raw_data(), epsilon));
}

void BatchNormPlan::backward_ex(const Tensor& x, const Tensor& dy, const Tensor& dx, const Tensor& gamma,
                                const Tensor& dgamma, const Tensor& dbeta, double alpha_param, double beta_param,
                                double epsilon, const Tensor& save_mean, const Tensor& save_invstd, const Shape& ps,
                                const BatchNormEpilogueGrad& epilogue) {
  const DType t = x.dtype();
  constexpr cudnnBatchNormMode_t m = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
  const auto ops = static_cast<cudnnBatchNormOps_t>(reserve_ops_);
  const bool act = ops != CUDNN_BATCHNORM_OPS_BN, add = ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
  cudnnTensorDescriptor_t xd = x_desc_.set(x), dyd = y_desc_.set(dy), pd = param_desc_.set(gamma.dtype(), ps);
  cudnnTensorDescriptor_t dxd = dx_desc_.set(dx);
  // y and dz share dy's layout and shape (the plan's output), so dy's descriptor serves them
  cudnnTensorDescriptor_t yd = act ? dyd : nullptr, dzd = add ? z_desc_.set(epilogue.dz) : nullptr;
  cudnnActivationDescriptor_t ad = act ? relu_desc_.set(CUDNN_ACTIVATION_RELU, 0) : nullptr;
  size_t ws = 0;
  CUDNN_CHECK(cudnnGetBatchNormalizationBackwardExWorkspaceSize(handle(), m, ops, xd, yd, dyd, dzd, dxd, pd, ad, &ws));
  const Tensor work = tensor::empty({static_cast<int64_t>(std::max<size_t>(ws, 1))}, DType::UInt8, x.device());
  // with the ReLU, cuDNN's parameter gradients come fresh; the flagged channels are computed
  // again by nn's rule, then all are blended in (Note [Fused ReLU backward and non-finite
  // values] in cudnn/kernels/BatchNorm.h)
  const int64_t C = dgamma.numel();
  if (act && (!fresh_params_.defined() || fresh_params_.numel() < 2 * C || fresh_params_.dtype() != dgamma.dtype() ||
              fresh_params_.device() != dgamma.device())) {
    fresh_params_ = tensor::empty({2 * C}, dgamma.dtype(), dgamma.device());
  }
  const Tensor fresh_dgamma = act ? fresh_params_.narrow(0, 0, C) : dgamma;
  const Tensor fresh_dbeta = act ? fresh_params_.narrow(0, C, C) : dbeta;
  CUDNN_CHECK(cudnnBatchNormalizationBackwardEx(
      handle(), m, ops, Scalar(1, t).ptr(), Scalar(0, t).ptr(), Scalar(act ? 1.0 : alpha_param, t).ptr(),
      Scalar(act ? 0.0 : beta_param, t).ptr(), xd, x.raw_data(), yd, act ? epilogue.y.raw_data() : nullptr, dyd,
      dy.raw_data(), dzd, add ? epilogue.dz.raw_data() : nullptr, dxd, dx.raw_data(), pd, gamma.raw_data(),
      act ? epilogue.beta.raw_data() : nullptr, fresh_dgamma.raw_data(), fresh_dbeta.raw_data(), epsilon,
      save_mean.raw_data(), save_invstd.raw_data(), ad, work.raw_data(), ws, reserve_.raw_data(), reserve_bytes_));
  if (act) {
    const int64_t N = x.size(0);
    const kernels::BatchNormSizes sizes{N, C, x.numel() / (N * C), x.stride(0), x.stride(1), C};
    kernels::batch_norm_relu_backward_repair(
        x, epilogue.y, dy, dx, add ? epilogue.dz : Tensor(), sizes, add ? nan_flags_ : Tensor(),
        {gamma, epilogue.beta, save_mean, save_invstd, fresh_dgamma, fresh_dbeta, dgamma, dbeta}, alpha_param,
        beta_param);
  }
}

void BatchNormPlan::backward(BatchNormMode mode, const Tensor& x, const Tensor& dy, const Tensor& dx,
                             const Tensor& gamma, const Tensor& dgamma, const Tensor& dbeta, double alpha_param,
                             double beta_param, double epsilon, const Tensor& save_mean, const Tensor& save_invstd,
                             const BatchNormEpilogueGrad& epilogue) {
  check_epsilon(epsilon, "cudnn::batch_norm_grad: ");
  tensor::cuda::DeviceGuard guard(x.device().index);
  const DType t = x.dtype();
  const Shape ps = param_shape(x, mode);
  if (reserve_x_ != nullptr && reserve_x_ == x.raw_data() && reserve_x_numel_ == x.numel() &&
      training_mode(mode, x) == CUDNN_BATCHNORM_SPATIAL_PERSISTENT &&
      reserve_ops_ == static_cast<int>(ex_ops(epilogue.relu, epilogue.dz.defined()))) {
    // the forward went through the Ex call on this x, with this epilogue: its reserve space is ours
    if (epilogue.dz.defined() && !epilogue.relu) Tensor(epilogue.dz).copy_(dy);
    backward_ex(x, dy, dx, gamma, dgamma, dbeta, alpha_param, beta_param, epsilon, save_mean, save_invstd, ps,
                epilogue);
    return;
  }
  // the epilogue's gradient as its own pass (Note [Batch norm epilogues]), then the plain call
  Tensor g = dy;
  if (epilogue.relu || epilogue.dz.defined()) {
    g = epilogue.dz.defined() ? epilogue.dz : tensor::empty_like(dy);
    if (epilogue.relu) {
      kernels::relu_backward_from_output(epilogue.y, dy, g);
    } else {
      g.copy_(dy);
    }
  }
  CUDNN_CHECK(run_training(mode, x, [&](cudnnBatchNormMode_t m) {
    return cudnnBatchNormalizationBackward(handle(), m, Scalar(1, t).ptr(), Scalar(0, t).ptr(),
                                           Scalar(alpha_param, t).ptr(), Scalar(beta_param, t).ptr(), x_desc_.set(x),
                                           x.raw_data(), y_desc_.set(g), g.raw_data(), y_desc_.get(), dx.raw_data(),
                                           param_desc_.set(gamma.dtype(), ps), gamma.raw_data(), dgamma.raw_data(),
                                           dbeta.raw_data(), epsilon, save_mean.raw_data(), save_invstd.raw_data());
  }));
}

namespace {
void check_params(const std::string& where, const Tensor& x, BatchNormMode mode,
                  std::initializer_list<std::pair<const Tensor*, const char*>> params) {
  check_cuda(where, x, "x");
  if (x.dim() < 2) throw tensor::Error(where + "expected [N x C x ...], got " + tensor::shape_str(x.sizes()));
  const Shape ps = param_shape(x, mode);
  const int64_t n = tensor::shape_numel(ps);
  for (const auto& [t, name] : params) {
    if (!t->defined()) continue;
    if (t->numel() != n || t->dtype() != batch_norm_param_dtype(x.dtype()) || t->device() != x.device()) {
      throw tensor::Error(where + "expected " + name + " of " + std::to_string(n) + " " +
                          tensor::name(batch_norm_param_dtype(x.dtype())) + " values on " + x.device().str() +
                          ", got " + t->description());
    }
  }
}
}  // namespace

BatchNormTrainResult batch_norm_train(const Tensor& x_in, const Tensor& gamma, const Tensor& beta, BatchNormMode mode,
                                      double epsilon, double factor, Tensor running_mean, Tensor running_var) {
  const std::string where = "cudnn::batch_norm_train: ";
  check_params(where, x_in, mode,
               {{&gamma, "gamma"}, {&beta, "beta"}, {&running_mean, "running_mean"}, {&running_var, "running_var"}});
  if (running_mean.defined() != running_var.defined()) {
    throw tensor::Error(where + "give both running_mean and running_var, or neither");
  }
  const Tensor x = x_in.contiguous();
  BatchNormTrainResult r;
  r.out = tensor::empty_like(x);
  r.mean = tensor::empty(gamma.sizes(), gamma.dtype(), gamma.device());
  r.invstd = tensor::empty(gamma.sizes(), gamma.dtype(), gamma.device());
  BatchNormPlan().forward_train(mode, x, r.out, gamma.contiguous(), beta.contiguous(), factor, running_mean,
                                running_var, epsilon, r.mean, r.invstd);
  return r;
}

Tensor batch_norm_test(const Tensor& x_in, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                       const Tensor& var, BatchNormMode mode, double epsilon) {
  check_params("cudnn::batch_norm_test: ", x_in, mode,
               {{&gamma, "gamma"}, {&beta, "beta"}, {&mean, "mean"}, {&var, "var"}});
  const Tensor x = x_in.contiguous();
  Tensor y = tensor::empty_like(x);
  BatchNormPlan().forward_inference(mode, x, y, gamma.contiguous(), beta.contiguous(), mean.contiguous(),
                                    var.contiguous(), epsilon);
  return y;
}

BatchNormGrad batch_norm_grad(const Tensor& x_in, const Tensor& dy, const Tensor& gamma, const Tensor& mean,
                              const Tensor& invstd, BatchNormMode mode, double epsilon) {
  check_params("cudnn::batch_norm_grad: ", x_in, mode, {{&gamma, "gamma"}, {&mean, "mean"}, {&invstd, "invstd"}});
  check_cuda("cudnn::batch_norm_grad: ", dy, "dy");
  const Tensor x = x_in.contiguous();
  BatchNormGrad g;
  g.dx = tensor::empty_like(x);
  g.dgamma = tensor::empty(gamma.sizes(), gamma.dtype(), gamma.device());
  g.dbeta = tensor::empty(gamma.sizes(), gamma.dtype(), gamma.device());
  BatchNormPlan().backward(mode, x, dy.contiguous(), g.dx, gamma.contiguous(), g.dgamma, g.dbeta, 1, 0, epsilon,
                           mean.contiguous(), invstd.contiguous());
  return g;
}

}  // namespace cudnn
