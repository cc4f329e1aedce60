"""Writes tests/data/nn/decoder_norm_reference.safetensors: PyTorch (CPU, float64) outputs and
gradients of torch.nn.RMSNorm and of an HF-style SwiGLU MLP (LlamaMLP's forward:
down_proj(silu(gate_proj(x)) * up_proj(x)), three nn.Linear), for tests/nn/test_RMSNorm.cpp and
tests/nn/test_SwiGLU.cpp to compare with; and torch.rms_norm in float16 and bfloat16 for
tests/cudnn/test_RMSNorm.cpp (PyTorch's rounding: Note [RMSNorm's rounding] in nn/RMSNorm.cpp).

Keys are "<case>.<name>": x (input), w (RMSNorm's weight, where affine), gy (gradOutput), y
(output), gx (gradInput), gw (the weight's gradient); SwiGLU's parameters and gradients under
their state_dict names ("swiglu.plain.gate_proj.weight", "swiglu.plain.grad.gate_proj.weight").
The cases (the C++ tests build the same modules):
  rms.last1     RMSNorm(8, eps=1e-6), x [4 x 8]
  rms.last2     RMSNorm((3, 4), eps=1e-5), x [2 x 5 x 3 x 4]
  rms.none      RMSNorm(6) (eps None: float64's epsilon), x [3 x 6]
  rms.plain     RMSNorm(5, eps=1e-3, elementwise_affine=False), x [2 x 3 x 5]
  rms.tiny      RMSNorm(4) (eps None), x [2 x 4] of 1e-9: eps dominates the mean square
  swiglu.plain  SwiGLU(6, 10), bias=False (Llama's), x [2 x 3 x 6]
  swiglu.bias   SwiGLU(4, 7, bias=True), x [5 x 4]
  half.<dt>     torch.rms_norm in float16 / bfloat16 (dt = float16, bfloat16) over [16 x 64] with
                a weight and eps=1e-6, and with eps None (key y_none): x, w, y in that dtype.

Run from the repository root: python3 scripts/make_decoder_norm_reference.py
"""
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

torch.manual_seed(20261202)
torch.set_default_dtype(torch.float64)
out = {}


def rms_case(prefix, m, x):
    if m.weight is not None:
        with torch.no_grad():
            m.weight.uniform_(0.5, 1.5)
        out[prefix + ".w"] = m.weight.detach().clone()
    x = x.clone().requires_grad_(True)
    y = m(x)
    gy = torch.randn_like(y)
    y.backward(gy)
    out[prefix + ".x"] = x.detach().clone()
    out[prefix + ".y"] = y.detach().clone()
    out[prefix + ".gy"] = gy
    out[prefix + ".gx"] = x.grad.clone()
    if m.weight is not None:
        out[prefix + ".gw"] = m.weight.grad.clone()


rms_case("rms.last1", torch.nn.RMSNorm(8, eps=1e-6), torch.randn(4, 8) * 2 + 0.5)
rms_case("rms.last2", torch.nn.RMSNorm((3, 4), eps=1e-5), torch.randn(2, 5, 3, 4))
rms_case("rms.none", torch.nn.RMSNorm(6), torch.randn(3, 6))
rms_case("rms.plain", torch.nn.RMSNorm(5, eps=1e-3, elementwise_affine=False), torch.randn(2, 3, 5))
rms_case("rms.tiny", torch.nn.RMSNorm(4), torch.randn(2, 4) * 1e-9)


class SwiGLU(torch.nn.Module):
    """HF's LlamaMLP with hidden_act='silu'."""

    def __init__(self, dim, hidden, bias):
        super().__init__()
        self.gate_proj = torch.nn.Linear(dim, hidden, bias=bias)
        self.up_proj = torch.nn.Linear(dim, hidden, bias=bias)
        self.down_proj = torch.nn.Linear(hidden, dim, bias=bias)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def swiglu_case(prefix, m, x):
    for k, v in m.state_dict().items():
        out[prefix + "." + k] = v.clone()
    x = x.clone().requires_grad_(True)
    y = m(x)
    gy = torch.randn_like(y)
    y.backward(gy)
    out[prefix + ".x"] = x.detach().clone()
    out[prefix + ".y"] = y.detach().clone()
    out[prefix + ".gy"] = gy
    out[prefix + ".gx"] = x.grad.clone()
    for k, p in m.named_parameters():
        out[prefix + ".grad." + k] = p.grad.clone()


swiglu_case("swiglu.plain", SwiGLU(6, 10, False), torch.randn(2, 3, 6))
swiglu_case("swiglu.bias", SwiGLU(4, 7, True), torch.randn(5, 4) * 2)

for name, dt in (("float16", torch.float16), ("bfloat16", torch.bfloat16)):
    x = (torch.randn(16, 64) * 3 + 0.25).to(dt)
    w = torch.empty(64).uniform_(0.5, 1.5).to(dt)
    out[f"half.{name}.x"] = x
    out[f"half.{name}.w"] = w
    out[f"half.{name}.y"] = F.rms_norm(x, (64,), w, eps=1e-6)
    out[f"half.{name}.y_none"] = F.rms_norm(x, (64,), w)

save_file(out, "tests/data/nn/decoder_norm_reference.safetensors")
print(f"wrote {len(out)} tensors")
