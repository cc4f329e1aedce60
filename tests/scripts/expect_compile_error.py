#!/usr/bin/env python3
"""expect_compile_error.py TEXT COMPILER... -- SOURCE: passes when compiling SOURCE fails with
TEXT in the compiler's output (a static_assert's message), fails when it compiles or fails for
another reason."""
import subprocess
import sys

text = sys.argv[1]
cmd = sys.argv[2:]
r = subprocess.run(cmd + ["-fsyntax-only"], capture_output=True, text=True)
out = r.stdout + r.stderr
if r.returncode == 0:
    print("compiled, but it must fail with: " + text)
    sys.exit(1)
if text not in out:
    print("failed, but not with: " + text + "\n" + out[-4000:])
    sys.exit(1)
print("refused as expected: " + text)
