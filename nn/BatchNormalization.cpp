// BatchNormalization.cpp: argument checks and buffers around kernels::batchnorm_*, shared
// by the Spatial and Volumetric subclasses (which only set nDim).
#include "nn/BatchNormalization.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"
#include "nn/kernels/BatchNorm.h"

namespace nn {

BatchNormalization::BatchNormalization(int64_t nOutput_, double eps_, double momentum_, bool affine_)
    : BatchNormalization(nOutput_, eps_, momentum_, affine_, 2) {}

BatchNormalization::BatchNormalization(int64_t nOutput_, double eps_, double momentum_, bool affine_, int64_t nDim_)
    : nOutput(nOutput_), nDim(nDim_), eps(eps_), momentum(momentum_), affine(affine_) {
  if (nOutput <= 0 || !(eps >= 0 && std::isfinite(eps)) || !(momentum >= 0 && momentum <= 1)) {
    std::ostringstream msg;
    // type_name() is not virtual yet inside a constructor
    msg << (nDim == 4   ? "nn.SpatialBatchNormalization"
            : nDim == 5 ? "nn.VolumetricBatchNormalization"
                        : "nn.BatchNormalization")
        << ": expected nOutput > 0, a finite eps >= 0 and momentum in [0, 1], got nOutput " << nOutput << ", eps "
        << eps << ", momentum " << momentum;
    throw Error(msg.str());
  }
  running_mean = tensor::zeros({nOutput});
  running_var = tensor::ones({nOutput});
  num_batches_tracked = tensor::scalar_tensor(0, DType::Int64);
  if (affine) {
    weight = tensor::empty({nOutput});
    bias = tensor::empty({nOutput});
    gradWeight = tensor::zeros({nOutput});
    gradBias = tensor::zeros({nOutput});
  }
  reset();
}

void BatchNormalization::reset() {
  if (affine) {
    weight.fill_(1.0);
    bias.zero_();
  }
  running_mean.zero_();
  running_var.fill_(1.0);
  num_batches_tracked.zero_();
}

double BatchNormalization::countBatch() {
  num_batches_tracked.add_(1.0);
  // the count on the host: a synchronisation on the GPU, only for the cumulative average
  return cumulativeAverage ? 1.0 / num_batches_tracked.item() : momentum;
}

void BatchNormalization::visitState(StateVisitor& v) {
  if (affine) {
    v.parameter("weight", weight, gradWeight);
    v.parameter("bias", bias, gradBias);
  }
  v.buffer("running_mean", running_mean);
  v.buffer("running_var", running_var);
  v.buffer("num_batches_tracked", num_batches_tracked);
}

std::string BatchNormalization::shapeContract(bool batched) const {
  static const char* spatial[] = {"", "", " x H x W", " x T x H x W"};
  const std::string rest = std::string("C") + spatial[std::clamp<int64_t>(nDim - 2, 0, 3)];
  return batched ? "[N x " + rest + "]" : "[" + rest + "]";
}

BatchNormalization::Layout BatchNormalization::layout(const Tensor& input, const char* method) const {
  check_float(where(method), input);
  check_matches(where(method), input, running_mean, "input", "running_mean");
  return shapeLayout(input, method);
}

void BatchNormalization::checkGradients(const char* method) const {
  if (!affine) return;
  check_parameter(*this, method, "weight", weight, {nOutput}, &gradWeight);
  check_parameter(*this, method, "bias", bias, {nOutput}, &gradBias);
}

BatchNormalization::Layout BatchNormalization::shapeLayout(const Tensor& input, const char* method) const {
  if (affine) {
    check_parameter(*this, method, "weight", weight, {nOutput});
    check_parameter(*this, method, "bias", bias, {nOutput});
  }
  check_parameter(*this, method, "running_mean", running_mean, {nOutput});
  check_parameter(*this, method, "running_var", running_var, {nOutput});
  const int64_t d = input.dim();
  if (d != nDim && !(d == nDim - 1 && !training_)) {
    throw Error(where(method) + "expected input of " + shapeContract(true) + " (or " + shapeContract(false) +
                " in evaluation), got " + tensor::shape_str(input.sizes()) + (d == nDim - 1 ? " in training" : ""));
  }
  const bool batched = d == nDim;
  const int64_t featDim = batched ? 1 : 0;
  if (input.size(featDim) != nOutput) {
    throw Error(where(method) + "expected input of " + shapeContract(batched) + " with C = " + std::to_string(nOutput) +
                ", got " + tensor::shape_str(input.sizes()));
  }
  Layout l{batched ? input.size(0) : 1, nOutput, 1};
  for (int64_t k = featDim + 1; k < d; ++k) l.S *= input.size(k);
  if (training_ && l.N * l.S <= 1 && input.numel() > 0) {
    throw Error(where(method) + "expected more than 1 value per channel in training, got input " +
                tensor::shape_str(input.sizes()));
  }
  return l;
}

void BatchNormalization::useRunningStatistics(const Tensor& like) {
  ensure(save_mean, {nOutput}, like);
  ensure(save_invstd, {nOutput}, like);
  save_mean.copy_(running_mean);
  save_invstd.copy_(running_var.add(eps).rsqrt());
}

const Tensor& BatchNormalization::updateOutput(const Tensor& input) {
  const Layout l = layout(input, "updateOutput");
  const Tensor x = input.contiguous();
  ensure(output, x.sizes(), x);
  double factor = momentum;
  if (training_) {
    ensure(save_mean, {nOutput}, x);
    ensure(save_invstd, {nOutput}, x);
    factor = countBatch();
  } else {
    useRunningStatistics(x);
  }
  if (x.numel() == 0) return output;
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    if (training_) {
      kernels::batchnorm_statistics<T>(x.data<T>(), l.N, l.C, l.S, eps, save_mean.data<T>(), save_invstd.data<T>(),
                                       factor, running_mean.data<T>(), running_var.data<T>());
    }
    kernels::batchnorm_forward<T>(x.data<T>(), output.data<T>(), l.N, l.C, l.S, save_mean.data<T>(),
                                  save_invstd.data<T>(), affine ? weight.data<T>() : nullptr,
                                  affine ? bias.data<T>() : nullptr);
  });
  return output;
}

