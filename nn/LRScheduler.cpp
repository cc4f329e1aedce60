// LRScheduler.cpp
#include "nn/LRScheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "tensor/Format.h"

namespace nn {

using tensor::num_str;

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (size_t k = 0; k < optimizer.numGroups(); ++k) baseLrs_.push_back(optimizer.groupLr(k));
}

void LRScheduler::start() {
  lastEpoch_ = -1;
  step();
}

// The closed form at the next epoch: See Note [Schedules] in LRScheduler.h
void LRScheduler::step() {
  const int64_t epoch = lastEpoch_ + 1;
  std::vector<double> lrs;  // every value first: a throwing lrAt changes nothing
  for (size_t k = 0; k < baseLrs_.size(); ++k) lrs.push_back(lrAt(k, epoch));
  for (size_t k = 0; k < lrs.size(); ++k) optimizer_.setGroupLr(k, lrs[k]);
  lastEpoch_ = epoch;
}

std::vector<double> LRScheduler::lastLr() const {
  std::vector<double> out;
  for (size_t k = 0; k < optimizer_.numGroups(); ++k) out.push_back(optimizer_.groupLr(k));
  return out;
}

std::map<std::string, double> LRScheduler::stateDict() const {
  std::map<std::string, double> out{{"last_epoch", static_cast<double>(lastEpoch_)}};
  for (size_t k = 0; k < baseLrs_.size(); ++k) out["base_lr." + std::to_string(k)] = baseLrs_[k];
  return out;
}

void LRScheduler::loadStateDict(const std::map<std::string, double>& state) {
  std::vector<double> base(baseLrs_.size());
  auto get = [&](const std::string& key) {
    const auto it = state.find(key);
    if (it == state.end()) throw Error(where("loadStateDict") + "expected a state with '" + key + "', got none");
    return it->second;
  };
  const double epoch = get("last_epoch");
  for (size_t k = 0; k < base.size(); ++k) base[k] = get("base_lr." + std::to_string(k));
  if (state.count("base_lr." + std::to_string(base.size()))) {
    throw Error(where("loadStateDict") + "expected the base lrs of " + std::to_string(base.size()) +
                " parameter groups, got more (a state of another optimizer)");
  }
  if (!(epoch >= 0) || epoch != std::floor(epoch)) {
    throw Error(where("loadStateDict") + "expected an integer last_epoch >= 0, got " + num_str(epoch));
  }
  const std::vector<double> oldBase = baseLrs_;
  const int64_t oldEpoch = lastEpoch_;
  baseLrs_ = base;
  lastEpoch_ = static_cast<int64_t>(epoch) - 1;
  try {
    step();        // the lrs of that epoch
  } catch (...) {  // (OneCycleLR past its total) nothing changed
    baseLrs_ = oldBase;
    lastEpoch_ = oldEpoch;
    throw;
  }
}

// ---------------------------------------------------------------- StepLR, MultiStepLR

StepLR::StepLR(Optimizer& optimizer, int64_t stepSize, double gamma)
    : LRScheduler(optimizer), stepSize_(stepSize), gamma_(gamma) {
  if (stepSize <= 0 || !(gamma > 0)) {
    throw Error("nn.StepLR: expected stepSize > 0 and gamma > 0, got stepSize " + std::to_string(stepSize) +
                " and gamma " + num_str(gamma));
  }
  start();
}

double StepLR::lrAt(size_t group, int64_t epoch) const {
  return baseLrs_[group] * std::pow(gamma_, static_cast<double>(epoch / stepSize_));
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  if (!std::is_sorted(milestones_.begin(), milestones_.end()) || !(gamma > 0)) {
    throw Error("nn.MultiStepLR: expected increasing milestones and gamma > 0, got gamma " + num_str(gamma) +
                (std::is_sorted(milestones_.begin(), milestones_.end()) ? "" : " and unsorted milestones"));
  }
  start();
}

double MultiStepLR::lrAt(size_t group, int64_t epoch) const {
  const auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin();
  return baseLrs_[group] * std::pow(gamma_, static_cast<double>(passed));
}

// ---------------------------------------------------------------- WarmupCosineLR

WarmupCosineLR::WarmupCosineLR(Optimizer& optimizer, int64_t warmup, int64_t total, double minLr, double startFactor)
    : LRScheduler(optimizer), warmup_(warmup), total_(total), minLr_(minLr), startFactor_(startFactor) {
  if (warmup < 0 || total <= warmup || !(minLr >= 0) || !(startFactor > 0 && startFactor <= 1)) {
    throw Error("nn.WarmupCosineLR: expected 0 <= warmup < total, minLr >= 0 and startFactor in (0, 1], got warmup " +
                std::to_string(warmup) + ", total " + std::to_string(total) + ", minLr " + num_str(minLr) +
                ", startFactor " + num_str(startFactor));
  }
  start();
}

double WarmupCosineLR::lrAt(size_t group, int64_t epoch) const {
  const double base = baseLrs_[group];
  if (epoch < warmup_) {  // LinearLR's factor
    return base * (startFactor_ + (1 - startFactor_) * static_cast<double>(epoch) / static_cast<double>(warmup_));
  }
  const auto t = static_cast<double>(std::min(epoch, total_) - warmup_), T = static_cast<double>(total_ - warmup_);
  return minLr_ + (base - minLr_) * (1 + std::cos(std::numbers::pi * t / T)) / 2;
}

// ---------------------------------------------------------------- OneCycleLR

