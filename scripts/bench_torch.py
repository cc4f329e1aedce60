"""Times the convnet_benchmark networks in PyTorch exactly as samples/benchmark.cpp does
(same layers, batch sizes, dtype; forward, and zero_grad + forward + backward; a device
synchronisation after each iteration; the median), and, given our JSON, prints the ratios.
The input requires a gradient only where ours computed the first module's gradInput
(convnet_benchmark --input-grad, recorded in its JSON), so both sides do the same work.
Device memory per row, from an empty cache: torch.cuda.max_memory_allocated and
max_memory_reserved against our caching allocator's allocated and reserved peaks, over the timed
iterations (after the warm-up: "steady", the table's MiB columns) and over the whole row
(algorithm searches and CUDA-graph capture included: "peak"), all four in the JSON and on the
row's memory line with the ratios ours / torch (issue 28's goal: steady allocated <= 1.1,
peak allocated <= 1.5).

    python3 scripts/bench_torch.py --ours ours.json [--iterations 20] [--warmup 5]
        [--dtype float32] [--benchmark] [--allow-tf32 | --no-tf32] [--json torch.json] [--per-layer]
        [--channels-last] [--peak-tflops X] [--peak-gbps X]

--channels-last runs the forward and fwd+bwd rows channels-last too (model and 4-D input in
torch.channels_last), as convnet_benchmark --channels-last does; it is set by itself when
ours ran with it (recorded in its JSON). The step rows are channels-last either way.

--per-layer also times each top-level module alone on the input it sees in the network, as
convnet_benchmark --per-layer does, and matches the rows with ours by position.

--data-parallel, under torchrun (torchrun --nproc-per-node N scripts/bench_torch.py
--data-parallel [--nets resnet50] [--batch 64] [--ours dp.json]), is the twin of
`scripts/launch -n N convnet_benchmark --data-parallel --json dp.json`: training steps (forward,
backward, SGD step) per GPU alone, then under DistributedDataParallel (NCCL, 25 MB buckets);
images/s over all GPUs, scaling efficiency, and with --ours the ratio to ours.

Rows where ours has a step time (convnet_benchmark --step) also get PyTorch's whole training
step (forward, cross-entropy, backward, optimizer; the lstm row: MSE of its sequence output
against zeros, as ours) in its best configuration: channels-last,
the same dtype, the fused optimizer where it exists, eager and captured as one CUDA graph,
the faster of the two.

--amp float16|bfloat16 (set by itself when ours ran convnet_benchmark --step --amp T, as
recorded in its JSON): the forward and fwd+bwd rows run in that dtype, and the step is
PyTorch's mixed-precision training step: a float32 model (channels-last), torch.autocast to T,
torch.amp.GradScaler for float16 (none for bfloat16, as the recipes do), the fused SGD where
it exists (the scaler then unscales inside the optimizer, no host synchronisation), eager and
captured as one CUDA graph, the faster of the two.

    python3 scripts/bench_torch.py --cpu [--ours-bin build/samples/convnet_benchmark] [--threads 2]
        [--cpu-nets fashion,resnet50]

compares the Fashion-MNIST sample's network and batch (128) on the CPU in one run: it runs
convnet_benchmark --backend nn --nets fashion --step with OMP_NUM_THREADS=threads, then the
same in PyTorch with torch.set_num_threads(threads), and prints the ratios. A second table
compares the forward of ResNet-50 at batch 1, a CPU inference user's case: ours in evaluation
mode (convnet_benchmark --nets resnet50 --batch 1 --eval) against PyTorch's model.eval() under
torch.no_grad(), which is how such a user runs it (the train-mode forwards are printed beside
them for reference; --cpu-nets fashion leaves the row out; --rounds K alternates the two sides K
times and reports their medians, for a host whose load comes in bursts). Both sides run on
the same `threads` cores (one per physical core where the topology says so), as `taskset`
pins a training script, and the PyTorch side never touches torch.cuda (see cpu_main).

    python3 scripts/bench_torch.py --cpu --fashion-data DIR [--threads 2]

adds the comparison the CPU goal is stated in: one whole epoch of training on the real
Fashion-MNIST images in DIR (the idx .gz files), ours `fashion_mnist --data DIR --epochs 1`
(the sample next to --ours-bin; its "epoch 1 time" line) against PyTorch's training loop as
the anchor script writes it (shuffled batches of 128, Adam 2e-3, cross-entropy), training only.
The step rows above use random inputs on both sides, and PyTorch's CPU step is slower on
them than on the real images (about 10-25 %; ours is not), so the epoch is the fair figure.

Roofline: where ours' JSON has the counted work of a row (convnet_benchmark's FLOPs and
minimum bytes per pass, samples::count_work, Note [Counted work] in samples/CountedWork.cpp),
each pass (forward, fwd+bwd, step; the CPU tables' rows too) gets a line of achieved TFLOP/s
and GB/s for both sides' times over that same work, with their share of the peaks ours
recorded (--peak-tflops and --peak-gbps there: an H200's measured 790 TFLOP/s for 16-bit,
495 for float32 on TF32, 67 without, and 4300 GB/s; none on the CPU), or of --peak-tflops and
--peak-gbps given here. The torch JSON gets the rates as "<pass>_tflops" and "<pass>_gbps".

PyTorch is a reference to compare against; cudnn-nn does not depend on it.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time



def pick_cores(n):
    """n of the CPUs this process may run on, one per physical core while there are enough
    (hyper-threads of one core would share its units), lowest first."""
    allowed = sorted(os.sched_getaffinity(0))
    chosen, cores = [], set()
    for cpu in allowed:
        try:
            with open(f'/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list') as f:
                core = f.read().strip()
        except OSError:
            core = str(cpu)
        if core not in cores:
            cores.add(core)
            chosen.append(cpu)
    chosen += [c for c in allowed if c not in chosen]
    return chosen[:n]


if '--cpu' in sys.argv:  # OpenMP reads it once, when torch loads
    _threads = sys.argv[sys.argv.index('--threads') + 1] if '--threads' in sys.argv else '2'
    os.environ['OMP_NUM_THREADS'] = _threads
    # Both sides on the same cores (convnet_benchmark inherits them), as a user's
    # `taskset -c` run of a training script: unpinned, the threads of either side may share
    # a core with each other or with other work on a large host.
    os.sched_setaffinity(0, pick_cores(int(_threads)))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


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


def fashion():
    """samples/fashion_mnist's network (samples::fashion_mnist_network, 256 hidden units)."""
    return nn.Sequential(
        conv(1, 32, 3, 1, 1), nn.BatchNorm2d(32), nn.ReLU(True), nn.MaxPool2d(2, 2),
        conv(32, 64, 3, 1, 1), nn.BatchNorm2d(64), nn.ReLU(True), nn.MaxPool2d(2, 2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 256), nn.ReLU(True), nn.Dropout(0.25), nn.Linear(256, 10))


