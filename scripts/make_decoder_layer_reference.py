"""Writes nn.TransformerDecoderLayer's PyTorch references (CPU, float64), run from the repository root:
python3 scripts/make_decoder_layer_reference.py
- tests/data/nn/decoder_layer_reference.safetensors: cases <case>.<tensor>:
  <case>.{tgt, memory, gy, y, gtgt, gmemory} with the layer's parameters <case>.p.<name> and their
  gradients <case>.g.<name> (state_dict names), and where the case has them
  <case>.{tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask} (uint8: nonzero =
  not allowed / ignored, PyTorch's bool masks; float: additive) and <case>.memory_lengths (int64 [B]:
  the memory key padding mask as key lengths).
  Cases: post (relu, post-norm), pre_gelu_causal (norm_first, gelu, batch_first, tgt_is_causal,
  memory key padding), post_gelu_padding (both key padding masks), pre_masks (norm_first, a boolean
  tgt_mask and an additive memory_mask).
- tests/data/nn/decoder_layer_state.safetensors: the state_dict of
  nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0) (the "post" case), saved as PyTorch names it.
"""
import torch
import torch.nn as nn
from safetensors.torch import save_file

torch.manual_seed(20261202)
torch.set_default_dtype(torch.float64)
out = {}


def rnd(*shape):
    return torch.rand(*shape) * 2 - 1


def put(prefix, **tensors):
    for k, v in tensors.items():
        out[f"{prefix}.{k}"] = v.detach().contiguous().clone()


def padding(lengths, s):
    return torch.arange(s)[None, :] >= lengths[:, None]  # True = ignore


def case(name, t, s, b, d, nhead, ff, activation, norm_first, batch_first, causal=False, tgt_lengths=None,
         memory_lengths=None, tgt_mask=None, memory_mask=None, save=None):
    m = nn.TransformerDecoderLayer(d, nhead, ff, dropout=0.0, activation=activation, norm_first=norm_first,
                                   batch_first=batch_first)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.1 * rnd(*p.shape))
    m.train()
    tgt = rnd(*((b, t, d) if batch_first else (t, b, d))).requires_grad_(True)
    memory = rnd(*((b, s, d) if batch_first else (s, b, d))).requires_grad_(True)
    kwargs = {}
    if causal:
        kwargs["tgt_mask"] = nn.Transformer.generate_square_subsequent_mask(t).isinf()
        kwargs["tgt_is_causal"] = True
    if tgt_mask is not None:
        kwargs["tgt_mask"] = tgt_mask
        put(f"{name}", tgt_mask=tgt_mask.to(torch.uint8) if tgt_mask.dtype == torch.bool else tgt_mask)
    if memory_mask is not None:
        kwargs["memory_mask"] = memory_mask
        put(f"{name}", memory_mask=memory_mask.to(torch.uint8) if memory_mask.dtype == torch.bool else memory_mask)
    if tgt_lengths is not None:
        kwargs["tgt_key_padding_mask"] = padding(tgt_lengths, t)
        put(f"{name}", tgt_key_padding_mask=padding(tgt_lengths, t).to(torch.uint8))
    if memory_lengths is not None:
        kwargs["memory_key_padding_mask"] = padding(memory_lengths, s)
        put(f"{name}", memory_key_padding_mask=padding(memory_lengths, s).to(torch.uint8))
        out[f"{name}.memory_lengths"] = memory_lengths.clone()
    y = m(tgt, memory, **kwargs)
    gy = rnd(*y.shape)
    y.backward(gy)
    put(f"{name}", tgt=tgt, memory=memory, gy=gy, y=y, gtgt=tgt.grad, gmemory=memory.grad)
    for k, p in m.named_parameters():
        put(f"{name}.p", **{k: p})
        put(f"{name}.g", **{k: p.grad})
    if save:
        save_file({k: v.detach().contiguous() for k, v in m.state_dict().items()}, save)


case("post", 5, 6, 2, 8, 2, 16, "relu", False, False, save="tests/data/nn/decoder_layer_state.safetensors")
case("pre_gelu_causal", 4, 5, 3, 8, 4, 12, "gelu", True, True, causal=True, memory_lengths=torch.tensor([5, 2, 3]))
case("post_gelu_padding", 6, 4, 2, 8, 2, 10, "gelu", False, False, tgt_lengths=torch.tensor([6, 3]),
     memory_lengths=torch.tensor([2, 4]))
# a boolean tgt_mask with one allowed key per row at least (the diagonal), an additive memory_mask
tm = torch.rand(5, 5) < 0.4
tm.fill_diagonal_(False)
case("pre_masks", 5, 3, 2, 8, 2, 12, "relu", True, False, tgt_mask=tm, memory_mask=rnd(5, 3))

save_file(out, "tests/data/nn/decoder_layer_reference.safetensors")
print(len(out), "tensors")
