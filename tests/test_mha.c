/* The multi-head attention layer on the GPU, by both paths, against the CPU reference:
 * every input dtype, the variants and the additive mask. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mha_case {
    const char *name;
    int64_t B, T, C, H, Dh, C_out;
    bool b_qkv, b_out, causal;
    vkattn_dtype dtype;
    bool variants;  /* a window (left 4), softcap 2, sinks and ALiBi slopes */
    int mask;       /* an additive mask: 0 none, else its rank (mask_shape) */
    vkattn_dtype compute; /* the layer's compute dtype (default F32) */
} mha_case;

/* The largest |q|, |k| or |v| the layer's first projection makes. */
static double largest_projection(const mha_case *c, const pair *x, const pair *w_qkv,
                                 const pair *b_qkv)
{
    int64_t rows = c->B * c->T, n_out = 3 * c->H * c->Dh;
    double largest = 0.0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t n = 0; n < n_out; n++) {
            double s = b_qkv->host ? b_qkv->host[n] : 0.0;
            for (int64_t i = 0; i < c->C; i++)
                s += (double)x->host[r * c->C + i] * w_qkv->host[n * c->C + i];
            largest = fabs(s) > largest ? fabs(s) : largest;
        }
    return largest;
}

static const char *compute_name(vkattn_dtype dtype)
{
    return dtype == VKATTN_DTYPE_F16 ? "f16 compute" : dtype == VKATTN_DTYPE_BF16 ? "bf16 compute"
                                                                                 : "f32 compute";
}

/* The relative spacing of a dtype's numbers (one unit in the last place, at
 * most, of a value's magnitude); 0 for f32, whose rounding the bound's 1e-5
 * covers. */
static double spacing(vkattn_dtype dtype)
{
    return dtype == VKATTN_DTYPE_F16 ? 0x1p-10 : dtype == VKATTN_DTYPE_BF16 ? 0x1p-7 : 0.0;
}

/* The mask of rank 2 (T, T) in f32, 3 (H, T, T) in f16 or 4 (B, 1, 1, T), a key
 * padding mask in bf16: values in [-1, 1], -inf at every fifth entry, and
 * every key of row 0 -inf where rows are in its shape (a row with no allowed
 * key gives zeros through the layer too). */
static pair mask_pair(test_env *env, const mha_case *c, rng *r)
{
    int64_t shapes[3][4] = {{c->T, c->T}, {c->H, c->T, c->T}, {c->B, 1, 1, c->T}};
    static const vkattn_dtype dtypes[3] = {VKATTN_DTYPE_F32, VKATTN_DTYPE_F16, VKATTN_DTYPE_BF16};
    pair m = pair_random(env, dtypes[c->mask - 2], c->mask, shapes[c->mask - 2], r, -1.0f, 1.0f);
    for (size_t i = 0; i < m.count; i += 5)
        m.host[i] = -INFINITY;
    if (c->mask < 4)
        for (int64_t j = 0; j < c->T; j++)
            m.host[j] = -INFINITY;
    assert_int_equal(vkattn_tensor_upload(m.gpu, m.host, VKATTN_DTYPE_F32), VKATTN_OK);
    assert_int_equal(vkattn_tensor_upload(m.cpu, m.host, VKATTN_DTYPE_F32), VKATTN_OK);
    return m;
}

