#!/usr/bin/env python3
"""Times the GPU targets of vkattn-bench --gpu under other tile sizes and key
splits (vkattn-bench --tune, the library's tuning knobs), so that one GPU
session compares a kernel's settings instead of timing its defaults only:

    python3 bench/tune_sweep.py --build build --out bench/results/<device> \\
        [--budget 200] [--sdpa sdpa.csv] [--only CASE-SUBSTRING] [--small]

Each setting is one vkattn-bench process (its own context, so its own
pipelines), every result checked against the CPU reference on sampled rows as
the bench always does: a fast setting that computes garbage shows as failed,
not as a win. Writes tune.csv (the bench's columns plus `setting`) and tune.md
(per case, the settings from fastest to slowest, against the case's default and,
where sdpa.csv from the same run has the case, PyTorch SDPA). Settings past
--budget seconds are listed as not run. scripts/gpu-check.sh --tune-only runs it.
"""
import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_sdpa import KEY, case_name, number  # noqa: E402

PREFILL_128 = "4,16,16,4096,4096,128"
PREFILL_64 = "4,16,16,4096,4096,64"
DECODE = "1,32,8,1,8192,128"
MATMUL_4096 = "4096,4096,4096"

# (label, shape, dtype, causal, reps, settings); a setting is (variant or None
# for AUTO's choice, tuning string or None for the planner's own values). The
# first setting of each case is its default, the baseline of its ratios. A
# shape of three numbers is a matmul M,N,K (its variant a matmul kernel's name),
# else an attention B,H,Hkv,Tq,Tk,D. Cases and settings run in this order, the
# ones a GPU session most needs first. The H200's third check (2026-11-27,
# bench/results/nvidia-h200/third-check) timed the matmul's revision 3 (1.38 ms,
# against revision 2's blocks' 1.85) and the coopmat prefill's settings around
# its defaults (none better by more than 2 %); the softmax in registers was
# slower there because it spilled (255 registers, 112-288 bytes of local
# memory). So first the settings that free registers for it (one stage: no
# next tile's loads held in registers), then the ones not yet timed: the
# matmul's layouts and the f32 tiled kernel's. Since then the softmax in
# registers keeps one block of S and P a subgroup in shared memory instead of
# whole tiles, so its K and V tiles grow: 64 keys with 4 subgroups (one
# stage), 64 keys and two stages with 8 (128 rows a workgroup, FlashAttention-2's
# tile, half the K and V traffic a query row). The ablation there put a
# quarter of the time in the K and V loads, and S and P's trips through
# shared memory and the barriers in more than a third. The parts added up
# to about the whole: they hardly overlapped, with two workgroups of 235
# registers a multiprocessor. Q read from shared memory (coopmat.q=2) frees
# 28 registers at D=128 towards a third workgroup (its tile of Q leaves the
# K and V tiles 32 keys there; alone, with whole S and P tiles, 16).
# The fourth check (2026-11-28, bench/results/nvidia-h200/fourth-check) ran
# 8 settings in its 50 s, all but the default the softmax in registers, each
# spilling 352-464 bytes (at 186 registers too, so not the count alone) and
# 2.5-3x slower than the default (3.42 ms). Its element passes have been
# rewritten since (2026-11-28, twenty-fourth session: whole-matrix copies, a
# count the driver knows before it unrolls), so the setting with its fewest
# registers comes first, to show whether the local memory is gone, then the
# two whose tiles would pay if it is (128 rows and 64 keys a workgroup with
# two stages, FlashAttention-2's tile: half the K and V traffic a query row of
# the default's 64 rows; and 64 x 64), then the default's neighbours (none
# better by more than 2 % in the third check). Since the thirty-first session
# (no GPU), K and V double-buffered (coopmat.buffers=2: one workgroup barrier a
# tile instead of two, twice the tiles' shared memory): at D=128 the softmax in
# registers leaves room for 64 x 32 with two stages (41 KiB); through shared
# memory the tiles shrink (the planner says to what); at D=64 64 x 48 fits.
# The sweep gets what the check has left (50 s, 8 settings, in the fourth),
# so the five settings that decide the next step come first: the spill probe
# and the two buffers with the softmax in registers at D=128, and the two
# buffers at D=64, where they fit with the softmax through shared memory
# (what one barrier a tile is worth if the spill stays). Then the other
# settings, each case's default timed again (the run-to-run spread beside
# them).
CASES = [
    ("prefill f16 D=128", PREFILL_128, "f16", True, 5, [
        (None, None),
        ("coopmat", "coopmat.softmax=2,coopmat.q=2,coopmat.stages=1"),
        ("coopmat", "coopmat.softmax=2,coopmat.buffers=2"),
    ]),
    ("prefill f16 D=64", PREFILL_64, "f16", True, 5, [
        (None, None),
        ("coopmat", "coopmat.buffers=2"),
    ]),
    ("prefill f16 D=128, more settings", PREFILL_128, "f16", True, 5, [
        (None, None),
        ("coopmat", "coopmat.softmax=2,coopmat.subgroups=8"),
        ("coopmat", "coopmat.softmax=2"),
        ("coopmat", "coopmat.keys=32"),
        ("coopmat", "coopmat.subgroups=8"),
        ("coopmat", "coopmat.buffers=2"),
        # 48 rows: two buffers of 32 keys beside the shared-memory softmax's
        # S and P tiles (45,872 B; 64 rows would need 49,520)
        ("coopmat", "coopmat.buffers=2,coopmat.subgroups=3"),
        ("coopmat", "coopmat.softmax=2,coopmat.q=2"),
    ]),
    ("prefill f16 D=64, more settings", PREFILL_64, "f16", True, 5, [
        (None, None),
        ("coopmat", "coopmat.rows=2"),
        ("coopmat", "coopmat.softmax=2,coopmat.rows=2,coopmat.q=2"),
        ("coopmat", "coopmat.softmax=2"),
    ]),
    # The matmul's subgroup tile and stages, against its default and the
    # scalar tiled kernel.
    ("matmul f16 4096^3", MATMUL_4096, "f16", False, 5, [
        ("coopmat", None),
        ("coopmat", "matmul_coopmat.stages=1"),
        ("coopmat", "matmul_coopmat.rows=2"),
        ("coopmat", "matmul_coopmat.columns=4"),
        ("tiled", None),
    ]),
    ("prefill f32 D=128", PREFILL_128, "f32", True, 5, [
        ("tiled", None),
        ("tiled", "tiled.keys=32"),
        ("tiled", "tiled.keys=8"),
        ("tiled", "tiled.lanes=4"),
        ("tiled", "tiled.workgroup=256"),
        ("tiled", "tiled.lanes=4,tiled.workgroup=256"),
        ("tiled", "tiled.order=2"),
    ]),
    ("prefill f32 D=64", PREFILL_64, "f32", True, 5, [
        ("tiled", None),
        ("tiled", "tiled.keys=32"),
        ("tiled", "tiled.workgroup=256"),
    ]),
    # Timed on the H200 (2026-11-27): 0.042 ms, subgroups=8 0.041,
    # target=1024 0.048; kept for other GPUs.
    ("decode f16", DECODE, "f16", False, 20, [
        (None, None),
        ("decode", "decode.subgroups=8"),
        ("decode", "decode.target=4096"),
        ("coopmat", None),
    ]),
]


