// Rotary.h: rotary position embeddings (RoPE, Su et al. 2021), a functional op: the CPU
// reference; the cuDNN twin, cudnn::rotary_embedding_ (cudnn/ops/rotary.h), implements the same
// interface on CUDA tensors. Each pair (x_a, x_b) of a head's first R = rotaryDim dims of the
// token at position p turns by the angle p * inv_freq_i, inv_freq_i = theta^(-2i/R):
//   x_a' = x_a cos - x_b sin,  x_b' = x_b cos + x_a sin.
// Half pairs (i, i + R/2) (Hugging Face Llama's rotate_half); Interleaved pairs (2i, 2i + 1)
// (GPT-J, Meta's original Llama). See Note [Rotary angles] in Rotary.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/Tensor.h"

namespace nn {

// Half: HF Llama's rotate_half, pairs (i, i + R/2); Interleaved: pairs (2i, 2i + 1) (GPT-J / Meta's original)
enum class RotaryStyle { Half, Interleaved };
struct RotaryOptions {
  RotaryStyle style = RotaryStyle::Half;
  double theta = 10000;   // rope_theta
  int64_t rotaryDim = 0;  // 0: the whole head; else even, <= head_dim: the first rotaryDim dims rotate
};

// Rotates x [B x H x S x D] (any strides, e.g. a view of a projection buffer) IN PLACE on the CPU:
// token s of batch b sits at position offsets[b] + s (offsets: undefined = all 0, or int64 [B] on any
// device). inv_freq_i = theta^(-2i/R) and the angles pos * inv_freq computed in float32 as HF does
// (float64 data: in float64). inverse = true rotates by -angle (the backward of the rotation).
// float32 or float64 x.
void rotary_embedding_(tensor::Tensor& x, const tensor::Tensor& offsets, const RotaryOptions& options,
                       bool inverse = false);

// The checks both backends share (x's rank, an even rotary dim <= head_dim, theta finite and > 0,
// offsets int64 [B] and >= 0 when read on the CPU), throwing with `where` ("nn.rotary_embedding_: ",
// "nn.RotaryEmbedding::updateOutput: ") at the start of the message. The dtype and device are the
// caller's to check.
void check_rotary_arguments(const std::string& where, const tensor::Tensor& x, const tensor::Tensor& offsets,
                            const RotaryOptions& options);

// The rotary dim in effect for head dim `headDim`: options.rotaryDim, or headDim for 0.
int64_t rotary_dim(const RotaryOptions& options, int64_t headDim);

// inv_freq_i, i < R/2 (R = rotary_dim(options, headDim)), as both backends rotate with them: for
// float32 and 16-bit data the float32 values HF computes (1 / theta^(float(2i) / R) in float32),
// for float64 data 1 / theta^(2i / R) in float64. See Note [Rotary angles] in Rotary.cpp.
std::vector<double> rotary_inv_freq(const RotaryOptions& options, int64_t headDim, tensor::DType dtype);

// "half" / "interleaved", and back (throwing with `where` for another name).
const char* rotary_style_name(RotaryStyle style);
RotaryStyle rotary_style_from_name(const std::string& where, const std::string& name);

}  // namespace nn
