#!/usr/bin/env python3
"""test_check_layers.py SCRIPT: scripts/check-layers on small trees. Includes downwards, within
a layer and beside the file pass silently; an include up a layer, by root path or by `../`,
and one between the siblings train/ and distributed/ are reported (file:line) with exit 1."""
import sys

from script_trees import Checks

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


def main():
    checks = Checks(sys.argv[1])
    checks.passes_silently(CLEAN)
    broken = dict(CLEAN)
    broken["cudnn/dist/Dist.h"] = '// forwarding header\n#include "distributed/Dist.h"\n'
    broken["nn/Up.h"] = '#include "../cudnn/Twin.h"\n'
    broken["train/Sampler.h"] = '#include "distributed/Dist.h"\n'
    checks.reports(broken, ["cudnn/dist/Dist.h:2: cudnn includes distributed/Dist.h (distributed)",
                            "nn/Up.h:1: nn includes ../cudnn/Twin.h (cudnn)",
                            "train/Sampler.h:1: train includes distributed/Dist.h (distributed)"])
    return checks.status()


if __name__ == "__main__":
    sys.exit(main())
