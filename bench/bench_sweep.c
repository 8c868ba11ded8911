/* vkattn-bench: the sweeps. --quick (the default) is sized for lavapipe, a CPU
 * Vulkan driver, to finish in under a minute with a cold shader cache; --full
 * adds long sequences, decode, GQA, f16, bf16, odd head sizes and each
 * attention variant beside the plain case it extends; --gpu replaces
 * both with the GPU targets of issue 10 (what scripts/gpu-check.sh runs and
 * compares with PyTorch's SDPA). The options --op, --path, --dtype and --shape
 * then filter and change the list. */
#include "bench.h"

#include <string.h>

#define F32 VKATTN_DTYPE_F32
#define F16 VKATTN_DTYPE_F16
#define BF16 VKATTN_DTYPE_BF16

/* attention: B, H, Hkv, Tq, Tk, D, Dv, causal, dtype, kv_splits */
#define ATT(path_, b, h, hkv, tq, tk, d, dv, causal_, dt, splits)                              \
    {.op = OP_ATTENTION, .path = PATH_##path_, .B = b, .H = h, .Hkv = hkv, .Tq = tq, .Tk = tk, \
     .D = d, .Dv = dv, .causal = causal_, .dtype = dt, .kv_splits = splits}
/* attention by a forced fused variant (vkattn_fused_variant) */
#define ATT_VARIANT(variant_, b, h, hkv, tq, tk, d, dv, causal_, dt)                          \
    {.op = OP_ATTENTION, .path = PATH_FUSED, .variant = VKATTN_FUSED_##variant_, .B = b,      \
     .H = h, .Hkv = hkv, .Tq = tq, .Tk = tk, .D = d, .Dv = dv, .causal = causal_, .dtype = dt}
/* attention into a 16-bit O (out_: F16 or BF16), as SDPA writes its output */
#define ATT_OUT(out_, path_, b, h, hkv, tq, tk, d, dv, causal_, dt)                            \
    {.op = OP_ATTENTION, .path = PATH_##path_, .B = b, .H = h, .Hkv = hkv, .Tq = tq, .Tk = tk, \
     .D = d, .Dv = dv, .causal = causal_, .dtype = dt, .out_dtype = out_}
/* attention with a variant (bench_variants.c): window left size, block size or K/V dtype */
#define ATT_VAR(kind, param_, path_, b, h, hkv, tq, tk, d, dv, causal_, dt)                    \
    {.op = OP_ATTENTION, .path = PATH_##path_, .att_variant = AV_##kind, .param = param_,      \
     .B = b, .H = h, .Hkv = hkv, .Tq = tq, .Tk = tk, .D = d, .Dv = dv, .causal = causal_,      \
     .dtype = dt}
/* mha: B, H, T, Dh (C = H * Dh) */
#define MHA(path_, b, h, t, dh, causal_, dt)                                                    \
    {.op = OP_MHA, .path = PATH_##path_, .B = b, .H = h, .Hkv = h, .Tq = t, .Tk = t, .D = dh,  \
     .Dv = dh, .causal = causal_, .dtype = dt}
/* mha keeping q, k, v and the heads' output in a 16-bit compute dtype */
#define MHA_COMPUTE(compute_, path_, b, h, t, dh, causal_, dt)                                  \
    {.op = OP_MHA, .path = PATH_##path_, .B = b, .H = h, .Hkv = h, .Tq = t, .Tk = t, .D = dh,  \
     .Dv = dh, .causal = causal_, .dtype = dt, .compute_dtype = compute_}
/* matmul: batch, M, N, K */
#define MATMUL(variant_, b, m, n, k, dt)                                                      \
    {.op = OP_MATMUL, .path = PATH_NONE, .variant = VKATTN_MATMUL_##variant_, .B = b, .H = 1, \
     .Hkv = 1, .Tq = m, .Tk = n, .D = k, .dtype = dt}
/* softmax: B, H, Tq, Tk */
#define SOFTMAX(variant_, b, h, tq, tk, causal_)                                               \
    {.op = OP_SOFTMAX, .path = PATH_NONE, .variant = VKATTN_SOFTMAX_##variant_, .B = b,       \
     .H = h, .Hkv = h, .Tq = tq, .Tk = tk, .causal = causal_, .dtype = F32}
