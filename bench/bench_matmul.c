/* vkattn-bench: matmul C (B, M, N) = A (B, M, K) @ W (K, N) with W shared by the
 * batch (a weight matrix); verified on blocks of rows of the flattened (B*M, K) A. */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct matmul_run {
    vkattn_matmul_desc desc;
    vkattn_tensor *a, *w, *c;
} matmul_run;

static vkattn_status record_matmul(vkattn_context *ctx, void *user)
{
    matmul_run *m = user;
    return vkattn_matmul(ctx, &m->desc, m->a, m->w, NULL, m->c);
}

static void abs_values(float *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = fabsf(src[i]);
}

/* Each block of rows of A times W on the CPU reference, and |A rows| @ |W|: the
 * error scale of each output. */
static void verify(const bench_env *env, const bench_case *c, const float *a, const float *w,
                   const float *out, bench_result *r)
{
    vkattn_context *cpu = env->cpu;
    int64_t M = c->Tq, N = c->Tk, K = c->D, rows = c->B * M;
    bench_tensors ts = {0};
    vkattn_tensor *wt, *wabs;
    bench_blocks blocks;
    bench_row_blocks(rows, &blocks);
    size_t most = (size_t)(3 * BENCH_BLOCK_ROWS);
    float *w_abs = malloc((size_t)(K * N) * sizeof *w_abs);
    float *a_rows = malloc(most * (size_t)K * sizeof *a_rows);
    float *want = malloc(most * (size_t)N * sizeof *want);
    float *scale = malloc(most * (size_t)N * sizeof *scale);
    vkattn_status s = VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    int64_t ws[2] = {K, N};
    if (!w_abs || !a_rows || !want || !scale)
        goto done;
    abs_values(w_abs, w, (size_t)(K * N));
    if ((s = bench_tensor(cpu, &ts, c->dtype, 2, ws, w, &wt)) ||
        (s = bench_tensor(cpu, &ts, c->dtype, 2, ws, w_abs, &wabs)))
        goto done;
    /* f32 accumulation is off by a few ulps of sum_k |a_mk w_kn|, growing like
     * sqrt(K) for rounding errors of random sign (as tests/test_matmul.c). The
     * reference tensors have the case's dtype, so f16 and bf16 inputs are
     * rounded alike on both sides and the bound needs no dtype allowance. */
    double rtol = 4 * 1.2e-7 * (2.0 + sqrt((double)K));
    for (int i = 0; i < blocks.n; i++) {
        int64_t n = blocks.count[i], as[2] = {n, K}, cs[2] = {n, N};
        const float *a_block = a + (size_t)(blocks.first[i] * K);
        bench_tensors block = {0};
        vkattn_tensor *at, *ct, *aabs, *cabs;
        vkattn_matmul_desc d = {0};
        abs_values(a_rows, a_block, (size_t)(n * K));
        if (!(s = bench_tensor(cpu, &block, c->dtype, 2, as, a_block, &at)) &&
            !(s = bench_tensor(cpu, &block, c->dtype, 2, as, a_rows, &aabs)) &&
            !(s = bench_tensor(cpu, &block, VKATTN_DTYPE_F32, 2, cs, NULL, &ct)) &&
            !(s = bench_tensor(cpu, &block, VKATTN_DTYPE_F32, 2, cs, NULL, &cabs)) &&
            !(s = vkattn_matmul(cpu, &d, at, wt, NULL, ct)) &&
            !(s = vkattn_matmul(cpu, &d, aabs, wabs, NULL, cabs)) &&
            !(s = vkattn_tensor_download(ct, want, VKATTN_DTYPE_F32)))
            s = vkattn_tensor_download(cabs, scale, VKATTN_DTYPE_F32);
        bench_tensors_release(&block);
        if (s)
            goto done;
        bench_compare(out + (size_t)(blocks.first[i] * N), want, (size_t)(n * N), 1e-30, rtol,
                      scale, r);
    }
    bench_blocks_note(&blocks, rows, r->note, sizeof r->note);
done:
    if (s)
        bench_fail(r, cpu, s, "reference");
    bench_tensors_release(&ts);
    free(w_abs);
    free(a_rows);
    free(want);
    free(scale);
}

void bench_run_matmul(const bench_env *env, const bench_case *c, bench_result *r)
{
    int64_t M = c->Tq, N = c->Tk, K = c->D;
    size_t an = (size_t)(c->B * M * K), wn = (size_t)(K * N), cn = (size_t)(c->B * M * N);
    double esize = bench_dtype_bytes(c->dtype);
    r->flops = 2.0 * (double)c->B * (double)M * (double)N * (double)K;
    r->bytes = (double)(an + wn) * esize + (double)cn * 4.0;

    bench_tensors ts = {0};
    matmul_run run = {.desc = {.variant = (vkattn_matmul_variant)c->variant}};
    float *a = malloc(an * sizeof *a), *w = malloc(wn * sizeof *w), *out = malloc(cn * sizeof *out);
    vkattn_status s = VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    if (!a || !w || !out)
        goto done;
    bench_fill(a, an, 1, -1.0f, 1.0f);
    bench_fill(w, wn, 2, -1.0f, 1.0f);
    int64_t as[3] = {c->B, M, K}, ws[2] = {K, N}, cs[3] = {c->B, M, N};
    if ((s = bench_tensor(env->main, &ts, c->dtype, 3, as, a, &run.a)) ||
        (s = bench_tensor(env->main, &ts, c->dtype, 2, ws, w, &run.w)) ||
        (s = bench_tensor(env->main, &ts, VKATTN_DTYPE_F32, 3, cs, NULL, &run.c)) ||
        (s = bench_time(env->main, &env->opt, record_matmul, &run, r)))
        goto done;
    if (env->opt.verify) {
        if ((s = vkattn_tensor_download(run.c, out, VKATTN_DTYPE_F32)))
            goto done;
        verify(env, c, a, w, out, r);
    }
done:
    if (s)
        bench_fail(r, env->main, s, "matmul");
    bench_tensors_release(&ts);
    free(a);
    free(w);
    free(out);
}
