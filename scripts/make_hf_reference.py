"""Writes tiny Hugging Face causal language models and their expected outputs (CPU, float32),
run from the repository root: python3 scripts/make_hf_reference.py
(pip install torch transformers safetensors). For each <name> below, tests/data/hf/<name>/ holds
what save_pretrained wrote (config.json, model.safetensors or shards with
model.safetensors.index.json) and expected.safetensors:
  ids     int64 [2 x 7]        fixed token ids
  logits  float32 [2 x 7 x V]  the model's logits for them (eager attention)
  prompt0 int64 [5], greedy0 int64 [8]: a prompt and its greedy 8-token continuation
  prompt1 int64 [3], greedy1 int64 [8]
Models (vocab 100, 2 layers, n_embd 32, 4 heads), weights drawn wider than transformers'
initialisation so the logits are far apart:
  gpt2_tied           GPT2LMHeadModel, lm_head tied to wte
  gpt2_untied_sharded GPT2LMHeadModel, tie_word_embeddings false, saved with max_shard_size 20KB
  llama_gqa           LlamaForCausalLM, 2 kv heads, untied, rope_theta 10000
  llama_tied          LlamaForCausalLM, 2 kv heads, tied, rope_theta 500000

python3 scripts/make_hf_reference.py --check DIR [EXPECTED]: loads DIR with transformers (a
save_hf_causal_lm output) and prints the largest logit difference from EXPECTED's logits.
"""
import os
import sys

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "hf")


def widen(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1 and ("ln" in name or "norm" in name) and name.endswith("weight"):
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))


def build(name):
    common = dict(vocab_size=100)
    if name.startswith("gpt2"):
        cfg = GPT2Config(n_positions=64, n_embd=32, n_layer=2, n_head=4, tie_word_embeddings=(name == "gpt2_tied"),
                         attn_implementation="eager", **common)
        model = GPT2LMHeadModel(cfg)
    else:
        cfg = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6,
                          rope_theta=10000.0 if name == "llama_gqa" else 500000.0,
                          tie_word_embeddings=(name == "llama_tied"), attn_implementation="eager", **common)
        model = LlamaForCausalLM(cfg)
    widen(model, seed=sum(map(ord, name)))
    if cfg.tie_word_embeddings:
        model.tie_weights()
    return model.eval()


def expected(model):
    g = torch.Generator().manual_seed(7)
    ids = torch.randint(0, 100, (2, 7), generator=g)
    out = {"ids": ids}
    with torch.no_grad():
        out["logits"] = model(ids).logits.float().contiguous()
        for i, n in enumerate((5, 3)):
            prompt = torch.randint(0, 100, (1, n), generator=g)
            seq = model.generate(prompt, max_new_tokens=8, min_new_tokens=8, do_sample=False, pad_token_id=0,
                                 eos_token_id=None)
            out[f"prompt{i}"] = prompt[0].contiguous()
            out[f"greedy{i}"] = seq[0, n:].contiguous()
    return out


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        model = AutoModelForCausalLM.from_pretrained(sys.argv[2], attn_implementation="eager").eval()
        if len(sys.argv) > 3:
            exp = load_file(sys.argv[3])
            with torch.no_grad():
                logits = model(exp["ids"]).logits
            print("max |logits - expected|:", (logits - exp["logits"]).abs().max().item())
        print("loaded", type(model).__name__)
        return
    torch.manual_seed(0)
    for name in ("gpt2_tied", "gpt2_untied_sharded", "llama_gqa", "llama_tied"):
        d = os.path.join(ROOT, name)
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            os.remove(os.path.join(d, f))
        model = build(name)
        shard = {"max_shard_size": "20KB"} if name.endswith("sharded") else {}
        model.save_pretrained(d, **shard)
        save_file(expected(model), os.path.join(d, "expected.safetensors"))
        for f in os.listdir(d):
            if f.endswith(".md") or f == "generation_config.json":
                os.remove(os.path.join(d, f))
        print(name, sorted(os.listdir(d)))


if __name__ == "__main__":
    main()
