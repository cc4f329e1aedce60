"""Times the convnet_benchmark networks in PyTorch exactly as samples/benchmark.cpp does
(same layers, batch sizes, dtype; forward, and zero_grad + forward + backward; a device
synchronisation after each iteration; the median), and, given our JSON, prints the ratios.
The input requires a gradient: a Torch-style backward always returns gradInput, the first
layer's included, so PyTorch is made to do the same work rather than skip that pass.

    python3 scripts/bench_torch.py --ours ours.json [--iterations 20] [--warmup 5]
        [--dtype float32] [--benchmark] [--allow-tf32 | --no-tf32] [--json torch.json] [--per-layer]

--per-layer also times each top-level module alone on the input it sees in the network, as
convnet_benchmark --per-layer does, and matches the rows with ours by position.

--data-parallel, under torchrun (torchrun --nproc-per-node N scripts/bench_torch.py
--data-parallel [--nets resnet50] [--batch 64] [--ours dp.json]), is the twin of
`scripts/launch -n N convnet_benchmark --data-parallel --json dp.json`: training steps (forward,
backward, SGD step) per GPU alone, then under DistributedDataParallel (NCCL, 25 MB buckets);
images/s over all GPUs, scaling efficiency, and with --ours the ratio to ours.

PyTorch is a reference to compare against; cudnn-nn does not depend on it.
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn


def conv(i, o, k, s=1, p=0):
    return nn.Conv2d(i, o, k, s, p)


def alexnet():
    return nn.Sequential(
        conv(3, 64, 11, 4, 2), nn.ReLU(True), nn.MaxPool2d(3, 2),
        conv(64, 192, 5, 1, 2), nn.ReLU(True), nn.MaxPool2d(3, 2),
        conv(192, 384, 3, 1, 1), nn.ReLU(True),
        conv(384, 256, 3, 1, 1), nn.ReLU(True),
        conv(256, 256, 3, 1, 1), nn.ReLU(True), nn.MaxPool2d(3, 2),
        nn.Flatten(),
        nn.Dropout(0.5), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(True),
        nn.Dropout(0.5), nn.Linear(4096, 4096), nn.ReLU(True),
        nn.Linear(4096, 1000))


def vgg11():
    layers, i = [], 3
    for v in [64, 'M', 128, 'M', 256, 256, 'M', 512, 512, 'M', 512, 512, 'M']:
        if v == 'M':
            layers.append(nn.MaxPool2d(2, 2))
        else:
            layers += [conv(i, v, 3, 1, 1), nn.ReLU(True)]
            i = v
    layers += [nn.Flatten(), nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(0.5),
               nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(0.5), nn.Linear(4096, 1000)]
    return nn.Sequential(*layers)


class Bottleneck(nn.Module):
    def __init__(self, i, planes, stride):
        super().__init__()
        self.block = nn.Sequential(
            conv(i, planes, 1), nn.BatchNorm2d(planes), nn.ReLU(True),
            conv(planes, planes, 3, stride, 1), nn.BatchNorm2d(planes), nn.ReLU(True),
            conv(planes, planes * 4, 1), nn.BatchNorm2d(planes * 4))
        self.shortcut = None
        if stride != 1 or i != planes * 4:
            self.shortcut = nn.Sequential(conv(i, planes * 4, 1, stride), nn.BatchNorm2d(planes * 4))
        self.relu = nn.ReLU(True)

    def forward(self, x):
        return self.relu(self.block(x) + (x if self.shortcut is None else self.shortcut(x)))


class LSTMNet(nn.Module):
    """convnet_benchmark's lstm row: nn.LSTM's output alone (sequence first), as ours returns."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(512, 512, 2)

    def forward(self, x):
        return self.lstm(x)[0]


def resnet50():
    layers = [conv(3, 64, 7, 2, 3), nn.BatchNorm2d(64), nn.ReLU(True), nn.MaxPool2d(3, 2, 1)]
    i = 64
    for stage, blocks in enumerate([3, 4, 6, 3]):
        planes = 64 << stage
        for b in range(blocks):
            layers.append(Bottleneck(i, planes, 2 if b == 0 and stage > 0 else 1))
            i = planes * 4
    layers += [nn.AvgPool2d(7, 1), nn.Flatten(), nn.Linear(2048, 1000)]
    return nn.Sequential(*layers)


