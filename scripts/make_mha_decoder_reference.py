"""Writes MultiheadAttention's decoder references (CPU, float64), run from the repository root:
python3 scripts/make_mha_decoder_reference.py  (torch, transformers, safetensors)
-> tests/data/nn/mha_decoder_reference.safetensors, cases <name>.<tensor>:
  <name>.p.<param>  our module's state (in_proj_weight, [in_proj_bias], out_proj.weight, [out_proj.bias])
  <name>.x, .gy, .y, .gx, .g.<param>: input, gradOutput, output, gradInput, parameter gradients
  <name>.attn_mask (uint8: nonzero = not allowed, or float64 additive), <name>.kpm (uint8, nonzero = ignore)
- llama_gqa, llama_gqa_kpm: transformers' LlamaAttention (its sdpa path: eager rounds the softmax to
  float32) with a tiny config, hidden 16, 4 heads, 2 kv heads (GQA), RoPE theta 10000, no bias, batch
  first [2 x 5 x 16], causal (kpm: plus a key padding mask as an additive 4-d mask); its q/k/v projections stacked into in_proj_weight. cos and sin are
  computed in float64 (LlamaRotaryEmbedding's float32 angles would differ from a float64 reference).
- llama_mqa: the same with 1 kv head (multi-query), rope_theta 500000, not causal.
- amask_bool, amask_add3, amask4, kpm, both, both_add: torch.nn.MultiheadAttention(8, 2) (seq first
  [5 x 2 x 8], bias) with attn_mask bool [T x S], additive [B*H x T x S], bool [B x H x T x S] (given to
  PyTorch as [B*H x T x S]), key_padding_mask alone, bool attn_mask with it, additive attn_mask with it.
No query row is fully masked.
"""
import torch
import torch.nn as nn
from safetensors.torch import save_file
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaAttention

torch.manual_seed(20261202)
torch.set_default_dtype(torch.float64)
out = {}


def rnd(*shape):
    return torch.rand(*shape) * 2 - 1


def put(prefix, **tensors):
    for k, v in tensors.items():
        out[f"{prefix}.{k}"] = v.detach().contiguous().clone()


def llama_case(name, kv_heads, theta, causal, kpm=None):
    B, S, E, H = 2, 5, 16, 4
    D = E // H
    cfg = LlamaConfig(hidden_size=E, num_attention_heads=H, num_key_value_heads=kv_heads, rope_theta=theta,
                      attention_bias=False, attention_dropout=0.0, intermediate_size=32, num_hidden_layers=1,
                      vocab_size=10, max_position_embeddings=64)
    cfg._attn_implementation = "sdpa"  # eager takes the softmax in float32
    attn = LlamaAttention(cfg, layer_idx=0).double()
    with torch.no_grad():
        for lin in (attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj):
            lin.weight.copy_(rnd(*lin.weight.shape) * 0.5)
    x = rnd(B, S, E).requires_grad_(True)
    inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    freqs = torch.arange(S, dtype=torch.float64)[:, None] * inv_freq[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    cos, sin = emb.cos()[None].expand(B, S, D), emb.sin()[None].expand(B, S, D)
    mask = torch.zeros(B, 1, S, S)
    if causal:
        mask = mask.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
    if kpm is not None:
        mask = mask.masked_fill(kpm.bool()[:, None, None, :], float("-inf"))
    y, _ = attn(x, position_embeddings=(cos, sin), attention_mask=mask)
    gy = rnd(*y.shape)
    y.backward(gy)
    w = torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight])
    gw = torch.cat([attn.q_proj.weight.grad, attn.k_proj.weight.grad, attn.v_proj.weight.grad])
    put(name, x=x, gy=gy, y=y, gx=x.grad)
    put(name + ".p", in_proj_weight=w, **{"out_proj.weight": attn.o_proj.weight})
    put(name + ".g", in_proj_weight=gw, **{"out_proj.weight": attn.o_proj.weight.grad})
    if kpm is not None:
        put(name, kpm=kpm.to(torch.uint8))


llama_case("llama_gqa", 2, 10000.0, True)
llama_case("llama_gqa_kpm", 2, 10000.0, True, kpm=torch.tensor([[0, 0, 0, 1, 1], [0, 0, 1, 0, 0]]))
llama_case("llama_mqa", 1, 500000.0, False)


def torch_mha_case(name, attn_mask=None, kpm=None, ours_mask=None):
    T, B, E, H = 5, 2, 8, 2
    m = nn.MultiheadAttention(E, H)
    with torch.no_grad():
        m.in_proj_bias.copy_(rnd(3 * E) * 0.5)
        m.out_proj.bias.copy_(rnd(E) * 0.5)
    x = rnd(T, B, E).requires_grad_(True)
    y, _ = m(x, x, x, attn_mask=attn_mask, key_padding_mask=None if kpm is None else kpm.bool(), need_weights=False)
    gy = rnd(*y.shape)
    y.backward(gy)
    put(name, x=x, gy=gy, y=y, gx=x.grad)
    put(name + ".p", **dict(m.state_dict()))
    put(name + ".g", **{k: p.grad for k, p in m.named_parameters()})
    mask = ours_mask if ours_mask is not None else attn_mask
    if mask is not None:
        put(name, attn_mask=mask.to(torch.uint8) if mask.dtype == torch.bool else mask)
    if kpm is not None:
        put(name, kpm=kpm.to(torch.uint8))


T, B, H = 5, 2, 2
no_diag = ~torch.eye(T, dtype=torch.bool)
bool2 = (torch.rand(T, T) < 0.4) & no_diag          # True = not allowed, never the diagonal
add3 = rnd(B * H, T, T) * 2
add3[:, 1, 3] = float("-inf")
add3[1, 4, 0] = float("-inf")
bool4 = (torch.rand(B, H, T, T) < 0.4) & no_diag
kpm = torch.tensor([[0, 1, 0, 0, 1], [1, 0, 0, 0, 0]])  # not a prefix: any pattern
kpm_safe = torch.tensor([[0, 1, 0, 0, 1], [0, 0, 1, 0, 0]])  # key 0 kept: with bool2 no row is empty
torch_mha_case("amask_bool", attn_mask=bool2)
torch_mha_case("amask_add3", attn_mask=add3)
torch_mha_case("amask4", attn_mask=bool4.reshape(B * H, T, T), ours_mask=bool4)
torch_mha_case("kpm", kpm=kpm)
torch_mha_case("both", attn_mask=bool2 & ~torch.tril(torch.ones(T, T, dtype=torch.bool)), kpm=kpm_safe)
torch_mha_case("both_add", attn_mask=rnd(T, T), kpm=kpm)

save_file(out, "tests/data/nn/mha_decoder_reference.safetensors")
print(len(out), "tensors")
