/* vkattn-bench: running, timing and verifying one case. */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *bench_op_name(bench_op op)
{
    static const char *names[OP_COUNT] = {"matmul", "softmax", "head_transpose"};
    return op < OP_COUNT ? names[op] : "?";
}

void bench_case_shape(const bench_case *c, char *buf, size_t size)
{
    switch (c->op) {
    case OP_MATMUL:
        snprintf(buf, size, "%lldx%lldx%lldx%lld", (long long)c->batch, (long long)c->M,
                 (long long)c->N, (long long)c->K);
        break;
    case OP_SOFTMAX:
        snprintf(buf, size, "%lldx%lldx%lld", (long long)c->batch, (long long)c->M,
                 (long long)c->N);
        break;
    default:
        snprintf(buf, size, "%lldx%lldx%lldx%lld", (long long)c->batch, (long long)c->M,
                 (long long)c->N, (long long)c->K);
    }
}

/* Deterministic uniform values in [-1, 1]. */
static void fill(float *v, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float)((double)(seed >> 40) / 8388608.0 - 1.0);
    }
}

typedef struct tensors {
    vkattn_tensor *t[4];
    int n;
} tensors;

static vkattn_status make(vkattn_context *ctx, tensors *ts, vkattn_dtype dtype, int ndim,
                          const int64_t *shape, const float *data, vkattn_tensor **out)
{
    vkattn_tensor_desc d = {.dtype = dtype, .ndim = ndim};
    memcpy(d.shape, shape, (size_t)ndim * sizeof shape[0]);
    vkattn_status s = vkattn_tensor_create(ctx, &d, out);
    if (s != VKATTN_OK)
        return s;
    ts->t[ts->n++] = *out;
    return data ? vkattn_tensor_upload(*out, data, VKATTN_DTYPE_F32) : VKATTN_OK;
}

static void release(tensors *ts)
{
    for (int i = 0; i < ts->n; i++)
        vkattn_tensor_destroy(ts->t[i]);
    ts->n = 0;
}