NETS = {
    'L1': (lambda: nn.Sequential(conv(3, 96, 11)), [128, 3, 128, 128]),
    'L2': (lambda: nn.Sequential(conv(64, 128, 9)), [128, 64, 64, 64]),
    'L3': (lambda: nn.Sequential(conv(128, 128, 9)), [128, 128, 32, 32]),
    'L4': (lambda: nn.Sequential(conv(128, 128, 7)), [128, 128, 16, 16]),
    'L5': (lambda: nn.Sequential(conv(384, 384, 3)), [128, 384, 13, 13]),
    'alexnet': (alexnet, [128, 3, 224, 224]),
    'vgg11': (vgg11, [64, 3, 224, 224]),
    'resnet50': (resnet50, [32, 3, 224, 224]),
    'lstm': (LSTMNet, [50, 64, 512]),  # 2 layers, hidden 512, sequence 50, batch 64
}


def time_ms(step, iterations, warmup):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    out = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) * 1000)
    return statistics.median(out)


def per_layer(model, x, args, ours_layers):
    """Times each child of a Sequential alone: forward under no_grad, and forward + backward
    with the child's input requiring a gradient (as ours always computes gradInput)."""
    rows = []
    for i, m in enumerate(model):
        # an in-place ReLU cannot write into a leaf that requires grad; out of place costs the same
        if getattr(m, 'inplace', False):
            m.inplace = False
        xi = x.detach().requires_grad_()
        with torch.no_grad():
            y = m(xi)
            fwd = time_ms(lambda: m(xi), args.iterations, args.warmup)
        g = torch.rand_like(y) * 2 - 1

        def step():
            m.zero_grad(set_to_none=False)
            xi.grad = None
            m(xi).backward(g)
        train = time_ms(step, args.iterations, args.warmup)
        name = str(m).split('\n')[0]
        rows.append({'module': name, 'forward_ms': fwd, 'forward_backward_ms': train})
        line = f"  {'(%d)' % (i + 1):5} {name[:40]:40} {fwd:10.3f}"
        if i < len(ours_layers):
            o = ours_layers[i]
            line += f" {o['forward_ms']:9.3f} {fwd / o['forward_ms']:6.2f}   {train:11.3f} " \
                    f"{o['forward_backward_ms']:10.3f} {train / o['forward_backward_ms']:6.2f}  {o['module'][:30]}"
        print(line, flush=True)
        x = y
    return rows


