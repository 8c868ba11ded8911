/* The CPU reference backend on several threads (VKATTN_CPU_THREADS): every bit
 * of every result (matmul, attention, the layer) the same as on one thread, and each row where it belongs
 * (packed sequences against each sequence alone; the matmul against plain
 * loops here). The GPU tests compare every kernel with this backend, so a row
 * it computes twice, skips or puts in the wrong place would fail them all on
 * machines with more CPUs than CI's. Runs without a Vulkan device. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static vkattn_context *cpu_context(void)
{
    vkattn_context_desc d = {.backend = VKATTN_BACKEND_CPU};
    vkattn_context *ctx = NULL;
    assert_int_equal(vkattn_context_create(&d, &ctx), VKATTN_OK);
    return ctx;
}

/* A tensor holding `data` (f32 or i32 elements), or uninitialised for NULL. */
static vkattn_tensor *tensor(vkattn_context *ctx, vkattn_dtype dtype, int ndim,
                             const int64_t *shape, const void *data)
{
    vkattn_tensor_desc d = {.dtype = dtype, .ndim = ndim};
    memcpy(d.shape, shape, (size_t)ndim * sizeof *shape);
    vkattn_tensor *t = NULL;
    assert_int_equal(vkattn_tensor_create(ctx, &d, &t), VKATTN_OK);
    if (data)
        assert_int_equal(vkattn_tensor_upload(t, data, dtype), VKATTN_OK);
    return t;
}

static float *download(vkattn_tensor *t, size_t n)
{
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    assert_int_equal(vkattn_tensor_download(t, x, VKATTN_DTYPE_F32), VKATTN_OK);
    return x;
}

static void set_threads(int n)
{
    char value[16];
    snprintf(value, sizeof value, "%d", n);
    setenv("VKATTN_CPU_THREADS", value, 1);
}

static const int thread_counts[] = {1, 2, 3, 7, 64};
#define THREAD_COUNTS (int)(sizeof thread_counts / sizeof thread_counts[0])

typedef vkattn_status (*cpu_call)(const void *args);

/* Makes `call` on each of thread_counts, its output `out` (n f32 elements)
 * filled with NaN before each (an op may write it in place: a row a run left
 * out must not keep the last run's values), and fails unless every run gives
 * the bits of the first (one thread). Returns those (free() them). */
static float *same_on_every_thread_count(const char *what, cpu_call call, const void *args,
                                         vkattn_tensor *out, size_t n)
{
    float *nans = malloc(n * sizeof *nans);
    assert_non_null(nans);
    for (size_t i = 0; i < n; i++)
        nans[i] = NAN;
    float *first = NULL;
    for (int t = 0; t < THREAD_COUNTS; t++) {
        assert_int_equal(vkattn_tensor_upload(out, nans, VKATTN_DTYPE_F32), VKATTN_OK);
        set_threads(thread_counts[t]);
        assert_int_equal(call(args), VKATTN_OK);
        float *got = download(out, n);
        if (!first) {
            first = got;
            continue;
        }
        if (memcmp(got, first, n * sizeof *got) != 0)
            fail_msg("%s: %d threads differ from 1", what, thread_counts[t]);
        free(got);
    }
    unsetenv("VKATTN_CPU_THREADS");
    free(nans);
    return first;
}

/* ------------------------------------------------------------- matmul -- */

typedef struct matmul_case {
    const char *name;
    int a_ndim, b_ndim;
    int64_t a_shape[4], b_shape[4];
    bool transpose_b, bias;
    float alpha;
} matmul_case;

/* C = alpha A op(B) + bias in plain loops, B batch a / group (vkattn.h). */
static double plain_matmul(const matmul_case *c, const float *a, const float *b,
                           const float *bias, size_t batch, size_t m, size_t n)
{
    int lead = c->a_ndim - 2;
    size_t M = (size_t)c->a_shape[lead], K = (size_t)c->a_shape[lead + 1];
    size_t N = (size_t)(c->transpose_b ? c->b_shape[c->b_ndim - 2] : c->b_shape[c->b_ndim - 1]);
    size_t b_batches = shape_count(c->b_ndim - 2, c->b_shape);
    size_t group = shape_count(lead, c->a_shape) / b_batches;
    const float *bb = b + (batch / group) * K * N;
    double sum = 0.0;
    for (size_t k = 0; k < K; k++)
        sum += (double)a[(batch * M + m) * K + k] *
               (double)(c->transpose_b ? bb[n * K + k] : bb[k * N + n]);
    return (double)c->alpha * sum + (bias ? bias[n] : 0.0);
}

