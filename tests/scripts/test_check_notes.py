#!/usr/bin/env python3
"""test_check_notes.py SCRIPT: scripts/check-notes on small trees (no git: the fallback walk).
A Note cited by `See Note [..]`, by a mention wrapped over two comment lines, or restated on
a second comment line passes; a Note nobody cites and a citation of a Note defined nowhere are
reported (file:line) with exit 1; build trees are not read; a clean tree prints nothing."""
import pathlib
import subprocess
import sys
import tempfile

CLEAN = {
    "a.h": "// Note [Cited]\n// the rule\nint a;\n// Note [Restated]: the rule\n// Note [Wrapped title\n// here]\n",
    "b.cpp": "int b;  // See Note [Cited]\n// Note [Restated]: the gist, where it applies\n",
    "c.py": "# Note [Hash comment]: the rule\nx = 1  # (Note [Wrapped\n# title here] in a.h)\n",
    "d.md": "See Note [Hash comment].\n",
    # a build tree's copy would cite or define anything: not read
    "build/gen.h": "// Note [Only in the build tree]\n// See Note [Nowhere]\n",
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
    broken["e.cpp"] = "int e;\n// Note [Lonely]\n// nobody cites this\nint f;  // See Note [Missing]\n"
    rc, out = run(script, broken)
    check(f"exit 1 on problems (rc {rc})", rc == 1)
    check(f"an uncited Note is reported at its definition ({out!r})",
          "e.cpp:2: Note [Lonely] is defined but never cited" in out)
    check(f"a citation of an undefined Note is reported ({out!r})",
          "e.cpp:4: Note [Missing] is cited but defined nowhere" in out)
    check(f"only those two ({out!r})", len(out.strip().split("\n")) == 2)

    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