NETS_CLASSES = {'fashion': 10}  # the rest end in 1000 scores (or are no classifiers)

NETS = {
    'L1': (lambda: nn.Sequential(conv(3, 96, 11)), [128, 3, 128, 128]),
    'L2': (lambda: nn.Sequential(conv(64, 128, 9)), [128, 64, 64, 64]),
    'L3': (lambda: nn.Sequential(conv(128, 128, 9)), [128, 128, 32, 32]),
    'L4': (lambda: nn.Sequential(conv(128, 128, 7)), [128, 128, 16, 16]),
    'L5': (lambda: nn.Sequential(conv(384, 384, 3)), [128, 384, 13, 13]),
    'alexnet': (alexnet, [128, 3, 224, 224]),
    'vgg11': (vgg11, [64, 3, 224, 224]),
    'resnet50': (resnet50, [32, 3, 224, 224]),
    # ours: the same ResNet-50 wired as an nn::Graph (samples/Networks.cpp); PyTorch has one model
    'resnet50-graph': (resnet50, [32, 3, 224, 224]),
    'lstm': (LSTMNet, [50, 64, 512]),  # 2 layers, hidden 512, sequence 50, batch 64
    'fashion': (fashion, [128, 1, 28, 28]),
}


def sync():
    # torch.cuda.is_initialized() alone: torch.cuda.is_available() would initialise the CUDA
    # driver inside the --cpu comparison's timed process, which a CPU training loop never does
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()


# peak bytes of the current row, allocated and reserved: overall, and over the timed iterations
MEM = {'row': 0, 'steady': 0, 'row_reserved': 0, 'steady_reserved': 0}


