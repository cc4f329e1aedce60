#!/usr/bin/env python3
"""PyTorch's side of samples/llm_benchmark: the same rows with Hugging Face transformers'
GPT2LMHeadModel and LlamaForCausalLM (attn_implementation="sdpa", the fastest transformers
offers without extra packages), timed the same way (median of synchronised iterations after a
warm-up), and the ratio PyTorch time / ours (above 1.00: ours faster).

  build/samples/llm_benchmark --dtype bfloat16 --json ours.json
  python3 scripts/bench_torch_llm.py --ours ours.json [--compile]

Training step: as PyTorch users train in 16 bits, float32 parameters under torch.autocast (the
parameters are the master weights), fused AdamW, the cross-entropy on float32 logits. --compile also times torch.compile(model) and keeps the faster.
Decoding: model.generate(greedy, min_new_tokens = max_new_tokens) with the dynamic KV cache, the
model cast to the dtype, the rows' prompt and new tokens (512 and 128 by default); the prefill is
generate() of one token, a decode step the rest over the steps after it. --torch-graph also times
a greedy loop over transformers' StaticCache with the step captured in a torch.cuda.CUDAGraph.
Roofline: each training row prints both sides' TFLOP/s and each decode step both sides' GB/s, from
the work llm_benchmark counted for the row (Note [Counted FLOPs and bytes] in
samples/llm_benchmark.cpp), as a share of the peaks it names.
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F


def median_ms(fn, iterations, warmup):
    fn()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return times[len(times) // 2], torch.cuda.max_memory_allocated() / 2**20


def make_model(name, layers):
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
    if name == "gpt2":
        cfg = GPT2Config(vocab_size=50304, n_positions=1024, n_embd=768, n_layer=layers, n_head=12,
                         resid_pdrop=0, embd_pdrop=0, attn_pdrop=0, attn_implementation="sdpa")
        return GPT2LMHeadModel(cfg)
    cfg = LlamaConfig(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=layers,
                      num_attention_heads=12, num_key_value_heads=4, max_position_embeddings=2048,
                      tie_word_embeddings=False, attn_implementation="sdpa")
    return LlamaForCausalLM(cfg)


def train_step_ms(row, dt, args):
    model = make_model(row["model"], row["layers"]).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    vocab = model.config.vocab_size
    x = torch.randint(0, vocab, (row["batch"], row["seq"]), device="cuda")
    best = None
    variants = [("eager", model)] + ([("compile", torch.compile(model))] if args.compile else [])
    for tag, m in variants:
        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=dt, enabled=dt != torch.float32):
                logits = m(x).logits
            loss = F.cross_entropy(logits.float().view(-1, vocab), x.view(-1))
            loss.backward()
            opt.step()
        ms, peak = median_ms(step, args.iterations, args.warmup)
        if best is None or ms < best[0]:
            best = (ms, peak, tag)
    return best


def decode_times(row, dt, args):
    """(total ms, prefill ms, ms a decode step, peak MiB, tag) for transformers' generate() as
    llm_benchmark times nn::generate: the prefill is generate() of one token, a step is the rest
    over the new_tokens - 1 steps after it. --torch-graph also times a decode loop of our own over
    transformers' StaticCache with the step captured in a torch.cuda.CUDAGraph, and keeps the faster."""
    model = make_model(row["model"], row["layers"]).cuda().to(dt).eval()
    vocab = model.config.vocab_size
    b, p, n = row["batch"], row["prompt"], row["new_tokens"]
    ids = torch.tensor([[(i * 7919 + t * 104729) % vocab for t in range(p)] for i in range(b)], device="cuda")
    iters, warm = max(1, args.iterations // 2), min(args.warmup, 1)

    def generate(new):
        @torch.no_grad()
        def run():
            model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=new,
                           min_new_tokens=new, pad_token_id=0)
        return run
    pre, _ = median_ms(generate(1), iters, warm)
    total, peak = median_ms(generate(n), iters, warm)
    best = (total, pre, (total - pre) / (n - 1), peak, "generate")
    if args.torch_graph:
        try:
            best = min(best, graphed_decode_times(model, ids, n, iters, warm), key=lambda r: r[0])
        except Exception as e:  # report, keep transformers' own path
            print(f"  ({row['model']} b{b}: the CUDA-graphed static-cache loop failed: {type(e).__name__}: {str(e)[:160]})")
    return best


