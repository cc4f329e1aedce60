"""The PyTorch twin of samples/transformer_benchmark: the same shapes timed the same way (the median
of synchronised iterations after a warm-up), in one run on the same GPU, then the ratios
PyTorch time / ours (above 1.00: ours faster).

  build/samples/transformer_benchmark --dtype float16 --json ours.json
  python3 scripts/bench_torch_transformer.py --ours ours.json

Attention rows take PyTorch's fastest SDPA backend on this GPU (each of cuDNN, flash, efficient
and the default pick is timed; the fastest counts). The encoder step uses the optimizer ours
used (Adam, fused) and set_to_none gradients. The ViT row is the Fashion-MNIST sample's network
(samples/VisionTransformer.h) written in PyTorch, eager (and under torch.compile with --compile;
the faster counts). The language-model loss row is F.cross_entropy over the same [tokens x vocab]
scores. Every row's peak memory is printed beside ours. PyTorch is a reference
here, never a dependency.
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


def timed(fn, iterations, warmup):
    """median_ms, and the peak memory (MiB) of the timed iterations, as transformer_benchmark's."""
    fn()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    ms = median_ms(fn, iterations, warmup)
    return ms, torch.cuda.max_memory_allocated() / 2**20


class VisionTransformer(nn.Module):
    """samples/VisionTransformer.h: 7x7 patches by a strided convolution, a class token and
    position embeddings, pre-norm GELU encoder layers (4 heads, feed-forward 2 dim), the class
    token's features, LayerNorm, Linear to 10 classes."""

    def __init__(self, dim=64, layers=3, dropout=0.1):
        super().__init__()
        self.patch = nn.Conv2d(1, dim, 7, stride=7)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embedding = nn.Parameter(torch.randn(1, 17, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, 4, 2 * dim, dropout=dropout, activation='gelu', batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls_token.expand(t.shape[0], -1, -1), t], 1) + self.pos_embedding
        return self.head(self.norm(self.encoder(t)[:, 0]))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--ours', required=True, help="transformer_benchmark's --json output")
    p.add_argument('--iterations', type=int, default=20)
    p.add_argument('--warmup', type=int, default=5)
    p.add_argument('--compile', action='store_true',
                   help='also time the ViT step under torch.compile (its best setting; compiling takes a minute)')
    args = p.parse_args()
    ours = json.load(open(args.ours))
    dt = {'float16': torch.float16, 'bfloat16': torch.bfloat16, 'float32': torch.float32}[ours['dtype']]
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.benchmark = True
    rows = []
    peaks = []  # (row, ours MiB, PyTorch MiB)
    for row in ours['sdpa']:
        causal = row['causal']
        # rows before the b1 s128 row named no shape: GPT-2 small's
        B, H, S, D = (row.get(key, default) for key, default in (('b', 8), ('h', 12), ('s', 1024), ('d', 64)))
        q, k, v = (torch.randn(B, H, S, D, device='cuda', dtype=dt, requires_grad=True) for _ in range(3))
        g = torch.randn(B, H, S, D, device='cuda', dtype=dt)
        best = {}  # 'forward' / 'fwd+bwd' -> (ms, backend, peak MiB)
        for name, backend in [('cudnn', SDPBackend.CUDNN_ATTENTION), ('flash', SDPBackend.FLASH_ATTENTION),
                              ('efficient', SDPBackend.EFFICIENT_ATTENTION), ('default', None)]:
            def fwd():
                with torch.no_grad():
                    F.scaled_dot_product_attention(q, k, v, is_causal=causal)

            def fwd_bwd():
                F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(g)

            try:
                with (sdpa_kernel(backend) if backend is not None else contextlib.nullcontext()):
                    times = {'forward': timed(fwd, args.iterations, args.warmup),
                             'fwd+bwd': timed(fwd_bwd, args.iterations, args.warmup)}
            except RuntimeError:  # a backend this GPU or dtype lacks
                continue
            for kind, (ms, peak) in times.items():
                if kind not in best or ms < best[kind][0]:
                    best[kind] = (ms, name, peak)
        label = f"sdpa b{B} h{H} s{S} d{D}{' causal' if causal else ''}"
        rows.append((label + ' forward', row['forward_ms'], *best['forward'][:2]))
        rows.append((label + ' fwd+bwd', row['train_ms'], *best['fwd+bwd'][:2]))
        peaks.append((label + ' forward', row.get('forward_peak_mib'), best['forward'][2]))
        peaks.append((label + ' fwd+bwd', row.get('train_peak_mib'), best['fwd+bwd'][2]))
    # the attention rows' tensors (and the gradients autograd accumulated into them) must not
    # count in the encoder step's peak: transformer_benchmark frees its own at the end of each row
    del q, k, v, g
    enc = ours['encoder_step']
    m = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, batch_first=True, activation='gelu').cuda().to(dt)
    opt = torch.optim.Adam(m.parameters(), lr=1e-4, fused=True)
    x = torch.randn(16, 512, 768, device='cuda', dtype=dt)

    def step():
        opt.zero_grad(set_to_none=True)
        m(x).float().pow(2).mean().backward()
        opt.step()

    ms, peak = timed(step, args.iterations, args.warmup)
    rows.append(('encoder layer step (d768 h12 ff3072 s512 b16, Adam)', enc['step_ms'], ms, 'eager'))
    peaks.append(('encoder layer step', enc['peak_mib'], peak))
    del m, opt, x
    if 'layernorm' in ours:
        rows_, E = 16 * 512, 768
        ln = nn.LayerNorm(E).cuda().to(dt)
        xl = torch.randn(rows_, E, device='cuda', dtype=dt, requires_grad=True)
        gl = torch.randn(rows_, E, device='cuda', dtype=dt)

        def ln_fwd():
            with torch.no_grad():
                ln(xl)

        def ln_train():
            xl.grad = None
            ln.zero_grad(set_to_none=True)
            ln(xl).backward(gl)

        t_fwd = median_ms(ln_fwd, args.iterations, args.warmup)
        t_train = median_ms(ln_train, args.iterations, args.warmup)
        for row in ours['layernorm']:
            rows.append((f"layernorm [{rows_} x {E}] forward, engine={row['engine']}", row['forward_ms'], t_fwd,
                         'F.layer_norm'))
            rows.append((f"layernorm [{rows_} x {E}] fwd+bwd, engine={row['engine']}", row['train_ms'], t_train,
                         'F.layer_norm'))
        del ln, xl, gl
    if 'vit_step' in ours:
        vit = ours['vit_step']
        b = vit.get('batch', 128)
        net = VisionTransformer().cuda().to(dt)
        vopt = torch.optim.Adam(net.parameters(), lr=1e-3, fused=True)
        images = torch.randn(b, 1, 28, 28, device='cuda', dtype=dt)
        labels = torch.randint(0, 10, (b,), device='cuda')

        def make_step(model):
            def vit_step():
                vopt.zero_grad(set_to_none=True)
                F.cross_entropy(model(images), labels).backward()
                vopt.step()
            return vit_step

        best = timed(make_step(net), args.iterations, args.warmup) + ('eager',)
        if args.compile:
            compiled = timed(make_step(torch.compile(net)), args.iterations, args.warmup) + ('torch.compile',)
            best = min(best, compiled)
        rows.append((f'vit step (fashion_mnist --model vit, b{b}, Adam)', vit['step_ms'], best[0], best[2]))
        peaks.append(('vit step', vit['peak_mib'], best[1]))
    if 'lm_loss' in ours:  # a language model's loss over a large vocabulary
        lm = ours['lm_loss']
        T, V = lm['tokens'], lm['vocab']
        logits = torch.randn(T, V, device='cuda', dtype=dt, requires_grad=True)
        targets = torch.randint(0, V, (T,), device='cuda')

        def lm_loss():
            with torch.no_grad():
                F.cross_entropy(logits, targets)

        def lm_train():
            logits.grad = None
            F.cross_entropy(logits, targets).backward()

        t_loss, p_loss = timed(lm_loss, args.iterations, args.warmup)
        t_train, p_train = timed(lm_train, args.iterations, args.warmup)
        rows.append((f'cross-entropy [{T} x {V}] loss', lm['forward_ms'], t_loss, 'F.cross_entropy'))
        rows.append((f'cross-entropy [{T} x {V}] loss and gradient', lm['train_ms'], t_train, 'F.cross_entropy'))
        peaks.append(('cross-entropy loss', lm.get('forward_peak_mib'), p_loss))
        peaks.append(('cross-entropy loss and gradient', lm.get('train_peak_mib'), p_train))
        del logits, targets
    print(f"{ours['dtype']} on {torch.cuda.get_device_name()} (PyTorch {torch.__version__}); ratio = PyTorch / ours")
    print(f"{'row':60s} {'ours ms':>9s} {'torch ms':>9s} {'ratio':>6s}  torch path")
    for name, o, t, how in rows:
        print(f"{name:60s} {o:9.3f} {t:9.3f} {t / o:6.2f}  {how}")
    print(f"{'peak memory':60s} {'ours MiB':>9s} {'torch MiB':>9s}")
    for name, o, t in peaks:
        print(f"{name:60s} {o if o is not None else float('nan'):9.0f} {t:9.0f}")


if __name__ == '__main__':
    main()