/* head transpose: B, T, H, D */
#define TRANSPOSE(b, t, h, d)                                                                 \
    {.op = OP_TRANSPOSE, .path = PATH_NONE, .B = b, .H = h, .Hkv = h, .Tq = t, .D = d,       \
     .Dv = d, .dtype = F32}

/* Times on lavapipe (2 cores) for scale: matmul 1024^3 ~60 ms auto (texel),
 * ~1.2 s naive, ~0.9 s tiled (so tiled runs at 512^3 here); attention T=2048
 * causal ~0.18 s fused, ~1.1 s unfused. Slow cases get fewer timed runs
 * (bench_time's budget). */
static const bench_case quick[] = {
    MATMUL(AUTO, 1, 1024, 1024, 1024, F32),
    MATMUL(NAIVE, 1, 1024, 1024, 1024, F32),
    MATMUL(TILED, 1, 512, 512, 512, F32),
    MATMUL(AUTO, 8, 256, 64, 64, F32),
    MATMUL(AUTO, 1, 999, 1001, 99, F16),
    MATMUL(AUTO, 1, 999, 1001, 99, BF16),      /* the texel kernel reading its bits */
    SOFTMAX(AUTO, 8, 1, 1024, 1024, false),
    SOFTMAX(AUTO, 8, 1, 1024, 1024, true),
    SOFTMAX(SHARED, 8, 1, 1024, 1024, false),
    TRANSPOSE(4, 1024, 8, 64),
    ATT(FUSED, 1, 8, 8, 2048, 2048, 64, 64, true, F32, 0),
    ATT(UNFUSED, 1, 8, 8, 2048, 2048, 64, 64, true, F32, 0),
    ATT(REFERENCE, 1, 8, 8, 2048, 2048, 64, 64, true, F32, 0),
    ATT(FUSED, 1, 8, 8, 1, 4096, 128, 128, false, F32, 0),           /* decode */
    /* the same prefill with a sliding window, the same decode from a paged cache
     * and from a contiguous one in the paged cache's layout (BSHD) */
    ATT_VAR(WINDOW, 512, FUSED, 1, 8, 8, 2048, 2048, 64, 64, true, F32),
    ATT_VAR(PAGED, 16, FUSED, 1, 8, 8, 1, 4096, 128, 128, false, F32),
    ATT_VAR(TOKEN_MAJOR, 0, FUSED, 1, 8, 8, 1, 4096, 128, 128, false, F32),
    MHA(AUTO, 1, 4, 256, 64, true, F32),
};

