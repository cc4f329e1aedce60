// Adam.h: Adam (Kingma & Ba) as torch.optim.Adam, with L2 weight decay added to the
// gradient:
//   g = grad + weightDecay * p;  t += 1
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
//   p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// State per parameter: "step", "exp_avg" (m), "exp_avg_sq" (v). Tensor ops, so CUDA
// parameters update on the GPU; contiguous CPU ones take one fused pass (kernels/Optimizer.h),
// contiguous CUDA ones a few multi-tensor launches per step (tensor/MultiTensor.h), with the
// same bits (Note [Fused optimizer steps] in Optimizer.h). Hyperparameters are public fields; lr and
// weightDecay may differ per parameter group (Note [Parameter groups] in Optimizer.h).
#pragma once

#include "nn/Optimizer.h"

namespace nn {

// The hyperparameters of Adam and AdamW, torch.optim's defaults; the two differ only in
// weightDecay's (0 and 1e-2), so each names its own Options type. The default comes from a type
// (Defaults::weightDecay) rather than a double template argument, which clang 14 (the fuzz
// builds, clangd) does not take yet.
template <class Defaults>
struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = Defaults::weightDecay;
};
struct AdamDefaults {
  static constexpr double weightDecay = 0;
};
struct AdamWDefaults {
  static constexpr double weightDecay = 1e-2;
};

class Adam : public Optimizer {
 public:
  using Options = AdamOptions<AdamDefaults>;

  Adam(std::vector<Tensor> params, std::vector<Tensor> grads, double lr = 1e-3, double beta1 = 0.9,
       double beta2 = 0.999, double eps = 1e-8, double weightDecay = 0);
  Adam(std::vector<Tensor> params, std::vector<Tensor> grads, const Options& options);
  // m.parameters() / m.gradParameters()
  explicit Adam(Module& m, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8,
                double weightDecay = 0);
  Adam(Module& m, const Options& options);
  // Parameter groups (Note [Parameter groups] in Optimizer.h); `options` gives the defaults.
  Adam(std::vector<ParamGroup> groups, const Options& options);

  void step() override;
  static constexpr std::string_view kTypeName = "nn.Adam";
  std::string type_name() const override { return std::string(kTypeName); }

  double beta1, beta2, eps;  // lr and weightDecay: Optimizer's (per group)

 protected:
  // AdamW: decoupled weight decay, and its name in errors
  Adam(std::vector<ParamGroup> groups, const Options& options, bool decoupled, std::string_view name);
  void checkOptions(const char* method) const;
  bool decoupled_ = false;
  Tensor& moment(size_t i, const char* name);  // zeros on first use
};

}  // namespace nn