def data_parallel(args):
    """The --data-parallel mode (see the module docstring); run under torchrun."""
    import os
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    local = int(os.environ.get('LOCAL_RANK', 0))
    torch.cuda.set_device(local)
    dist.init_process_group('nccl', device_id=torch.device('cuda', local))
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device('cuda', local)
    dtype = getattr(torch, args.dtype)
    name = args.nets.split(',')[0] if args.nets else 'resnet50'
    make, shape = NETS[name]
    shape = list(shape)
    if args.batch:
        shape[0 if name != 'lstm' else 1] = args.batch
    batch = shape[0 if name != 'lstm' else 1]
    torch.manual_seed(1)
    model = make().to(dev, dtype).train()
    torch.manual_seed(1 + rank)
    x = (torch.rand(shape, device=dev, dtype=dtype) * 2 - 1).requires_grad_()
    g = torch.rand_like(model(x)) * 2 - 1

    def step_ms(m):
        opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)

        def step():
            opt.zero_grad(set_to_none=False)
            x.grad = None
            m(x).backward(g)
            opt.step()
        t = torch.tensor([time_ms(step, args.iterations, args.warmup)], device=dev, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
        return t.item()
    alone = step_ms(model)
    dist.barrier()
    parallel = step_ms(DDP(model, device_ids=[local]))
    ips_alone = batch / (alone / 1000)
    ips = world * batch / (parallel / 1000)
    eff = ips / (world * ips_alone)
    if rank == 0:
        print(f'torch {torch.__version__} DDP {name}, {args.dtype}, {world} GPU(s), batch {batch} per GPU: '
              f'alone {alone:.3f} ms/step ({ips_alone:.0f} img/s per GPU), DDP {parallel:.3f} ms/step, '
              f'{ips:.0f} img/s in all, scaling efficiency {eff:.3f}')
        if args.ours:
            with open(args.ours) as f:
                o = json.load(f)
            print(f"ours: {o['images_per_second']:.0f} img/s, scaling efficiency {o['scaling_efficiency']:.3f}; "
                  f"ours / torch images/s {o['images_per_second'] / ips:.2f}")
        if args.json:
            with open(args.json, 'w') as f:
                json.dump({'mode': 'data_parallel', 'torch': torch.__version__, 'network': name, 'dtype': args.dtype,
                           'world_size': world, 'batch_per_gpu': batch, 'alone_step_ms': alone,
                           'ddp_step_ms': parallel, 'images_per_second': ips, 'scaling_efficiency': eff}, f, indent=2)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--ours', help="convnet_benchmark's --json output, for ratios")
    ap.add_argument('--nets', default='')
    ap.add_argument('--iterations', type=int, default=20)
    ap.add_argument('--warmup', type=int, default=5)
    ap.add_argument('--dtype', default='float32', choices=['float32', 'float16', 'bfloat16'])
    ap.add_argument('--benchmark', action='store_true', help='torch.backends.cudnn.benchmark = True')
    ap.add_argument('--no-tf32', action='store_true')
    ap.add_argument('--json')
    ap.add_argument('--per-layer', action='store_true', help='also time each top-level module alone')
    ap.add_argument('--data-parallel', action='store_true', help='DDP training steps under torchrun')
    ap.add_argument('--batch', type=int, default=0, help='--data-parallel: the batch per GPU')
    args = ap.parse_args()
    if args.data_parallel:
        torch.backends.cudnn.benchmark = args.benchmark
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = not args.no_tf32
        return data_parallel(args)
    torch.backends.cudnn.benchmark = args.benchmark
    torch.backends.cudnn.allow_tf32 = not args.no_tf32
    torch.backends.cuda.matmul.allow_tf32 = not args.no_tf32
    ours = {}
    if args.ours:
        with open(args.ours) as f:
            ours = {r['network']: r for r in json.load(f)['results']}
    names = args.nets.split(',') if args.nets else (list(ours) or list(NETS))
    dtype = getattr(torch, args.dtype)
    dev = torch.device('cuda')
    print(f'torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}, '
          f'{args.dtype}, cudnn.benchmark={args.benchmark}, tf32={not args.no_tf32}')
    print(f"{'network':9} {'torch fwd':>10} {'ours fwd':>9} {'ratio':>6}   {'torch train':>11} {'ours train':>10} {'ratio':>6}")
    results = []
    for name in names:
        make, shape = NETS[name]
        if name in ours:
            shape = ours[name]['input']
        torch.manual_seed(1)
        model = make().to(dev, dtype).train()
        x = (torch.rand(shape, device=dev, dtype=dtype) * 2 - 1).requires_grad_()
        g = torch.rand_like(model(x)) * 2 - 1
        with torch.no_grad():  # a forward pass keeps no graph, as ours keeps none
            fwd = time_ms(lambda: model(x), args.iterations, args.warmup)

        def train_step():
            model.zero_grad(set_to_none=False)
            x.grad = None
            model(x).backward(g)
        train = time_ms(train_step, args.iterations, args.warmup)
        r = {'network': name, 'input': shape, 'forward_ms': fwd, 'forward_backward_ms': train}
        results.append(r)
        line = f'{name:9} {fwd:10.3f}'
        if name in ours:
            o = ours[name]
            # ratio > 1: cudnn-nn is faster
            line += f" {o['forward_ms']:9.3f} {fwd / o['forward_ms']:6.2f}   {train:11.3f} " \
                    f"{o['forward_backward_ms']:10.3f} {train / o['forward_backward_ms']:6.2f}"
        else:
            line += f" {'':9} {'':6}   {train:11.3f}"
        print(line, flush=True)
        if args.per_layer and isinstance(model, nn.Sequential):
            r['layers'] = per_layer(model, x.detach(), args, ours.get(name, {}).get('layers', []))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'torch': torch.__version__, 'dtype': args.dtype, 'results': results}, f, indent=2)


if __name__ == '__main__':
    main()
