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
// Note [Capturable Adam]: a step of the default optimizer cannot be captured in a CUDA graph
// (Note [CUDA graphs] in tensor/Cuda.h): its bias corrections come from step counts on the host,
// which a replay would not advance. With `capturable` (PyTorch's capturable=True) every count is
// a one-element int64 tensor on its parameter's device and each group's lr a float64 one there;
// the step is the fused multi-tensor update (tensor::cuda::adam_step_capturable): a tiny launch
// advances the counts and computes 1 - beta^t, -lr / bias1 and 1 / sqrt(bias2) on the device
// (Note [Bias corrections on the device] in tensor/AdamScalars.h), then the update reads them. So a
// captured step replayed N times gives N eager capturable steps' bits, and those are the default
// path's bits for float32, float16 and bfloat16 parameters (float64 ones may differ by an ulp of
// those scalars in rare steps: glibc's pow is not always correctly rounded). Requirements:
//   - every parameter dense on a CUDA device with its gradient laid out alike, sharing no memory
//     with another (the fused path of Note [Fused optimizer steps]), and `fused` left true;
//     otherwise step() throws, naming the optimizer and the parameter;
//   - one eager step before capturing (it makes the moments, the counts and the device lrs);
//   - lr: setLr / setGroupLr (what the schedulers of nn/LRScheduler.h call) write the device lr at
//     once, so a schedule stepped on the host between replays takes effect in the next replay;
//     `opt.lr = x` reaches the device at the next eager step only (a capture with a stale device
//     lr throws). beta1, beta2, eps and weightDecay are baked into a captured step.
//   - stepIfFinite(foundInf) (GradScaler's device path) skips on the device, counts included, as
//     SGD's does; stateDict() reads the counts to the CPU, loadStateDict() writes them (and the
//     moments) in place, so a graph captured earlier keeps its addresses.
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
  bool capturable = false;  // Note [Capturable Adam]: counts and lr on the device
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
  // Capturable: decided on the device, inside the fused kernels, when foundInf is a one-element
  // float32 tensor on the parameters' device and every state tensor exists (after one step);
  // otherwise (and always without capturable) foundInf is read on the host first.
  void stepIfFinite(const Tensor& foundInf) override;
  static constexpr std::string_view kTypeName = "nn.Adam";
  std::string type_name() const override { return std::string(kTypeName); }

  double beta1, beta2, eps;                        // lr and weightDecay: Optimizer's (per group)
  bool capturable() const { return capturable_; }  // fixed at construction

 protected:
  // AdamW: decoupled weight decay, and its name in errors
  Adam(std::vector<ParamGroup> groups, const Options& options, bool decoupled, std::string_view name);
  void checkOptions(const char* method) const;
  bool decoupled_ = false;
  Tensor& moment(size_t i, const char* name);  // zeros on first use

 private:
  // Note [Capturable Adam]: step() (flag nullptr) or stepIfFinite(*flag) on the device
  void deviceStep(const Tensor* flag, const char* method);
  // the fused groups, throwing unless every parameter is in one
  std::vector<std::vector<size_t>> capturableGroups(const char* method) const;
  void lrChanged() override;
  // writes each group's lr to its device tensors where it changed; `make`: create missing ones
  void syncLr(const char* method, bool make);
  bool capturable_ = false;
  struct DeviceLr {
    Tensor value;  // one-element float64
    double written;
  };
  std::map<std::pair<size_t, int>, DeviceLr> deviceLr_;  // (parameter group, device) -> its lr there
};

}  // namespace nn