def time_ms(step, iterations, warmup):
    for _ in range(warmup):
        step()
    sync()
    cuda = torch.cuda.is_initialized()
    if cuda:  # as convnet_benchmark: the steady-state peak excludes warm-up and searches
        MEM['row'] = max(MEM['row'], torch.cuda.max_memory_allocated())
        MEM['row_reserved'] = max(MEM['row_reserved'], torch.cuda.max_memory_reserved())
        torch.cuda.reset_peak_memory_stats()
    out = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        step()
        sync()
        out.append((time.perf_counter() - t0) * 1000)
    if cuda:
        MEM['steady'] = max(MEM['steady'], torch.cuda.max_memory_allocated())
        MEM['steady_reserved'] = max(MEM['steady_reserved'], torch.cuda.max_memory_reserved())
        MEM['row'] = max(MEM['row'], MEM['steady'])
        MEM['row_reserved'] = max(MEM['row_reserved'], MEM['steady_reserved'])
    return statistics.median(out)


def make_optimizer(model, adam, dev, capturable=False):
    """convnet_benchmark's: SGD lr 1e-3 momentum 0.9 (Adam lr 2e-3 for fashion); on the GPU the
    fused implementation where this PyTorch has it for the dtype, else the foreach one."""
    params = list(model.parameters())
    cls, kw = (torch.optim.Adam, {'lr': 2e-3}) if adam else (torch.optim.SGD, {'lr': 1e-3, 'momentum': 0.9})
    if dev.type == 'cuda':
        if adam and capturable:
            kw['capturable'] = True
        try:
            return cls(params, fused=True, **kw), 'fused'
        except (RuntimeError, TypeError, ValueError):
            return cls(params, foreach=True, **kw), 'foreach'
    return cls(params, **kw), 'default'


def time_step_variant(opt, body, graphed, args):
    """One training step, zero_grad then body(): timed eagerly, or captured once as a CUDA graph
    (after three steps on a side stream, PyTorch's recipe) and its replays timed."""
    def step():
        opt.zero_grad(set_to_none=True)
        body()
    if not graphed:
        return time_ms(step, args.iterations, args.warmup)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        body()
    return time_ms(graph.replay, args.iterations, args.warmup)


def step_loss(model, shape, dtype, dev, classes):
    """The step's loss, as convnet_benchmark's step_loss: cross-entropy against fixed labels for
    [batch x classes] scores; the lstm row's sequence output [T x batch x hidden] against zeros
    by MSE (float32 in the amp step, whose loss autocast computes in float32)."""
    if isinstance(model, LSTMNet):
        return nn.MSELoss(), torch.zeros(shape[0], shape[1], model.lstm.hidden_size, device=dev, dtype=dtype)
    return nn.CrossEntropyLoss(), (torch.arange(shape[0], device=dev) * 7) % classes


def train_step_ms(make, shape, dtype, dev, classes, adam, args):
    """The whole step: zero_grad, forward, cross-entropy, backward, optimizer step. On the GPU
    channels-last (4-D inputs), eager and as one captured CUDA graph; returns the faster,
    with what was used."""
    channels_last = dev.type == 'cuda' and len(shape) == 4
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    results = {}
    for graphed in ([False, True] if dev.type == 'cuda' else [False]):
        torch.manual_seed(1)
        model = make().to(dev, dtype).train().to(memory_format=fmt)
        loss_fn, target = step_loss(model, shape, dtype, dev, classes)
        x = (torch.rand(shape, device=dev, dtype=dtype) * 2 - 1).contiguous(memory_format=fmt)
        opt, kind = make_optimizer(model, adam, dev, capturable=graphed)

        def body():
            loss_fn(model(x), target).backward()
            opt.step()
        try:
            results['graph' if graphed else 'eager'] = (time_step_variant(opt, body, graphed, args), kind)
        except RuntimeError as e:  # a capture this PyTorch cannot do: eager only
            print(f'  ({"graph" if graphed else "eager"} step failed: {str(e).splitlines()[0][:100]})', flush=True)
        del model, opt, x
    best = min(results, key=lambda k: results[k][0])
    how = f"{best}, {results[best][1]} optimizer{', channels-last' if channels_last else ''}"
    return results[best][0], how, {k: v[0] for k, v in results.items()}


