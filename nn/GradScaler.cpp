// GradScaler.cpp
#include "nn/GradScaler.h"

#include <cmath>
#include <map>
#include <tuple>

#include "tensor/Format.h"
#include "tensor/MultiTensor.h"

namespace nn {

using tensor::num_str;

namespace {
// t *= inv with a tensor op; whether t then holds a non-finite value.
bool unscale_on_host(Tensor t, double inv) {
  t.mul_(inv);
  return !std::isfinite(t.to(DType::Float64).sum().item());  // float64: finite values cannot overflow
}

// PyTorch's inverse: computed in float64, rounded to float32 (tensor::cuda::scaler_prepare_unscale
// on the device path)
double inverse(double scale) { return static_cast<float>(1.0 / scale); }
}  // namespace

GradScaler::GradScaler() : GradScaler(Options{}) {}

GradScaler::GradScaler(const Options& o)
    : scale_(o.initScale),
      growth_(o.growthFactor),
      backoff_(o.backoffFactor),
      interval_(o.growthInterval),
      enabled_(o.enabled) {
  if (!(o.initScale > 0) || !std::isfinite(o.initScale) || !(o.growthFactor > 1) || !std::isfinite(o.growthFactor) ||
      !(o.backoffFactor > 0 && o.backoffFactor < 1) || o.growthInterval <= 0) {
    throw Error(
        "nn.GradScaler: expected a finite initScale > 0, a finite growthFactor > 1, backoffFactor in (0, 1) and "
        "growthInterval > 0, got initScale " +
        num_str(o.initScale) + ", growthFactor " + num_str(o.growthFactor) + ", backoffFactor " +
        num_str(o.backoffFactor) + ", growthInterval " + std::to_string(o.growthInterval));
  }
}

// See Note [Capturable loss scaling] in GradScaler.h
void GradScaler::toDevice(Device device) {
  deviceScale_ = tensor::full({1}, static_cast<float>(scale_), DType::Float32, device);
  deviceInv_ = tensor::zeros({1}, DType::Float32, device);
  deviceFound_ = tensor::zeros({1}, DType::Float32, device);
  deviceCounts_ = tensor::from_vector(std::vector<int64_t>{tracker_, skipped_}).to(device);
}

double GradScaler::scale() const {
  if (!enabled_) return 1.0;
  return onDevice() ? deviceScale_.item() : scale_;
}

int64_t GradScaler::growthTracker() const {
  return onDevice() ? static_cast<int64_t>(deviceCounts_.get({0})) : tracker_;
}

int64_t GradScaler::skippedSteps() const {
  return onDevice() ? static_cast<int64_t>(deviceCounts_.get({1})) : skipped_;
}

Tensor GradScaler::scaleGrad(const Tensor& gradOutput) {
  if (!enabled_) return gradOutput;
  if (!onDevice() && gradOutput.is_cuda()) toDevice(gradOutput.device());
  if (!onDevice() || gradOutput.device() != deviceScale_.device() || !tensor::is_floating(gradOutput.dtype())) {
    return gradOutput.mul(scale());
  }
  Tensor out = gradOutput.is_contiguous() ? gradOutput.clone() : gradOutput.contiguous();
  tensor::cuda::scale_by({out}, out.dtype() == DType::Float64 ? deviceScale_.to(DType::Float64) : deviceScale_);
  return out;
}

void GradScaler::unscale(const std::vector<Tensor>& grads) {
  if (!enabled_) return;
  if (unscaled_) {
    throw Error("nn.GradScaler::unscale: expected one unscale per step, got a second one before update()");
  }
  if (!onDevice()) {
    for (const Tensor& g : grads) {
      if (g.is_cuda()) {
        toDevice(g.device());
        break;
      }
    }
  }
  // Dense CUDA gradients (row-major or channels-last: the unscale is element-wise) by device and
  // dtype (Note [One synchronisation per step]); on the device path only those of the state's device.
  std::map<std::tuple<int, DType>, std::vector<Tensor>> groups;
  std::vector<Tensor> rest;
  for (const Tensor& g : grads) {
    if (g.numel() == 0) continue;
    if (g.is_cuda() && g.is_non_overlapping_and_dense() && (!onDevice() || g.device() == deviceScale_.device())) {
      groups[{g.device().index, g.dtype()}].push_back(g);
    } else {
      rest.push_back(g);
    }
  }
  if (onDevice()) {  // Note [Capturable loss scaling]
    tensor::cuda::scaler_prepare_unscale(deviceScale_, deviceInv_, deviceFound_);
    for (auto& [key, list] : groups) tensor::cuda::unscale_and_check(list, deviceFound_, deviceInv_);
    if (!rest.empty()) {
      const double inv = deviceInv_.item();
      bool found = false;
      for (const Tensor& g : rest) found = unscale_on_host(g, inv) || found;
      if (found) deviceFound_.fill_(1);
    }
    unscaled_ = true;
    return;
  }
  const double inv = inverse(scale_);
  bool cpu = false;
  for (const Tensor& g : rest) cpu = unscale_on_host(g, inv) || cpu;
  std::vector<Tensor> found;
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
  if (onDevice()) return unscaled_ && deviceFound_.item() != 0;
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
  if (onDevice()) {  // Note [Capturable loss scaling]
    optimizer.stepIfFinite(deviceFound_);
    stepped_ = true;
    return true;
  }
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
  if (onDevice()) {  // Note [Capturable loss scaling]
    tensor::cuda::scaler_update(deviceScale_, deviceFound_, deviceCounts_, growth_, backoff_, interval_, stepped_);
    unscaled_ = stepped_ = false;
    return;
  }
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
  const double scale = onDevice() ? deviceScale_.item() : scale_;
  return {{"scale", scale},
          {"growth_factor", growth_},
          {"backoff_factor", backoff_},
          {"growth_interval", static_cast<double>(interval_)},
          {"growth_tracker", static_cast<double>(growthTracker())},
          {"skipped_steps", static_cast<double>(skippedSteps())}};
}

void GradScaler::loadStateDict(const std::map<std::string, double>& state) {
  for (const char* key : {"scale", "growth_factor", "backoff_factor", "growth_interval", "growth_tracker"}) {
    if (!state.count(key))
      throw Error(std::string("nn.GradScaler::loadStateDict: expected a state with '") + key + "', got none");
  }
  if (!(state.at("scale") > 0) || !std::isfinite(state.at("scale"))) {
    throw Error("nn.GradScaler::loadStateDict: expected a finite scale > 0, got " + num_str(state.at("scale")));
  }
  scale_ = state.at("scale");
  growth_ = state.at("growth_factor");
  backoff_ = state.at("backoff_factor");
  interval_ = static_cast<int64_t>(state.at("growth_interval"));
  tracker_ = static_cast<int64_t>(state.at("growth_tracker"));
  skipped_ = state.count("skipped_steps") ? static_cast<int64_t>(state.at("skipped_steps")) : 0;
  if (onDevice()) {  // in place: a captured step keeps the addresses it saw
    deviceScale_.fill_(static_cast<float>(scale_));
    deviceCounts_.copy_(tensor::from_vector(std::vector<int64_t>{tracker_, skipped_}));
  }
}

}  // namespace nn
