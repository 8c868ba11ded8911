#!/usr/bin/env python3
"""Checks that no cooperative-matrix kernel addresses a matrix element at an index
that is not a constant once the kernel is specialized (the GPU plans' settings).

On the H200 (bench/results/nvidia-h200/NOTES.md, fourth check) the coopmat
attention kernel's softmax in registers kept 352-464 bytes of its matrices in
local memory at any register count, and its plan with the softmax through
shared memory kept none. A driver can keep an array of matrices in registers
only if every access to it resolves to one matrix and one element at compile
time; an element picked by a value the compiler cannot fold sends the whole
array to local memory. No device here compiles these modules, so this check
does what it can without one: it specializes each module as the H200's plans
do (spirv-opt: the spec constants set and frozen, folded, unrolled, optimized)
and looks at every access chain into a Function or Private matrix or array
of matrices.

- An access whose indices go past the matrix (an element of it) and are not
  all constants fails the check. The build measured at the fourth check
  (34dc617) has seven such accesses in each register-softmax plan below and
  none in the default plans; of the two rewrites since that were made to
  remove them, the first (b51127c) still has the seven and the second
  (fc30bcf) none: the first's passes still ran to a matrix's length(), which
  spirv-opt cannot fold before unrolling, and a driver may not either.
- An access that picks a whole matrix at an index that is not constant is
  reported, not failed: the default plan, which kept no local memory on the
  H200, has them in loops that hold barriers (the output's epilogue, the
  repair of non-finite V rows), which spirv-opt does not unroll.

A small module written for the purpose, with an element picked by a uniform,
must be caught: the check can fail.

usage: coopmat_indexing_test.py GLSLANG SPIRV_OPT SPIRV_DIS SHADER_DIR SPIRV_DIR
"""
import pathlib
import re
import sys
import tempfile

from spirv_text import Module, run

# The H200's plans (pipeline statistics in fourth-check/gpu-check.log, and the
# settings sweep's tune.md), by spec constant name. WORKGROUP is the
# local_size_x_id (constant_id 0).
ATTENTION_F16_D128 = dict(WORKGROUP=128, BR=64, BC=48, D=128, DV=128, CAUSAL=True, SPLIT=False,
                          MM=16, MN=16, MK=16, SG_SIZE=32, STAGES=2, BF16_INPUTS=0,
                          HEAVY_FIRST=True, ROW_TILES=1, VARIANTS=0, ROW_CLUSTER=0,
                          LANE_ROWS=1, SLOT_TABLE=0, ABLATE=0, Q_SHARED=False,
                          SCORES_HELD=True, BUFFERS=1)
# The H200's accumulator layout: a row in 4 neighbouring invocations, 2 rows
# each, elements 4-7 on the second (coopmat layout line of devices.txt).
REGISTER_SOFTMAX = dict(ROW_CLUSTER=4, LANE_ROWS=2, SLOT_TABLE=0x5500)
# VARIANTS bits (score_variants.glsl): window, soft-capping, ALiBi, an f32
# mask, sinks and kv_len; then packed Q and K, paged K and V, per-sequence
# q_offset.
SCORE_VARIANTS = 1 | 2 | 4 | 8 | 16 | 2048
SEQUENCE_VARIANTS = 32 | 64 | 128 | 256