def is_matmul(shape):
    """M,N,K[,B]; attention shapes have six or seven numbers."""
    return len(shape.split(",")) <= 4


def timed(row):
    """The median, unless the run did not time anything (an error)."""
    return None if (row.get("error") or "").strip() else number(row.get("ms_median"))


def setting_name(variant, tuning):
    return f"{variant or 'auto'}" + (f" {tuning}" if tuning else "")


def run_setting(bench, shape, dtype, causal, reps, variant, tuning, timeout_s, extra=()):
    """One vkattn-bench run (with the options `extra` too); its CSV row (a
    dict), or a dict with `error`."""
    with tempfile.NamedTemporaryFile(suffix=".csv") as out:
        # --profile: the library logs each new pipeline's statistics (registers:
        # whether a setting's tiles spill is half of why it is fast or slow).
        args = [bench, "--dtype", dtype, "--reps", str(reps), "--csv", out.name, "--profile",
                *extra]
        if is_matmul(shape):
            args += ["--op", "matmul", "--matmul", shape]
            if variant:
                args += ["--matmul-variant", variant]
        else:
            args += ["--op", "attention", "--shape", shape, "--path", "fused"]
            if causal:
                args.append("--causal")
            if variant:
                args += ["--variant", variant]
        if tuning:
            args += ["--tune", tuning]
        try:
            p = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {"error": f"over {timeout_s} s"}
        except OSError as e:
            return {"error": f"cannot run {bench}: {e}"}
        with open(out.name, newline="") as f:
            rows = list(csv.DictReader(f))
    if not rows:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit status {p.returncode}: {tail}"}
    row = rows[0]
    # An entry the library ignored: the setting did not run as named.
    warnings = [line for line in p.stderr.splitlines()
                if line.startswith(("vkattn: tuning: ", "vkattn: VKATTN_TUNE: ")) and
                '" ignored: ' in line]
    if warnings:
        row["error"] = (row.get("error") or "") + " " + "; ".join(warnings)
    row.update(kernel_statistics(p.stderr))
    return row


