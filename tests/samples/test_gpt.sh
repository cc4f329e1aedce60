#!/usr/bin/env bash
# test_gpt.sh GPT DATA: the GPT sample's command line refused before any work (status 2), one
# short training run on the nn backend (its BPE tokenizer, a finite held-out loss, the
# checkpoint's tokenizer.json and token files, the log's evaluation lines, a generated text),
# an exact resume (a run stopped at step 6 and resumed ends with the same losses, to the last
# printed digit, as the run that never stopped), and --hf loading a Hugging Face checkpoint of
# tests/data/hf and generating from it.
set -uo pipefail
gpt=$1
hf=$2/hf
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out err=$tmp/err
source "$(dirname "$0")/run_status.sh"
expect() {  # expect FILE PATTERN: the file has a line matching the extended regex
  if ! grep -Eq -- "$2" "$1"; then
    echo "FAIL: no line matching '$2' in:"
    sed 's/^/  /' "$1"
    failed=1
  fi
}

run 0 "$gpt" --help
expect "$out" "usage: gpt"
run 2 "$gpt" --amp bfloat16
expect "$err" "needs --backend cudnn"
run 2 "$gpt" --n-embd 10 --heads 4
expect "$err" "divisible by --heads"
run 2 "$gpt" --resume "$tmp/nothing"
expect "$err" "no checkpoint"
run 2 "$gpt" --top-p 2
expect "$err" "top-p"

small=(--steps 12 --eval-every 6 --n-embd 32 --layers 1 --heads 2 --context 32 --vocab 300 --batch-size 8)
run 0 "$gpt" "${small[@]}" --generate 8 --checkpoint "$tmp/a" --log "$tmp/a/log.csv"
expect "$out" "^tokenizer: 300 tokens"
expect "$out" "^step 12: train loss [0-9.]+, held-out loss [0-9.]+ "
expect "$out" "^--- This License"
for f in tokenizer.json train.bin val.bin checkpoint.safetensors log.csv; do
  [ -s "$tmp/a/$f" ] || { echo "FAIL: no $tmp/a/$f"; failed=1; }
done
expect "$tmp/a/log.csv" "^eval,"

# exact resume: the losses of step 12 as printed (everything but the seconds)
run 0 "$gpt" "${small[@]}" --generate 0
grep '^step 12:' "$out" | sed 's/, [0-9.]* s$//' >"$tmp/whole"
run 0 "$gpt" "${small[@]}" --generate 0 --stop-at 6 --checkpoint "$tmp/b"
run 0 "$gpt" "${small[@]}" --generate 0 --resume "$tmp/b"
expect "$out" "^resumed from .* at step 6"
grep '^step 12:' "$out" | sed 's/, [0-9.]* s$//' >"$tmp/resumed"
if ! [ -s "$tmp/whole" ] || ! cmp -s "$tmp/whole" "$tmp/resumed"; then
  echo "FAIL: the resumed run differs: $(cat "$tmp/whole") vs $(cat "$tmp/resumed")"
  failed=1
fi

# a Hugging Face checkpoint (no tokenizer.json there: ids from 0)
run 0 "$gpt" --hf "$hf/llama_gqa" --generate 5 --temperature 0
expect "$out" "^loaded .*llama_gqa: nn.DecoderLM\(llama"
run 1 "$gpt" --hf "$tmp/nothing"
expect "$err" "^gpt: "
exit $failed