static void run_case(test_env *env, const mha_case *c, rng *r)
{
    int64_t width = c->H * c->Dh;
    int64_t xs[3] = {c->B, c->T, c->C}, wq[2] = {3 * width, c->C}, bq[1] = {3 * width};
    int64_t wo[2] = {c->C_out, width}, bo[1] = {c->C_out}, ys[3] = {c->B, c->T, c->C_out};
    /* nn.Linear's initialisation range: U(-1/sqrt(in), 1/sqrt(in)). */
    float lq = 1.0f / sqrtf((float)c->C), lo = 1.0f / sqrtf((float)width);
    pair x = pair_random(env, c->dtype, 3, xs, r, -1.0f, 1.0f);
    pair w_qkv = pair_random(env, c->dtype, 2, wq, r, -lq, lq);
    pair b_qkv = c->b_qkv ? pair_random(env, c->dtype, 1, bq, r, -lq, lq) : (pair){0};
    pair w_out = pair_random(env, c->dtype, 2, wo, r, -lo, lo);
    pair b_out = c->b_out ? pair_random(env, c->dtype, 1, bo, r, -lo, lo) : (pair){0};
    pair y = pair_output(env, 3, ys);

    vkattn_mha_desc d = {.heads = (int32_t)c->H, .causal = c->causal, .compute_dtype = c->compute};
    int64_t heads[1] = {c->H};
    pair sinks = {0}, alibi = {0}, mask = {0};
    if (c->mask) {
        mask = mask_pair(env, c, r);
        d.mask = mask.cpu;
    }
    if (c->variants) {
        sinks = pair_random(env, VKATTN_DTYPE_F32, 1, heads, r, -1.0f, 1.0f);
        alibi = pair_random(env, VKATTN_DTYPE_F32, 1, heads, r, 0.0f, 0.5f);
        d.has_window = true, d.window_left = 4, d.window_right = c->causal ? 0 : 3;
        d.softcap = 2.0f;
        d.sinks = sinks.cpu, d.alibi_slopes = alibi.cpu;
    }
    assert_int_equal(vkattn_mha(env->cpu, &d, x.cpu, w_qkv.cpu, b_qkv.cpu, w_out.cpu, b_out.cpu,
                                y.cpu),
                     VKATTN_OK);
    d.sinks = sinks.gpu, d.alibi_slopes = alibi.gpu, d.mask = mask.gpu;
    /* The attention output is off by about 1e-5 of |v| (see test_attention);
     * the projection sums that over a row of W_out. f16 and bf16 inputs are
     * rounded once, on upload, and both sides read those values, so the bound
     * does not depend on the input dtype. */
    double row_sum = 0.0;
    for (int64_t n = 0; n < c->C_out; n++) {
        double s = 0.0;
        for (int64_t j = 0; j < width; j++)
            s += fabs(w_out.host[n * width + j]);
        row_sum = s > row_sum ? s : row_sum;
    }
    double atol = 1e-5 * (1.0 + row_sum);
    /* A 16-bit compute dtype: both sides round q, k, v and the heads' output,
     * but from f32 on the GPU and from double here, so a value near a rounding
     * midpoint may land one spacing apart (rarely: bounded by one spacing of
     * the largest projection, over a row of W_out); and a fused kernel may
     * round P to 16 bits for P V (the choice says), which moves o by that
     * rounding of the largest |v|. test_compute_rounding checks the rounding
     * itself exactly. */
    double largest = c->compute != VKATTN_DTYPE_F32 ? largest_projection(c, &x, &w_qkv, &b_qkv)
                                                    : 0.0;

    static const vkattn_attention_path paths[] = {VKATTN_PATH_AUTO, VKATTN_PATH_UNFUSED};
    for (int i = 0; i < 2; i++) {
        char name[160];
        snprintf(name, sizeof name, "%s [B%lld T%lld C%lld H%lld Dh%lld C_out%lld, %s, %s]",
                 c->name, (long long)c->B, (long long)c->T, (long long)c->C, (long long)c->H,
                 (long long)c->Dh, (long long)c->C_out, i ? "unfused" : "auto",
                 compute_name(c->compute));
        assert_int_equal(vkattn_tensor_upload(y.gpu, y.host, VKATTN_DTYPE_F32), VKATTN_OK);
        d.path = paths[i];
        vkattn_attention_choice choice;
        assert_int_equal(vkattn_mha_choose(env->gpu, &d, x.gpu, w_qkv.gpu, b_qkv.gpu, w_out.gpu,
                                           b_out.gpu, y.gpu, &choice),
                         VKATTN_OK);
        double p_rounding = spacing(choice.weights_dtype) / 2;
        double tolerance = atol + row_sum * largest * (spacing(c->compute) + p_rounding);
        vkattn_status s = vkattn_mha(env->gpu, &d, x.gpu, w_qkv.gpu, b_qkv.gpu, w_out.gpu,
                                     b_out.gpu, y.gpu);
        if (s != VKATTN_OK)
            fail_msg("%s: %s", name, vkattn_last_error(env->gpu));
        expect_close(name, &y, tolerance, 0.0, NULL);
        if (c->mask == 2 && !c->b_out) { /* query row 0 masked whole: its o row, so Y's, is 0 */
            float *got = malloc((size_t)y.count * sizeof *got);
            assert_non_null(got);
            assert_int_equal(vkattn_tensor_download(y.gpu, got, VKATTN_DTYPE_F32), VKATTN_OK);
            for (int64_t b = 0; b < c->B; b++)
                for (int64_t n = 0; n < c->C_out; n++)
                    assert_true(got[b * c->T * c->C_out + n] == 0.0f);
            free(got);
        }
    }
    pair_destroy(&x);
    pair_destroy(&w_qkv);
    pair_destroy(&b_qkv);
    pair_destroy(&w_out);
    pair_destroy(&b_out);
    pair_destroy(&y);
    if (c->variants) {
        pair_destroy(&sinks);
        pair_destroy(&alibi);
    }
    if (c->mask)
        pair_destroy(&mask);
}

