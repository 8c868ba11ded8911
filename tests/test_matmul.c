/* Tiled and naive matmul on the GPU against the CPU reference. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { B_SHARED, B_PER_BATCH, B_GROUPED } b_mode;

typedef struct mm_case {
    const char *name;
    int64_t batch0, batch1;   /* A's leading dims (0 = absent) */
    int64_t M, N, K;
    bool transpose_b, bias;
    b_mode b;
    int64_t group;            /* with B_GROUPED: A batch1 / B batch1 */
    vkattn_dtype a_type, b_type;
    float alpha;
    float magnitude;
} mm_case;

/* The case with a bias of `bias_type`. */
static double run_typed(test_env *env, const mm_case *c, vkattn_dtype bias_type,
                        vkattn_matmul_variant variant, rng *r)
{
    int64_t a_shape[4], b_shape[4], c_shape[4];
    int nd = 0;
    if (c->batch0)
        a_shape[nd++] = c->batch0;
    if (c->batch1)
        a_shape[nd++] = c->batch1;
    int lead = nd;
    for (int i = 0; i < lead; i++)
        b_shape[i] = c_shape[i] = a_shape[i];
    a_shape[lead] = c->M, a_shape[lead + 1] = c->K;
    c_shape[lead] = c->M, c_shape[lead + 1] = c->N;
    int b_nd = c->b == B_SHARED ? 2 : lead + 2;
    int b_lead = b_nd - 2;
    if (c->b == B_GROUPED)
        b_shape[b_lead - 1] = a_shape[lead - 1] / c->group;
    b_shape[b_lead] = c->transpose_b ? c->N : c->K;
    b_shape[b_lead + 1] = c->transpose_b ? c->K : c->N;

    float m = c->magnitude;
    pair a = pair_random(env, c->a_type, lead + 2, a_shape, r, -m, m);
    pair b = pair_random(env, c->b_type, b_nd, b_shape, r, -1.0f, 1.0f);
    int64_t n_shape[1] = {c->N};
    pair bias = {0};
    if (c->bias)
        bias = pair_random(env, bias_type, 1, n_shape, r, -m, m);
    pair out = pair_output(env, lead + 2, c_shape);

    vkattn_matmul_desc d = {.transpose_b = c->transpose_b, .alpha = c->alpha, .variant = variant};
    vkattn_status s = vkattn_matmul(env->gpu, &d, a.gpu, b.gpu, bias.gpu, out.gpu);
    if (s != VKATTN_OK)
        fail_msg("%s: %s", c->name, vkattn_last_error(env->gpu));
    assert_int_equal(vkattn_matmul(env->cpu, &d, a.cpu, b.cpu, bias.cpu, out.cpu), VKATTN_OK);

    /* The error scale of each output: |alpha| * sum_k |a_mk b_kn| + |bias_n|,
     * computed by the reference on absolute values. */
    for (size_t i = 0; i < a.count; i++)
        a.host[i] = fabsf(a.host[i]);
    for (size_t i = 0; i < b.count; i++)
        b.host[i] = fabsf(b.host[i]);
    assert_int_equal(vkattn_tensor_upload(a.cpu, a.host, VKATTN_DTYPE_F32), VKATTN_OK);
    assert_int_equal(vkattn_tensor_upload(b.cpu, b.host, VKATTN_DTYPE_F32), VKATTN_OK);
    vkattn_tensor *abs_bias = NULL;
    if (c->bias) {
        for (size_t i = 0; i < bias.count; i++)
            bias.host[i] = fabsf(bias.host[i]);
        assert_int_equal(vkattn_tensor_upload(bias.cpu, bias.host, VKATTN_DTYPE_F32), VKATTN_OK);
        abs_bias = bias.cpu;
    }
    vkattn_matmul_desc abs_d = d;
    abs_d.alpha = fabsf(c->alpha == 0.0f ? 1.0f : c->alpha);
    pair scale = pair_output(env, lead + 2, c_shape);
    assert_int_equal(vkattn_matmul(env->cpu, &abs_d, a.cpu, b.cpu, abs_bias, scale.cpu), VKATTN_OK);
    assert_int_equal(vkattn_tensor_download(scale.cpu, scale.host, VKATTN_DTYPE_F32), VKATTN_OK);

    /* f32 accumulation: a few ulps of the scale, growing like sqrt(K). f16 and
     * bf16 inputs are rounded once, on upload, and both sides read those
     * values, so the bound is the f32 one whatever the input dtypes. */
    double rtol = 4 * 1.2e-7 * (2.0 + sqrt((double)c->K));
    double err = expect_close(c->name, &out, 1e-30, rtol, scale.host);

    pair_destroy(&a);
    pair_destroy(&b);
    pair_destroy(&bias);
    pair_destroy(&out);
    pair_destroy(&scale);
    return err;
}

