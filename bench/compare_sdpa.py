#!/usr/bin/env python3
"""Joins a vkattn-bench CSV and a bench/sdpa_bench.py CSV of the same cases into
one Markdown table, vkattn beside PyTorch's scaled_dot_product_attention:

    python3 bench/compare_sdpa.py --vkattn vkattn.csv --sdpa sdpa.csv --out results.md \\
        [--csv joined.csv] [--title T] [--info "Key: value"]... [--command CMD]...

Both are timed on the same device. FLOPs are counted the same way for both, as
vkattn-bench counts them: 2 (D + Dv) per unmasked (query, key) pair and query
head, so a causal case counts about half of Tq x Tk. "% of SDPA throughput" is
SDPA's time over vkattn's (100 = as fast as SDPA). "% FP32 peak" is vkattn-bench's
pct_peak (its datasheet FP32 rate, no tensor cores), shown for f32 rows only.
Columns are read by name; rows of other ops and the CPU reference are left out.
--csv writes the same rows as CSV: the case's key columns, both times and rates,
the ratio and the check, for scripts that compare runs.
"""
import argparse
import csv
import datetime
import sys

KEY = ["B", "H", "Hkv", "Tq", "Tk", "D", "Dv", "causal", "q_offset", "dtype"]


def unmasked_pairs(Tq, Tk, causal, q_offset):
    """Query i sees keys 0 .. min(i + q_offset, Tk - 1) when causal (as bench_util.c)."""
    if not causal:
        return Tq * Tk
    return sum(min(max(i + q_offset + 1, 0), Tk) for i in range(Tq))


def flops(c):
    B, H, Tq, Tk, D, Dv = (int(c[k]) for k in ("B", "H", "Tq", "Tk", "D", "Dv"))
    causal = c["causal"] in ("1", "true", "True")
    return 2.0 * (D + Dv) * B * H * unmasked_pairs(Tq, Tk, causal, int(c["q_offset"]))


def case_name(c):
    B, H, Hkv, Tq, Tk, D, Dv = (int(c[k]) for k in KEY[:7])
    causal = c["causal"] in ("1", "true", "True")
    heads = f"H={H}" + (f" Hkv={Hkv}" if Hkv != H else "")
    dims = f"D={D}" + (f" Dv={Dv}" if Dv != D else "")
    if Tq == 1:
        kind, length = "decode", f"Tk={Tk}"
    elif Tq == Tk:
        kind, length = "prefill", f"T={Tq}"
    else:
        kind, length = "attention", f"Tq={Tq} Tk={Tk}"
    mask = "causal" if causal else "full"
    if causal and int(c["q_offset"]) not in (0, Tk - Tq):
        mask += f" q_offset={c['q_offset']}"
    return f"{kind} {mask} B={B} {heads} {length} {dims}"


