#!/usr/bin/env python3
"""test_check_layers.py SCRIPT: scripts/check-layers on small trees. Includes downwards, within
a layer and beside the file pass silently, distributed/ on train/ among them; an include up a
layer, by root path or by `../` (train/ on distributed/), and one between the siblings testkit/
and distributed/ are reported (file:line) with exit 1. Inside cudnn/, includes down the
sub-folders (ops/ on kernels/ and core/, kernels/ on core/, any of them on cudnn/'s own headers)
pass, and core/ on ops/ or kernels/ and kernels/ on ops/ are reported."""
import sys

from script_trees import Checks

CLEAN = {
    "tensor/Tensor.h": "#pragma once\n#include <vector>\n",
    "nn/Module.h": '#include "tensor/Tensor.h"\n#include "Buffers.h"\n',
    "nn/Buffers.h": "#pragma once\n",
    "cudnn/Twin.h": '#include "nn/Module.h"\n#include "core/Handle.h"\n',
    "cudnn/core/Handle.h": '#include "../Twin.h"\n',
    "convert/Convert.cpp": '#include "cudnn/Twin.h"\n',
    "train/Data.h": '#include "nn/Module.h"\n#include "tensor/Tensor.h"\n',
    "distributed/Dist.h": '#include "cudnn/Twin.h"\n#include "nn/Module.h"\n',
    "distributed/DistributedSampler.h": '#include "train/Data.h"\n',
    "tests/test_x.cpp": '#include "distributed/Dist.h"\n#include "train/Data.h"\n',
}


def main():
    checks = Checks(sys.argv[1])
    checks.passes_silently(CLEAN)
    broken = dict(CLEAN)
    broken["cudnn/dist/Dist.h"] = '// forwarding header\n#include "distributed/Dist.h"\n'
    broken["nn/Up.h"] = '#include "../cudnn/Twin.h"\n'
    broken["train/Sampler.h"] = '#include "distributed/Dist.h"\n'
    broken["train/Checkpoint.h"] = '#include "convert/ModelFile.h"\n'
    broken["testkit/Kit.h"] = '#include "distributed/Dist.h"\n'
    checks.reports(broken, ["cudnn/dist/Dist.h:2: cudnn includes distributed/Dist.h (distributed)",
                            "nn/Up.h:1: nn includes ../cudnn/Twin.h (cudnn)",
                            "testkit/Kit.h:1: testkit includes distributed/Dist.h (distributed)",
                            "train/Sampler.h:1: train includes distributed/Dist.h (distributed)",
                            "train/Checkpoint.h:1: train includes convert/ModelFile.h (convert)"])
    # inside cudnn/: core/ stands below ops/ and kernels/, kernels/ below ops/
    folders = dict(CLEAN)
    folders.update({
        "cudnn/Config.h": "#pragma once\n",
        "cudnn/core/Config.cpp": '#include "cudnn/Config.h"\n#include "Handle.h"\n',
        "cudnn/kernels/Pool.h": '#include "cudnn/core/Handle.h"\n#include "../Config.h"\n',
        "cudnn/ops/pool.h": '#include "cudnn/kernels/Pool.h"\n#include "../core/Handle.h"\n',
        "cudnn/Pooling.cpp": '#include "ops/pool.h"\n#include "kernels/Pool.h"\n',
    })
    checks.passes_silently(folders)
    up = dict(folders)
    up["cudnn/core/Config.cpp"] += '#include "cudnn/ops/pool.h"\n'
    up["cudnn/core/Layout.h"] = '#include "../kernels/Pool.h"\n'
    up["cudnn/kernels/PoolDims.h"] = '#include "cudnn/ops/pool.h"\n'
    checks.reports(up, ["cudnn/core/Config.cpp:3: cudnn/core includes cudnn/ops/pool.h (cudnn/ops)",
                        "cudnn/core/Layout.h:1: cudnn/core includes ../kernels/Pool.h (cudnn/kernels)",
                        "cudnn/kernels/PoolDims.h:1: cudnn/kernels includes cudnn/ops/pool.h (cudnn/ops)"])
    return checks.status()


if __name__ == "__main__":
    sys.exit(main())