/* The case with an f32 bias. */
static double run_case(test_env *env, const mm_case *c, vkattn_matmul_variant variant, rng *r)
{
    return run_typed(env, c, VKATTN_DTYPE_F32, variant, r);
}

static const mm_case fixed_cases[] = {
    /* name              b0 b1   M    N    K   trB   bias  B mode       grp A type           B type           alpha  mag */
    {"1x1x1",            0, 0,   1,   1,   1,  false, false, B_SHARED,    1, VKATTN_DTYPE_F32, VKATTN_DTYPE_F32, 0.f, 1.f},
    {"row vector",       0, 0,   1, 130,  77,  false, true,  B_SHARED,    1, VKATTN_DTYPE_F32, VKATTN_DTYPE_F32, 0.f, 1.f},
    {"column",           0, 0, 131,   1,  65,  true,  false, B_SHARED,    1, VKATTN_DTYPE_F32, VKATTN_DTYPE_F32, 0.f, 1.f},
    {"K=1",              0, 0,  70,  90,   1,  false, false, B_SHARED,    1, VKATTN_DTYPE_F32, VKATTN_DTYPE_F32, 0.f, 1.f},
    {"tile multiple",    0, 0, 128, 128,  64,  false, false, B_SHARED,    1, VKATTN_DTYPE_F32, VKATTN_DTYPE_F32, 0.f, 1.f},
    {"ragged",           0, 0,  97, 113, 203,  false, true,  B_SHARED,    1, VKATTN_DTYPE_F32, VKATTN_DTYPE_F32, 0.5f, 1.f},
    {"linear layer",     4, 0,  33,  48,  17,  true,  true,  B_SHARED,    1, VKATTN_DTYPE_F32, VKATTN_DTYPE_F32, 0.f, 1.f},
    {"batched QK^T",     2, 3,  19,  23,  40,  true,  false, B_PER_BATCH, 1, VKATTN_DTYPE_F32, VKATTN_DTYPE_F32, 0.158f, 1.f},
    {"GQA P@V",          2, 8,  21,  24,  29,  false, false, B_GROUPED,   4, VKATTN_DTYPE_F32, VKATTN_DTYPE_F32, 0.f, 1.f},
    {"MQA",              3, 6,  17,   9,  33,  true,  false, B_GROUPED,   6, VKATTN_DTYPE_F32, VKATTN_DTYPE_F32, 0.f, 1.f},
    {"many batches",     0, 700,  3,   5,   7,  false, false, B_PER_BATCH, 1, VKATTN_DTYPE_F32, VKATTN_DTYPE_F32, 0.f, 1.f},
    {"f16 inputs",       2, 0,  45,  37,  51,  true,  true,  B_SHARED,    1, VKATTN_DTYPE_F16, VKATTN_DTYPE_F16, 0.f, 1.f},
    {"f16 odd sizes",    0, 3,   5,   3,   7,  false, false, B_PER_BATCH, 1, VKATTN_DTYPE_F16, VKATTN_DTYPE_F32, 0.f, 1.f},
    {"large magnitude",  0, 0,  40,  50,  60,  false, true,  B_SHARED,    1, VKATTN_DTYPE_F32, VKATTN_DTYPE_F32, 0.f, 1e4f},
    {"bf16 K=1",         0, 0,  70,  90,   1,  false, false, B_SHARED,    1, VKATTN_DTYPE_BF16, VKATTN_DTYPE_BF16, 0.f, 1.f},
    {"bf16 odd sizes",   0, 3,   5,   3,   7,  false, false, B_PER_BATCH, 1, VKATTN_DTYPE_BF16, VKATTN_DTYPE_F32, 0.f, 1.f},
    {"bf16 A, f16 B GQA",2, 8,  21,  24,  29,  false, false, B_GROUPED,   4, VKATTN_DTYPE_BF16, VKATTN_DTYPE_F16, 0.f, 1.f},
    /* Mixed f32 and bf16 where the texel kernel reads four elements a fetch (K
     * and N multiples of 4): a float view beside a view of bits. */
    {"f32 P, bf16 V GQA",2, 8,  21,  64,  48,  false, false, B_GROUPED,   4, VKATTN_DTYPE_F32, VKATTN_DTYPE_BF16, 0.f, 1.f},
    {"bf16 A, f32 B^T",  0, 0,  33,  40,  64,  true,  true,  B_SHARED,    1, VKATTN_DTYPE_BF16, VKATTN_DTYPE_F32, 0.f, 1e3f},
};

