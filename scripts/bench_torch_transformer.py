"""The PyTorch twin of samples/transformer_benchmark: the same shapes timed the same way (the median
of synchronised iterations after a warm-up), in one run on the same GPU, then the ratios
PyTorch time / ours (above 1.00: ours faster).

  build/samples/transformer_benchmark --dtype float16 --json ours.json
  python3 scripts/bench_torch_transformer.py --ours ours.json

Attention rows take PyTorch's fastest SDPA backend on this GPU (each of cuDNN, flash, efficient
and the default pick is timed; the fastest counts). The encoder step uses the optimizer ours
used (Adam, fused) and set_to_none gradients. PyTorch is a reference here, never a dependency.
"""
import argparse
import contextlib
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def median_ms(fn, iterations, warmup):
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


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--ours', required=True, help="transformer_benchmark's --json output")
    p.add_argument('--iterations', type=int, default=20)
    p.add_argument('--warmup', type=int, default=5)
    args = p.parse_args()
    ours = json.load(open(args.ours))
    dt = {'float16': torch.float16, 'bfloat16': torch.bfloat16, 'float32': torch.float32}[ours['dtype']]
    torch.backends.cuda.matmul.allow_tf32 = True
    rows = []
    B, H, S, D = 8, 12, 1024, 64
    for row in ours['sdpa']:
        causal = row['causal']
        q, k, v = (torch.randn(B, H, S, D, device='cuda', dtype=dt, requires_grad=True) for _ in range(3))
        g = torch.randn(B, H, S, D, device='cuda', dtype=dt)
        best = {}  # 'forward' / 'fwd+bwd' -> (ms, backend)
        for name, backend in [('cudnn', SDPBackend.CUDNN_ATTENTION), ('flash', SDPBackend.FLASH_ATTENTION),
                              ('efficient', SDPBackend.EFFICIENT_ATTENTION), ('default', None)]:
            def fwd():
                with torch.no_grad():
                    F.scaled_dot_product_attention(q, k, v, is_causal=causal)

            def fwd_bwd():
                F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(g)

            try:
                with (sdpa_kernel(backend) if backend is not None else contextlib.nullcontext()):
                    times = {'forward': median_ms(fwd, args.iterations, args.warmup),
                             'fwd+bwd': median_ms(fwd_bwd, args.iterations, args.warmup)}
            except RuntimeError:  # a backend this GPU or dtype lacks
                continue
            for kind, ms in times.items():
                if kind not in best or ms < best[kind][0]:
                    best[kind] = (ms, name)
        label = f"sdpa b{B} h{H} s{S} d{D}{' causal' if causal else ''}"
        rows.append((label + ' forward', row['forward_ms'], *best['forward']))
        rows.append((label + ' fwd+bwd', row['train_ms'], *best['fwd+bwd']))
    enc = ours['encoder_step']
    m = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, batch_first=True, activation='gelu').cuda().to(dt)
    opt = torch.optim.Adam(m.parameters(), lr=1e-4, fused=True)
    x = torch.randn(16, 512, 768, device='cuda', dtype=dt)

    def step():
        opt.zero_grad(set_to_none=True)
        m(x).float().pow(2).mean().backward()
        opt.step()

    step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    ms = median_ms(step, args.iterations, args.warmup)
    peak = torch.cuda.max_memory_allocated() / 2**20
    rows.append(('encoder layer step (d768 h12 ff3072 s512 b16, Adam)', enc['step_ms'], ms, 'eager'))
    print(f"{ours['dtype']} on {torch.cuda.get_device_name()} (PyTorch {torch.__version__}); ratio = PyTorch / ours")
    print(f"{'row':60s} {'ours ms':>9s} {'torch ms':>9s} {'ratio':>6s}  torch path")
    for name, o, t, how in rows:
        print(f"{name:60s} {o:9.3f} {t:9.3f} {t / o:6.2f}  {how}")
    print(f"encoder step peak memory: ours {enc['peak_mib']:.0f} MiB, PyTorch {peak:.0f} MiB")


if __name__ == '__main__':
    main()
