// InstanceNorm.h: PyTorch's nn.InstanceNorm1d / 2d / 3d in one module (Ulyanov et al. 2016): an
// input [N x C x *] (3 or more dims) with C = numFeatures; each (sample, channel) is normalised
// over its positions, y = (x - mean) / sqrt(var + eps) [* weight[c] + bias[c]] (biased
// variance). affine (default false) adds weight (ones) and bias (zeros) [C].
// trackRunningStats (default false) adds the buffers running_mean (zeros) and running_var
// (ones) [C], updated by training forwards with momentum and the unbiased variance, and
// normalising in evaluation mode; and num_batches_tracked (an int64 scalar) for PyTorch's
// state_dict, never counted, as PyTorch's (Note [Instance norm's running statistics] in
// nn/GroupNormBase.cpp). The input's statistics need more than one position a channel, as
// PyTorch's. The compute is nn::GroupNormBase's with a group a channel.
// Prints as "nn.InstanceNorm(3, eps=1e-05, momentum=0.1)" with ", affine=true" and
// ", track_running_stats=true" where set. Twin: cudnn.InstanceNorm (cudnn/InstanceNorm.h).
#pragma once

#include "nn/GroupNormBase.h"

namespace nn {

class InstanceNorm : public GroupNormBase {
 public:
  explicit InstanceNorm(int64_t numFeatures, double eps = 1e-5, double momentum = 0.1, bool affine = false,
                        bool trackRunningStats = false);

  int64_t groups() const override { return numChannels; }
  static constexpr std::string_view kTypeName = "nn.InstanceNorm";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;

  Tensor num_batches_tracked;  // int64 scalar buffer where tracked (PyTorch's; stays 0)

 protected:
  void visitState(StateVisitor& v) override;
};

}  // namespace nn