/* Biases of other dtypes (the table above has f32 ones). */
static const struct {
    mm_case c;
    vkattn_dtype bias_type;
} bias_dtype_cases[] = {
    {{"bf16 inputs",     2, 0,  45,  37,  51,  true,  true,  B_SHARED,    1, VKATTN_DTYPE_BF16, VKATTN_DTYPE_BF16, 0.f, 1.f}, VKATTN_DTYPE_BF16},
    {{"f32 A, bf16 B^T", 0, 0,  97, 113, 203,  true,  true,  B_SHARED,    1, VKATTN_DTYPE_F32, VKATTN_DTYPE_BF16, 0.5f, 1.f}, VKATTN_DTYPE_F16},
    {{"f32, bf16 bias",  4, 0,  33,  48,  17,  true,  true,  B_SHARED,    1, VKATTN_DTYPE_F32, VKATTN_DTYPE_F32, 0.f, 1.f}, VKATTN_DTYPE_BF16},
    {{"bf16 magnitude 1e5", 0, 0, 40, 50, 60,  false, true,  B_SHARED,    1, VKATTN_DTYPE_BF16, VKATTN_DTYPE_BF16, 0.f, 1e5f}, VKATTN_DTYPE_BF16},
};

static void test_fixed_cases(void **state)
{
    test_env *env = *state;
    rng r = {1};
    for (size_t i = 0; i < sizeof fixed_cases / sizeof fixed_cases[0]; i++) {
        run_case(env, &fixed_cases[i], VKATTN_MATMUL_TILED, &r);
        run_case(env, &fixed_cases[i], VKATTN_MATMUL_NAIVE, &r);
        run_case(env, &fixed_cases[i], VKATTN_MATMUL_TEXEL, &r);
    }
    for (size_t i = 0; i < sizeof bias_dtype_cases / sizeof bias_dtype_cases[0]; i++)
        for (int v = VKATTN_MATMUL_TILED; v <= VKATTN_MATMUL_TEXEL; v++)
            run_typed(env, &bias_dtype_cases[i].c, bias_dtype_cases[i].bias_type,
                      (vkattn_matmul_variant)v, &r);
}

/* f16 or bf16 one time in six each, else f32. */
static vkattn_dtype random_dtype(rng *r)
{
    int pick = rng_int(r, 0, 5);
    return pick == 0 ? VKATTN_DTYPE_F16 : pick == 1 ? VKATTN_DTYPE_BF16 : VKATTN_DTYPE_F32;
}

