#!/usr/bin/env python3
"""Extracts the ```cpp blocks of README.md into one C++ file, so the build compiles and links
them against the libraries (tests/meson.build) and an example that stops compiling fails CI.

A block with its own main() is kept as it is, main renamed; any other block is a snippet:
its #include lines go to the top of the file, the rest becomes the body of a function.
The program's main() runs nothing: the examples need a GPU, the point is that they build.

usage: readme_examples.py README.md OUT.cpp
"""
import re
import sys


def main():
    readme, out = sys.argv[1], sys.argv[2]
    text = open(readme, encoding="utf-8").read()
    blocks = re.findall(r"^```cpp[ \t]*\n(.*?)^```", text, flags=re.S | re.M)
    if not blocks:
        sys.exit(f"{readme}: no ```cpp blocks found")
    includes, bodies = [], []
    for i, block in enumerate(blocks, 1):
        lines = block.splitlines()
        for line in lines:
            if line.startswith("#include") and line not in includes:
                includes.append(line)
        rest = "\n".join(l for l in lines if not l.startswith("#include"))
        if re.search(r"\bint\s+main\s*\(", rest):
            rest = re.sub(r"\bint\s+main\s*\(", f"int readme_example_{i}(", rest)
            bodies.append(f"// README.md, C++ block {i}\n{rest}\n")
        else:
            bodies.append(f"// README.md, C++ block {i}\nint readme_example_{i}() {{\n{rest}\n  return 0;\n}}\n")
    with open(out, "w", encoding="utf-8") as f:
        f.write(f"// Generated from {readme} by scripts/readme_examples.py: do not edit.\n")
        f.write("\n".join(includes) + "\n\n")
        f.write("\n".join(bodies))
        f.write("\nint main() { return 0; }\n")


if __name__ == "__main__":
    main()