def kernel_statistics(stderr):
    """The registers, shared memory and local memory of the setting's kernel
    (the first pipeline statistics line of an attention kernel that is not the
    combine pass, or of a matmul), where the driver reports them; {} where it
    does not. Local memory is the low 32 bits of the driver's figure: NVIDIA's
    580 driver reported 2^36 plus a few bytes for every kernel on the H200
    (bench/results/nvidia-h200/profile.txt), 2^36 + 256 for the coopmat
    matmul's revision 2."""
    for line in stderr.splitlines():
        m = re.match(r"vkattn: pipeline statistics: (attention_\w+|matmul\w*) \[", line)
        if not m or m.group(1) == "attention_combine":
            continue
        stats = {}
        for field, name in (("registers", "Register Count"), ("shared_bytes", "Shared Memory Size"),
                            ("local_bytes", "Local Memory Size")):
            v = re.search(re.escape(name) + r"=(\d+)", line)
            if v:
                stats[field] = str(int(v.group(1)) & 0xffffffff) if field == "local_bytes" \
                    else v.group(1)
        return stats
    return {}


def sdpa_times(path):
    if not path or not os.path.exists(path):
        return {}
    with open(path, newline="") as f:
        return {tuple(r[k] for k in KEY): number(r.get("ms_median")) for r in csv.DictReader(f)}


def case_key(shape, dtype, causal):
    if is_matmul(shape):  # no SDPA time
        return ("matmul", shape, dtype)
    B, H, Hkv, Tq, Tk, D = shape.split(",")
    return (B, H, Hkv, Tq, Tk, D, D, "1" if causal else "0", str(int(Tk) - int(Tq)), dtype)