/* Random shapes around the tile sizes (64x64x16), every option combined. */
static void test_random_sweep(void **state)
{
    test_env *env = *state;
    rng r = {20261121};
    for (int i = 0; i < 40; i++) {
        char name[160];
        mm_case c = {
            .name = name,
            .batch0 = rng_int(&r, 0, 1) ? rng_int(&r, 1, 3) : 0,
            .batch1 = rng_int(&r, 0, 1) ? rng_int(&r, 1, 4) : 0,
            .M = rng_int(&r, 1, 150),
            .N = rng_int(&r, 1, 150),
            .K = rng_int(&r, 1, 100),
            .transpose_b = rng_int(&r, 0, 1),
            .bias = rng_int(&r, 0, 1),
            .a_type = random_dtype(&r),
            .b_type = random_dtype(&r),
            .alpha = rng_int(&r, 0, 1) ? 0.0f : rng_uniform(&r, -2.0f, 2.0f),
            .magnitude = rng_int(&r, 0, 4) == 0 ? 1000.0f : 1.0f,
            .group = 1,
        };
        if (c.batch0 && !c.batch1) { /* keep the leading dims contiguous from the outside */
            c.batch1 = c.batch0;
            c.batch0 = 0;
        }
        int lead = (c.batch0 != 0) + (c.batch1 != 0);
        c.b = lead == 0 ? B_SHARED : (b_mode)rng_int(&r, 0, 2);
        if (c.b == B_GROUPED) {
            c.batch1 *= 2;
            c.group = 2;
        }
        snprintf(name, sizeof name,
                 "random %d: batch %lldx%lld M%lld N%lld K%lld trB%d bias%d B%d a%d b%d alpha %g",
                 i, (long long)c.batch0, (long long)c.batch1, (long long)c.M, (long long)c.N,
                 (long long)c.K, c.transpose_b, c.bias, (int)c.b, (int)c.a_type, (int)c.b_type,
                 (double)c.alpha);
        static const vkattn_matmul_variant rotation[4] = {
            VKATTN_MATMUL_AUTO, VKATTN_MATMUL_TILED, VKATTN_MATMUL_TEXEL, VKATTN_MATMUL_NAIVE};
        run_case(env, &c, rotation[i % 4], &r);
    }
}

/* A bigger square, as the benchmark runs it (checked here for correctness only). */
static void test_square_512(void **state)
{
    test_env *env = *state;
    rng r = {7};
    mm_case c = {"square 512", 0, 0, 512, 512, 512, false, false, B_SHARED, 1,
                 VKATTN_DTYPE_F32, VKATTN_DTYPE_F32, 0.f, 1.f};
    run_case(env, &c, VKATTN_MATMUL_AUTO, &r);
}

/* The cooperative-matrix kernel, built with its matrix operations emulated, on
 * every fixed case with f16 A and B (the kernel's input type), with the matrix
 * shapes GPUs report: 16x16x16 and NVIDIA's 16x8x16. */
