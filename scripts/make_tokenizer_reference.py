#!/usr/bin/env python3
"""make_tokenizer_reference.py: reference data for tests/text/test_BpeTokenizer.cpp.

Trains a GPT-2-style byte-level BPE (vocabulary 1000, special token <|endoftext|>) with Hugging
Face's `tokenizers` on the license texts every Debian machine has (/usr/share/common-licenses,
package base-files) and writes, under tests/data/text/:

  tokenizer.json         the trained tokenizer as `tokenizers` saves it (merges as [a, b] pairs)
  tokenizer_str.json     the same with merges in the older "a b" string form and a Sequence pre-tokenizer
  tokenizer_prefix.json  the same with add_prefix_space true
  vocab.json, merges.txt the model's files (model.save)
  gpt2_fast/tokenizer.json  what transformers' GPT2TokenizerFast saves from vocab.json + merges.txt
  reference.json         for each case: the text, the ids `tokenizers` encodes it to (each
                         tokenizer above), and the decode of those ids where it is not the text; decodes of id lists that
                         are not valid UTF-8; whether our training rule reproduces tokenizers'

Needs: pip install tokenizers transformers (no network: nothing is downloaded).
Usage: scripts/make_tokenizer_reference.py [repository root]
"""
import json
import pathlib
import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent
out = root / "tests" / "data" / "text"
out.mkdir(parents=True, exist_ok=True)

licenses = pathlib.Path("/usr/share/common-licenses")
train_files = ["GPL-3", "Apache-2.0", "MPL-2.0", "LGPL-2.1"]
texts = [(licenses / f).read_text(encoding="utf-8") for f in train_files]

tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.post_processor = processors.ByteLevel(trim_offsets=False)
trainer = trainers.BpeTrainer(vocab_size=1000, special_tokens=["<|endoftext|>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
tok.train_from_iterator(texts, trainer=trainer)
tok.save(str(out / "tokenizer.json"))
tok.model.save(str(out))  # vocab.json, merges.txt

# The "a b" merges form and a Sequence around the pre-tokenizer, as older files have them.
spec = json.loads((out / "tokenizer.json").read_text())
spec_str = json.loads(json.dumps(spec))
spec_str["model"]["merges"] = [" ".join(m) for m in spec["model"]["merges"]]
spec_str["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [spec["pre_tokenizer"]]}
(out / "tokenizer_str.json").write_text(json.dumps(spec_str, ensure_ascii=False))
spec_prefix = json.loads(json.dumps(spec))
spec_prefix["pre_tokenizer"]["add_prefix_space"] = True
(out / "tokenizer_prefix.json").write_text(json.dumps(spec_prefix, ensure_ascii=False))

tokenizers = {
    "tokenizer.json": tok,
    "tokenizer_str.json": Tokenizer.from_file(str(out / "tokenizer_str.json")),
    "tokenizer_prefix.json": Tokenizer.from_file(str(out / "tokenizer_prefix.json")),
}

# transformers' GPT-2 fast tokenizer from the trained files (GPT-2's own vocabulary needs the network).
try:
    from transformers import GPT2TokenizerFast

    vocab = json.loads((out / "vocab.json").read_text())
    merges = [tuple(m) for m in spec["model"]["merges"]]
    try:
        fast = GPT2TokenizerFast(vocab=vocab, merges=merges)  # transformers 5
    except TypeError:
        fast = GPT2TokenizerFast(vocab_file=str(out / "vocab.json"), merges_file=str(out / "merges.txt"))
    fast.save_pretrained(str(out / "gpt2_fast"))
    for extra in ["tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt", "added_tokens.json",
                  "chat_template.jinja"]:
        p = out / "gpt2_fast" / extra
        if p.exists():
            p.unlink()
    tokenizers["gpt2_fast/tokenizer.json"] = Tokenizer.from_file(str(out / "gpt2_fast" / "tokenizer.json"))
except ImportError:
    print("transformers not installed: gpt2_fast/tokenizer.json not written")

cases = [
    ("empty", ""),
    ("hello", "Hello world"),
    ("contractions", "It's John's; they're here, we've gone, I'm sure you'll see, he'd 'T 'S 'RE it’s"),
    ("numbers", "In 1999 there were 12345678 and 3.14159 or 1,000,000 cats; ٣٤٥ and ⅷ."),
    ("emoji", "I ❤️ 🍕! 👩‍👩‍👧‍👦 and 🇫🇷 flags 😀😁"),
    ("cjk", "日本語のテキスト、中文文本和한국어 텍스트。"),
    ("combining", "e\u0301 cafe\u0301 n\u0303 Z\u0351\u0352\u0353a\u0300\u0301lgo"),
    ("whitespace", "a  b   c    d\t\te \u00a0 f\u3000g   "),
    ("newlines", "line one\nline two\n\n\nline three\r\n  indented\n\t\ttabbed\n"),
    ("leading_space", "  two leading spaces"),
    ("special", "Hello<|endoftext|>World <|endoftext|> again<|endoftext|><|endoftext|>"),
    ("special_only", "<|endoftext|>"),
    ("special_partial", "<|endoftext|  <|endoftext|>|> <|endo"),
    ("punctuation", "!!! ??? ... --- (a) [b] {c} <d> \"e\" 'f' `g` ~@#$%^&*_+=|\\/"),
    ("mixed_scripts", "Ελληνικά русский עברית العربية हिन्दी ไทย"),
    ("controls", "nul\x00 bell\x07 esc\x1b del\x7f"),
]
for name in train_files + ["GFDL-1.3", "Artistic", "BSD"]:
    cases.append(("file_" + name, (licenses / name).read_text(encoding="utf-8")))

ref = {"cases": [], "decodes": []}
for name, text in cases:
    entry = {"name": name, "text": text, "ids": {}, "decoded": {}}
    for key, t in tokenizers.items():
        ids = t.encode(text).ids
        if key == "tokenizer.json" or ids != entry["ids"]["tokenizer.json"]:  # absent: tokenizer.json's
            entry["ids"][key] = ids
        decoded = t.decode(ids, skip_special_tokens=False)
        if decoded != text:  # kept only where it differs from the text (the files would be kept 5 times)
            entry["decoded"][key] = decoded
    ref["cases"].append(entry)

# Id lists whose bytes are not valid UTF-8: single bytes of multi-byte characters, reordered.
# the ByteLevel table: byte b -> the char GPT-2 maps it to
bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
cs = bs[:]
n = 0
for b in range(256):
    if b not in bs:
        bs.append(b)
        cs.append(256 + n)
        n += 1
byte_char = {b: chr(c) for b, c in zip(bs, cs)}
def bid(b):
    return tok.token_to_id(byte_char[b])
decode_cases = [
    [bid(0xF0), bid(0x9F)],                        # a truncated emoji
    [bid(0x80), bid(0x41), bid(0xBF)],             # lone continuation bytes
    [bid(0xE6), bid(0x97), bid(0x41), bid(0xA5)],  # a truncated CJK character, then ASCII
    [bid(0xC0), bid(0xAF), bid(0xED), bid(0xA0), bid(0x80)],  # overlong, surrogate
    [bid(0xF4), bid(0x90), bid(0x80), bid(0x80)],  # above U+10FFFF
    [bid(0xFF), bid(0xFE), bid(0x68), bid(0x69)],
    [bid(0xF0), bid(0x9F), bid(0x98), bid(0x80), bid(0xF0), bid(0x9F), bid(0x98)],
    [bid(0xE2), bid(0x82)] + tok.encode("<|endoftext|>").ids + [bid(0xAC)],
]
for ids in decode_cases:
    ref["decodes"].append({"ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)})

(out / "reference.json").write_text(json.dumps(ref, ensure_ascii=False, separators=(",", ":")))
print("wrote", out)
