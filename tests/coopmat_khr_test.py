#!/usr/bin/env python3
"""Checks the VK_KHR_cooperative_matrix builds of the coopmat kernels that
tools/coopmat_khr.c makes from their NV SPIR-V. This machine's SPIRV-Tools
predates SPV_KHR_cooperative_matrix and no device here has it, so the rewrite is
checked against the extension's rules directly, word by word, on the very
modules the library embeds:

- every instruction of the NV module is in the KHR one, in order, unchanged
  except the five cooperative-matrix ones, which take their KHR forms (operand
  order of loads and stores, MemoryLayout from ColumnMajor), plus three new
  32-bit constants 0, 1, 2 right before the first matrix type;
- no module has a matrix's length as OpSpecConstantOp, which
  SPV_NV_cooperative_matrix allows and SPV_KHR_cooperative_matrix does not
  (Mesa's SPIR-V reader fails on it, used or not), and the tool refuses one;
- each matrix type's Use is what the products make of it (A, B, accumulator),
  and its scope is kept: Subgroup, or Workgroup in the workgroup-scope rate
  probe (VK_NV_cooperative_matrix2's, which needs no SPIR-V of its own);
- no NV opcode, capability or extension is left;
- the rewrite undone (--reverse) gives back the NV module, which spirv-val
  accepts;
- modules the extension cannot express (a conversion from an accumulator to an
  A operand; a type used as both A and B) and malformed input are refused;
- the attention kernel's bf16 build (--bf16) is its KHR build but for bf16
  A and B operands: one new OpTypeFloat 16 BFloat16KHR, SPV_KHR_bfloat16's two
  capabilities and its extension, and the component type of every A and B
  matrix type; accumulators keep f32. An operand made by anything but a load
  is refused (bf16 has no arithmetic). This SPIRV-Tools predates
  SPV_KHR_bfloat16 too: the module was validated by hand with SPIRV-Tools
  2026.4 (README).

usage: coopmat_khr_test.py TOOL SHADER_DIR
"""
import array
import os
import subprocess
import sys
import tempfile

OP_EXTENSION, OP_CAPABILITY, OP_TYPE_INT, OP_CONSTANT = 10, 17, 21, 43
OP_CONSTANT_TRUE, OP_CONSTANT_FALSE, OP_SPEC_CONSTANT_OP = 41, 42, 52
OP_TYPE_FLOAT, OP_LOAD, OP_FNEGATE = 22, 61, 127
CAP_BFLOAT16_TYPE, CAP_BFLOAT16_COOPMAT = 5116, 5118
NV = {"type": 5358, "load": 5359, "store": 5360, "muladd": 5361, "length": 5362}
KHR = {"type": 4456, "load": 4457, "store": 4458, "muladd": 4459, "length": 4460}
CAP_NV, CAP_KHR = 5357, 6022
# The workgroup-scope kernels in SPIR-V 1.3 and, as "..._spirv16", in SPIR-V
# 1.6 (workgroup size by LocalSizeId): both are rewritten, and both checked.
WORKGROUP_KERNELS = {name + form for form in ("", "_spirv16")
                     for name in ("coopmat_peak_workgroup_khr", "coopmat_layout_workgroup_khr",
                                  "attention_coopmat_workgroup_khr")}
KERNELS = ["attention_coopmat_khr", "matmul_coopmat_khr",
           "coopmat_peak_khr"] + sorted(WORKGROUP_KERNELS)

# Modules with matrices and no product (a layout probe: loads and stores only).
PRODUCTLESS = {"coopmat_layout_workgroup_khr", "coopmat_layout_workgroup_khr_spirv16"}

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
    return ok


def words_of(path):
    data = array.array("I")
    with open(path, "rb") as f:
        data.frombytes(f.read())
    return list(data)


def instructions(words):
    out, i = [], 5
    while i < len(words):
        count = words[i] >> 16
        assert count > 0, "malformed module"
        out.append(words[i:i + count])
        i += count
    return out


def opcode(ins):
    return ins[0] & 0xFFFF


def string_of(ins):
    raw = array.array("I", ins[1:]).tobytes()
    return raw.split(b"\0")[0].decode()


def run_tool(tool, *args):
    return subprocess.run([tool, *args], capture_output=True, text=True)