void BatchNormalization::checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  if (gradOutput.sizes() != input.sizes() || gradOutput.dtype() != input.dtype()) {
    throw Error(where(method) + "expected gradOutput of the input's shape and dtype (" + input.description() +
                "), got " + gradOutput.description());
  }
}

void BatchNormalization::backwardPass(const Tensor& input, const Tensor& gradOutput, bool wantGradInput,
                                      bool wantParams, double scale, const char* method) {
  const Layout l = layout(input, method);
  check_float(where(method), gradOutput, "gradOutput");
  checkGradOutput(input, gradOutput, method);
  wantParams = wantParams && affine;
  if (wantParams) checkGradients(method);
  if (training_) {
    if (!save_mean.defined() || save_mean.dtype() != input.dtype()) {
      throw Error(where(method) + "no batch statistics for input " + input.description() + ": call updateOutput first");
    }
  } else {
    useRunningStatistics(input);
  }
  const Tensor x = input.contiguous();
  const Tensor gy = gradOutput.contiguous();
  if (wantGradInput) ensure(gradInput, x.sizes(), x);
  if (x.numel() == 0 || (!wantGradInput && !wantParams)) return;
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    kernels::batchnorm_backward<T>(x.data<T>(), gy.data<T>(), wantGradInput ? gradInput.data<T>() : nullptr, l.N, l.C,
                                   l.S, save_mean.data<T>(), save_invstd.data<T>(), affine ? weight.data<T>() : nullptr,
                                   training_, wantParams ? gradWeight.data<T>() : nullptr,
                                   wantParams ? gradBias.data<T>() : nullptr, scale);
  });
}

const Tensor& BatchNormalization::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  backwardPass(input, gradOutput, true, false, 1.0, "updateGradInput");
  return gradInput;
}

void BatchNormalization::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  backwardPass(input, gradOutput, false, true, scale, "accGradParameters");
}

void BatchNormalization::backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) {
  backwardPass(input, gradOutput, true, true, scale, "backward");
}

std::string BatchNormalization::str() const {
  return type_name() + " (" + std::to_string(nDim) + "D) (" + std::to_string(nOutput) + ")";
}

tensor::Json BatchNormalization::config() const {
  tensor::Json::Object c{{"nOutput", nOutput}, {"eps", eps}, {"momentum", momentum}, {"affine", affine}};
  if (cumulativeAverage) c.emplace_back("cumulativeAverage", true);
  return c;
}

ModulePtr BatchNormalization::fromConfig(const tensor::Json& config) {
  return fromConfigAs<BatchNormalization>(config);
}

}  // namespace nn