def number(text):
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if v == v else None   # NaN -> None


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def rate(v):
    """TFLOP/s: two decimals, or two significant digits for the tiny rates of CPU devices."""
    return "-" if v is None else f"{v:.2f}" if v >= 0.1 else f"{v:.2g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vkattn", required=True)
    ap.add_argument("--sdpa", required=True)
    ap.add_argument("--out", required=True, help="the Markdown file to write ('-': stdout)")
    ap.add_argument("--csv", help="the joined rows as CSV, with the ratio")
    ap.add_argument("--title", default="vkattn and PyTorch SDPA")
    ap.add_argument("--info", action="append", default=[], help='a header line, "Key: value"')
    ap.add_argument("--command", action="append", default=[], help="a command, shown verbatim")
    args = ap.parse_args()

    with open(args.vkattn, newline="") as f:
        vk_rows = [r for r in csv.DictReader(f)
                   if r["op"] == "attention" and r["path"] != "reference"]
    with open(args.sdpa, newline="") as f:
        sdpa = {tuple(r[k] for k in KEY): r for r in csv.DictReader(f)}

    lines = [f"# {args.title}", ""]
    device = vk_rows[0]["device"] if vk_rows else "?"
    driver = vk_rows[0]["driver"] if vk_rows else "?"
    lines.append(f"- Device (Vulkan): {device}, driver {driver}")
    torch_rows = [r for r in sdpa.values() if r.get("torch")]
    if torch_rows:
        r = torch_rows[0]
        lines.append(f"- PyTorch: {r['torch']}" + (f" on {r['torch_device']}"
                                                    if r.get("torch_device") else ""))
    lines += [f"- {i}" for i in args.info]
    if not any(i.startswith("Date") for i in args.info):
        lines.append(f"- Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    if args.command:
        lines += ["", "Commands:", "", "```"] + args.command + ["```"]
    lines += [
        "",
        "FLOPs: 2 (D + Dv) per unmasked (query, key) pair and query head, for both (causal "
        "counts about half). vkattn: GPU timestamps, median of its timed runs, f32 output "
        "(f16 where the path says o=f16, as SDPA writes it). "
        "SDPA: CUDA events around each call, median, output in the input dtype. "
        "\"% of SDPA throughput\" = SDPA time / vkattn time. \"% FP32 peak\": vkattn's "
        "rate over the device's FP32 datasheet rate without tensor cores (f32 rows only).",
        "",
        "| case | dtype | vkattn path | vkattn ms | SDPA ms | vkattn TFLOP/s | SDPA TFLOP/s "
        "| % of SDPA throughput | % FP32 peak | SDPA backend | vkattn check | notes |",
        "|---|---|---|--:|--:|--:|--:|--:|--:|---|---|---|",
    ]
    joined = []
    for r in vk_rows:
        key = tuple(r[k] for k in KEY)
        s = sdpa.get(key, {})
        work = flops(r)
        vk_ms = number(r["ms_median"]) if not r.get("error") else None
        sd_ms = number(s.get("ms_median"))
        vk_tf = work / (vk_ms * 1e9) if vk_ms else None
        sd_tf = work / (sd_ms * 1e9) if sd_ms else None
        ratio = 100.0 * sd_ms / vk_ms if vk_ms and sd_ms else None
        peak = number(r.get("pct_peak")) if r["dtype"] == "f32" else None
        check = "ok" if r["ok"] == "1" and r["verified"] == "1" else \
                "not verified" if r["ok"] == "1" else "ERROR" if r.get("error") else "FAIL"
        ran = r.get("note", "").split(";")[0] if r.get("note", "").startswith("ran ") else ""
        notes = [n for n in (r.get("error", ""), ran, s.get("note", "") if s else
                             "no SDPA row for this case") if n]
        path = r["path"] + (f" ({r['variant']})" if r.get("variant", "-") != "-" else "")
        joined.append(dict(zip(KEY, key), case=case_name(r), path=path,
                           vkattn_ms=fmt(vk_ms, ".6f"), sdpa_ms=fmt(sd_ms, ".6f"),
                           vkattn_tflops=fmt(vk_tf, ".4f"), sdpa_tflops=fmt(sd_tf, ".4f"),
                           pct_of_sdpa=fmt(ratio, ".2f"), pct_fp32_peak=fmt(peak or None, ".2f"),
                           sdpa_backend=s.get("backend") or "-", check=check,
                           notes="; ".join(notes)))
        lines.append(
            f"| {case_name(r)} | {r['dtype']} | {path} | {fmt(vk_ms, '.3f')} | {fmt(sd_ms, '.3f')} "
            f"| {rate(vk_tf)} | {rate(sd_tf)} | {fmt(ratio, '.1f')} "
            f"| {fmt(peak if peak else None, '.1f')} | {s.get('backend') or '-'} | {check} "
            f"| {'; '.join(notes).replace('|', '/')} |")
    if args.csv:
        columns = ["case"] + KEY + ["path", "vkattn_ms", "sdpa_ms", "vkattn_tflops",
                                    "sdpa_tflops", "pct_of_sdpa", "pct_fp32_peak",
                                    "sdpa_backend", "check", "notes"]
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=columns)
            w.writeheader()
            w.writerows(joined)
    text = "\n".join(lines) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