def amp_train_step_ms(make, shape, amp, dev, classes, args):
    """The mixed-precision step as PyTorch users write it: autocast + GradScaler (float16) over a
    float32 model, channels-last, SGD lr 1e-3 momentum 0.9 as ours; eager and as one captured
    CUDA graph; returns the faster, with what was used."""
    fmt = torch.channels_last if len(shape) == 4 else torch.contiguous_format
    results = {}
    for graphed in (False, True):
        torch.manual_seed(1)
        model = make().to(dev).train().to(memory_format=fmt)
        loss_fn, target = step_loss(model, shape, torch.float32, dev, classes)
        x = (torch.rand(shape, device=dev, dtype=amp) * 2 - 1).contiguous(memory_format=fmt)
        opt, kind = make_optimizer(model, False, dev)
        scaler = torch.amp.GradScaler('cuda', enabled=amp == torch.float16)

        def body():
            with torch.autocast('cuda', dtype=amp):
                loss = loss_fn(model(x), target)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()

        try:
            results['graph' if graphed else 'eager'] = (time_step_variant(opt, body, graphed, args), kind)
        except RuntimeError as e:  # a capture this PyTorch cannot do: eager only
            print(f'  ({"graph" if graphed else "eager"} amp step failed: {str(e).splitlines()[0][:100]})',
                  flush=True)
        del model, opt, x
    best = min(results, key=lambda k: results[k][0])
    how = f"{best}, autocast {str(amp).replace('torch.', '')}" + \
        (', GradScaler' if amp == torch.float16 else '') + f", {results[best][1]} SGD" + \
        (', channels-last' if len(shape) == 4 else '')
    return results[best][0], how, {k: v[0] for k, v in results.items()}


def per_layer(model, x, args, ours_layers):
    """Times each child of a Sequential alone: forward under no_grad, and forward + backward
    with the child's input requiring a gradient (the first child's only with --input-grad, as ours);
    where ours counted each child's work, both sides' TFLOP/s over it."""
    rows = []
    for i, m in enumerate(model):
        # an in-place ReLU cannot write into a leaf that requires grad; out of place costs the same
        if getattr(m, 'inplace', False):
            m.inplace = False
        xi = x.detach().requires_grad_(i > 0 or args.input_grad)  # as ours: the first needs none
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
            set_rates(rows[-1], 'forward', fwd, o)
            set_rates(rows[-1], 'forward_backward', train, o)
            if 'forward_tflops' in rows[-1]:  # TFLOP/s over our counted work, torch / ours
                line += f"  TFLOP/s fwd {rows[-1]['forward_tflops']:.3g}/{o['forward_tflops']:.3g}, " \
                        f"fwd+bwd {rows[-1]['forward_backward_tflops']:.3g}/{o['forward_backward_tflops']:.3g}"
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


