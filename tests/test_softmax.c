/* Causal-masked scaled softmax on the GPU (both variants) against the CPU reference. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sm_case {
    const char *name;
    int ndim;
    int64_t shape[4];
    float scale;          /* 0 = default 1 */
    bool causal;
    bool has_q_offset;
    int64_t q_offset;
    bool kv_len;          /* random lengths per outermost index, some 0 */
    bool in_place;
    vkattn_dtype dtype;
    float magnitude;
} sm_case;

static void run_case(test_env *env, const sm_case *c, vkattn_softmax_variant variant, rng *r)
{
    float m = c->magnitude;
    pair x = pair_random(env, c->dtype, c->ndim, c->shape, r, -m, m);
    pair y = c->in_place ? x : pair_output(env, c->ndim, c->shape);

    int64_t n = c->ndim >= 3 ? c->shape[0] : 1;
    int64_t Tk = c->shape[c->ndim - 1];
    vkattn_tensor *kv_gpu = NULL, *kv_cpu = NULL;
    if (c->kv_len) {
        int32_t lens[64];
        for (int64_t i = 0; i < n; i++)
            lens[i] = i == 0 ? 0 : rng_int(r, 1, (int)Tk + 2); /* 0, and past Tk: clamped */
        vkattn_tensor_desc kd = {.dtype = VKATTN_DTYPE_I32, .ndim = 1, .shape = {n}};
        assert_int_equal(vkattn_tensor_create(env->gpu, &kd, &kv_gpu), VKATTN_OK);
        assert_int_equal(vkattn_tensor_create(env->cpu, &kd, &kv_cpu), VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(kv_gpu, lens, VKATTN_DTYPE_I32), VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(kv_cpu, lens, VKATTN_DTYPE_I32), VKATTN_OK);
    }

    vkattn_softmax_desc d = {
        .scale = c->scale, .causal = c->causal, .has_q_offset = c->has_q_offset,
        .q_offset = c->q_offset, .kv_len = kv_gpu, .variant = variant,
    };
    vkattn_status s = vkattn_softmax(env->gpu, &d, x.gpu, y.gpu);
    if (s != VKATTN_OK)
        fail_msg("%s: %s", c->name, vkattn_last_error(env->gpu));
    d.kv_len = kv_cpu;
    assert_int_equal(vkattn_softmax(env->cpu, &d, x.cpu, y.cpu), VKATTN_OK);

    /* exp() on GPUs is accurate to a few ulps of its argument's size. f16 and bf16
     * inputs are rounded once, on upload, and both sides read those values, so
     * the bound is the f32 one whatever the input dtype. */
    expect_close(c->name, &y, 2e-6, 2e-5, NULL);

    if (c->kv_len) {
        vkattn_tensor_destroy(kv_gpu);
        vkattn_tensor_destroy(kv_cpu);
    }
    if (!c->in_place)
        pair_destroy(&y);
    pair_destroy(&x);
}

