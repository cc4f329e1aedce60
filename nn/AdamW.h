// AdamW.h: Adam with decoupled weight decay (Loshchilov & Hutter), as torch.optim.AdamW:
//   p *= 1 - lr * weightDecay;  then Adam's step on the plain gradient (no L2 term)
// with PyTorch's defaults (lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 1e-2). The same
// state ("step", "exp_avg", "exp_avg_sq") and the same fused paths as nn::Adam (the CPU kernel
// of kernels/Optimizer.h and the multi-tensor CUDA launches, with the per-tensor path's bits).
// To exclude biases and normalisation weights from the decay, build it from decayGroups(m)
// (Note [Parameter groups] in Optimizer.h).
#pragma once

#include "nn/Adam.h"

namespace nn {

class AdamW : public Adam {
 public:
  using Options = AdamOptions<AdamWDefaults>;

  // (an Options{} default argument inside the class is refused by GCC: overloads instead)
  AdamW(std::vector<Tensor> params, std::vector<Tensor> grads);
  AdamW(std::vector<Tensor> params, std::vector<Tensor> grads, const Options& options);
  explicit AdamW(Module& m);  // m.parameters() / m.gradParameters()
  AdamW(Module& m, const Options& options);
  explicit AdamW(std::vector<ParamGroup> groups);
  AdamW(std::vector<ParamGroup> groups, const Options& options);

  static constexpr std::string_view kTypeName = "nn.AdamW";
  std::string type_name() const override { return std::string(kTypeName); }
};

}  // namespace nn