typedef struct matmul_args {
    vkattn_context *ctx;
    vkattn_matmul_desc d;
    vkattn_tensor *a, *b, *bias, *c;
} matmul_args;

static vkattn_status matmul_call(const void *args)
{
    const matmul_args *m = args;
    return vkattn_matmul(m->ctx, &m->d, m->a, m->b, m->bias, m->c);
}

static void test_matmul_threads(void **state)
{
    (void)state;
    /* N past one block of 256 accumulated columns and not a multiple of it;
     * B shared, batched and grouped (two A batches a B batch), transposed. */
    const matmul_case cases[] = {
        {"2-D B, bias", 3, 2, {3, 29, 45}, {45, 300}, false, true, 0.75f},
        {"grouped transposed B", 4, 4, {2, 4, 17, 33}, {2, 2, 300, 33}, true, false, 1.0f},
        {"one row", 2, 2, {1, 70}, {70, 513}, false, true, -1.5f},
    };
    vkattn_context *ctx = cpu_context();
    rng r = {20261126};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const matmul_case *c = &cases[ci];
        int lead = c->a_ndim - 2;
        int64_t N = c->transpose_b ? c->b_shape[c->b_ndim - 2] : c->b_shape[c->b_ndim - 1];
        int64_t c_shape[4];
        memcpy(c_shape, c->a_shape, sizeof c_shape);
        c_shape[lead + 1] = N;
        size_t an = shape_count(c->a_ndim, c->a_shape), bn = shape_count(c->b_ndim, c->b_shape);
        size_t cn = shape_count(c->a_ndim, c_shape);
        float *a = random_floats(&r, an, -2.0f, 2.0f), *b = random_floats(&r, bn, -2.0f, 2.0f);
        float *bias = random_floats(&r, (size_t)N, -2.0f, 2.0f);
        vkattn_tensor *at = tensor(ctx, VKATTN_DTYPE_F32, c->a_ndim, c->a_shape, a);
        vkattn_tensor *bt = tensor(ctx, VKATTN_DTYPE_F32, c->b_ndim, c->b_shape, b);
        vkattn_tensor *biast = tensor(ctx, VKATTN_DTYPE_F32, 1, &N, bias);
        vkattn_tensor *ct = tensor(ctx, VKATTN_DTYPE_F32, c->a_ndim, c_shape, NULL);
        matmul_args args = {ctx, {.transpose_b = c->transpose_b, .alpha = c->alpha}, at, bt,
                            c->bias ? biast : NULL, ct};
        char what[64];
        snprintf(what, sizeof what, "matmul %s", c->name);
        float *first = same_on_every_thread_count(what, matmul_call, &args, ct, cn);
        size_t M = (size_t)c->a_shape[lead], batches = shape_count(lead, c->a_shape);
        for (size_t batch = 0; batch < batches; batch++)
            for (size_t m = 0; m < M; m++)
                for (size_t n = 0; n < (size_t)N; n++) {
                    double want = plain_matmul(c, a, b, c->bias ? bias : NULL, batch, m, n);
                    float got = first[(batch * M + m) * (size_t)N + n];
                    if (!(fabs(got - want) <= 1e-5 * (1.0 + fabs(want)))) /* NaN too */
                        fail_msg("matmul %s: C[%zu][%zu][%zu] = %g, plain loops give %g", c->name,
                                 batch, m, n, got, want);
                }
        free(first);
        free(a);
        free(b);
        free(bias);
        vkattn_tensor_destroy(at);
        vkattn_tensor_destroy(bt);
        vkattn_tensor_destroy(biast);
        vkattn_tensor_destroy(ct);
    }
    unsetenv("VKATTN_CPU_THREADS");
    vkattn_context_destroy(ctx);
}

/* ---------------------------------------------------------- attention -- */

typedef struct attention_args {
    vkattn_context *ctx;
    const vkattn_attention_desc *d;
    vkattn_tensor *q, *k, *v, *o;
} attention_args;

static vkattn_status attention_call(const void *args)
{
    const attention_args *a = args;
    return vkattn_attention(a->ctx, a->d, a->q, a->k, a->v, a->o);
}

