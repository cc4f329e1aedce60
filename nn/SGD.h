// SGD.h: stochastic gradient descent with momentum, dampening, L2 weight decay and
// Nesterov momentum, as torch.optim.SGD (and Torch7's optim.sgd):
//   d = grad + weightDecay * p
//   buf = d (first step), else buf = momentum * buf + (1 - dampening) * d
//   d = nesterov ? d + momentum * buf : buf          (when momentum != 0)
//   p -= lr * d
// State: "momentum_buffer" per parameter. Tensor ops, so CUDA parameters update on the GPU;
// contiguous CUDA ones take a few multi-tensor launches per step instead, with the same bits
// (Note [Fused optimizer steps] in Optimizer.h). Hyperparameters are public fields; lr and
// weightDecay may differ per parameter group (Note [Parameter groups] in Optimizer.h).
#pragma once

#include "nn/Optimizer.h"

namespace nn {

class SGD : public Optimizer {
 public:
  struct Options {
    double lr = 1e-3;
    double momentum = 0;
    double dampening = 0;
    double weightDecay = 0;
    bool nesterov = false;
  };

  SGD(std::vector<Tensor> params, std::vector<Tensor> grads, double lr, double momentum = 0, double dampening = 0,
      double weightDecay = 0, bool nesterov = false);
  SGD(std::vector<Tensor> params, std::vector<Tensor> grads, const Options& options);
  // m.parameters() / m.gradParameters()
  SGD(Module& m, double lr, double momentum = 0, double dampening = 0, double weightDecay = 0, bool nesterov = false);
  SGD(Module& m, const Options& options);
  // Parameter groups (Note [Parameter groups] in Optimizer.h); `options` gives the defaults.
  SGD(std::vector<ParamGroup> groups, const Options& options);

  void step() override;
  // Decided on the device, inside the fused kernels (capturable), when every parameter takes them
  // on foundInf's device and every momentum buffer exists (after the first step); otherwise
  // foundInf is read on the host first, as the base's.
  void stepIfFinite(const Tensor& foundInf) override;
  static constexpr std::string_view kTypeName = "nn.SGD";
  std::string type_name() const override { return std::string(kTypeName); }

  double momentum, dampening;  // lr and weightDecay: Optimizer's (per group)
  bool nesterov;

 protected:
  void checkOptions(const char* method) const;
  // step() (flag nullptr) or stepIfFinite(*flag)
  void update(const Tensor* flag, const char* method);
};

}  // namespace nn
