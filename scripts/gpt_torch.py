#!/usr/bin/env python3
"""The PyTorch side of samples/gpt: the same model and recipe on the same tokens, for its
held-out loss (and, with --time, its step time). Run samples/gpt with --checkpoint DIR first
(it writes DIR/train.bin and DIR/val.bin: nanoGPT's uint16 token files from its BPE tokenizer),
then

    python3 scripts/gpt_torch.py DIR [--device cuda] [--amp bfloat16] [the sample's flags]

Model: transformers' GPT2LMHeadModel (learned positions, pre-norm, gelu_new, tied head, no
dropout), n_positions max(context, 256) as the sample's. Recipe: AdamW (betas 0.9, 0.95, decay
only on tensors of 2 or more dimensions), LinearLR(1/3 -> 1) for the warm-up then cosine to lr/10
(the sample's WarmupCosineLR), gradient norm clipped to 1, random windows (every start position,
shuffled each epoch), micro-batches averaged over --accum. Prints the held-out loss in nats per
token at every --eval-every steps, as the sample does.
"""
import argparse
import math
import time

import numpy as np
import torch
import torch.nn.functional as F


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--device", default="cpu")
    p.add_argument("--amp", default="float32", choices=["float32", "bfloat16"])
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--n-embd", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--accum", type=int, default=1)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--warmup", type=int, default=60)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--compile", action="store_true")
    a = p.parse_args()
    torch.manual_seed(a.seed)
    torch.backends.cuda.matmul.allow_tf32 = False
    from transformers import GPT2Config, GPT2LMHeadModel

    train = torch.from_numpy(np.fromfile(f"{a.dir}/train.bin", dtype=np.uint16).astype(np.int64))
    val = torch.from_numpy(np.fromfile(f"{a.dir}/val.bin", dtype=np.uint16).astype(np.int64))
    vocab = int(max(train.max(), val.max())) + 1
    vocab = max(vocab, a.vocab)
    cfg = GPT2Config(vocab_size=vocab, n_positions=max(a.context, 256), n_embd=a.n_embd, n_layer=a.layers,
                     n_head=a.heads, resid_pdrop=0, embd_pdrop=0, attn_pdrop=0, activation_function="gelu_new",
                     tie_word_embeddings=True)
    model = GPT2LMHeadModel(cfg).to(a.device)
    dtype = torch.bfloat16 if a.amp == "bfloat16" else torch.float32
    decay = [q for q in model.parameters() if q.dim() >= 2]
    no_decay = [q for q in model.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, 0.95),
                            fused=a.device != "cpu")
    warmup = min(a.warmup, a.steps - 1)
    sched = torch.optim.lr_scheduler.SequentialLR(opt, [
        torch.optim.lr_scheduler.LinearLR(opt, 1 / 3, 1.0, warmup),
        torch.optim.lr_scheduler.CosineAnnealingLR(opt, a.steps - warmup, a.lr / 10)], milestones=[warmup])
    step_fn = model
    if a.compile:
        step_fn = torch.compile(model)

    starts = len(train) - a.context  # every window [s, s + context] inside the file
    order, pos = torch.randperm(starts), 0

    def batch():
        nonlocal order, pos
        if pos + a.batch_size > starts:
            order, pos = torch.randperm(starts), 0
        s = order[pos:pos + a.batch_size]
        pos += a.batch_size
        idx = s[:, None] + torch.arange(a.context + 1)[None, :]
        w = train[idx].to(a.device)
        return w[:, :-1], w[:, 1:]

    @torch.no_grad()
    def held_out():
        model.eval()
        nats, count = 0.0, 0
        for b in range(0, len(val) - 1, a.context):
            n = min(a.context, len(val) - 1 - b)
            x = val[b:b + n][None].to(a.device)
            y = val[b + 1:b + n + 1].to(a.device)
            with torch.autocast(a.device.split(":")[0], dtype=dtype, enabled=dtype != torch.float32):
                logits = model(x).logits[0]
            nats += F.cross_entropy(logits.float(), y).item() * n
            count += n
        model.train()
        return nats / count

    start = time.time()
    running, seen = 0.0, 0
    for step in range(1, a.steps + 1):
        opt.zero_grad(set_to_none=True)
        loss_sum = 0.0
        for _ in range(a.accum):
            x, y = batch()
            with torch.autocast(a.device.split(":")[0], dtype=dtype, enabled=dtype != torch.float32):
                logits = step_fn(x).logits
            loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.reshape(-1)) / a.accum
            loss.backward()
            loss_sum += loss.item()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        running += loss_sum
        seen += 1
        if step % a.eval_every == 0 or step == a.steps:
            h = held_out()
            print(f"step {step}: train loss {running / seen:.4f}, held-out loss {h:.6f} "
                  f"({h / math.log(2):.3f} bits/token), lr {opt.param_groups[0]['lr']:.3g}, {time.time() - start:.1f} s",
                  flush=True)
            running, seen = 0.0, 0


if __name__ == "__main__":
    main()
