// GradScaler.cpp
#include "nn/GradScaler.h"

#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "tensor/MultiTensor.h"

namespace nn {

namespace {
std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}
}  // namespace

GradScaler::GradScaler() : GradScaler(Options{}) {}

GradScaler::GradScaler(const Options& o)
    : scale_(o.initScale),
      growth_(o.growthFactor),
      backoff_(o.backoffFactor),
      interval_(o.growthInterval),
      enabled_(o.enabled) {
  if (!(o.initScale > 0) || !std::isfinite(o.initScale) || !(o.growthFactor > 1) ||
      !(o.backoffFactor > 0 && o.backoffFactor < 1) || o.growthInterval <= 0) {
    throw Error(
        "nn.GradScaler: expected a finite initScale > 0, growthFactor > 1, backoffFactor in (0, 1) and "
        "growthInterval > 0, got initScale " +
        num(o.initScale) + ", growthFactor " + num(o.growthFactor) + ", backoffFactor " + num(o.backoffFactor) +
        ", growthInterval " + std::to_string(o.growthInterval));
  }
}

Tensor GradScaler::scaleGrad(const Tensor& gradOutput) const { return enabled_ ? gradOutput.mul(scale_) : gradOutput; }

void GradScaler::unscale(const std::vector<Tensor>& grads) {
  if (!enabled_) return;
  if (unscaled_) {
    throw Error("nn.GradScaler::unscale: expected one unscale per step, got a second one before update()");
  }
  // PyTorch's inverse: computed in float64, rounded to float32
  const auto inv = static_cast<double>(static_cast<float>(1.0 / scale_));
  std::map<std::tuple<int, DType>, std::vector<Tensor>> groups;  // Note [One synchronisation per step]
  std::vector<Tensor> found;
  bool cpu = false;
  for (const Tensor& g : grads) {
    if (g.numel() == 0) continue;
    if (g.is_cuda() && g.is_contiguous()) {
      groups[{g.device().index, g.dtype()}].push_back(g);
      continue;
    }
    Tensor t = g;
    t.mul_(inv);
    cpu = cpu || !std::isfinite(t.to(DType::Float64).sum().item());  // float64: finite values cannot overflow
  }
  for (auto& [key, list] : groups) {
    const Device device = list[0].device();
    Tensor flag = tensor::zeros({1}, DType::Float32, device);
    tensor::cuda::unscale_and_check(list, flag, tensor::full({1}, inv, DType::Float32, device));
    found.push_back(flag);
  }
  foundCpu_ = cpu;
  foundDevice_ = std::move(found);
  unscaled_ = true;
}

bool GradScaler::foundInf() {
  for (const Tensor& f : foundDevice_) foundCpu_ = foundCpu_ || f.item() != 0;  // the step's one synchronisation
  foundDevice_.clear();
  return foundCpu_;
}

bool GradScaler::step(Optimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return true;
  }
  if (!unscaled_) unscale(optimizer);
  if (foundInf()) {
    ++skipped_;
    return false;
  }
  optimizer.step();
  return true;
}

void GradScaler::update() {
  if (!enabled_) return;
  if (!unscaled_) throw Error("nn.GradScaler::update: expected unscale() or step() first in this step");
  if (foundInf()) {
    scale_ *= backoff_;
    tracker_ = 0;
  } else if (++tracker_ == interval_) {
    const double grown = scale_ * growth_;
    if (std::isfinite(grown)) scale_ = grown;
    tracker_ = 0;
  }
  scale_ = static_cast<float>(scale_);  // PyTorch keeps the scale in float32
  unscaled_ = false;
  foundCpu_ = false;
  foundDevice_.clear();
}

std::map<std::string, double> GradScaler::stateDict() const {
  return {{"scale", scale_},
          {"growth_factor", growth_},
          {"backoff_factor", backoff_},
          {"growth_interval", static_cast<double>(interval_)},
          {"growth_tracker", static_cast<double>(tracker_)},
          {"skipped_steps", static_cast<double>(skipped_)}};
}

void GradScaler::loadStateDict(const std::map<std::string, double>& state) {
  for (const char* key : {"scale", "growth_factor", "backoff_factor", "growth_interval", "growth_tracker"}) {
    if (!state.count(key))
      throw Error(std::string("nn.GradScaler::loadStateDict: expected a state with '") + key + "', got none");
  }
  if (!(state.at("scale") > 0) || !std::isfinite(state.at("scale"))) {
    throw Error("nn.GradScaler::loadStateDict: expected a finite scale > 0, got " + num(state.at("scale")));
  }
  scale_ = state.at("scale");
  growth_ = state.at("growth_factor");
  backoff_ = state.at("backoff_factor");
  interval_ = static_cast<int64_t>(state.at("growth_interval"));
  tracker_ = static_cast<int64_t>(state.at("growth_tracker"));
  skipped_ = state.count("skipped_steps") ? static_cast<int64_t>(state.at("skipped_steps")) : 0;
}

}  // namespace nn
