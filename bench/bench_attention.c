/* vkattn-bench: attention by the fused, unfused or auto path of the main
 * context, or on the CPU reference backend; verified on blocks of query rows. */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct attention_run {
    vkattn_attention_desc desc;
    vkattn_tensor *q, *k, *v, *o;
} attention_run;

static vkattn_status record_attention(vkattn_context *ctx, void *user)
{
    attention_run *a = user;
    return vkattn_attention(ctx, &a->desc, a->q, a->k, a->v, a->o);
}

/* Copies rows [first, first + count) of every (batch, head) matrix of a
 * (B, H, T, width) array into a (B, H, count, width) one. */
static void copy_rows(const float *src, float *dst, int64_t bh, int64_t T, int64_t width,
                      int64_t first, int64_t count)
{
    for (int64_t m = 0; m < bh; m++)
        memcpy(dst + (size_t)(m * count * width), src + (size_t)((m * T + first) * width),
               (size_t)(count * width) * sizeof *src);
}

/* Recomputes blocks of query rows on the CPU reference, each as its own smaller
 * problem: those rows of Q against all of K and V, with q_offset moved by the
 * block's first row so the causal mask stays the same. */
static void verify(const bench_env *env, const bench_case *c, const vkattn_attention_choice *ran,
                   int64_t q_offset, const float *q, const float *k, const float *v,
                   const float *o, bench_result *r)
{
    vkattn_context *cpu = env->cpu;
    bench_tensors ts = {0};
    vkattn_tensor *kt, *vt;
    int64_t ks[4] = {c->B, c->Hkv, c->Tk, c->D}, vs[4] = {c->B, c->Hkv, c->Tk, c->Dv};
    int64_t bh = c->B * c->H;
    bench_blocks blocks;
    bench_row_blocks(c->Tq, &blocks);
    size_t most = (size_t)(bh * BENCH_BLOCK_ROWS * 3);
    float *q_rows = malloc(most * (size_t)c->D * sizeof *q_rows);
    float *got = malloc(most * (size_t)c->Dv * sizeof *got);
    float *want = malloc(most * (size_t)c->Dv * sizeof *want);
    vkattn_status s = VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    if (!q_rows || !got || !want)
        goto done;
    if ((s = bench_tensor(cpu, &ts, c->dtype, 4, ks, k, &kt)) ||
        (s = bench_tensor(cpu, &ts, c->dtype, 4, vs, v, &vt)))
        goto done;

    /* Inputs are uniform in [-1, 1], so max|q| = max|k| = 1. f32 scores are off
     * by a few ulps of sum_d |q_d k_d| * scale <= scale * D * max|q| * max|k|,
     * which moves each softmax weight by that much relatively; the output is a
     * weighted mean of V (|v| <= 1), so its error is bounded alike. 16 ulps of
     * slack as in tests/test_attention.c, plus 1e-5 for the sum's rounding.
     * f16 and bf16 inputs: the reference tensors have the case's dtype and get
     * the same f32 data, so they hold the same rounded values the GPU reads and
     * only the accumulation differs; the bound is the same (bf16's 8-bit
     * significand needs no allowance, and rounding never takes |x| past 1). */
    double scale = 1.0 / sqrt((double)c->D);
    double atol = 16 * 1.2e-7 * scale * (double)c->D * 1.0 * 1.0 + 1e-5;
    /* The coopmat kernels round P to f16 (or on bf16 matrices to bf16) before
     * P V: half an ulp at 1, times sum_j P_j |V_j| <= 1, twice over (as
     * tests/test_attention.c). */
    if (ran->weights_dtype != VKATTN_DTYPE_F32)
        atol += ran->weights_dtype == VKATTN_DTYPE_BF16 ? 4e-3 : 1e-3;
    /* A 16-bit O: one rounding of values |o| <= 1, half an ulp at 1. */
    if (c->out_dtype != VKATTN_DTYPE_F32)
        atol += c->out_dtype == VKATTN_DTYPE_F16 ? 0x1p-11 : 0x1p-8;

    for (int i = 0; i < blocks.n; i++) {
        int64_t first = blocks.first[i], n = blocks.count[i];
        int64_t qs[4] = {c->B, c->H, n, c->D}, os[4] = {c->B, c->H, n, c->Dv};
        copy_rows(q, q_rows, bh, c->Tq, c->D, first, n);
        copy_rows(o, got, bh, c->Tq, c->Dv, first, n);
        bench_tensors block = {0};
        vkattn_tensor *qt, *ot;
        vkattn_attention_desc d = {
            .causal = c->causal, .has_q_offset = true, .q_offset = q_offset + first,
        };
        if (!(s = bench_tensor(cpu, &block, c->dtype, 4, qs, q_rows, &qt)) &&
            !(s = bench_tensor(cpu, &block, VKATTN_DTYPE_F32, 4, os, NULL, &ot)) &&
            !(s = vkattn_attention(cpu, &d, qt, kt, vt, ot)))
            s = vkattn_tensor_download(ot, want, VKATTN_DTYPE_F32);
        bench_tensors_release(&block);
        if (s)
            goto done;
        bench_compare(got, want, (size_t)(bh * n * c->Dv), atol, 0.0, NULL, r);
    }
    size_t used = strlen(r->note); /* the kernel that ran, then the rows verified */
    bench_blocks_note(&blocks, c->Tq, r->note + used, sizeof r->note - used);
done:
    if (s)
        bench_fail(r, cpu, s, "reference");
    bench_tensors_release(&ts);
    free(q_rows);
    free(got);
    free(want);
}

