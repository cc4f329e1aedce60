#!/usr/bin/env python3
"""test_readme_examples.py SCRIPT: scripts/readme_examples.py extracts every C++ block of a
README: fenced ```cpp and ```c++, at the margin or indented inside a list item, snippets
and whole programs; `needs` markers keep a block to builds with the feature, `skip` drops it,
and an unknown marker is an error."""
import os
import subprocess
import sys
import tempfile

README = """# t

```cpp
#include "a.h"
int main() { return 1; }
```

- a list item:
  ```c++
  #include "b.h"
  int in_list = 2;
  ```

<!-- readme_examples: needs nccl -->
```c++
int needs_nccl = 3;
```

<!-- readme_examples: skip (a fragment) -->
```cpp
this is not C++
```

```sh
echo not C++
```
"""


def extract(readme, *have):
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "README.md"), os.path.join(d, "out.cpp")
        with open(src, "w") as f:
            f.write(readme)
        r = subprocess.run([sys.executable, sys.argv[1], src, out, *have], capture_output=True, text=True)
        return r.returncode, (open(out).read() if r.returncode == 0 else r.stderr)


failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


code, cpp = extract(README)
check(code == 0, f"exit {code}: {cpp}")
check('#include "a.h"' in cpp and "int readme_example_1()" in cpp, "a ```cpp program is kept, main renamed")
check('#include "b.h"' in cpp and "\nint in_list = 2;" in cpp, "an indented ```c++ block is kept, dedented")
check("needs_nccl" not in cpp, "a block needing nccl is left out of a build without it")
check("not C++" not in cpp, "skip and non-C++ blocks are left out")
code, cpp = extract(README, "--have=cuda,nccl")
check(code == 0 and "int needs_nccl = 3;" in cpp, "a block needing nccl is built where nccl is")
code, err = extract("<!-- readme_examples: maybe -->\n```cpp\nint x;\n```\n")
check(code != 0 and "unknown readme_examples marker 'maybe'" in err, f"an unknown marker is refused: {err}")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