static void test_coopmat_emulated(void **state)
{
    test_env *env = *state;
    vkattn_device_info info;
    if (!test_has_float16(env, &info))
        return;
    static const char *shapes[] = {"16x16x16", "16x8x16"};
    rng r = {8};
    for (int s = 0; s < 2; s++) {
        assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_SHAPE", shapes[s], 1), 0);
        for (size_t i = 0; i < sizeof fixed_cases / sizeof fixed_cases[0]; i++) {
            mm_case c = fixed_cases[i];
            c.a_type = c.b_type = VKATTN_DTYPE_F16;
            run_case(env, &c, VKATTN_MATMUL_COOPMAT_EMULATED, &r);
        }
    }
    /* Again in the GPU's blocks (a grid of 8 subgroups, 2 x 4, for M > 64, 4
     * side by side below; 32-deep slabs of two matrix steps; two stages), each
     * subgroup's matrices as many as fit here (with 32 KiB, one by one above
     * 64 rows, 3 x 1 from 17 to 64; test_coopmat_tuned_blocks has more). */
    assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_TILING", "gpu", 1), 0);
    for (size_t i = 0; i < sizeof fixed_cases / sizeof fixed_cases[0]; i++) {
        mm_case c = fixed_cases[i];
        c.a_type = c.b_type = VKATTN_DTYPE_F16;
        run_case(env, &c, VKATTN_MATMUL_COOPMAT_EMULATED, &r);
    }
    assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_TILING"), 0);
    assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_SHAPE"), 0);
    /* The real kernel on the same cases where the device has matrix units (a GPU). */
    if (info.cooperative_matrix)
        for (size_t i = 0; i < sizeof fixed_cases / sizeof fixed_cases[0]; i++) {
            mm_case c = fixed_cases[i];
            c.a_type = c.b_type = VKATTN_DTYPE_F16;
            run_case(env, &c, VKATTN_MATMUL_COOPMAT, &r);
        }

    /* f32 inputs, and the real kernel where the device has no matrix units, are refused. */
    int64_t shape[2] = {8, 8};
    pair a = pair_random(env, VKATTN_DTYPE_F32, 2, shape, &r, -1.f, 1.f);
    pair h = pair_random(env, VKATTN_DTYPE_F16, 2, shape, &r, -1.f, 1.f);
    pair out = pair_output(env, 2, shape);
    vkattn_matmul_desc d = {.variant = VKATTN_MATMUL_COOPMAT_EMULATED};
    assert_int_equal(vkattn_matmul(env->gpu, &d, a.gpu, h.gpu, NULL, out.gpu),
                     VKATTN_ERROR_UNSUPPORTED);
    assert_non_null(strstr(vkattn_last_error(env->gpu), "f16 A and B (got f32, f16)"));
    if (!info.cooperative_matrix) {
        d.variant = VKATTN_MATMUL_COOPMAT;
        assert_int_equal(vkattn_matmul(env->gpu, &d, h.gpu, h.gpu, NULL, out.gpu),
                         VKATTN_ERROR_UNSUPPORTED);
        assert_non_null(strstr(vkattn_last_error(env->gpu), "VK_NV_cooperative_matrix"));
    }
    pair_destroy(&a);
    pair_destroy(&h);
    pair_destroy(&out);
}

/* The coopmat kernel's other block layouts (the knobs of tuning.h, which a
 * sweep on a GPU turns), each on the fixed cases that reach every edge (one
 * row, one column, exact multiples of the blocks, ragged sizes with a bias and
 * alpha, batches with transposed, per-batch and grouped B, 700 tiny batches)
 * with f16 A and B, emulated and, where the device has matrix units, real: a
 * 2 x 2 grid of subgroups each 2 x 2 matrices with 16-deep slabs, and two
 * subgroups stacked each 3 x 1 matrices of NVIDIA's 16x8x16 with 32-deep
 * slabs, both loading the next slab while this one computes (two stages). A
 * grid the subgroups do not fill is refused, naming the setting. */
