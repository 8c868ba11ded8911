#!/usr/bin/env python3
"""Checks that every kernel poisons all of its shared memory (shaders/poison_shared.glsl).

VKATTN_POISON_SHARED=1 fills a kernel's shared memory with NaN before the
kernel runs, so that a read before its first write there gives a wrong result
on lavapipe as it would on a GPU. That holds only for the arrays a kernel's
poison_shared() names. This check reads each kernel's source: every shared
array it declares (`shared T name[...]`, and the emulated matrices of
MATRIX_A/MATRIX_ACC and WG_A/WG_B/WG_ACC) must be named in its poison_shared(),
and main() must call poison_shared() before anything else. A kernel without
shared memory needs neither.

usage: poison_shared_test.py SHADER_DIR
"""
import pathlib
import re
import sys

SHARED = re.compile(r"^\s*shared\s+\w+\s+(\w+)\s*\[", re.M)
MATRIX = re.compile(r"^\s*(?:MATRIX_A|MATRIX_ACC|WG_A|WG_B|WG_ACC)\(\s*(\w+)", re.M)
POISONED = re.compile(r"\b(?:POISON_\w+|MATRIX_POISON|WG_POISON)\(\s*(\w+)\s*\)")
MAIN = re.compile(r"\nvoid main\(\)\s*\{\s*(\w+)\s*\(\s*\)\s*;")


def function_body(source, name):
    """The text between the braces of `void name()`, or None."""
    start = re.search(r"\nvoid " + name + r"\(\)\s*\{", source)
    if not start:
        return None
    depth, i = 1, start.end()
    while depth and i < len(source):
        depth += {"{": 1, "}": -1}.get(source[i], 0)
        i += 1
    return source[start.end():i - 1]


def check(path):
    """The problems of one kernel's source, as messages."""
    source = path.read_text()
    # Declarations only: the macros' own definitions declare no array.
    lines = [line for line in source.splitlines() if not line.lstrip().startswith("#define")]
    text = "\n".join(lines)
    declared = set(SHARED.findall(text)) | set(MATRIX.findall(text))
    if not declared:
        return []
    body = function_body(source, "poison_shared")
    if body is None:
        return [f"{path.name}: declares shared memory ({', '.join(sorted(declared))}) "
                "but has no poison_shared()"]
    problems = [f"{path.name}: poison_shared() leaves out `{name}`"
                for name in sorted(declared - set(POISONED.findall(body)))]
    first = MAIN.search(source)
    if not first or first.group(1) != "poison_shared":
        problems.append(f"{path.name}: main() does not begin with poison_shared()")
    return problems


def main():
    shader_dir = pathlib.Path(sys.argv[1])
    kernels = sorted(shader_dir.glob("*.comp"))
    problems = [p for path in kernels for p in check(path)]
    # The check itself: it must see the arrays of a kernel known to have them.
    tiled = shader_dir / "attention_tiled.comp"
    seen = set(SHARED.findall(tiled.read_text()))
    if not {"k_tile", "v_tile"} <= seen:
        problems.append(f"the check found no k_tile and v_tile in {tiled.name}: its patterns "
                        "no longer match the kernels' declarations")
    for problem in problems:
        print(problem)
    poisoned = sum(1 for path in kernels if "poison_shared()" in path.read_text())
    print(f"{len(kernels)} kernels, {poisoned} with shared memory, all of it poisoned"
          if not problems else f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
