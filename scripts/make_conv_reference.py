"""Writes tests/data/nn/conv_reference.safetensors: small convolutions computed by PyTorch
(CPU, float64), so the nn convolution tests also compare with an implementation written by
others. Run from the repository root: python3 scripts/make_conv_reference.py
Each case <name> stores <name>.x, .w, .b, .y; the configuration is in the test."""
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

torch.manual_seed(20261203)
out = {}


def rnd(*shape):
    return torch.rand(*shape, dtype=torch.float64) * 2 - 1


def case(name, x, w, b, y):
    out.update({f"{name}.x": x, f"{name}.w": w, f"{name}.b": b, f"{name}.y": y.contiguous()})


# 2-D: groups 2, stride (2, 1), padding (1, 0), dilation (2, 1); weight [6 x 2 x 3 x 2]
x, w, b = rnd(2, 4, 7, 6), rnd(6, 2, 3, 2), rnd(6)
case("conv2d", x, w, b, F.conv2d(x, w, b, stride=(2, 1), padding=(1, 0), dilation=(2, 1), groups=2))

# 2-D transposed: groups 2, stride (2, 3), padding (1, 0), output padding (1, 2); weight [4 x 3 x 3 x 2]
x, w, b = rnd(2, 4, 3, 4), rnd(4, 3, 3, 2), rnd(6)
case("full2d", x, w, b,
     F.conv_transpose2d(x, w, b, stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2))

# 3-D: stride (1, 2, 1), padding (1, 0, 1); weight [3 x 2 x 2 x 3 x 2]
x, w, b = rnd(1, 2, 4, 5, 5), rnd(3, 2, 2, 3, 2), rnd(3)
case("conv3d", x, w, b, F.conv3d(x, w, b, stride=(1, 2, 1), padding=(1, 0, 1)))

# 3-D transposed: stride (2, 1, 2), padding (0, 1, 1), output padding (1, 0, 1); weight [2 x 3 x 2 x 2 x 3]
x, w, b = rnd(2, 2, 2, 3, 3), rnd(2, 3, 2, 2, 3), rnd(3)
case("full3d", x, w, b,
     F.conv_transpose3d(x, w, b, stride=(2, 1, 2), padding=(0, 1, 1), output_padding=(1, 0, 1)))

# Temporal: input [batch x frames x frameSize], Torch's weight [out x (kW * frameSize)], kW 3, dW 2
x, w, b = rnd(2, 9, 3), rnd(4, 3 * 3), rnd(4)
w_torch = w.view(4, 3, 3).permute(0, 2, 1)  # [out x frameSize x kW]
y = F.conv1d(x.permute(0, 2, 1), w_torch, b, stride=2).permute(0, 2, 1)
case("temporal", x, w, b, y)

save_file(out, "tests/data/nn/conv_reference.safetensors")
