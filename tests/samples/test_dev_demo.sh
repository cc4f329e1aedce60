#!/usr/bin/env bash
# test_dev_demo.sh SOURCE_ROOT: `scripts/dev demo` builds only the sample it runs
# (ninja -C build samples/fashion_mnist), not every target of the tree. Runs a copy of
# scripts/dev in a scratch tree with stand-ins for ninja, dpkg-query and the sample.
set -euo pipefail
src=$1
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/scripts" "$tree/build/samples" "$tree/bin"
cp "$src/scripts/dev" "$tree/scripts/dev"
touch "$tree/build/build.ninja"  # configured already: no meson setup
cat >"$tree/bin/ninja" <<'STUB'
#!/bin/sh
echo "$*" >>"$NINJA_LOG"
STUB
cat >"$tree/bin/dpkg-query" <<'STUB'
#!/bin/sh
echo "install ok installed"
STUB
cat >"$tree/build/samples/fashion_mnist" <<'STUB'
#!/bin/sh
echo "sample ran with: $*"
STUB
chmod +x "$tree/bin/ninja" "$tree/bin/dpkg-query" "$tree/build/samples/fashion_mnist"
export NINJA_LOG="$tree/ninja.log"
ran=$(PATH="$tree/bin:$PATH" "$tree/scripts/dev" demo --epochs 1)
built=$(cat "$NINJA_LOG")
if [ "$built" != "-C build samples/fashion_mnist" ]; then
  echo "FAIL: scripts/dev demo ran 'ninja $built', expected 'ninja -C build samples/fashion_mnist'"
  exit 1
fi
if [ "$ran" != "sample ran with: --epochs 1" ]; then
  echo "FAIL: the sample was not run with the demo's arguments: $ran"
  exit 1
fi
echo "scripts/dev demo built samples/fashion_mnist only and ran it"