CASES = [
    ("attention_coopmat", "default, f16 D=128", ATTENTION_F16_D128),
    ("attention_coopmat", "default, bf16 D=128", {**ATTENTION_F16_D128, "BF16_INPUTS": 7}),
    ("attention_coopmat", "default, f16 D=64",
     {**ATTENTION_F16_D128, "BC": 64, "D": 64, "DV": 64}),
    ("attention_coopmat", "split keys (decode), D=128",
     {**ATTENTION_F16_D128, "WORKGROUP": 32, "BR": 16, "BC": 64, "CAUSAL": False,
      "SPLIT": True, "STAGES": 1, "HEAVY_FIRST": False}),
    ("attention_coopmat", "softmax=2: 64 x 64, one stage",
     {**ATTENTION_F16_D128, **REGISTER_SOFTMAX, "BC": 64, "STAGES": 1}),
    ("attention_coopmat", "softmax=2,subgroups=8: 128 x 64, two stages",
     {**ATTENTION_F16_D128, **REGISTER_SOFTMAX, "WORKGROUP": 256, "BR": 128, "BC": 64}),
    ("attention_coopmat", "softmax=2,q=2: 64 x 32, two stages, Q in shared memory",
     {**ATTENTION_F16_D128, **REGISTER_SOFTMAX, "BC": 32, "Q_SHARED": True}),
    ("attention_coopmat", "softmax=2, D=64",
     {**ATTENTION_F16_D128, **REGISTER_SOFTMAX, "BC": 64, "D": 64, "DV": 64}),
    ("attention_coopmat", "softmax=2, bf16, every score variant",
     {**ATTENTION_F16_D128, **REGISTER_SOFTMAX, "BC": 64, "STAGES": 1, "BF16_INPUTS": 7,
      "VARIANTS": SCORE_VARIANTS}),
    ("attention_coopmat", "softmax=2, packed and paged sequences, every score variant",
     {**ATTENTION_F16_D128, **REGISTER_SOFTMAX, "BC": 64, "STAGES": 1,
      "VARIANTS": SCORE_VARIANTS | SEQUENCE_VARIANTS}),
    ("attention_coopmat", "softmax=2,buffers=2: 64 x 32, two stages, two buffers",
     {**ATTENTION_F16_D128, **REGISTER_SOFTMAX, "BC": 32, "BUFFERS": 2}),
    ("attention_coopmat", "buffers=2, bf16, D=64: 64 x 48, two stages, two buffers",
     {**ATTENTION_F16_D128, "BC": 48, "D": 64, "DV": 64, "BUFFERS": 2, "BF16_INPUTS": 7}),
    ("attention_coopmat", "default, packed and paged sequences, every score variant",
     {**ATTENTION_F16_D128, "VARIANTS": SCORE_VARIANTS | SEQUENCE_VARIANTS}),
    ("attention_coopmat_khr_nv", "the KHR build, default, f16 D=128", ATTENTION_F16_D128),
    ("attention_coopmat_khr_nv", "the KHR build, bf16 matrices (bf16=2), two buffers, D=128",
     {**ATTENTION_F16_D128, "BC": 32, "BUFFERS": 2, "BF16_INPUTS": 7, "BF16_MATRICES": True}),
    ("matmul_coopmat", "revision 3, 4096^3",
     dict(WORKGROUP=256, BM=128, BN=128, BK=32, TRANSPOSE_B=False, HAS_BIAS=False,
          BIAS_DTYPE=0, MM=16, MN=16, MK=16, A_ALIGNED8=True, B_ALIGNED8=True, SUBGROUPS=8,
          GRID_COLUMNS=4, STAGES=2)),
    ("attention_coopmat_workgroup_khr_nv", "256 invocations, f16 D=128",
     dict(WORKGROUP=256, BR=64, BC=64, D=128, DV=128, CAUSAL=True, SPLIT=False, DP=128,
          ON=64, PIECES=2, SG_SIZE=32, HEAVY_FIRST=True, DIRECT=False, ABLATE=0,
          BF16_INPUTS=0, VARIANTS=0)),
]

# Written to be caught: an element of a matrix in an array, picked by a uniform.
PLANTED = """#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 32) in;
layout(binding = 0) buffer B { float data[]; };
layout(push_constant) uniform P { uint pick; };
void main() {
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[2];
    acc[0] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    acc[1] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(1.0);
    acc[pick & 1u][pick >> 1] = 2.0;
    coopMatStoreNV(acc[0], data, 0, 16, false);
    coopMatStoreNV(acc[1], data, 256, 16, false);
}
"""

CONSTANT_ID = re.compile(r"layout\(constant_id\s*=\s*(\d+)\)\s*const\s+(\w+)\s+(\w+)")
INCLUDE = re.compile(r'^#include\s+"([^"]+)"', re.M)


def spec_constants(shader_dir, source, seen=None):
    """name -> (constant_id, type) of a shader and everything it includes."""
    seen = set() if seen is None else seen
    if source in seen:
        return {}
    seen.add(source)
    text = (shader_dir / source).read_text()
    found = {name: (int(cid), kind) for cid, kind, name in CONSTANT_ID.findall(text)}
    if "local_size_x_id = 0" in text:
        found["WORKGROUP"] = (0, "uint")
    for included in INCLUDE.findall(text):
        found.update(spec_constants(shader_dir, included, seen))
    return found