static void test_coopmat_tuned_blocks(void **state)
{
    (void)state;
    static const struct {
        const char *shape, *knobs;
    } layouts[] = {
        {"16x16x16", "subgroups=4,grid_columns=2,rows=2,columns=2,depth=16,stages=2"},
        {"16x8x16", "subgroups=2,grid_columns=1,rows=3,columns=1,depth=32,stages=2"},
    };
    static const char *const edges[] = {"row vector", "column", "tile multiple", "ragged",
                                        "linear layer", "batched QK^T", "GQA P@V",
                                        "many batches"};
    rng r = {9};
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
        /* Each knob for both builds: "matmul_coopmat.rows=2,...". */
        char tuning[512] = "", knobs[128];
        for (int build = 0; build < 2; build++) {
            snprintf(knobs, sizeof knobs, "%s", layouts[l].knobs);
            for (char *k = strtok(knobs, ","); k; k = strtok(NULL, ","))
                snprintf(tuning + strlen(tuning), sizeof tuning - strlen(tuning), "%s%s.%s",
                         tuning[0] ? "," : "", build ? "matmul_coopmat" : "matmul_coopmat_emulated",
                         k);
        }
        assert_int_equal(setenv("VKATTN_TUNE", tuning, 1), 0);
        assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_SHAPE", layouts[l].shape, 1), 0);
        test_env *env = test_env_create();
        assert_int_equal(unsetenv("VKATTN_TUNE"), 0);
        vkattn_device_info info;
        if (test_has_float16(env, &info)) {
            assert_int_equal(env->gpu_log.warnings, 0);  /* every knob taken */
            int ran = 0;
            for (size_t i = 0; i < sizeof fixed_cases / sizeof fixed_cases[0]; i++) {
                bool edge = false;
                for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++)
                    edge = edge || !strcmp(fixed_cases[i].name, edges[e]);
                if (!edge)
                    continue;
                mm_case c = fixed_cases[i];
                c.a_type = c.b_type = VKATTN_DTYPE_F16;
                run_case(env, &c, VKATTN_MATMUL_COOPMAT_EMULATED, &r);
                if (info.cooperative_matrix && l == 0)  /* in the device's own shape */
                    run_case(env, &c, VKATTN_MATMUL_COOPMAT, &r);
                ran++;
            }
            assert_int_equal(ran, (int)(sizeof edges / sizeof edges[0]));  /* names in the table */
        }
        test_env_destroy(env);
    }

    assert_int_equal(setenv("VKATTN_TUNE", "matmul_coopmat_emulated.subgroups=4,"
                            "matmul_coopmat_emulated.grid_columns=3", 1), 0);
    test_env *env = test_env_create();
    assert_int_equal(unsetenv("VKATTN_TUNE"), 0);
    vkattn_device_info info;
    if (test_has_float16(env, &info)) {
        int64_t shape[2] = {8, 8};
        pair h = pair_random(env, VKATTN_DTYPE_F16, 2, shape, &r, -1.f, 1.f);
        pair out = pair_output(env, 2, shape);
        vkattn_matmul_desc d = {.variant = VKATTN_MATMUL_COOPMAT_EMULATED};
        assert_int_equal(vkattn_matmul(env->gpu, &d, h.gpu, h.gpu, NULL, out.gpu),
                         VKATTN_ERROR_UNSUPPORTED);
        assert_non_null(strstr(vkattn_last_error(env->gpu),
                               "tuning matmul_coopmat_emulated.grid_columns=3 cannot be taken"));
        pair_destroy(&h);
        pair_destroy(&out);
    }
    test_env_destroy(env);
    assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_SHAPE"), 0);
}

/* AUTO with VKATTN_COOPMAT unset, as an application calls it (ctest sets it
 * to 0 for the other tests): on NVIDIA the real coopmat kernel takes f16
 * (src/ops/coopmat_verified.c) wherever it can plan the call, the scalar
 * kernels the rest; elsewhere the scalar kernels. Every fixed case in f16
 * where the device has matrix units (the GPU check's run of the default),
 * three of them elsewhere (lavapipe compiles each case's pipelines). */
static void test_auto_default(void **state)
{
    test_env *env = *state;
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(env->gpu, &info), VKATTN_OK);
    const char *set = getenv("VKATTN_COOPMAT");
    char saved[16] = "";
    if (set)
        snprintf(saved, sizeof saved, "%s", set);
    assert_int_equal(unsetenv("VKATTN_COOPMAT"), 0);
    rng r = {9};
    size_t cases = info.cooperative_matrix ? sizeof fixed_cases / sizeof fixed_cases[0] : 3;
    for (size_t i = 0; i < cases; i++) {
        mm_case c = fixed_cases[i];
        c.a_type = c.b_type = VKATTN_DTYPE_F16;
        run_case(env, &c, VKATTN_MATMUL_AUTO, &r);
    }
    if (set)
        assert_int_equal(setenv("VKATTN_COOPMAT", saved, 1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_cases),
        cmocka_unit_test(test_random_sweep),
        cmocka_unit_test(test_square_512),
        cmocka_unit_test(test_coopmat_emulated),
        cmocka_unit_test(test_coopmat_tuned_blocks),
        cmocka_unit_test(test_auto_default),
    };
    return test_run_group(tests, test_env_setup, test_env_teardown);
}
