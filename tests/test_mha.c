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
} mha_case;

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

    vkattn_mha_desc d = {.heads = (int32_t)c->H, .causal = c->causal};
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

    static const vkattn_attention_path paths[] = {VKATTN_PATH_AUTO, VKATTN_PATH_UNFUSED};
    for (int i = 0; i < 2; i++) {
        char name[160];
        snprintf(name, sizeof name, "%s [B%lld T%lld C%lld H%lld Dh%lld C_out%lld, %s]", c->name,
                 (long long)c->B, (long long)c->T, (long long)c->C, (long long)c->H,
                 (long long)c->Dh, (long long)c->C_out, i ? "unfused" : "auto");
        assert_int_equal(vkattn_tensor_upload(y.gpu, y.host, VKATTN_DTYPE_F32), VKATTN_OK);
        d.path = paths[i];
        vkattn_status s = vkattn_mha(env->gpu, &d, x.gpu, w_qkv.gpu, b_qkv.gpu, w_out.gpu,
                                     b_out.gpu, y.gpu);
        if (s != VKATTN_OK)
            fail_msg("%s: %s", name, vkattn_last_error(env->gpu));
        expect_close(name, &y, atol, 0.0, NULL);
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

static void test_cases(void **state)
{
    test_env *env = *state;
    rng r = {31};
    static const mha_case cases[] = {
        /* name                 B   T   C   H  Dh C_out b_qkv b_out causal dtype  variants mask */
        {"seed shape",          4,  8, 16,  8, 32,  16, true,  true,  true,  VKATTN_DTYPE_F32, false, 0},
        {"T=1",                 2,  1, 32,  4,  8,  32, true,  true,  true,  VKATTN_DTYPE_F32, false, 0},
        {"no biases",           1, 13, 24,  3, 16,  24, false, false, true,  VKATTN_DTYPE_F32, false, 0},
        {"non-causal",          2, 21, 20,  2, 40,  20, true,  false, false, VKATTN_DTYPE_F32, false, 0},
        {"odd Dh, C_out != C",  1, 17, 10,  3,  5,   7, false, true,  true,  VKATTN_DTYPE_F32, false, 0},
        {"one head",            3, 30, 64,  1, 64,  64, true,  true,  true,  VKATTN_DTYPE_F32, false, 0},
        {"f16",                 2, 19, 32,  4, 16,  32, true,  true,  true,  VKATTN_DTYPE_F16, false, 0},
        {"bf16",                2, 19, 32,  4, 16,  32, true,  true,  true,  VKATTN_DTYPE_BF16, false, 0},
        {"bf16 T=1 odd Dh",     1,  1, 10,  3,  5,   7, true,  false, true,  VKATTN_DTYPE_BF16, false, 0},
        {"bf16 ragged",         1, 37, 20,  2, 24,  13, false, true,  false, VKATTN_DTYPE_BF16, false, 0},
        {"longer",              1, 200, 64, 4, 32,  64, true,  true,  true,  VKATTN_DTYPE_F32, false, 0},
        {"variants",            2, 23, 32,  4, 16,  32, true,  true,  true,  VKATTN_DTYPE_F32, true, 0},
        {"variants non-causal", 1, 17, 20,  2,  8,  20, false, true,  false, VKATTN_DTYPE_F16, true, 0},
        {"mask (T, T)",         2, 11, 16,  2,  8,  16, true,  false, false, VKATTN_DTYPE_F32, false, 2},
        {"mask (H, T, T) causal", 2, 9, 12, 3,  5,  12, false, true,  true,  VKATTN_DTYPE_F16, false, 3},
        {"mask (B, 1, 1, T) T=1", 3, 1, 8,  2,  4,   8, true,  true,  true,  VKATTN_DTYPE_F32, false, 4},
        {"mask and variants",   2, 23, 32,  4, 16,  32, true,  true,  true,  VKATTN_DTYPE_BF16, true, 4},
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_choice),
    };
    return test_run_group(tests, test_env_setup, test_env_teardown);
}
