/* vkattn-bench: the multi-head attention layer (vkattn_mha), with C = C_out =
 * H * Dh as in a transformer block; verified in full against the CPU reference
 * (every output row depends on every input row through K and V, so there are
 * no independent row blocks to check on their own: keep mha shapes moderate). */
#include "bench.h"

#include <math.h>
#include <stdlib.h>

typedef struct mha_run {
    vkattn_mha_desc desc;
    vkattn_tensor *x, *w_qkv, *b_qkv, *w_out, *b_out, *y;
} mha_run;

static vkattn_status record_mha(vkattn_context *ctx, void *user)
{
    mha_run *m = user;
    return vkattn_mha(ctx, &m->desc, m->x, m->w_qkv, m->b_qkv, m->w_out, m->b_out, m->y);
}

/* Host copies of the layer's inputs. */
typedef struct mha_data {
    float *x, *w_qkv, *b_qkv, *w_out, *b_out;
    size_t xn, wqn, bqn, won, bon, yn;
} mha_data;

static vkattn_status make_tensors(vkattn_context *ctx, const bench_case *c, const mha_data *h,
                                  bench_tensors *ts, mha_run *run)
{
    int64_t T = c->Tq, width = c->H * c->D, C = width;
    int64_t xs[3] = {c->B, T, C}, wq[2] = {3 * width, C}, bq[1] = {3 * width};
    int64_t wo[2] = {C, width}, bo[1] = {C};
    vkattn_status s;
    if ((s = bench_tensor(ctx, ts, c->dtype, 3, xs, h->x, &run->x)) ||
        (s = bench_tensor(ctx, ts, c->dtype, 2, wq, h->w_qkv, &run->w_qkv)) ||
        (s = bench_tensor(ctx, ts, c->dtype, 1, bq, h->b_qkv, &run->b_qkv)) ||
        (s = bench_tensor(ctx, ts, c->dtype, 2, wo, h->w_out, &run->w_out)) ||
        (s = bench_tensor(ctx, ts, c->dtype, 1, bo, h->b_out, &run->b_out)))
        return s;
    return bench_tensor(ctx, ts, VKATTN_DTYPE_F32, 3, xs, NULL, &run->y);
}

/* The largest 1-norm (p = 1) or 2-norm (p = 2) of a row of the (rows, cols)
 * matrix w. */
static double max_row_norm(const float *w, int64_t rows, int64_t cols, int p)
{
    double largest = 0.0;
    for (int64_t n = 0; n < rows; n++) {
        double sum = 0.0;
        for (int64_t j = 0; j < cols; j++) {
            double a = fabs((double)w[n * cols + j]);
            sum += p == 1 ? a : a * a;
        }
        sum = p == 1 ? sum : sqrt(sum);
        largest = sum > largest ? sum : largest;
    }
    return largest;
}

static void verify(const bench_env *env, const bench_case *c, const mha_data *h, const float *y,
                   const mha_run *gpu_run, bench_result *r)
{
    bench_tensors ts = {0};
    mha_run run = {.desc = gpu_run->desc};
    float *want = malloc(h->yn * sizeof *want);
    vkattn_status s = VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    if (want && !(s = make_tensors(env->cpu, c, h, &ts, &run)) &&
        !(s = record_mha(env->cpu, &run)))
        s = vkattn_tensor_download(run.y, want, VKATTN_DTYPE_F32);
    if (s == VKATTN_OK) {
        /* As tests/test_mha.c: the attention output is off by about 1e-5 of |v|
         * (see bench_attention.c), and the output projection sums that over a
         * row of W_out. A 16-bit compute dtype rounds q, k, v and o from f32
         * here and from double in the reference, so values near a rounding
         * midpoint may land a spacing apart, and a fused kernel may round P
         * (half a spacing): errors of random sign, which a row of W_out sums
         * as its 2-norm does (four times that, for the odds), on values about
         * as large as x's largest times W_qkv's largest row 2-norm (the
         * bench's inputs are uniform and independent; again four times). */
        int64_t width = c->H * c->D, C_out = width, C = width;
        double row_sum = max_row_norm(h->w_out, C_out, width, 1), atol = 1e-5 * (1.0 + row_sum);
        if (c->compute_dtype != VKATTN_DTYPE_F32) {
            double x_max = 0.0;
            for (size_t i = 0; i < h->xn; i++)
                x_max = fmax(x_max, fabs((double)h->x[i]));
            double typical = 4.0 * x_max * max_row_norm(h->w_qkv, 3 * width, C, 2);
            double spacing = c->compute_dtype == VKATTN_DTYPE_F16 ? 0x1p-10 : 0x1p-7;
            atol += 4.0 * max_row_norm(h->w_out, C_out, width, 2) * typical * 1.5 * spacing;
        }
        bench_compare(y, want, h->yn, atol, 0.0, NULL, r);
        snprintf(r->note, sizeof r->note, "all rows");
    } else {
        bench_fail(r, env->cpu, s, "reference");
    }
    bench_tensors_release(&ts);
    free(want);
}

