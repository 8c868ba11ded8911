#!/usr/bin/env python3
"""Times PyTorch's torch.nn.functional.scaled_dot_product_attention on the
attention cases of a vkattn-bench CSV: the same shapes (BHSD), dtypes, causal
flag and q_offset, on one torch device (CUDA by default).

    python3 bench/sdpa_bench.py --vkattn vkattn.csv --out sdpa.csv

Each case: inputs uniform in [-1, 1] like vkattn-bench's, warm-up runs, then
timed runs with CUDA events around each call (the host clock on a CPU device),
median and minimum. Grouped-query cases use enable_gqa=True where torch has it,
else K and V are repeated to H heads before timing (said in the note). A causal
case with Tq != Tk is bottom-right aligned as in vkattn (q_offset = Tk - Tq):
torch's causal_lower_right where it exists, else an explicit boolean mask. The
backend torch picks is asked of torch._fused_sdp_choice (a private function:
"unknown" when it fails).

Writes one CSV row per case, always: when torch cannot run a case (not
importable, no CUDA, no SDPA, an unknown dtype, out of memory) the row says why
in its note and has no times, so bench/compare_sdpa.py can say so in its table.
Columns are read by name, so new vkattn-bench columns or dtypes need nothing here
beyond a line in DTYPES.
"""
import argparse
import csv
import statistics
import sys
import time

# vkattn-bench dtype names -> torch dtype attribute names
DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}

KEY = ["B", "H", "Hkv", "Tq", "Tk", "D", "Dv", "causal", "q_offset", "dtype"]
COLUMNS = KEY + ["ms_median", "ms_min", "reps", "backend", "torch", "torch_device", "note"]


def read_cases(path):
    """Unique attention cases of a vkattn-bench CSV (not the CPU reference rows)."""
    cases, seen = [], set()
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["op"] != "attention" or row["path"] == "reference":
                continue
            case = {k: row[k] for k in KEY}
            key = tuple(case[k] for k in KEY)
            if key not in seen:
                seen.add(key)
                cases.append(case)
    return cases


class Sdpa:
    """What this torch offers, probed once."""

    def __init__(self, torch, device):
        self.torch = torch
        self.device = device
        self.F = torch.nn.functional
        self.sdpa = getattr(self.F, "scaled_dot_product_attention", None)
        self.gqa = False
        self.lower_right = None
        if self.sdpa is None:
            return
        tiny = torch.zeros(1, 2, 2, 8, device=device)
        try:
            self.sdpa(tiny, tiny[:, :1], tiny[:, :1], enable_gqa=True)
            self.gqa = True
        except (TypeError, RuntimeError):
            pass
        try:
            from torch.nn.attention.bias import causal_lower_right
            self.lower_right = causal_lower_right
        except ImportError:
            pass

    def backend(self, q, k, v, mask, causal):
        try:
            kwargs = {"enable_gqa": True} if self.gqa and q.shape[1] != k.shape[1] else {}
            choice = int(self.torch._fused_sdp_choice(q, k, v, mask, 0.0, causal, **kwargs))
        except Exception:  # private API: absent or changed in this version
            return "unknown"
        try:
            from torch.nn.attention import SDPBackend
            return SDPBackend(choice).name.lower()
        except (ImportError, ValueError):
            return {0: "math", 1: "flash_attention", 2: "efficient_attention",
                    3: "cudnn_attention"}.get(choice, f"backend {choice}")


