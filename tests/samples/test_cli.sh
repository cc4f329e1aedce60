#!/usr/bin/env bash
# test_cli.sh FASHION_MNIST CONVERT_DEMO CONVNET_BENCHMARK: the samples' command lines as a
# user meets them: --flag=value works, a mistake prints one line and a hint to --help (not
# the usage) with status 2, --help exits 0 and lists what there is, and a run that needs a
# GPU where none is visible says so before any work (CUDA_VISIBLE_DEVICES= hides them all).
set -uo pipefail
fashion=$1 demo=$2 bench=$3
failed=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

# run STATUS CMD...: CMD's stdout in $out, stderr in $err, its exit status checked
source "$(dirname "$0")/run_status.sh"
# expect FILE PATTERN: the file has a line matching the extended regex
expect() {
  if ! grep -Eq -- "$2" "$1"; then
    echo "FAIL: no line matching '$2' in:"
    sed 's/^/  /' "$1"
    failed=1
  fi
}
# lines FILE N: the file has N lines
lines() {
  local n
  n=$(wc -l <"$1")
  if [ "$n" -ne "$2" ]; then
    echo "FAIL: $n lines, expected $2:"
    sed 's/^/  /' "$1"
    failed=1
  fi
}

# a mistake: the problem on one line, then the hint; no usage
run 2 "$fashion" --epochs=x
expect "$err" "^fashion_mnist: --epochs expects an integer in \[1, 1000\], got 'x'$"
expect "$err" "^Try 'fashion_mnist --help' for the options.$"
lines "$err" 2
run 2 "$bench" --nets L1,nope
lines "$err" 2
# --flag=value: the value is checked as with a space (here, refused after being read whole)
run 2 "$fashion" --batch-size=0
expect "$err" "--batch-size expects an integer in \[1, 65536\], got '0'"
run 2 "$fashion" --quiet=yes
expect "$err" "--quiet takes no value"
run 2 "$fashion" --save=/nonexistent/dir/model
expect "$err" "--save: cannot write '/nonexistent/dir/model'"

# --help: the usage on stdout, status 0
run 0 "$demo" --help
expect "$out" "^usage: convert_demo"
run 2 "$demo" --bogus
expect "$err" "^convert_demo: unknown option --bogus"
lines "$err" 2
run 0 "$bench" --help
expect "$out" "--nets LIST .*,fashion or all"
run 0 "$fashion" --help
expect "$out" "^usage: fashion_mnist"

# no GPU visible: the cause, at once (before "Fashion-MNIST from ...": no data is read)
run 2 env CUDA_VISIBLE_DEVICES= "$fashion" --gpus 2 --data /nonexistent
expect "$err" "--gpus 2 needs 2 CUDA devices, and none is visible|--gpus needs a build with NCCL"
lines "$out" 0
run 2 env CUDA_VISIBLE_DEVICES= "$fashion" --backend=cudnn --data /nonexistent
expect "$err" "--backend cudnn needs a CUDA device, and none is visible \(--backend nn trains on the CPU\)"
# the benchmark times the CPU when no backend is asked for and no GPU is visible
run 0 env CUDA_VISIBLE_DEVICES= "$bench" --nets=L5 --batch 1 --iterations 1 --warmup 0
expect "$out" "no CUDA device visible: timing the nn backend on the CPU"
expect "$out" "^L5 "
run 2 env CUDA_VISIBLE_DEVICES= "$bench" --backend cudnn
expect "$err" "--backend cudnn needs a CUDA device, and none is visible \(--backend nn times the CPU\)"
run 2 env CUDA_VISIBLE_DEVICES= "$bench" --dtype float16
expect "$err" "--dtype float16 needs a GPU \(the cudnn backend\), and no CUDA device is visible"

exit $failed
