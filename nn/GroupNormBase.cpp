// GroupNormBase.cpp: argument checks and buffers around kernels::group_norm_*, shared by
// GroupNorm and InstanceNorm (which pick the groups and the running statistics).
//
// Note [Instance norm's running statistics]
// As PyTorch's instance_norm (a batch norm over [1 x N*C x *] whose running statistics are
// repeated N times and averaged back), a training forward with tracked statistics updates
//   running_mean = (1 - momentum) running_mean + momentum mean_n(mean[n, c]),
//   running_var  = (1 - momentum) running_var  + momentum mean_n(var[n, c] S / (S - 1)),
// the per-instance unbiased variance over the S positions; num_batches_tracked is a buffer
// (for PyTorch's state_dict) that InstanceNorm never counts, as PyTorch's. An empty batch
// leaves them as they were (PyTorch writes the NaN of an empty mean). In evaluation the
// running statistics normalise (mean[n, c] = running_mean[c], rstd = 1 / sqrt(running_var[c]
// + eps)), and backward treats them as constants: dx = rstd weight dy.
#include "nn/GroupNormBase.h"

#include <cmath>
#include <sstream>
#include <vector>

#include "nn/Buffers.h"
#include "nn/kernels/GroupNorm.h"

namespace nn {

GroupNormBase::GroupNormBase(std::string_view typeName, int64_t numGroups, int64_t numChannels_, double eps_,
                             double momentum_, bool affine_, bool trackRunningStats_, int64_t minRank)
    : numChannels(numChannels_), eps(eps_), momentum(momentum_), minRank_(minRank) {
  if (numGroups < 1 || numChannels < 1 || numChannels % numGroups != 0) {
    throw Error(std::string(typeName) + ": expected num_channels >= 1 divisible by num_groups >= 1, got num_groups " +
                std::to_string(numGroups) + " and num_channels " + std::to_string(numChannels));
  }
  if (!(std::isfinite(eps) && eps >= 0) || !(momentum >= 0 && momentum <= 1)) {
    std::ostringstream msg;
    msg << typeName << ": expected a finite eps >= 0 and momentum in [0, 1], got eps " << eps << ", momentum "
        << momentum;
    throw Error(msg.str());
  }
  if (affine_) {
    weight = tensor::empty({numChannels});
    bias = tensor::empty({numChannels});
    gradWeight = tensor::zeros({numChannels});
    gradBias = tensor::zeros({numChannels});
  }
  if (trackRunningStats_) {
    running_mean = tensor::empty({numChannels});
    running_var = tensor::empty({numChannels});
  }
  reset();
}

void GroupNormBase::reset() {
  if (weight.defined()) weight.fill_(1);
  if (bias.defined()) bias.fill_(0);
  if (running_mean.defined()) running_mean.fill_(0);
  if (running_var.defined()) running_var.fill_(1);
}

void GroupNormBase::visitState(StateVisitor& v) {
  if (weight.defined()) {
    v.parameter("weight", weight, gradWeight);
    v.parameter("bias", bias, gradBias);
  }
  if (running_mean.defined()) {
    v.buffer("running_mean", running_mean);
    v.buffer("running_var", running_var);
  }
}

std::string GroupNormBase::shapeContract() const {
  return "[N x " + std::to_string(numChannels) +
         (minRank_ > 2 ? " x *]" : "] or [N x " + std::to_string(numChannels) + " x *]");
}

void GroupNormBase::checkParameters(const char* method, bool gradients) const {
  if (weight.defined() || bias.defined()) {
    check_parameter(*this, method, "weight", weight, {numChannels}, gradients ? &gradWeight : nullptr);
    check_parameter(*this, method, "bias", bias, {numChannels}, gradients ? &gradBias : nullptr);
    if (bias.dtype() != weight.dtype() || bias.device() != weight.device()) {
      throw Error(where(method) + "expected bias of weight's dtype and device (" + tensor::name(weight.dtype()) +
                  " on " + weight.device().str() + "), got " + bias.description() +
                  " (convert the module with .to(dtype))");
    }
  }
  if (running_mean.defined() || running_var.defined()) {
    check_parameter(*this, method, "running_mean", running_mean, {numChannels});
    check_parameter(*this, method, "running_var", running_var, {numChannels});
    const Tensor& ref = weight.defined() ? weight : running_mean;
    for (const Tensor* t : {&running_mean, &running_var}) {
      if (t->dtype() != ref.dtype() || t->device() != ref.device()) {
        throw Error(where(method) + "expected running statistics of " + (weight.defined() ? "weight" : "running_mean") +
                    "'s dtype and device (" + tensor::name(ref.dtype()) + " on " + ref.device().str() + "), got " +
                    t->description() + " (convert the module with .to(dtype))");
      }
    }
  }
}

GroupNormBase::Layout GroupNormBase::layout(const Tensor& input, const char* method) const {
  checkParameters(method, false);
  const int64_t G = groups();
  // public fields, as the constructor takes them: the groups split the channels
  if (G < 1 || numChannels < 1 || numChannels % G != 0) {
    throw Error(where(method) + "expected num_channels >= 1 divisible by num_groups >= 1, got num_groups " +
                std::to_string(G) + " and num_channels " + std::to_string(numChannels));
  }
  if (input.dim() < minRank_ || input.size(1) != numChannels) {
    throw Error(where(method) + "expected input of " + shapeContract() + ", got " + tensor::shape_str(input.sizes()));
  }
  int64_t S = 1;
  for (int64_t d = 2; d < input.dim(); ++d) S *= input.size(d);
  // See Note [Instance norm's running statistics]; PyTorch refuses one position too
  if (minRank_ > 2 && S == 1 && !normalisesWithRunningStatistics()) {
    throw Error(where(method) +
                "expected more than 1 spatial element a channel when the input's statistics normalise " +
                "(in training, or without tracked statistics), got input " + tensor::shape_str(input.sizes()));
  }
  return {input.size(0), numChannels, G, S};
}

void GroupNormBase::checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  if (!gradOutput.defined() || gradOutput.sizes() != input.sizes() || gradOutput.dtype() != input.dtype()) {
    throw Error(where(method) + "expected gradOutput of the input's shape and dtype (" + input.description() +
                "), got " + (gradOutput.defined() ? gradOutput.description() : std::string("an undefined tensor")));
  }
  const Layout l = layout(input, method);
  // the statistics have the input's dtype, float32 for a twin's 16-bit input
  const bool half = input.dtype() == tensor::DType::Float16 || input.dtype() == tensor::DType::BFloat16;
  const tensor::DType stats = half ? tensor::DType::Float32 : input.dtype();
  if (!saveMean.defined() || saveMean.numel() != l.N * l.G || saveMean.dtype() != stats || !saveRstd.defined() ||
      saveRstd.numel() != l.N * l.G || saveRstd.device() != input.device()) {
    throw Error(where(method) + "expected a forward() of input " + input.description() + " first");
  }
}

