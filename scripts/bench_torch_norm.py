"""The PyTorch twin of samples/norm_benchmark: torch.nn.GroupNorm and torch.nn.RMSNorm at the same shapes and dtypes,
timed the same way (the median of synchronised iterations after a warm-up), in one run on the
same GPU, then per row ours on each engine of groupnorm.engine (rmsnorm.engine for the RMSNorm rows), PyTorch, the
ratios PyTorch time / ours (above 1.00: ours faster) and the faster engine.

  build/samples/norm_benchmark --json ours.json
  python3 scripts/bench_torch_norm.py --ours ours.json [--json torch.json]

Without --ours it times PyTorch alone at norm_benchmark's default shapes. The forward runs under
torch.no_grad() (native_group_norm still computes the statistics, as ours keeps them); the
forward+backward takes the gradients of the input, weight and bias, set_to_none in between.
PyTorch is a reference here, never a dependency.
"""
import argparse
import json
import time

import torch
import torch.nn as nn

# norm_benchmark's kRowShapes: (tokens, hidden), RMSNorm(hidden, eps=1e-6)
ROW_SHAPES = [(8192, 768), (8192, 2048), (4096, 4096), (2048, 8192)]
# norm_benchmark's kShapes: (n, c, h, w, groups)
SHAPES = [(32, 256, 32, 32, 32), (8, 512, 64, 64, 32), (16, 128, 128, 128, 32), (16, 64, 128, 128, 64)]
DTYPES = {'float16': torch.float16, 'bfloat16': torch.bfloat16, 'float32': torch.float32}


