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

# Bad inputs: each an error with status 2 at once (timeout 5 catches a loop), nothing started.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad() {  # name, expected text, launch arguments...
  local name=$1 text=$2
  shift 2
  local start=$SECONDS
  out=$(timeout 5 "$launch" "$@" 2>&1); st=$?
  check "$name: status 2 naming it (got $st: $out)" '[ $st -eq 2 ] && grep -qF -- "$text" <<<"$out" && [ $((SECONDS - start)) -lt 4 ]'
}
for opt in -n --nnodes --node-rank --master-addr --master-port; do
  bad "$opt without its value" "expected a value after $opt" "$opt"
done
bad "-n 0" "expected -n >= 1" -n 0 true
bad "port 0" "expected --master-port in 1-65535, got 0" --master-port 0 true
bad "port 70000" "expected --master-port in 1-65535, got 70000" --master-port 70000 true
bad "port text" "expected a number for master-port, got 'http'" --master-port http true
bad "no program" "usage: scripts/launch -n N" -n 2
bad "--help prints the usage" "--master-port P" --help
for g in 'x[$(touch '"$tmp"'/pwned)]' '1+1' '-1' '1e3'; do
  out=$(LAUNCH_GRACE="$g" timeout 5 "$launch" -n 1 true 2>&1); st=$?
  check "LAUNCH_GRACE='$g' is refused, not evaluated" '[ $st -eq 2 ] && grep -qF "expected LAUNCH_GRACE to be seconds" <<<"$out"'
done
check "LAUNCH_GRACE's text never ran" '[ ! -e "$tmp/pwned" ]'
out=$(LAUNCH_GRACE=0.5 "$launch" -n 1 true 2>&1); st=$?
check "LAUNCH_GRACE=0.5 is fine" '[ $st -eq 0 ]'

# Leading zeros are decimal: 08 is 8 ranks, 010 ten (not octal).
for n in 08 010; do
  out=$("$launch" -n "$n" bash -c 'echo "w=$WORLD_SIZE"' 2>&1); st=$?
  want=$((10#$n))
  check "-n $n starts $want ranks" '[ $st -eq 0 ] && [ "$(grep -c "^w=$want$" <<<"$out")" -eq "$want" ]'
done

# A rank behind a wrapper: what the wrapper started is stopped with it (process groups).
start=$SECONDS
out=$(LAUNCH_GRACE=1 timeout 30 "$launch" -n 2 bash -c \
  'if [ "$RANK" = 1 ]; then sleep 0.5; exit 3; fi; sleep 300 >/dev/null 2>&1 & echo $! > "'"$tmp"'/grandchild"; wait' 2>&1); st=$?
sleep 0.2
check "the wrapper's rank failure is launch's status" '[ $st -eq 3 ]'
# stopped: gone, or a zombie nobody reaped yet (a container's init may never reap orphans)
running() { kill -0 "$1" 2>/dev/null && ! awk '{ exit ($3 == "Z" ? 0 : 1) }' "/proc/$1/stat" 2>/dev/null; }
check "the wrapped program of the other rank was stopped" '[ -s "$tmp/grandchild" ] && ! running "$(cat "$tmp/grandchild")"'
check "within 10 s" '[ $((SECONDS - start)) -lt 10 ]'
[ -s "$tmp/grandchild" ] && kill "$(cat "$tmp/grandchild")" 2>/dev/null

# Many short runs under load (two busy loops on a 2-core machine): the wait loop never loses
# a rank's status ("finished: unbound variable" before), each run exits 0. Bounded: 6 s.
busy=()
for _ in 1 2; do (while :; do :; done) & busy+=($!); done
runs=0 bad_runs=0
until_t=$((SECONDS + 6))
while [ $SECONDS -lt $until_t ] && [ $runs -lt 40 ]; do
  out=$(timeout 20 "$launch" -n 4 true 2>&1) || { bad_runs=$((bad_runs + 1)); echo "$out"; }
  runs=$((runs + 1))
done
kill "${busy[@]}" 2>/dev/null
wait "${busy[@]}" 2>/dev/null
echo "runs under load: $runs, failed: $bad_runs"
check "every run under load exits 0 ($runs runs)" '[ $runs -ge 3 ] && [ $bad_runs -eq 0 ]'
exit $fail
