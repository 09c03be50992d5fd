#!/usr/bin/env python3
"""Fails when a kfuse library includes a header of a library above it.

The libraries are linked one way (CMake's target_link_libraries edges say
the same); this check reads the #include lines, so that a header-only
dependency the linker never sees is caught too. Usage:
    scripts/check-layering.py [SOURCE_DIR]
Prints each offending include as file:line and exits 1, else prints a
summary and exits 0.
"""
import pathlib
import re
import sys

# Each folder with the folders it may include from (besides itself and the
# public include/kfuse). A folder not listed here is not checked.
ALLOWED = {
    "ir": set(),
    "frontend": {"ir"},
    "autodiff": {"ir", "frontend"},
    "analysis": {"ir"},
    "transforms": {"ir", "analysis"},
    "codegen": {"ir", "analysis", "transforms"},
    "runtime": set(),
    "compiler": {"ir", "frontend", "autodiff", "analysis", "transforms",
                 "codegen", "runtime"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^/"]+)/')
SOURCES = ("*.h", "*.cpp", "*.inc", "*.td")


def violations(root):
    for folder, allowed in sorted(ALLOWED.items()):
        for pattern in SOURCES:
            for path in sorted((root / folder).rglob(pattern)):
                lines = path.read_text(errors="replace").splitlines()
                for number, line in enumerate(lines, 1):
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    target = match.group(1)
                    if target in ALLOWED and target != folder \
                            and target not in allowed:
                        yield (f"{path.relative_to(root)}:{number}: {folder}/ "
                               f"includes {target}/ ({line.strip()}), which "
                               f"is above it or beside it")


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                        pathlib.Path(__file__).resolve().parent.parent)
    found = list(violations(root))
    for v in found:
        print(v)
    if found:
        print(f"check-layering: {len(found)} includes break the layering")
        return 1
    checked = sum(1 for f in ALLOWED for p in SOURCES
                  for _ in (root / f).rglob(p))
    print(f"check-layering: {checked} files, every include goes down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
