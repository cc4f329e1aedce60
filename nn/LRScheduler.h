// LRScheduler.h: learning-rate schedules over any optimizer's parameter groups, as
// torch.optim.lr_scheduler: StepLR, MultiStepLR, WarmupCosineLR (LinearLR warm-up then
// CosineAnnealingLR, PyTorch's SequentialLR of the two), OneCycleLR, ReduceLROnPlateau.
// Note [Schedules]: a schedule records each group's lr when built (its base lr), sets the lr of
// epoch 0 at once (PyTorch's constructor does a first step()), and step() advances one epoch
// (or one batch, for schedules counted in batches: call it after optimizer.step()). Values are
// the closed forms of PyTorch's schedules (its _get_closed_form_lr), computed from the epoch
// number and not from the previous lr, so a schedule resumed from its stateDict() sets the same
// lr as one that never stopped. lr is set through Optimizer::setGroupLr (Note [Parameter groups]
// in Optimizer.h), so other code changing lr between steps is overwritten, as in PyTorch's
// closed forms. States are plain numbers: {"last_epoch": 3, "base_lr.0": 0.1, ...}.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nn/Optimizer.h"

namespace nn {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // One epoch (or batch) done: sets every group's lr for the next one.
  void step();
  int64_t lastEpoch() const { return lastEpoch_; }
  std::vector<double> lastLr() const;  // every group's lr now
  virtual std::string type_name() const = 0;
  // "last_epoch" and "base_lr.<group>"; loadStateDict also sets the lrs of that epoch.
  std::map<std::string, double> stateDict() const;
  void loadStateDict(const std::map<std::string, double>& state);

 protected:
  explicit LRScheduler(Optimizer& optimizer);
  // Call at the end of a subclass's constructor (checks done): the lr of epoch 0.
  void start();
  // The closed form: group `group`'s lr at `epoch` from its base lr.
  virtual double lrAt(size_t group, int64_t epoch) const = 0;
  std::string where(const char* method) const { return type_name() + "::" + method + ": "; }

  Optimizer& optimizer_;
  std::vector<double> baseLrs_;
  int64_t lastEpoch_ = 0;
};

// lr = base * gamma^floor(epoch / stepSize)   (torch.optim.lr_scheduler.StepLR)
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t stepSize, double gamma = 0.1);
  std::string type_name() const override { return "nn.StepLR"; }

 protected:
  double lrAt(size_t group, int64_t epoch) const override;
  int64_t stepSize_;
  double gamma_;
};

// lr = base * gamma^(number of milestones <= epoch)   (MultiStepLR; milestones increasing)
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);
  std::string type_name() const override { return "nn.MultiStepLR"; }

 protected:
  double lrAt(size_t group, int64_t epoch) const override;
  std::vector<int64_t> milestones_;
  double gamma_;
};

// Linear warm-up over `warmup` epochs from startFactor * base to base (LinearLR's
// start_factor, default 1/3 as PyTorch's), then cosine annealing to minLr over the remaining
// total - warmup epochs (CosineAnnealingLR, T_max = total - warmup, eta_min = minLr); minLr
// after `total`. PyTorch: SequentialLR([LinearLR(opt, startFactor, 1.0, warmup),
// CosineAnnealingLR(opt, total - warmup, minLr)], milestones=[warmup]).
class WarmupCosineLR : public LRScheduler {
 public:
  WarmupCosineLR(Optimizer& optimizer, int64_t warmup, int64_t total, double minLr = 0, double startFactor = 1.0 / 3);
  std::string type_name() const override { return "nn.WarmupCosineLR"; }

 protected:
  double lrAt(size_t group, int64_t epoch) const override;
  int64_t warmup_, total_;
  double minLr_, startFactor_;
};

// OneCycleLR (Smith & Topin), counted in batches over totalSteps: from maxLr / divFactor up to
// maxLr over the first pctStart of the steps, then down to maxLr / divFactor / finalDivFactor,
// cosine (or linear) annealing; PyTorch's defaults. maxLr replaces the groups' lrs (their base
// lr is maxLr). Momentum is not cycled (PyTorch's cycle_momentum=False). Stepping past
// totalSteps throws, as PyTorch does.
class OneCycleLR : public LRScheduler {
 public:
  struct Options {
    double pctStart = 0.3;
    bool cosine = true;  // false: linear annealing
    double divFactor = 25;
    double finalDivFactor = 1e4;
    bool threePhase = false;
  };
  OneCycleLR(Optimizer& optimizer, double maxLr, int64_t totalSteps, const Options& options);
  OneCycleLR(Optimizer& optimizer, double maxLr, int64_t totalSteps);
  std::string type_name() const override { return "nn.OneCycleLR"; }

 protected:
  double lrAt(size_t group, int64_t epoch) const override;
  int64_t totalSteps_;
  Options o_;
};

// ReduceLROnPlateau: step(metric) once per epoch; after more than `patience` epochs without an
// improvement (relative or absolute `threshold`, mode min or max) every group's lr is
// multiplied by `factor` (not below minLr; changes smaller than eps skipped), then `cooldown`
// epochs pass before counting again. PyTorch's semantics and defaults.
class ReduceLROnPlateau {
 public:
  struct Options {
    bool maximize = false;  // mode 'max'
    double factor = 0.1;
    int64_t patience = 10;
    double threshold = 1e-4;
    bool relative = true;  // threshold_mode 'rel' ('abs' otherwise)
    int64_t cooldown = 0;
    double minLr = 0;
    double eps = 1e-8;
  };
  explicit ReduceLROnPlateau(Optimizer& optimizer);
  ReduceLROnPlateau(Optimizer& optimizer, const Options& options);
  void step(double metric);
  std::string type_name() const { return "nn.ReduceLROnPlateau"; }
  int64_t lastEpoch() const { return lastEpoch_; }
  int64_t badEpochs() const { return numBad_; }
  double best() const { return best_; }
  // "last_epoch", "best", "num_bad_epochs", "cooldown_counter"
  std::map<std::string, double> stateDict() const;
  void loadStateDict(const std::map<std::string, double>& state);

 private:
  bool better(double a) const;
  Optimizer& optimizer_;
  Options o_;
  double best_;
  int64_t numBad_ = 0, cooldownCounter_ = 0, lastEpoch_ = 0;
};

}  // namespace nn