namespace {
kernels::GroupShape shape_of(const GroupNormBase::Layout& l) { return {l.N, l.C, l.G, l.S}; }
}  // namespace

const Tensor& GroupNormBase::updateOutput(const Tensor& input) {
  check_float(where("updateOutput"), input);
  if (typeReference().defined()) {
    check_matches(where("updateOutput"), input, typeReference(), "input", weight.defined() ? "weight" : "running_mean");
  }
  const Layout l = layout(input, "updateOutput");
  const Tensor x = input.contiguous();
  ensure(output, x.sizes(), x);
  ensure(saveMean, {l.N, l.G}, x);
  ensure(saveRstd, {l.N, l.G}, x);
  fixedStatistics = normalisesWithRunningStatistics();
  if (x.numel() == 0) return output;
  const bool update = trackRunningStats() && isTraining();
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    const kernels::GroupShape s = shape_of(l);
    T* mean = saveMean.data<T>();
    T* rstd = saveRstd.data<T>();
    if (fixedStatistics) {  // G == C: the running statistics of each channel, for every sample
      const T* rm = running_mean.data<T>();
      const T* rv = running_var.data<T>();
      for (int64_t n = 0; n < l.N; ++n) {
        for (int64_t c = 0; c < l.C; ++c) {
          mean[n * l.C + c] = rm[c];
          rstd[n * l.C + c] = T(1) / std::sqrt(rv[c] + static_cast<T>(eps));
        }
      }
    } else {
      std::vector<T> var(update ? static_cast<size_t>(l.N * l.G) : 0);
      kernels::group_norm_statistics<T>(x.data<T>(), s, eps, mean, rstd, update ? var.data() : nullptr);
      if (update) {  // See Note [Instance norm's running statistics]; G == C
        T* rm = running_mean.data<T>();
        T* rv = running_var.data<T>();
        const T f = static_cast<T>(momentum), unbias = static_cast<T>(l.S) / static_cast<T>(l.S - 1);
        for (int64_t c = 0; c < l.C; ++c) {
          T sm = 0, sv = 0;
          for (int64_t n = 0; n < l.N; ++n) {
            sm += mean[n * l.C + c];
            sv += var[static_cast<size_t>(n * l.C + c)];
          }
          rm[c] = (T(1) - f) * rm[c] + f * (sm / static_cast<T>(l.N));
          rv[c] = (T(1) - f) * rv[c] + f * (sv / static_cast<T>(l.N) * unbias);
        }
      }
    }
    kernels::group_norm_apply<T>(x.data<T>(), s, mean, rstd, weight.defined() ? weight.data<T>() : nullptr,
                                 weight.defined() ? bias.data<T>() : nullptr, output.data<T>());
  });
  return output;
}

const Tensor& GroupNormBase::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  check_float(where("updateGradInput"), input);
  checkGradOutput(input, gradOutput, "updateGradInput");
  const Layout l = layout(input, "updateGradInput");
  const Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  ensure(gradInput, x.sizes(), x);
  if (x.numel() == 0) return gradInput;
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    kernels::group_norm_backward_input<T>(x.data<T>(), gy.data<T>(), shape_of(l), saveMean.data<T>(),
                                          saveRstd.data<T>(), weight.defined() ? weight.data<T>() : nullptr,
                                          fixedStatistics, gradInput.data<T>());
  });
  return gradInput;
}

void GroupNormBase::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  if (!weight.defined()) return;
  check_float(where("accGradParameters"), input);
  checkGradOutput(input, gradOutput, "accGradParameters");
  const Layout l = layout(input, "accGradParameters");
  checkParameters("accGradParameters", true);
  if (input.numel() == 0) return;  // nothing to add
  const Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    kernels::group_norm_backward_params<T>(x.data<T>(), gy.data<T>(), shape_of(l), saveMean.data<T>(),
                                           saveRstd.data<T>(), static_cast<T>(scale), gradWeight.data<T>(),
                                           gradBias.data<T>());
  });
}

}  // namespace nn