static const bench_case full[] = {
    MATMUL(AUTO, 1, 2048, 2048, 2048, F32),
    MATMUL(TILED, 1, 1024, 1024, 1024, F32),
    MATMUL(AUTO, 1, 1024, 1024, 1024, F16),
    MATMUL(AUTO, 32, 512, 512, 64, F32),
    SOFTMAX(AUTO, 4, 1, 2048, 2048, true),
    TRANSPOSE(2, 2048, 32, 128),
    /* causal prefill vs sequence length */
    ATT(FUSED, 1, 8, 8, 1024, 1024, 64, 64, true, F32, 0),
    ATT(FUSED, 1, 8, 8, 4096, 4096, 64, 64, true, F32, 0),
    ATT(FUSED, 1, 8, 8, 8192, 8192, 64, 64, true, F32, 0),
    ATT(UNFUSED, 1, 8, 8, 1024, 1024, 64, 64, true, F32, 0),
    ATT(UNFUSED, 1, 8, 8, 4096, 4096, 64, 64, true, F32, 0),
    ATT(REFERENCE, 1, 8, 8, 1024, 1024, 64, 64, true, F32, 0),
    ATT(FUSED, 1, 8, 8, 2048, 2048, 64, 64, false, F32, 0),
    ATT(UNFUSED, 1, 8, 8, 2048, 2048, 64, 64, false, F32, 0),
    /* decode against a KV cache (GQA 32/8), keys split (flash-decoding) or not */
    ATT(FUSED, 1, 32, 8, 1, 4096, 128, 128, false, F32, 0),
    ATT(FUSED, 1, 32, 8, 1, 4096, 128, 128, false, F32, 1),
    ATT(FUSED, 1, 32, 8, 1, 8192, 128, 128, false, F32, 0),
    ATT(FUSED, 1, 32, 8, 1, 8192, 128, 128, false, F32, 1),
    ATT(UNFUSED, 1, 32, 8, 1, 8192, 128, 128, false, F32, 0),
    /* GQA prefill */
    ATT(FUSED, 1, 32, 8, 1024, 1024, 128, 128, true, F32, 0),
    ATT(UNFUSED, 1, 32, 8, 1024, 1024, 128, 128, true, F32, 0),
    /* f16 inputs */
    ATT(FUSED, 1, 8, 8, 2048, 2048, 64, 64, true, F16, 0),
    ATT(UNFUSED, 1, 8, 8, 2048, 2048, 64, 64, true, F16, 0),
    ATT_OUT(F16, FUSED, 1, 8, 8, 2048, 2048, 64, 64, true, F16),  /* and into f16 O */
    /* bf16 inputs: no texel format reads them, so on CPU devices the texel
     * kernels read views of their bits and widen them; and an f32 query against
     * a bf16 KV cache (each input's view chosen on its own) */
    ATT(FUSED, 1, 8, 8, 1024, 1024, 64, 64, true, BF16, 0),
    ATT(UNFUSED, 1, 8, 8, 1024, 1024, 64, 64, true, BF16, 0),
    ATT(FUSED, 1, 32, 8, 1, 4096, 128, 128, false, BF16, 0),
    ATT_VAR(KV_DTYPE, VKATTN_DTYPE_BF16, FUSED, 1, 32, 8, 1, 4096, 128, 128, false, F32),
    /* head sizes that are not powers of two */
    ATT(FUSED, 1, 8, 8, 1024, 1024, 80, 80, true, F32, 0),
    ATT(UNFUSED, 1, 8, 8, 1024, 1024, 80, 80, true, F32, 0),
    ATT(FUSED, 1, 8, 8, 1024, 1024, 96, 96, true, F32, 0),
    ATT(UNFUSED, 1, 8, 8, 1024, 1024, 96, 96, true, F32, 0),
    MHA(FUSED, 1, 8, 512, 64, true, F32),
    MHA(UNFUSED, 1, 8, 512, 64, true, F32),
    MHA_COMPUTE(F16, AUTO, 1, 8, 512, 64, true, F16),  /* f16 throughout */
    /* the variants (issue 11): each beside the plain case it extends */
    ATT_VAR(WINDOW, 512, FUSED, 1, 8, 8, 8192, 8192, 64, 64, true, F32),  /* vs T=8192 causal */
    ATT_VAR(PAGED, 16, FUSED, 1, 32, 8, 1, 8192, 128, 128, false, F32),   /* vs contiguous decode, */
    ATT_VAR(TOKEN_MAJOR, 0, FUSED, 1, 32, 8, 1, 8192, 128, 128, false, F32), /* in its layout */
    ATT_VAR(VARLEN, 0, FUSED, 8, 8, 8, 4096, 4096, 64, 64, true, F32),    /* lengths 1..4096 */
    ATT(FUSED, 8, 8, 8, 4096, 4096, 64, 64, true, F32, 0),                /* the same, padded */
    ATT_VAR(SOFTCAP, 0, FUSED, 1, 8, 8, 2048, 2048, 64, 64, true, F32),   /* vs T=2048 causal */
    ATT_VAR(SINKS, 0, FUSED, 1, 8, 8, 2048, 2048, 64, 64, true, F32),
    ATT_VAR(ALIBI, 0, FUSED, 1, 8, 8, 2048, 2048, 64, 64, true, F32),
    ATT_VAR(MASK, 0, FUSED, 1, 8, 8, 2048, 2048, 64, 64, true, F32),
    ATT_VAR(WINDOW, 512, FUSED, 1, 8, 8, 2048, 2048, 64, 64, true, F32),
};

/* The GPU targets: attention by the path a user gets (auto), one row per
 * (shape, dtype, causal) so that bench/compare_sdpa.py pairs each with SDPA;
 * then the forced kernels and the matmuls (which the SDPA table leaves out).
 * A new dtype is one more row per shape. Verification samples rows
 * (bench_row_blocks): on one core about 4 s of CPU reference per 4x16x4096
 * case and 13-25 s per matmul (the H200's run took 104 s in all, 60 of them
 * the three matmuls'), divided among the host's cores since
 * (VKATTN_CPU_THREADS). */
