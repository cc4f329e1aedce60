# run_status.sh: sourced by the samples' shell tests. run STATUS CMD... runs CMD with stdout in
# $out and stderr in $err (the caller sets both) and checks its exit status: on a mismatch it
# prints both and sets failed=1.
run() {
  local want=$1
  shift
  "$@" >"$out" 2>"$err"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $* exited $got, expected $want"
    sed 's/^/  stdout: /' "$out"
    sed 's/^/  stderr: /' "$err"
    failed=1
  fi
}