/* Three packed sequences (one query row; more queries than keys, which the
 * bottom-right causal alignment leaves some rows no key of; equal lengths),
 * GQA, causal with a window, the rows dealt out across heads and sequences:
 * the same bits on every thread count, and each sequence's rows equal to that
 * sequence computed alone (BSHD, whose rows are the packed ones). */
static void test_attention_threads(void **state)
{
    (void)state;
    enum { B = 3, H = 4, HKV = 2, D = 24, DV = 20 };
    const int32_t cu_q[B + 1] = {0, 1, 41, 58}, cu_k[B + 1] = {0, 5, 35, 52};
    int64_t total_q = cu_q[B], total_k = cu_k[B];
    vkattn_context *ctx = cpu_context();
    rng r = {26112630};
    int64_t qs[3] = {total_q, H, D}, ks[3] = {total_k, HKV, D}, vs[3] = {total_k, HKV, DV};
    int64_t os[3] = {total_q, H, DV}, cs = B + 1;
    float *q = random_floats(&r, (size_t)(total_q * H * D), -2.0f, 2.0f);
    float *k = random_floats(&r, (size_t)(total_k * HKV * D), -2.0f, 2.0f);
    float *v = random_floats(&r, (size_t)(total_k * HKV * DV), -2.0f, 2.0f);
    vkattn_tensor *qt = tensor(ctx, VKATTN_DTYPE_F32, 3, qs, q);
    vkattn_tensor *kt = tensor(ctx, VKATTN_DTYPE_F32, 3, ks, k);
    vkattn_tensor *vt = tensor(ctx, VKATTN_DTYPE_F32, 3, vs, v);
    vkattn_tensor *ot = tensor(ctx, VKATTN_DTYPE_F32, 3, os, NULL);
    vkattn_tensor *cqt = tensor(ctx, VKATTN_DTYPE_I32, 1, &cs, cu_q);
    vkattn_tensor *ckt = tensor(ctx, VKATTN_DTYPE_I32, 1, &cs, cu_k);
    vkattn_attention_desc d = {
        .causal = true, .has_window = true, .window_left = 9, .window_right = -1,
        .cu_seqlens_q = cqt, .cu_seqlens_k = ckt,
    };
    attention_args args = {ctx, &d, qt, kt, vt, ot};
    float *first = same_on_every_thread_count("packed attention", attention_call, &args, ot,
                                              (size_t)(total_q * H * DV));

    for (int b = 0; b < B; b++) {
        int64_t tq = cu_q[b + 1] - cu_q[b], tk = cu_k[b + 1] - cu_k[b];
        int64_t bq[4] = {1, tq, H, D}, bk[4] = {1, tk, HKV, D}, bv[4] = {1, tk, HKV, DV};
        int64_t bo[4] = {1, tq, H, DV};
        vkattn_tensor *bqt = tensor(ctx, VKATTN_DTYPE_F32, 4, bq, q + cu_q[b] * H * D);
        vkattn_tensor *bkt = tensor(ctx, VKATTN_DTYPE_F32, 4, bk, k + cu_k[b] * HKV * D);
        vkattn_tensor *bvt = tensor(ctx, VKATTN_DTYPE_F32, 4, bv, v + cu_k[b] * HKV * DV);
        vkattn_tensor *bot = tensor(ctx, VKATTN_DTYPE_F32, 4, bo, NULL);
        vkattn_attention_desc alone = {
            .layout = VKATTN_LAYOUT_BSHD, .causal = true,
            .has_window = true, .window_left = 9, .window_right = -1,
        };
        set_threads(5);
        assert_int_equal(vkattn_attention(ctx, &alone, bqt, bkt, bvt, bot), VKATTN_OK);
        unsetenv("VKATTN_CPU_THREADS");
        size_t n = (size_t)(tq * H * DV);
        float *got = download(bot, n);
        if (memcmp(got, first + cu_q[b] * H * DV, n * sizeof *got) != 0)
            fail_msg("packed attention: sequence %d differs from itself computed alone", b);
        free(got);
        vkattn_tensor_destroy(bqt);
        vkattn_tensor_destroy(bkt);
        vkattn_tensor_destroy(bvt);
        vkattn_tensor_destroy(bot);
    }
    /* Rows with keys to see are not all zeros (a skipped row would be). */
    for (int64_t row = 0; row < total_q; row++) {
        double sum = 0.0;
        for (int c = 0; c < H * DV; c++)
            sum += fabs(first[row * H * DV + c]);
        int b = row < cu_q[1] ? 0 : row < cu_q[2] ? 1 : 2;
        int64_t pos = row - cu_q[b] + (cu_k[b + 1] - cu_k[b]) - (cu_q[b + 1] - cu_q[b]);
        if (pos >= 0 && sum == 0.0)
            fail_msg("packed attention: row %lld (sequence %d) is all zeros", (long long)row, b);
    }
    free(first);
    free(q);
    free(k);
    free(v);
    vkattn_tensor_destroy(qt);
    vkattn_tensor_destroy(kt);
    vkattn_tensor_destroy(vt);
    vkattn_tensor_destroy(ot);
    vkattn_tensor_destroy(cqt);
    vkattn_tensor_destroy(ckt);
    vkattn_context_destroy(ctx);
}

