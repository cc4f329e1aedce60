#!/usr/bin/env bash
# test_unet.sh UNET: the U-Net sample's paths and devices checked before any data is read
# (status 2, one line, nothing on stdout), --help, and one short epoch on the nn backend (256
# training images, 500 test images): exit status 0, a finite loss and accuracies, the graph
# printed (--print-graph) and written as Graphviz (--dot), and a saved model that loads back
# (nn::load_model) and predicts the same as the trained network ("same predictions: yes", the
# sample's own check; it exits 1 otherwise).
# Needs Fashion-MNIST (scripts/dev deps); the training run is skipped (status 77) without it.
set -uo pipefail
unet=$1
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out err=$tmp/err

# run STATUS CMD...: CMD's stdout in $out, stderr in $err, its exit status checked
source "$(dirname "$0")/run_status.sh"
expect() {  # expect FILE PATTERN: the file has a line matching the extended regex
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

run 0 "$unet" --help
expect "$out" "^usage: unet"
run 2 "$unet" --data /nonexistent
expect "$err" "^unet: --data: no Fashion-MNIST in '/nonexistent'"
empty "$out"
run 2 "$unet" --dot /nonexistent/dir/unet.dot
expect "$err" "^unet: --dot: cannot write '/nonexistent/dir/unet.dot'"
empty "$out"
run 2 "$unet" --threshold 2
expect "$err" "^unet: --threshold expects a number in \[0, 1\], got '2'$"
run 2 env CUDA_VISIBLE_DEVICES= "$unet" --backend cudnn --data /nonexistent
expect "$err" "--backend cudnn needs a CUDA device, and none is visible \(--backend nn trains on the CPU\)"
empty "$out"

data=/usr/share/datasets/fashion-mnist
if [ ! -e "$data/train-images-idx3-ubyte.gz" ] && [ ! -e "$data/train-images-idx3-ubyte" ]; then
  echo "no Fashion-MNIST in $data (scripts/dev deps): the training run is skipped"
  [ "$failed" -eq 0 ] && exit 77
  exit 1
fi

# one epoch of 8 steps; a loss or accuracy of nan or inf matches none of the number patterns
num='[0-9]+\.[0-9]+'
run 0 "$unet" --epochs 1 --limit 256 --batch 32 --test-limit 500 --save "$tmp/unet" --dot "$tmp/unet.dot" \
  --print-graph --quiet
expect "$out" "^256 training and 500 test images; targets: 0 below 0.2, else 1 \+ the class \($num % of the test pixels are background\)$"
expect "$out" "^epoch 1: train loss $num, test loss $num, pixel accuracy $num, foreground accuracy $num, image accuracy $num \(training $num s, test $num s\)$"
expect "$out" "^test pixel accuracy $num, foreground accuracy $num after 1 epoch in $num s on cpu$"
# the graph: its skip connections are nodes of two inputs, joined along the channels
expect "$out" "^nn.Graph \{$"
expect "$out" "^  n[0-9]+ = \([0-9]+\)\(\{n[0-9]+, n[0-9]+\}\)$"
expect "$out" "^  \([0-9]+\): nn.JoinTable\(0, 3\)$"
expect "$out" "^  \([0-9]+\): nn.SpatialUpSamplingNearest\(2\)$"
expect "$out" "^  \([0-9]+\): nn.SpatialConvolution\(16 -> 11, 1x1\)$"
expect "$tmp/unet.dot" "^digraph "
expect "$tmp/unet.dot" "^  n[0-9]+ -> n[0-9]+ \[label=\"1\"\];$"
# the model file, loaded back by the sample and compared
expect "$out" "^saved $tmp/unet.json and $tmp/unet.safetensors$"
expect "$out" "^reloaded $tmp/unet: max \|score difference\| 0 over 256 test images, same predictions: yes$"
expect "$tmp/unet.json" '"type": "nn.Graph"'

exit $failed
