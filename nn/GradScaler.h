// GradScaler.h: dynamic loss scaling for 16-bit training, with torch.cuda.amp.GradScaler's
// semantics and defaults: the loss gradient is multiplied by scale() (initially 2^16) so small
// float16 gradients do not flush to zero; before the optimizer step the gradients are
// multiplied by 1 / scale (float32, as PyTorch rounds it) and checked for Inf/NaN; a step with
// any non-finite gradient is skipped (and counted), and update() then multiplies the scale by
// backoffFactor (0.5); after growthInterval (2000) clean steps in a row it multiplies it by
// growthFactor (2). bfloat16 has float32's range: build the scaler with enabled = false
// (scale 1, no check, every step taken), as PyTorch's autocast recipes do.
// Note [One synchronisation per step]: contiguous CUDA gradients of one device and dtype are
// unscaled and checked by one multi-tensor pass (tensor::cuda::unscale_and_check) writing a
// found-Inf flag on the device; step() reads the flags once to decide (PyTorch does the same
// .item()). Other gradients (CPU, strided) take tensor ops, checked in float64.
// Use with Torch's modules:
//   const Tensor& gy = criterion.backward(out, target);
//   net.backward(x, scaler.scaleGrad(gy));
//   scaler.step(optimizer);   // unscales optimizer.grads(), steps unless non-finite
//   scaler.update();
// With master weights (nn/MixedPrecision.h), unscale the master gradients after copying them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nn/Optimizer.h"

namespace nn {

class GradScaler {
 public:
  struct Options {
    double initScale = 65536.0;
    double growthFactor = 2.0;
    double backoffFactor = 0.5;
    int64_t growthInterval = 2000;
    bool enabled = true;
  };
  GradScaler();
  explicit GradScaler(const Options& options);

  double scale() const { return enabled_ ? scale_ : 1.0; }
  bool enabled() const { return enabled_; }
  // gradOutput * scale() (a new tensor; gradOutput itself when disabled).
  Tensor scaleGrad(const Tensor& gradOutput) const;
  // Multiplies `grads` by 1 / scale() in place and records whether any value was Inf or NaN
  // (read by step()). Once per step: a second call before update() throws, as PyTorch's.
  void unscale(const std::vector<Tensor>& grads);
  void unscale(Optimizer& optimizer) { unscale(optimizer.grads()); }
  // Unscales optimizer.grads() unless unscale() ran this step, then optimizer.step() unless a
  // gradient was non-finite. Returns whether it stepped.
  bool step(Optimizer& optimizer);
  // After step(): the scale for the next step (see above).
  void update();

  int64_t skippedSteps() const { return skipped_; }
  int64_t growthTracker() const { return tracker_; }
  // This step's verdict (after unscale); reads the device flags once, then keeps the answer.
  bool foundInf();
  // "scale", "growth_factor", "backoff_factor", "growth_interval", "growth_tracker",
  // "skipped_steps" (PyTorch's state_dict keys, with _growth_tracker as growth_tracker).
  std::map<std::string, double> stateDict() const;
  void loadStateDict(const std::map<std::string, double>& state);

 private:
  double scale_, growth_, backoff_;
  int64_t interval_;
  bool enabled_;
  int64_t tracker_ = 0, skipped_ = 0;
  bool unscaled_ = false;
  bool foundCpu_ = false;            // from gradients checked on the host
  std::vector<Tensor> foundDevice_;  // one float32 flag per fused group, on its device
};

}  // namespace nn
