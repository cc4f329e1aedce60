"""Writes the Transformer modules' PyTorch references (CPU, float64), run from the repository root:
python3 scripts/make_transformer_reference.py
- tests/data/nn/transformer_reference.safetensors: cases <name>.<tensor>:
  act.x (with -inf, +inf, nan) and act.<f>.y / act.<f>.gx for gelu, gelu_tanh, silu, leaky (0.01),
  leaky_neg (-0.2), gradOutput ones;
  ln.<case>.{x, weight, bias, gy, y, gx, gw, gb} (LayerNorm, eps 1e-5);
  emb.{weight, idx, gy, y, gw} (padding_idx 2);
  sdpa.<case>.{q, k, v, gy, out, gq, gk, gv} [+ lengths] (F.scaled_dot_product_attention; key
  lengths as a boolean attn_mask, and with causal a combined mask; scale where named);
  mha.<case>.{x, [memory, gmemory], lengths, gy, y, gx, g.<param>} for nn.MultiheadAttention(8, 2)
  whose parameters are mha.<case>.p.<name>;
  tel.<case>.{x, lengths, gy, y, gx, g.<param>, p.<param>} for nn.TransformerEncoderLayer.
- tests/data/nn/transformer_encoder_layer.safetensors: the state_dict of
  nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0) (the "post" case), saved as PyTorch names it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

torch.manual_seed(20261125)
torch.set_default_dtype(torch.float64)
out = {}


def rnd(*shape):
    return torch.rand(*shape) * 2 - 1


def put(prefix, **tensors):
    for k, v in tensors.items():
        out[f"{prefix}.{k}"] = v.detach().contiguous().clone()


# activations: specials and a grid through the interesting range
x = torch.cat([torch.tensor([float("-inf"), float("inf"), float("nan"), -40.0, 0.0]), torch.linspace(-6, 6, 49)])
out["act.x"] = x
for name, f in {"gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "silu": F.silu,
                "leaky": lambda t: F.leaky_relu(t, 0.01), "leaky_neg": lambda t: F.leaky_relu(t, -0.2)}.items():
    t = x.clone().requires_grad_(True)
    y = f(t)
    g = torch.linspace(0.5, 1.5, x.numel())
    y.backward(g)
    put(f"act.{name}", y=y, gx=t.grad, gy=g)

# LayerNorm over the last one and the last two dims
for name, shape, norm in [("last1", (2, 3, 6), (6,)), ("last2", (3, 4, 5), (4, 5))]:
    m = nn.LayerNorm(norm)
    with torch.no_grad():
        m.weight.copy_(rnd(*norm) + 1)
        m.bias.copy_(rnd(*norm))
    t = (rnd(*shape) * 3 + 0.5).requires_grad_(True)
    y = m(t)
    gy = rnd(*shape)
    y.backward(gy)
    put(f"ln.{name}", x=t, weight=m.weight, bias=m.bias, gy=gy, y=y, gx=t.grad, gw=m.weight.grad, gb=m.bias.grad)

# Embedding with a padding row and repeated indices
emb = nn.Embedding(10, 4, padding_idx=2)
idx = torch.tensor([[1, 2, 7], [7, 0, 2], [9, 1, 7]])
y = emb(idx)
gy = rnd(*y.shape)
y.backward(gy)
put("emb", weight=emb.weight, idx=idx, gy=gy, y=y, gw=emb.weight.grad)


def length_mask(lengths, sq, sk, causal):
    """Boolean attn_mask [B x 1 x Sq x Sk], True where attention is allowed."""
    keep = torch.arange(sk)[None, None, None, :] < lengths[:, None, None, None]
    if causal:
        keep = keep & (torch.arange(sk)[None, :] <= torch.arange(sq)[:, None])[None, None]
    return keep.expand(-1, 1, sq, sk)


def sdpa_case(name, b, h, sq, sk, d, dv, causal=False, lengths=None, scale=None):
    q, k, v = rnd(b, h, sq, d) * 2, rnd(b, h, sk, d) * 2, rnd(b, h, sk, dv)
    q.requires_grad_(True)
    k.requires_grad_(True)
    v.requires_grad_(True)
    if lengths is None:
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
    else:
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=length_mask(lengths, sq, sk, causal), scale=scale)
    gy = rnd(*o.shape)
    o.backward(gy)
    put(f"sdpa.{name}", q=q, k=k, v=v, gy=gy, out=o, gq=q.grad, gk=k.grad, gv=v.grad)
    if lengths is not None:
        out[f"sdpa.{name}.lengths"] = lengths.clone()


sdpa_case("plain", 2, 3, 5, 7, 4, 6)
sdpa_case("causal", 2, 2, 6, 6, 5, 3, causal=True)
sdpa_case("causal_wide", 1, 2, 4, 7, 3, 3, causal=True)  # Sq < Sk: top-left aligned
sdpa_case("lengths", 3, 2, 4, 6, 4, 4, lengths=torch.tensor([3, 6, 1]))
sdpa_case("causal_lengths", 2, 2, 5, 5, 4, 2, causal=True, lengths=torch.tensor([2, 5]))
sdpa_case("scale", 2, 1, 3, 4, 8, 5, scale=0.3)


def grads_of(module, prefix):
    for n, p in module.named_parameters():
        out[f"{prefix}.p.{n}"] = p.detach().clone()
        out[f"{prefix}.g.{n}"] = p.grad.detach().clone()


def padding(lengths, s):
    """key_padding_mask [B x S], True where the key is ignored."""
    return torch.arange(s)[None, :] >= lengths[:, None]


def mha_case(name, s, b, e, heads, causal=False, lengths=None, memory_len=None, bias=True, batch_first=False):
    m = nn.MultiheadAttention(e, heads, bias=bias, batch_first=batch_first)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.1 * rnd(*p.shape))  # non-zero biases
    shape = (b, s, e) if batch_first else (s, b, e)
    x = rnd(*shape).requires_grad_(True)
    kwargs = {"need_weights": False}
    if lengths is not None:
        kwargs["key_padding_mask"] = padding(lengths, memory_len or s)
    if causal:
        kwargs["attn_mask"] = torch.triu(torch.ones(s, memory_len or s, dtype=torch.bool), 1)
    if memory_len:
        mshape = (b, memory_len, e) if batch_first else (memory_len, b, e)
        mem = rnd(*mshape).requires_grad_(True)
        y, _ = m(x, mem, mem, **kwargs)
    else:
        y, _ = m(x, x, x, **kwargs)
    gy = rnd(*y.shape)
    y.backward(gy)
    put(f"mha.{name}", x=x, gy=gy, y=y, gx=x.grad)
    if memory_len:
        put(f"mha.{name}", memory=mem, gmemory=mem.grad)
    if lengths is not None:
        out[f"mha.{name}.lengths"] = lengths.clone()
    grads_of(m, f"mha.{name}")


mha_case("self", 5, 3, 8, 2)
mha_case("masked", 6, 2, 8, 4, causal=True, lengths=torch.tensor([4, 6]))
mha_case("cross", 4, 2, 8, 2, memory_len=6, lengths=torch.tensor([5, 2]))
mha_case("batch_first", 3, 2, 6, 3, bias=False, batch_first=True)


def tel_case(name, s, b, d, nhead, ff, activation, norm_first, batch_first, causal=False, lengths=None, save=None):
    m = nn.TransformerEncoderLayer(d, nhead, ff, dropout=0.0, activation=activation, norm_first=norm_first,
                                   batch_first=batch_first)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.1 * rnd(*p.shape))
    m.train()  # no fast path
    shape = (b, s, d) if batch_first else (s, b, d)
    x = rnd(*shape).requires_grad_(True)
    kwargs = {}
    if lengths is not None:
        kwargs["src_key_padding_mask"] = padding(lengths, s)
    if causal:
        kwargs["src_mask"] = nn.Transformer.generate_square_subsequent_mask(s).isinf()
        kwargs["is_causal"] = True
    y = m(x, **kwargs)
    gy = rnd(*y.shape)
    y.backward(gy)
    put(f"tel.{name}", x=x, gy=gy, y=y, gx=x.grad)
    if lengths is not None:
        out[f"tel.{name}.lengths"] = lengths.clone()
    grads_of(m, f"tel.{name}")
    if save:
        save_file({k: v.detach().contiguous() for k, v in m.state_dict().items()}, save)


tel_case("post", 5, 2, 8, 2, 16, "relu", False, False, save="tests/data/nn/transformer_encoder_layer.safetensors")
tel_case("pre_gelu", 4, 3, 8, 4, 12, "gelu", True, True, causal=True, lengths=torch.tensor([4, 2, 3]))
tel_case("post_masked", 6, 2, 8, 2, 10, "relu", False, False, lengths=torch.tensor([3, 6]))

save_file(out, "tests/data/nn/transformer_reference.safetensors")
print(len(out), "tensors")
