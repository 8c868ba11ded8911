#!/usr/bin/env python3
"""Checks that every barrier and every cooperative-matrix operation of the
kernels runs in control flow that is uniform over its scope.

A workgroup barrier (OpControlBarrier with Workgroup execution scope) that some
invocations of a workgroup skip, or run a different number of times, is
undefined behaviour: a GPU may hang or let the others run on unsynchronized;
lavapipe, which runs a workgroup's invocations as one loop over the lanes of
its vectors, rarely shows it. Likewise every operation on a cooperative matrix
must be reached by every invocation of the matrix's scope (its subgroup, or
for VK_NV_cooperative_matrix2's workgroup scope, its workgroup), and a
subgroup barrier by its whole subgroup. No device here runs the real
cooperative-matrix builds, and none runs any kernel as a GPU schedules it, so
this reads the SPIR-V instead, module by module (spirv-opt -O first: one
function, values in SSA form):

- values that differ between the invocations of a workgroup (or of a
  subgroup): the invocation's ids (LocalInvocationId, LocalInvocationIndex,
  GlobalInvocationId, SubgroupLocalInvocationId; SubgroupId too at workgroup
  level; the lane masks), the results of atomics, a matrix's elements,
  subgroup shuffles, scans, elections and inverse ballots (and at workgroup
  level any subgroup operation on such a value), and
  everything computed from them: loads at such addresses, variables stored
  such values or stored under such a branch, and phis that join the paths of
  such a branch;
- a block is in divergent control flow when it is control dependent (by
  post-dominance) on a branch whose condition is such a value, or on a branch
  in divergent control flow;
- a matrix load's or store's pointer, stride and layout must be the same in
  every invocation of the matrix's scope ("all operands must be dynamically
  uniform within every instance of the scope"), wherever it runs;
- besides barriers and matrix operations, no subgroup operation (shuffle,
  reduction, vote, broadcast) may run in control flow divergent within its
  subgroup: the kernels' butterflies and reductions assume every lane takes
  part, and a shuffle from a lane that is not running reads an undefined
  value;
- a load from shared or buffer memory at a uniform address is uniform (every
  invocation reads the same word; whether a barrier orders it after the
  store it needs is not checked here).

Specialization constants are uniform, so each module is checked as it is, for
every specialization at once. Modules written for the purpose (PLANTED) must
be judged right: a barrier under a branch on the invocation index is caught
(the check can fail), the same branch on the workgroup id is not, and so on.

usage: uniform_control_test.py GLSLANG SPIRV_OPT SPIRV_DIS SPIRV_DIR
"""
import pathlib
import re
import sys
import tempfile

from spirv_text import Module, run

WORKGROUP, SUBGROUP = 2, 3  # SPIR-V scopes
LANE_MASKS = {f"Subgroup{m}Mask{khr}" for m in ("Eq", "Ge", "Gt", "Le", "Lt")
              for khr in ("", "KHR")}
VARYING = {
    WORKGROUP: {"LocalInvocationId", "LocalInvocationIndex", "GlobalInvocationId",
                "SubgroupLocalInvocationId", "SubgroupId"} | LANE_MASKS,
    SUBGROUP: {"LocalInvocationId", "LocalInvocationIndex", "GlobalInvocationId",
               "SubgroupLocalInvocationId"} | LANE_MASKS,
}
# Subgroup operations whose result is the same in every invocation of the
# subgroup (when the operation is a reduction: GroupOperation Reduce).
SUBGROUP_UNIFORM = {"OpGroupNonUniformBroadcast", "OpGroupNonUniformBroadcastFirst",
                    "OpGroupNonUniformAll", "OpGroupNonUniformAny",
                    "OpGroupNonUniformAllEqual", "OpGroupNonUniformBallot"}
# Subgroup operations whose result differs between the lanes of a subgroup
# whatever their inputs (and so between the invocations of a workgroup too).
LANE_VARYING = ("OpGroupNonUniformShuffle", "OpGroupNonUniformQuad",
                "OpGroupNonUniformRotate", "OpGroupNonUniformElect",
                "OpGroupNonUniformInverseBallot")
LANE_VARYING_GROUP_OPERATIONS = {"InclusiveScan", "ExclusiveScan", "ClusteredReduce"}
MATRIX_OPS = ("OpCooperativeMatrixLoadNV", "OpCooperativeMatrixStoreNV",
              "OpCooperativeMatrixMulAddNV", "OpCooperativeMatrixLoadKHR",
              "OpCooperativeMatrixStoreKHR", "OpCooperativeMatrixMulAddKHR")
# The modules a GPU runs (the KHR builds, bf16 ones too, are checked in their
# NV form, which SPIRV-Tools reads; the rewrite keeps control flow as it is).
SKIP = re.compile(r"_khr(_bf16|_spirv16)?\.spv$")


