/* vkattn-bench: head transpose X (B, T, H, D) -> Y (B, H, T, D); a copy, so it
 * is verified in full and exactly. */
#include "bench.h"

#include <stdlib.h>

typedef struct transpose_run {
    vkattn_tensor *x, *y;
} transpose_run;

static vkattn_status record_transpose(vkattn_context *ctx, void *user)
{
    transpose_run *t = user;
    return vkattn_head_transpose(ctx, t->x, t->y);
}

static void verify(const bench_env *env, const bench_case *c, const float *x, const float *y,
                   bench_result *r)
{
    size_t n = (size_t)(c->B * c->Tq * c->H * c->D);
    int64_t xs[4] = {c->B, c->Tq, c->H, c->D}, ys[4] = {c->B, c->H, c->Tq, c->D};
    bench_tensors ts = {0};
    vkattn_tensor *xt, *yt;
    float *want = malloc(n * sizeof *want);
    vkattn_status s = VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    if (want && !(s = bench_tensor(env->cpu, &ts, c->dtype, 4, xs, x, &xt)) &&
        !(s = bench_tensor(env->cpu, &ts, VKATTN_DTYPE_F32, 4, ys, NULL, &yt)) &&
        !(s = vkattn_head_transpose(env->cpu, xt, yt)) &&
        !(s = vkattn_tensor_download(yt, want, VKATTN_DTYPE_F32))) {
        bench_compare(y, want, n, 0.0, 0.0, NULL, r); /* moved, never rounded */
        snprintf(r->note, sizeof r->note, "all rows");
    }
    if (s)
        bench_fail(r, env->cpu, s, "reference");
    bench_tensors_release(&ts);
    free(want);
}

void bench_run_transpose(const bench_env *env, const bench_case *c, bench_result *r)
{
    size_t n = (size_t)(c->B * c->Tq * c->H * c->D);
    double esize = bench_dtype_bytes(c->dtype);
    r->flops = 0.0;
    r->bytes = (double)n * esize + (double)n * 4.0;

    bench_tensors ts = {0};
    transpose_run run = {0};
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    vkattn_status s = VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    if (!x || !y)
        goto done;
    bench_fill(x, n, 4, -1.0f, 1.0f);
    int64_t xs[4] = {c->B, c->Tq, c->H, c->D}, ys[4] = {c->B, c->H, c->Tq, c->D};
    if ((s = bench_tensor(env->main, &ts, c->dtype, 4, xs, x, &run.x)) ||
        (s = bench_tensor(env->main, &ts, VKATTN_DTYPE_F32, 4, ys, NULL, &run.y)) ||
        (s = bench_time(env->main, &env->opt, record_transpose, &run, r)))
        goto done;
    if (env->opt.verify) {
        if ((s = vkattn_tensor_download(run.y, y, VKATTN_DTYPE_F32)))
            goto done;
        verify(env, c, x, y, r);
    }
done:
    if (s)
        bench_fail(r, env->main, s, "head_transpose");
    bench_tensors_release(&ts);
    free(x);
    free(y);
}
