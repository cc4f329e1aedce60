#!/usr/bin/env python3
"""test_check_twins.py SCRIPT: scripts/check-twins on small trees. Headers that agree with
nn/modules.def pass silently; an nn header that says "No twin yet" for an NN_TWIN, a missing
cudnn twin header and a twin header of an NN_MODULE are reported with exit 1."""
import sys

from script_trees import Checks

CLEAN = {
    "nn/modules.def": "// NN_TWIN(X) lists...\nNN_TWIN(ReLU)\nNN_MODULE(Sequential)\n",
    "nn/ReLU.h": "// ReLU.h: max(0, x). Twin: cudnn::ReLU (cudnn/ReLU.h).\n#pragma once\n",
    "cudnn/ReLU.h": "#pragma once\n",
    "nn/Sequential.h": "// Sequential.h: a chain. No twin yet: it computes nothing.\n",
}


def main():
    checks = Checks(sys.argv[1])
    checks.passes_silently(CLEAN)
    broken = dict(CLEAN)
    broken["nn/modules.def"] = "NN_TWIN(ReLU)\nNN_TWIN(GELU)\nNN_MODULE(Sequential)\nNN_MODULE(Mine)\n"
    broken["nn/ReLU.h"] = "// ReLU.h: max(0, x).\n// No twin yet.\n"
    broken["nn/GELU.h"] = "// GELU.h\n"
    broken["cudnn/Mine.h"] = "#pragma once\n"
    checks.reports(broken, ["nn/ReLU.h:2: says it has no twin, but nn/modules.def lists NN_TWIN(ReLU)",
                            "cudnn/GELU.h: missing, but nn/modules.def lists NN_TWIN(GELU)",
                            "cudnn/Mine.h: exists, but nn/modules.def lists NN_MODULE(Mine) (no twin)"])
    return checks.status()


if __name__ == "__main__":
    sys.exit(main())
