"""Writes tests/data/nn/staples_reference.safetensors: PyTorch (CPU, float64) outputs and input
gradients, for random gradOutputs, of the spatial paddings (F.pad with mode 'reflect',
'replicate' and 'constant', negative pads cropping) and the up-samplings (F.interpolate with
mode 'nearest' at integer scales, and 'bilinear' with align_corners True and False, up and
down, odd sizes), for tests/nn/test_Padding.cpp and tests/nn/test_UpSampling.cpp.

Each case <name> stores <name>.input, <name>.output, <name>.grad_output, <name>.grad_input;
the tests hold the matching module for each name. Pads are (left, right, top, bottom), as
F.pad and Torch's spatial paddings take them.

Run from the repository root: python3 scripts/make_staples_reference.py
"""
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

torch.manual_seed(20261207)

# name: (input shape, pads, mode)
pads = {
    "reflect_4d": ((2, 3, 5, 6), (2, 1, 3, 0), "reflect"),
    "reflect_3d": ((3, 4, 5), (1, 3, 2, 2), "reflect"),
    "replicate_4d": ((2, 2, 5, 4), (3, 1, 0, 2), "replicate"),
    "replicate_3d": ((2, 3, 3), (2, 2, 4, 1), "replicate"),
    "zero_crop_4d": ((1, 2, 4, 5), (2, -1, -1, 3), "constant"),
}

# name: (input shape, mode, output size, align_corners)
upsamplings = {
    "nearest_x2": ((2, 3, 3, 5), "nearest", (6, 10), None),
    "nearest_x3_3d": ((2, 4, 3), "nearest", (12, 9), None),
    "bilinear_ac_x3": ((2, 2, 4, 5), "bilinear", (10, 13), True),  # Torch's (H - 1) 3 + 1
    "bilinear_ac_size": ((1, 2, 5, 4), "bilinear", (7, 3), True),  # width down
    "bilinear_ac_row": ((1, 1, 1, 4), "bilinear", (3, 7), True),
    "bilinear_x2": ((2, 2, 3, 5), "bilinear", (6, 10), False),
    "bilinear_size": ((1, 3, 4, 6), "bilinear", (7, 4), False),  # width down
    "bilinear_size_3d": ((2, 5, 3), "bilinear", (9, 7), False),
}

tensors = {}


def record(name, x, f):
    x = x.clone().requires_grad_(True)
    y = f(x)
    gy = torch.randn_like(y)
    (gx,) = torch.autograd.grad(y, x, gy)
    tensors[name + ".input"] = x.detach()
    tensors[name + ".output"] = y.detach().contiguous()
    tensors[name + ".grad_output"] = gy
    tensors[name + ".grad_input"] = gx


for name, (shape, p, mode) in pads.items():
    x = torch.randn(*shape, dtype=torch.float64)
    record(name, x, lambda t, p=p, mode=mode: F.pad(t, p, mode=mode))

for name, (shape, mode, size, align) in upsamplings.items():
    x = torch.randn(*shape, dtype=torch.float64)
    batched = len(shape) == 4

    def f(t, mode=mode, size=size, align=align, batched=batched):
        t4 = t if batched else t.unsqueeze(0)
        kw = {} if align is None else {"align_corners": align}
        y = F.interpolate(t4, size=size, mode=mode, **kw)
        return y if batched else y.squeeze(0)

    record(name, x, f)

save_file({k: v.contiguous() for k, v in tensors.items()}, "tests/data/nn/staples_reference.safetensors")
print(len(tensors), "tensors")
