// Optimizer.h: the base of SGD and Adam. An optimizer holds handles to parameter tensors
// and their gradients (sharing their storage, so step() updates the module in place) and
// per-parameter state (momentum buffers, moments, step counts) created on first use.
// Updates are tensor ops, so they run wherever the parameters live (CPU or CUDA); contiguous
// parameters take fused kernels with the same bits (Note [Fused optimizer steps]).
// Build the optimizer after the module's to(device)/to(dtype): those replace the module's
// tensors, and an optimizer built before would keep updating the old ones.
// Note [Atomic step]: step() makes every buffer it needs (new state, temporaries) before it
// writes any parameter or state, then updates in place only; so a step that fails for lack
// of memory (tensor::cuda::allocate throws) leaves parameters, state and counters as they
// were, and the same step can be retried. Its peak memory is one temporary per parameter on the
// per-tensor path, none on the fused one.
// Note [Fused optimizer steps]: with `fused` set (the default), dense CUDA parameters whose
// gradients and state share their layout (row-major, or channels-last filters after
// Module::to(MemoryFormat)) are updated together, per device and dtype, by the
// multi-tensor kernels of tensor/MultiTensor.h: ceil(n / 48) launches for n parameters, where the
// tensor ops take 3-11 launches per parameter (483-1771 for ResNet-50's 161), with no host
// synchronisation (the pointer tables travel as kernel arguments). Contiguous CPU float32/float64
// parameters take the CPU kernels of nn/kernels/Optimizer.h where there is one (Adam). Every
// other parameter (strided ones, or one whose gradient is laid out otherwise) takes the tensor
// ops. All paths give the same bits: the
// kernels repeat the tensor ops' arithmetic, operation by operation, 16-bit roundings included.
// Parameters that share memory with another one (a tensor listed twice, overlapping views) take
// the tensor ops, one after the other as before, after the fused launches (which touch only
// memory no other parameter has). `fused = false` sends every parameter through the tensor ops
// (tests compare the paths).
// Note [Parameter groups]: as torch.optim's param_groups, an optimizer may be built from groups
// of parameters, each with its own lr and weightDecay (unset: the optimizer's `lr` and
// `weightDecay` fields, so `opt.lr = x` keeps working for an optimizer of one group). Schedulers
// set each group's lr through setGroupLr; decayGroups() splits a module's parameters into a
// decayed group and one without weight decay (biases and normalisation weights). As in
// torch.optim, construction refuses an optimizer without parameters ("got an empty parameter
// list"; a group may be empty, not all of them) and a tensor (the same view: Tensor::is_same_view)
// in two groups, which every step would update twice ("some parameters appear in more than one
// parameter group"). A tensor listed twice within one group is still taken (and stepped twice,
// Note [Fused optimizer steps]; PyTorch warns of it).
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nn/Module.h"

namespace nn {

// One parameter group (Note [Parameter groups]): tensors with their gradients and optional
// per-group hyperparameters.
struct ParamGroup {
  std::vector<Tensor> params, grads;
  std::optional<double> lr, weightDecay;  // unset: the optimizer's
};

// The parameters of `m` in two groups: [0] those for which `noDecay(name, param)` is false, with
// the optimizer's weight decay, and [1] the others, with weightDecay 0. The default predicate
// excludes every parameter of at most one dimension (biases, batch-norm weights and biases), as
// the usual AdamW recipes do.
std::vector<ParamGroup> decayGroups(Module& m,
                                    const std::function<bool(const std::string&, const Tensor&)>& noDecay = {});

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter from its current gradient.
  virtual void step() = 0;
  // step() unless foundInf[0] != 0: GradScaler's verdict, a one-element float32 tensor (CPU or
  // CUDA). Here the flag is read on the host (a synchronisation); SGD reads it on the device,
  // inside its fused kernels, so its step can be captured in a CUDA graph (Note [Capturable loss
  // scaling] in nn/GradScaler.h). A skipped step changes nothing (parameters, state, counters).
  virtual void stepIfFinite(const Tensor& foundInf);
  // Zeroes every gradient (Module::zeroGradParameters for the optimised tensors); with `fused`,
  // dense CUDA gradients in a few multi-tensor launches (tensor::cuda::zero_tensors).
  void zeroGrad();
  virtual std::string type_name() const = 0;  // "nn.SGD"