void bench_run_mha(const bench_env *env, const bench_case *c, bench_result *r)
{
    int64_t T = c->Tq, width = c->H * c->D, C = width;
    mha_data h = {
        .xn = (size_t)(c->B * T * C), .wqn = (size_t)(3 * width * C), .bqn = (size_t)(3 * width),
        .won = (size_t)(C * width), .bon = (size_t)C, .yn = (size_t)(c->B * T * C),
    };
    double esize = bench_dtype_bytes(c->dtype);
    /* The QKV projection, attention (2*(Dh+Dh) per unmasked entry and head,
     * causal top-left since Tq = Tk) and the output projection. */
    r->flops = 2.0 * (double)(c->B * T) * (double)C * (double)(3 * width) +
               4.0 * (double)c->D * (double)(c->B * c->H) *
                   bench_unmasked_pairs(T, T, c->causal, 0) +
               2.0 * (double)(c->B * T) * (double)width * (double)C;
    r->bytes = (double)(h.xn + h.wqn + h.bqn + h.won + h.bon) * esize + (double)h.yn * 4.0;

    vkattn_context *ctx = c->path == PATH_REFERENCE ? env->cpu : env->main;
    bench_tensors ts = {0};
    mha_run run = {
        .desc = {
            .heads = (int32_t)c->H, .causal = c->causal,
            .path = bench_api_path(c->path), .compute_dtype = c->compute_dtype,
        },
    };
    h.x = malloc(h.xn * sizeof *h.x);
    h.w_qkv = malloc(h.wqn * sizeof *h.w_qkv);
    h.b_qkv = malloc(h.bqn * sizeof *h.b_qkv);
    h.w_out = malloc(h.won * sizeof *h.w_out);
    h.b_out = malloc(h.bon * sizeof *h.b_out);
    float *y = malloc(h.yn * sizeof *y);
    vkattn_status s = VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    if (!h.x || !h.w_qkv || !h.b_qkv || !h.w_out || !h.b_out || !y)
        goto done;
    /* nn.Linear's initialisation range: U(-1/sqrt(in), 1/sqrt(in)). */
    float lq = 1.0f / sqrtf((float)C), lo = 1.0f / sqrtf((float)width);
    bench_fill(h.x, h.xn, 21, -1.0f, 1.0f);
    bench_fill(h.w_qkv, h.wqn, 22, -lq, lq);
    bench_fill(h.b_qkv, h.bqn, 23, -lq, lq);
    bench_fill(h.w_out, h.won, 24, -lo, lo);
    bench_fill(h.b_out, h.bon, 25, -lo, lo);
    if ((s = make_tensors(ctx, c, &h, &ts, &run)) ||
        (s = bench_time(ctx, &env->opt, record_mha, &run, r)))
        goto done;
    if (c->path == PATH_REFERENCE) {
        snprintf(r->note, sizeof r->note, "is the reference");
    } else if (env->opt.verify) {
        if ((s = vkattn_tensor_download(run.y, y, VKATTN_DTYPE_F32)))
            goto done;
        verify(env, c, &h, y, &run, r);
    }
done:
    if (s)
        bench_fail(r, ctx, s, "mha");
    bench_tensors_release(&ts);
    free(h.x);
    free(h.w_qkv);
    free(h.b_qkv);
    free(h.w_out);
    free(h.b_out);
    free(y);
}