static const bench_case gpu[] = {
    /* causal prefill, B=4 H=16 T=4096: f16, and f32 (the scalar tiled kernel) */
    ATT(AUTO, 4, 16, 16, 4096, 4096, 128, 128, true, F16, 0),
    ATT(AUTO, 4, 16, 16, 4096, 4096, 64, 64, true, F16, 0),
    ATT(AUTO, 4, 16, 16, 4096, 4096, 128, 128, true, F32, 0),
    ATT(AUTO, 4, 16, 16, 4096, 4096, 64, 64, true, F32, 0),
    ATT(AUTO, 4, 16, 16, 4096, 4096, 128, 128, true, BF16, 0),
    /* f16 in and out, as SDPA runs: the narrowing pass's cost over f32 O */
    ATT_OUT(F16, AUTO, 4, 16, 16, 4096, 4096, 128, 128, true, F16),
    /* decode against a KV cache, GQA 32/8, the keys split as the library chooses
     * (the decode kernel); the tiled kernel AUTO took before it; from a paged cache */
    ATT(AUTO, 1, 32, 8, 1, 8192, 128, 128, false, F16, 0),
    ATT_OUT(F16, AUTO, 1, 32, 8, 1, 8192, 128, 128, false, F16),
    ATT_VARIANT(TILED, 1, 32, 8, 1, 8192, 128, 128, false, F16),
    ATT_VAR(PAGED, 16, AUTO, 1, 32, 8, 1, 8192, 128, 128, false, F16),
    /* mid shapes */
    ATT(AUTO, 1, 8, 8, 2048, 2048, 64, 64, true, F32, 0),
    ATT(AUTO, 1, 8, 8, 2048, 2048, 64, 64, false, F32, 0),
    ATT(AUTO, 1, 8, 8, 2048, 2048, 64, 64, true, F16, 0),
    ATT(AUTO, 1, 8, 8, 2048, 2048, 64, 64, false, F16, 0),
    /* the matrix-unit kernel, forced (AUTO's choice where verified); a device without
     * VK_NV_cooperative_matrix reports these as not supported */
    ATT_VARIANT(COOPMAT, 4, 16, 16, 4096, 4096, 128, 128, true, F16),
    ATT_VARIANT(COOPMAT, 4, 16, 16, 4096, 4096, 64, 64, true, F16),
    /* bf16 through the same kernel (converted to f16 as staged): AUTO's bf16
     * row above takes it where verified (NVIDIA), this row anywhere */
    ATT_VARIANT(COOPMAT, 4, 16, 16, 4096, 4096, 128, 128, true, BF16),
    ATT_VARIANT(COOPMAT, 1, 32, 8, 1, 8192, 128, 128, false, F16),
    ATT_VARIANT(COOPMAT, 1, 8, 8, 2048, 2048, 64, 64, true, F16),
    /* the layer's projections: the scalar tiled matmul in f32 and f16, and the
     * coopmat matmul (AUTO's f16 choice where verified: NVIDIA), forced */
    MATMUL(TILED, 1, 4096, 4096, 4096, F32),
    MATMUL(TILED, 1, 4096, 4096, 4096, F16),
    MATMUL(COOPMAT, 1, 4096, 4096, 4096, F16),
    /* the layer (C = 1024: 16 heads of 64, T = 1024, causal) in f32 and in f16,
     * whose projections AUTO gives the coopmat matmul where that is the default
     * (NVIDIA since 2026-11-27): not in SDPA's table, in vkattn.txt. Then in
     * f16 throughout, as a PyTorch f16 module runs: q, k, v and the heads'
     * output kept in f16, so that attention and the output projection take the
     * 16-bit kernels too (the fourth H200 check: 161 us of the f16 layer's
     * 460 in the f32 tiled attention kernel, 192 in the f32 output projection) */
    MHA(AUTO, 1, 16, 1024, 64, true, F32),
    MHA(AUTO, 1, 16, 1024, 64, true, F16),
    MHA_COMPUTE(F16, AUTO, 1, 16, 1024, 64, true, F16),
};

