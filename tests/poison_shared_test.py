#!/usr/bin/env python3
"""Checks that every kernel poisons all of its shared memory (shaders/poison_shared.glsl).

VKATTN_POISON=1 fills a kernel's shared memory with NaN before the
kernel runs, so that a read before its first write there gives a wrong result
on lavapipe as it would on a GPU. That holds only for the arrays a kernel's
poison_shared() names, with the macro for its element type. This check reads
the sources:

- every shared array a kernel declares (`shared T name[...];`, and the
  emulated matrices of MATRIX_A/MATRIX_ACC and WG_A/WG_B/WG_ACC) is named in
  its poison_shared() by the macro for T, which ends with poison_shared_done();
- main() calls poison_shared() before anything else;
- no source declares shared memory in another form (a scalar, two names, a
  declaration over several lines) or in an included file (outside the
  matrix macros' definitions), which the first rule could not see;
- the shader's constant_id for POISON_SHARED and its POISON_BITS are the host's.

usage: poison_shared_test.py SHADER_DIR INTERNAL_H
"""
import pathlib
import re
import sys

SHARED = re.compile(r"^\s*shared\s+(\w+)\s+(\w+)\s*\[[^;]*\]\s*;\s*(//.*)?$")
MATRIX = re.compile(r"^\s*(MATRIX_A|MATRIX_ACC|WG_A|WG_B|WG_ACC)\(\s*(\w+)\s*,")
POISONED = re.compile(r"\b(POISON_\w+|MATRIX_POISON|WG_POISON)\(\s*(\w+)\s*\)")
MAIN = re.compile(r"\nvoid main\(\)\s*\{\s*(\w+)\s*\(\s*\)\s*;")
# The macro for each element type (poison_shared.glsl).
MACRO = {"float": "POISON_FLOATS", "vec4": "POISON_VEC4S", "uint": "POISON_UINTS",
         "uvec4": "POISON_UVEC4S", "float16_t": "POISON_HALVES",
         "MATRIX_A": "MATRIX_POISON", "MATRIX_ACC": "MATRIX_POISON",
         "WG_A": "WG_POISON", "WG_B": "WG_POISON", "WG_ACC": "WG_POISON"}


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


def declarations(path):
    """(name -> the macro that poisons it) of a source, and its problems.

    The macros' own definitions (#define lines and their continuations)
    declare nothing."""
    declared, problems, in_define = {}, [], False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        defining = in_define or line.lstrip().startswith("#define")
        in_define = defining and line.rstrip().endswith("\\")
        if defining:
            continue
        code = line.split("//")[0]
        shared, matrix = SHARED.match(line), MATRIX.match(line)
        if shared:
            element, name = shared.groups()[:2]
            if element not in MACRO:
                problems.append(f"{path.name}:{number}: shared {element} {name}: no poison "
                                "macro for that type")
            declared[name] = MACRO.get(element)
        elif matrix:
            declared[matrix.group(2)] = MACRO[matrix.group(1)]
        elif re.search(r"\bshared\b", code):
            problems.append(f"{path.name}:{number}: shared memory declared in a form this "
                            f"check cannot follow: {line.strip()}")
    return declared, problems


def check_kernel(path):
    """The problems of one kernel's source."""
    declared, problems = declarations(path)
    if not declared:
        return problems
    source = path.read_text()
    body = function_body(source, "poison_shared")
    if body is None:
        return problems + [f"{path.name}: declares shared memory ({', '.join(sorted(declared))})"
                           " but has no poison_shared()"]
    poisoned = {}
    for macro, name in POISONED.findall(body):
        poisoned[name] = macro
    for name, macro in sorted(declared.items()):
        if name not in poisoned:
            problems.append(f"{path.name}: poison_shared() leaves out `{name}`")
        elif macro and poisoned[name] != macro:
            problems.append(f"{path.name}: poison_shared() fills `{name}` with "
                            f"{poisoned[name]}, not {macro}")
    if not body.rstrip().endswith("poison_shared_done();"):
        problems.append(f"{path.name}: poison_shared() does not end with poison_shared_done()")
    first = MAIN.search(source)
    if not first or first.group(1) != "poison_shared":
        problems.append(f"{path.name}: main() does not begin with poison_shared()")
    return problems


def main():
    shader_dir, internal_h = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    kernels = sorted(shader_dir.glob("*.comp"))
    problems = [p for path in kernels for p in check_kernel(path)]
    # An included file's arrays would be its kernels' to poison, unseen here.
    for path in sorted(shader_dir.glob("*.glsl")):
        declared, found = declarations(path)
        problems += found + [f"{path.name}: declares shared `{name}`: declare it in the "
                             "kernels that use it" for name in sorted(declared)]
    # The check itself: it must see the arrays of a kernel known to have them.
    if not {"k_tile", "v_tile"} <= set(declarations(shader_dir / "attention_tiled.comp")[0]):
        problems.append("the check found no k_tile and v_tile in attention_tiled.comp: its "
                        "patterns no longer match the kernels' declarations")
    # The specialization constant's id and the word, in the shader and on the host.
    glsl, host = (shader_dir / "poison_shared.glsl").read_text(), internal_h.read_text()
    for what, in_glsl, in_host in (
            ("POISON_SHARED's constant_id", r"constant_id\s*=\s*(\d+)\)\s*const bool POISON_SHARED",
             r"#define VKATTN_MAX_SPEC_CONSTANTS (\d+)"),
            ("POISON_BITS", r"const uint POISON_BITS = (0x[0-9a-f]+)u;",
             r"#define VKATTN_POISON_BITS (0x[0-9a-f]+)u")):
        a, b = re.search(in_glsl, glsl), re.search(in_host, host)
        if not a or not b or a.group(1) != b.group(1):
            problems.append(f"{what} in poison_shared.glsl is not the host's (src/internal.h)")
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problems")
        return 1
    poisoning = sum(1 for path in kernels if function_body(path.read_text(), "poison_shared"))
    print(f"{len(kernels)} kernels, {poisoning} with shared memory, all of it poisoned")
    return 0


if __name__ == "__main__":
    sys.exit(main())
