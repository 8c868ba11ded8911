#!/usr/bin/env python3
"""Checks that every kernel with shared memory can have its subgroups' order
reversed (shaders/invocation_order.glsl).

VKATTN_SUBGROUP_ORDER=mixed (the test suite) or reversed gives a workgroup's
subgroups their roles in reverse order on lavapipe, which runs them in one
fixed order, so that a barrier missing between two subgroups fails there
whichever way the data goes. That holds only where a kernel takes every
index that assigns work from subgroup_index() and invocation_index(). This
check reads the sources:

- no kernel that declares shared memory (as poison_shared_test.py finds it),
  nor any file it includes, reads gl_SubgroupID, gl_LocalInvocationIndex or
  gl_LocalInvocationID (poison_shared.glsl's fill aside, whose order does
  not matter);
- such a kernel includes invocation_order.glsl, directly or through another
  file, only after its `layout(local_size_x_id ...) in;` (before it
  gl_WorkGroupSize is 1 x 1 x 1, and the reversal would never apply);
- the shader's constant_id for SUBGROUP_ORDER is the host's.

usage: invocation_order_test.py SHADER_DIR INTERNAL_H
"""
import pathlib
import re
import sys

from poison_shared_test import declarations

RAW_INDEX = re.compile(r"\b(gl_SubgroupID|gl_LocalInvocationIndex|gl_LocalInvocationID)\b")
INCLUDE = re.compile(r'^\s*#include\s+"([^"]+)"', re.M)
LAYOUT = re.compile(r"^\s*layout\s*\(\s*local_size_x(_id)?\s*=.*\)\s*in\s*;", re.M)
ORDER = "invocation_order.glsl"
# Files whose reads of the indices do not assign work (a fill of every element).
ORDER_FREE = {ORDER, "poison_shared.glsl"}


def code_of(text):
    """The text without its // comments."""
    return "\n".join(line.split("//")[0] for line in text.splitlines())


def closure(shader_dir, name, seen=None):
    """The files `name` includes, transitively (itself included)."""
    seen = set() if seen is None else seen
    if name in seen or not (shader_dir / name).exists():
        return seen
    seen.add(name)
    for included in INCLUDE.findall((shader_dir / name).read_text()):
        closure(shader_dir, included, seen)
    return seen


def check_kernel(shader_dir, path):
    """The problems of one kernel, and whether it has shared memory."""
    if not declarations(path)[0]:
        return [], False
    problems = []
    files = closure(shader_dir, path.name)
    for name in sorted(files - ORDER_FREE):
        for number, line in enumerate(code_of((shader_dir / name).read_text()).splitlines(), 1):
            for raw in RAW_INDEX.findall(line):
                problems.append(f"{path.name}: {name}:{number} reads {raw}: use subgroup_index() "
                                f"or invocation_index() ({ORDER})")
    if ORDER not in files:
        return problems, True
    source = path.read_text()
    layout = LAYOUT.search(source)
    first = next((m for m in INCLUDE.finditer(source)
                  if ORDER in closure(shader_dir, m.group(1))), None)
    if not layout:
        problems.append(f"{path.name}: no layout(local_size_x_id = ...) in; this check can find")
    elif first and first.start() < layout.start():
        problems.append(f"{path.name}: includes {ORDER} (through {first.group(1)}) before its "
                        "workgroup size, whose gl_WorkGroupSize it would read as 1 x 1 x 1")
    return problems, True


def main():
    shader_dir, internal_h = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    kernels = sorted(shader_dir.glob("*.comp"))
    problems, with_shared = [], 0
    for path in kernels:
        found, shared = check_kernel(shader_dir, path)
        problems += found
        with_shared += shared
    # The check itself: it must follow a kernel's includes to the order's file.
    if ORDER not in closure(shader_dir, "attention_coopmat.comp"):
        problems.append(f"attention_coopmat.comp does not reach {ORDER}: the kernel whose "
                        "subgroups share the most no longer takes its indices from it")
    glsl, host = (shader_dir / ORDER).read_text(), internal_h.read_text()
    shader_id = re.search(r"constant_id\s*=\s*(\d+)\)\s*const uint SUBGROUP_ORDER", glsl)
    base = re.search(r"#define VKATTN_MAX_SPEC_CONSTANTS (\d+)", host)
    offset = re.search(r"#define VKATTN_SPEC_SUBGROUP_ORDER \(VKATTN_MAX_SPEC_CONSTANTS \+ "
                       r"(\d+)\)", host)
    if not (shader_id and base and offset and
            int(shader_id.group(1)) == int(base.group(1)) + int(offset.group(1))):
        problems.append(f"SUBGROUP_ORDER's constant_id in {ORDER} is not the host's "
                        "(VKATTN_SPEC_SUBGROUP_ORDER, src/internal.h)")
    # The values the shader's code reads (1 reversed, 2 the odd workgroups, 3 the even).
    for name, value in (("REVERSED", 1), ("ODD_REVERSED", 2), ("EVEN_REVERSED", 3)):
        if not re.search(rf"SUBGROUP_ORDER_{name} = {value},", host):
            problems.append(f"SUBGROUP_ORDER_{name} is not {value} in src/internal.h, as "
                            f"{ORDER} reads it")
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problems")
        return 1
    print(f"{len(kernels)} kernels, {with_shared} with shared memory, each taking its "
          "subgroups' order from invocation_order.glsl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
