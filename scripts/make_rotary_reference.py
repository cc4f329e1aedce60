"""Writes tests/data/nn/rotary_reference.safetensors: rotary position embeddings computed by Hugging
Face transformers' own code, for tests/nn/test_Rotary.cpp:
  half style         transformers.models.llama: LlamaRotaryEmbedding (inv_freq, cos, sin in
                     float32) and apply_rotary_pos_emb (q * cos + rotate_half(q) * sin);
  interleaved style  transformers.models.gptj: create_sinusoidal_positions (theta 10000) and
                     apply_rotary_pos_emb (rotate_every_two);
  partial rotation   the first rotary_dim dims rotate (the rotary module built for rotary_dim,
                     as HF's partial_rotary_factor / GPT-J's rotary_dim), the rest pass.
float32 cases take HF's float32 cos and sin as they are; float64 cases compute the angles, cos
and sin in float64 (nn's rule for float64 data: Note [Rotary angles] in nn/Rotary.cpp) and
rotate with the same HF functions, which are dtype-generic.

Keys are "<case>.<name>": x [B x H x S x D] (the input, the case's dtype), offsets (int64 [B]:
token s of row b is at position offsets[b] + s), y (the rotated x), options (float64 [3]:
style 0 = half / 1 = interleaved, theta, rotary_dim with 0 = D). The cases:
  half_f32         D 8, theta 10000, offsets [0, 7]
  half_f32_long    D 16, theta 500000 (Llama 3's), offsets [3, 100]
  half_f32_partial D 12, rotary_dim 8, theta 10000, offsets [2, 0]
  inter_f32        D 8 (theta 10000: GPT-J's), offsets [0, 5]
  inter_f32_partial D 10, rotary_dim 6, offsets [4, 1]
  half_f64         D 8, theta 10000, offsets [0, 7]
  half_f64_partial D 12, rotary_dim 8, theta 1000000, offsets [9, 2]
  inter_f64        D 8, theta 10000, offsets [1, 30]
inv_freq.f32_<R>_<theta> holds HF's float32 inv_freq for the half cases (R = rotary dim).

Run from the repository root: python3 scripts/make_rotary_reference.py
"""
import torch
from safetensors.torch import save_file
from transformers import LlamaConfig
from transformers.models.gptj import modeling_gptj as gptj
from transformers.models.llama import modeling_llama as llama

torch.manual_seed(20261202)
out = {}
B, H, S = 2, 3, 5


def positions(offsets):
    return torch.tensor(offsets, dtype=torch.int64)[:, None] + torch.arange(S, dtype=torch.int64)[None, :]


def half_cos_sin(R, theta, pos, dtype):
    if dtype == torch.float32:  # HF's own module, in float32
        cfg = LlamaConfig(hidden_size=R * 4, num_attention_heads=4, head_dim=R,
                          rope_parameters={"rope_type": "default", "rope_theta": theta})
        rope = llama.LlamaRotaryEmbedding(cfg)
        out["inv_freq.f32_%d_%d" % (R, int(theta))] = rope.inv_freq.clone()
        return rope(torch.zeros(1, dtype=dtype), pos)
    inv = 1.0 / (theta ** (torch.arange(0, R, 2, dtype=torch.float64) / R))
    freqs = pos[..., None].double() * inv
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def interleaved_sin_cos(R, theta, pos, dtype):
    if dtype == torch.float32:
        assert theta == 10000  # GPT-J's
        table = gptj.create_sinusoidal_positions(int(pos.max()) + 1, R)
        sincos = table[pos]  # [B x S x R]
        return torch.split(sincos, R // 2, dim=-1)
    inv = 1.0 / (theta ** (torch.arange(0, R, 2, dtype=torch.float64) / R))
    freqs = pos[..., None].double() * inv
    return freqs.sin(), freqs.cos()


def case(name, D, offsets, dtype, style="half", theta=10000.0, rotary_dim=0):
    R = rotary_dim or D
    x = torch.randn(B, H, S, D, dtype=dtype)
    pos = positions(offsets)
    xr, xp = x[..., :R], x[..., R:]
    if style == "half":
        cos, sin = half_cos_sin(R, theta, pos, dtype)
        yr, _ = llama.apply_rotary_pos_emb(xr, xr, cos, sin, unsqueeze_dim=1)
    else:
        sin, cos = interleaved_sin_cos(R, theta, pos, dtype)
        # GPT-J's layout is [B x S x H x D]
        yr = gptj.apply_rotary_pos_emb(xr.transpose(1, 2), sin, cos).transpose(1, 2)
    y = torch.cat((yr, xp), dim=-1)
    out[name + ".x"] = x.contiguous()
    out[name + ".offsets"] = torch.tensor(offsets, dtype=torch.int64)
    out[name + ".y"] = y.contiguous()
    out[name + ".options"] = torch.tensor([0.0 if style == "half" else 1.0, theta, float(rotary_dim)],
                                          dtype=torch.float64)


case("half_f32", 8, [0, 7], torch.float32)
case("half_f32_long", 16, [3, 100], torch.float32, theta=500000.0)
case("half_f32_partial", 12, [2, 0], torch.float32, rotary_dim=8)
case("inter_f32", 8, [0, 5], torch.float32, style="interleaved")
case("inter_f32_partial", 10, [4, 1], torch.float32, style="interleaved", rotary_dim=6)
case("half_f64", 8, [0, 7], torch.float64)
case("half_f64_partial", 12, [9, 2], torch.float64, theta=1000000.0, rotary_dim=8)
case("inter_f64", 8, [1, 30], torch.float64, style="interleaved")

save_file(out, "tests/data/nn/rotary_reference.safetensors")
print("wrote", len(out), "tensors")