def functions(module):
    """Each function's blocks: label -> list of (result, op, operands)."""
    current, label = None, None
    for result, op, operands in module.ins:
        if op == "OpFunction":
            current, label = {}, None
        elif op == "OpFunctionEnd":
            yield current
            current = None
        elif current is not None and op == "OpLabel":
            label = result
            current[label] = []
        elif current is not None and label is not None:
            current[label].append((result, op, operands))


def successors(block):
    result, op, operands = block[-1]
    if op == "OpBranch":
        return [operands[0]]
    if op == "OpBranchConditional":
        return [operands[1], operands[2]]
    if op == "OpSwitch":
        return [operands[1]] + operands[3::2]
    return []


def post_dominators(blocks, succ):
    """label -> its immediate post-dominator (None: the virtual exit)."""
    labels = list(blocks)
    exit_ = None
    pdom = {b: set(labels) for b in labels}
    changed = True
    while changed:
        changed = False
        for b in reversed(labels):
            outs = succ[b]
            new = set.intersection(*(pdom[s] for s in outs)) if outs else set()
            new = new | {b}
            if new != pdom[b]:
                pdom[b], changed = new, True
    ipdom = {}
    for b in labels:
        strict = pdom[b] - {b}
        # the one strict post-dominator that every other strict one post-dominates
        ipdom[b] = next((c for c in strict if strict <= pdom[c]), exit_)
    return ipdom


def control_dependences(blocks, succ):
    """label -> the branch blocks it is control dependent on."""
    ipdom = post_dominators(blocks, succ)
    deps = {b: set() for b in blocks}
    for a in blocks:
        if len(set(succ[a])) < 2:
            continue
        for s in set(succ[a]):
            runner = s
            while runner is not None and runner != ipdom[a]:
                deps[runner].add(a)
                runner = ipdom[runner]
    return deps


def branch_condition(block):
    result, op, operands = block[-1]
    if op == "OpBranchConditional":
        return operands[0]
    if op == "OpSwitch":
        return operands[0]
    return None


def check_function(module, blocks, level):
    """The barriers and matrix operations of `level`'s scope in divergent
    control flow: a list of (label, op)."""
    succ = {b: successors(ins) for b, ins in blocks.items()}
    deps = control_dependences(blocks, succ)
    types = module.type_of
    where, chains = {}, {}
    for b, ins in blocks.items():
        for result, op, operands in ins:
            if result:
                where[result] = b
            if op in ("OpAccessChain", "OpInBoundsAccessChain", "OpPtrAccessChain"):
                chains[result] = operands[1]

    def root(pointer):
        while pointer in chains:
            pointer = chains[pointer]
        return pointer

    varying, varying_vars, divergent = set(), set(), set()
    varying_branch_blocks = set()

    def varying_branches(block):
        """The branches with a varying condition that `block` depends on."""
        return {a for a in deps[block] if branch_condition(blocks[a]) in varying}

    def leaves_divergence(value, use_block):
        """Whether `value` is used past a varying branch its definition
        depends on: invocations that took different paths (or ran a loop a
        different number of times) bring different values."""
        d = where.get(value)
        return d is not None and bool(varying_branches(d) - deps[use_block])

    def result_varies(b, result, op, operands):
        ids = [o for o in operands if o.startswith("%")]
        inputs = ids[1:]  # past the result type
        if op == "OpLoad":
            base = root(operands[1])
            element = module.matrix_depth(module.pointee(base)) is not None and operands[0] not in module.matrix_scope
            return (module.builtins.get(base) in VARYING[level] or operands[1] in varying or
                    base in varying_vars or element)
        if op.startswith("OpAtomic"):
            return True
        if op == "OpPhi":
            # A join of the paths of a varying branch a: an incoming edge from
            # a or from a block that depends on it, into a block that does not.
            joined = varying_branch_blocks - deps[b] - {b}
            return any(v in varying or leaves_divergence(v, p) or ({p} | deps[p]) & joined
                       for v, p in zip(operands[1::2], operands[2::2]))
        if op.startswith("OpGroupNonUniform"):
            if op.startswith(LANE_VARYING) or \
                    (len(operands) > 2 and operands[2] in LANE_VARYING_GROUP_OPERATIONS):
                return True
            if level == SUBGROUP and \
                    (op in SUBGROUP_UNIFORM or (len(operands) > 2 and operands[2] == "Reduce")):
                return False
        if op in ("OpCompositeExtract", "OpVectorExtractDynamic") and \
                types.get(operands[1]) in module.matrix_scope:
            return True  # a matrix's elements differ between its invocations
        if op in ("OpCooperativeMatrixLengthNV", "OpCooperativeMatrixLengthKHR"):
            return False
        return any(i in varying or leaves_divergence(i, b) for i in inputs)

    changed = True
    while changed:
        changed = False
        varying_branch_blocks = {a for a in blocks if branch_condition(blocks[a]) in varying}
        for b in blocks:
            if b not in divergent and (varying_branches(b) or deps[b] & divergent):
                divergent.add(b)
                changed = True
        for b, ins in blocks.items():
            for result, op, operands in ins:
                if op == "OpStore":
                    base = root(operands[0])
                    if module.storage.get(base) in ("Function", "Private") and \
                            base not in varying_vars and \
                            (operands[1] in varying or operands[0] in varying or b in divergent or
                             leaves_divergence(operands[1], b)):
                        varying_vars.add(base)
                        changed = True
                elif result and result not in varying and result_varies(b, result, op, operands):
                    varying.add(result)
                    changed = True
    def matrix_of_level(value):
        return module.matrix_scope.get(types.get(value), -1) == level

    found = []
    for b, ins in sorted(blocks.items()):
        for result, op, operands in ins:
            if b in divergent:
                if op == "OpControlBarrier" and module.constants.get(operands[0]) == level:
                    found.append((b, op))
                elif level == SUBGROUP and op.startswith("OpGroupNonUniform") and \
                        op != "OpGroupNonUniformElect":
                    found.append((b, op))  # reads lanes that may not be running
                elif op in MATRIX_OPS and \
                        matrix_of_level(operands[1] if "Store" in op else result):
                    found.append((b, op))
            if op in MATRIX_OPS and matrix_of_level(operands[1] if "Store" in op else result):
                # "All operands must be dynamically uniform within every
                # instance of the scope": a load's or store's pointer, stride
                # and layout (a matrix operand holds each invocation's own
                # elements)
                ids = [o for o in operands[0 if "Store" in op else 1:] if o.startswith("%")]
                if any(i in varying for i in ids if not matrix_of_level(i)):
                    found.append((b, op + " (with operands that differ)"))
    return found