def check_kernel(tool, folder, name):
    nv_path = os.path.join(folder, name + "_nv.spv")
    khr_path = os.path.join(folder, name + ".spv")
    nv, khr = words_of(nv_path), words_of(khr_path)
    check(khr[:3] == nv[:3] and khr[4] == nv[4], f"{name}: header changed")
    check(khr[3] == nv[3] + 3, f"{name}: bound {khr[3]}, not {nv[3]} + 3")
    nv_ins, khr_ins = instructions(nv), instructions(khr)
    check(len(khr_ins) == len(nv_ins) + 3, f"{name}: {len(khr_ins)} instructions, not "
                                           f"{len(nv_ins)} + 3")
    true_id = next((i[2] for i in nv_ins if opcode(i) == OP_CONSTANT_TRUE), None)
    uint_id = next((i[1] for i in nv_ins if opcode(i) == OP_TYPE_INT and i[2:] == [32, 0]), None)
    first_type = next(k for k, i in enumerate(nv_ins) if opcode(i) == NV["type"])
    added = khr_ins[first_type:first_type + 3]
    check(added == [[4 << 16 | OP_CONSTANT, uint_id, nv[3] + v, v] for v in range(3)],
          f"{name}: the three constants are not 0, 1, 2 of the 32-bit unsigned type before "
          f"the first matrix type: {added}")
    value = {nv[3] + v: v for v in range(3)}
    rest = khr_ins[:first_type] + khr_ins[first_type + 3:]
    use_of, mapped = {}, 0
    for a, b in zip(nv_ins, rest):
        op = opcode(a)
        if op == OP_CAPABILITY and a[1] == CAP_NV:
            check(b == [2 << 16 | OP_CAPABILITY, CAP_KHR], f"{name}: capability {b}")
        elif op == OP_EXTENSION and string_of(a) == "SPV_NV_cooperative_matrix":
            check(opcode(b) == OP_EXTENSION and string_of(b) == "SPV_KHR_cooperative_matrix",
                  f"{name}: extension {b}")
        elif op == NV["type"]:
            ok = opcode(b) == KHR["type"] and b[1:6] == a[1:6] and len(b) == 7 and b[6] in value
            if check(ok, f"{name}: type {a} became {b}"):
                use_of[b[1]] = value[b[6]]
        elif op in (NV["load"], NV["store"]):
            s = 4 if op == NV["load"] else 3  # Stride's place in NV, Layout's in KHR
            want_op = KHR["load"] if op == NV["load"] else KHR["store"]
            layout = 1 if a[s + 1] == true_id else 0
            ok = (opcode(b) == want_op and len(b) == len(a) and b[1:s] == a[1:s] and
                  value.get(b[s]) == layout and b[s + 1] == a[s] and b[s + 2:] == a[s + 2:])
            check(ok, f"{name}: {a} became {b}")
            mapped += 1
        elif op == OP_SPEC_CONSTANT_OP and a[3] in NV.values():
            check(False, f"{name}: a cooperative-matrix OpSpecConstantOp {a}")
        elif op in (NV["muladd"], NV["length"]):
            want_op = KHR["muladd"] if op == NV["muladd"] else KHR["length"]
            check(opcode(b) == want_op and b[1:] == a[1:], f"{name}: {a} became {b}")
            mapped += 1
        else:
            check(a == b, f"{name}: {a} became {b}")
    check(mapped > 0, f"{name}: no cooperative-matrix instruction rewritten")
    # The products' operands have the types of the right use.
    type_of = {i[2]: i[1] for i in khr_ins if len(i) > 2 and i[1] in use_of and
               opcode(i) not in (5, 6, 71, 72, KHR["type"])}
    products = [i for i in khr_ins if opcode(i) == KHR["muladd"]]
    check(products or name in PRODUCTLESS, f"{name}: no product")
    for p in products:
        uses = [use_of.get(p[1]), use_of.get(type_of.get(p[3])), use_of.get(type_of.get(p[4])),
                use_of.get(type_of.get(p[5]))]
        check(uses == [2, 0, 1, 2], f"{name}: product {p}: uses (result, A, B, C) {uses}")
    left = [i for i in khr_ins if opcode(i) in NV.values() or
            (opcode(i) == OP_SPEC_CONSTANT_OP and i[3] in NV.values()) or
            (opcode(i) == OP_CAPABILITY and i[1] == CAP_NV) or
            (opcode(i) == OP_EXTENSION and "NV_cooperative_matrix" in string_of(i))]
    check(not left, f"{name}: NV instructions left: {left[:3]}")
    # Undone, the rewrite gives back the NV module (with the three constants).
    with tempfile.TemporaryDirectory() as tmp:
        back = os.path.join(tmp, "back.spv")
        r = run_tool(tool, "--reverse", khr_path, back)
        if check(r.returncode == 0, f"{name}: --reverse failed: {r.stderr}"):
            back_ins = instructions(words_of(back))
            check(back_ins[:first_type] + back_ins[first_type + 3:] == nv_ins,
                  f"{name}: the round trip does not give back the NV module")
            # (SPIR-V 1.6, a vulkan1.3 build, needs that environment)
            env = "vulkan1.3" if words_of(back)[1] >= 0x10600 else "vulkan1.1"
            v = subprocess.run(["spirv-val", "--target-env", env, back],
                               capture_output=True, text=True)
            check(v.returncode == 0, f"{name}: spirv-val on the round trip: {v.stdout}{v.stderr}")
    return nv