void bench_run_attention(const bench_env *env, const bench_case *c, bench_result *r)
{
    int64_t q_offset = c->has_q_offset ? c->q_offset : c->Tk - c->Tq;
    size_t qn = (size_t)(c->B * c->H * c->Tq * c->D), kn = (size_t)(c->B * c->Hkv * c->Tk * c->D);
    size_t vn = (size_t)(c->B * c->Hkv * c->Tk * c->Dv), on = (size_t)(c->B * c->H * c->Tq * c->Dv);
    double esize = bench_dtype_bytes(c->dtype);
    /* Per unmasked score entry and query head: D multiply-adds for q.k and Dv for
     * p*v, two flops each; masked entries are not counted, so causal is ~half. */
    r->flops = 2.0 * (double)(c->D + c->Dv) * (double)(c->B * c->H) *
               bench_unmasked_pairs(c->Tq, c->Tk, c->causal, q_offset);
    /* Compulsory traffic: Q, K, V read once at their dtype, O written once at its. */
    r->bytes = (double)(qn + kn + vn) * esize + (double)on * bench_dtype_bytes(c->out_dtype);

    vkattn_context *ctx = c->path == PATH_REFERENCE ? env->cpu : env->main;
    bench_tensors ts = {0};
    attention_run run = {
        .desc = {
            .causal = c->causal, .has_q_offset = c->has_q_offset, .q_offset = c->q_offset,
            .path = bench_api_path(c->path), .kv_splits = c->kv_splits,
            .fused_variant = (vkattn_fused_variant)c->variant,
        },
    };
    float *q = malloc(qn * sizeof *q), *k = malloc(kn * sizeof *k), *v = malloc(vn * sizeof *v);
    float *o = malloc(on * sizeof *o);
    vkattn_status s = VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    if (!q || !k || !v || !o)
        goto done;
    bench_fill(q, qn, 11, -1.0f, 1.0f);
    bench_fill(k, kn, 12, -1.0f, 1.0f);
    bench_fill(v, vn, 13, -1.0f, 1.0f);
    int64_t qs[4] = {c->B, c->H, c->Tq, c->D}, ks[4] = {c->B, c->Hkv, c->Tk, c->D};
    int64_t vs[4] = {c->B, c->Hkv, c->Tk, c->Dv}, os[4] = {c->B, c->H, c->Tq, c->Dv};
    if ((s = bench_tensor(ctx, &ts, c->dtype, 4, qs, q, &run.q)) ||
        (s = bench_tensor(ctx, &ts, c->dtype, 4, ks, k, &run.k)) ||
        (s = bench_tensor(ctx, &ts, c->dtype, 4, vs, v, &run.v)) ||
        (s = bench_tensor(ctx, &ts, c->out_dtype, 4, os, NULL, &run.o)))
        goto done;
    if ((s = bench_time(ctx, &env->opt, record_attention, &run, r)))
        goto done;
    vkattn_attention_choice ran = {0};
    if (c->path != PATH_REFERENCE) {
        if ((s = vkattn_attention_choose(ctx, &run.desc, run.q, run.k, run.v, run.o, &ran)))
            goto done;
        bench_kernel_note(&ran, r->note, sizeof r->note);
    }
    if (c->path == PATH_REFERENCE) {
        snprintf(r->note, sizeof r->note, "is the reference");
    } else if (env->opt.verify) {
        if ((s = vkattn_tensor_download(run.o, o, VKATTN_DTYPE_F32)))
            goto done;
        verify(env, c, &ran, q_offset, q, k, v, o, r);
    }
done:
    if (s)
        bench_fail(r, ctx, s, "attention");
    bench_tensors_release(&ts);
    free(q);
    free(k);
    free(v);
    free(o);
}