def run_ours_cpu(args, extra=('--nets', 'fashion', '--step')):
    """convnet_benchmark --backend nn on one row (the fashion step by default), with args.threads
    OpenMP threads."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'ours.json')
        cmd = [args.ours_bin, '--backend', 'nn', *extra, '--json', out,
               '--iterations', str(args.iterations), '--warmup', str(args.warmup)]
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
        print('$ OMP_NUM_THREADS=%d %s' % (args.threads, ' '.join(cmd)), flush=True)
        subprocess.run(cmd, env=env, check=True)
        with open(out) as f:
            return json.load(f)


def loop_ms(make, shape, steps=60, batches=10):
    """PyTorch's step as a training script runs it (the anchor's torch_fashion.py): distinct
    shuffled batches, default Adam, one timing over `steps` steps after 5 untimed ones; ms per
    step. A check on the median step above: the two should agree."""
    torch.manual_seed(1)
    data = torch.rand(batches * shape[0], *shape[1:])
    data = (data - data.mean()) / data.std()
    labels = torch.randint(0, 10, (len(data),))
    model = make().train()
    opt = torch.optim.Adam(model.parameters(), 2e-3)
    loss_fn = nn.CrossEntropyLoss()
    perm = torch.randperm(len(data))
    t0 = 0
    for i in range(steps + 5):
        if i == 5:
            t0 = time.perf_counter()
        b = perm[(i % batches) * shape[0]:(i % batches + 1) * shape[0]]
        opt.zero_grad()
        loss_fn(model(data[b]), labels[b]).backward()
        opt.step()
    return (time.perf_counter() - t0) * 1000 / steps


def cpu_main(args):
    torch.set_num_threads(args.threads)
    ours = {r['network']: r for r in run_ours_cpu(args)['results']}['fashion']
    make, shape = NETS['fashion']
    dev = torch.device('cpu')
    print(f'torch {torch.__version__}, CPU, {torch.get_num_threads()} threads '
          f'(OMP_NUM_THREADS={os.environ.get("OMP_NUM_THREADS")}) on cores {sorted(os.sched_getaffinity(0))}, '
          f'float32, batch {shape[0]}')
    torch.manual_seed(1)
    model = make().train()
    x = torch.rand(shape) * 2 - 1
    g = torch.rand_like(model(x)) * 2 - 1
    with torch.no_grad():
        fwd = time_ms(lambda: model(x), args.iterations, args.warmup)

    def train_step():
        model.zero_grad(set_to_none=False)
        model(x).backward(g)
    train = time_ms(train_step, args.iterations, args.warmup)
    step, how, _ = train_step_ms(make, shape, torch.float32, dev, 10, True, args)
    loop = loop_ms(make, shape)
    print(f"{'fashion':9} {'torch ms':>9} {'ours ms':>9} {'ratio':>6}")
    peaks = (args.peak_tflops or 0, args.peak_gbps or 0)  # the CPU has none unless given
    roofs = []
    for what, key, t, o in [('forward', 'forward', fwd, ours['forward_ms']),
                            ('fwd+bwd', 'forward_backward', train, ours['forward_backward_ms']),
                            ('step', 'step', step, ours['step_ms'])]:
        print(f'{what:9} {t:9.3f} {o:9.3f} {t / o:6.2f}')
        roofs.append(roofline_line(what, key, t, ours, peaks))
    for roof in filter(None, roofs):
        print(roof)
    print(f"step = zero_grad + forward + cross-entropy + backward + Adam ({how}); "
          f"images/s: torch {shape[0] / step * 1000:.0f}, ours {shape[0] / ours['step_ms'] * 1000:.0f}; "
          f"torch as a training script (shuffled batches, one timing): {loop:.3f} ms, "
          f"{shape[0] / loop * 1000:.0f} images/s")
    r50 = cpu_resnet50_b1(args) if 'resnet50' in args.cpu_nets.split(',') else None
    epoch = cpu_fashion_epoch(args) if args.fashion_data else None
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'torch': torch.__version__, 'threads': args.threads, 'cores': sorted(os.sched_getaffinity(0)),
                       'forward_ms': fwd, 'forward_backward_ms': train, 'step_ms': step, 'loop_step_ms': loop,
                       'ours': ours, 'resnet50_b1': r50, 'fashion_epoch': epoch}, f, indent=2)


def load_fashion(data):
    """The training images of Fashion-MNIST (normalised as the sample does) and their labels."""
    import gzip
    import numpy as np

    def idx(name, offset):
        with gzip.open(os.path.join(data, name)) as f:
            return np.frombuffer(f.read(), np.uint8, offset=offset)
    x = torch.tensor(idx('train-images-idx3-ubyte.gz', 16).reshape(-1, 1, 28, 28), dtype=torch.float32) / 255
    y = torch.tensor(idx('train-labels-idx1-ubyte.gz', 8).astype(np.int64))
    return (x - x.mean()) / x.std(), y


def cpu_fashion_epoch(args):
    """One epoch of training on the real images, each side as a user runs it: ours the sample
    (its per-epoch training time), PyTorch the anchor's loop (shuffled batches, default Adam)."""
    sample = os.path.join(os.path.dirname(args.ours_bin), 'fashion_mnist')
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sample, '--data', args.fashion_data, '--epochs', '1', '--save', os.path.join(tmp, 'model')]
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
        print('$ OMP_NUM_THREADS=%d %s' % (args.threads, ' '.join(cmd)), flush=True)
        out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    ours = float(re.search(r'^epoch 1 time ([0-9.]+) s', out, re.M).group(1))
    x, y = load_fashion(args.fashion_data)
    make, shape = NETS['fashion']
    torch.manual_seed(1)
    model = make().train()
    opt = torch.optim.Adam(model.parameters(), 2e-3)
    loss_fn = nn.CrossEntropyLoss()
    perm = torch.randperm(len(x))
    t0 = time.perf_counter()
    for i in range(0, len(x), shape[0]):
        b = perm[i:i + shape[0]]
        opt.zero_grad()
        loss_fn(model(x[b]), y[b]).backward()
        opt.step()
    theirs = time.perf_counter() - t0
    print(f'fashion epoch (60,000 real images, training only): torch {theirs:.2f} s, ours {ours:.2f} s, '
          f'ratio {theirs / ours:.2f}')
    return {'torch_epoch_s': theirs, 'ours_epoch_s': ours}