def check_refusals(tool, folder, matmul_nv):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.spv")
        # The NV attention kernel with the softmax in registers converts
        # accumulators into A operands.
        r = run_tool(tool, os.path.join(folder, "attention_coopmat.spv"), out)
        check(r.returncode == 1 and "conversion between matrix uses" in r.stderr,
              f"the conversion was not refused: {r.returncode} {r.stderr}")
        # A product whose B operand is its A operand: one type as A and B.
        words = list(matmul_nv)
        i = 5
        while i < len(words) and (words[i] & 0xFFFF) != NV["muladd"]:
            i += words[i] >> 16
        words[i + 4] = words[i + 3]
        bad = os.path.join(tmp, "bad.spv")
        with open(bad, "wb") as f:
            array.array("I", words).tofile(f)
        r = run_tool(tool, bad, out)
        check(r.returncode == 1 and "two of A, B and the accumulator" in r.stderr,
              f"a type as A and B was not refused: {r.returncode} {r.stderr}")
        # A matrix's length as a specialization constant, right after the
        # first matrix type (a new id past the bound).
        words = list(matmul_nv)
        i = 5
        while i < len(words) and (words[i] & 0xFFFF) != NV["type"]:
            i += words[i] >> 16
        uint_id = next(ins[1] for ins in instructions(words)
                       if opcode(ins) == OP_TYPE_INT and ins[2:] == [32, 0])
        length = [5 << 16 | OP_SPEC_CONSTANT_OP, uint_id, words[3], NV["length"], words[i + 1]]
        words[3] += 1
        words[i + (words[i] >> 16):i + (words[i] >> 16)] = length
        with open(bad, "wb") as f:
            array.array("I", words).tofile(f)
        r = run_tool(tool, bad, out)
        check(r.returncode == 1 and "length as a specialization constant" in r.stderr,
              f"a length as a specialization constant was not refused: {r.returncode} {r.stderr}")
        # Not SPIR-V, and a module cut off mid-instruction.
        with open(bad, "wb") as f:
            f.write(b"not spir-v at all")
        r = run_tool(tool, bad, out)
        check(r.returncode == 1 and "not a readable SPIR-V module" in r.stderr,
              f"garbage was not refused: {r.returncode} {r.stderr}")
        cut = list(matmul_nv)
        cut[-1] = 5 << 16 | (cut[-1] & 0xFFFF)  # the last instruction runs past the end
        with open(bad, "wb") as f:
            array.array("I", cut).tofile(f)
        r = run_tool(tool, bad, out)
        check(r.returncode == 1 and "malformed instruction" in r.stderr,
              f"a truncated module was not refused: {r.returncode} {r.stderr}")
        check(not os.path.exists(out), "a refused rewrite left an output file")


