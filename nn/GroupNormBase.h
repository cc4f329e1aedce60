// GroupNormBase.h: the family base of nn::GroupNorm and nn::InstanceNorm, which normalise an
// input [N x C x *] over groups of channels: the C channels split into G groups of C/G, and
// each (sample, group) is normalised over its C/G channels and all their positions, y = (x -
// mean) / sqrt(var + eps) [* weight[c] + bias[c]] (biased variance, per-channel affine
// parameters [C]: weight ones, bias zeros). GroupNorm picks G; InstanceNorm has G = C and may
// track running statistics (running_mean zeros, running_var ones, [C]), updated in training
// with momentum and the unbiased variance, as PyTorch's; in evaluation it normalises with them
// then. Float32 and float64 here; each forward keeps the statistics it normalised with in
// saveMean and saveRstd ([N x G]; the input's dtype, float32 for a twin's 16-bit input) for
// the backward pass, and a twin fills the same members. Twins: cudnn::GroupNormBase
// (cudnn/GroupNormBase.h).
#pragma once

#include <string>
#include <string_view>

#include "nn/Module.h"

namespace nn {

class GroupNormBase : public Module {
 public:
  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  // weight 1, bias 0, running_mean 0, running_var 1
  void reset();

  // The number of groups: GroupNorm's numGroups, InstanceNorm's numChannels.
  virtual int64_t groups() const = 0;
  bool affine() const { return weight.defined(); }
  bool trackRunningStats() const { return running_mean.defined(); }
  // InstanceNorm with tracked statistics in evaluation mode: the running statistics normalise.
  bool normalisesWithRunningStatistics() const { return trackRunningStats() && !isTraining(); }

  int64_t numChannels;
  double eps;
  double momentum;                            // the running statistics' factor (InstanceNorm's; unused without them)
  Tensor weight, bias, gradWeight, gradBias;  // [numChannels], undefined without affine
  Tensor running_mean, running_var;           // [numChannels] buffers, undefined unless tracked
  // The last forward's per-(sample, group) mean and 1/sqrt(var + eps), [N x G], and whether
  // they were the running statistics (then they do not depend on the input, and backward
  // treats them as constants): what backward reads.
  Tensor saveMean, saveRstd;
  bool fixedStatistics = false;

  // The input as N samples of C channels in G groups of S positions each.
  struct Layout {
    int64_t N, C, G, S;
  };
  // Shapes only (the twins check dtypes their own way): the rank (minRank or more), C ==
  // numChannels, G dividing C, more than one position a channel where the input's statistics
  // normalise (InstanceNorm, as PyTorch), and the parameters' and buffers' shapes.
  Layout layout(const Tensor& input, const char* method) const;
  // gradOutput of the input's shape and dtype, and statistics from a forward of this shape.
  void checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const;
  // weight and bias (with `gradients` their gradients too) of [numChannels], dense, bias of
  // weight's dtype and device, where affine; running_mean and running_var of [numChannels], of
  // one dtype and device, where tracked (Note [Parameters are checked where they are used] in
  // nn/Buffers.h).
  void checkParameters(const char* method, bool gradients) const;
  // The tensor an input's dtype and device must match: weight, else running_mean, else none.
  const Tensor& typeReference() const { return weight.defined() ? weight : running_mean; }

 protected:
  // typeName: for the constructor's errors (type_name() is not virtual yet there).
  GroupNormBase(std::string_view typeName, int64_t numGroups, int64_t numChannels, double eps, double momentum,
                bool affine, bool trackRunningStats, int64_t minRank);
  void visitState(StateVisitor& v) override;
  // "[N x 6 x *]"-style contract for the errors
  std::string shapeContract() const;

  int64_t minRank_;  // 2 for GroupNorm ([N x C] is allowed), 3 for InstanceNorm
};

}  // namespace nn
