// FusedBatchNormalization.h: cudnn.FusedBatchNormalization, nn::FusedBatchNormalization (a batch
// norm and the activation after it, what cudnn::fuse rewrites such a pair into) computing
// y = relu(bn(x)) in one cuDNN pass forward and one backward where cuDNN's channels-last
// kernels run it, the separate passes elsewhere (Note [Batch norm epilogues] in
// cudnn/ops/batch_norm.cpp). That needs a batch-norm twin and a cudnn.ReLU; any other children
// (an nn module left by convert's exclude, another activation) compute in turn, as nn does.
// Note [Fused batch normalization].
#pragma once

#include "cudnn/FusedTwin.h"
#include "nn/FusedBatchNormalization.h"

namespace cudnn {

namespace detail {
class FusableBatchNorm;
// The batch norm of a (batch norm, activation) pair that fuses: a batch-norm twin followed by
// a cudnn.ReLU; else nullptr. Shared with cudnn::FusedResidual and cudnn::fuse.
FusableBatchNorm* fusable_batch_norm(const nn::ModulePtr& bn, const nn::ModulePtr& act);
}  // namespace detail

class FusedBatchNormalization : public detail::FusedTwin<nn::FusedBatchNormalization> {
 public:
  using FusedTwin::FusedTwin;

 protected:
  bool fusable() const override;
  void forwardFused(const tensor::Tensor& input) override;
  void backwardFused(const tensor::Tensor& input, const tensor::Tensor& gradOutput, detail::FusedPass pass,
                     double scale) override;
};

}  // namespace cudnn