/* The op itself, on either context, over the given tensors. */
static vkattn_status run_op(vkattn_context *ctx, const bench_case *c, vkattn_tensor **t)
{
    switch (c->op) {
    case OP_MATMUL: {
        vkattn_matmul_desc d = {0};
        if (!strcmp(c->variant, "naive"))
            d.variant = VKATTN_MATMUL_NAIVE;
        else if (!strcmp(c->variant, "tiled"))
            d.variant = VKATTN_MATMUL_TILED;
        else if (!strcmp(c->variant, "texel"))
            d.variant = VKATTN_MATMUL_TEXEL;
        return vkattn_matmul(ctx, &d, t[0], t[1], NULL, t[2]);
    }
    case OP_SOFTMAX: {
        vkattn_softmax_desc d = {.scale = 0.125f, .causal = c->causal};
        if (strcmp(c->variant, "shared") == 0)
            d.variant = VKATTN_SOFTMAX_SHARED;
        else if (strcmp(c->variant, "subgroup") == 0)
            d.variant = VKATTN_SOFTMAX_SUBGROUP;
        return vkattn_softmax(ctx, &d, t[0], t[1]);
    }
    default:
        return vkattn_head_transpose(ctx, t[0], t[1]);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Verification on a subset for large shapes: the first batch entry (and, for
 * matmul, its first rows), recomputed by the CPU reference in double. */
static void verify(vkattn_context *cpu, const bench_case *c, const float *a, const float *b,
                   const float *gpu_out, bench_result *r)
{
    tensors ts = {0};
    vkattn_tensor *t[3];
    int64_t rows = c->M;
    size_t out_count = 0;
    vkattn_status s = VKATTN_OK;
    switch (c->op) {
    case OP_MATMUL: {
        rows = c->M < 64 ? c->M : 64;
        int64_t as[2] = {rows, c->K}, bs[2] = {c->K, c->N}, cs[2] = {rows, c->N};
        if (!(s = make(cpu, &ts, c->dtype, 2, as, a, &t[0])) &&
            !(s = make(cpu, &ts, c->dtype, 2, bs, b, &t[1])) &&
            !(s = make(cpu, &ts, VKATTN_DTYPE_F32, 2, cs, NULL, &t[2])))
            s = run_op(cpu, c, t);
        out_count = (size_t)(rows * c->N);
        r->tolerance = 1e-6 * (double)c->K + 1e-5;  /* |a|,|b| <= 1: error grows with K */
        break;
    }
    case OP_SOFTMAX: {
        int64_t xs[2] = {c->M, c->N};
        if (!(s = make(cpu, &ts, c->dtype, 2, xs, a, &t[0])) &&
            !(s = make(cpu, &ts, VKATTN_DTYPE_F32, 2, xs, NULL, &t[1])))
            s = run_op(cpu, c, t);
        out_count = (size_t)(c->M * c->N);
        r->tolerance = 1e-5;
        break;
    }
    default: {
        int64_t xs[4] = {1, c->M, c->N, c->K}, ys[4] = {1, c->N, c->M, c->K};
        if (!(s = make(cpu, &ts, c->dtype, 4, xs, a, &t[0])) &&
            !(s = make(cpu, &ts, VKATTN_DTYPE_F32, 4, ys, NULL, &t[1])))
            s = run_op(cpu, c, t);
        out_count = (size_t)(c->M * c->N * c->K);
        r->tolerance = 0.0;
    }
    }
    float *want = s == VKATTN_OK ? malloc(out_count * sizeof *want) : NULL;
    if (want && vkattn_tensor_download(t[c->op == OP_MATMUL ? 2 : 1], want, VKATTN_DTYPE_F32) ==
                    VKATTN_OK) {
        double worst = 0.0;
        for (size_t i = 0; i < out_count; i++) {
            double e = fabs((double)gpu_out[i] - (double)want[i]);
            if (!(e <= worst)) /* NaN counts as the worst */
                worst = isnan(e) ? INFINITY : e;
        }
        r->max_abs_err = worst;
        r->verified = true;
        r->ok = worst <= r->tolerance;
    } else {
        snprintf(r->error, sizeof r->error, "verification failed: %s", vkattn_last_error(cpu));
        r->ok = false;
    }
    free(want);
    release(&ts);
}

void bench_run_case(vkattn_context *gpu, vkattn_context *cpu, const bench_case *c,
                    const bench_options *opt, bench_result *r)
{
    memset(r, 0, sizeof *r);
    r->ok = true;
    tensors ts = {0};
    vkattn_tensor *t[3];
    size_t in_a = 0, in_b = 0, out_n = 0;
    size_t esize = c->dtype == VKATTN_DTYPE_F16 ? 2 : 4;
    switch (c->op) {
    case OP_MATMUL:
        in_a = (size_t)(c->batch * c->M * c->K);
        in_b = (size_t)(c->K * c->N);
        out_n = (size_t)(c->batch * c->M * c->N);
        r->flops = 2.0 * (double)c->batch * (double)c->M * (double)c->N * (double)c->K;
        r->bytes = (double)(in_a + in_b) * (double)esize + (double)out_n * 4.0;
        break;
    case OP_SOFTMAX:
        in_a = out_n = (size_t)(c->batch * c->M * c->N);
        r->flops = 5.0 * (double)in_a; /* max, sub, mul, exp, div: a nominal count */
        r->bytes = (double)in_a * (double)esize + (double)out_n * 4.0;
        break;
    default:
        in_a = out_n = (size_t)(c->batch * c->M * c->N * c->K);
        r->flops = 0.0;
        r->bytes = (double)in_a * (double)esize + (double)out_n * 4.0;
    }
    float *a = malloc(in_a * sizeof *a), *b = in_b ? malloc(in_b * sizeof *b) : NULL;
    float *out = malloc(out_n * sizeof *out);
    double *times = calloc((size_t)(opt->reps > 0 ? opt->reps : 1), sizeof *times);
    vkattn_status s = VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    if (!a || (in_b && !b) || !out || !times)
        goto done;
    fill(a, in_a, 1);
    if (b)
        fill(b, in_b, 2);

    if (c->op == OP_MATMUL) {
        int64_t as[3] = {c->batch, c->M, c->K}, bs[2] = {c->K, c->N}, cs[3] = {c->batch, c->M, c->N};
        if ((s = make(gpu, &ts, c->dtype, 3, as, a, &t[0])) ||
            (s = make(gpu, &ts, c->dtype, 2, bs, b, &t[1])) ||
            (s = make(gpu, &ts, VKATTN_DTYPE_F32, 3, cs, NULL, &t[2])))
            goto done;
    } else if (c->op == OP_SOFTMAX) {
        int64_t xs[3] = {c->batch, c->M, c->N};
        if ((s = make(gpu, &ts, c->dtype, 3, xs, a, &t[0])) ||
            (s = make(gpu, &ts, VKATTN_DTYPE_F32, 3, xs, NULL, &t[1])))
            goto done;
    } else {
        int64_t xs[4] = {c->batch, c->M, c->N, c->K}, ys[4] = {c->batch, c->N, c->M, c->K};
        if ((s = make(gpu, &ts, c->dtype, 4, xs, a, &t[0])) ||
            (s = make(gpu, &ts, VKATTN_DTYPE_F32, 4, ys, NULL, &t[1])))
            goto done;
    }

    for (int i = 0; i < opt->warmup; i++)
        if ((s = run_op(gpu, c, t)) || (s = vkattn_synchronize(gpu)))
            goto done;
    for (int i = 0; i < opt->reps; i++) {
        if ((s = vkattn_synchronize(gpu)) || (s = vkattn_timer_begin(gpu)) ||
            (s = run_op(gpu, c, t)) || (s = vkattn_timer_end(gpu, &times[i])))
            goto done;
    }
    qsort(times, (size_t)opt->reps, sizeof *times, cmp_double);
    r->ms_min = times[0];
    r->ms_median = opt->reps % 2 ? times[opt->reps / 2]
                                 : 0.5 * (times[opt->reps / 2 - 1] + times[opt->reps / 2]);

    if (opt->verify) {
        if ((s = vkattn_tensor_download(t[c->op == OP_MATMUL ? 2 : 1], out, VKATTN_DTYPE_F32)))
            goto done;
        verify(cpu, c, a, b, out, r);
    }
done:
    if (s != VKATTN_OK) {
        snprintf(r->error, sizeof r->error, "%s: %s", vkattn_status_string(s),
                 vkattn_last_error(gpu));
        r->ok = false;
    }
    release(&ts);
    free(a);
    free(b);
    free(out);
    free(times);
}
