#!/usr/bin/env python3
"""`vkattn attention` and `vkattn mha` against an independent float64 oracle (numpy), DESIGN.md section 1.

Every other test compares the GPU kernels with vkattn's own CPU reference; this
one checks the whole chain a user drives -- the CLI's options exactly as the
issues name them, the .npy files, the library, the kernels AUTO picks, the
--path asked for or the kernel forced by name (--kernels) -- against attention written here from DESIGN.md alone, per
(batch entry, head), in float64. Each seed draws one random case: dense BHSD or
BSHD, packed variable-length sequences (--cu-seqlens-q/-k), a paged KV cache
(--block-table, with 4-D or packed queries); GQA, causal, q_offset, kv_len,
--window, --softcap, --sinks, --alibi, --mask (f16/f32/f64, every broadcast
shape, -inf entries, or float64's min as Hugging Face masks), --scale, --dtype
f16/bf16 (the reference reads the same rounded inputs), float64 files (rounded
once to --dtype), --out-dtype f16/bf16, head sizes up to D=576 / Dv=512, empty
sequences, packed or dense (Tq or Tk of 0);
and `vkattn mha`, the layer with PyTorch nn.Linear weights and biases, the
variants it takes (the mask among them) and --compute-dtype f16/bf16 (q, k, v
and the heads' output rounded to it).

    tests/cli_vs_numpy.py --cli build/vkattn --seeds 0:60     # what ctest runs
    tests/cli_vs_numpy.py --cli build/vkattn --seeds 1000:3000 # a longer fuzz
    tests/cli_vs_numpy.py --cli build/vkattn --seeds 23:41 \
        --kernels coopmat,coopmat_emulated,decode --may-refuse coopmat  # cli_vs_numpy_kernels
    tests/cli_vs_numpy.py --cli build/vkattn --seeds 5000:5200 --big  # long sequences, any D

Exit status 0 if every case matches, 1 if any does not (each printed with its
command line) or if a forced kernel not named by --may-refuse refused every case
it was drawn for, 77 (ctest's skip) without numpy.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    # This interpreter lacks numpy (a pyenv or venv python3 first on PATH):
    # another one that has it, $PYTHON first (scripts/gpu-check.sh sets the one
    # with torch), then the system's.
    for other in (os.environ.get("PYTHON"), "/usr/bin/python3", shutil.which("python3")):
        if other and os.path.realpath(other) != os.path.realpath(sys.executable) and \
                subprocess.run([other, "-c", "import numpy"], capture_output=True).returncode == 0:
            os.execv(other, [other] + sys.argv)
    print("skipped: numpy is missing (Debian: python3-numpy)")
    sys.exit(77)


BF16_MAX = (2 - 2.0 ** -7) * 2.0 ** 127


def round_bf16(x):
    """float32 or float64 values to bfloat16 and back, rounded once to nearest
    even (8 significant bits, normal exponents down to 2^-126)."""
    x = np.asarray(x, dtype=np.float64)
    _, e = np.frexp(x)
    quantum = np.ldexp(1.0, np.maximum(e - 1, -126) - 7)
    r = np.rint(x / quantum) * quantum
    r = np.where(np.abs(r) > BF16_MAX, np.copysign(np.inf, x), r)
    return np.where(np.isfinite(x) & (x != 0), r, x).astype(np.float32)


ROUND = {
    "f32": lambda x: x.astype(np.float32),
    "f16": lambda x: x.astype(np.float16).astype(np.float32),
    "bf16": round_bf16,
}


def attend_head(q, k, v, opt, q_offset, keys, head, mask2):
    """One head of one batch entry, DESIGN.md section 1: q (Tq, D), k (Tk, D),
    v (Tk, Dv) in float64; keys: how many of k's rows exist (kv_len); mask2 the
    additive mask's (Tq, Tk) slice or None."""
    Tq, Tk = q.shape[0], k.shape[0]
    out = np.zeros((Tq, v.shape[1]))
    if Tq == 0:
        return out
    s = opt["scale"] * (q @ k.T) if Tk else np.zeros((Tq, 0))
    if opt["softcap"]:
        s = opt["softcap"] * np.tanh(s / opt["softcap"])
    pos = np.arange(Tq)[:, None] + q_offset
    j = np.arange(Tk)[None, :]
    if opt["alibi"] is not None:
        s = s + float(opt["alibi"][head]) * (j - pos)
    allowed = np.broadcast_to(j < keys, (Tq, Tk))
    if mask2 is not None:
        # With a mask, a score that is -inf once it is added counts as not
        # allowed (DESIGN.md: "made -inf by the mask"; vkattn cannot tell the
        # mask's -inf from the data's and skips both). A NaN or +inf entry is
        # an allowed key whose score IEEE arithmetic makes NaN or +inf.
        s = s + mask2
        allowed = allowed & ~np.isneginf(s)
    if opt["causal"]:
        allowed = allowed & (j <= pos)
    left, right = opt["window"] if opt["window"] else (-1, -1)
    if left >= 0:
        allowed = allowed & (j >= pos - left)
    if right >= 0:
        allowed = allowed & (j <= pos + right)
    sink = None if opt["sinks"] is None else float(opt["sinks"][head])
    for i in range(Tq):
        a = allowed[i]
        if not a.any():
            continue  # no allowed key: zeros, sink or no sink
        x = s[i][a]
        # every allowed score -inf: weights of 0, as PyTorch's safe softmax
        # gives, with no sum to divide by and no sink; the weights multiply V
        # elementwise, so 0 * inf is nan as IEEE has it, whatever a BLAS would
        # skip
        weightless = x.max() == -np.inf
        m = 0.0 if weightless else x.max() if sink is None else max(x.max(), sink)
        w = np.exp(x - m)
        den = 1.0 if weightless else w.sum() + (0.0 if sink is None else np.exp(sink - m))
        out[i] = ((w / den)[:, None] * v[a]).sum(axis=0)
    return out