def graphed_decode_times(model, ids, n, iters, warm):
    from transformers import StaticCache
    b, p = ids.shape
    cache = StaticCache(config=model.config, max_cache_len=p + n)
    token = torch.zeros((b, 1), dtype=torch.long, device="cuda")
    position = torch.zeros((1,), dtype=torch.long, device="cuda")

    @torch.no_grad()
    def step():
        return model(input_ids=token, past_key_values=cache, cache_position=position, use_cache=True).logits[:, -1].argmax(-1)

    @torch.no_grad()
    def prefill():
        cache.reset()
        logits = model(input_ids=ids, past_key_values=cache, cache_position=torch.arange(p, device="cuda"),
                       use_cache=True).logits
        return logits[:, -1].argmax(-1)

    # warm up on a side stream, then capture one step (its cache position read on the device)
    token.copy_(prefill().view(b, 1))
    position.fill_(p)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step()

    def run(new):
        def go():
            token.copy_(prefill().view(b, 1))
            for s in range(new - 1):
                position.fill_(p + s)
                graph.replay()
                token.copy_(out.view(b, 1))
            torch.cuda.synchronize()
        return go
    pre, _ = median_ms(run(1), iters, warm)
    total, peak = median_ms(run(n), iters, warm)
    return (total, pre, (total - pre) / (n - 1), peak, "static cache + CUDA graph")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ours", required=True, help="llm_benchmark's --json output")
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--torch-graph", action="store_true", help="also time a CUDA-graphed static-cache decode loop")
    args = p.parse_args()
    ours = json.load(open(args.ours))
    dt = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[ours["dtype"]]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"{ours['dtype']} on {torch.cuda.get_device_name()} (PyTorch {torch.__version__}); ratio = PyTorch / ours")
    print(f"{'row':58s} {'ours ms':>9s} {'torch ms':>9s} {'ratio':>6s} {'ours MiB':>9s} {'torch MiB':>9s}")
    for row in ours["train_step"]:
        ms, peak, tag = train_step_ms(row, dt, args)
        ours_tag = ", ours graphed" if row.get("graphed") else ""
        name = f"{row['model']} train step L{row['layers']} b{row['batch']} s{row['seq']} ({tag}{ours_tag})"
        print(f"{name:58s} {row['ms']:9.3f} {ms:9.3f} {ms / row['ms']:6.2f} {row['peak_mib']:9.0f} {peak:9.0f}")
        if "flops" in row:
            ours_t, torch_t = row["flops"] / row["ms"] / 1e9, row["flops"] / ms / 1e9
            print(f"{'  TFLOP/s (% of ' + str(round(row['peak_tflops'])) + ')':58s} {ours_t:9.0f} {torch_t:9.0f}"
                  f"   ours {100 * ours_t / row['peak_tflops']:.0f}%, torch {100 * torch_t / row['peak_tflops']:.0f}%")
        torch.cuda.empty_cache()
    for row in ours["decode"]:
        ms, pre, step, peak, tag = decode_times(row, dt, args)
        name = f"{row['model']} decode b{row['batch']} prompt {row['prompt']} +{row['new_tokens']} ({tag})"
        print(f"{name:58s} {row['ms']:9.3f} {ms:9.3f} {ms / row['ms']:6.2f} {row['peak_mib']:9.0f} {peak:9.0f}")
        if "step_ms" in row:
            print(f"{'  prefill':58s} {row['prefill_ms']:9.3f} {pre:9.3f} {pre / row['prefill_ms']:6.2f}")
            print(f"{'  a decode step':58s} {row['step_ms']:9.3f} {step:9.3f} {step / row['step_ms']:6.2f}")
        if "step_bytes" in row:
            ours_g, torch_g = row["step_bytes"] / row["step_ms"] / 1e6, row["step_bytes"] / step / 1e6
            print(f"{'  GB/s a step (% of ' + str(round(row['peak_gbps'])) + ')':58s} {ours_g:9.0f} {torch_g:9.0f}"
                  f"   ours {100 * ours_g / row['peak_gbps']:.1f}%, torch {100 * torch_g / row['peak_gbps']:.1f}%")
        torch.cuda.empty_cache()

if __name__ == "__main__":
    main()