def check_module(tools, path, work):
    optimized = work / (path.stem + ".opt.spv")
    run(tools["opt"], "-O", path, "-o", optimized)
    module = Module(run(tools["dis"], optimized))
    found = []
    bodies = list(functions(module))
    if len(bodies) != 1:  # calls would hide their callees' control flow
        sys.exit(f"FAIL: {path.name}: {len(bodies)} functions after inlining, not one")
    for blocks in bodies:
        for level in (WORKGROUP, SUBGROUP):
            found += [(level, b, op) for b, op in check_function(module, blocks, level)]
    return found


# Modules written for the purpose: their main()'s body, and whether the check
# must find a barrier or matrix operation in divergent control flow.
PLANTED_HEAD = """#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 64) in;
layout(binding = 0) buffer B { float data[]; };
shared float tile[64];
void main() {
    uint i = gl_LocalInvocationIndex;
    tile[i] = data[i];
"""
PLANTED = [
    ("a barrier under a branch on the invocation index", True,
     "if (i < 32u) { barrier(); data[i] = tile[63u - i]; }"),
    ("a barrier under a branch on the workgroup id", False,
     "if (gl_WorkGroupID.x < 32u) { barrier(); data[i] = tile[63u - i]; }"),
    ("a barrier in a loop run a number of times each invocation reads", True,
     "for (uint k = 0u; k < uint(data[i]); k++) { barrier(); data[i] += tile[k & 63u]; }"),
    ("a barrier after that loop", False,
     "for (uint k = 0u; k < uint(data[i]); k++) data[i] += 1.0; barrier(); data[i] += tile[0];"),
    ("a barrier under a branch on a value read at the invocation's address", True,
     "if (tile[i] > 0.0) barrier(); data[i] = tile[0];"),
    ("a barrier under a branch on a value read at one address", False,
     "barrier(); if (tile[5] > 0.0) barrier(); data[i] = tile[0];"),
    ("a subgroup barrier under a branch on a subgroup vote", False,
     "if (subgroupAny(tile[i] > 0.0)) subgroupBarrier(); data[i] = tile[i];"),
    ("a subgroup barrier under a branch on a shuffle", True,
     "if (subgroupShuffleXor(tile[i], 1u) > 0.0) subgroupBarrier(); data[i] = tile[i];"),
    ("a matrix store under a branch on one of the matrix's elements", True,
     "fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc; coopMatLoadNV(acc, data, 0, 16, false);"
     "if (acc[0] > 0.0) coopMatStoreNV(acc, data, 256, 16, false);"),
    ("a shuffle under a branch on the lane", True,
     "float x = tile[i]; if (gl_SubgroupInvocationID < 3u) x = subgroupShuffleXor(x, 1u);"
     "data[i] = x;"),
    ("a barrier under a branch on a loop's count, the loop run a number of times each "
     "invocation reads", True,
     "uint k = 0u; while (k < uint(data[i])) { k++; data[i + 64u] += 1.0; }"
     "if (k > 3u) { barrier(); data[i] = tile[0]; }"),
    ("a barrier under a branch on a value set under a branch on the invocation", True,
     "float x = 0.0; if (tile[i] > 0.0) x = data[0];"
     "if (x > 1.0) { barrier(); data[i] = tile[0]; }"),
    ("a barrier under a uniform branch inside one on the invocation", True,
     "if (i < 32u) { if (gl_WorkGroupID.x == 0u) { barrier(); data[i] = tile[0]; } }"),
    ("a barrier under a branch on an array stored to under a branch on the invocation",
     True,
     "float a[4] = float[4](0.0, 0.0, 0.0, 0.0); if (i < 32u) a[uint(data[0]) & 3u] = 1.0;"
     "if (a[uint(data[1]) & 3u] > 0.0) barrier(); data[i] = tile[0];"),
    ("a barrier in one case of a switch on the invocation", True,
     "switch (i & 3u) { case 0u: barrier(); break; default: break; } data[i] = tile[0];"),
    ("a barrier after an early return of some invocations", True,
     "if (i < 32u) return; barrier(); data[i] = tile[0];"),
    ("a barrier under a branch on a subgroup scan", True,
     "if (subgroupExclusiveAdd(1u) == 0u) barrier(); data[i] = tile[0];"),
    ("a barrier under a branch on the lane's mask", True,
     "if (gl_SubgroupEqMask.x == 1u) barrier(); data[i] = tile[0];"),
    ("a matrix load at an offset that differs within the subgroup", True,
     "fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc;"
     "coopMatLoadNV(acc, data, gl_SubgroupInvocationID * 256u, 16, false);"
     "coopMatStoreNV(acc, data, 0, 16, false);"),
    ("a workgroup-scope matrix store under a branch on the subgroup id", True,
     "fcoopmatNV<32, gl_ScopeWorkgroup, 16, 16> w; coopMatLoadNV(w, data, 0, 16, false);"
     "if (gl_SubgroupID == 0u) coopMatStoreNV(w, data, 256, 16, false);"),
    ("a workgroup-scope matrix store under a branch on the workgroup id", False,
     "fcoopmatNV<32, gl_ScopeWorkgroup, 16, 16> w; coopMatLoadNV(w, data, 0, 16, false);"
     "if (gl_WorkGroupID.x == 0u) coopMatStoreNV(w, data, 256, 16, false);"),
    ("a matrix store under a branch on the subgroup id", False,
     "fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc; coopMatLoadNV(acc, data, 0, 16, false);"
     "if (gl_SubgroupID == 0u) coopMatStoreNV(acc, data, 256, 16, false);"),
]