class Case:
    """One random case: the files and options for the CLI, and per batch entry
    its queries (H, Tq_b, D), keys and values (Hkv, Tk_b, ...), q_offset, key
    count, and where its output rows are."""

    def __init__(self, seed, folder):
        self.r = np.random.default_rng(seed)
        self.folder = folder
        self.args = []
        self.entries = []
        self.float64 = False

    def save(self, name, array):
        path = os.path.join(self.folder, name)
        np.save(path, array)
        return path

    def normal(self, shape, magnitude=1.0):
        """float64 in cases that write float64 files (the CLI rounds them once
        to --dtype; the oracle the same), else float32."""
        x = self.r.standard_normal(shape) * magnitude
        return x if self.float64 else x.astype(np.float32)

    def lengths(self, count, most):
        """Sequence lengths with empty and one-token ones likely."""
        return [int(self.r.choice([0, 1, 2, self.r.integers(0, most + 1), most])) for _ in range(count)]


def draw_options(c, H, D, layer=False, far=None):
    """The options every kind of case takes (a layer has no q_offset). With
    `far` (an rng: --big), each option that is on takes its value from wider
    ranges (offsets and windows of hundreds of keys, scales past 1, softcaps
    from 0.5 to 50), drawn from `far`."""
    r = c.r
    pick = lambda usual, wide: far.choice(wide) if far is not None else r.choice(usual)
    opt = {"causal": r.random() < 0.5, "window": None, "softcap": 0.0, "sinks": None,
           "alibi": None, "scale": 1.0 / np.sqrt(D), "q_offset": None}
    if opt["causal"]:
        c.args.append("--causal")
    if r.random() < 0.25 and not layer:
        opt["q_offset"] = int(r.integers(-3, 12) if far is None else far.integers(-450, 450))
        if r.random() < 0.15:
            opt["q_offset"] = far_offset(r)
        c.args += ["--q-offset", str(opt["q_offset"])]
    if r.random() < 0.3:
        opt["window"] = (int(pick([-1, 0, 2, 9], [-1, 0, 1, 17, 64, 200])),
                         int(pick([-1, 0, 3], [-1, 0, 5, 130])))
        c.args += ["--window", "%d,%d" % opt["window"]]
    if r.random() < 0.25:
        opt["softcap"] = float(pick([2.0, 20.0], [0.5, 5.0, 50.0]))
        c.args += ["--softcap", str(opt["softcap"])]
    if r.random() < 0.2:
        opt["scale"] = float(pick([0.05, 0.5], [0.01, 0.3, 1.0, 4.0]))
        c.args += ["--scale", str(opt["scale"])]
    # Sinks and slopes are float32 in the library: the oracle reads them so
    # rounded, also from float64 files.
    if r.random() < 0.25:
        sinks = c.normal(H, 2.0)
        c.args += ["--sinks", c.save("sinks.npy", sinks)]
        opt["sinks"] = sinks.astype(np.float32)
    if r.random() < 0.25:
        alibi = -np.abs(c.normal(H)) * 0.5
        c.args += ["--alibi", c.save("alibi.npy", alibi)]
        opt["alibi"] = alibi.astype(np.float32)
        if not layer and r.random() < 0.3:
            opt["q_offset"] = far_offset(r)
            if "--q-offset" in c.args:
                c.args[c.args.index("--q-offset") + 1] = str(opt["q_offset"])
            else:
                c.args += ["--q-offset", str(opt["q_offset"])]
    return opt


