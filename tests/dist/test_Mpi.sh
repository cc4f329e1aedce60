#!/usr/bin/env bash
# The MPI backend as real processes under mpirun (tests/dist/mpi_worker): collectives and
# DistributedDataParallel on CPU tensors at world sizes 2 and 4 (bit-identical to one process,
# buckets launched from the backward hooks; channels-last filters too, and refused where the
# ranks' layouts differ), ShardedDataParallel (stages 1-3 bit-identical to one process, its
# memory by the CPU allocator's counts, models that differ refused, a tiny GPT-2 block by block
# at 2 and 4 ranks, a checkpoint
# saved at 4 ranks resumed at 2 and alone),
# then a killed rank (DDP and sharded) and a hung rank, each an error on the others within a
# bounded time. Usage: test_Mpi.sh MPIRUN WORKER
set -u
mpirun="$1"
worker="$2"
fail=0
check() {  # name, condition
  if eval "$2"; then echo "ok: $1"; else echo "FAILED: $1"; fail=1; fi
}
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000)); }
# CI runs as root on 2 cores: allow both. --enable-recovery keeps the job running when a rank
# dies, so the others report it themselves (else mpirun kills them first).
# The free port port() finds can be taken before rank 0 listens on it (an ephemeral port of a
# test running beside this one): the rendezvous then says "Address already in use", and the job
# is run again on another port, up to three times.
run() {  # np, case, timeout seconds for the job, the case's arguments
  local np="$1" case="$2" seconds="$3" out st try
  shift 3
  for try in 1 2 3; do
    out=$(CUDNN_NN_DIST_NCCL=0 timeout "$seconds" "$mpirun" --allow-run-as-root --oversubscribe --enable-recovery \
      --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none -np "$np" -x MASTER_PORT="$(port)" -x CUDNN_NN_DIST_TIMEOUT -x CUDNN_NN_DIST_NCCL \
      "$worker" "$case" "$@" 2>&1)
    st=$?
    grep -q "Address already in use" <<<"$out" || break
    echo "(port taken before the rendezvous listened: again on another port)"
  done
  printf '%s\n' "$out"
  return $st
}

# One process without mpirun: no MPI at all (a trivial CPU backend), the same results.
out=$(CUDNN_NN_DIST_NCCL=0 timeout 60 "$worker" collectives 2>&1; CUDNN_NN_DIST_NCCL=0 timeout 60 "$worker" ddp 2>&1
  CUDNN_NN_DIST_NCCL=0 timeout 60 "$worker" sharded 2>&1); st=$?
echo "$out"
check "one process without mpirun: collectives, DDP and sharded data parallelism on the CPU" \
  'grep -q "rank 0: collectives ok over self" <<<"$out" && grep -q "rank 0: ddp bit-identical to one process" <<<"$out" && grep -q "rank 0: sharded stages 1-3 bit-identical" <<<"$out"'

for np in 2 4; do
  out=$(CUDNN_NN_DIST_TIMEOUT=20 run $np collectives 60); st=$?
  echo "$out"
  check "collectives at world size $np" '[ $st -eq 0 ] && [ "$(grep -c "collectives ok over MPI" <<<"$out")" -eq $np ]'
  out=$(CUDNN_NN_DIST_TIMEOUT=20 run $np ddp 60); st=$?
  echo "$out"
  check "DDP at world size $np: bit-identical to one process, buckets from hooks" \
    '[ $st -eq 0 ] && [ "$(grep -c "ddp bit-identical to one process, [0-9]* buckets from hooks" <<<"$out")" -eq $np ]'
  out=$(CUDNN_NN_DIST_TIMEOUT=20 run $np ddp-channels-last 60); st=$?
  echo "$out"
  check "DDP at world size $np with channels-last filters: bit-identical to one process" \
    '[ $st -eq 0 ] && [ "$(grep -c "ddp channels-last bit-identical to one process" <<<"$out")" -eq $np ]'
  out=$(CUDNN_NN_DIST_TIMEOUT=20 run $np sharded 60); st=$?
  echo "$out"
  check "sharded stages 1-3 at world size $np: bit-identical to one process (a tied weight too), stage 3 memory (the CPU allocator's counts and the wrapper's own) within 1.1 x one process's / N + a block" \
    '[ $st -eq 0 ] && [ "$(grep -c "sharded stages 1-3 bit-identical to one process .*a tied weight.*stage 3 allocator peak" <<<"$out")" -eq $np ]'
  out=$(CUDNN_NN_DIST_TIMEOUT=20 run $np sharded-mismatch 60); st=$?
  echo "$out"
  check "sharded models that differ at world size $np: refused on every rank, naming the parameter and ranks" \
    '[ $st -eq 0 ] && [ "$(grep -c "sharded models refused" <<<"$out")" -eq $np ]'