def write_results(a, cases, results, sdpa, start):
    """tune.csv and tune.md from the settings run so far."""
    fields = ["case", "setting"]
    for *_, row in results:  # every row's columns: an early error row has none
        fields += [k for k in row if k not in fields and k != "error"]
    fields += ["error"]
    with open(os.path.join(a.out, "tune.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for label, _, _, _, name, row in results:
            w.writerow({"case": label, "setting": name, **row})

    lines = ["# vkattn settings sweep (bench/tune_sweep.py)", "",
             f"Command: `python3 bench/tune_sweep.py {' '.join(sys.argv[1:])}`; "
             f"{time.monotonic() - start:.0f} s so far. Each row is one vkattn-bench run "
             "(median of its timed runs, GPU timestamps), verified against the CPU "
             "reference on sampled rows. \"vs default\" is the case's first setting's "
             "time over this one's (above 1: faster).", ""]
    for label, shape, dtype, causal, *_ in cases:
        rows = [(name, row) for (l, _, _, _, name, row) in results if l == label]
        if not rows:
            continue
        title = f"matmul {shape.replace(',', 'x')}" if is_matmul(shape) else \
            case_name(dict(zip(KEY, case_key(shape, dtype, causal))))
        base = timed(rows[0][1])
        ref = sdpa.get(case_key(shape, dtype, causal))
        lines += [f"## {label}: {title} {dtype}", "",
                  f"Default: {rows[0][0]}" + (f"; PyTorch SDPA {ref:.3f} ms" if ref else "; no SDPA time"),
                  "", "| setting | ran | ms median | GFLOP/s | GB/s | vs default | % of SDPA | "
                  "registers | local memory | check |",
                  "|---|---|--:|--:|--:|--:|--:|--:|--:|---|"]
        def order(item):
            ms = timed(item[1])
            return (ms is None, ms or 0.0)
        for name, row in sorted(rows, key=order):
            ms = timed(row)
            good = row.get("ok") == "1" and not row.get("error")
            ran = (row.get("note") or "").split(";")[0].replace("ran ", "")
            cells = [f"`{name}`", ran or "-", f"{ms:.3f}" if ms else "-",
                     row.get("gflops", "-") if ms else "-", row.get("gbps", "-") if ms else "-",
                     f"{base / ms:.2f}" if ms and base else "-",
                     f"{100 * ref / ms:.1f}" if ms and ref else "-",
                     row.get("registers") or "-", row.get("local_bytes") or "-",
                     "ok" if good else (row.get("error") or "FAILED").strip().replace("|", "/")]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    with open(os.path.join(a.out, "tune.md"), "w") as f:
        f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget", type=float, default=200.0, help="seconds for all settings")
    ap.add_argument("--sdpa", help="sdpa.csv of the same run (default: OUT/sdpa.csv)")
    ap.add_argument("--only", help="cases whose label contains this")
    ap.add_argument("--reps", type=int, help="timed runs per setting (default per case)")
    ap.add_argument("--small", action="store_true",
                    help="small shapes, to try the sweep on a CPU device")
    a = ap.parse_args()
    small = {PREFILL_128: "1,4,4,256,256,128", PREFILL_64: "1,4,4,256,256,64",
             DECODE: "1,32,8,1,1024,128", MATMUL_4096: "256,256,256"}
    cases = [(l, small[s] if a.small else s, *rest) for (l, s, *rest) in CASES]
    bench = os.path.join(a.build, "vkattn-bench")
    if not os.access(bench, os.X_OK):
        print(f"tune_sweep: no {bench}: build first", file=sys.stderr)
        return 1
    sdpa = sdpa_times(a.sdpa or os.path.join(a.out, "sdpa.csv"))
    os.makedirs(a.out, exist_ok=True)
    start = time.monotonic()
    results = []  # (label, setting, row)
    for label, shape, dtype, causal, reps, settings in cases:
        if a.only and a.only not in label:
            continue
        for variant, tuning in settings:
            left = a.budget - (time.monotonic() - start)
            name = setting_name(variant, tuning)
            if left < 5:
                row = {"error": "not run: past the budget"}
            else:
                row = run_setting(bench, shape, dtype, causal, a.reps or reps, variant, tuning,
                                  max(10, min(120, int(left))))
            ms = timed(row)
            print(f"[{time.monotonic() - start:5.0f}s] {label:18} {name:45} "
                  f"{f'{ms:.3f} ms' if ms is not None else '-':>12} "
                  f"{'ok' if row.get('ok') == '1' and not row.get('error') else row.get('error') or 'FAILED'}",
                  flush=True)
            results.append((label, shape, dtype, causal, name, row))
            write_results(a, cases, results, sdpa, start)  # kept if the sweep is stopped

    print(f"tune sweep: {len(results)} settings, tune.md and tune.csv in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
