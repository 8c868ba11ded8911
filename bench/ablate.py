#!/usr/bin/env python3
"""Where the coopmat attention kernel's time goes on a GPU, where no profiler
reads Vulkan kernels: the f16 causal prefill timed whole and with parts of its
tile step left out (the timing diagnostic coopmat.ablate, attention_coopmat.comp's
ABLATE; results deliberately wrong, so unverified):

    python3 bench/ablate.py --build build --out bench/results/<device> [--budget 40]
        [--small --emulated]   # try it on a CPU device
        [--workgroup]          # the workgroup-scope kernel (coopmat_workgroup):
                               # ablation-workgroup.md and .csv

The workgroup-scope kernel takes the same bits (attention_coopmat_workgroup.comp's
ABLATE), through VK_KHR_cooperative_matrix with its matrices enabled
(VKATTN_COOPMAT_KHR=1 VKATTN_COOPMAT_WORKGROUP=1, which --workgroup sets).

Each setting is one vkattn-bench process. A part's time is the whole kernel's
less the time without it; parts overlap on a GPU (one warp's products run
while another's softmax does), so the differences need not add up to the
whole, and the gap says how much of the part the other work hides; and a
compiler may drop more than the part named (with the S products out, the
softmax in registers works on constant zeros it can fold). Writes
ablation.md and ablation.csv. scripts/gpu-check.sh runs it after SDPA.
"""
import argparse
import csv
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tune_sweep import PREFILL_128, PREFILL_64, run_setting, timed  # noqa: E402

# (ablate bits, what is left out); attention_coopmat.comp's ABLATE_*.
ABLATIONS = [
    (0, "nothing (the whole kernel)"),
    (1, "the softmax's arithmetic"),
    (2, "the S = Q K^T products"),
    (4, "the O += P V products"),
    (6, "both products"),
    (8, "the K and V loads from global memory"),
    (7, "the products and the softmax (left: loads, staging, barriers, moving S and P)"),
    (15, "all four (left: staging zeros, barriers, the loop, Q in, O out)"),
]
# (label, shape, the tuning every row adds, the ablate bits it runs: None for
# all; rows of one label form one table, its first row the whole kernel).
# The softmax in registers whole first: it spilled at the fourth check
# (352-464 bytes of local memory, even at 186 registers: not the count
# alone), two fixes for it wait on a GPU, and its local-memory column answers
# that in one run, while this step's budget shrank to 30 s (2026-11-28: the
# check's time went to the workgroup-scope kernel). Then the default kernel's
# parts (the fourth check ran out of its budget before those past the S
# products), then the register softmax's parts, whose absence may show which
# code keeps its matrices in local memory (the softmax's arithmetic writes
# the score accumulators' and O's elements; the products read and write
# whole matrices); then D=64.
REGISTERS = "prefill f16 D=128, softmax in registers"
# What the bits leave out of the workgroup-scope kernel where that differs:
# its softmax without the arithmetic still reads S and writes P (the raw
# scores), and without the loads it reads every tile from the first tile's
# rows, which stay in cache (staged tiles are zeros): what is left out is
# the traffic past the cache, not the loads themselves.
WORKGROUP_WHAT = {
    1: "the softmax's arithmetic (S still read, P written)",
    8: "the K and V traffic past the cache (every tile from the first's rows)",
    7: "the products and the softmax (left: loads, S out and P back, barriers)",
    15: "all four (left: the first tile's loads, S and P moved, barriers, Q in, O out)",
}
WORKGROUP_CASES = [
    ("prefill f16 D=128, workgroup scope", PREFILL_128, None, None),
    ("prefill f16 D=64, workgroup scope", PREFILL_64, None, None),
]
CASES = [
    (REGISTERS, PREFILL_128, "softmax=2", (0,)),
    ("prefill f16 D=128", PREFILL_128, None, None),
    (REGISTERS, PREFILL_128, "softmax=2", (1, 2, 4, 6)),
    ("prefill f16 D=64", PREFILL_64, None, None),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget", type=float, default=40.0, help="seconds for all settings")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--small", action="store_true", help="small shapes (a CPU device)")
    ap.add_argument("--emulated", action="store_true",
                    help="the emulated build (coopmat_emulated), for devices without matrix units")
    ap.add_argument("--workgroup", action="store_true",
                    help="the workgroup-scope kernel (coopmat_workgroup): ablation-workgroup.md")
    a = ap.parse_args()
    bench = os.path.join(a.build, "vkattn-bench")
    if not os.access(bench, os.X_OK):
        print(f"ablate: no {bench}: build first", file=sys.stderr)
        return 1
    variant = "coopmat_emulated" if a.emulated else "coopmat"
    cases, a.name = CASES, "ablation"
    if a.workgroup:
        variant = "coopmat_workgroup_emulated" if a.emulated else "coopmat_workgroup"
        cases, a.name = WORKGROUP_CASES, "ablation-workgroup"
        os.environ.update(VKATTN_COOPMAT_KHR="1", VKATTN_COOPMAT_WORKGROUP="1")
    small = {PREFILL_128: "1,2,2,64,64,128", PREFILL_64: "1,2,2,64,64,64"}
    os.environ["VKATTN_DIAGNOSTICS"] = "1"  # the library takes coopmat.ablate only so
    os.makedirs(a.out, exist_ok=True)
    start = time.monotonic()
    results = []  # (label, shape, bits, what, row)
    failed = set()  # labels whose whole kernel did not run: nothing to take parts from
    for label, shape, base_tuning, only_bits in cases:
        shape = small[shape] if a.small else shape
        for bits, what in ABLATIONS:
            if (only_bits is not None and bits not in only_bits) or label in failed:
                continue
            if a.workgroup:
                what = WORKGROUP_WHAT.get(bits, what)
            knobs = [f"{variant}.{base_tuning}"] if base_tuning else []
            knobs += [f"{variant}.ablate={bits}"] if bits else []
            left = a.budget - (time.monotonic() - start)
            if left < 3:
                row = {"error": "not run: past the budget"}
            else:
                row = run_setting(bench, shape, "f16", True, a.reps, variant,
                                  ",".join(knobs) or None, max(5, min(60, int(left))),
                                  extra=("--no-verify",))
            ms = timed(row)
            print(f"[{time.monotonic() - start:4.0f}s] {label:40} ablate={bits:<3} "
                  f"{f'{ms:.3f} ms' if ms is not None else row.get('error', 'FAILED')}", flush=True)
            results.append((label, shape, bits, what, row))
            if bits == 0 and ms is None:
                failed.add(label)  # the kernel does not run so here
        write(a, results)
    return 0