def time_case(s, case, args):
    """Fills case's ms_median, ms_min, reps, backend and note."""
    torch = s.torch
    B, H, Hkv, Tq, Tk, D, Dv = (int(case[k]) for k in KEY[:7])
    causal = case["causal"] in ("1", "true", "True")
    q_offset = int(case["q_offset"])
    dtype = getattr(torch, DTYPES.get(case["dtype"], "?"), None)
    if dtype is None:
        case["note"] = f"dtype {case['dtype']} not known to this script or torch"
        return
    notes = []
    gen = torch.Generator(device=s.device).manual_seed(1)

    def uniform(*shape):
        return (torch.rand(*shape, generator=gen, device=s.device) * 2 - 1).to(dtype)

    q, k, v = uniform(B, H, Tq, D), uniform(B, Hkv, Tk, D), uniform(B, Hkv, Tk, Dv)
    kwargs = {}
    if H != Hkv:
        if s.gqa:
            kwargs["enable_gqa"] = True
            notes.append("enable_gqa=True")
        else:
            k = k.repeat_interleave(H // Hkv, dim=1)
            v = v.repeat_interleave(H // Hkv, dim=1)
            notes.append("K/V repeated to H heads before timing (no enable_gqa in this torch)")
    mask, is_causal = None, False
    if causal and q_offset == 0:
        is_causal = True
    elif causal and q_offset == Tk - Tq and s.lower_right is not None:
        mask = s.lower_right(Tq, Tk)
        notes.append("causal_lower_right")
    elif causal:
        rows = torch.arange(Tq, device=s.device)[:, None] + q_offset
        mask = torch.arange(Tk, device=s.device)[None, :] <= rows
        notes.append(f"explicit boolean mask (q_offset {q_offset})")

    def call():
        return s.sdpa(q, k, v, attn_mask=mask, is_causal=is_causal, **kwargs)

    if mask is None or isinstance(mask, torch.Tensor):
        case["backend"] = s.backend(q, k, v, mask, is_causal)
    else:
        case["backend"] = "unknown (CausalBias dispatches itself)"
    cuda = s.device.startswith("cuda")
    for _ in range(args.warmup):
        call()
    if cuda:
        torch.cuda.synchronize()
    times, start = [], time.perf_counter()
    while len(times) < args.reps and (len(times) < 3 or
                                      time.perf_counter() - start < args.budget_s):
        if cuda:
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            call()
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            call()
            times.append((time.perf_counter() - t0) * 1e3)
    case["ms_median"] = f"{statistics.median(times):.6f}"
    case["ms_min"] = f"{min(times):.6f}"
    case["reps"] = str(len(times))
    case["note"] = "; ".join(notes)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vkattn", required=True, help="a vkattn-bench CSV (--csv)")
    ap.add_argument("--out", required=True, help="the CSV to write")
    ap.add_argument("--device", default="cuda", help="torch device (default cuda)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--reps", type=int, default=50, help="the most timed runs (at least 3)")
    ap.add_argument("--budget-s", type=float, default=2.0,
                    help="stop timing a case after about this long")
    args = ap.parse_args()

    cases = read_cases(args.vkattn)
    for c in cases:
        c.update({k: "" for k in COLUMNS if k not in c})
    why_not = None
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        torch, why_not = None, f"not run: torch is not importable here ({e})"
    if torch is not None:
        version = torch.__version__ + (f", CUDA {torch.version.cuda}" if torch.version.cuda else "")
        if torch.version.cuda:
            version += (f", TF32 matmul {'on' if torch.backends.cuda.matmul.allow_tf32 else 'off'}"
                        f" (cuDNN {torch.backends.cudnn.version()})")
        for c in cases:
            c["torch"] = version
        if args.device.startswith("cuda") and not torch.cuda.is_available():
            why_not = f"not run: torch {version} sees no CUDA device"
        elif not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
            why_not = f"not run: torch {version} has no scaled_dot_product_attention (2.0+)"
    if why_not:
        print("sdpa_bench: " + why_not, file=sys.stderr)
        for c in cases:
            c["note"] = why_not
    else:
        s = Sdpa(torch, args.device)
        name = torch.cuda.get_device_name() if args.device.startswith("cuda") else args.device
        print(f"sdpa_bench: torch {torch.__version__} on {name}; enable_gqa "
              f"{'yes' if s.gqa else 'no'}, causal_lower_right "
              f"{'yes' if s.lower_right else 'no'}", file=sys.stderr)
        for i, c in enumerate(cases):
            c["torch_device"] = name
            label = ",".join(c[k] for k in KEY)
            try:
                time_case(s, c, args)
            except Exception as e:  # out of memory, an unsupported combination...
                c["note"] = f"not run: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
            finally:
                if args.device.startswith("cuda"):
                    torch.cuda.empty_cache()
            print(f"[{i + 1}/{len(cases)}] {label}: "
                  f"{c['ms_median'] or '-'} ms ({c['backend'] or '-'}) {c['note']}",
                  file=sys.stderr, flush=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