/* ---------------------------------------------------------------- mha -- */

typedef struct mha_args {
    vkattn_context *ctx;
    const vkattn_mha_desc *d;
    vkattn_tensor *x, *w_qkv, *b_qkv, *w_out, *b_out, *y;
} mha_args;

static vkattn_status mha_call(const void *args)
{
    const mha_args *m = args;
    return vkattn_mha(m->ctx, m->d, m->x, m->w_qkv, m->b_qkv, m->w_out, m->b_out, m->y);
}

/* The layer: its projections' rows and its attention's rows dealt out alike. */
static void test_mha_threads(void **state)
{
    (void)state;
    enum { B = 2, T = 19, C = 24, H = 3, DH = 8, C_OUT = 10 };
    vkattn_context *ctx = cpu_context();
    rng r = {26112631};
    int64_t xs[3] = {B, T, C}, wq[2] = {3 * H * DH, C}, bq = 3 * H * DH;
    int64_t wo[2] = {C_OUT, H * DH}, bo = C_OUT, ys[3] = {B, T, C_OUT};
    float *x = random_floats(&r, B * T * C, -2.0f, 2.0f);
    float *w_qkv = random_floats(&r, 3 * H * DH * C, -0.5f, 0.5f);
    float *b_qkv = random_floats(&r, 3 * H * DH, -0.5f, 0.5f);
    float *w_out = random_floats(&r, C_OUT * H * DH, -0.5f, 0.5f);
    float *b_out = random_floats(&r, C_OUT, -0.5f, 0.5f);
    vkattn_tensor *xt = tensor(ctx, VKATTN_DTYPE_F32, 3, xs, x);
    vkattn_tensor *wqt = tensor(ctx, VKATTN_DTYPE_F32, 2, wq, w_qkv);
    vkattn_tensor *bqt = tensor(ctx, VKATTN_DTYPE_F32, 1, &bq, b_qkv);
    vkattn_tensor *wot = tensor(ctx, VKATTN_DTYPE_F32, 2, wo, w_out);
    vkattn_tensor *bot = tensor(ctx, VKATTN_DTYPE_F32, 1, &bo, b_out);
    vkattn_tensor *yt = tensor(ctx, VKATTN_DTYPE_F32, 3, ys, NULL);
    vkattn_mha_desc d = {.heads = H, .causal = true};
    size_t yn = shape_count(3, ys);
    mha_args args = {ctx, &d, xt, wqt, bqt, wot, bot, yt};
    float *first = same_on_every_thread_count("mha", mha_call, &args, yt, yn);
    double sum = 0.0;
    for (size_t i = 0; i < yn; i++)
        sum += fabs(first[i]);
    assert_true(sum > 0.0);
    free(first);
    free(x);
    free(w_qkv);
    free(b_qkv);
    free(w_out);
    free(b_out);
    vkattn_tensor_destroy(xt);
    vkattn_tensor_destroy(wqt);
    vkattn_tensor_destroy(bqt);
    vkattn_tensor_destroy(wot);
    vkattn_tensor_destroy(bot);
    vkattn_tensor_destroy(yt);
    vkattn_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_threads),
        cmocka_unit_test(test_attention_threads),
        cmocka_unit_test(test_mha_threads),
    };
    return test_run_group(tests, NULL, NULL);
}