def cpu_resnet50_b1(args):
    """The ResNet-50 batch-1 forward on the CPU: ours (nn, --eval) against PyTorch's eval() forward
    under no_grad, the fair comparison for inference; both train-mode forwards for reference.
    With --rounds K the two sides alternate K times (ours, then PyTorch's, K times over) and the
    table gives each side's median over the rounds, each round's ratio printed: on a shared host
    a burst of load then falls on both sides instead of on one."""
    make, _ = NETS['resnet50']
    torch.manual_seed(1)
    model = make()
    x = torch.rand(1, 3, 224, 224) * 2 - 1
    rounds = []
    for r in range(max(1, args.rounds)):
        ours = run_ours_cpu(args, ('--nets', 'resnet50', '--batch', '1', '--eval'))['results'][0]
        with torch.no_grad():
            model.eval()
            ev = time_ms(lambda: model(x), args.iterations, args.warmup)
            model.train()
            tr = time_ms(lambda: model(x), args.iterations, args.warmup)
        rounds.append({'torch_eval_forward_ms': ev, 'torch_train_forward_ms': tr, 'ours': ours})
        if args.rounds > 1:
            print(f'round {r + 1}: eval forward torch {ev:.3f} ms, ours {ours["eval_forward_ms"]:.3f} ms, '
                  f'ratio {ev / ours["eval_forward_ms"]:.2f}')
    ev = statistics.median([r['torch_eval_forward_ms'] for r in rounds])
    tr = statistics.median([r['torch_train_forward_ms'] for r in rounds])
    ours_ev = statistics.median([r['ours']['eval_forward_ms'] for r in rounds])
    ours_tr = statistics.median([r['ours']['forward_ms'] for r in rounds])
    print(f"{'resnet50 b1':15} {'torch ms':>9} {'ours ms':>9} {'ratio':>6}" +
          (f'   (medians of {len(rounds)} alternating rounds)' if len(rounds) > 1 else ''))
    peaks = (args.peak_tflops or 0, args.peak_gbps or 0)
    roofs = []
    for what, key, t, o in [('forward (eval)', 'eval_forward', ev, ours_ev),
                            ('forward (train)', 'forward', tr, ours_tr)]:
        print(f'{what:15} {t:9.3f} {o:9.3f} {t / o:6.2f}')
        roofs.append(roofline_line(key.replace('_forward', ''), key, t, rounds[-1]['ours'], peaks, ours_ms=o))
    for roof in filter(None, roofs):
        print(roof)
    print('eval: batch norm on running statistics, PyTorch under no_grad (an inference user\'s forward); '
          'train: batch statistics (ours computes no gradient in either)')
    return {'torch_eval_forward_ms': ev, 'torch_train_forward_ms': tr, 'ours_eval_forward_ms': ours_ev,
            'ours_forward_ms': ours_tr, 'rounds': rounds, 'ours': rounds[-1]['ours']}


def rates(o, key, ms):
    """(TFLOP/s, GB/s) of a pass of `ms` milliseconds doing our counted work for pass `key`
    ('forward', 'forward_backward', 'step', 'eval_forward') of our JSON row `o`; None where
    that row has no count (an older JSON) or there is no time."""
    if not o or f'{key}_flops' not in o or not ms:
        return None
    return o[f'{key}_flops'] / ms / 1e9, o[f'{key}_bytes'] / ms / 1e6


def share(value, peak):
    return f' ({100 * value / peak:.1f}%)' if peak else ''


def rate_text(r, peaks):
    return f'{r[0]:.3g} TFLOP/s{share(r[0], peaks[0])}, {r[1]:.3g} GB/s{share(r[1], peaks[1])}'


def roofline_line(what, key, torch_ms, o, peaks, ours_ms=None):
    """A pass's roofline line: our counted work, and the rates it makes of torch's time and ours
    (ours_ms, else the row's own '<key>_ms'); None where ours counted nothing."""
    t = rates(o, key, torch_ms)
    if t is None:
        return None
    u = rates(o, key, ours_ms if ours_ms is not None else o.get(f'{key}_ms'))
    line = f"  roofline {what:8} {o[f'{key}_flops'] / 1e9:9.3f} GFLOP {o[f'{key}_bytes'] / 1e9:8.4f} GB: " \
           f"torch {rate_text(t, peaks)}"
    if u is not None:
        line += f'; ours {rate_text(u, peaks)}'
    return line


def set_rates(r, key, ms, o):
    """The torch row's rates over our counted work (its JSON)."""
    t = rates(o, key, ms)
    if t is not None:
        r[f'{key}_tflops'], r[f'{key}_gbps'] = t


def roofline_peaks(args, doc):
    """(TFLOP/s, GB/s) to share against: --peak-tflops / --peak-gbps, else those ours recorded
    (0: none, the rates printed alone)."""
    return (args.peak_tflops or doc.get('peak_tflops') or 0, args.peak_gbps or doc.get('peak_gbps') or 0)


def mib(nbytes):
    return f'{nbytes / 2**20:.0f}'


