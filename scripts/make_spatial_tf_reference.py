"""Writes tests/data/nn/spatial_tf_reference.safetensors: spatial transformer sampling computed
by PyTorch (CPU, float64): affine_grid + grid_sample(mode='bilinear', padding_mode='zeros',
align_corners=True), which is cuDNN's sampler, with the gradients of sum(out * gradOutput)
with respect to the image and theta. Run from the repository root:
python3 scripts/make_spatial_tf_reference.py
Each case <name> stores <name>.image [N x C x H x W], .theta [N x 2 x 3], .gradOutput,
.output [N x C x outH x outW], .gradImage and .gradTheta; outH and outW are the output's."""
import math

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

torch.manual_seed(20261123)
out = {}


def rnd(*shape):
    return torch.rand(*shape, dtype=torch.float64) * 2 - 1


def rotation(angle, scale, tx, ty):
    c, s = math.cos(angle) * scale, math.sin(angle) * scale
    return [[c, -s, tx], [s, c, ty]]


def case(name, image, theta, out_h, out_w):
    image = image.clone().requires_grad_(True)
    theta = theta.clone().requires_grad_(True)
    n, c = image.shape[0], image.shape[1]
    grid = F.affine_grid(theta, [n, c, out_h, out_w], align_corners=True)
    y = F.grid_sample(image, grid, mode="bilinear", padding_mode="zeros", align_corners=True)
    g = rnd(*y.shape)
    (y * g).sum().backward()
    out.update({f"{name}.image": image.detach(), f"{name}.theta": theta.detach(), f"{name}.gradOutput": g,
                f"{name}.output": y.detach().contiguous(), f"{name}.gradImage": image.grad,
                f"{name}.gradTheta": theta.grad})


# identity on a 5 x 9 image: H - 1 and W - 1 are powers of two, so every sample lands exactly
# on a pixel in any implementation (the cell chosen at the kink is floor's, as cuDNN's)
case("identity", rnd(1, 1, 5, 9), torch.tensor([rotation(0, 1, 0, 0)], dtype=torch.float64), 5, 9)
# rotation and scale, C > 1, N > 1
case("rotate_scale", rnd(2, 3, 7, 8),
     torch.tensor([rotation(0.37, 0.8, 0.05, -0.1), rotation(-1.1, 1.3, -0.2, 0.15)], dtype=torch.float64), 7, 8)
# translations that move part or all of the samples outside the image (zeros there)
case("outside", rnd(3, 2, 6, 6),
     torch.tensor([rotation(0.1, 0.9, 0.93, -0.61), rotation(0.0, 1.1, -1.37, 0.29),
                   rotation(0.2, 0.7, 2.6, 2.3)], dtype=torch.float64), 6, 6)
# output larger in one dim and smaller in the other than the input
case("resize", rnd(3, 1, 6, 5),
     torch.tensor([rotation(0.05, 1.0, 0.01, 0.02), rotation(0.6, 0.5, 0.3, -0.2),
                   rotation(-0.3, 1.2, -0.1, 0.0)], dtype=torch.float64), 9, 4)
# general affine maps (shear, anisotropic scale) near the identity
theta = torch.tensor([rotation(0, 1, 0, 0)] * 4, dtype=torch.float64) + 0.3 * rnd(4, 2, 3)
case("affine", rnd(4, 2, 4, 6), theta, 5, 7)
# a single output row: PyTorch's grid coordinate for a size-1 dim is 0 (the centre)
case("single_row", rnd(2, 2, 5, 6),
     torch.tensor([rotation(0.2, 0.9, 0.1, 0.05), rotation(-0.4, 1.1, 0.0, -0.3)], dtype=torch.float64), 1, 5)

save_file(out, "tests/data/nn/spatial_tf_reference.safetensors")