def median_ms(fn, iterations, warmup):
    """As norm_benchmark's: one first call, the warm-up, then the median of synchronised calls."""
    fn()
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return times[len(times) // 2]


def time_torch(n, c, h, w, groups, dtype, iterations, warmup):
    """(forward ms, forward+backward ms) of torch.nn.GroupNorm(groups, c) on [n, c, h, w]."""
    gn = nn.GroupNorm(groups, c).cuda().to(dtype)
    x = torch.randn(n, c, h, w, device='cuda', dtype=dtype, requires_grad=True)
    g = torch.randn(n, c, h, w, device='cuda', dtype=dtype)

    def forward():
        with torch.no_grad():
            gn(x)

    def train():
        x.grad = None
        gn.zero_grad(set_to_none=True)
        gn(x).backward(g)

    result = median_ms(forward, iterations, warmup), median_ms(train, iterations, warmup)
    del gn, x, g
    torch.cuda.empty_cache()
    return result


def time_torch_rms(tokens, hidden, dtype, iterations, warmup):
    """(forward ms, forward+backward ms) of torch.nn.RMSNorm(hidden, eps=1e-6) on [tokens, hidden]."""
    m = nn.RMSNorm(hidden, eps=1e-6).cuda().to(dtype)
    x = torch.randn(tokens, hidden, device='cuda', dtype=dtype, requires_grad=True)
    g = torch.randn(tokens, hidden, device='cuda', dtype=dtype)

    def forward():
        with torch.no_grad():
            m(x)

    def train():
        x.grad = None
        m.zero_grad(set_to_none=True)
        m(x).backward(g)

    result = median_ms(forward, iterations, warmup), median_ms(train, iterations, warmup)
    del m, x, g
    torch.cuda.empty_cache()
    return result


def rms_rows(ours, iterations, warmup, engines):
    """The RMSNorm rows: printed as the group norm rows are; returns them for --json."""
    keys, by_key = [], {}
    if ours:
        for row in ours.get('rmsnorm', []):
            key = (row['dtype'], (row['tokens'], row['hidden']))
            if key not in by_key:
                keys.append(key)
                by_key[key] = {}
            by_key[key][row['engine']] = row
    else:
        keys = [(d, s) for d in DTYPES for s in ROW_SHAPES]
    results = []
    for dtype_name, (tokens, hidden) in keys:
        t_fwd, t_train = time_torch_rms(tokens, hidden, DTYPES[dtype_name], iterations, warmup)
        rows = by_key.get((dtype_name, (tokens, hidden)), {})
        for pass_name, key, t in (('forward', 'forward_ms', t_fwd), ('fwd+bwd', 'train_ms', t_train)):
            line = f"{'rms ' + str(tokens) + 'x' + str(hidden):28s} {dtype_name:9s} {pass_name:8s}"
            if ours:
                mine = {e: rows[e][key] for e in engines if e in rows}
                line += ''.join(f" {mine[e]:10.4f}" if e in mine else f" {'-':>10s}" for e in engines)
                line += f" {t:10.4f}"
                line += ''.join(f" {t / mine[e]:9.2f}" if e in mine else f" {'-':>9s}" for e in engines)
                if mine:
                    line += f"  {min(mine, key=mine.get)}"
            else:
                line += f" {t:10.4f}"
            print(line)
        results.append({'tokens': tokens, 'hidden': hidden, 'dtype': dtype_name, 'torch_forward_ms': t_fwd,
                        'torch_train_ms': t_train,
                        **{f"{e}_{k}": rows[e][k] for e in engines if e in rows for k in ('forward_ms', 'train_ms')}})
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--ours', help="norm_benchmark's --json output (without it: PyTorch alone)")
    p.add_argument('--iterations', type=int, help='default: the --ours run\'s, else 50')
    p.add_argument('--warmup', type=int, help='default: the --ours run\'s, else 10')
    p.add_argument('--json', help='write the PyTorch times (and ours, with --ours) here')
    args = p.parse_args()
    ours = json.load(open(args.ours)) if args.ours else None
    iterations = args.iterations or (ours['iterations'] if ours else 50)
    warmup = args.warmup if args.warmup is not None else (ours['warmup'] if ours else 10)
    # (dtype name, shape) -> {engine: row}, in the order norm_benchmark ran them
    keys, by_key = [], {}
    if ours:
        for row in ours['groupnorm']:
            key = (row['dtype'], (row['n'], row['c'], row['h'], row['w'], row['groups']))
            if key not in by_key:
                keys.append(key)
                by_key[key] = {}
            by_key[key][row['engine']] = row
    else:
        keys = [(d, s) for d in DTYPES for s in SHAPES]
    print(f"torch.nn.GroupNorm on {torch.cuda.get_device_name()} (PyTorch {torch.__version__}), "
          f"median of {iterations} after {warmup}; ratio = PyTorch / ours")
    engines = ['kernel', 'cudnn']
    header = f"{'shape':28s} {'dtype':9s} {'pass':8s}"
    if ours:
        header += ''.join(f" {e + ' ms':>10s}" for e in engines) + f" {'torch ms':>10s}"
        header += ''.join(f" {'r(' + e + ')':>9s}" for e in engines) + '  faster'
    else:
        header += f" {'torch ms':>10s}"
    print(header)
    results = []
    for dtype_name, (n, c, h, w, groups) in keys:
        t_fwd, t_train = time_torch(n, c, h, w, groups, DTYPES[dtype_name], iterations, warmup)
        label = f"N{n} C{c} {h}x{w} G{groups}"
        rows = by_key.get((dtype_name, (n, c, h, w, groups)), {})
        for pass_name, key, t in (('forward', 'forward_ms', t_fwd), ('fwd+bwd', 'train_ms', t_train)):
            line = f"{label:28s} {dtype_name:9s} {pass_name:8s}"
            if ours:
                mine = {e: rows[e][key] for e in engines if e in rows}
                line += ''.join(f" {mine[e]:10.4f}" if e in mine else f" {'-':>10s}" for e in engines)
                line += f" {t:10.4f}"
                line += ''.join(f" {t / mine[e]:9.2f}" if e in mine else f" {'-':>9s}" for e in engines)
                if mine:
                    best = min(mine, key=mine.get)
                    other = [e for e in mine if e != best]
                    gain = f" ({mine[other[0]] / mine[best]:.2f}x)" if other else ''
                    line += f"  {best}{gain}"
            else:
                line += f" {t:10.4f}"
            print(line)
        results.append({'n': n, 'c': c, 'h': h, 'w': w, 'groups': groups, 'dtype': dtype_name,
                        'torch_forward_ms': t_fwd, 'torch_train_ms': t_train,
                        **{f"{e}_{k}": rows[e][k] for e in engines if e in rows for k in ('forward_ms', 'train_ms')}})
    if ours:
        # paths: a cudnn row that fell back says so (its times are then the kernel engine's)
        for (dtype_name, shape), rows in by_key.items():
            row = rows.get('cudnn')
            if row and not (row['forward_path'].startswith('cudnn engine')
                            and row['backward_path'].startswith('cudnn engine')):
                print(f"note: {dtype_name} {shape} engine=cudnn ran {row['forward_path']!r} / {row['backward_path']!r}")
    rms = rms_rows(ours, iterations, warmup, engines)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'device': torch.cuda.get_device_name(), 'torch': torch.__version__, 'rows': results,
                       'rmsnorm_rows': rms}, f)


if __name__ == '__main__':
    main()
