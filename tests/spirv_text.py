"""A SPIR-V module read from spirv-dis's text, and the tool runner, for the
checks of the build's SPIR-V (coopmat_indexing_test.py,
uniform_control_test.py)."""
import re
import subprocess
import sys

INSTRUCTION = re.compile(r"\s*(?:(%\S+) = )?(Op\w+)\s*(.*)")


def run(*command):
    """A tool's standard output; the check fails if the tool does."""
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"FAIL: {' '.join(map(str, command))}:\n{done.stdout}{done.stderr}")
    return done.stdout


class Module:
    """Its instructions as (result, op, operands), and what the checks look up:
    constant ids (and the values of integer ones), types, built-in variables,
    each variable's storage class, each value's type, and each cooperative
    matrix type's scope."""

    def __init__(self, text):
        self.ins = []
        self.constant_ids, self.constants = set(), {}
        self.types, self.builtins, self.storage, self.type_of = {}, {}, {}, {}
        decorations = {}
        for line in text.splitlines():
            m = INSTRUCTION.match(line)
            if not m:
                continue
            result, op, rest = m.groups()
            operands = rest.split()
            self.ins.append((result, op, operands))
            if op == "OpDecorate" and len(operands) >= 3 and operands[1] == "BuiltIn":
                decorations[operands[0]] = operands[2]
            elif op.startswith("OpType"):
                self.types[result] = (op, operands)
                continue
            if op.startswith("OpConstant") or op.startswith("OpSpecConstant"):
                self.constant_ids.add(result)
                if op in ("OpConstant", "OpSpecConstant") and operands[1].lstrip("-").isdigit():
                    self.constants[result] = int(operands[1])
            if op == "OpVariable":
                self.storage[result] = operands[1]
                if result in decorations:
                    self.builtins[result] = decorations[result]
            if result and operands and op not in ("OpLabel", "OpString", "OpExtInstImport"):
                self.type_of[result] = operands[0]
        self.matrix_scope = {result: self.constants.get(operands[1])
                             for result, (op, operands) in self.types.items()
                             if op.startswith("OpTypeCooperativeMatrix")}

    def pointee(self, variable):
        """The type a variable holds."""
        pointer = self.types.get(self.type_of.get(variable))
        return pointer[1][1] if pointer and pointer[0] == "OpTypePointer" else None

    def matrix_depth(self, kind):
        """How many arrays deep a type holds cooperative matrices (0: a matrix
        itself), or None if it holds none."""
        depth = 0
        while kind in self.types and self.types[kind][0] == "OpTypeArray":
            kind, depth = self.types[kind][1][0], depth + 1
        return depth if kind in self.matrix_scope else None
