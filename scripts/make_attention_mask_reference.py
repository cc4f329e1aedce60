"""Writes PyTorch's float64 references for masked and grouped-query scaled dot-product attention,
run from the repository root: python3 scripts/make_attention_mask_reference.py
- tests/data/nn/attention_mask_reference.safetensors: cases <name>.<tensor> with
  q [B x H x Sq x D], k, v [B x Hkv x Sk x D] (float64), optional mask (uint8 boolean, nonzero =
  attend, or additive float64 / float32), optional lengths (int64 [B]), flags (float64 [2]:
  causal, scale; scale 0 = 1/sqrt(D)), gy (the output's gradient) and PyTorch's out, gq, gk, gv.
  F.scaled_dot_product_attention(enable_gqa=True) computes them; causal and key lengths, which
  nn::sdpa takes beside the mask, are folded into the attn_mask given to PyTorch (it refuses
  is_causal with a mask). Rows left with no key give 0 (PyTorch's safe softmax), the case
  "dead" checks that.
"""
import math

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

torch.manual_seed(20261202)
out = {}


def case(name, B, H, Hkv, Sq, Sk, D, mask=None, causal=False, lengths=None, scale=0.0):
    q = torch.randn(B, H, Sq, D, dtype=torch.float64, requires_grad=True)
    k = torch.randn(B, Hkv, Sk, D, dtype=torch.float64, requires_grad=True)
    v = torch.randn(B, Hkv, Sk, D + 1, dtype=torch.float64, requires_grad=True)
    gy = torch.randn(B, H, Sq, D + 1, dtype=torch.float64)
    # what torch is given: one mask with causal and the lengths folded in
    allowed = torch.ones(B, H, Sq, Sk, dtype=torch.bool)
    additive = torch.zeros(B, H, Sq, Sk, dtype=torch.float64)
    if mask is not None:
        if mask.dtype == torch.bool:
            allowed = allowed & mask
        else:
            additive = additive + mask.to(torch.float64)
    if causal:
        allowed = allowed & torch.ones(Sq, Sk, dtype=torch.bool).tril()
    if lengths is not None:
        allowed = allowed & (torch.arange(Sk)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]
    attn = additive.masked_fill(~allowed, -math.inf)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn, scale=scale if scale > 0 else None, enable_gqa=True)
    y.backward(gy)
    # PyTorch's safe softmax: a row with no key gives 0 (both nn and cudnn follow it)
    dead = ~torch.isfinite(attn).any(-1)
    assert (y[dead] == 0).all()
    p = name + "."
    out[p + "q"], out[p + "k"], out[p + "v"], out[p + "gy"] = q.detach(), k.detach(), v.detach(), gy
    out[p + "out"], out[p + "gq"], out[p + "gk"], out[p + "gv"] = y.detach(), q.grad, k.grad, v.grad
    if mask is not None:
        out[p + "mask"] = mask.to(torch.uint8) if mask.dtype == torch.bool else mask
    if lengths is not None:
        out[p + "lengths"] = torch.tensor(lengths, dtype=torch.int64)
    out[p + "flags"] = torch.tensor([1.0 if causal else 0.0, scale], dtype=torch.float64)


def bool_mask(*shape, keep=0.6):
    return torch.rand(*shape) < keep


def additive(*shape, dtype=torch.float64):
    m = torch.randn(*shape, dtype=torch.float64)
    m = m.masked_fill(torch.rand(*shape) < 0.3, -math.inf)
    m[..., 0] = 0.5  # every row keeps a key
    return m.to(dtype)


B, Sq, Sk, D = 2, 5, 7, 4
case("gqa", B, 4, 2, Sq, Sk, D)
case("mqa_causal", B, 3, 1, 6, 4, D, causal=True)
case("gqa_lengths", B, 4, 2, Sq, Sk, D, lengths=[3, 7], causal=True)
m = bool_mask(Sq, Sk)
m[:, 2] = True
case("bool_2d", B, 2, 2, Sq, Sk, D, mask=m)
m = bool_mask(B, 1, Sq, Sk)
m[..., 1] = True
case("bool_b1", B, 4, 2, Sq, Sk, D, mask=m)
m = bool_mask(B, 4, Sq, Sk)
m[..., 4] = True
case("bool_bh", B, 4, 1, Sq, Sk, D, mask=m, scale=0.4)
case("keypad", B, 2, 1, Sq, Sk, D, mask=torch.tensor([[1, 0, 1, 1, 0, 0, 1], [0, 0, 1, 0, 1, 1, 1]], dtype=torch.bool)
     .view(B, 1, 1, Sk))
m = bool_mask(Sq, Sk)
m[:, 0] = True
case("bool_causal_lengths", B, 4, 2, Sq, Sk, D, mask=m, causal=True, lengths=[4, 2])
case("add_2d", B, 2, 1, Sq, Sk, D, mask=additive(Sq, Sk))
case("add_b1", B, 4, 2, Sq, Sk, D, mask=additive(B, 1, Sq, Sk), causal=True)
case("add_bh", B, 2, 2, Sq, Sk, D, mask=additive(B, 2, Sq, Sk))
case("add_f32", B, 2, 1, Sq, Sk, D, mask=additive(1, 1, Sq, Sk, dtype=torch.float32))
# rows with no key: a boolean row all False, and an additive row all -inf
m = bool_mask(B, 2, Sq, Sk)
m[..., 3] = True
m[0, 1, 2, :] = False
m[1, 0, 4, :] = False
case("dead", B, 2, 1, Sq, Sk, D, mask=m)
a = additive(B, 1, Sq, Sk)
a[1, 0, 0, :] = -math.inf
case("dead_add", B, 2, 2, Sq, Sk, D, mask=a)

save_file({k: v.contiguous() for k, v in out.items()}, "tests/data/nn/attention_mask_reference.safetensors")
print(len(out), "tensors")
