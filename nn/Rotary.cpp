// Rotary.cpp: rotary position embeddings on the CPU, the reference for both backends.
#include "nn/Rotary.h"

#include <cmath>
#include <sstream>

#include "nn/Buffers.h"

namespace nn {

using tensor::Error;

// Note [Rotary angles]
// Hugging Face's Llama (LlamaRotaryEmbedding, apply_rotary_pos_emb) is the reference, and its
// rounding is followed step by step for float32 data, so that a port gives HF's numbers:
//   inv_freq_i = 1 / theta^(float(2i) / R)   in float32 (the quotient, the power and the
//                                             reciprocal each rounded to float32);
//   angle      = float(position) * inv_freq_i (one float32 product, as HF's
//                                             position_ids.float() * inv_freq);
//   c, s       = cos(angle), sin(angle)       in float32 (HF's cat(freqs, freqs) repeats them
//                                             for both halves);
//   x_a' = x_a c - x_b s, x_b' = x_b c + x_a s, each product and sum rounded to float32 (HF's
//   q * cos + rotate_half(q) * sin: -(x_b s) added is x_a c - x_b s exactly).
// The float32 pow, cos and sin of the C library and of PyTorch's vectorised kernels may differ
// in the last place (pow: for about 1% of the inv_freq of head dims up to 512), so the float32
// reference cases compare to 2 ulps of the output (tests/nn/test_Rotary.cpp), not bit for bit.
// float64 data computes all of it in float64 (HF would compute cos and sin in float32 and
// widen them; the float64 path is the precise reference for gradient checks and the twins).
// 16-bit data (the cudnn twin) takes the float32 angles and rotates in float32, rounding once
// to the 16-bit type (HF rounds cos and sin, then every product and sum, to the 16-bit type).
// Interleaved style (GPT-J's rotate_every_two) pairs (2i, 2i + 1) with the same angles. The
// inverse rotation (the backward pass) turns by -angle with the same c and s:
// x_a' = x_a c + x_b s, x_b' = x_b c - x_a s.
// Positions are offsets[b] + s, converted to float32 (float64 for float64 data) as HF converts
// position_ids: exact below 2^24.

namespace {

std::string shape_of(const tensor::Tensor& t) {
  return t.defined() ? tensor::shape_str(t.sizes()) : std::string("an undefined tensor");
}

void check_offset_values(const std::string& where, const std::vector<int64_t>& values) {
  for (size_t b = 0; b < values.size(); ++b) {
    if (values[b] < 0) {
      throw Error(where + "expected offsets >= 0, got " + std::to_string(values[b]) + " at batch entry " +
                  std::to_string(b));
    }
  }
}

template <class T>
void rotate(const tensor::Tensor& x, const std::vector<int64_t>& offsets, const RotaryOptions& options, bool inverse) {
  const int64_t B = x.size(0), H = x.size(1), S = x.size(2), D = x.size(3);
  const int64_t R = rotary_dim(options, D), half = R / 2;
  const std::vector<double> inv64 = rotary_inv_freq(options, D, x.dtype());
  std::vector<T> inv(inv64.begin(), inv64.end());  // exact: float32 values for float32 data
  const int64_t sb = x.stride(0), sh = x.stride(1), ss = x.stride(2), sd = x.stride(3);
  // pair i is (i, i + R/2) or (2i, 2i + 1)
  const int64_t first = options.style == RotaryStyle::Half ? 1 : 2;
  const int64_t second = options.style == RotaryStyle::Half ? half : 1;
  T* base = x.data<T>();
#pragma omp parallel if (B * S * H * R > 32768)
  {
    std::vector<T> cs(static_cast<size_t>(2 * half));
#pragma omp for schedule(static)
    for (int64_t bs = 0; bs < B * S; ++bs) {
      const int64_t b = bs / S, s = bs % S;
      const T pos = static_cast<T>(offsets.empty() ? s : offsets[b] + s);
      for (int64_t i = 0; i < half; ++i) {
        const T angle = pos * inv[i];
        cs[2 * i] = std::cos(angle);
        cs[2 * i + 1] = std::sin(angle);
      }
      for (int64_t h = 0; h < H; ++h) {
        T* row = base + b * sb + h * sh + s * ss;
        for (int64_t i = 0; i < half; ++i) {
          T& a = row[i * first * sd];
          T& bb = row[(i * first + second) * sd];
          const T c = cs[2 * i], sn = cs[2 * i + 1];
          const T xa = a, xb = bb;
          if (inverse) {
            a = xa * c + xb * sn;
            bb = xb * c - xa * sn;
          } else {
            a = xa * c - xb * sn;
            bb = xb * c + xa * sn;
          }
        }
      }
    }
  }
}

}  // namespace

int64_t rotary_dim(const RotaryOptions& options, int64_t headDim) {
  return options.rotaryDim == 0 ? headDim : options.rotaryDim;
}

const char* rotary_style_name(RotaryStyle style) { return style == RotaryStyle::Half ? "half" : "interleaved"; }

RotaryStyle rotary_style_from_name(const std::string& where, const std::string& name) {
  if (name == "half") return RotaryStyle::Half;
  if (name == "interleaved") return RotaryStyle::Interleaved;
  throw Error(where + "expected style \"half\" or \"interleaved\", got \"" + name + "\"");
}

std::vector<double> rotary_inv_freq(const RotaryOptions& options, int64_t headDim, tensor::DType dtype) {
  const int64_t R = rotary_dim(options, headDim);
  std::vector<double> inv(static_cast<size_t>(R / 2));
  for (int64_t i = 0; i < R / 2; ++i) {
    if (dtype == tensor::DType::Float64) {
      inv[i] = 1.0 / std::pow(options.theta, static_cast<double>(2 * i) / static_cast<double>(R));
    } else {  // See Note [Rotary angles]: HF's float32 steps
      const float e = static_cast<float>(2 * i) / static_cast<float>(R);
      inv[i] = 1.0f / std::pow(static_cast<float>(options.theta), e);
    }
  }
  return inv;
}

void check_rotary_arguments(const std::string& where, const tensor::Tensor& x, const tensor::Tensor& offsets,
                            const RotaryOptions& options) {
  if (!x.defined() || x.dim() != 4) {
    throw Error(where + "expected x [B x H x S x D] (4-d), got " + shape_of(x));
  }
  if (!(std::isfinite(options.theta) && options.theta > 0)) {
    std::ostringstream msg;
    msg << where << "expected a finite theta > 0, got " << options.theta;
    throw Error(msg.str());
  }
  const int64_t D = x.size(3);
  if (options.rotaryDim == 0) {
    if (D < 2 || D % 2 != 0) {
      throw Error(where + "expected an even head dim D >= 2 (rotary_dim 0: the whole head rotates), got x " +
                  shape_of(x));
    }
  } else if (options.rotaryDim < 2 || options.rotaryDim % 2 != 0 || options.rotaryDim > D) {
    throw Error(where + "expected an even rotary_dim in [2, D] (or 0 for D), got rotary_dim " +
                std::to_string(options.rotaryDim) + " for x " + shape_of(x));
  }
  for (int64_t d = 0; d < 4; ++d) {
    if (x.stride(d) == 0 && x.size(d) > 1) {
      throw Error(where + "expected x without broadcast (stride-0) dims (it is rotated in place), got " +
                  x.description() + " with strides " + tensor::shape_str(x.strides()));
    }
  }
  if (offsets.defined()) {
    const int64_t B = x.size(0);
    if (offsets.dtype() != tensor::DType::Int64 || offsets.dim() != 1 || offsets.size(0) != B) {
      throw Error(where + "expected offsets int64 [" + std::to_string(B) + "] (one per batch entry of x " +
                  shape_of(x) + "), got " + offsets.description());
    }
    if (offsets.is_cpu()) check_offset_values(where, offsets.to_vector<int64_t>());
  }
}

void rotary_embedding_(tensor::Tensor& x, const tensor::Tensor& offsets, const RotaryOptions& options, bool inverse) {
  const std::string where = "nn.rotary_embedding_: ";
  check_rotary_arguments(where, x, offsets, options);
  check_float(where, x, "x");
  if (!x.is_cpu()) throw Error(where + "expected x on the CPU, got " + x.description());
  std::vector<int64_t> values;
  if (offsets.defined() && x.size(0) > 0) {
    values = offsets.cpu().to_vector<int64_t>();
    check_offset_values(where, values);  // read from a device: not checked yet
  }
  if (x.numel() == 0) return;
  tensor::dispatch_f32_f64(x.dtype(), "nn.rotary_embedding_", [&](auto tag) {
    using T = decltype(tag);
    rotate<T>(x, values, options, inverse);
  });
}

}  // namespace nn
