// MultiheadAttention.cpp: the primitives of nn::MultiheadAttention on cuBLAS and cudnn::sdpa.
#include "cudnn/MultiheadAttention.h"

#include "cudnn/core/Descriptors.h"
#include "cudnn/kernels/Attention.h"
#include "cudnn/kernels/KVCache.h"
#include "cudnn/ops/attention.h"
#include "cudnn/ops/blas.h"
#include "cudnn/ops/rotary.h"
#include "nn/Buffers.h"
#include "nn/KVCache.h"

namespace cudnn {

using tensor::Tensor;

void MultiheadAttention::checkInputType(const std::string& where, const Tensor& input) const {
  check_on_device(where, input, inProjWeight);
  check_cuda(where, input, "input");
  nn::check_matches(where, input, inProjWeight);
}

void MultiheadAttention::linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out) {
  nn::ensure(out, {x.size(0), weight.size(0)}, x);
  gemm_plus_bias(x, weight, bias, out);  // Note [The bias in the product's epilogue] (ops/blas.cpp)
}

void MultiheadAttention::linearAdding(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& addend,
                                      Tensor& out) {
  nn::ensure(out, {x.size(0), weight.size(0)}, x);
  gemm_plus_bias(x, weight, bias, out, addend);  // Note [Sums in the product's epilogue] (nn/Module.cpp)
}

void MultiheadAttention::linearGradInput(const Tensor& gy, const Tensor& weight, Tensor& gradX) {
  nn::ensure(gradX, {gy.size(0), weight.size(1)}, gy);
  gemm(false, false, gy, weight, gradX);
}

void MultiheadAttention::linearGradParameters(const Tensor& x, const Tensor& gy, Tensor& gradWeight, Tensor& gradBias,
                                              double scale) {
  linear_grad_parameters(x, gy, gradWeight, gradBias, scale, ones_);
}

void MultiheadAttention::attention(const Tensor& q, const Tensor& k, const Tensor& v, const nn::SdpaOptions& options,
                                   nn::SdpaSaved& saved, Tensor out) {
  // A decode step's layers attend with the KV cache's one keyLengths buffer (KVCache::beginStep):
  // the first converts it to the int32 cuDNN reads, into the cache's step words, the others read
  // those (Note [Sequence lengths] in ops/attention.cpp); in a captured step the conversion is
  // the first layer's node, replayed with it.
  const std::shared_ptr<nn::KVCache>& c = cache();
  if (c && options.keyLengths.defined() && options.keyLengths.is_cuda()) {
    const Tensor shared = c->keyLengths(q.size(2));
    nn::KVCache::StepWords& words = c->stepWords();
    if (shared.defined() && shared.raw_data() == options.keyLengths.raw_data() && words.words.defined() &&
        words.words.numel() == shared.numel()) {
      if (words.step != c->stepCount()) {
        kernels::lengths_to_int32(shared.data<int64_t>(), static_cast<int32_t*>(words.words.raw_data()), shared.numel(),
                                  shared.device().index);
        words.step = c->stepCount();
      }
      sdpa_with_int32_lengths(q, k, v, options, &saved, out, words.words);
      return;
    }
  }
  cudnn::sdpa(q, k, v, options, &saved, out);
}

void MultiheadAttention::attentionBackward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                           const Tensor& gradOut, const nn::SdpaOptions& options,
                                           const nn::SdpaSaved& saved, nn::SdpaGrads into) {
  cudnn::sdpa_backward(q, k, v, out, gradOut, options, saved, &into);
}

void MultiheadAttention::rotary(Tensor& qOrK, const Tensor& offsets, const nn::RotaryOptions& options, bool inverse) {
  cudnn::rotary_embedding_(qOrK, offsets, options, inverse);
}

void MultiheadAttention::cacheWrite(const Tensor& k, const Tensor& v, Tensor& cacheK, Tensor& cacheV,
                                    const Tensor& lengths, const std::vector<int64_t>& hostLengths) {
  (void)hostLengths;  // the kernel reads the device lengths: See Note [Cached attention]
  kernels::kv_cache_write(k, v, cacheK, cacheV, lengths);
}

}  // namespace cudnn
