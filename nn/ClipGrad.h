// ClipGrad.h: gradient clipping, as torch.nn.utils.clip_grad_norm_ and clip_grad_value_.
// clipGradNorm scales every gradient by min(maxNorm / (total + 1e-6), 1), where total is the
// norm (2, inf or any p > 0) of all the gradients together, and returns total as a 0-dim
// tensor (float64 for float64 gradients, float32 otherwise) on the first gradient's device.
// A NaN or Inf total makes every gradient NaN (PyTorch's behaviour) unless errorIfNonfinite,
// which throws instead and leaves the gradients untouched.
// Note [Fused clipping]: when the gradients are dense CUDA tensors (row-major or channels-last)
// of one device and dtype and normType is 2 or inf, the norm is one multi-tensor reduction and
// the scaling one
// multi-tensor pass reading the factor on the device (tensor::cuda::clip_by_norm): a few
// launches for the whole network and no host synchronisation (errorIfNonfinite reads the norm:
// one synchronisation). Other gradients (CPU, strided, mixed devices) take per-tensor norms
// summed on the host in float64.
#pragma once

#include <vector>

#include "nn/Module.h"

namespace nn {

Tensor clipGradNorm(const std::vector<Tensor>& grads, double maxNorm, double normType = 2.0,
                    bool errorIfNonfinite = false);
Tensor clipGradNorm(Module& m, double maxNorm, double normType = 2.0, bool errorIfNonfinite = false);

// Clamps every gradient element to [-clipValue, clipValue] (clip_grad_value_).
void clipGradValue(const std::vector<Tensor>& grads, double clipValue);
void clipGradValue(Module& m, double clipValue);

}  // namespace nn