static const sm_case fixed_cases[] = {
    /* name                nd shape               scale  causal q_off? q_off kv    inplace dtype          mag */
    {"single element",      2, {1, 1},             0.f,   false, false, 0,   false, false, VKATTN_DTYPE_F32, 1.f},
    {"T=1 causal",          2, {1, 1},             0.f,   true,  false, 0,   false, false, VKATTN_DTYPE_F32, 1.f},
    {"one row long",        2, {1, 1000},          0.125f,false, false, 0,   false, false, VKATTN_DTYPE_F32, 3.f},
    {"causal square",       3, {4, 37, 37},        0.3f,  true,  false, 0,   false, false, VKATTN_DTYPE_F32, 3.f},
    {"causal Tq<Tk",        4, {2, 3, 5, 29},      0.f,   true,  false, 0,   false, false, VKATTN_DTYPE_F32, 3.f},
    {"causal Tq>Tk (masked rows)", 3, {2, 20, 7},  0.f,   true,  false, 0,   false, false, VKATTN_DTYPE_F32, 3.f},
    {"top-left q_offset=0", 4, {2, 2, 6, 19},      0.f,   true,  true,  0,   false, false, VKATTN_DTYPE_F32, 3.f},
    {"negative q_offset",   3, {1, 9, 9},          0.f,   true,  true,  -3,  false, false, VKATTN_DTYPE_F32, 3.f},
    {"kv_len padding",      4, {5, 2, 7, 33},      0.f,   false, false, 0,   true,  false, VKATTN_DTYPE_F32, 3.f},
    {"kv_len + causal",     4, {4, 3, 11, 11},     0.5f,  true,  false, 0,   true,  false, VKATTN_DTYPE_F32, 3.f},
    {"in place",            3, {3, 17, 45},        0.f,   true,  false, 0,   false, true,  VKATTN_DTYPE_F32, 3.f},
    {"f16 input",           4, {2, 2, 13, 70},     0.f,   true,  false, 0,   false, false, VKATTN_DTYPE_F16, 3.f},
    {"bf16 input",          4, {2, 2, 13, 70},     0.f,   true,  false, 0,   false, false, VKATTN_DTYPE_BF16, 3.f},
    {"bf16 T=1",            2, {1, 1},             0.f,   true,  false, 0,   false, false, VKATTN_DTYPE_BF16, 3.f},
    {"bf16 vec4 kv_len",    4, {3, 2, 9, 36},      0.7f,  true,  false, 0,   true,  false, VKATTN_DTYPE_BF16, 3.f},
    {"bf16 odd rows",       3, {2, 5, 33},         0.f,   false, true,  0,   false, false, VKATTN_DTYPE_BF16, 3.f},
    {"bf16 magnitude 1e5",  3, {2, 8, 257},        0.37f, true,  false, 0,   false, false, VKATTN_DTYPE_BF16, 1e5f},
    {"magnitude 1e4",       3, {4, 16, 300},       0.f,   false, false, 0,   false, false, VKATTN_DTYPE_F32, 1e4f},
    {"magnitude 1e4 scaled",3, {2, 8, 257},        0.37f, true,  false, 0,   false, false, VKATTN_DTYPE_F32, 1e4f},
    {"many rows",           4, {8, 8, 64, 24},     0.f,   false, false, 0,   false, false, VKATTN_DTYPE_F32, 3.f},
    {"wide rows",           2, {3, 5000},          0.f,   true,  true,  2500,false, false, VKATTN_DTYPE_F32, 3.f},
};

static void test_fixed_cases(void **state)
{
    test_env *env = *state;
    rng r = {3};
    for (size_t i = 0; i < sizeof fixed_cases / sizeof fixed_cases[0]; i++) {
        run_case(env, &fixed_cases[i], VKATTN_SOFTMAX_AUTO, &r);
        run_case(env, &fixed_cases[i], VKATTN_SOFTMAX_SHARED, &r);
    }
}

static void test_random_sweep(void **state)
{
    test_env *env = *state;
    rng r = {424242};
    for (int i = 0; i < 40; i++) {
        char name[160];
        sm_case c = {.name = name, .ndim = rng_int(&r, 2, 4)};
        for (int k = 0; k < c.ndim - 2; k++)
            c.shape[k] = rng_int(&r, 1, 5);
        c.shape[c.ndim - 2] = rng_int(&r, 1, 40);
        c.shape[c.ndim - 1] = rng_int(&r, 1, 200);
        c.scale = rng_int(&r, 0, 1) ? 0.0f : rng_uniform(&r, 0.01f, 2.0f);
        c.causal = rng_int(&r, 0, 1);
        c.has_q_offset = rng_int(&r, 0, 2) == 0;
        c.q_offset = rng_int(&r, -5, 50);
        c.kv_len = rng_int(&r, 0, 2) == 0;
        c.in_place = rng_int(&r, 0, 4) == 0;
        int dtype_pick = c.in_place ? 9 : rng_int(&r, 0, 5);
        c.dtype = dtype_pick == 0   ? VKATTN_DTYPE_F16
                  : dtype_pick == 1 ? VKATTN_DTYPE_BF16
                                    : VKATTN_DTYPE_F32;
        c.magnitude = rng_int(&r, 0, 4) == 0 ? 5000.0f : 4.0f;
        snprintf(name, sizeof name,
                 "random %d: %dD %lldx%lld scale %g causal %d q_offset %s%lld kv %d dtype %d", i,
                 c.ndim, (long long)c.shape[c.ndim - 2], (long long)c.shape[c.ndim - 1],
                 (double)c.scale, c.causal, c.has_q_offset ? "" : "default/", (long long)c.q_offset,
                 c.kv_len, (int)c.dtype);
        run_case(env, &c, i % 3 == 2 ? VKATTN_SOFTMAX_SHARED : VKATTN_SOFTMAX_AUTO, &r);
    }
}