static bool same_case(const bench_case *a, const bench_case *b)
{
    return a->op == b->op && a->path == b->path && a->variant == b->variant &&
           a->kv_splits == b->kv_splits && a->B == b->B && a->H == b->H && a->Hkv == b->Hkv &&
           a->Tq == b->Tq && a->Tk == b->Tk && a->D == b->D && a->Dv == b->Dv &&
           a->causal == b->causal && a->has_q_offset == b->has_q_offset &&
           a->q_offset == b->q_offset && a->dtype == b->dtype && a->out_dtype == b->out_dtype &&
           a->compute_dtype == b->compute_dtype &&
           a->att_variant == b->att_variant && a->param == b->param;
}

/* Appends c unless its op is filtered out or the list has it already. */
static void add(const bench_cli *cli, bench_case c, bench_case *out, int capacity, int *n)
{
    if (cli->op_mask && !(cli->op_mask & (1u << c.op)))
        return;
    bool has_path = c.op == OP_ATTENTION || c.op == OP_MHA;
    if (has_path && cli->path_given) {
        if (c.path == PATH_REFERENCE)
            return;
        c.path = cli->path;
    }
    if (c.path == PATH_UNFUSED || c.path == PATH_REFERENCE)
        c.kv_splits = 0; /* a fused-path setting */
    for (int i = 0; i < *n; i++)
        if (same_case(&out[i], &c))
            return;
    if (*n < capacity)
        out[(*n)++] = c;
}

static void add_table(const bench_cli *cli, const bench_case *table, size_t count, bench_case *out,
                      int capacity, int *n)
{
    for (size_t i = 0; i < count; i++) {
        bench_case c = table[i];
        if ((c.op == OP_ATTENTION && cli->shape_count) || (c.op == OP_MATMUL && cli->matmul_count))
            continue; /* replaced by the --shape or --matmul cases */
        if (cli->dtype_given)
            c.dtype = cli->dtype;
        add(cli, c, out, capacity, n);
    }
}

int bench_build_cases(const bench_cli *cli, bench_case *out, int capacity)
{
    int n = 0;
    if (cli->gpu) {
        add_table(cli, gpu, sizeof gpu / sizeof gpu[0], out, capacity, &n);
    } else {
        add_table(cli, quick, sizeof quick / sizeof quick[0], out, capacity, &n);
        if (cli->full)
            add_table(cli, full, sizeof full / sizeof full[0], out, capacity, &n);
    }
    for (int i = 0; i < cli->matmul_count; i++) {
        const int64_t *m = cli->matmuls[i];
        bench_case c = {
            .op = OP_MATMUL, .path = PATH_NONE, .variant = (int)cli->matmul_variant, .B = m[3],
            .H = 1, .Hkv = 1, .Tq = m[0], .Tk = m[1], .D = m[2],
            .dtype = cli->dtype_given ? cli->dtype : F32,
        };
        add(cli, c, out, capacity, &n);
    }
    for (int i = 0; i < cli->shape_count; i++) {
        const int64_t *s = cli->shapes[i];
        bench_case c = {
            .op = OP_ATTENTION, .B = s[0], .H = s[1], .Hkv = s[2], .Tq = s[3], .Tk = s[4],
            .D = s[5], .Dv = s[6], .causal = cli->causal, .has_q_offset = cli->has_q_offset,
            .q_offset = cli->q_offset, .dtype = cli->dtype_given ? cli->dtype : F32,
            .out_dtype = cli->out_dtype,
        };
        c.variant = (int)cli->fused_variant;
        c.kv_splits = cli->kv_splits;
        int withs = cli->with_count ? cli->with_count : 1;
        for (int w = 0; w < withs; w++) {
            c.att_variant = cli->with_count ? cli->with[w] : AV_NONE;
            c.param = cli->with_count ? cli->with_param[w] : 0;
            c.path = PATH_FUSED;
            add(cli, c, out, capacity, &n);
            /* the fused kernel's settings, or a variant only the fused path runs
             * (vkattn_attention refuses packed and paged sequences unfused) */
            if (cli->fused_variant || cli->kv_splits || c.att_variant == AV_VARLEN ||
                c.att_variant == AV_PAGED)
                continue; /* no unfused twin */
            c.path = PATH_UNFUSED;
            add(cli, c, out, capacity, &n); /* the same as the first under --path */
        }
    }
    return n;
}