def far_offset(r):
    """Rows far from every key (the CLI takes |q_offset| up to 2^28), where
    f32 cannot hold ALiBi's j - pos."""
    return int(r.choice([2**28, -2**28, 2**24 + 1, -(2**20) - 3, 2**20]))


def dense(c, B, H, Hkv, D, Dv, most, magnitude, rnd, opt, layout):
    """4-D Q, K, V in BHSD or BSHD (--layout), kv_len padding sometimes.
    Returns the tensors to save and the longest Tq and Tk (for a mask)."""
    r = c.r
    Tq, Tk = int(r.integers(1, most + 1)), int(r.integers(1, most + 1))
    if r.random() < 0.05:  # no query rows (an O with none) or no keys (zeros)
        Tq, Tk = (0, Tk) if r.random() < 0.5 else (Tq, 0)
    if layout == "bshd":
        q, k, v = c.normal((B, Tq, H, D), magnitude), c.normal((B, Tk, Hkv, D), magnitude), c.normal((B, Tk, Hkv, Dv))
        c.args += ["--layout", "bshd"]
        heads_first = lambda x: x.transpose(1, 0, 2)
    else:
        q, k, v = c.normal((B, H, Tq, D), magnitude), c.normal((B, Hkv, Tk, D), magnitude), c.normal((B, Hkv, Tk, Dv))
        heads_first = lambda x: x
    kv_len = None
    if r.random() < 0.3:
        kv_len = [int(r.integers(0, Tk + 1)) for _ in range(B)]
        c.args += ["--kv-len", ",".join(map(str, kv_len))]
    qr, kr, vr = rnd(q), rnd(k), rnd(v)
    q_offset = Tk - Tq if opt["q_offset"] is None else opt["q_offset"]
    for b in range(B):
        c.entries.append((heads_first(qr[b]), heads_first(kr[b]), heads_first(vr[b]), q_offset,
                          Tk if kv_len is None else kv_len[b], ("dense", b, layout)))
    return (q, k, v), Tq, Tk


def packed(c, B, H, Hkv, D, Dv, most, magnitude, rnd, opt):
    """Variable-length sequences packed by --cu-seqlens-q/-k, some empty."""
    r = c.r
    tq, tk = c.lengths(B, most), c.lengths(B, most)
    if r.random() < 0.5:
        tk = [max(a, b) for a, b in zip(tq, tk)]
    cu_q = np.concatenate([[0], np.cumsum(tq)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(tk)]).astype(np.int32)
    # A tensor has at least one row; offsets ending at 0 leave it unused.
    q = c.normal((max(int(cu_q[-1]), 1), H, D), magnitude)
    k = c.normal((max(int(cu_k[-1]), 1), Hkv, D), magnitude)
    v = c.normal((max(int(cu_k[-1]), 1), Hkv, Dv))
    c.args += ["--cu-seqlens-q", c.save("cu_q.npy", cu_q), "--cu-seqlens-k", c.save("cu_k.npy", cu_k)]
    kv_len = None
    if r.random() < 0.3:
        kv_len = [int(r.integers(0, t + 1)) for t in tk]
        c.args += ["--kv-len", ",".join(map(str, kv_len))]
    qr, kr, vr = rnd(q), rnd(k), rnd(v)
    for b in range(B):
        q_offset = tk[b] - tq[b] if opt["q_offset"] is None else opt["q_offset"]
        keys = tk[b] if kv_len is None else min(tk[b], kv_len[b])
        c.entries.append((qr[cu_q[b]:cu_q[b + 1]].transpose(1, 0, 2), kr[cu_k[b]:cu_k[b + 1]].transpose(1, 0, 2),
                          vr[cu_k[b]:cu_k[b + 1]].transpose(1, 0, 2), q_offset, keys,
                          ("packed", int(cu_q[b]), int(cu_q[b + 1]))))
    return (q, k, v), max(tq), max(tk)


