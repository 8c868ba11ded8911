#!/usr/bin/env python3
"""bench/compare_sdpa.py, the last step of scripts/gpu-check.sh, on the CSVs of
GPU checks committed under bench/results/: every attention row of vkattn's CSV
(the CPU reference's left out) comes out once in the Markdown table and once in
the joined CSV, beside the SDPA row of the same case, with the ratio SDPA time /
vkattn time and the FLOPs counted as vkattn-bench counts them.

usage: compare_sdpa_test.py REPO_ROOT
"""
import csv
import os
import subprocess
import sys
import tempfile


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def time_of(row):
    """The row's median in ms, or None where it is empty, NaN or not a number."""
    try:
        ms = float(row["ms_median"])
    except (TypeError, ValueError):
        return None
    return ms if ms == ms and ms > 0 else None


def check(root, folder, tmp):
    vk_csv, sdpa_csv = os.path.join(folder, "vkattn.csv"), os.path.join(folder, "sdpa.csv")
    md, joined_csv = os.path.join(tmp, "table.md"), os.path.join(tmp, "joined.csv")
    subprocess.run([sys.executable, os.path.join(root, "bench", "compare_sdpa.py"),
                    "--vkattn", vk_csv, "--sdpa", sdpa_csv, "--out", md, "--csv", joined_csv,
                    "--info", "Date: fixed"], check=True)
    key = ["B", "H", "Hkv", "Tq", "Tk", "D", "Dv", "causal", "q_offset", "dtype"]
    vk = [r for r in rows(vk_csv) if r["op"] == "attention" and r["path"] != "reference"]
    sdpa = {tuple(r[k] for k in key): r for r in rows(sdpa_csv)}
    joined = rows(joined_csv)
    with open(md) as f:
        table = [line for line in f if line.startswith("| ") and not line.startswith("| case")]
    problems = []
    if len(joined) != len(vk) or len(table) != len(vk):
        problems.append(f"{len(vk)} attention rows, {len(joined)} joined, {len(table)} in the table")
    for v, j in zip(vk, joined):
        if tuple(v[k] for k in key) != tuple(j[k] for k in key):
            problems.append(f"row order: {j['case']}")
            continue
        s = sdpa.get(tuple(v[k] for k in key))
        if not s or v.get("error") or not time_of(v) or not time_of(s):
            if j["pct_of_sdpa"] != "-":
                problems.append(f"{j['case']}: a ratio without both times")
            continue
        want = 100.0 * time_of(s) / time_of(v)
        if abs(float(j["pct_of_sdpa"]) - want) > 0.006 + 1e-6 * want:
            problems.append(f"{j['case']}: ratio {j['pct_of_sdpa']}, expected {want:.3f}")
        # TFLOP/s from the FLOPs of vkattn-bench's gflops column (GFLOP/s at its median)
        bench_tflops = float(v["gflops"]) / 1000.0
        if abs(float(j["vkattn_tflops"]) - bench_tflops) > 1e-3 * bench_tflops + 1e-4:
            problems.append(f"{j['case']}: {j['vkattn_tflops']} TFLOP/s, the bench says "
                            f"{bench_tflops:.4f}")
    return len(vk), problems


def main():
    root = sys.argv[1]
    results = os.path.join(root, "bench", "results")
    folders = sorted(d for d, _, files in os.walk(results)
                     if "vkattn.csv" in files and "sdpa.csv" in files)
    if not folders:
        print("FAIL: no committed GPU check with vkattn.csv and sdpa.csv")
        return 1
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for folder in folders:
            n, problems = check(root, folder, tmp)
            for p in problems:
                print(f"FAIL {os.path.relpath(folder, root)}: {p}")
            failed += bool(problems)
            print(f"{os.path.relpath(folder, root)}: {n} rows joined")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