def check_planted(glslang, tools, work):
    """The number of planted modules the check judged wrongly."""
    wrong = 0
    for what, divergent, body in PLANTED:
        source = work / "planted.comp"
        source.write_text(PLANTED_HEAD + body + "\n}\n")
        run(glslang, "-V", "--target-env", "vulkan1.1", "-o", work / "planted.spv", source)
        found = check_module(tools, work / "planted.spv", work)
        if bool(found) != divergent:
            print(f"FAIL: {what}: {'not ' if divergent else ''}found in divergent control flow")
            wrong += 1
    return wrong


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    glslang, spirv_opt, spirv_dis, spirv_dir = sys.argv[1:5]
    tools = {"opt": spirv_opt, "dis": spirv_dis}
    failures = 0
    with tempfile.TemporaryDirectory() as scratch:
        work = pathlib.Path(scratch)
        failures += check_planted(glslang, tools, work)
        modules = sorted(p for p in pathlib.Path(spirv_dir).glob("*.spv") if not SKIP.search(p.name))
        if not modules:
            sys.exit(f"FAIL: no SPIR-V modules in {spirv_dir}")
        for path in modules:
            found = check_module(tools, path, work)
            print(f"{'FAIL' if found else 'ok'}: {path.name}")
            for level, block, op in found[:10]:
                scope = "workgroup" if level == WORKGROUP else "subgroup"
                print(f"    {op} of {scope} scope in block {block}, under a branch that "
                      f"differs within the {scope}")
            failures += bool(found)
    if failures:
        sys.exit(f"{failures} failed")
    print(f"all {len(modules)} modules, and the {len(PLANTED)} planted modules judged right")


if __name__ == "__main__":
    main()