def write(a, results):
    with open(os.path.join(a.out, a.name + ".csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "shape", "ablate", "left_out", "ms_median", "registers", "local_bytes",
                    "error"])
        for label, shape, bits, what, row in results:
            w.writerow([label, shape, bits, what, row.get("ms_median", ""),
                        row.get("registers", ""), row.get("local_bytes", ""),
                        (row.get("error") or "").strip()])
    kernel = "workgroup-scope coopmat" if a.workgroup else "coopmat"
    lines = [f"# Where the {kernel} attention kernel's time goes (bench/ablate.py)", "",
             f"Command: `python3 bench/ablate.py {' '.join(sys.argv[1:])}` "
             "(VKATTN_DIAGNOSTICS=1, vkattn-bench --no-verify: every row but the whole "
             "kernel's computes wrong results on purpose). A part's time is the whole "
             "kernel's less the time without it; parts overlap, so they need not add up.", ""]
    for label in dict.fromkeys(r[0] for r in results):
        rows = [r for r in results if r[0] == label]
        whole = timed(rows[0][4])
        lines += [f"## {label} ({rows[0][1]}, causal)", "",
                  "| left out | ablate | ms median | part's time (ms) | part's share | registers "
                  "| local memory (bytes) |",
                  "|---|--:|--:|--:|--:|--:|--:|"]
        for _, _, bits, what, row in rows:
            ms = timed(row)
            part = whole - ms if ms is not None and whole is not None and bits else None
            cells = [what, str(bits), f"{ms:.3f}" if ms is not None else
                     (row.get("error") or "FAILED").strip().replace("|", "/"),
                     f"{part:.3f}" if part is not None else "-",
                     f"{100 * part / whole:.0f} %" if part is not None and whole else "-",
                     row.get("registers") or "-", row.get("local_bytes") or "-"]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    with open(os.path.join(a.out, a.name + ".md"), "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