OneCycleLR::OneCycleLR(Optimizer& optimizer, double maxLr, int64_t totalSteps)
    : OneCycleLR(optimizer, maxLr, totalSteps, Options{}) {}

OneCycleLR::OneCycleLR(Optimizer& optimizer, double maxLr, int64_t totalSteps, const Options& options)
    : LRScheduler(optimizer), totalSteps_(totalSteps), o_(options) {
  if (totalSteps <= 0 || !(maxLr > 0) || !(o_.pctStart > 0 && o_.pctStart < 1) || !(o_.divFactor > 0) ||
      !(o_.finalDivFactor > 0)) {
    throw Error(
        "nn.OneCycleLR: expected maxLr > 0, totalSteps > 0, pctStart in (0, 1) and positive div factors, "
        "got maxLr " +
        num_str(maxLr) + ", totalSteps " + std::to_string(totalSteps) + ", pctStart " + num_str(o_.pctStart) +
        ", divFactor " + num_str(o_.divFactor) + ", finalDivFactor " + num_str(o_.finalDivFactor));
  }
  std::fill(baseLrs_.begin(), baseLrs_.end(), maxLr);
  start();
}

double OneCycleLR::lrAt(size_t group, int64_t epoch) const {
  if (epoch > totalSteps_) {
    throw Error(where("step") + "expected at most totalSteps = " + std::to_string(totalSteps_) + " steps, got step " +
                std::to_string(epoch));
  }
  const double maxLr = baseLrs_[group], initial = maxLr / o_.divFactor, minLr = initial / o_.finalDivFactor;
  const double up = o_.pctStart * static_cast<double>(totalSteps_) - 1, last = static_cast<double>(totalSteps_ - 1);
  struct Phase {
    double end, from, to;
  };
  std::vector<Phase> phases;
  if (o_.threePhase) {
    phases = {{up, initial, maxLr},
              {2 * o_.pctStart * static_cast<double>(totalSteps_) - 2, maxLr, initial},
              {last, initial, minLr}};
  } else {
    phases = {{up, initial, maxLr}, {last, maxLr, minLr}};
  }
  const auto step = static_cast<double>(epoch);
  double begin = 0;
  for (size_t i = 0; i < phases.size(); ++i) {
    const Phase& p = phases[i];
    if (step <= p.end || i + 1 == phases.size()) {
      const double pct = (step - begin) / (p.end - begin);
      return o_.cosine ? p.to + (p.from - p.to) / 2 * (std::cos(std::numbers::pi * pct) + 1)
                       : (p.to - p.from) * pct + p.from;
    }
    begin = p.end;
  }
  return minLr;  // not reached
}

// ---------------------------------------------------------------- ReduceLROnPlateau

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer) : ReduceLROnPlateau(optimizer, Options{}) {}

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, const Options& options)
    : optimizer_(optimizer), o_(options) {
  if (!(o_.factor < 1 && o_.factor >= 0) || o_.patience < 0 || o_.cooldown < 0 || !(o_.threshold >= 0) ||
      !(o_.minLr >= 0)) {
    throw Error(
        "nn.ReduceLROnPlateau: expected factor in [0, 1), patience, cooldown, threshold and minLr >= 0, got "
        "factor " +
        num_str(o_.factor) + ", patience " + std::to_string(o_.patience) + ", cooldown " + std::to_string(o_.cooldown) +
        ", threshold " + num_str(o_.threshold) + ", minLr " + num_str(o_.minLr));
  }
  best_ = o_.maximize ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
}

bool ReduceLROnPlateau::better(double a) const {
  if (o_.maximize) return o_.relative ? a > best_ * (1 + o_.threshold) : a > best_ + o_.threshold;
  return o_.relative ? a < best_ * (1 - o_.threshold) : a < best_ - o_.threshold;
}

void ReduceLROnPlateau::step(double metric) {
  ++lastEpoch_;
  if (better(metric)) {
    best_ = metric;
    numBad_ = 0;
  } else {
    ++numBad_;
  }
  if (cooldownCounter_ > 0) {
    --cooldownCounter_;
    numBad_ = 0;
  }
  if (numBad_ > o_.patience) {
    for (size_t k = 0; k < optimizer_.numGroups(); ++k) {
      const double old = optimizer_.groupLr(k), lr = std::max(old * o_.factor, o_.minLr);
      if (old - lr > o_.eps) optimizer_.setGroupLr(k, lr);
    }
    cooldownCounter_ = o_.cooldown;
    numBad_ = 0;
  }
}

std::map<std::string, double> ReduceLROnPlateau::stateDict() const {
  return {{"last_epoch", static_cast<double>(lastEpoch_)},
          {"best", best_},
          {"num_bad_epochs", static_cast<double>(numBad_)},
          {"cooldown_counter", static_cast<double>(cooldownCounter_)}};
}

void ReduceLROnPlateau::loadStateDict(const std::map<std::string, double>& state) {
  for (const char* key : {"last_epoch", "best", "num_bad_epochs", "cooldown_counter"}) {
    if (!state.count(key)) {
      throw Error(type_name() + "::loadStateDict: expected a state with '" + key + "', got none");
    }
  }
  lastEpoch_ = static_cast<int64_t>(state.at("last_epoch"));
  best_ = state.at("best");
  numBad_ = static_cast<int64_t>(state.at("num_bad_epochs"));
  cooldownCounter_ = static_cast<int64_t>(state.at("cooldown_counter"));
}

}  // namespace nn
