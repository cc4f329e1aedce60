"""script_trees.py: what the tests of the repository checkers (scripts/check-notes,
scripts/check-layers) share: running a checker on a small tree of files, and collecting
failed checks into one report and exit status."""
import pathlib
import subprocess
import sys
import tempfile


def run(script, files):
    """(exit status, stdout) of `script ROOT` on a temporary tree holding `files` (path: text)."""
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        p = subprocess.run([sys.executable, script, str(root)], capture_output=True, text=True)
        return p.returncode, p.stdout


class Checks:
    """The checks of one checker script: run(files) runs it on a tree, check(what, ok) records
    `what` when not ok, status() prints the failures (or "ok") and returns the exit status."""

    def __init__(self, script):
        self.script = script
        self.failures = []

    def run(self, files):
        return run(self.script, files)

    def passes_silently(self, files):
        rc, out = self.run(files)
        self.check(f"a clean tree passes silently (rc {rc}, output {out!r})", rc == 0 and out == "")

    def check(self, what, ok):
        if not ok:
            self.failures.append(what)

    def status(self):
        if self.failures:
            print("FAIL:\n  " + "\n  ".join(self.failures))
            return 1
        print("ok")
        return 0

    def reports(self, files, lines):
        """The checker exits 1 on `files` and prints exactly `lines` (in any order)."""
        rc, out = self.run(files)
        self.check(f"exit 1 on problems (rc {rc})", rc == 1)
        for line in lines:
            self.check(f"{line!r} is reported ({out!r})", line in out)
        self.check(f"only those {len(lines)} lines ({out!r})", len(out.strip().split("\n")) == len(lines))
