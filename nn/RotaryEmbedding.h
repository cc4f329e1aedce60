// RotaryEmbedding.h: rotary position embeddings (RoPE, Su et al. 2021) as a module, for
// standalone use (MultiheadAttention applies nn::rotary_embedding_ to its own q and k): the
// input [B x H x S x D] (float32 or float64, any strides) rotated as nn/Rotary.h says, into a
// contiguous output; token s of batch row b sits at position offsets[b] + s, offsets set by
// setOffsets (cached decoding: the tokens already held), all 0 without. backward hands back
// gradOutput rotated the other way (the rotation is orthogonal: its inverse is its transpose),
// with the offsets then in effect. No parameters. Prints as "nn.RotaryEmbedding(theta=10000,
// half)" (", rotary_dim=32" for a partial rotation). Twin: cudnn.RotaryEmbedding.
#pragma once

#include "nn/Module.h"
#include "nn/Rotary.h"

namespace nn {

class RotaryEmbedding : public Module {
 public:
  explicit RotaryEmbedding(RotaryOptions options = {});

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  static constexpr std::string_view kTypeName = "nn.RotaryEmbedding";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;  // {"style": "half", "theta": 10000, "rotary_dim": 0}
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;

  // The positions' start per batch row: int64 [B] on any device (a twin reads a CUDA one on the
  // device), or undefined for 0. Checked against the input on every pass; not part of the config.
  void setOffsets(const Tensor& offsets) { offsets_ = offsets; }
  const Tensor& offsets() const { return offsets_; }

  RotaryOptions options;  // checked on every pass (Note [Parameters are checked where they are used])

 protected:
  // What rotates a buffer in place: nn::rotary_embedding_, or a twin's op of the same signature.
  using RotateFn = void (*)(Tensor& x, const Tensor& offsets, const RotaryOptions& options, bool inverse);
  // Both passes of both backends, after the caller's dtype and device checks: with gradOutput
  // null, output = rotate(input); else gradInput = rotate(*gradOutput, inverse), gradOutput of
  // the input's shape and dtype. Everything is checked before the buffer is written.
  const Tensor& rotateInto(Tensor& buffer, const char* method, const Tensor& input, const Tensor* gradOutput,
                           RotateFn rotate);

 private:
  Tensor offsets_;
};

}  // namespace nn
