#!/usr/bin/env python3
"""Extracts the C++ blocks of README.md (fenced ```cpp or ```c++, indented or not: a block
inside a list item counts too) into one C++ file, so the build compiles and links them
against the libraries (tests/meson.build) and an example that stops compiling fails CI.

A block with its own main() is kept as it is, main renamed (so it must end in a return, as
the renamed function gets no implicit one); any other block is a snippet:
its #include lines go to the top of the file, the rest becomes the body of a function.
The program's main() runs nothing: the examples may need a GPU, the point is that they build.

An HTML comment on the line before a fence says when to leave a block out:
  <!-- readme_examples: needs nccl -->    only where the build has these features (--have)
  <!-- readme_examples: skip (why) -->     never (say why: a fragment, not code)

usage: readme_examples.py README.md OUT.cpp [--have=cuda,nccl]
"""
import re
import sys

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>cpp|c\+\+)[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                   flags=re.S | re.M)
MARKER = re.compile(r"<!--\s*readme_examples:\s*(?P<what>.*?)\s*-->\s*$")


def blocks(text, have):
    """(line number, code) of each C++ block to compile."""
    out = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.search(before)
        if marker:
            what = marker.group("what")
            if what.startswith("skip"):
                continue
            needs = re.fullmatch(r"needs\s+([\w, ]+)", what)
            if not needs:
                sys.exit(f"README.md:{line - 1}: unknown readme_examples marker '{what}' "
                         "(expected 'needs FEATURE[, ...]' or 'skip (why)')")
            if any(f not in have for f in re.split(r"[,\s]+", needs.group(1).strip())):
                continue
        indent = m.group("indent")
        code = "\n".join(l[len(indent):] if l.startswith(indent) else l.lstrip()
                         for l in m.group("body").splitlines())
        out.append((line, code))
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--have=")]
    have = set()
    for a in sys.argv[1:]:
        if a.startswith("--have="):
            have |= {f for f in a[len("--have="):].split(",") if f}
    if len(args) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    readme, out = args
    text = open(readme, encoding="utf-8").read()
    found = blocks(text, have)
    if not found:
        sys.exit(f"{readme}: no ```cpp or ```c++ blocks found")
    includes, bodies = [], []
    for i, (line, block) in enumerate(found, 1):
        lines = block.splitlines()
        for l in lines:
            if l.startswith("#include") and l not in includes:
                includes.append(l)
        rest = "\n".join(l for l in lines if not l.startswith("#include"))
        where = f"// {readme}:{line}, C++ block {i}"
        if re.search(r"\bint\s+main\s*\(", rest):
            rest = re.sub(r"\bint\s+main\s*\(", f"int readme_example_{i}(", rest)
            bodies.append(f"{where}\n{rest}\n")
        else:
            bodies.append(f"{where}\nint readme_example_{i}() {{\n{rest}\n  return 0;\n}}\n")
    with open(out, "w", encoding="utf-8") as f:
        f.write(f"// Generated from {readme} by scripts/readme_examples.py: do not edit.\n")
        f.write("\n".join(includes) + "\n\n")
        f.write("\n".join(bodies))
        f.write("\nint main() { return 0; }\n")


if __name__ == "__main__":
    main()
