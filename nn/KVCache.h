// KVCache.h: the keys and values a decoder's attention layers have seen, for generation one
// token at a time (not a module: a model holds one and hands it to its MultiheadAttention
// layers with setCache(cache, layer)). Per layer, key(layer) and value(layer) are
// [batch x kvHeads x maxLength x headDim] tensors of the cache's dtype and device, zero at
// first; lengths() (int64 [batch] on the cache's device) says how many positions of each batch
// row hold tokens, and hostLengths() mirrors it on the host.
// - A layer's cached forward writes its S new tokens of row b at positions lengths[b] + s and
//   attends over the first lengths[b] + S; it does not move the lengths: the model calls
//   advance(S) after its last layer (or setLengths() after a right-padded prefill).
// - fixedShape (KVCacheOptions): the layers attend over the whole preallocated cache, masking
//   past each row's length, so every decode step has the same shapes and reads the lengths from
//   the device only: a captured CUDA graph of one step replays correctly. Without it they attend
//   over a view up to max(hostLengths()) + S, less work on short sequences.
// The lengths change in place (advance, setLengths, reset), so their device storage stays where
// a captured graph read it.
// - beginStep(S) (nn::DecoderLM calls it before its first block) makes lengths + S once for
//   every layer of the step (keyLengths(S), the keys each attends over), instead of one add a
//   layer; it is valid until the lengths move, and in place, so a captured step's graph makes
//   it again on every replay.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/Tensor.h"

namespace nn {

struct KVCacheOptions {
  bool fixedShape = false;  // attend over the whole cache (see above)
};

class KVCache {
 public:
  KVCache(int64_t layers, int64_t batch, int64_t kvHeads, int64_t maxLength, int64_t headDim, tensor::DType dtype,
          tensor::Device device, const KVCacheOptions& options = {});

  // [batch x kvHeads x maxLength x headDim]; layer in [0, layers())
  tensor::Tensor& key(int64_t layer);
  tensor::Tensor& value(int64_t layer);
  const tensor::Tensor& lengths() const { return lengths_; }  // int64 [batch] on device()
  const std::vector<int64_t>& hostLengths() const { return hostLengths_; }
  int64_t maxHostLength() const;  // max(hostLengths()), 0 for an empty batch

  // Every row grew by `tokens` (>= 0; each length + tokens <= maxLength): one device op and the
  // host mirror.
  void advance(int64_t tokens);
  // One length per batch row, each in [0, maxLength] (e.g. the prompts' lengths after a
  // right-padded prefill).
  void setLengths(const std::vector<int64_t>& lengths);
  void reset();  // every length 0 (the keys and values stay: they are masked)
  // lengths() + tokens into keyLengths's buffer (two device ops, once a step); tokens >= 0.
  void beginStep(int64_t tokens);
  // The buffer beginStep(tokens) filled, while the lengths have not moved since; else undefined
  // (a layer run outside such a step adds the tokens itself).
  tensor::Tensor keyLengths(int64_t tokens) const { return tokens == stepTokens_ ? stepLengths_ : tensor::Tensor(); }
  // A backend's own copy of keyLengths(tokens), made once a step by the first layer that needs
  // it (cudnn: the int32 lengths cuDNN's attention reads, cudnn::sdpa_with_int32_lengths; Note
  // [Sequence lengths] in cudnn/ops/attention.cpp): `words` is [batch] of 4-byte elements
  // (float32 storage), allocated with keyLengths' buffer so that a captured step writes the same
  // storage on every replay; `step` is the beginStep it was made in (stepCount() then), -1 before.
  struct StepWords {
    tensor::Tensor words;
    int64_t step = -1;
  };
  StepWords& stepWords() { return stepWords_; }
  int64_t stepCount() const { return stepCount_; }  // beginStep calls so far

  int64_t layers() const { return static_cast<int64_t>(keys_.size()); }
  int64_t batch() const { return batch_; }
  int64_t kvHeads() const { return kvHeads_; }
  int64_t maxLength() const { return maxLength_; }
  int64_t headDim() const { return headDim_; }
  tensor::DType dtype() const { return dtype_; }
  tensor::Device device() const { return device_; }
  bool fixedShape() const { return options_.fixedShape; }
  // "nn.KVCache(layers=2, batch=3, kv_heads=2, max_length=64, head_dim=16, float32 on cpu)"
  std::string str() const;

  static constexpr std::string_view kTypeName = "nn.KVCache";

 private:
  void checkLayer(const char* method, int64_t layer) const;
  int64_t batch_, kvHeads_, maxLength_, headDim_;
  tensor::DType dtype_;
  tensor::Device device_;
  KVCacheOptions options_;
  std::vector<tensor::Tensor> keys_, values_;
  tensor::Tensor lengths_;
  std::vector<int64_t> hostLengths_;
  tensor::Tensor stepLengths_;  // lengths_ + stepTokens_ (beginStep), the same storage every step
  int64_t stepTokens_ = -1;     // -1: not made since the lengths last moved
  int64_t stepCount_ = 0;
  StepWords stepWords_;
};

}  // namespace nn
