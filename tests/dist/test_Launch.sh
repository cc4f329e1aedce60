#!/usr/bin/env bash
# scripts/launch with tests/dist/launch_probe (no GPU): the environment reaches every rank, a
# failing rank's status comes back and the others are stopped, a stuck rank is killed; each
# within a bounded time. Usage: test_Launch.sh LAUNCH PROBE
set -u
launch="$1"
probe="$2"
fail=0
check() {  # name, condition
  if eval "$2"; then echo "ok: $1"; else echo "FAILED: $1"; fail=1; fi
}
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000)); }

out=$(MASTER_PORT=$(port) timeout 60 "$launch" -n 3 "$probe" 2>&1); st=$?
echo "$out"
check "three ranks run, status 0" '[ $st -eq 0 ]'
for r in 0 1 2; do check "rank $r saw its environment" 'grep -q "rank $r of 3 (local $r of 3) ok" <<<"$out"'; done

start=$SECONDS
out=$(MASTER_PORT=$(port) timeout 60 "$launch" -n 3 "$probe" --exit-rank 1 --code 3 2>&1); st=$?
echo "$out"
check "a rank's failure is launch's status" '[ $st -eq 3 ]'
check "launch names the failed rank" 'grep -q "launch: rank 1 (pid [0-9]*) exited with status 3; stopping the other ranks" <<<"$out"'
check "within 20 s" '[ $((SECONDS - start)) -lt 20 ]'

start=$SECONDS
out=$(LAUNCH_GRACE=1 MASTER_PORT=$(port) timeout 60 "$launch" -n 2 "$probe" --hang-rank 1 2>&1); st=$?
echo "$out"
check "a stuck rank is stopped when another fails" '[ $st -eq 4 ]'
check "within 20 s (not the stuck rank's 600 s)" '[ $((SECONDS - start)) -lt 20 ]'

out=$("$launch" -n 2 --nnodes 3 --node-rank 1 --master-addr host0 --master-port 1234 \
  bash -c 'echo "env $RANK/$WORLD_SIZE local $LOCAL_RANK/$LOCAL_WORLD_SIZE at $MASTER_ADDR:$MASTER_PORT"' 2>&1); st=$?
echo "$out"
check "the second of 3 hosts runs ranks 2 and 3 of 6" \
  '[ $st -eq 0 ] && grep -q "env 2/6 local 0/2 at host0:1234" <<<"$out" && grep -q "env 3/6 local 1/2 at host0:1234" <<<"$out"'

out=$("$launch" -n x "$probe" 2>&1); st=$?
check "bad -n is an error naming it" '[ $st -eq 2 ] && grep -q "expected a number for nproc-per-node" <<<"$out"'
exit $fail
