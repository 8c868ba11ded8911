/* vkattn-bench: causal-masked scaled softmax over X (B, H, Tq, Tk), as on a
 * score matrix; verified on blocks of query rows of the first, middle and last
 * (batch, head) matrix, or on everything when X is small. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

/* Scores of a D = 64 head: raw values in [-16, 16] scaled by 1/sqrt(64), so the
 * exponents span [-2, 2] and the outputs are far from uniform. */
#define SOFTMAX_SCALE 0.125f
#define SOFTMAX_RANGE 16.0f

typedef struct softmax_run {
    vkattn_softmax_desc desc;
    vkattn_tensor *x, *y;
} softmax_run;

static vkattn_status record_softmax(vkattn_context *ctx, void *user)
{
    softmax_run *s = user;
    return vkattn_softmax(ctx, &s->desc, s->x, s->y);
}

static void verify(const bench_env *env, const bench_case *c, int64_t q_offset, const float *x,
                   const float *y, bench_result *r)
{
    vkattn_context *cpu = env->cpu;
    int64_t matrices = c->B * c->H, Tk = c->Tk;
    bench_blocks blocks, per_matrix;
    int64_t matrix_of[3] = {0, matrices / 2, matrices - 1};
    bool everything = (double)matrices * (double)c->Tq * (double)Tk <= (double)(1 << 20);
    bench_row_blocks(c->Tq, &per_matrix);
    blocks = per_matrix;
    if (everything) { /* all rows of all matrices as one block */
        blocks = (bench_blocks){.first = {0}, .count = {matrices * c->Tq}, .n = 1};
    } else if (blocks.n == 1) { /* few rows: all of them, in three matrices */
        for (int i = 1; i < 3; i++)
            blocks.first[i] = blocks.first[0], blocks.count[i] = blocks.count[0];
        blocks.n = 3;
    }
    size_t most = (size_t)(everything ? matrices * c->Tq : 3 * BENCH_BLOCK_ROWS) * (size_t)Tk;
    float *want = malloc(most * sizeof *want);
    vkattn_status s = want ? VKATTN_OK : VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    for (int i = 0; i < blocks.n && !s; i++) {
        int64_t n = blocks.count[i];
        size_t at = (size_t)((matrix_of[i] * c->Tq + blocks.first[i]) * Tk);
        bench_tensors block = {0};
        vkattn_tensor *xt, *yt;
        /* A block alone keeps its rows' mask through the offset moved by its
         * first row; the whole tensor keeps the case's offset. */
        int64_t xs[4] = {everything ? c->B : 1, everything ? c->H : 1, everything ? c->Tq : n, Tk};
        vkattn_softmax_desc d = {
            .scale = SOFTMAX_SCALE, .causal = c->causal, .has_q_offset = true,
            .q_offset = everything ? q_offset : q_offset + blocks.first[i],
        };
        if (!(s = bench_tensor(cpu, &block, c->dtype, 4, xs, x + at, &xt)) &&
            !(s = bench_tensor(cpu, &block, VKATTN_DTYPE_F32, 4, xs, NULL, &yt)) &&
            !(s = vkattn_softmax(cpu, &d, xt, yt)) &&
            !(s = vkattn_tensor_download(yt, want, VKATTN_DTYPE_F32)))
            /* Outputs are probabilities <= 1: f32 exp and the row sum are each off
             * by a few ulps relatively, so 1e-5 (~80 ulps of 1.0) is a loose but
             * meaningful absolute bound. */
            bench_compare(y + at, want, (size_t)(n * Tk), 1e-5, 0.0, NULL, r);
        bench_tensors_release(&block);
    }
    if (s) {
        bench_fail(r, cpu, s, "reference");
    } else if (everything) {
        snprintf(r->note, sizeof r->note, "all rows");
    } else {
        bench_blocks_note(&per_matrix, c->Tq, r->note, sizeof r->note);
        size_t len = strlen(r->note);
        snprintf(r->note + len, sizeof r->note - len, ", 3 matrices");
    }
    free(want);
}

void bench_run_softmax(const bench_env *env, const bench_case *c, bench_result *r)
{
    size_t n = (size_t)(c->B * c->H * c->Tq * c->Tk);
    int64_t q_offset = c->has_q_offset ? c->q_offset : c->Tk - c->Tq;
    double esize = bench_dtype_bytes(c->dtype);
    /* A nominal 5 flops an entry (max, subtract, scale, exp, divide); the op is
     * bound by memory traffic, so its GB/s is the figure to look at. */
    r->flops = 5.0 * (double)n;
    r->flops_nominal = true;
    r->bytes = (double)n * esize + (double)n * 4.0;

    bench_tensors ts = {0};
    softmax_run run = {
        .desc = {
            .scale = SOFTMAX_SCALE, .causal = c->causal, .has_q_offset = c->has_q_offset,
            .q_offset = c->q_offset, .variant = (vkattn_softmax_variant)c->variant,
        },
    };
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    vkattn_status s = VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    if (!x || !y)
        goto done;
    bench_fill(x, n, 3, -SOFTMAX_RANGE, SOFTMAX_RANGE);
    int64_t xs[4] = {c->B, c->H, c->Tq, c->Tk};
    if ((s = bench_tensor(env->main, &ts, c->dtype, 4, xs, x, &run.x)) ||
        (s = bench_tensor(env->main, &ts, VKATTN_DTYPE_F32, 4, xs, NULL, &run.y)) ||
        (s = bench_time(env->main, &env->opt, record_softmax, &run, r)))
        goto done;
    if (env->opt.verify) {
        if ((s = vkattn_tensor_download(run.y, y, VKATTN_DTYPE_F32)))
            goto done;
        verify(env, c, q_offset, x, y, r);
    }
done:
    if (s)
        bench_fail(r, env->main, s, "softmax");
    bench_tensors_release(&ts);
    free(x);
    free(y);
}