def paged(c, B, H, Hkv, D, Dv, most, magnitude, rnd, opt, block_sizes, packed_q):
    """A paged KV cache (--block-table, shuffled blocks, spare ones) with
    --kv-len, and 4-D or packed queries."""
    r = c.r
    block = int(r.choice(block_sizes))
    kv_len = [int(r.integers(0, most + 1)) for _ in range(B)]
    max_blocks = max(1, max((n + block - 1) // block for n in kv_len))
    cache_blocks = B * max_blocks + int(r.integers(0, 3))
    table = r.permutation(cache_blocks).astype(np.int32)[:B * max_blocks].reshape(B, max_blocks).copy()
    k, v = c.normal((cache_blocks, block, Hkv, D), magnitude), c.normal((cache_blocks, block, Hkv, Dv))
    c.args += ["--block-table", c.save("table.npy", table), "--kv-len", ",".join(map(str, kv_len))]
    if packed_q:
        tq = c.lengths(B, most)
        cu_q = np.concatenate([[0], np.cumsum(tq)]).astype(np.int32)
        q = c.normal((max(int(cu_q[-1]), 1), H, D), magnitude)
        c.args += ["--cu-seqlens-q", c.save("cu_q.npy", cu_q)]
    else:
        tq = [int(r.choice([1, 1, 2, 5, 17])) if most > 3 else 1] * B
        q = c.normal((B, H, tq[0], D), magnitude)
    qr, kr, vr = rnd(q), rnd(k), rnd(v)
    for b in range(B):
        keys_b = np.concatenate([kr[table[b, p]] for p in range(max_blocks)])[:kv_len[b]]
        values_b = np.concatenate([vr[table[b, p]] for p in range(max_blocks)])[:kv_len[b]]
        if packed_q:
            q_b, where = qr[cu_q[b]:cu_q[b + 1]].transpose(1, 0, 2), ("packed", int(cu_q[b]), int(cu_q[b + 1]))
        else:
            q_b, where = qr[b], ("dense", b, "bhsd")
        q_offset = kv_len[b] - tq[b] if opt["q_offset"] is None else opt["q_offset"]
        c.entries.append((q_b, keys_b.transpose(1, 0, 2), values_b.transpose(1, 0, 2), q_offset, kv_len[b], where))
    return (q, k, v), max(tq), max_blocks * block


def draw_mask(c, B, H, Tq, Tk):
    """An additive mask of a random broadcast shape (Tq, Tk: the longest
    sequences, 0 where all are empty, or the paged table's span), some entries
    -inf; or None."""
    r = c.r
    if r.random() >= 0.25:
        return None
    # (an empty dimension where the problem has none: such a mask is never read)
    shapes = [(Tq, Tk), (B, 1, Tq, Tk), (B, H, Tq, Tk), (H, Tq, Tk), (B, 1, 1, Tk), (B, 1, Tq, 1)]
    shape = shapes[int(r.integers(0, len(shapes)))]
    mask = c.normal(shape)
    if c.float64 and r.random() < 0.5:
        # Hugging Face's masked value: finite, so a row of it attends
        # uniformly; the CLI keeps it finite though float32 cannot hold it.
        mask[r.random(shape) < 0.2] = np.finfo(np.float64).min
    else:
        mask[r.random(shape) < 0.2] = -np.inf
    if not c.float64:
        mask = mask.astype(np.float16 if r.random() < 0.3 else np.float32)
    c.args += ["--mask", c.save("mask.npy", mask)]
    return np.broadcast_to(mask.astype(np.float64), (B, H, Tq, Tk))


def output_of(o, where, h):
    """Batch entry's rows of head h in the CLI's output."""
    if where[0] == "packed":
        return o[where[1]:where[2], h, :]
    _, b, layout = where
    return o[b, :, h, :] if layout == "bshd" else o[b, h]


# O in f32, or rounded to f16 (a float16 file) or bf16 (float32 values with their
# low 16 bits 0): one rounding, relative, on top of each case's tolerance.
OUT_ROUNDING = {"f32": 0.0, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}


def draw_out_dtype(c):
    return str(c.r.choice(["f32", "f32", "f32", "f16", "bf16"]))


def check_out_file(o, out_dtype):
    """None if the output file `o` (as loaded) is what --out-dtype asks for, else why not."""
    if o.dtype != (np.float16 if out_dtype == "f16" else np.float32):
        return "the output file is %s" % o.dtype
    if out_dtype == "bf16" and (o.view(np.uint32) & 0xFFFF).any():
        return "output values that bf16 does not hold"
    return None


def run_cli(c, cli, command, out_dtype):
    """Runs the CLI; (output, None) or (None, why not)."""
    run = subprocess.run([cli] + command, capture_output=True, text=True)
    if run.returncode != 0 or run.stderr:
        return None, "exit status %d, stderr: %s" % (run.returncode, run.stderr.strip()[:400])
    o = np.load(os.path.join(c.folder, "out.npy"))
    why = check_out_file(o, out_dtype)
    return (None, why) if why else (o.astype(np.float64), None)


def run_mha_case(c, cli, seed):
    """`vkattn mha`: the layer with PyTorch nn.Linear weights and the variants a
    layer takes (self-attention: q_offset 0, every key exists)."""
    r = c.r
    B, T, H = int(r.integers(1, 3)), int(r.integers(1, 41)), int(r.integers(1, 5))
    if r.random() < 0.05:  # X with no rows, as nn.Linear takes it: a Y with none
        B, T = (0, T) if r.random() < 0.5 else (B, 0)
    Dh, C = int(r.choice([1, 3, 8, 16, 32])), int(r.choice([4, 16, 33]))
    C_out = C if r.random() < 0.7 else int(r.choice([5, 24]))
    opt = draw_options(c, H, Dh, layer=True)
    mask = draw_mask(c, B, H, T, T)
    x = c.normal((B, T, C))
    w_qkv, w_out = c.normal((3 * H * Dh, C), C ** -0.5), c.normal((C_out, H * Dh), (H * Dh) ** -0.5)
    b_qkv = c.normal(3 * H * Dh) if r.random() < 0.5 else None
    b_out = c.normal(C_out) if r.random() < 0.5 else None
    two_d = B == 1 and r.random() < 0.3
    command = ["mha", "-x", c.save("x.npy", x[0] if two_d else x), "--w-qkv", c.save("w_qkv.npy", w_qkv),
               "--w-out", c.save("w_out.npy", w_out), "--heads", str(H), "-o", os.path.join(c.folder, "out.npy")]
    if b_qkv is not None:
        command += ["--b-qkv", c.save("b_qkv.npy", b_qkv)]
    if b_out is not None:
        command += ["--b-out", c.save("b_out.npy", b_out)]
    command += c.args + ["--path", str(r.choice(["auto", "fused", "unfused"]))]
    out_dtype = draw_out_dtype(c)
    if out_dtype != "f32":
        command += ["--out-dtype", out_dtype]
    compute = str(r.choice(["f32", "f32", "f16", "bf16"]))
    if compute != "f32":
        command += ["--compute-dtype", compute]
    label = "seed %d: mha B=%d T=%d H=%d Dh=%d C=%d C_out=%d: %s" % (seed, B, T, H, Dh, C, C_out,
                                                                   " ".join([cli] + command))
    got, why = run_cli(c, cli, command, out_dtype)
    if why:
        return False, label + "\n    " + why
    qkv = x.astype(np.float64) @ w_qkv.T.astype(np.float64)
    if b_qkv is not None:
        qkv = qkv + b_qkv
    if compute != "f32":  # q, k, v kept in the compute dtype
        qkv = ROUND[compute](qkv).astype(np.float64)
    heads = lambda part: qkv[..., part * H * Dh:(part + 1) * H * Dh].reshape(B, T, H, Dh).transpose(0, 2, 1, 3)
    q, k, v = heads(0), heads(1), heads(2)
    o = np.zeros((B, H, T, Dh))
    for b in range(B):
        for h in range(H):
            o[b, h] = attend_head(q[b, h], k[b, h], v[b, h], opt, 0, T, h, None if mask is None else mask[b, h])
    o = o.transpose(0, 2, 1, 3).reshape(B, T, H * Dh)
    if compute != "f32":  # and the heads' output
        o = ROUND[compute](o).astype(np.float64)
    want = o @ w_out.T.astype(np.float64)
    if b_out is not None:
        want = want + b_out
    if two_d:
        want = want[0]
    if got.shape != want.shape:
        return False, "%s\n    shape %s, expected %s" % (label, got.shape, want.shape)
    if want.size == 0:
        return True, 0.0
    worst = float((np.abs(got - want) - OUT_ROUNDING[out_dtype] * np.abs(want)).max())
    tolerance = 1e-4 * (1 + float(np.abs(want).max()))
    if compute != "f32":
        tolerance += compute_tolerance(compute, q, k, v, opt["scale"], w_out)
    if not np.isfinite(got).all() or worst > tolerance:
        return False, "%s\n    largest error %.3g, tolerance %.3g" % (label, worst, tolerance)
    return True, worst / tolerance


def compute_tolerance(compute, q, k, v, scale, w_out):
    """What a 16-bit --compute-dtype adds to the layer's tolerance. The CLI
    rounds q, k, v and o from f32, this oracle from float64, so a value near a
    rounding midpoint may land a spacing apart; and a fused kernel rounds P to
    16 bits for P V (half a spacing). A q or k a spacing apart moves a score by
    up to scale * spacing * |q| |k| (twice: either side), and so the weights by
    that much relatively. Errors of random sign on values up to max |v|, which
    a row of W_out sums as its 2-norm does; four times that."""
    spacing = 2.0 ** -10 if compute == "f16" else 2.0 ** -7
    row_norm = float(np.sqrt((w_out.astype(np.float64) ** 2).sum(axis=1)).max())
    largest = lambda t: float(np.abs(t).max()) if t.size else 0.0
    scores = 2.0 * scale * spacing * largest(q) * largest(k)
    return 4.0 * (1.5 * spacing + scores) * largest(v) * row_norm


# Added to the tolerance of the coopmat kernels, times the largest |V|: they
# round P to f16 before P V (half an ulp of f16 at 1 is 4.9e-4), or with bf16
# inputs on bf16 matrices (the tuning coopmat.bf16=2, passed in VKATTN_TUNE)
# to bf16 (8 significant bits: 2^-8 = 3.9e-3); twice over.
COOPMAT_P_ROUNDING = 1e-3
COOPMAT_BF16_P_ROUNDING = 8e-3


def bf16_matrices(kernel):
    """Whether VKATTN_TUNE puts `kernel`'s bf16 inputs on bf16 matrices."""
    base = kernel[:-len("_emulated")] if kernel.endswith("_emulated") else kernel
    return base == "coopmat" and "%s.bf16=2" % kernel in os.environ.get("VKATTN_TUNE", "")


def run_case(cli, seed, folder, kernels, big, backend):
    """One seed's case; a kernel drawn from `kernels` (an independent stream:
    the case is the seed's without it) is forced with --kernel; with `big`,
    sequences of up to 64, 160 or 400 tokens, head sizes of any size up to
    256 and wider option values (from that stream too: the later draws of the
    case then differ). Returns the kernel and (True, error / tolerance),
    (False, what failed) or (None, the kernel's refusal: its one line) where
    the forced kernel cannot run the case. `backend`: the CLI's --backend
    (None: its default)."""
    c = Case(seed, folder)
    c.args += ["--backend", backend] if backend else []
    r = c.r
    kind = str(r.choice(["bhsd", "bshd", "packed", "paged", "paged_packed_q", "mha"]))
    if kind == "mha":
        return ("auto",) + run_mha_case(c, cli, seed)
    picker = np.random.default_rng([seed, 1])
    kernel = str(picker.choice(kernels))
    coopmat = kernel.startswith("coopmat")
    B, Hkv = int(r.integers(1, 4)), int(r.integers(1, 3))
    H = Hkv * int(r.choice([1, 2, 4]))
    wide = r.random() < 0.15  # DeepSeek's MLA sizes and D = 256, few tokens
    D = int(r.choice([576, 256] if wide else [1, 5, 8, 32, 64, 80, 128]))
    Dv = D if r.random() < 0.6 else int(r.choice([512, 64] if wide else [3, 16, 64]))
    most = 3 if wide else 40
    if big and not wide:
        most = int(picker.choice([64, 160, 400]))
        D = int(picker.integers(1, 257))
        Dv = D if picker.random() < 0.5 else int(picker.integers(1, 257))
    magnitude = float(r.choice([1.0, 1.0, 3.0]))
    dtype = str(r.choice(["f32", "f32", "f16", "bf16"]))
    if coopmat and dtype == "f32":  # they take 16-bit inputs only
        dtype = str(picker.choice(["f16", "bf16"]))
    c.args += ["--dtype", dtype]
    c.float64 = r.random() < 0.25  # float64 files: Q, K, V and the mask
    opt = draw_options(c, H, D, far=picker if big else None)
    rnd = ROUND[dtype]
    if kind in ("bhsd", "bshd"):
        qkv, Tq, Tk = dense(c, B, H, Hkv, D, Dv, most, magnitude, rnd, opt, kind)
    elif kind == "packed":
        qkv, Tq, Tk = packed(c, B, H, Hkv, D, Dv, most, magnitude, rnd, opt)
    else:
        qkv, Tq, Tk = paged(c, B, H, Hkv, D, Dv, most, magnitude, rnd, opt,
                            [1, 4] if wide else [1, 2, 3, 16, 256], kind == "paged_packed_q")
    mask = draw_mask(c, B, H, Tq, Tk)
    # The unfused path takes dense inputs only (DESIGN.md: packed and paged are fused).
    path = str(r.choice(["auto", "fused", "unfused"] if kind in ("bhsd", "bshd") else ["auto", "fused"]))
    c.args += ["--path", path] if kernel == "auto" else ["--kernel", kernel]  # which implies fused
    out_dtype = draw_out_dtype(c)
    if out_dtype != "f32":
        c.args += ["--out-dtype", out_dtype]
    paths = [c.save(n + ".npy", x) for n, x in zip("qkv", qkv)]
    out = os.path.join(folder, "o.npy")
    command = [cli, "attention", "-q", paths[0], "-k", paths[1], "-v", paths[2], "-o", out] + c.args
    run = subprocess.run(command, capture_output=True, text=True)
    label = "seed %d: %s B=%d H=%d Hkv=%d D=%d Dv=%d: %s" % (seed, kind, B, H, Hkv, D, Dv, " ".join(command))
    if kernel != "auto" and run.returncode == 1 and "fused path: " in run.stderr and \
            run.stderr.count("\n") == 1:
        return kernel, None, run.stderr.strip()
    if run.returncode != 0 or run.stderr:
        return kernel, False, "%s\n    exit status %d, stderr: %s" % (label, run.returncode, run.stderr.strip()[:400])
    o = np.load(out)
    why = check_out_file(o, out_dtype)
    if why:
        return kernel, False, "%s\n    %s" % (label, why)
    o = o.astype(np.float64)
    group, worst = H // Hkv, 0.0
    for b, (q_b, k_b, v_b, q_offset, keys, where) in enumerate(c.entries):
        for h in range(H):
            mask2 = None if mask is None else mask[b, h, :q_b.shape[1], :k_b.shape[1]]
            want = attend_head(q_b[h].astype(np.float64), k_b[h // group].astype(np.float64),
                               v_b[h // group].astype(np.float64), opt, q_offset, keys, h, mask2)
            got = output_of(o, where, h)
            if got.shape != want.shape:
                return kernel, False, "%s\n    entry %d head %d: shape %s, expected %s" % (label, b, h, got.shape, want.shape)
            if want.size:
                worst = max(worst, float((np.abs(got - want) - OUT_ROUNDING[out_dtype] * np.abs(want)).max()))
    # f32 accumulation of scores up to |s| ~ magnitude^2 * D * scale; soft-capping bounds them.
    tolerance = 1e-4 * (1 + magnitude ** 2 * (1 if opt["softcap"] else 10))
    tolerance *= 1 if opt["scale"] <= 1 / np.sqrt(D) + 1e-9 else 4
    if coopmat:
        rounding = COOPMAT_BF16_P_ROUNDING if dtype == "bf16" and bf16_matrices(kernel) \
            else COOPMAT_P_ROUNDING
        tolerance += rounding * float(np.abs(qkv[2]).max(initial=0))
    if not np.isfinite(o).all() or worst > tolerance:
        return kernel, False, "%s\n    largest error %.3g, tolerance %.3g" % (label, worst, tolerance)
    return kernel, True, worst / tolerance


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cli", required=True, help="the vkattn executable")
    parser.add_argument("--seeds", default="0:60", help="A:B, the seeds A..B-1 (default 0:60)")
    parser.add_argument("--big", action="store_true",
                        help="longer sequences (up to 400) and head sizes of any size up to 256")
    parser.add_argument("--kernels", default="auto",
                        help="comma-separated fused kernels (--kernel names); each case forces one "
                             "(auto: none), drawn per seed; the layer's cases take AUTO's. A "
                             "kernel that refuses every case it is drawn for fails the run")
    parser.add_argument("--backend", choices=["vulkan", "cpu"],
                        help="the CLI's --backend (default: its own choice); cpu checks the CPU "
                             "reference backend itself against the oracle")
    parser.add_argument("--may-refuse", default="",
                        help="comma-separated kernels of --kernels that may refuse every case "
                             "(the coopmat kernel where the device has no matrix units)")
    args = parser.parse_args()
    first, end = (int(x) for x in args.seeds.split(":"))
    kernels = args.kernels.split(",")
    if args.backend == "cpu" and kernels != ["auto"]:
        parser.error("--backend cpu runs no fused kernel: --kernels must be auto")
    failures, worst, refused, ran = 0, 0.0, {}, {k: 0 for k in kernels}
    env_note = " ".join("%s=%s" % (k, v) for k, v in sorted(os.environ.items())
                        if k.startswith(("VKATTN_", "LP_")))
    for seed in range(first, end):
        folder = tempfile.mkdtemp(prefix="vkattn-numpy-")
        try:
            kernel, ok, detail = run_case(args.cli, seed, folder, kernels, args.big, args.backend)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if ok is None:  # the forced kernel's own refusal, by its words (numbers as N)
            reason = kernel + ": " + re.sub(r"\d+", "N", detail.split("fused path: ", 1)[1])[:70]
            refused[reason] = refused.get(reason, 0) + 1
            continue
        ran[kernel] = ran.get(kernel, 0) + 1
        if ok:
            worst = max(worst, detail)
        else:
            failures += 1
            print("FAILED " + detail, flush=True)
    for reason, count in sorted(refused.items()):
        print("refused %d: %s..." % (count, reason))
    may_refuse = set(filter(None, args.may_refuse.split(",")))
    for kernel in sorted(set(kernels) - {"auto"} - may_refuse):
        if not ran[kernel]:
            failures += 1
            print("FAILED kernel %s ran no case (drawn %d times, refused by it every time)"
                  % (kernel, sum(n for r, n in refused.items() if r.startswith(kernel + ": "))))
    forced = ", ".join("%s %d" % (k, n) for k, n in sorted(ran.items()) if k != "auto")
    print("cli_vs_numpy: %d cases (seeds %d..%d%s%s), %d refused by the kernel forced, %d failed; "
          "largest error %.3f of its tolerance"
          % (end - first, first, end - 1, ", " + env_note if env_note else "",
             (", kernels " + args.kernels + " (ran: " + forced + ")" if args.kernels != "auto" else "") +
             (", big" if args.big else "") + (", backend " + args.backend if args.backend else ""),
             sum(refused.values()), failures, worst))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
