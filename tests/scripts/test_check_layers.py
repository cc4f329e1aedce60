#!/usr/bin/env python3
"""test_check_layers.py SCRIPT: scripts/check-layers on small trees. Includes downwards, within
a layer and beside the file pass silently; an include up a layer, by root path or by `../`,
and one between the siblings train/ and distributed/ are reported (file:line) with exit 1."""
import pathlib
import subprocess
import sys
import tempfile

CLEAN = {
    "tensor/Tensor.h": "#pragma once\n#include <vector>\n",
    "nn/Module.h": '#include "tensor/Tensor.h"\n#include "Buffers.h"\n',
    "nn/Buffers.h": "#pragma once\n",
    "cudnn/Twin.h": '#include "nn/Module.h"\n#include "core/Handle.h"\n',
    "cudnn/core/Handle.h": '#include "../Twin.h"\n',
    "convert/Convert.cpp": '#include "cudnn/Twin.h"\n',
    "train/Data.h": '#include "convert/Convert.h"\n#include "tensor/Tensor.h"\n',
    "distributed/Dist.h": '#include "cudnn/Twin.h"\n#include "nn/Module.h"\n',
    "tests/test_x.cpp": '#include "distributed/Dist.h"\n#include "train/Data.h"\n',
}


def run(script, files):
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        p = subprocess.run([sys.executable, script, str(root)], capture_output=True, text=True)
        return p.returncode, p.stdout


def main():
    script = sys.argv[1]
    failures = []

    def check(what, ok):
        if not ok:
            failures.append(what)

    rc, out = run(script, CLEAN)
    check(f"a clean tree passes silently (rc {rc}, output {out!r})", rc == 0 and out == "")

    broken = dict(CLEAN)
    broken["cudnn/dist/Dist.h"] = '// forwarding header\n#include "distributed/Dist.h"\n'
    broken["nn/Up.h"] = '#include "../cudnn/Twin.h"\n'
    broken["train/Sampler.h"] = '#include "distributed/Dist.h"\n'
    rc, out = run(script, broken)
    check(f"exit 1 on problems (rc {rc})", rc == 1)
    for line in ("cudnn/dist/Dist.h:2: cudnn includes distributed/Dist.h (distributed)",
                 "nn/Up.h:1: nn includes ../cudnn/Twin.h (cudnn)",
                 "train/Sampler.h:1: train includes distributed/Dist.h (distributed)"):
        check(f"{line!r} is reported ({out!r})", line in out)
    check(f"only those three ({out!r})", len(out.strip().split("\n")) == 3)

    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
