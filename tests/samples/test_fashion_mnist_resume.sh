#!/usr/bin/env bash
# test_fashion_mnist_resume.sh FASHION_MNIST: what fashion_mnist reads and writes is checked
# before any data is loaded (--resume, --checkpoint, --log, --data: status 2, one line, nothing
# on stdout); --log creates its directory; and --resume with a larger --epochs spans the
# cosine schedule over the new total (Note [Resumed schedules] in samples/fashion_mnist.cpp):
# from the saved step on, the lr is that of a run started with the new --epochs.
# Needs Fashion-MNIST (scripts/dev deps); skipped (status 77) without it.
set -uo pipefail
fashion=$1
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out err=$tmp/err

# run STATUS CMD...: CMD's stdout in $out, stderr in $err, its exit status checked
source "$(dirname "$0")/run_status.sh"
expect() {  # expect FILE PATTERN
  if ! grep -Eq -- "$2" "$1"; then
    echo "FAIL: no line matching '$2' in:"
    sed 's/^/  /' "$1"
    failed=1
  fi
}
empty() {  # empty FILE: nothing was printed (no "Fashion-MNIST from ...": no data read)
  if [ -s "$1" ]; then
    echo "FAIL: expected no output, got:"
    sed 's/^/  /' "$1"
    failed=1
  fi
}

# up front, before the data (here there is none): the paths' problems, not the data's
run 2 "$fashion" --data /nonexistent --resume /no/such/dir
expect "$err" "^fashion_mnist: --resume: cannot read the checkpoint '/no/such/dir/checkpoint.safetensors': no such directory$"
empty "$out"
mkdir "$tmp/empty"
run 2 "$fashion" --data /nonexistent --resume "$tmp/empty"
expect "$err" "--resume: cannot read the checkpoint '$tmp/empty/checkpoint.safetensors': no such file"
touch "$tmp/file"
run 2 "$fashion" --data /nonexistent --checkpoint "$tmp/file/ck"
expect "$err" "^fashion_mnist: --checkpoint: cannot create the directory '$tmp/file/ck': '$tmp/file' is not a directory$"
empty "$out"
run 2 "$fashion" --data /nonexistent --log "$tmp/empty"
expect "$err" "^fashion_mnist: --log: cannot write '$tmp/empty': it is a directory, expected a file$"
run 2 "$fashion" --data /nonexistent --log "$tmp/file/runs/fm.csv"
expect "$err" "--log: cannot create the directory '$tmp/file/runs'"
run 2 "$fashion" --data /nonexistent
expect "$err" "^fashion_mnist: --data: no Fashion-MNIST in '/nonexistent'"
empty "$out"
[ -e "$tmp/file/ck" ] && { echo "FAIL: a refused run created $tmp/file/ck"; failed=1; }

data=/usr/share/datasets/fashion-mnist
if [ ! -e "$data/train-images-idx3-ubyte.gz" ] && [ ! -e "$data/train-images-idx3-ubyte" ]; then
  echo "no Fashion-MNIST in $data (scripts/dev deps): the training runs are skipped"
  [ "$failed" -eq 0 ] && exit 77
  exit 1
fi

# 256 images, batches of 64: 4 steps an epoch; cosine with 2 warm-up steps
opts=(--limit 256 --batch-size 64 --lr-schedule cosine --warmup 2 --log-every 1 --quiet)
# one epoch into a fresh directory tree: --log creates runs/, --checkpoint ck/
run 0 "$fashion" "${opts[@]}" --epochs 1 --checkpoint "$tmp/ck" --log "$tmp/fresh/runs/fm.csv" --save "$tmp/model"
[ -s "$tmp/fresh/runs/fm.csv" ] || { echo "FAIL: no log at $tmp/fresh/runs/fm.csv"; failed=1; }
# then a second epoch: the schedule spans two epochs (8 steps) from step 4 on
run 0 "$fashion" "${opts[@]}" --epochs 2 --resume "$tmp/ck" --log "$tmp/fresh/runs/fm.csv" --save "$tmp/model"
expect "$out" "^resumed from $tmp/ck/checkpoint.safetensors: epoch 1, step 4$"
expect "$out" "^the cosine schedule spans --epochs 2 \(8 steps\), as if planned so from the start: lr [0-9.e-]+ at step 4$"
# a run of two epochs from the start
run 0 "$fashion" "${opts[@]}" --epochs 2 --log "$tmp/two.csv" --save "$tmp/model"

# the lr of the step records (kind,epoch,step,loss,accuracy,lr,...): step -> lr
lrs() { awk -F, '$1 == "step" { print $3, $6 }' "$1"; }
resumed=$(lrs "$tmp/fresh/runs/fm.csv" | awk '$1 > 4')
planned=$(lrs "$tmp/two.csv" | awk '$1 > 4')
if [ -z "$resumed" ] || [ "$resumed" != "$planned" ]; then
  echo "FAIL: the resumed run's lr from step 5 on is not the two-epoch run's:"
  echo "  resumed: $(echo $resumed)"
  echo "  planned: $(echo $planned)"
  failed=1
fi
# the one-epoch run ended its cosine at 0; the lr rises again on resuming (the documented restart)
end=$(lrs "$tmp/fresh/runs/fm.csv" | awk '$1 == 4 { print $2 }')
next=$(lrs "$tmp/fresh/runs/fm.csv" | awk '$1 == 5 { print $2 }')
if ! awk -v a="$end" -v b="$next" 'BEGIN { exit !(a == 0 && b > 0) }'; then
  echo "FAIL: expected lr 0 at the end of the one-epoch run and > 0 after resuming, got '$end' then '$next'"
  failed=1
fi
# the log appended: one header
[ "$(grep -c '^kind,' "$tmp/fresh/runs/fm.csv")" -eq 1 ] || { echo "FAIL: a second header in the log"; failed=1; }

exit $failed