def check_bf16(tool, folder, name, bf16_name):
    """bf16_name is name with bf16 A and B operands, nothing else changed."""
    khr, bf16 = words_of(os.path.join(folder, name + ".spv")), words_of(
        os.path.join(folder, bf16_name + ".spv"))
    check(bf16[:3] == khr[:3] and bf16[4] == khr[4], f"{bf16_name}: header changed")
    check(bf16[3] == khr[3] + 1, f"{bf16_name}: bound {bf16[3]}, not {khr[3]} + 1")
    khr_ins, bf16_ins = instructions(khr), instructions(bf16)
    new_type = khr[3]
    half = next((i[1] for i in khr_ins if opcode(i) == OP_TYPE_FLOAT and i[2:] == [16]), None)
    f32 = next((i[1] for i in khr_ins if opcode(i) == OP_TYPE_FLOAT and i[2:] == [32]), None)
    constants = {i[2]: i[3] for i in khr_ins if opcode(i) == OP_CONSTANT and len(i) == 4}
    want, typed = [], False
    for i in khr_ins:
        if opcode(i) == KHR["type"] and not typed:  # right before the first matrix type
            want.append([4 << 16 | OP_TYPE_FLOAT, new_type, 16, 0])  # BFloat16KHR encoding 0
            typed = True
        if opcode(i) == KHR["type"] and constants.get(i[6]) in (0, 1):
            check(i[2] == half, f"{name}: an A or B operand type not of f16: {i}")
            want.append([i[0], i[1], new_type] + i[3:])
            continue
        want.append(i)
        if opcode(i) == OP_CAPABILITY and i[1] == CAP_KHR:
            want += [[2 << 16 | OP_CAPABILITY, CAP_BFLOAT16_TYPE],
                     [2 << 16 | OP_CAPABILITY, CAP_BFLOAT16_COOPMAT]]
        elif opcode(i) == OP_EXTENSION and string_of(i) == "SPV_KHR_cooperative_matrix":
            name_words = array.array("I", b"SPV_KHR_bfloat16\0\0\0\0")
            want.append([(1 + len(name_words)) << 16 | OP_EXTENSION] + list(name_words))
    check(bf16_ins == want, f"{bf16_name}: not {name} with bf16 A and B operands "
                            f"({len(bf16_ins)} instructions, {len(want)} expected)")
    types = [i for i in bf16_ins if opcode(i) == KHR["type"]]
    check(any(i[2] == new_type for i in types) and
          all(i[2] == new_type or (constants.get(i[6]) == 2 and i[2] == f32) for i in types),
          f"{bf16_name}: matrix types {types}")
    # An A operand made by arithmetic (a load of one made an OpFNegate) is refused.
    nv = words_of(os.path.join(folder, name + "_nv.spv"))
    ins = instructions(nv)
    a_type = next(i[1] for i in ins if opcode(i) == NV["type"] and
                  any(p[3] in (j[2] for j in ins if opcode(j) == OP_LOAD and j[1] == i[1])
                      for p in ins if opcode(p) == NV["muladd"]))
    words, at = list(nv), 5
    while at < len(words) and not ((words[at] & 0xFFFF) == OP_LOAD and words[at + 1] == a_type):
        at += words[at] >> 16
    check(at < len(words), f"{name}: no OpLoad of an A operand to turn into arithmetic")
    words[at] = 4 << 16 | OP_FNEGATE
    with tempfile.TemporaryDirectory() as tmp:
        bad, out = os.path.join(tmp, "bad.spv"), os.path.join(tmp, "out.spv")
        with open(bad, "wb") as f:
            array.array("I", words).tofile(f)
        r = run_tool(tool, "--bf16", bad, out)
        check(r.returncode == 1 and "bf16 operand made by something other than a load" in r.stderr,
              f"a bf16 operand made by arithmetic was not refused: {r.returncode} {r.stderr}")
        check(not os.path.exists(out), "a refused bf16 rewrite left an output file")


# Scope ids as the modules give them: Workgroup 2, Subgroup 3.


def check_scopes(folder, name):
    """Every matrix type of a workgroup-scope kernel keeps the Workgroup scope
    (VK_NV_cooperative_matrix2's, which only the KHR module can carry); every
    other kernel's is Subgroup."""
    ins = instructions(words_of(os.path.join(folder, name + ".spv")))
    constants = {i[2]: i[3] for i in ins if opcode(i) == OP_CONSTANT and len(i) == 4}
    want = 2 if name in WORKGROUP_KERNELS else 3
    scopes = [constants.get(i[3]) for i in ins if opcode(i) == KHR["type"]]
    check(scopes and all(s == want for s in scopes),
          f"{name}: matrix scopes {scopes}, not all {want}")


OP_EXECUTION_MODE_ID, MODE_LOCAL_SIZE_ID = 331, 38


def check_version(folder, name):
    """A "_spirv16" module is SPIR-V 1.6 and takes its workgroup size by
    LocalSizeId; every other is SPIR-V 1.3 (Vulkan 1.1)."""
    words = words_of(os.path.join(folder, name + ".spv"))
    sixteen = name.endswith("_spirv16")
    want = 0x00010600 if sixteen else 0x00010300
    check(words[1] == want, f"{name}: SPIR-V version {words[1]:#010x}, not {want:#010x}")
    by_id = any(opcode(i) == OP_EXECUTION_MODE_ID and i[2] == MODE_LOCAL_SIZE_ID
                for i in instructions(words))
    check(by_id == sixteen, f"{name}: LocalSizeId {'missing' if sixteen else 'present'}")


def main():
    tool, folder = sys.argv[1], sys.argv[2]
    modules = {name: check_kernel(tool, folder, name) for name in KERNELS}
    for name in KERNELS:
        check_scopes(folder, name)
        check_version(folder, name)
    check_refusals(tool, folder, modules["matmul_coopmat_khr"])
    check_bf16(tool, folder, "attention_coopmat_khr", "attention_coopmat_khr_bf16")
    for f in failures:
        print("FAIL:", f)
    print(f"coopmat_khr: {len(KERNELS)} kernels, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