  bool fused = true;  // Note [Fused optimizer steps]; false: tensor ops for every parameter
  // The defaults of groups that set none (Note [Parameter groups]).
  double lr = 0, weightDecay = 0;

  // ---- parameter groups (Note [Parameter groups]) ----
  size_t numGroups() const { return groupLr_.size(); }
  size_t groupOf(size_t param) const { return groupOf_.at(param); }
  double groupLr(size_t group) const { return groupLr_.at(group).value_or(lr); }
  double groupWeightDecay(size_t group) const { return groupWeightDecay_.at(group).value_or(weightDecay); }
  void setGroupLr(size_t group, double value);
  void setGroupWeightDecay(size_t group, double value);
  // Every group's lr (what schedulers call).
  void setLr(double value);
  // (setGroupLr and setLr then call lrChanged(): capturable Adam writes its device lr there.)

  const std::vector<Tensor>& params() const { return params_; }
  const std::vector<Tensor>& grads() const { return grads_; }
  // State of parameter i by name ("momentum_buffer", "exp_avg", "exp_avg_sq", "step").
  const std::map<std::string, Tensor>& state(size_t i) const { return state_.at(i); }
  // All state, keyed "<parameter index>.<name>" ("0.exp_avg"); loadStateDict copies such a
  // map back (onto each parameter's device and dtype; "step" counters stay Int64 on the CPU).
  // Step counters kept on a device (capturable Adam) come back read to the CPU (a synchronisation),
  // and an optimizer with `loadsInPlace_` loads into its existing state tensors, so that a CUDA
  // graph captured before the load keeps the addresses it saw.
  std::map<std::string, Tensor> stateDict() const;
  void loadStateDict(const std::map<std::string, Tensor>& state);
  // What loadStateDict checks, changing nothing: every key "<index>.<name>" with an index below
  // params().size(), a "step" a one-element integer >= 0, other state a floating tensor of its
  // parameter's shape. (A checkpoint checks the optimizer's state so before it changes anything.)
  void checkStateDict(const std::map<std::string, Tensor>& state) const;

 protected:
  Optimizer(std::vector<Tensor> params, std::vector<Tensor> grads, const std::string& name);
  Optimizer(std::vector<ParamGroup> groups, const std::string& name);
  Optimizer(Optimizer&&) = default;
  // lr >= 0 and weightDecay >= 0 for the defaults and every group.
  void checkGroups(const char* method) const;
  // checkStateDict's checks, the errors naming `method`.
  void checkState(const std::map<std::string, Tensor>& state, const char* method) const;
  // name_: the type name given at construction (in a base constructor type_name() is the base's)
  std::string where(const char* method) const { return name_ + "::" + method + ": "; }
  // The gradient with L2 weight decay folded in: grad + weightDecay * param (a new tensor).
  static Tensor decayed(const Tensor& param, const Tensor& grad, double weightDecay);
  // foundInf[0] != 0, read on the host; an error naming `method` while a CUDA graph captures.
  bool foundOnHost(const Tensor& foundInf, const char* method) const;
  // A parameter's step counter, incremented: Adam's bias corrections use it.
  int64_t nextStep(size_t i);
  // After setGroupLr / setLr (capturable Adam's device lr).
  virtual void lrChanged() {}
  // The parameters of fused CUDA updates, grouped by device and dtype, in index order, and a mask
  // of them (Note [Fused optimizer steps]); a group never spans parameter groups; `stateNames`: the state tensors the
  // update uses, where they already exist. Empty when `fused` is false.
  std::vector<std::vector<size_t>> fusedCudaGroups(std::initializer_list<const char*> stateNames,
                                                   std::vector<bool>& inGroup) const;

  std::string name_;
  std::vector<Tensor> params_, grads_;
  std::vector<std::map<std::string, Tensor>> state_;
  std::vector<size_t> groupOf_;  // parameter index -> parameter group
  std::vector<std::optional<double>> groupLr_, groupWeightDecay_;
  bool loadsInPlace_ = false;  // loadStateDict writes into existing state of the same shape and dtype
};

}  // namespace nn
