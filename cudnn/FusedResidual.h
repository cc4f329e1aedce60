// FusedResidual.h: cudnn.FusedResidual, nn::FusedResidual (a residual unit whose block ends in
// a batch norm, and the ReLU after its sum; what cudnn::fuse rewrites such a pair into)
// computing relu(bn(h) + shortcut(x)), h the rest of the block, with the batch norm, the sum
// and the ReLU in one cuDNN pass forward and one backward where cuDNN's channels-last kernels
// run it, the separate passes elsewhere (Note [Batch norm epilogues] in
// cudnn/ops/batch_norm.cpp). That needs a cudnn.Residual whose block is a Sequential ending in
// a batch-norm twin, and a cudnn.ReLU; other children compute in turn, as nn does.
// Note [Fused residual].
#pragma once

#include "cudnn/FusedTwin.h"
#include "nn/FusedResidual.h"

namespace cudnn {

namespace detail {
class FusableConvolution;  // cudnn/ConvolutionBase.h

// Whether (residual, act) fuses: a cudnn.Residual whose block is a Sequential ending in a
// batch-norm twin, and a cudnn.ReLU. Shared with cudnn::fuse.
bool fusable_residual(const nn::ModulePtr& residual, const nn::ModulePtr& act);
}  // namespace detail

class FusedResidual : public detail::FusedTwin<nn::FusedResidual> {
 public:
  using FusedTwin::FusedTwin;

 protected:
  bool fusable() const override;
  void forwardFused(const tensor::Tensor& input) override;
  void backwardFused(const tensor::Tensor& input, const tensor::Tensor& gradOutput, detail::FusedPass pass,
                     double scale) override;

 private:
  // The block's first child as a convolution twin (a block of two children or more), or null.
  detail::FusableConvolution* firstConvolution() const;
  // Whether the block's first convolution will add its input gradient onto gs (the shortcut's),
  // having been told to: in a backward that frees the intermediate gradients.
  bool addsOntoShortcut(const tensor::Tensor& input, const tensor::Tensor& gs);

  tensor::Tensor bnInput_;  // the block's last batch norm's input in the last fused forward
  tensor::Tensor gradSum_;  // the sum's gradient through the ReLU: the shortcut's gradOutput
};

}  // namespace cudnn
