// MultiTensor.h: optimizer updates of many CUDA tensors in a few kernel launches (a
// multi-tensor apply), for nn::SGD, nn::Adam and nn::AdamW: see Note [Fused optimizer steps] in
// nn/Optimizer.h. Every list holds dense tensors of one floating dtype (float32, float64,
// float16, bfloat16) on one CUDA device; element i of each list has params[i]'s shape and layout
// (same_dense_layout: row-major, or channels-last filters), so they pair up as flat blocks.
// The values are those of nn's per-tensor path (the same tensor ops' operations in their order,
// 16-bit values rounded after each op as the ops store them), bit for bit. In a CPU-only build
// these throw "built without CUDA" (tensor/cuda/Unavailable.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/Tensor.h"

namespace tensor::cuda {

// SGD as nn::SGD (nn/SGD.h). With momentum != 0, buffers[i] is parameter i's momentum buffer and
// first[i] != 0 says it is new (the step copies the update into it); otherwise both are empty.
// With `foundInf` (a one-element float32 tensor on the list's device, GradScaler's verdict), the
// kernels read it and change nothing where it is nonzero: a skipped step decided on the device,
// so the step can be captured in a CUDA graph (Note [Capturable loss scaling] in nn/GradScaler.h).
struct SgdStep {
  double lr = 0, momentum = 0, dampening = 0, weightDecay = 0;
  bool nesterov = false;
};
void sgd_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& buffers,
              const std::vector<uint8_t>& first, const SgdStep& options, const Tensor& foundInf = {});

// Adam as nn::Adam (nn/Adam.h), AdamW's decoupled weight decay with `decoupled`; bias1[i] = 1 - beta1^t and bias2[i] =
// 1 - beta2^t for parameter i's own step count t.
struct AdamStep {
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weightDecay = 0;
  bool decoupled = false;
};
void adam_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& expAvg,
               const std::vector<Tensor>& expAvgSq, const std::vector<double>& bias1, const std::vector<double>& bias2,
               const AdamStep& options);
// Capturable Adam (Note [Capturable Adam] in nn/Adam.h): the step counts and lr live on the device,
// so the launches can be captured in a CUDA graph and every replay advances them. steps[i] is
// parameter i's count, a one-element int64 tensor on the list's device, incremented by the launch;
// lr a one-element float64 tensor there (options.lr unused). The bias corrections and the scalars
// of adam_step come from them on the device (tensor/AdamScalars.h: Note [Bias corrections on the
// device]), so the parameters and moments get adam_step's bits. With `foundInf` (as sgd_step's),
// nonzero skips the whole step: no parameter, moment or count changes.
void adam_step_capturable(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                          const std::vector<Tensor>& expAvg, const std::vector<Tensor>& expAvgSq,
                          const std::vector<Tensor>& steps, const Tensor& lr, const AdamStep& options,
                          const Tensor& foundInf = {});

// Gradient clipping and loss scaling (nn/ClipGrad.h, nn/GradScaler.h): lists as above (any
// element counts), without a host synchronisation; see Note [Deterministic multi-tensor norms]
// in tensor/cuda/MultiTensor.cu.
// The norm of all the tensors together (normType 2 or inf), a 0-dim float32 tensor (float64
// for float64 lists) on their device.
Tensor multi_tensor_norm(const std::vector<Tensor>& tensors, double normType);
// torch.nn.utils.clip_grad_norm_ on one device and dtype: the norm as above, then every tensor
// times min(maxNorm / (norm + 1e-6), 1) read on the device. Returns the norm.
Tensor clip_by_norm(const std::vector<Tensor>& tensors, double maxNorm, double normType);
// GradScaler's unscale: every tensor times invScale[0], and foundInf[0] = 1 if any value is
// Inf or NaN (left as it is otherwise); both one-element float32 tensors on the list's device.
void unscale_and_check(const std::vector<Tensor>& tensors, const Tensor& foundInf, const Tensor& invScale);
// Every tensor times factor[0], a one-element tensor on their device of their accumulation dtype
// (float32 for float32/float16/bfloat16 lists, float64 for float64 ones): the product a tensor op
// x.mul_(s) gives for a host scalar s of that value (GradScaler::scaleGrad on the device).
void scale_by(const std::vector<Tensor>& tensors, const Tensor& factor);
// Every tensor zeroed (+0, zero_()'s bits) in ceil(n / 48) launches rather than n: the fused
// path of Optimizer::zeroGrad. Lists as above (any element counts).
void zero_tensors(const std::vector<Tensor>& tensors);

// GradScaler's device state (Note [Capturable loss scaling] in nn/GradScaler.h): `scale` and
// `invScale` one-element float32 tensors, `foundInf` float32, `counts` two int64 {growth tracker,
// skipped steps}, all on one device. Before unscaling: invScale = float(1.0 / double(scale)) and
// foundInf = 0. update: the host path's arithmetic (in float64, the scale rounded to float32):
// on foundInf the scale times backoff and the tracker reset (and, when `stepped`, one more
// skipped step); otherwise the tracker advanced and at `interval` the scale times growth (if
// finite) and the tracker reset. One single-thread launch each, no host synchronisation.
void scaler_prepare_unscale(const Tensor& scale, const Tensor& invScale, const Tensor& foundInf);
void scaler_update(const Tensor& scale, const Tensor& foundInf, const Tensor& counts, double growth, double backoff,
                   int64_t interval, bool stepped);

}  // namespace tensor::cuda
