// GroupNorm.h: PyTorch's nn.GroupNorm (Wu and He 2018): an input [N x C] or [N x C x *] with C =
// numChannels, its channels split into numGroups groups of C / numGroups; each (sample, group)
// is normalised over its channels and positions, y = (x - mean) / sqrt(var + eps) * weight[c]
// + bias[c] (biased variance, no running statistics; the same in training and evaluation).
// weight (ones) and bias (zeros) are [C], none with affine = false. The compute is
// nn::GroupNormBase's (nn/GroupNormBase.h). Prints as "nn.GroupNorm(2, 6, eps=1e-05)".
// Twin: cudnn.GroupNorm (cudnn/GroupNorm.h).
#pragma once

#include "nn/GroupNormBase.h"

namespace nn {

class GroupNorm : public GroupNormBase {
 public:
  GroupNorm(int64_t numGroups, int64_t numChannels, double eps = 1e-5, bool affine = true);

  int64_t groups() const override { return numGroups; }
  static constexpr std::string_view kTypeName = "nn.GroupNorm";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;

  int64_t numGroups;
};

}  // namespace nn
