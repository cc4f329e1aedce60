"""Writes tests/data/nn/groupnorm_reference.safetensors: PyTorch (CPU, float64) outputs and
gradients of nn.GroupNorm and nn.InstanceNorm1d/2d/3d, for tests/nn/test_GroupNorm.cpp and
tests/nn/test_InstanceNorm.cpp to compare with.

Keys are "<case>.<name>": x (input), w and b (weight and bias, where affine), gy (gradOutput),
y (output), gx (gradInput), gw and gb (the parameters' gradients). The cases (the C++ tests
build the same modules):
  gn.4d      GroupNorm(2, 6), x [3 x 6 x 4 x 5]
  gn.2d      GroupNorm(1, 4), x [5 x 4] (one group: a layer norm over the channels)
  gn.5d      GroupNorm(4, 8, eps=1e-3, affine=False), x [2 x 8 x 3 x 2 x 2]
  gn.g1c     GroupNorm(3, 3), x [2 x 3 x 7] (a group a channel: an instance norm)
  in.2d      InstanceNorm2d(3, affine=True), x [2 x 3 x 4 x 5]
  in.3d      InstanceNorm3d(2), x [2 x 2 x 3 x 2 x 2]
  in.track   InstanceNorm1d(3, momentum=0.2, affine=True, track_running_stats=True): training
             forwards of x1 and x2 [4 x 3 x 6] (keys x1, x2; running_mean1/running_var1 after
             the first, running_mean/running_var after the second, y2 the second's output, gy2
             / gx2 / gw2 / gb2 its backward), then in evaluation x, y, gy, gx, gw, gb (the
             parameters' gradients from zero again).

Run from the repository root: python3 scripts/make_groupnorm_reference.py
"""
import torch
from safetensors.torch import save_file

torch.manual_seed(20261203)
torch.set_default_dtype(torch.float64)
out = {}


def affine_init(m):
    if getattr(m, "weight", None) is not None:
        with torch.no_grad():
            m.weight.uniform_(0.5, 1.5)
            m.bias.uniform_(-0.5, 0.5)


def run(prefix, m, shape, suffix=""):
    x = torch.randn(*shape) * 2 + 0.5
    x.requires_grad_(True)
    y = m(x)
    gy = torch.randn_like(y)
    y.backward(gy)
    out[prefix + ".x" + suffix] = x.detach().clone()
    out[prefix + ".y" + suffix] = y.detach().clone()
    out[prefix + ".gy" + suffix] = gy.clone()
    out[prefix + ".gx" + suffix] = x.grad.clone()
    if getattr(m, "weight", None) is not None:
        out[prefix + ".gw" + suffix] = m.weight.grad.clone()
        out[prefix + ".gb" + suffix] = m.bias.grad.clone()
        m.weight.grad = None
        m.bias.grad = None


def case(prefix, m, shape):
    affine_init(m)
    if getattr(m, "weight", None) is not None:
        out[prefix + ".w"] = m.weight.detach().clone()
        out[prefix + ".b"] = m.bias.detach().clone()
    run(prefix, m, shape)


case("gn.4d", torch.nn.GroupNorm(2, 6), (3, 6, 4, 5))
case("gn.2d", torch.nn.GroupNorm(1, 4), (5, 4))
case("gn.5d", torch.nn.GroupNorm(4, 8, eps=1e-3, affine=False), (2, 8, 3, 2, 2))
case("gn.g1c", torch.nn.GroupNorm(3, 3), (2, 3, 7))
case("in.2d", torch.nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 5))
case("in.3d", torch.nn.InstanceNorm3d(2), (2, 2, 3, 2, 2))

m = torch.nn.InstanceNorm1d(3, momentum=0.2, affine=True, track_running_stats=True)
affine_init(m)
out["in.track.w"] = m.weight.detach().clone()
out["in.track.b"] = m.bias.detach().clone()
x1 = torch.randn(4, 3, 6) * 2 + 0.5
m(x1)
out["in.track.x1"] = x1
out["in.track.running_mean1"] = m.running_mean.clone()
out["in.track.running_var1"] = m.running_var.clone()
run("in.track", m, (4, 3, 6), "2")
out["in.track.running_mean"] = m.running_mean.clone()
out["in.track.running_var"] = m.running_var.clone()
m.eval()
run("in.track", m, (4, 3, 6))

out = {k: v.contiguous() for k, v in out.items()}
save_file(out, "tests/data/nn/groupnorm_reference.safetensors",
          metadata={"generator": "scripts/make_groupnorm_reference.py", "torch": torch.__version__})
print(len(out), "tensors")
