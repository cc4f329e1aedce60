#!/usr/bin/env python3
"""test_check_notes.py SCRIPT: scripts/check-notes on small trees (no git: the fallback walk).
A Note cited by `See Note [..]`, by a mention wrapped over two comment lines, or restated on
a second comment line passes; a Note nobody cites and a citation of a Note defined nowhere are
reported (file:line) with exit 1; build trees are not read; a clean tree prints nothing."""
import sys

from script_trees import Checks

CLEAN = {
    "a.h": "// Note [Cited]\n// the rule\nint a;\n// Note [Restated]: the rule\n// Note [Wrapped title\n// here]\n",
    "b.cpp": "int b;  // See Note [Cited]\n// Note [Restated]: the gist, where it applies\n",
    "c.py": "# Note [Hash comment]: the rule\nx = 1  # (Note [Wrapped\n# title here] in a.h)\n",
    "d.md": "See Note [Hash comment].\n",
    # a build tree's copy would cite or define anything: not read
    "build/gen.h": "// Note [Only in the build tree]\n// See Note [Nowhere]\n",
}


def main():
    checks = Checks(sys.argv[1])
    checks.passes_silently(CLEAN)
    # an uncited Note is reported at its definition, a citation of an undefined one where it is
    broken = dict(CLEAN)
    broken["e.cpp"] = "int e;\n// Note [Lonely]\n// nobody cites this\nint f;  // See Note [Missing]\n"
    checks.reports(broken, ["e.cpp:2: Note [Lonely] is defined but never cited",
                            "e.cpp:4: Note [Missing] is cited but defined nowhere"])
    return checks.status()


if __name__ == "__main__":
    sys.exit(main())
