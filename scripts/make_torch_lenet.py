"""Writes tests/data/torch_lenet.safetensors (a trained-looking torch.nn.Sequential's
state_dict) and tests/data/torch_lenet_io.safetensors (a fixed input and PyTorch's output),
so tests/convert/test_ModelFile.cpp loads weights written by another library into the
same network built from nn modules and compares the outputs.
Run from the repository root: python3 scripts/make_torch_lenet.py

The keys need no renaming: torch.nn.Sequential names its children 0, 1, ... as our
Sequential does, and the parameter names and layouts are the same (conv weight
[out x in x kH x kW], Linear weight [out x in], BatchNorm weight/bias/running_mean/
running_var). Only num_batches_tracked is dropped (the file predates nn's counter; it is optional
when loading, so the file still checks that a PyTorch state without it loads). Flatten
(index 4) and the other parameterless modules hold nothing."""
import torch
from safetensors.torch import save_file

torch.manual_seed(20261205)
net = torch.nn.Sequential(
    torch.nn.Conv2d(1, 4, 3, padding=1),
    torch.nn.BatchNorm2d(4),
    torch.nn.ReLU(),
    torch.nn.MaxPool2d(2),
    torch.nn.Flatten(),
    torch.nn.Linear(4 * 4 * 4, 3),
)
bn = net[1]
with torch.no_grad():
    # non-trivial statistics and affine parameters, so a mix-up of the four shows
    bn.running_mean.copy_(torch.tensor([0.1, -0.2, 0.3, 0.05]))
    bn.running_var.copy_(torch.tensor([0.5, 1.5, 0.8, 2.0]))
    bn.weight.copy_(torch.tensor([1.2, 0.7, -0.9, 1.1]))
    bn.bias.copy_(torch.tensor([0.05, -0.1, 0.2, 0.0]))
net.eval()

state = {k: v.contiguous() for k, v in net.state_dict().items() if not k.endswith("num_batches_tracked")}
x = torch.rand(2, 1, 8, 8) * 2 - 1
with torch.no_grad():
    y = net(x)

save_file(state, "tests/data/torch_lenet.safetensors", metadata={"format": "pt"})
save_file({"input": x, "output": y.contiguous()}, "tests/data/torch_lenet_io.safetensors", metadata={"format": "pt"})
print({k: tuple(v.shape) for k, v in state.items()}, tuple(y.shape))
