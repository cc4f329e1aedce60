// rotary.cpp: cudnn::rotary_embedding_, the checks nn's op makes, then our kernel.
#include "cudnn/ops/rotary.h"

#include "cudnn/TensorChecks.h"
#include "cudnn/kernels/Rotary.h"

namespace cudnn {

void rotary_embedding_(tensor::Tensor& x, const tensor::Tensor& offsets, const nn::RotaryOptions& options,
                       bool inverse) {
  const std::string where = "cudnn.rotary_embedding_: ";
  check_cuda(where, x, "x");
  nn::check_rotary_arguments(where, x, offsets, options);  // a CPU offsets tensor's values too
  tensor::Tensor offs;
  if (offsets.defined()) {
    if (offsets.is_cuda() && offsets.device() != x.device()) {
      throw tensor::Error(where + "expected offsets on x's device (" + x.device().str() + ") or the CPU, got " +
                          offsets.description());
    }
    // See Note [Rotary offsets on the device] in cudnn/kernels/Rotary.h: a device tensor is read there
    offs = offsets.to(x.device()).contiguous();
  }
  const int64_t D = x.size(3);
  kernels::rotary_embedding(x, offs, nn::rotary_dim(options, D), options.style == nn::RotaryStyle::Interleaved,
                            nn::rotary_inv_freq(options, D, x.dtype()), options.theta, inverse);
}

}  // namespace cudnn