done

# A language model sharded block by block (the default wrap policy for nn::DecoderLM).
for np in 2 4; do
  out=$(CUDNN_NN_DIST_TIMEOUT=20 run $np sharded-lm 60); st=$?
  echo "$out"
  check "sharded GPT-2 at world size $np, stages 1-3 block by block: bit-identical to one process" \
    '[ $st -eq 0 ] && [ "$(grep -c "sharded GPT-2 stages 1-3 block by block bit-identical to one process" <<<"$out")" -eq $np ]'
done

# Sharded checkpoints: saved at world size 4, resumed at 2 and alone (resharding), each also
# into stages 2 and 1 and into one process without sharding, bit-identical to an unbroken run.
ckpt=$(mktemp -d)
trap 'rm -rf "$ckpt"' EXIT
out=$(CUDNN_NN_DIST_TIMEOUT=20 run 4 sharded-save 60 "$ckpt/run"); st=$?
echo "$out"
check "sharded checkpoint saved at world size 4: a shard per rank and a manifest" \
  '[ $st -eq 0 ] && [ "$(grep -c "sharded checkpoint saved at world size 4" <<<"$out")" -eq 4 ] && [ -f "$ckpt/run/manifest.json" ] && [ "$(ls "$ckpt/run" | grep -c "^shard-[0-3]-of-4.safetensors$")" -eq 4 ] && [ -z "$(ls "$ckpt/run" | grep tmp)" ]'
out=$(CUDNN_NN_DIST_TIMEOUT=20 run 2 sharded-resume 60 "$ckpt/run"); st=$?
echo "$out"
check "sharded checkpoint of world size 4 resumed at world size 2: bit-identical to an unbroken run" \
  '[ $st -eq 0 ] && [ "$(grep -c "resumed at world size 2 (stages 3, 2, 1) and in one process, bit-identical" <<<"$out")" -eq 2 ]'
out=$(CUDNN_NN_DIST_NCCL=0 timeout 60 "$worker" sharded-resume "$ckpt/run" 2>&1); st=$?
echo "$out"
check "sharded checkpoint of world size 4 resumed by one process without mpirun: bit-identical" \
  '[ $st -eq 0 ] && grep -q "rank 0: sharded checkpoint of world size 4 resumed at world size 1" <<<"$out"'

out=$(CUDNN_NN_DIST_TIMEOUT=20 run 2 layouts-differ 60); st=$?
echo "$out"
check "DDP with channels-last filters on one rank only: refused on every rank, naming the filter" \
  '[ $st -eq 0 ] && [ "$(grep -c "layouts refused" <<<"$out")" -eq 2 ]'


for np in 2 4; do
  last=$((np - 1))
  start=$SECONDS
  out=$(CUDNN_NN_DIST_TIMEOUT=30 run $np killed 60); st=$?
  echo "$out"
  check "killed rank at world size $np: rank 0 names it" \
    'grep -q "rank 0: error after [0-9.]* s: .*waiting for the gradient all-reduce: .*rank $last exited" <<<"$out"'
  for r in $(seq 1 $((np - 2))); do
    check "killed rank at world size $np: rank $r hears rank 0's reason" \
      'grep -q "rank $r: error after [0-9.]* s: .*rank 0 aborted: .*rank $last exited" <<<"$out"'
  done
  check "killed rank at world size $np: within 15 s, not the 30 s timeout" '[ $((SECONDS - start)) -lt 15 ]'
done

start=$SECONDS
out=$(CUDNN_NN_DIST_TIMEOUT=30 run 2 sharded-killed 60); st=$?
echo "$out"
check "killed rank under ShardedDataParallel at world size 2: rank 0 names it, within 15 s" \
  'grep -q "rank 0: error after [0-9.]* s: .*waiting for the parameters. all-gather: .*rank 1 exited" <<<"$out" && [ $((SECONDS - start)) -lt 15 ]'

for np in 2 4; do
  last=$((np - 1))
  start=$SECONDS
  out=$(CUDNN_NN_DIST_TIMEOUT=2 run $np hung 60); st=$?
  echo "$out"
  for r in $(seq 0 $((last - 1))); do  # each fails at its own timeout (or hears rank 0's first)
    check "hung rank at world size $np: rank $r fails at the timeout" \
      'grep -q "rank $r: error after [0-9.]* s: .*waiting for the gradient all-reduce: .*timed out after 2 s" <<<"$out"'
  done
  check "hung rank at world size $np: the hung rank $last fails when it comes back, naming rank 0's reason" \
    'grep -q "rank $last: error after [0-9.]* s: .*rank 0 aborted: .*timed out after 2 s" <<<"$out"'
  check "hung rank at world size $np: within 15 s" '[ $((SECONDS - start)) -lt 15 ]'
done
exit $fail