MEMORY_KEYS = [('steady', 'steady_device_bytes', 'steady_reserved_bytes'),
               ('peak', 'peak_device_bytes', 'peak_reserved_bytes')]


def memory_line(r, o):
    """The row's device memory, MiB allocated / reserved, torch's and ours, with ours / torch."""
    parts = []
    for what, alloc, reserved in MEMORY_KEYS:
        part = f'{what} torch {mib(r[alloc])}/{mib(r[reserved])}'
        if o and alloc in o:
            part += f", ours {mib(o[alloc])}/{mib(o[reserved]) if reserved in o else '-'}"
            if r[alloc]:
                part += f' (x{o[alloc] / r[alloc]:.2f}'
                part += f' / x{o[reserved] / r[reserved]:.2f})' if reserved in o and r[reserved] else ')'
        parts.append(part)
    return '  memory MiB allocated/reserved: ' + '; '.join(parts) + (' (x: ours / torch)' if o else '')


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
    ap.add_argument('--input-grad', action='store_true',
                    help="the input requires a gradient (set by itself when ours ran with --input-grad)")
    ap.add_argument('--step', action='store_true', help='also time the whole training step (set by ours\' step rows)')
    ap.add_argument('--channels-last', action='store_true',
                    help='forward and fwd+bwd rows channels-last (set by itself when ours ran with --channels-last)')
    ap.add_argument('--amp', choices=['float16', 'bfloat16'],
                    help='the step in mixed precision (autocast + GradScaler); set by ours\' JSON (--amp)')
    ap.add_argument('--cpu', action='store_true', help='the Fashion-MNIST comparison on the CPU (see above)')
    ap.add_argument('--threads', type=int, default=2, help='--cpu: OpenMP threads on both sides')
    ap.add_argument('--ours-bin', default='build/samples/convnet_benchmark', help='--cpu: our benchmark binary')
    ap.add_argument('--rounds', type=int, default=1,
                    help='--cpu: alternate the ResNet-50 batch-1 row this many times, medians reported')
    ap.add_argument('--cpu-nets', default='fashion,resnet50',
                    help='--cpu: fashion (always) and resnet50 (the batch-1 eval forward row)')
    ap.add_argument('--peak-tflops', type=float, default=0,
                    help='the roofline\'s compute peak (default: the one in --ours\' JSON; none on the CPU)')
    ap.add_argument('--peak-gbps', type=float, default=0,
                    help='the roofline\'s memory peak (default: the one in --ours\' JSON; none on the CPU)')
    ap.add_argument('--fashion-data', metavar='DIR',
                    help='--cpu: also one epoch of training on these Fashion-MNIST files, ours against PyTorch')
    args = ap.parse_args()
    if args.data_parallel:
        torch.backends.cudnn.benchmark = args.benchmark
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = not args.no_tf32
        return data_parallel(args)
    if args.cpu:
        cpu_main(args)
        return
    torch.backends.cudnn.benchmark = args.benchmark
    torch.backends.cudnn.allow_tf32 = not args.no_tf32
    torch.backends.cuda.matmul.allow_tf32 = not args.no_tf32
    ours, input_grad, ours_mode, doc = {}, args.input_grad, 'eager', {}
    if args.ours:
        with open(args.ours) as f:
            doc = json.load(f)
        ours = {r['network']: r for r in doc['results']}
        input_grad = input_grad or doc.get('input_grad', True)  # older files: Torch's always-gradInput
        args.channels_last = args.channels_last or doc.get('channels_last', False)
        args.amp = args.amp or doc.get('amp') or None
        ours_mode = 'graph' if doc.get('graph') else 'eager'  # how our step was timed (--graph)
    if args.amp:
        args.dtype = args.amp  # the forward and fwd+bwd rows in the 16-bit dtype, as ours
    args.input_grad = input_grad
    names = args.nets.split(',') if args.nets else (list(ours) or list(NETS))
    dtype = getattr(torch, args.dtype)
    dev = torch.device('cuda')
    print(f'torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}, '
          f'{args.dtype}, cudnn.benchmark={args.benchmark}, tf32={not args.no_tf32}, input grad={input_grad}, '
          f'channels-last={args.channels_last}' + (f', amp step={args.amp}' if args.amp else ''))
    peaks = roofline_peaks(args, doc)
    if any('forward_flops' in o for o in ours.values()):
        print('roofline: our counted work (samples/CountedWork.h) over each side\'s time' +
              (f'; % of {peaks[0]:g} TFLOP/s and {peaks[1]:g} GB/s' if peaks[0] and peaks[1] else ''))
    print(f"{'network':9} {'torch fwd':>10} {'ours fwd':>9} {'ratio':>6}   {'torch train':>11} {'ours train':>10} "
          f"{'ratio':>6}   {'torch MiB':>9} {'ours MiB':>8}")
    results = []
    for name in names:
        make, shape = NETS[name]
        if name in ours:
            shape = ours[name]['input']
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        MEM.update(row=0, steady=0, row_reserved=0, steady_reserved=0)
        torch.manual_seed(1)
        fmt = torch.channels_last if args.channels_last and len(shape) == 4 else torch.contiguous_format
        model = make().to(dev, dtype).train().to(memory_format=fmt)
        x = (torch.rand(shape, device=dev, dtype=dtype) * 2 - 1).contiguous(memory_format=fmt)
        x.requires_grad_(input_grad)
        y = model(x)
        g = torch.rand_like(y) * 2 - 1
        with torch.no_grad():  # a forward pass keeps no graph, as ours keeps none
            fwd = time_ms(lambda: model(x), args.iterations, args.warmup)

        def train_step():
            model.zero_grad(set_to_none=False)
            x.grad = None
            model(x).backward(g)
        train = time_ms(train_step, args.iterations, args.warmup)
        r = {'network': name, 'input': shape, 'forward_ms': fwd, 'forward_backward_ms': train}
        want_step = (y.dim() == 2 or name == 'lstm') and (args.step or 'step_ms' in ours.get(name, {}))
        del y, model, g  # the step builds its own model (channels-last), and the peak is per row
        if want_step:
            if args.amp:
                r['step_ms'], r['step_how'], r['step_variants_ms'] = amp_train_step_ms(
                    make, shape, dtype, dev, NETS_CLASSES.get(name, 1000), args)
            else:
                r['step_ms'], r['step_how'], r['step_variants_ms'] = train_step_ms(
                    make, shape, dtype, dev, NETS_CLASSES.get(name, 1000), name == 'fashion', args)
        r['peak_device_bytes'] = max(MEM['row'], torch.cuda.max_memory_allocated())
        r['steady_device_bytes'] = MEM['steady']
        r['peak_reserved_bytes'] = max(MEM['row_reserved'], torch.cuda.max_memory_reserved())
        r['steady_reserved_bytes'] = MEM['steady_reserved']
        results.append(r)
        line = f'{name:9} {fwd:10.3f}'
        if name in ours:
            o = ours[name]
            # ratio > 1: cudnn-nn is faster
            line += f" {o['forward_ms']:9.3f} {fwd / o['forward_ms']:6.2f}   {train:11.3f} " \
                    f"{o['forward_backward_ms']:10.3f} {train / o['forward_backward_ms']:6.2f}   " \
                    f"{mib(r['steady_device_bytes']):>9} {mib(o.get('steady_device_bytes', 0)):>8}"
        else:
            line += f" {'':9} {'':6}   {train:11.3f} {'':10} {'':6}   {mib(r['steady_device_bytes']):>9}"
        print(line, flush=True)
        print(memory_line(r, ours.get(name)), flush=True)
        for what, key, ms in [('forward', 'forward', fwd), ('fwd+bwd', 'forward_backward', train),
                              ('step', 'step', r.get('step_ms'))]:
            set_rates(r, key, ms, ours.get(name))
            roof = roofline_line(what, key, ms, ours.get(name), peaks) if what != 'step' else None
            if roof:
                print(roof, flush=True)
        if want_step:
            line = f"  step: torch {r['step_ms']:.3f} ms ({r['step_how']}; " + \
                ', '.join(f'{k} {v:.3f}' for k, v in r['step_variants_ms'].items()) + ')'
            if 'step_ms' in ours.get(name, {}):
                line += (f", ours {ours[name]['step_ms']:.3f} ms ({ours_mode}), "
                         f"ratio {r['step_ms'] / ours[name]['step_ms']:.2f}")
            print(line, flush=True)
            roof = roofline_line('step', 'step', r['step_ms'], ours.get(name), peaks)
            if roof:
                print(roof, flush=True)
        if args.per_layer:
            torch.manual_seed(1)
            model = make().to(dev, dtype).train()
            if isinstance(model, nn.Sequential):
                r['layers'] = per_layer(model, x.detach(), args, ours.get(name, {}).get('layers', []))
            del model
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'torch': torch.__version__, 'dtype': args.dtype, 'amp': args.amp or '', 'input_grad': input_grad,
                       'channels_last': args.channels_last, 'results': results}, f, indent=2)


if __name__ == '__main__':
    main()