/* Rows of NaN and +-Inf: IEEE propagation, same as the reference, never a hang. */
static void test_non_finite(void **state)
{
    test_env *env = *state;
    int64_t shape[2] = {4, 9};
    float host[36];
    for (int i = 0; i < 36; i++)
        host[i] = (float)(i % 5) - 2.0f;
    host[2] = NAN;              /* row 0: NaN -> all NaN */
    host[9 + 4] = INFINITY;     /* row 1: +Inf -> NaN (inf - inf) */
    for (int j = 0; j < 9; j++)
        host[18 + j] = -INFINITY; /* row 2: all -Inf -> zeros */
    host[27 + 8] = -INFINITY;   /* row 3: one -Inf -> weight 0 there */
    pair x = pair_output(env, 2, shape);
    pair y = pair_output(env, 2, shape);
    assert_int_equal(vkattn_tensor_upload(x.gpu, host, VKATTN_DTYPE_F32), VKATTN_OK);
    assert_int_equal(vkattn_tensor_upload(x.cpu, host, VKATTN_DTYPE_F32), VKATTN_OK);
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(env->gpu, &info), VKATTN_OK);
    /* The subgroup variant runs where subgroups are whole: a required size or
     * one size (softmax.c). */
    bool subgroup_variant = info.subgroup_arithmetic &&
                            (info.subgroup_size_required ||
                             info.subgroup_size_min == info.subgroup_size_max);
    for (int v = VKATTN_SOFTMAX_AUTO; v <= VKATTN_SOFTMAX_SHARED; v++) {
        vkattn_softmax_desc d = {.variant = (vkattn_softmax_variant)v};
        if (v == VKATTN_SOFTMAX_SUBGROUP && !subgroup_variant) {
            assert_int_equal(vkattn_softmax(env->gpu, &d, x.gpu, y.gpu),
                             VKATTN_ERROR_UNSUPPORTED);
            continue;
        }
        assert_int_equal(vkattn_softmax(env->gpu, &d, x.gpu, y.gpu), VKATTN_OK);
        assert_int_equal(vkattn_softmax(env->cpu, &d, x.cpu, y.cpu), VKATTN_OK);
        expect_close("non-finite rows", &y, 2e-6, 2e-5, NULL);
        float out[36];
        assert_int_equal(vkattn_tensor_download(y.gpu, out, VKATTN_DTYPE_F32), VKATTN_OK);
        assert_true(isnan(out[0]) && isnan(out[8]));
        assert_true(isnan(out[9]));
        assert_true(out[18] == 0.0f && out[26] == 0.0f);
        assert_true(out[35] == 0.0f && out[27] > 0.0f);
    }
    pair_destroy(&x);
    pair_destroy(&y);
}

/* Each row sums to 1 and masked entries are exactly 0 (independent of the reference). */
static void test_row_invariants(void **state)
{
    test_env *env = *state;
    rng r = {99};
    int64_t shape[3] = {2, 12, 10};
    pair x = pair_random(env, VKATTN_DTYPE_F32, 3, shape, &r, -5.f, 5.f);
    pair y = pair_output(env, 3, shape);
    vkattn_softmax_desc d = {.causal = true}; /* q_offset default Tk - Tq = -2 */
    assert_int_equal(vkattn_softmax(env->gpu, &d, x.gpu, y.gpu), VKATTN_OK);
    float out[240];
    assert_int_equal(vkattn_tensor_download(y.gpu, out, VKATTN_DTYPE_F32), VKATTN_OK);
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 12; i++) {
            double sum = 0;
            for (int j = 0; j < 10; j++) {
                float v = out[(b * 12 + i) * 10 + j];
                if (j > i - 2)
                    assert_true(v == 0.0f);
                sum += v;
            }
            if (i < 2)
                assert_true(sum == 0.0); /* no allowed key */
            else
                assert_true(fabs(sum - 1.0) < 1e-5);
        }
    pair_destroy(&x);
    pair_destroy(&y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_cases),
        cmocka_unit_test(test_random_sweep),
        cmocka_unit_test(test_non_finite),
        cmocka_unit_test(test_row_invariants),
    };
    return test_run_group(tests, test_env_setup, test_env_teardown);
}
