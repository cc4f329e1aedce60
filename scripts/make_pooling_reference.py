"""Writes tests/data/nn/pooling.safetensors and tests/data/nn/lrn.safetensors: PyTorch (CPU,
float64) outputs and input gradients of max/average pooling in ceil mode, with padding and
both count_include_pad settings, and of cross-channel LRN, for the nn tests to compare with.

Before writing, every pooling case is checked against a direct transcription of THNN's
SpatialAveragePooling / SpatialMaxPooling rules (output size with the "last window starts
inside the input or its left padding" drop; average divisor = window clipped to the padded
input with count_include_pad, to the input without), so the file also records that PyTorch's
semantics are THNN's. LRN cases use odd sizes only: for even sizes PyTorch centres the window
differently from Torch/cuDNN.

Run from the repository root: python3 scripts/make_pooling_reference.py
"""
import itertools
import math

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

torch.manual_seed(20261122)


def out_size(n, k, d, p, ceil):
    span = n + 2 * p - k
    o = (-((-span) // d) if ceil else span // d) + 1
    if ceil and (o - 1) * d >= n + p:
        o -= 1
    return o


def thnn_pool(x, k, d, p, ceil, mode, include_pad):
    """Naive N-d pooling over the trailing len(k) dims, as THNN defines it."""
    nd = len(k)
    lead = x.shape[: x.dim() - nd]
    ins = x.shape[x.dim() - nd:]
    outs = [out_size(n, k[i], d[i], p[i], ceil) for i, n in enumerate(ins)]
    xf = x.reshape(-1, *ins).numpy()
    y = np.zeros((xf.shape[0], *outs))
    for plane in range(xf.shape[0]):
        for o in itertools.product(*[range(s) for s in outs]):
            lo, hi, padded = [], [], 1
            for i in range(nd):
                s = o[i] * d[i] - p[i]
                e = min(s + k[i], ins[i] + p[i])
                padded *= e - s
                lo.append(max(s, 0))
                hi.append(min(e, ins[i]))
            win = xf[(plane, *[slice(a, b) for a, b in zip(lo, hi)])]
            if mode == "max":
                y[(plane, *o)] = win.max()
            else:
                y[(plane, *o)] = win.sum() / (padded if include_pad else win.size)
    return torch.from_numpy(y.reshape(*lead, *outs))


def torch_pool(x, k, d, p, ceil, mode, include_pad):
    nd = len(k)
    if mode == "max":
        f = F.max_pool2d if nd == 2 else F.max_pool3d
        return f(x, k, d, p, ceil_mode=ceil)
    f = F.avg_pool2d if nd == 2 else F.avg_pool3d
    return f(x, k, d, p, ceil_mode=ceil, count_include_pad=include_pad)


# name: (input shape, kernel, stride, padding, ceil), sizes in tensor order ((T,) H, W)
geometries = {
    "2d_ceil_pad": ((2, 2, 6, 7), (3, 3), (2, 2), (1, 1), True),
    "2d_ceil_drop": ((1, 2, 5, 5), (2, 2), (2, 2), (1, 1), True),  # a 4th window would start at 5
    "2d_ceil_rect_nobatch": ((3, 5, 4), (2, 3), (1, 2), (1, 1), True),
    "2d_ceil_stride_gt_kernel": ((1, 2, 5, 7), (2, 2), (3, 3), (0, 0), True),
    "2d_ceil_drop_nopad": ((1, 1, 5, 5), (1, 1), (3, 3), (0, 0), True),
    "2d_ceil_small_input": ((1, 2, 2, 2), (3, 3), (2, 2), (0, 0), True),
    "2d_floor_pad": ((1, 2, 7, 6), (3, 2), (2, 1), (1, 1), False),
    "3d_ceil_pad": ((1, 2, 5, 6, 5), (2, 3, 3), (2, 2, 2), (1, 1, 1), True),
    "3d_ceil_drop_nobatch": ((2, 4, 5, 5), (2, 2, 2), (2, 2, 2), (1, 1, 1), True),
    "3d_floor_pad": ((1, 2, 4, 5, 6), (3, 2, 3), (1, 2, 2), (1, 1, 0), False),
}

pool = {}
for name, (shape, k, d, p, ceil) in geometries.items():
    x = torch.randn(*shape, dtype=torch.float64)
    for mode, include in (("max", True), ("avg", True), ("avg", False)):
        key = f"{mode}{'' if mode == 'max' else ('_inc' if include else '_exc')}_{name}"
        xi = x.clone().requires_grad_(True)
        y = torch_pool(xi, k, d, p, ceil, mode, include)
        ref = thnn_pool(x, k, d, p, ceil, mode, include)
        assert y.shape == ref.shape, (key, y.shape, ref.shape)
        assert torch.allclose(y.detach(), ref, rtol=0, atol=1e-12), key
        g = torch.randn(y.shape, dtype=torch.float64)
        y.backward(g)
        config = [*k, *d, *p, int(ceil), int(include)]
        pool[key + ".config"] = torch.tensor(config, dtype=torch.int64)
        pool[key + ".input"] = x.clone()
        pool[key + ".output"] = y.detach().contiguous()
        pool[key + ".gradOutput"] = g
        pool[key + ".gradInput"] = xi.grad.contiguous()
save_file(pool, "tests/data/nn/pooling.safetensors", metadata={"generator": "scripts/make_pooling_reference.py", "torch": torch.__version__})

# name: (input shape, size, alpha, beta, k)
lrn_cases = {
    "batch_size5": ((2, 7, 3, 4), 5, 0.5, 0.75, 2.0),
    "nobatch_size3": ((6, 4, 3), 3, 1.0, 0.6, 1.0),
    "size9_over_4_channels": ((2, 4, 2, 3), 9, 2.0, 0.75, 1.5),
    "size1": ((1, 3, 2, 2), 1, 0.3, 1.1, 0.5),
}
lrn = {}
for name, (shape, size, alpha, beta, k) in lrn_cases.items():
    x = torch.randn(*shape, dtype=torch.float64)
    xi = x.clone().requires_grad_(True)
    y = F.local_response_norm(xi if len(shape) == 4 else xi.unsqueeze(0), size, alpha, beta, k)
    if len(shape) == 3:
        y = y.squeeze(0)
    g = torch.randn(y.shape, dtype=torch.float64)
    y.backward(g)
    lrn[name + ".config"] = torch.tensor([size, alpha, beta, k], dtype=torch.float64)
    lrn[name + ".input"] = x
    lrn[name + ".output"] = y.detach().contiguous()
    lrn[name + ".gradOutput"] = g
    lrn[name + ".gradInput"] = xi.grad.contiguous()
save_file(lrn, "tests/data/nn/lrn.safetensors", metadata={"generator": "scripts/make_pooling_reference.py", "torch": torch.__version__})
print("wrote", len(pool), "pooling and", len(lrn), "LRN tensors")