def specialized(tools, module, spec, work):
    """The module's disassembly with its spec constants set, frozen, folded and
    its loops unrolled, as a driver would compile it for this plan."""
    frozen, folded = work / "frozen.spv", work / "folded.spv"
    setting = ["--set-spec-const-default-value", spec] if spec else []
    run(tools["opt"], *setting, "--freeze-spec-const", module, "-o", frozen)
    run(tools["opt"], "--fold-spec-const-op-composite", frozen, "-o", folded)
    # -O again after the unrolling folds the unrolled copies' indices.
    run(tools["opt"], "--fold-spec-const-op-composite", "-O", "--loop-unroll", "-O", folded,
        "-o", work / "optimized.spv")
    return run(tools["dis"], frozen), run(tools["dis"], work / "optimized.spv")


def dynamic_accesses(disassembly):
    """(element accesses, matrix accesses) into matrices or arrays of them
    whose indices are not all constants; each a list of lines."""
    module = Module(disassembly)
    elements, whole = [], []
    for result, op, operands in module.ins:
        if op not in ("OpAccessChain", "OpInBoundsAccessChain") or \
                operands[1] not in module.storage:
            continue
        depth = module.matrix_depth(module.pointee(operands[1]))
        indices = operands[2:]
        if depth is None or all(i in module.constant_ids for i in indices):
            continue
        line = f"{result} = {op} {' '.join(operands)}"
        (elements if len(indices) > depth else whole).append(line)
    return elements, whole


def check_frozen(frozen, constants, values):
    """Every constant the case sets has that value once frozen (spirv-opt
    ignores a value it cannot parse)."""
    problems = []
    for name, value in values.items():
        want = ("OpConstantTrue" if value else "OpConstantFalse") if isinstance(value, bool) \
            else rf"OpConstant %\w+ {value}"
        # (WORKGROUP, the local_size_x_id, has no constant of its name)
        if name == "WORKGROUP" or re.search(rf"%{name} = {want}\b", frozen):
            continue
        problems.append(f"{name} is not {value} once frozen")
    return problems


def spec_string(constants, values):
    missing = sorted(set(values) - set(constants))
    if missing:
        sys.exit(f"FAIL: the shader has no spec constant {', '.join(missing)}")
    parts = []
    for name, value in sorted(values.items(), key=lambda kv: constants[kv[0]][0]):
        cid, kind = constants[name]
        if kind == "bool" and not isinstance(value, bool):
            sys.exit(f"FAIL: {name} is a bool; the case gives {value!r}")
        parts.append(f"{cid}:{str(value).lower() if isinstance(value, bool) else value}")
    return " ".join(parts)


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    glslang, spirv_opt, spirv_dis = sys.argv[1:4]
    shader_dir, spirv_dir = pathlib.Path(sys.argv[4]), pathlib.Path(sys.argv[5])
    tools = {"opt": spirv_opt, "dis": spirv_dis}
    failures = 0
    with tempfile.TemporaryDirectory() as scratch:
        work = pathlib.Path(scratch)
        planted = work / "planted.comp"
        planted.write_text(PLANTED)
        run(glslang, "-V", "--target-env", "vulkan1.1", "-o", work / "planted.spv", planted)
        elements, _ = dynamic_accesses(specialized(tools, work / "planted.spv", "", work)[1])
        if not elements:
            print("FAIL: the planted element access at a uniform index was not found")
            failures += 1
        for module, plan, values in CASES:
            source = module.replace("_khr_nv", "") + ".comp"
            constants = spec_constants(shader_dir, source)
            spec = spec_string(constants, values)
            frozen, optimized = specialized(tools, spirv_dir / f"{module}.spv", spec, work)
            problems = check_frozen(frozen, constants, values)
            elements, whole = dynamic_accesses(optimized)
            problems += [f"element at an index that is not constant: {e}" for e in elements]
            status = "FAIL" if problems else "ok"
            failures += bool(problems)
            print(f"{status}: {module}, {plan}: {len(elements)} element and {len(whole)} "
                  f"whole-matrix accesses at indices that are not constant")
            for problem in problems[:10]:
                print(f"    {problem}")
    if failures:
        sys.exit(f"{failures} failed")
    print(f"all {len(CASES)} plans, and the planted access caught")


if __name__ == "__main__":
    main()