#define F32 VKATTN_DTYPE_F32
#define F16 VKATTN_DTYPE_F16
#define BF16 VKATTN_DTYPE_BF16

static void test_cases(void **state)
{
    test_env *env = *state;
    rng r = {31};
    static const mha_case cases[] = {
        /* name                 B   T   C   H  Dh C_out b_qkv b_out causal dtype variants mask compute */
        {"seed shape",          4,  8, 16,  8, 32,  16, true,  true,  true,  F32, false, 0, F32},
        {"T=1",                 2,  1, 32,  4,  8,  32, true,  true,  true,  F32, false, 0, F32},
        {"no biases",           1, 13, 24,  3, 16,  24, false, false, true,  F32, false, 0, F32},
        {"non-causal",          2, 21, 20,  2, 40,  20, true,  false, false, F32, false, 0, F32},
        {"odd Dh, C_out != C",  1, 17, 10,  3,  5,   7, false, true,  true,  F32, false, 0, F32},
        {"one head",            3, 30, 64,  1, 64,  64, true,  true,  true,  F32, false, 0, F32},
        {"f16",                 2, 19, 32,  4, 16,  32, true,  true,  true,  F16, false, 0, F32},
        {"bf16",                2, 19, 32,  4, 16,  32, true,  true,  true,  BF16, false, 0, F32},
        {"bf16 T=1 odd Dh",     1,  1, 10,  3,  5,   7, true,  false, true,  BF16, false, 0, F32},
        {"bf16 ragged",         1, 37, 20,  2, 24,  13, false, true,  false, BF16, false, 0, F32},
        {"longer",              1, 200, 64, 4, 32,  64, true,  true,  true,  F32, false, 0, F32},
        {"variants",            2, 23, 32,  4, 16,  32, true,  true,  true,  F32, true, 0, F32},
        {"variants non-causal", 1, 17, 20,  2,  8,  20, false, true,  false, F16, true, 0, F32},
        {"mask (T, T)",         2, 11, 16,  2,  8,  16, true,  false, false, F32, false, 2, F32},
        {"mask (H, T, T) causal", 2, 9, 12, 3,  5,  12, false, true,  true,  F16, false, 3, F32},
        {"mask (B, 1, 1, T) T=1", 3, 1, 8,  2,  4,   8, true,  true,  true,  F32, false, 4, F32},
        {"mask and variants",   2, 23, 32,  4, 16,  32, true,  true,  true,  BF16, true, 4, F32},
        /* the compute dtype, alone and with the rest */
        {"f16 compute",         2, 19, 32,  4, 16,  32, true,  true,  true,  F32, false, 0, F16},
        {"f16 compute, f16 inputs", 1, 70, 48, 2, 24, 40, true, false, true, F16, false, 0, F16},
        {"bf16 compute T=1 odd Dh", 2, 1, 10, 3, 5,   7, true,  true,  true,  F32, false, 0, BF16},
        {"bf16 compute, f16 inputs", 1, 37, 20, 2, 24, 13, false, true, false, F16, false, 0, BF16},
        {"f16 compute, mask and variants", 2, 23, 32, 4, 16, 32, true, true, true, BF16, true, 3, F16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(env, &cases[i], &r);
}

/* vkattn_mha_choose names what the layer's attention step runs: AUTO's choice
 * is the one vkattn_attention_choose gives the same problem over BSHD tensors
 * (B, T, H, Dh) of the application's own; the unfused path where asked; the
 * fused path with variants; AUTO on the CPU backend; and the layer's argument
 * errors and a forced fused path that cannot run, as vkattn_mha returns them. */
static void test_choice(void **state)
{
    test_env *env = *state;
    rng r = {32};
    const int64_t B = 2, T = 45, C = 24, H = 3, Dh = 8;
    int64_t xs[3] = {B, T, C}, wq[2] = {3 * H * Dh, C}, wo[2] = {C, H * Dh}, bad_wo[2] = {C, 5};
    int64_t heads[4] = {B, T, H, Dh};
    pair x = pair_random(env, VKATTN_DTYPE_F32, 3, xs, &r, -1.0f, 1.0f);
    pair w_qkv = pair_random(env, VKATTN_DTYPE_F32, 2, wq, &r, -0.2f, 0.2f);
    pair w_out = pair_random(env, VKATTN_DTYPE_F32, 2, wo, &r, -0.2f, 0.2f);
    pair w_bad = pair_random(env, VKATTN_DTYPE_F32, 2, bad_wo, &r, -0.2f, 0.2f);
    pair y = pair_output(env, 3, xs);
    pair q = pair_random(env, VKATTN_DTYPE_F32, 4, heads, &r, -1.0f, 1.0f);
    pair o = pair_output(env, 4, heads);

    vkattn_attention_choice layer, alone;
    vkattn_mha_desc d = {.heads = (int32_t)H, .causal = true};
    assert_int_equal(vkattn_mha_choose(env->gpu, &d, x.gpu, w_qkv.gpu, NULL, w_out.gpu, NULL,
                                       y.gpu, &layer),
                     VKATTN_OK);
    vkattn_attention_desc ad = {.layout = VKATTN_LAYOUT_BSHD, .causal = true};
    assert_int_equal(vkattn_attention_choose(env->gpu, &ad, q.gpu, q.gpu, q.gpu, o.gpu, &alone),
                     VKATTN_OK);
    assert_int_equal(layer.path, VKATTN_PATH_FUSED);
    assert_int_equal(layer.fused_variant, alone.fused_variant);
    assert_int_equal(layer.kv_splits, alone.kv_splits);
    assert_int_equal(layer.weights_dtype, alone.weights_dtype);
    /* and the layer then runs, on the scratch the choice may have made */
    assert_int_equal(vkattn_mha(env->gpu, &d, x.gpu, w_qkv.gpu, NULL, w_out.gpu, NULL, y.gpu),
                     VKATTN_OK);
    assert_int_equal(vkattn_mha(env->cpu, &d, x.cpu, w_qkv.cpu, NULL, w_out.cpu, NULL, y.cpu),
                     VKATTN_OK);
    expect_close("after vkattn_mha_choose", &y, 1e-5, 0.0, NULL);

    d.path = VKATTN_PATH_UNFUSED;
    assert_int_equal(vkattn_mha_choose(env->gpu, &d, x.gpu, w_qkv.gpu, NULL, w_out.gpu, NULL,
                                       y.gpu, &layer),
                     VKATTN_OK);
    assert_int_equal(layer.path, VKATTN_PATH_UNFUSED);
    d = (vkattn_mha_desc){.heads = (int32_t)H, .path = VKATTN_PATH_FUSED, .has_window = true,
                          .window_left = 3, .window_right = 2, .softcap = 5.0f};
    assert_int_equal(vkattn_mha_choose(env->gpu, &d, x.gpu, w_qkv.gpu, NULL, w_out.gpu, NULL,
                                       y.gpu, &layer),
                     VKATTN_OK);
    assert_int_equal(layer.path, VKATTN_PATH_FUSED);
    assert_true(layer.kv_splits >= 1);
    assert_int_equal(vkattn_mha_choose(env->cpu, &d, x.cpu, w_qkv.cpu, NULL, w_out.cpu, NULL,
                                       y.cpu, &layer),
                     VKATTN_OK);
    assert_int_equal(layer.path, VKATTN_PATH_AUTO);

    /* The layer's errors, with the layer's statuses and messages. */
    assert_int_equal(vkattn_mha_choose(env->gpu, &d, x.gpu, w_qkv.gpu, NULL, w_bad.gpu, NULL,
                                       y.gpu, &layer),
                     VKATTN_ERROR_SHAPE_MISMATCH);
    assert_non_null(strstr(vkattn_last_error(env->gpu), "mha: W_out is"));
    assert_int_equal(vkattn_mha_choose(env->gpu, &d, x.gpu, w_qkv.gpu, NULL, w_out.gpu, NULL,
                                       y.gpu, NULL),
                     VKATTN_ERROR_INVALID_ARGUMENT);
    assert_int_equal(vkattn_mha_choose(env->gpu, NULL, x.gpu, w_qkv.gpu, NULL, w_out.gpu, NULL,
                                       y.gpu, &layer),
                     VKATTN_ERROR_INVALID_ARGUMENT);
    assert_int_equal(vkattn_mha_choose(NULL, &d, x.gpu, w_qkv.gpu, NULL, w_out.gpu, NULL, y.gpu,
                                       &layer),
                     VKATTN_ERROR_INVALID_ARGUMENT);
    d.heads = 0;
    assert_int_equal(vkattn_mha_choose(env->gpu, &d, x.gpu, w_qkv.gpu, NULL, w_out.gpu, NULL,
                                       y.gpu, &layer),
                     VKATTN_ERROR_INVALID_ARGUMENT);

    /* A forced fused path that no kernel runs (a head size of 600: the tiled
     * kernel takes up to 576) is refused by both, vkattn_mha before it
     * records its projections. */
    int64_t wide_qkv[2] = {3 * 600, C}, wide_out[2] = {C, 600};
    pair w_wide = pair_random(env, VKATTN_DTYPE_F32, 2, wide_qkv, &r, -0.1f, 0.1f);
    pair w_wide_out = pair_random(env, VKATTN_DTYPE_F32, 2, wide_out, &r, -0.1f, 0.1f);
    d = (vkattn_mha_desc){.heads = 1, .path = VKATTN_PATH_FUSED};
    assert_int_equal(vkattn_mha_choose(env->gpu, &d, x.gpu, w_wide.gpu, NULL, w_wide_out.gpu,
                                       NULL, y.gpu, &layer),
                     VKATTN_ERROR_UNSUPPORTED);
    assert_int_equal(vkattn_mha(env->gpu, &d, x.gpu, w_wide.gpu, NULL, w_wide_out.gpu, NULL,
                                y.gpu),
                     VKATTN_ERROR_UNSUPPORTED);
    assert_non_null(strstr(vkattn_last_error(env->gpu), "fused path"));
    d.path = VKATTN_PATH_AUTO; /* which takes the unfused path */
    assert_int_equal(vkattn_mha(env->gpu, &d, x.gpu, w_wide.gpu, NULL, w_wide_out.gpu, NULL,
                                y.gpu),
                     VKATTN_OK);
    pair_destroy(&w_wide);
    pair_destroy(&w_wide_out);

    pair_destroy(&x);
    pair_destroy(&w_qkv);
    pair_destroy(&w_out);
    pair_destroy(&w_bad);
    pair_destroy(&y);
    pair_destroy(&q);
    pair_destroy(&o);
}

/* The compute dtype rounds v and the heads' output, exactly: with q = k = 0
 * every key weighs 1/T (exact), v = X and W_out = I, so Y is the mean of the
 * rounded v over the keys, rounded again, and every step on the way is exact
 * in f32. X's values 1 + m 2^-13 (f16) or 1 + m 2^-10 (bf16) fall between the
 * 16-bit numbers, so a layer that left either rounding out is off by a
 * quarter of a spacing or more, far beyond the 1e-6 allowed. */
/* v in [1, 2) to the nearest 16-bit number, ties to even (rint's default
 * mode): there the numbers are the multiples of the spacing. */
static float round_in_one_two(float v, vkattn_dtype dtype)
{
    double s = spacing(dtype);
    return (float)(rint(v / s) * s);
}

static void test_compute_rounding(void **state)
{
    test_env *env = *state;
    rng r = {33};
    enum { B = 2, T = 8, H = 2, Dh = 4, W = H * Dh };
    int64_t xs[3] = {B, T, W}, wq[2] = {3 * W, W}, wo[2] = {W, W};
    pair x = pair_random(env, VKATTN_DTYPE_F32, 3, xs, &r, 0.0f, 1.0f);
    pair w_qkv = pair_random(env, VKATTN_DTYPE_F32, 2, wq, &r, 0.0f, 1.0f);
    pair w_out = pair_random(env, VKATTN_DTYPE_F32, 2, wo, &r, 0.0f, 1.0f);
    pair y = pair_output(env, 3, xs);
    for (int n = 0; n < 3 * W; n++) /* q and k rows 0, v's the identity */
        for (int i = 0; i < W; i++)
            w_qkv.host[n * W + i] = n - 2 * W == i ? 1.0f : 0.0f;
    for (int n = 0; n < W; n++)
        for (int i = 0; i < W; i++)
            w_out.host[n * W + i] = n == i ? 1.0f : 0.0f;
    const pair *weights[2] = {&w_qkv, &w_out};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(vkattn_tensor_upload(weights[i]->gpu, weights[i]->host, VKATTN_DTYPE_F32),
                         VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(weights[i]->cpu, weights[i]->host, VKATTN_DTYPE_F32),
                         VKATTN_OK);
    }

    static const vkattn_dtype computes[] = {VKATTN_DTYPE_F16, VKATTN_DTYPE_BF16};
    static const vkattn_attention_path paths[] = {VKATTN_PATH_AUTO, VKATTN_PATH_UNFUSED};
    float expected[B * T * W], exact[B * T * W], got[B * T * W];
    for (int c = 0; c < 2; c++) {
        float step = computes[c] == VKATTN_DTYPE_F16 ? 0x1p-13f : 0x1p-10f;
        for (size_t i = 0; i < x.count; i++)
            x.host[i] = 1.0f + step * (float)(rng_next(&r) % 32);
        assert_int_equal(vkattn_tensor_upload(x.gpu, x.host, VKATTN_DTYPE_F32), VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(x.cpu, x.host, VKATTN_DTYPE_F32), VKATTN_OK);
        /* Y by hand: the mean over the keys of each column, rounded or not */
        double worst_gap = 0.0;
        for (int b = 0; b < B; b++)
            for (int j = 0; j < W; j++) {
                double sum = 0.0, rounded_sum = 0.0;
                for (int t = 0; t < T; t++) {
                    float v = x.host[(b * T + t) * W + j];
                    sum += v;
                    rounded_sum += round_in_one_two(v, computes[c]);
                }
                for (int t = 0; t < T; t++) {
                    size_t at = (size_t)(b * T + t) * W + j;
                    exact[at] = (float)(sum / T);
                    expected[at] = round_in_one_two((float)(rounded_sum / T), computes[c]);
                    double gap = fabs((double)expected[at] - exact[at]);
                    worst_gap = gap > worst_gap ? gap : worst_gap;
                }
            }
        assert_true(worst_gap > step); /* the data tell the roundings apart */
        for (int backend = 0; backend < 2; backend++)
            for (int p = 0; p < 2; p++)
                for (int keep_f32 = 0; keep_f32 < 2; keep_f32++) {
                    vkattn_mha_desc d = {.heads = H, .path = paths[p],
                                         .compute_dtype = keep_f32 ? VKATTN_DTYPE_F32 : computes[c]};
                    vkattn_context *ctx = backend ? env->cpu : env->gpu;
                    vkattn_tensor *ty = backend ? y.cpu : y.gpu;
                    assert_int_equal(vkattn_mha(ctx, &d, backend ? x.cpu : x.gpu,
                                                backend ? w_qkv.cpu : w_qkv.gpu, NULL,
                                                backend ? w_out.cpu : w_out.gpu, NULL, ty),
                                     VKATTN_OK);
                    assert_int_equal(vkattn_tensor_download(ty, got, VKATTN_DTYPE_F32), VKATTN_OK);
                    const float *want = keep_f32 ? exact : expected;
                    for (size_t i = 0; i < y.count; i++)
                        if (fabsf(got[i] - want[i]) > 1e-6f)
                            fail_msg("%s, %s backend, %s path: Y[%zu] = %.9g, expected %.9g",
                                     keep_f32 ? "f32 compute" : compute_name(computes[c]),
                                     backend ? "CPU" : "Vulkan", p ? "unfused" : "AUTO", i,
                                     (double)got[i], (double)want[i]);
                }
    }

    /* A compute dtype other than f32, f16 and bf16 is refused, naming it. */
    vkattn_mha_desc bad = {.heads = H, .compute_dtype = VKATTN_DTYPE_I32};
    for (int backend = 0; backend < 2; backend++) {
        vkattn_context *ctx = backend ? env->cpu : env->gpu;
        assert_int_equal(vkattn_mha(ctx, &bad, backend ? x.cpu : x.gpu,
                                    backend ? w_qkv.cpu : w_qkv.gpu, NULL,
                                    backend ? w_out.cpu : w_out.gpu, NULL, backend ? y.cpu : y.gpu),
                         VKATTN_ERROR_INVALID_ARGUMENT);
        assert_non_null(strstr(vkattn_last_error(ctx), "compute_dtype is i32"));
    }
    bad.compute_dtype = (vkattn_dtype)77;
    vkattn_attention_choice choice;
    assert_int_equal(vkattn_mha_choose(env->gpu, &bad, x.gpu, w_qkv.gpu, NULL, w_out.gpu, NULL,
                                       y.gpu, &choice),
                     VKATTN_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(vkattn_last_error(env->gpu), "(77)"));
    pair_destroy(&x);
    pair_destroy(&w_qkv);
    pair_destroy(&w_out);
    pair_destroy(&y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_choice),
        cmocka_unit_test(test_compute_rounding),
    };
    return test_run_group(tests, test_env_setup, test_env_teardown);
}
