// GradScaler.h: dynamic loss scaling for 16-bit training, with torch.cuda.amp.GradScaler's
// semantics and defaults: the loss gradient is multiplied by scale() (initially 2^16) so small
// float16 gradients do not flush to zero; before the optimizer step the gradients are
// multiplied by 1 / scale (float32, as PyTorch rounds it) and checked for Inf/NaN; a step with
// any non-finite gradient is skipped (and counted), and update() then multiplies the scale by
// backoffFactor (0.5); after growthInterval (2000) clean steps in a row it multiplies it by
// growthFactor (2). bfloat16 has float32's range: build the scaler with enabled = false
// (scale 1, no check, every step taken), as PyTorch's autocast recipes do.
// Note [One synchronisation per step]: on the host path, dense CUDA gradients (row-major or
// channels-last) of one device and dtype are unscaled and checked by one multi-tensor pass
// (tensor::cuda::unscale_and_check)
// writing a found-Inf flag on the device; step() reads the flags once to decide. Other gradients
// (CPU, strided) take tensor ops, checked in float64.
// Note [Capturable loss scaling]: the rule is where the tensors are. The scaler starts on the
// host path (its state in host numbers); the first CUDA tensor it is given (scaleGrad's
// gradOutput, or a gradient to unscale) moves its state for good onto that tensor's device, as
// PyTorch's GradScaler keeps _scale and _growth_tracker on the gradients' device: the scale
// (float32 from then on, as PyTorch's), the growth tracker, the skipped-step count and the
// found-Inf flag are device tensors, and no step reads anything to the host:
//   scaleGrad   gradOutput times the device scale (tensor::cuda::scale_by);
//   unscale     1 / scale computed on the device, then unscale_and_check per dtype;
//   step        optimizer.stepIfFinite(flag): SGD skips inside its fused kernels (once its
//               momentum buffers exist: SGD::stepIfFinite), as Adam / AdamW built with
//               capturable do (Note [Capturable Adam] in nn/Adam.h); other optimizers (the default
//               Adam: its bias corrections count steps on the host) read the flag;
//   update      one single-thread kernel with the host path's arithmetic, bit for bit.
// So the whole mixed-precision step (with nn::MasterWeights' copies, plain tensor copies) can be
// captured in a CUDA graph (after an eager warm-up step, as any capture) and replayed, a replay
// whose gradients overflow skipping on the device.
// step() then cannot know whether the optimizer stepped and returns true (it called it; PyTorch's
// fused path returns the optimizer's value too); foundInf(), scale(), growthTracker(),
// skippedSteps() and stateDict() read the device values when asked (a synchronisation each).
// Gradients that are not dense CUDA tensors of the state's device still work: they are
// unscaled with tensor ops after reading the inverse to the host (not capturable).
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

  // The device path reads the device scale (Note [Capturable loss scaling]).
  double scale() const;
  bool enabled() const { return enabled_; }
  // Whether the state lives on a device (Note [Capturable loss scaling]).
  bool onDevice() const { return deviceScale_.defined(); }
  // gradOutput * scale() (a new tensor; gradOutput itself when disabled).
  Tensor scaleGrad(const Tensor& gradOutput);
  // Multiplies `grads` by 1 / scale() in place and records whether any value was Inf or NaN
  // (read by step()). Once per step: a second call before update() throws, as PyTorch's.
  void unscale(const std::vector<Tensor>& grads);
  void unscale(Optimizer& optimizer) { unscale(optimizer.grads()); }
  // Unscales optimizer.grads() unless unscale() ran this step, then optimizer.step() unless a
  // gradient was non-finite. Returns whether it stepped (on the device path: true, the optimizer
  // skipping on the device; Note [Capturable loss scaling]).
  bool step(Optimizer& optimizer);
  // After step(): the scale for the next step (see above).
  void update();

  int64_t skippedSteps() const;
  int64_t growthTracker() const;
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
  // The device path (Note [Capturable loss scaling]): undefined on the host path. Float32 scale,
  // inverse and found-Inf flag; int64 {growth tracker, skipped steps}.
  Tensor deviceScale_, deviceInv_, deviceFound_, deviceCounts_;
  bool stepped_ = false;  // step() ran this step (update() counts a skip)
  void toDevice(Device device);
};

}  // namespace nn
