/* Attention on the GPU, fused and unfused, against the CPU reference. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct at_case {
    const char *name;
    int64_t B, H, Hkv, Tq, Tk, D, Dv;
    vkattn_layout layout;
    bool causal;
    bool has_q_offset;
    int64_t q_offset;
    bool kv_len;          /* random lengths per batch entry, the first one 0 */
    float scale;          /* 0: 1/sqrt(D) */
    vkattn_dtype dtype;
    float magnitude;      /* Q and K in [-magnitude, magnitude]; V in [-1, 1] */
} at_case;

/* How a case is run on the GPU. */
typedef test_path at_path;

/* Added to the tolerance of the coopmat kernels: they round P to f16 before
 * P V (half an ulp of f16 at 1 is 4.9e-4, times sum_j P_j |V_j| <= 1), or
 * on bf16 matrices to bf16 (8 significant bits: half an ulp at 1 is 2^-8 =
 * 3.9e-3), each twice over. */
#define COOPMAT_P_ROUNDING 1e-3
#define COOPMAT_BF16_P_ROUNDING 8e-3

/* The coopmat kernels' P rounding while a test runs them on bf16 matrices
 * (run_bf16_matrix_cases sets it around its cases); else f16's. */
static double coopmat_p_rounding = COOPMAT_P_ROUNDING;

static double extra_tolerance(const at_path *p)
{
    return p->variant == VKATTN_FUSED_COOPMAT || p->variant == VKATTN_FUSED_COOPMAT_EMULATED ||
                   p->variant == VKATTN_FUSED_COOPMAT_WORKGROUP ||
                   p->variant == VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED
               ? coopmat_p_rounding
               : 0.0;
}

static void shape_of(const at_case *c, int64_t heads, int64_t T, int64_t width, int64_t out[4])
{
    bool bshd = c->layout == VKATTN_LAYOUT_BSHD;
    out[0] = c->B;
    out[1] = bshd ? T : heads;
    out[2] = bshd ? heads : T;
    out[3] = width;
}

static void describe(const at_case *c, vkattn_dtype k_dtype, vkattn_dtype v_dtype,
                     const at_path *p, char *buf, size_t size)
{
    static const char *paths[] = {"auto", "fused", "unfused"};
    static const char *dtypes[] = {"f32", "f16", "i32", "bf16"};
    char types[32];
    if (k_dtype != c->dtype || v_dtype != c->dtype)
        snprintf(types, sizeof types, "%s/%s/%s", dtypes[c->dtype], dtypes[k_dtype],
                 dtypes[v_dtype]);
    else
        snprintf(types, sizeof types, "%s", dtypes[c->dtype]);
    snprintf(buf, size,
             "%s [B%lld H%lld Hkv%lld Tq%lld Tk%lld D%lld Dv%lld %s %s%s%s, %s/%s splits %u]",
             c->name, (long long)c->B, (long long)c->H, (long long)c->Hkv, (long long)c->Tq,
             (long long)c->Tk, (long long)c->D, (long long)c->Dv, types,
             c->layout == VKATTN_LAYOUT_BSHD ? "bshd" : "bhsd", c->causal ? " causal" : "",
             c->kv_len ? " kv_len" : "", paths[p->path], vkattn_fused_variant_name(p->variant), p->kv_splits);
}

/* Runs the case, with Q of c->dtype and K and V of their own dtypes, on the GPU
 * by each path and on the CPU; compares every GPU result with the reference. */
static void run_typed(test_env *env, const at_case *c, vkattn_dtype k_dtype, vkattn_dtype v_dtype,
                      const at_path *paths, int npaths, rng *r)
{
    int64_t qs[4], ks[4], vs[4], os[4];
    shape_of(c, c->H, c->Tq, c->D, qs);
    shape_of(c, c->Hkv, c->Tk, c->D, ks);
    shape_of(c, c->Hkv, c->Tk, c->Dv, vs);
    shape_of(c, c->H, c->Tq, c->Dv, os);
    float m = c->magnitude;
    pair q = pair_random(env, c->dtype, 4, qs, r, -m, m);
    pair k = pair_random(env, k_dtype, 4, ks, r, -m, m);
    pair v = pair_random(env, v_dtype, 4, vs, r, -1.0f, 1.0f);
    pair o = pair_output(env, 4, os);

    vkattn_tensor *kv_gpu = NULL, *kv_cpu = NULL;
    if (c->kv_len) {
        int32_t lens[64];
        assert_true(c->B <= 64);
        for (int64_t b = 0; b < c->B; b++)
            lens[b] = b == 0 ? 0 : rng_int(r, 1, (int)c->Tk);
        vkattn_tensor_desc kd = {.dtype = VKATTN_DTYPE_I32, .ndim = 1, .shape = {c->B}};
        assert_int_equal(vkattn_tensor_create(env->gpu, &kd, &kv_gpu), VKATTN_OK);
        assert_int_equal(vkattn_tensor_create(env->cpu, &kd, &kv_cpu), VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(kv_gpu, lens, VKATTN_DTYPE_I32), VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(kv_cpu, lens, VKATTN_DTYPE_I32), VKATTN_OK);
    }
    vkattn_attention_desc d = {
        .layout = c->layout, .scale = c->scale, .causal = c->causal,
        .has_q_offset = c->has_q_offset, .q_offset = c->q_offset, .kv_len = kv_cpu,
    };
    assert_int_equal(vkattn_attention(env->cpu, &d, q.cpu, k.cpu, v.cpu, o.cpu), VKATTN_OK);

    /* f32 scores are off by a few ulps of sum_d |q_d k_d| * scale, which moves
     * each weight by that much relatively; the output is a weighted mean of V.
     * f16 and bf16 inputs are rounded once, on upload, and the GPU and the
     * reference read the same rounded values, so that is the whole error for
     * every dtype: no allowance for bf16's 8-bit significand is needed. */
    double scale = c->scale != 0.0f ? c->scale : 1.0 / sqrt((double)c->D);
    double score_size = scale * (double)c->D * m * m;
    double atol = 16 * 1.2e-7 * score_size + 1e-5;

    test_next_case();
    for (int i = 0; i < npaths; i++) {
        if (!test_path_runs(paths, npaths, i))
            continue;
        char name[256];
        describe(c, k_dtype, v_dtype, &paths[i], name, sizeof name);
        assert_int_equal(vkattn_tensor_upload(o.gpu, o.host, VKATTN_DTYPE_F32), VKATTN_OK);
        d.kv_len = kv_gpu;
        d.path = paths[i].path;
        d.fused_variant = paths[i].variant;
        d.kv_splits = paths[i].kv_splits;
        vkattn_status s = vkattn_attention(env->gpu, &d, q.gpu, k.gpu, v.gpu, o.gpu);
        if (s != VKATTN_OK)
            fail_msg("%s: %s: %s", name, vkattn_status_string(s), vkattn_last_error(env->gpu));
        expect_close(name, &o, atol + extra_tolerance(&paths[i]), 0.0, NULL);
    }
    vkattn_tensor_destroy(kv_gpu);
    vkattn_tensor_destroy(kv_cpu);
    pair_destroy(&q);
    pair_destroy(&k);
    pair_destroy(&v);
    pair_destroy(&o);
}

/* The case with Q, K and V all of c->dtype. */
static void run_case(test_env *env, const at_case *c, const at_path *paths, int npaths, rng *r)
{
    run_typed(env, c, c->dtype, c->dtype, paths, npaths, r);
}

#define F32 VKATTN_DTYPE_F32
#define F16 VKATTN_DTYPE_F16
#define BF16 VKATTN_DTYPE_BF16
#define BHSD VKATTN_LAYOUT_BHSD
#define BSHD VKATTN_LAYOUT_BSHD

static const at_case fixed_cases[] = {
    /* name                    B  H Hkv  Tq   Tk   D   Dv  layout causal q_off? q_off kv    scale dtype mag */
    {"T=1",                    1, 1, 1,   1,   1,  8,   8, BHSD, false, false, 0, false, 0.f, F32, 1.f},
    {"T=1 causal",             2, 3, 3,   1,   1, 16,  16, BHSD, true,  false, 0, false, 0.f, F32, 1.f},
    {"causal square",          2, 4, 4,  37,  37, 64,  64, BHSD, true,  false, 0, false, 0.f, F32, 1.f},
    {"non-causal ragged",      1, 3, 3,  29,  53, 40,  40, BHSD, false, false, 0, false, 0.f, F32, 1.f},
    {"Tq<Tk bottom-right",     2, 2, 2,   5,  67, 32,  32, BHSD, true,  false, 0, false, 0.f, F32, 1.f},
    {"Tq<Tk top-left",         2, 2, 2,   5,  67, 32,  32, BHSD, true,  true,  0, false, 0.f, F32, 1.f},
    {"Tq>Tk masked rows",      1, 2, 2,  21,   7, 16,  16, BHSD, true,  false, 0, false, 0.f, F32, 1.f},
    {"GQA",                    2, 8, 2,  19,  23, 64,  64, BHSD, true,  false, 0, false, 0.f, F32, 1.f},
    {"MQA",                    1, 6, 1,  13,  31, 32,  32, BSHD, false, false, 0, false, 0.f, F32, 1.f},
    {"D=80 Dv=48",             1, 2, 2,  17,  33, 80,  48, BHSD, true,  false, 0, false, 0.f, F32, 1.f},
    {"odd D=5 Dv=7",           2, 3, 1,  11,  14,  5,   7, BHSD, true,  false, 0, false, 0.f, F32, 1.f},
    {"odd D=13 bshd",          1, 4, 2,   9,  18, 13,  13, BSHD, true,  false, 0, false, 0.f, F32, 1.f},
    {"kv_len padding",         4, 2, 2,  12,  40, 32,  32, BHSD, false, false, 0, true,  0.f, F32, 1.f},
    {"kv_len causal GQA",      3, 4, 2,  40,  40, 24,  24, BSHD, true,  false, 0, true,  0.f, F32, 1.f},
    {"scale 1",                1, 2, 2,  15,  15, 16,  16, BHSD, true,  false, 0, false, 1.f, F32, 1.f},
    {"bshd causal",            2, 3, 3,  33,  33, 64,  32, BSHD, true,  false, 0, false, 0.f, F32, 1.f},
    {"f16",                    1, 4, 2,  27,  27, 64,  64, BHSD, true,  false, 0, false, 0.f, F16, 1.f},
    {"f16 bshd Tq<Tk",         2, 2, 1,   3,  50, 40,  40, BSHD, true,  false, 0, false, 0.f, F16, 1.f},
    {"large magnitude",        1, 2, 2,  20,  20, 16,  16, BHSD, true,  false, 0, false, 0.f, F32, 30.f},
    /* enough rows that the tiled kernel gives each invocation two of them */
    {"two rows an invocation", 2, 4, 2, 133, 150, 64,  64, BSHD, true,  false, 0, true,  0.f, F32, 2.f},
    {"two rows odd D GQA",     1, 2, 1, 300, 257, 40,  24, BHSD, true,  true, -20, false, 0.f, F16, 1.f},
    {"q_offset past Tk",       1, 1, 1,   6,   9,  8,   8, BHSD, true,  true, 100, false, 0.f, F32, 1.f},
    {"q_offset before all",    1, 1, 1,   6,   9,  8,   8, BHSD, true,  true, -50, false, 0.f, F32, 1.f},
    /* bf16: every path, the rows variant through views of the bits */
    {"bf16",                   1, 4, 2,  27,  27, 64,  64, BHSD, true,  false, 0, false, 0.f, BF16, 1.f},
    {"bf16 T=1",               2, 3, 3,   1,   1, 16,  16, BHSD, true,  false, 0, false, 0.f, BF16, 1.f},
    {"bf16 ragged odd D GQA",  2, 3, 1,  11,  14,  5,   7, BHSD, true,  false, 0, false, 0.f, BF16, 1.f},
    {"bf16 bshd Tq<Tk kv_len", 3, 4, 2,   5,  67, 40,  40, BSHD, true,  false, 0, true,  0.f, BF16, 1.f},
    {"bf16 Tq>Tk top-left",    1, 2, 2,  21,   7, 13,  13, BHSD, true,  true,  0, false, 0.f, BF16, 1.f},
    {"bf16 D=80 Dv=48 bshd",   1, 2, 1,  17,  33, 80,  48, BSHD, false, false, 0, false, 0.f, BF16, 1.f},
    /* |q|, |k| up to 1e5: past f16's range (65504), within bf16's; the scale
     * keeps the scores (scale * D * 1e10 = 64) in softmax's useful range */
    {"bf16 magnitude 1e5",     1, 2, 2,  20,  20, 16,  16, BHSD, true,  false, 0, false, 4e-10f, BF16, 1e5f},
    {"bf16 magnitude 30",      1, 2, 2,  20,  33, 24,  24, BSHD, true,  false, 0, false, 0.f, BF16, 30.f},
};

/* A case whose K and V have dtypes of their own (Q has the case's). */
typedef struct typed_case {
    at_case c;
    vkattn_dtype k_dtype, v_dtype;
} typed_case;

/* Mixed input dtypes: each tensor is read with its own. */
static const typed_case mixed_cases[] = {
    {{"mixed", 2, 4, 2, 19, 23, 32, 32, BHSD, true,  false, 0, false, 0.f, BF16, 1.f}, F16,  F32},
    {{"mixed", 1, 2, 1,  9, 30, 13, 13, BSHD, true,  false, 0, true,  0.f, F32,  1.f}, F32,  BF16},
    {{"mixed", 1, 3, 3, 16, 16, 64, 64, BHSD, false, false, 0, false, 0.f, F16,  1.f}, BF16, F16},
    {{"f32 Q, bf16 cache", 1, 8, 2, 1, 77, 128, 128, BHSD, true, false, 0, false, 0.f, F32, 1.f}, BF16, BF16},
};

static const at_path standard_paths[] = {
    {VKATTN_PATH_AUTO, VKATTN_FUSED_AUTO, 0},
    {VKATTN_PATH_UNFUSED, VKATTN_FUSED_AUTO, 0},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 1},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 3},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 1},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 2},
};
#define NPATHS(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void test_fixed_cases(void **state)
{
    test_env *env = *state;
    rng r = {11};
    for (size_t i = 0; i < sizeof fixed_cases / sizeof fixed_cases[0]; i++)
        run_case(env, &fixed_cases[i], standard_paths, NPATHS(standard_paths), &r);
    for (size_t i = 0; i < sizeof mixed_cases / sizeof mixed_cases[0]; i++)
        run_typed(env, &mixed_cases[i].c, mixed_cases[i].k_dtype, mixed_cases[i].v_dtype,
                  standard_paths, NPATHS(standard_paths), &r);
}

/* Every head size the fused kernels must take, powers of two or not. */
static void test_head_sizes(void **state)
{
    test_env *env = *state;
    rng r = {12};
    static const int64_t sizes[] = {8, 16, 40, 64, 80, 96, 128, 160, 256};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        at_case c = {"head size", 1, 2, 1, 19, 45, sizes[i], sizes[i], BHSD, true, false, 0,
                     false, 0.f, F32, 1.f};
        run_case(env, &c, standard_paths, NPATHS(standard_paths), &r);
    }
}

/* Decoding: a few query rows against many keys, split across workgroups. */
static void test_decode(void **state)
{
    test_env *env = *state;
    rng r = {13};
    static const at_path splits[] = {
        {VKATTN_PATH_AUTO, VKATTN_FUSED_AUTO, 0},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 1},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 7},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 64},
        /* Up to 300 splits: the combine pass then has 16 invocations share
         * a row's splits, several steps of 8 each (64: 8 of one step). */
        {VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 300},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 0},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 5},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_DECODE, 0},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_DECODE, 1},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_DECODE, 6},
        {VKATTN_PATH_UNFUSED, VKATTN_FUSED_AUTO, 0},
    };
    static const at_case cases[] = {
        {"decode",           1, 8, 8,  1, 1000, 128, 128, BHSD, true,  false, 0, false, 0.f, F32, 1.f},
        {"decode 16 rows",   1, 16, 1, 1, 2000,  64,  64, BSHD, true,  false, 0, true,  0.f, F16, 8.f},
        {"decode D=256",     1, 2, 1,  1,  900, 256, 256, BHSD, true,  false, 0, false, 0.f, BF16, 2.f},
        {"decode Tq=2 Dv<D", 2, 8, 2,  2, 1500,  96,  40, BSHD, true,  false, 0, true,  0.f, F32, 4.f},
        {"decode T=1",       1, 2, 1,  1,    1,   8,   8, BHSD, true,  false, 0, false, 0.f, F32, 1.f},
        {"decode GQA bshd",  2, 8, 2,  1,  777,  64,  64, BSHD, true,  false, 0, true,  0.f, F32, 1.f},
        {"decode Tq=4",      1, 4, 4,  4,  513,  64,  64, BHSD, true,  false, 0, false, 0.f, F16, 1.f},
        {"decode odd D",     1, 3, 1,  2,  301,  13,  13, BHSD, false, false, 0, false, 0.f, F32, 1.f},
        {"decode bf16 GQA",  2, 8, 2,  1,  555,  64,  64, BSHD, true,  false, 0, true,  0.f, BF16, 1.f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(env, &cases[i], splits, NPATHS(splits), &r);
}

/* Long sequences: T = 4096 on every path (the scores of the unfused path still
 * fit the device's buffer range here). */
static void test_long_sequence(void **state)
{
    test_env *env = *state;
    rng r = {14};
    static const at_path paths[] = {
        {VKATTN_PATH_AUTO, VKATTN_FUSED_AUTO, 0},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 0},
        {VKATTN_PATH_UNFUSED, VKATTN_FUSED_AUTO, 0},
    };
    at_case c = {"T=4096", 1, 2, 1, 4096, 4096, 64, 64, BSHD, true, false, 0, false, 0.f, F32, 1.f};
    run_case(env, &c, paths, NPATHS(paths), &r);
}

/* The unfused path's scores larger than the buffer range (128 MiB on lavapipe,
 * 256 MiB at most): chunks of whole heads that start on kv-head boundaries
 * (grouped-query), and chunks of query rows of a single head. */
static void test_unfused_chunking(void **state)
{
    test_env *env = *state;
    rng r = {15};
    static const at_path paths[] = {{VKATTN_PATH_UNFUSED, VKATTN_FUSED_AUTO, 0}};
    static const at_case cases[] = {
        {"head chunks GQA", 2, 8, 2, 2100, 2100, 8, 8, BHSD, true, false, 0, true, 0.f, F32, 1.f},
        {"row chunks",      1, 1, 1, 8300, 8300, 8, 8, BSHD, true, false, 0, true, 0.f, F32, 1.f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(env, &cases[i], paths, NPATHS(paths), &r);
}

/* f16 or bf16 one time in six each, else f32. */
static vkattn_dtype random_dtype(rng *r)
{
    int pick = rng_int(r, 0, 5);
    return pick == 0 ? F16 : pick == 1 ? BF16 : F32;
}

/* Random shapes, every option combined. */
static void test_random_sweep(void **state)
{
    test_env *env = *state;
    rng r = {20261122};
    for (int i = 0; i < 24; i++) {
        char name[64];
        snprintf(name, sizeof name, "random %d", i);
        int64_t Hkv = rng_int(&r, 1, 3);
        at_case c = {
            .name = name,
            .B = rng_int(&r, 1, 3),
            .Hkv = Hkv,
            .H = Hkv * rng_int(&r, 1, 3),
            .Tq = rng_int(&r, 1, 70),
            .Tk = rng_int(&r, 1, 90),
            .D = rng_int(&r, 0, 2) ? 4 * rng_int(&r, 1, 24) : rng_int(&r, 1, 50),
            .layout = rng_int(&r, 0, 1) ? BSHD : BHSD,
            .causal = rng_int(&r, 0, 1),
            .has_q_offset = rng_int(&r, 0, 3) == 0,
            .q_offset = rng_int(&r, -10, 10),
            .kv_len = rng_int(&r, 0, 3) == 0,
            .scale = rng_int(&r, 0, 3) == 0 ? rng_uniform(&r, 0.05f, 1.0f) : 0.0f,
            .dtype = random_dtype(&r),
            .magnitude = rng_int(&r, 0, 4) == 0 ? 4.0f : 1.0f,
        };
        c.Dv = rng_int(&r, 0, 2) ? c.D : (c.D % 4 ? rng_int(&r, 1, 40) : 4 * rng_int(&r, 1, 10));
        run_case(env, &c, standard_paths, NPATHS(standard_paths), &r);
    }
}

/* The cooperative-matrix kernel, built with its matrix operations emulated,
 * on every shape above in f16 and bf16 (its input types), with the matrix
 * shapes GPUs report: 16x16x16 and NVIDIA's 16x8x16. */
static const at_path coopmat_paths[] = {
    {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_EMULATED, 1},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_EMULATED, 3},
};

static const at_path coopmat_device_paths[] = {
    {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT, 1},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT, 3},
};

/* The workgroup-scope coopmat kernel's builds, the same way. */
static const at_path workgroup_emulated_paths[] = {
    {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED, 1},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED, 3},
};

static const at_path workgroup_device_paths[] = {
    {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_WORKGROUP, 1},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_WORKGROUP, 3},
};

/* bf16 inputs on the coopmat kernels, which convert them to f16 as they are
 * staged (each Q row and key of K and each V tile scaled by a power of 2): the
 * bf16 cases at their own magnitudes (up to 1e5, past f16's range), and f16
 * beside bf16. */
static void run_bf16_cases(test_env *env, const at_path *paths, int npaths, unsigned repeat,
                           unsigned repeats, rng *r)
{
    size_t n = 0;   /* the cases so far, for their turns */
    for (size_t i = 0; i < sizeof fixed_cases / sizeof fixed_cases[0]; i++)
        if (fixed_cases[i].dtype == BF16 && test_case_turn(n++, repeat, repeats))
            run_case(env, &fixed_cases[i], paths, npaths, r);
    static const typed_case mixed[] = {
        {{"bf16 Q, f16 K", 2, 4, 2, 19, 23, 32, 32, BHSD, true, false, 0, false, 0.f, BF16, 1.f}, F16, BF16},
        {{"f16 Q, bf16 K", 1, 3, 1, 16, 40, 24, 20, BSHD, false, false, 0, true, 0.f, F16, 1.f}, BF16, F16},
        /* bf16 Q alone: K and V tiles loaded straight from aligned rows */
        {{"bf16 Q only", 1, 4, 2, 21, 70, 32, 32, BHSD, true, false, 0, false, 0.f, BF16, 3.f}, F16, F16},
    };
    for (size_t i = 0; i < sizeof mixed / sizeof mixed[0]; i++)
        if (test_case_turn(n++, repeat, repeats))
            run_typed(env, &mixed[i].c, mixed[i].k_dtype, mixed[i].v_dtype, paths, npaths, r);
}

/* shape: the emulated matrix shape, or NULL for the device's own (real kernel);
 * bf16: also the bf16 cases (the staging's conversion, which no matrix shape
 * or tiling changes; test_coopmat_bf16_range runs it tiled as on a GPU); the
 * cases whose turn it is in repeat `repeat` of `repeats` (test_case_turn). */
static void run_coopmat_cases(test_env *env, const char *shape, bool bf16, unsigned repeat,
                              unsigned repeats, rng *r)
{
    const at_path *coopmat = shape ? coopmat_paths : coopmat_device_paths;
    if (shape)
        assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_SHAPE", shape, 1), 0);
    size_t n = sizeof fixed_cases / sizeof fixed_cases[0];
    for (size_t i = 0; i < n; i++) {
        at_case c = fixed_cases[i];
        c.dtype = F16;
        c.magnitude = c.magnitude > 8.f ? 8.f : c.magnitude; /* Q K^T of f16 stays finite */
        if (test_case_turn(i, repeat, repeats))
            run_case(env, &c, coopmat, NPATHS(coopmat_paths), r);
    }
    if (bf16)
        run_bf16_cases(env, coopmat, NPATHS(coopmat_paths), 0, 1, r);
    static const at_case cases[] = {
        {"decode",           1, 8, 8,  1, 1000, 128, 128, BHSD, true,  false, 0, false, 0.f, F16, 1.f},
        {"decode GQA bshd",  2, 8, 2,  1,  777,  64,  64, BSHD, true,  false, 0, true,  0.f, F16, 1.f},
        {"D=160 Dv=128",     1, 2, 1, 19,   45, 160, 128, BHSD, true,  false, 0, false, 0.f, F16, 1.f},
        {"D=96 Dv=40",       1, 2, 2, 35,   35,  96,  40, BSHD, true,  false, 0, true,  0.f, F16, 1.f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (test_case_turn(n + i, repeat, repeats))
            run_case(env, &cases[i], coopmat, NPATHS(coopmat_paths), r);
    if (shape)
        assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_SHAPE"), 0);
}

static void test_coopmat_emulated(void **state)
{
    test_env *env = *state;
    vkattn_device_info info;
    if (!test_has_float16(env, &info))
        return;
    rng r = {16};
    run_coopmat_cases(env, "16x16x16", true, 0, 1, &r);
    /* NVIDIA's shape, here and in test_coopmat_emulated_gpu_tiling's two
     * tilings: the cases in turns over the three */
    run_coopmat_cases(env, "16x8x16", false, 0, 3, &r);
}

/* The emulated kernel tiled as on a GPU (VKATTN_COOPMAT_EMULATED_TILING=gpu):
 * several subgroups a workgroup with barriers between them, Q staged in
 * chunks, tiles of up to 64 keys (48: not a power of 2) and, with 4-row
 * matrices on lavapipe's 8 lanes, two lanes a row (the shuffle reductions)
 * — the paths one subgroup and 16-key tiles never take, which revision 2
 * runs first on a GPU. */
static void test_coopmat_emulated_gpu_tiling(void **state)
{
    test_env *env = *state;
    vkattn_device_info info;
    if (!test_has_float16(env, &info))
        return;
    rng r = {17};
    assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_TILING", "gpu", 1), 0);
    /* A GPU tiles so anyway: there 16x8x16 repeats test_coopmat_emulated. */
    if (info.type == VKATTN_DEVICE_TYPE_CPU)
        run_coopmat_cases(env, "16x8x16", false, 1, 3, &r);
    run_coopmat_cases(env, "4x16x16", false, 2, 3, &r);
    assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_TILING"), 0);
}

/* The workgroup-scope coopmat kernel on every shape above in f16 by `paths`:
 * all of them, or (not `wide`) those whose head sizes fit lavapipe's shared
 * memory at 32 rows a workgroup; then the bf16 cases (run_bf16_cases); the
 * cases whose turn it is in repeat `repeat` of `repeats` (test_case_turn). */
static void run_workgroup_cases(test_env *env, const at_path *paths, int npaths, bool wide,
                                unsigned repeat, unsigned repeats, rng *r)
{
    static const at_case cases[] = {
        {"decode",          1, 8, 8,  1, 1000, 128, 128, BHSD, true,  false, 0, false, 0.f, F16, 1.f},
        {"decode GQA bshd", 2, 8, 2,  1,  777,  64,  64, BSHD, true,  false, 0, true,  0.f, F16, 1.f},
        {"D=160 Dv=128",    1, 2, 1, 19,   45, 160, 128, BHSD, true,  false, 0, false, 0.f, F16, 1.f},
        {"D=96 Dv=40",      1, 2, 2, 35,   35,  96,  40, BSHD, true,  false, 0, true,  0.f, F16, 1.f},
        {"D=200 Dv=256",    1, 2, 1, 21,   70, 200, 256, BSHD, false, false, 0, false, 0.f, F16, 1.f},
    };
    size_t n = sizeof fixed_cases / sizeof fixed_cases[0];
    for (size_t i = 0; i < n; i++) {
        at_case c = fixed_cases[i];
        c.dtype = F16;
        c.magnitude = c.magnitude > 8.f ? 8.f : c.magnitude; /* Q K^T stays finite */
        if (test_case_turn(i, repeat, repeats))
            run_case(env, &c, paths, npaths, r);
    }
    for (size_t i = 0; wide && i < sizeof cases / sizeof cases[0]; i++)
        if (test_case_turn(n + i, repeat, repeats))
            run_case(env, &cases[i], paths, npaths, r);
    run_bf16_cases(env, paths, npaths, repeat, repeats, r);
}

/* The emulated build, the cases in turns over three tilings (a GPU runs the
 * first alone, on every case): its CPU tiling (16 rows, 16 keys, a lane a
 * row), 32-key tiles on 2 lanes a row (workgroups of 32) and 32 rows of 2 a
 * lane (workgroups of 16), which load whole tiles of aligned keys straight
 * from the buffers and stage the others. */
static void test_coopmat_workgroup_emulated(void **state)
{
    (void)state;
    static const char *tilings[] = {
        "",
        "coopmat_workgroup_emulated.keys=32,coopmat_workgroup_emulated.subgroups=4",
        "coopmat_workgroup_emulated.rows=2,coopmat_workgroup_emulated.subgroups=2",
    };
    rng r = {19};
    for (size_t t = 0; t < sizeof tilings / sizeof tilings[0]; t++) {
        test_env *env = test_env_tuned(tilings[t]);
        vkattn_device_info info;
        /* The other tilings reach lavapipe's paths; a GPU takes the first
         * (the GPU check's test time is short). */
        bool cpu = vkattn_context_info(env->gpu, &info) == VKATTN_OK &&
                   info.type == VKATTN_DEVICE_TYPE_CPU;
        if ((t == 0 || cpu) && test_has_float16(env, &info))
            run_workgroup_cases(env, workgroup_emulated_paths, NPATHS(workgroup_emulated_paths),
                                t < 2, (unsigned)t, cpu ? sizeof tilings / sizeof tilings[0] : 1,
                                &r);
        else if (!cpu)
            print_message("not run on a GPU: the tiling %s\n", tilings[t]);
        test_env_destroy(env);
    }
}

/* The workgroup-scope kernels' modules are built in SPIR-V 1.3 and 1.6
 * (shader_code.spirv16): the emulated build in each form, on cases of odd
 * sizes. A context takes the 1.6 form where its device runs it (lavapipe:
 * Vulkan 1.3, maintenance4 enabled for LocalSizeId, which validation checks),
 * the 1.3 form with VKATTN_SPIRV16=0, and falls back to it where the 1.6
 * pipeline is refused (VKATTN_SPIRV16=refused has every one refused). */
static void test_workgroup_spirv_forms(void **state)
{
    (void)state;
    static const struct {
        const char *env, *line, *warning;
    } forms[] = {
        {NULL, "taken (Vulkan 1.3, maintenance4 enabled)", NULL},
        {"refused", "taken, refused on purpose", "its SPIR-V 1.6 form refused on purpose"},
        {"0", "not taken (VKATTN_SPIRV16=0)", NULL},
    };
    static const at_case cases[] = {
        {"causal GQA", 1, 4, 2, 37, 53, 40, 40, BHSD, true,  false, 0, false, 0.f, F16, 1.f},
        {"bshd Dv=24", 2, 2, 1, 19, 19, 72, 24, BSHD, false, false, 0, true,  0.f, F16, 4.f},
    };
    const char *saved = getenv("VKATTN_SPIRV16");
    char *kept = saved ? strdup(saved) : NULL;
    char problem[768] = "";
    bool taken = false;
    for (size_t f = 0; f < sizeof forms / sizeof forms[0] && !problem[0]; f++) {
        const char *setting = forms[f].env ? forms[f].env : "(unset)";
        if (forms[f].env)
            setenv("VKATTN_SPIRV16", forms[f].env, 1);
        else
            unsetenv("VKATTN_SPIRV16");
        test_env *env = test_env_create();
        vkattn_device_info info;
        if (!test_has_float16(env, &info)) {
            test_env_destroy(env);
            break;
        }
        const char *line = env->gpu_log.spirv16;
        if (f == 0)
            taken = strstr(line, forms[0].line) != NULL;
        rng r = {29};
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_case(env, &cases[i], workgroup_emulated_paths, NPATHS(workgroup_emulated_paths),
                     &r);
        /* A driver refusing the emulated kernel's 1.6 form fails here too:
         * the fallback copes, but it is a finding to report. */
        const char *fallback = env->gpu_log.spirv16_fallback;
        if (taken && !strstr(line, forms[f].line))
            snprintf(problem, sizeof problem, "VKATTN_SPIRV16=%s: the context said \"%s\", not "
                     "\"%s\"", setting, line, forms[f].line);
        else if (taken && (forms[f].warning != NULL) != (fallback[0] != '\0'))
            snprintf(problem, sizeof problem, "VKATTN_SPIRV16=%s: %s", setting,
                     fallback[0] ? fallback : "no fallback to the 1.3 form said");
        else if (taken && forms[f].warning && !strstr(fallback, forms[f].warning))
            snprintf(problem, sizeof problem, "the fallback said \"%s\"", fallback);
        test_env_destroy(env);
    }
    if (kept)
        setenv("VKATTN_SPIRV16", kept, 1);
    else
        unsetenv("VKATTN_SPIRV16");
    free(kept);
    if (problem[0])
        fail_msg("%s", problem);
    if (!taken)
        print_message("the SPIR-V 1.6 forms are not taken here; both runs took the 1.3 form\n");
}

/* The real build, where the context has workgroup-scope matrices
 * (VKATTN_COOPMAT_KHR=1 VKATTN_COOPMAT_WORKGROUP=1 on a device with
 * VK_NV_cooperative_matrix2: scripts/gpu-check.sh runs it so). */
static void test_coopmat_workgroup_device(void **state)
{
    test_env *env = *state;
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(env->gpu, &info), VKATTN_OK);
    if (!test_workgroup_scope(env)) {
        print_message("not run: %s has no workgroup-scope matrices here\n", info.name);
        return;
    }
    rng r = {19};
    run_workgroup_cases(env, workgroup_device_paths, NPATHS(workgroup_device_paths), true, 0, 1,
                        &r);
}

/* The coopmat kernels under a tuning (VKATTN_TUNE) on awkward shapes, f16 and
 * bf16, tiled as on a GPU with the emulated build's matrices of `shape`; the
 * real kernel too where there is one and `real` (its own shape is the
 * device's: callers that vary `shape` run it once). The awkward shapes in
 * turns over the tunings (`repeat` 0 or 1 of 2: test_case_turn; a test with
 * two tunings or more gives them both), O rescaled under every one. */
static void run_tuned_coopmat_cases(const char *tuning, const char *shape, bool real,
                                    uint64_t seed, unsigned repeat)
{
    /* The shape before the context starts: with the softmax in registers it
     * reads the layout of the shape it will use. */
    assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_TILING", "gpu", 1), 0);
    assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_SHAPE", shape, 1), 0);
    test_env *env = test_env_tuned(tuning);
    vkattn_device_info info;
    bool in_registers = strstr(tuning, "softmax=2") != NULL;
    if (test_has_float16(env, &info) &&
        !(in_registers && test_register_softmax_refused(env))) {
        rng r = {seed};
        static const char *const names[] = {"T=1", "non-causal ragged", "Tq>Tk masked rows",
                                            "GQA", "D=80 Dv=48", "odd D=5 Dv=7", "odd D=13 bshd",
                                            "kv_len causal GQA", "two rows odd D GQA",
                                            "bf16 ragged odd D GQA"};
        for (size_t n = 0; n < sizeof names / sizeof names[0]; n++)
            for (size_t i = 0; i < sizeof fixed_cases / sizeof fixed_cases[0]; i++)
                if (!strcmp(fixed_cases[i].name, names[n]) && test_case_turn(n, repeat, 2)) {
                    at_case c = fixed_cases[i];
                    if (c.dtype != BF16) {  /* bf16 at its magnitude: see run_coopmat_cases */
                        c.dtype = F16;
                        c.magnitude = c.magnitude > 8.f ? 8.f : c.magnitude;
                    }
                    run_case(env, &c, coopmat_paths, NPATHS(coopmat_paths), &r);
                    if (real && info.cooperative_matrix)
                        run_case(env, &c, coopmat_device_paths, NPATHS(coopmat_device_paths), &r);
                }
        /* Scores spread wide over many tiles: rows' maxima rise by more than
         * the lazy rescaling's 2^8 after their first tiles, so O is rescaled. */
        static const at_case rescaled = {"rescaled O", 1, 3, 1, 40, 300, 24, 20, BHSD, true, false,
                                         0, false, 0.f, F16, 8.f};
        run_case(env, &rescaled, coopmat_paths, NPATHS(coopmat_paths), &r);
        if (real && info.cooperative_matrix)
            run_case(env, &rescaled, coopmat_device_paths, NPATHS(coopmat_device_paths), &r);
        /* The softmax in registers read the layout it works with. */
        if (in_registers)
            assert_non_null(strstr(env->gpu_log.coopmat_layout, "for the softmax in registers: "));
    }
    assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_SHAPE"), 0);
    assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_TILING"), 0);
    test_env_destroy(env);
}

/* Two stages (the tuning knob coopmat.stages=2: the next K and V tiles'
 * loads in registers while a tile computes; bf16's tiles' exponents come
 * from those registers). */
static void test_coopmat_two_stages(void **state)
{
    (void)state;
    run_tuned_coopmat_cases("coopmat_emulated.stages=2,coopmat.stages=2", "16x16x16", true, 29, 0);
}

/* Two buffers (the tuning knob coopmat.buffers=2: each tile staged into one
 * while the other computes, one workgroup barrier a tile), tiled as on a GPU
 * (several subgroups sharing the buffers): f16 in one stage (staged straight
 * from memory) on 16x16x16 matrices, then in two stages with the softmax in
 * registers on 4x16x16. The many tiles of "rescaled O" and "two rows odd D
 * GQA" go through both buffers; bf16's rotating exponent slots over many
 * tiles are test_coopmat_bf16_range's (here its one case is one tile). */
static void test_coopmat_two_buffers(void **state)
{
    (void)state;
    run_tuned_coopmat_cases("coopmat_emulated.buffers=2,coopmat.buffers=2", "16x16x16", true, 71,
                            1);
    run_tuned_coopmat_cases("coopmat_emulated.buffers=2,coopmat_emulated.stages=2,"
                            "coopmat_emulated.softmax=2,coopmat.buffers=2,coopmat.softmax=2",
                            "4x16x16", true, 73, 0);
}

/* Two row blocks a subgroup (the tuning knob coopmat.rows=2: each K and V
 * block loaded from shared memory feeds both): 32 rows on lavapipe's 8 lanes
 * (four rows a lane in the softmax), and with 4-row matrices 8 rows (a lane a
 * row); Q's row blocks staged in different chunks, O rescaled, written and
 * (test_nonfinite) summed in plain code per block. */
static void test_coopmat_row_tiles(void **state)
{
    (void)state;
    run_tuned_coopmat_cases("coopmat_emulated.rows=2,coopmat.rows=2", "16x16x16", true, 37, 1);
    run_tuned_coopmat_cases("coopmat_emulated.rows=2,coopmat.rows=2", "4x16x16", false, 41, 0);
}

/* The softmax in registers (the tuning knob coopmat.softmax=2): on the score
 * accumulators' own elements, rows reduced over clusters of lanes, O rescaled
 * in its registers, P converted in registers. The emulated build lays its
 * accumulators out in clusters for it (16x16 on lavapipe's 8 lanes: 2 lanes a
 * row, 4 rows a lane; 4x16x16: 2 lanes a row, 1 row a lane), also with two
 * row blocks a subgroup; the real kernel where the device's layout allows. */
static void test_coopmat_register_softmax(void **state)
{
    (void)state;
    run_tuned_coopmat_cases("coopmat_emulated.softmax=2,coopmat.softmax=2", "16x16x16", true, 43,
                            1);
    run_tuned_coopmat_cases("coopmat_emulated.softmax=2,coopmat.softmax=2", "4x16x16", false, 47,
                            0);
    run_tuned_coopmat_cases("coopmat_emulated.softmax=2,coopmat_emulated.rows=2,coopmat.softmax=2,"
                            "coopmat.rows=2", "16x16x16", true, 53, 1);
}

/* bf16 Q, K and V on bf16 matrices (the tuning knob coopmat.bf16=2): staged
 * as they are, P rounded to bf16 (COOPMAT_BF16_P_ROUNDING). */
/* That P V takes P rounded to bf16, which the tolerance alone would not tell
 * from f16's rounding (or from the tuning left unapplied): one query, two
 * keys, V = (0, 1), scores 0 and x = -1.203125 (a bf16), so O = P1 / (1 + P1)
 * with P1 = e^x = 0.300263 rounded to bf16 (0.30078125) in P V but not in the
 * sum; f16's 0.30029297 would give 3.8e-4 less. */
static void expect_bf16_p(test_env *env, vkattn_fused_variant variant)
{
    const double x = -1.203125, p1 = exp(x), p1_bf16 = 0.30078125, p1_f16 = 0.30029296875;
    /* p1 lies where bf16 and f16 round it to those (their midpoints around it) */
    assert_true(p1 > 0.2998046875 && p1 < 0.3017578125);
    assert_true(p1 > 0.3001708984375 && p1 < 0.3004150390625);
    rng r = {7};
    int64_t qs[4] = {1, 1, 1, 1}, ks[4] = {1, 1, 2, 1}, os[4] = {1, 1, 1, 1};
    pair q = pair_random(env, BF16, 4, qs, &r, 1.f, 1.f);
    pair k = pair_random(env, BF16, 4, ks, &r, 0.f, 0.f);
    pair v = pair_random(env, BF16, 4, ks, &r, 0.f, 0.f);
    pair o = pair_output(env, 4, os);
    k.host[1] = (float)x;
    v.host[1] = 1.f;
    assert_int_equal(vkattn_tensor_upload(k.gpu, k.host, F32), VKATTN_OK);
    assert_int_equal(vkattn_tensor_upload(v.gpu, v.host, F32), VKATTN_OK);
    vkattn_attention_desc d = {.scale = 1.f, .path = VKATTN_PATH_FUSED, .fused_variant = variant};
    vkattn_attention_choice ch;
    assert_int_equal(vkattn_attention_choose(env->gpu, &d, q.gpu, k.gpu, v.gpu, o.gpu, &ch),
                     VKATTN_OK);
    assert_int_equal(ch.weights_dtype, BF16);
    vkattn_status s = vkattn_attention(env->gpu, &d, q.gpu, k.gpu, v.gpu, o.gpu);
    if (s != VKATTN_OK)
        fail_msg("P rounded to bf16: %s: %s", vkattn_status_string(s), vkattn_last_error(env->gpu));
    float got;
    assert_int_equal(vkattn_tensor_download(o.gpu, &got, F32), VKATTN_OK);
    double want = p1_bf16 / (1 + p1), not_this = p1_f16 / (1 + p1);
    if (fabs(got - want) > 3e-5)
        fail_msg("P rounded to bf16 (%s): O = %.7f, not %.7f (f16's P would give %.7f)",
                 vkattn_fused_variant_name(variant), got, want, not_this);
    pair_destroy(&q);
    pair_destroy(&k);
    pair_destroy(&v);
    pair_destroy(&o);
}

/* Every fixed bf16 case (awkward shapes; |q|, |k| to 1e5 and 30) and the
 * awkward f16 ones as bf16, then O rescaled, under `tuning`, tiled as on a
 * GPU with the emulated build's matrices of `shape`; the real kernel (the
 * KHR build with bf16 operands) where the context has bf16 matrices
 * (VKATTN_COOPMAT_KHR=1 on a device with VK_KHR_shader_bfloat16's, created
 * without a validation layer older than it). The shapes in turns over the
 * two tunings (`repeat` 0 or 1: test_case_turn), O rescaled under both. */
static void run_bf16_matrix_cases(const char *tuning, const char *shape, uint64_t seed,
                                  unsigned repeat)
{
    assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_TILING", "gpu", 1), 0);
    assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_SHAPE", shape, 1), 0);
    test_env *env = test_env_tuned(tuning);
    vkattn_device_info info;
    coopmat_p_rounding = COOPMAT_BF16_P_ROUNDING;
    if (test_has_float16(env, &info)) {
        bool real = info.cooperative_matrix_khr && info.bf16_cooperative_matrix;
        rng r = {seed};
        static const char *const awkward[] = {"T=1", "non-causal ragged", "Tq>Tk masked rows",
                                              "GQA", "odd D=13 bshd", "kv_len causal GQA",
                                              "two rows odd D GQA"};
        size_t taken = 0;
        for (size_t i = 0; i < sizeof fixed_cases / sizeof fixed_cases[0]; i++) {
            at_case c = fixed_cases[i];
            bool take = c.dtype == BF16;
            for (size_t n = 0; n < sizeof awkward / sizeof awkward[0]; n++)
                take = take || !strcmp(c.name, awkward[n]);
            if (!take || !test_case_turn(taken++, repeat, 2))
                continue;
            c.dtype = BF16;
            run_case(env, &c, coopmat_paths, NPATHS(coopmat_paths), &r);
            if (real)
                run_case(env, &c, coopmat_device_paths, NPATHS(coopmat_device_paths), &r);
        }
        static const at_case rescaled = {"rescaled O", 1, 3, 1, 40, 300, 24, 20, BHSD, true, false,
                                         0, false, 0.f, BF16, 8.f};
        run_case(env, &rescaled, coopmat_paths, NPATHS(coopmat_paths), &r);
        expect_bf16_p(env, VKATTN_FUSED_COOPMAT_EMULATED);
        if (real) {
            run_case(env, &rescaled, coopmat_device_paths, NPATHS(coopmat_device_paths), &r);
            expect_bf16_p(env, VKATTN_FUSED_COOPMAT);
        } else if (info.cooperative_matrix)
            print_message("the real kernel not run: %s has no bf16 matrices in this context\n",
                          info.name);
    }
    coopmat_p_rounding = COOPMAT_P_ROUNDING;
    assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_SHAPE"), 0);
    assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_TILING"), 0);
    test_env_destroy(env);
}

/* `variant` forced on Q = K = V of `dtype` and `shape` is refused as
 * unsupported, with a message that contains `what` and `also` (unless NULL). */
static void expect_refused(test_env *env, vkattn_fused_variant variant, vkattn_dtype dtype,
                           int64_t shape[4], rng *r, const char *what, const char *also)
{
    pair q = pair_random(env, dtype, 4, shape, r, -1.f, 1.f);
    pair o = pair_output(env, 4, shape);
    vkattn_attention_desc d = {.path = VKATTN_PATH_FUSED, .fused_variant = variant};
    assert_int_equal(vkattn_attention(env->gpu, &d, q.gpu, q.gpu, q.gpu, o.gpu),
                     VKATTN_ERROR_UNSUPPORTED);
    const char *why = vkattn_last_error(env->gpu);
    if (!strstr(why, what) || (also && !strstr(why, also)))
        fail_msg("refused with \"%s\"; expected it to say \"%s\"%s%s", why, what,
                 also ? " and " : "", also ? also : "");
    pair_destroy(&q);
    pair_destroy(&o);
}

/* The same under `tuning`, on a shape of 9 rows of 16. */
static void expect_tuned_refusal(const char *tuning, vkattn_fused_variant variant,
                                 vkattn_dtype dtype, const char *what)
{
    test_env *env = test_env_tuned(tuning);
    rng r = {29};
    int64_t shape[4] = {1, 2, 9, 16};
    expect_refused(env, variant, dtype, shape, &r, what, NULL);
    test_env_destroy(env);
}

/* bf16 matrices: with one stage and one buffer, 16x16x16 matrices; with two
 * stages, two buffers and 4x16x16 (two lanes a row on lavapipe's 8). Refused,
 * naming the setting: other inputs than bf16 Q, K and V, the softmax in
 * registers, and the real kernel where the context has no bf16 matrices. */
static void test_coopmat_bf16_matrices(void **state)
{
    test_env *env = *state;
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(env->gpu, &info), VKATTN_OK);
    if (info.float16_arithmetic) {
        expect_tuned_refusal("coopmat_emulated.bf16=2", VKATTN_FUSED_COOPMAT_EMULATED, F16,
                             "tuning coopmat_emulated.bf16=2: the emulated coopmat kernel "
                             "takes bf16 matrices for bf16 Q, K and V only (got f16, f16, f16)");
        expect_tuned_refusal("coopmat_emulated.bf16=2,coopmat_emulated.softmax=2",
                             VKATTN_FUSED_COOPMAT_EMULATED, BF16,
                             "tuning coopmat_emulated.bf16=2 with the softmax in registers: the "
                             "emulated coopmat kernel converts no accumulators to bf16 operands");
    }
    if (info.cooperative_matrix && !(info.cooperative_matrix_khr && info.bf16_cooperative_matrix))
        expect_tuned_refusal("coopmat.bf16=2", VKATTN_FUSED_COOPMAT, BF16,
                             "needs VK_KHR_shader_bfloat16's cooperative matrices");
    run_bf16_matrix_cases("coopmat_emulated.bf16=2,coopmat.bf16=2", "16x16x16", 79, 0);
    run_bf16_matrix_cases("coopmat_emulated.bf16=2,coopmat_emulated.stages=2,"
                          "coopmat_emulated.buffers=2,coopmat.bf16=2,coopmat.buffers=2",
                          "4x16x16", 83, 1);
}

/* Q read from a shared tile by each product (the tuning knob coopmat.q=2)
 * instead of kept in registers: one row block a subgroup, and two with the
 * softmax in registers (4-row matrices: several subgroups, each its own rows
 * of the tile); bf16 Q converted as it is staged there. */
static void test_coopmat_shared_q(void **state)
{
    (void)state;
    run_tuned_coopmat_cases("coopmat_emulated.q=2,coopmat.q=2", "16x16x16", true, 61, 0);
    run_tuned_coopmat_cases("coopmat_emulated.q=2,coopmat_emulated.rows=2,"
                            "coopmat_emulated.softmax=2", "4x16x16", false, 67, 1);
}

/* bf16 inputs far outside f16's range on the coopmat kernels, which convert
 * them exactly by dividing each Q row, each key of K and each V tile by a power
 * of 2: Q near 2^20 (past f16's 65504), K near 2^-20 (f16's subnormals), each
 * row and key at its own power, so that a factor applied to the wrong one
 * moves the scores. V, along the keys: (a) 2^-10, then 2^20 (raising O's unit
 * part-way), then 1; (b) 2^20 for the first 192 keys (a whole number of tiles
 * of every size), 2^-30 after them, with a mask hiding the first 192 from odd
 * rows: those see only the small values, which must keep their bits though
 * 2^50 below the large ones (O's unit lowered). Each output is held to 2e-3
 * (8e-3 on bf16 matrices) of the largest |V| its row sees. Causal and not; tiled small, as on a GPU with
 * two lanes a row (4x16x16 on 8 lanes), and with two stages tiled small
 * (lavapipe takes minutes to compile them tiled as on a GPU), each with one
 * split for half of the four pattern-causal pairs and three for the others;
 * the workgroup-scope kernel's emulated build so too; the real kernels where
 * the device has them, with both. */
enum { RANGE_H = 2, RANGE_T = 400, RANGE_D = 40, RANGE_DV = 24, RANGE_SPLIT_KEY = 192 };

/* `what` on each of `paths` (each pipeline costs lavapipe seconds to compile:
 * callers alternate the emulated kernels' paths over the patterns). */
static void run_range_paths(test_env *env, const at_path *paths, int npaths, const char *what,
                            vkattn_attention_desc d, const pair *q, const pair *k, const pair *v,
                            pair *o, const float *row_scale)
{
    for (int i = 0; i < npaths; i++) {
        char name[192];
        snprintf(name, sizeof name, "%s, %s, %u splits", what,
                 vkattn_fused_variant_name(paths[i].variant), paths[i].kv_splits);
        assert_int_equal(vkattn_tensor_upload(o->gpu, o->host, F32), VKATTN_OK);
        d.path = paths[i].path;
        d.fused_variant = paths[i].variant;
        d.kv_splits = paths[i].kv_splits;
        vkattn_status s = vkattn_attention(env->gpu, &d, q->gpu, k->gpu, v->gpu, o->gpu);
        if (s != VKATTN_OK)
            fail_msg("%s: %s: %s", name, vkattn_status_string(s), vkattn_last_error(env->gpu));
        /* half an ulp of P's rounding: f16's 2^-11 four times over, bf16's 2^-8 twice */
        expect_close(name, o, 0.0, coopmat_p_rounding == COOPMAT_BF16_P_ROUNDING ? 8e-3 : 2e-3,
                     row_scale);
    }
}

/* One context, tuned (`tuning`, "" for the planners' own choices): both
 * patterns, one causal and one not in turns over the contexts (`repeat` 0 or
 * 1: test_case_turn; each pattern meets both over two contexts), each tiling
 * (a tuned context only the coopmat kernel's small tiling and its real build:
 * lavapipe takes minutes to compile two stages tiled as on a GPU). */
static void run_range_cases(const char *tuning, unsigned repeat)
{
    bool tuned = tuning[0] != '\0', bf16_matrices = strstr(tuning, "bf16=2") != NULL;
    test_env *env = test_env_tuned(tuning);
    vkattn_device_info info;
    if (!test_has_float16(env, &info)) {
        test_env_destroy(env);
        return;
    }
    bool real = info.cooperative_matrix &&
                (!bf16_matrices || (info.cooperative_matrix_khr && info.bf16_cooperative_matrix));
    coopmat_p_rounding = bf16_matrices ? COOPMAT_BF16_P_ROUNDING : COOPMAT_P_ROUNDING;
    bool workgroup_scope = test_workgroup_scope(env);
    enum { H = RANGE_H, T = RANGE_T, D = RANGE_D, DV = RANGE_DV };
    rng r = {31};
    int64_t qs[4] = {1, H, T, D}, ks[4] = {1, 1, T, D}, vs[4] = {1, 1, T, DV};
    int64_t os[4] = {1, H, T, DV}, ms[2] = {T, T};
    pair q = pair_random(env, BF16, 4, qs, &r, -1.f, 1.f);
    pair k = pair_random(env, BF16, 4, ks, &r, -1.f, 1.f);
    pair v = pair_random(env, BF16, 4, vs, &r, -1.f, 1.f);
    pair mask = pair_random(env, F32, 2, ms, &r, 0.f, 0.f);
    pair o = pair_output(env, 4, os);
    float *v_unit = malloc(v.count * sizeof *v_unit), *row_scale = malloc(o.count * sizeof *row_scale);
    assert_true(v_unit && row_scale);
    memcpy(v_unit, v.host, v.count * sizeof *v_unit);   /* bf16 values in [-1, 1] */
    for (size_t e = 0; e < q.count; e++)
        q.host[e] = ldexpf(q.host[e], 19 + (int)(e / D % 3));
    for (size_t e = 0; e < k.count; e++)
        k.host[e] = ldexpf(k.host[e], -22 + (int)(e / D % 5));
    for (size_t e = 0; e < mask.count; e++)     /* odd rows: not the first keys */
        mask.host[e] = e / T % 2 == 1 && e % T < RANGE_SPLIT_KEY ? -INFINITY : 0.f;
    pair *inputs[] = {&q, &k, &mask};
    for (int i = 0; i < 3; i++) {   /* powers of 2 of bf16 values: still bf16 */
        assert_int_equal(vkattn_tensor_upload(inputs[i]->gpu, inputs[i]->host, F32), VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(inputs[i]->cpu, inputs[i]->host, F32), VKATTN_OK);
    }
    for (int pattern = 0; pattern < 2; pattern++) {
        double v_max[T];    /* the largest |V| of each key */
        for (size_t j = 0; j < T; j++) {
            int power = pattern == 0 ? (j < T / 3 ? -10 : j < 2 * T / 3 ? 20 : 0)
                                     : (j < RANGE_SPLIT_KEY ? 20 : -30);
            v_max[j] = 0.0;
            for (size_t d = 0; d < DV; d++) {
                v.host[j * DV + d] = ldexpf(v_unit[j * DV + d], power);
                v_max[j] = fmax(v_max[j], fabs(v.host[j * DV + d]));
            }
        }
        assert_int_equal(vkattn_tensor_upload(v.gpu, v.host, F32), VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(v.cpu, v.host, F32), VKATTN_OK);
        for (int causal = 0; causal < 2; causal++) {
            if (!test_case_turn((size_t)(pattern + causal), repeat, 2))
                continue;
            vkattn_attention_desc d = {.causal = causal, .mask = pattern ? mask.cpu : NULL};
            assert_int_equal(vkattn_attention(env->cpu, &d, q.cpu, k.cpu, v.cpu, o.cpu), VKATTN_OK);
            for (size_t e = 0; e < o.count; e++) {
                size_t i = e / DV % T, seen = causal ? i + 1 : T;
                size_t from = pattern && i % 2 == 1 ? RANGE_SPLIT_KEY : 0;
                double m = 0.0;
                for (size_t j = from; j < seen; j++)
                    m = fmax(m, v_max[j]);
                row_scale[e] = (float)m;
            }
            d.mask = pattern ? mask.gpu : NULL;
            /* 0, 1: the emulated coopmat kernel tiled small and as on a GPU;
             * 2: the real one; 3, 4: the workgroup-scope kernel's emulated
             * and real builds (which have one stage) */
            for (int tiling = 0; tiling < 5; tiling++) {
                if ((tiling == 1 && tuned) || (tiling == 2 && !real) ||
                    (tiling >= 3 && tuned) || (tiling == 4 && !workgroup_scope))
                    continue;
                if (tiling == 1) {
                    assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_TILING", "gpu", 1), 0);
                    assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_SHAPE", "4x16x16", 1), 0);
                }
                char what[128];
                snprintf(what, sizeof what, "bf16 past f16's range, V pattern %c%s, %s tiling%s%s",
                         "ab"[pattern], causal ? ", causal" : "",
                         tiling == 1 ? "gpu 4x16x16" : "default", tuned ? ", tuned " : "",
                         tuning);
                int alternate = (pattern + tiling + tuned) % 2;  /* both paths in every context */
                const at_path *paths = tiling == 2   ? coopmat_device_paths
                                       : tiling == 3 ? &workgroup_emulated_paths[alternate]
                                       : tiling == 4 ? workgroup_device_paths
                                                     : &coopmat_paths[alternate];
                int npaths = tiling == 2 || tiling == 4 ? 2 : 1;
                run_range_paths(env, paths, npaths, what, d, &q, &k, &v, &o, row_scale);
                assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_TILING"), 0);
                assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_SHAPE"), 0);
            }
        }
    }
    free(v_unit);
    free(row_scale);
    pair *all[] = {&q, &k, &v, &mask, &o};
    for (int i = 0; i < 5; i++)
        pair_destroy(all[i]);
    test_env_destroy(env);
    coopmat_p_rounding = COOPMAT_P_ROUNDING;
}

static void test_coopmat_bf16_range(void **state)
{
    (void)state;
    run_range_cases("", 0);
    run_range_cases("coopmat_emulated.stages=2,coopmat.stages=2", 1);
    /* two buffers: two stages, the exponents in rotating slots, each tile's
     * V unit computed a step before the tile's P V uses it */
    run_range_cases("coopmat_emulated.buffers=2,coopmat.buffers=2", 0);
    /* bf16 matrices: nothing converted, so V far past f16's range must reach
     * the products as it is; P rounded to bf16 */
    run_range_cases("coopmat_emulated.bf16=2,coopmat.bf16=2", 1);
}

/* The real cooperative-matrix kernel on the same shapes, where the device has
 * matrix units (none in CI: this runs in scripts/gpu-check.sh on a GPU). */
static void test_coopmat_device(void **state)
{
    test_env *env = *state;
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(env->gpu, &info), VKATTN_OK);
    if (!info.cooperative_matrix) {
        print_message("not run: %s has no cooperative matrices\n", info.name);
        return;
    }
    rng r = {19};
    run_coopmat_cases(env, NULL, true, 0, 1, &r);
}

/* Many keys per invocation at head sizes whose loops the driver does not
 * unroll: lavapipe stops such loops after 65535 iterations, so the variants
 * split the keys there even when one split is asked for (CPU_LOOP_BUDGET).
 * Before that, D = 160 with 1024 keys gave errors of 1e34. */
static void test_long_loops(void **state)
{
    test_env *env = *state;
    rng r = {18};
    static const at_path paths[] = {
        {VKATTN_PATH_AUTO, VKATTN_FUSED_AUTO, 0},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 1},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 1},
    };
    static const at_case cases[] = {
        {"D=160 1100 keys", 1, 2, 1, 9, 1100, 160, 160, BHSD, false, false, 0, false, 0.f, F32, 1.f},
        {"D=256 600 keys",  1, 1, 1, 5,  600, 256, 200, BSHD, true,  false, 0, false, 0.f, F32, 1.f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(env, &cases[i], paths, NPATHS(paths), &r);
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(env->gpu, &info), VKATTN_OK);
    if (info.float16_arithmetic) {
        static const at_path coopmat[] = {{VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_EMULATED, 1}};
        at_case c = {"coopmat 5000 keys", 1, 1, 1, 3, 5000, 128, 128, BHSD, true, false, 0, false,
                     0.f, F16, 1.f};
        run_case(env, &c, coopmat, NPATHS(coopmat), &r);
    }
}

/* vkattn_attention_choose names what vkattn_attention runs: the forced path,
 * variant and splits as given; AUTO's choice, which then runs and matches the
 * reference; the unfused path where asked; the CPU backend's one path; what
 * the softmax weights are rounded to (f32 kernels: not at all; the coopmat
 * kernels: f16; on bf16 matrices bf16, test_coopmat_bf16_matrices); and the
 * same argument errors as the call. */
static void test_choice(void **state)
{
    test_env *env = *state;
    rng r = {21};
    int64_t shape[4] = {1, 2, 40, 16};
    pair q = pair_random(env, F32, 4, shape, &r, -1.f, 1.f);
    pair o = pair_output(env, 4, shape);
    vkattn_attention_choice ch;
    vkattn_attention_desc d = {.causal = true, .path = VKATTN_PATH_FUSED,
                               .fused_variant = VKATTN_FUSED_TILED, .kv_splits = 2};
    assert_int_equal(vkattn_attention_choose(env->gpu, &d, q.gpu, q.gpu, q.gpu, o.gpu, &ch),
                     VKATTN_OK);
    assert_int_equal(ch.path, VKATTN_PATH_FUSED);
    assert_int_equal(ch.fused_variant, VKATTN_FUSED_TILED);
    assert_int_equal(ch.kv_splits, 2);
    assert_int_equal(ch.weights_dtype, F32);

    d = (vkattn_attention_desc){.causal = true};
    assert_int_equal(vkattn_attention_choose(env->gpu, &d, q.gpu, q.gpu, q.gpu, o.gpu, &ch),
                     VKATTN_OK);
    assert_int_equal(ch.path, VKATTN_PATH_FUSED);
    assert_true(ch.fused_variant == VKATTN_FUSED_ROWS || ch.fused_variant == VKATTN_FUSED_TILED);
    assert_true(ch.kv_splits >= 1);
    d.path = VKATTN_PATH_FUSED, d.fused_variant = ch.fused_variant, d.kv_splits = ch.kv_splits;
    assert_int_equal(vkattn_attention(env->gpu, &d, q.gpu, q.gpu, q.gpu, o.gpu), VKATTN_OK);
    assert_int_equal(vkattn_attention(env->cpu, &d, q.cpu, q.cpu, q.cpu, o.cpu), VKATTN_OK);
    expect_close("the chosen variant", &o, 1e-5, 0.0, NULL);

    /* The decode kernel refuses more query rows per kv head than it holds,
     * saying how many; the names of the variants. */
    d = (vkattn_attention_desc){.causal = true, .path = VKATTN_PATH_FUSED,
                                .fused_variant = VKATTN_FUSED_DECODE};
    assert_int_equal(vkattn_attention_choose(env->gpu, &d, q.gpu, q.gpu, q.gpu, o.gpu, &ch),
                     VKATTN_ERROR_UNSUPPORTED);
    assert_non_null(strstr(vkattn_last_error(env->gpu), "query rows per kv head"));
    assert_string_equal(vkattn_fused_variant_name(VKATTN_FUSED_DECODE), "decode");
    assert_string_equal(vkattn_fused_variant_name(VKATTN_FUSED_AUTO), "auto");
    assert_string_equal(vkattn_fused_variant_name((vkattn_fused_variant)99), "?");

    d = (vkattn_attention_desc){.path = VKATTN_PATH_UNFUSED};
    assert_int_equal(vkattn_attention_choose(env->gpu, &d, q.gpu, q.gpu, q.gpu, o.gpu, &ch),
                     VKATTN_OK);
    assert_int_equal(ch.path, VKATTN_PATH_UNFUSED);
    assert_int_equal(ch.kv_splits, 0);
    assert_int_equal(ch.weights_dtype, F32);
    assert_int_equal(vkattn_attention_choose(env->cpu, &d, q.cpu, q.cpu, q.cpu, o.cpu, &ch),
                     VKATTN_OK);
    assert_int_equal(ch.path, VKATTN_PATH_AUTO);

    /* The call's own errors: an output of the wrong shape, a NULL result. */
    int64_t wrong[4] = {1, 2, 41, 16};
    pair bad = pair_output(env, 4, wrong);
    assert_int_equal(vkattn_attention_choose(env->gpu, &d, q.gpu, q.gpu, q.gpu, bad.gpu, &ch),
                     VKATTN_ERROR_SHAPE_MISMATCH);
    assert_int_equal(vkattn_attention_choose(env->gpu, &d, q.gpu, q.gpu, q.gpu, o.gpu, NULL),
                     VKATTN_ERROR_INVALID_ARGUMENT);
    d = (vkattn_attention_desc){.path = VKATTN_PATH_FUSED, .fused_variant = VKATTN_FUSED_COOPMAT_EMULATED};
    assert_int_equal(vkattn_attention_choose(env->gpu, &d, q.gpu, q.gpu, q.gpu, o.gpu, &ch),
                     VKATTN_ERROR_UNSUPPORTED); /* f32 inputs */
    assert_non_null(strstr(vkattn_last_error(env->gpu), "f16 Q, K and V"));
    vkattn_device_info info;
    if (test_has_float16(env, &info)) {
        pair q16 = pair_random(env, F16, 4, shape, &r, -1.f, 1.f);
        assert_int_equal(vkattn_attention_choose(env->gpu, &d, q16.gpu, q16.gpu, q16.gpu, o.gpu,
                                                 &ch), VKATTN_OK);
        assert_int_equal(ch.weights_dtype, F16);
        pair_destroy(&q16);
    }
    pair_destroy(&bad);
    pair_destroy(&q);
    pair_destroy(&o);
}

/* What the variant table refuses, and why: the real coopmat kernel where the
 * device has no VK_NV_cooperative_matrix, the coopmat kernels on f32 inputs;
 * and AUTO with VKATTN_COOPMAT=1 still runs (on another variant) there. */
static void test_coopmat_refusals(void **state)
{
    test_env *env = *state;
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(env->gpu, &info), VKATTN_OK);
    rng r = {17};
    int64_t shape[4] = {1, 2, 9, 16};
    pair q16 = pair_random(env, F16, 4, shape, &r, -1.f, 1.f);
    pair q32 = pair_random(env, F32, 4, shape, &r, -1.f, 1.f);
    pair o = pair_output(env, 4, shape);
    vkattn_attention_desc d = {.causal = true, .path = VKATTN_PATH_FUSED};
    if (!info.cooperative_matrix) {
        d.fused_variant = VKATTN_FUSED_COOPMAT;
        assert_int_equal(vkattn_attention(env->gpu, &d, q16.gpu, q16.gpu, q16.gpu, o.gpu),
                         VKATTN_ERROR_UNSUPPORTED);
        assert_non_null(strstr(vkattn_last_error(env->gpu), "VK_NV_cooperative_matrix"));
    }
    d.fused_variant = VKATTN_FUSED_COOPMAT_EMULATED;
    assert_int_equal(vkattn_attention(env->gpu, &d, q32.gpu, q16.gpu, q16.gpu, o.gpu),
                     VKATTN_ERROR_UNSUPPORTED);
    assert_non_null(strstr(vkattn_last_error(env->gpu), "f16 or bf16 Q, K and V (got f32, f16, f16)"));

    /* Matrices whose height neither divides the subgroup size nor is divided
     * by it leave softmax rows the lanes cannot share out: refused, naming both
     * (the subgroup size the kernel is specialized for, kernel_subgroup_size). */
    vkattn_status s;
    uint32_t sg = info.subgroup_size_required ? info.subgroup_size : info.subgroup_size_min;
    if (info.float16_arithmetic && sg >= 4) {
        uint32_t m = sg >= 64 ? 48 : 3 * sg / 2;
        char matrix[32], expected[64];
        snprintf(matrix, sizeof matrix, "%ux16x16", m);
        snprintf(expected, sizeof expected, "%u-row matrices and subgroups of %u", m, sg);
        assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_SHAPE", matrix, 1), 0);
        s = vkattn_attention(env->gpu, &d, q16.gpu, q16.gpu, q16.gpu, o.gpu);
        assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_SHAPE"), 0);
        assert_int_equal(s, VKATTN_ERROR_UNSUPPORTED);
        assert_non_null(strstr(vkattn_last_error(env->gpu), expected));
    }

    const char *was = getenv("VKATTN_COOPMAT");
    char saved[8] = "";
    if (was)
        snprintf(saved, sizeof saved, "%s", was);
    assert_int_equal(setenv("VKATTN_COOPMAT", "1", 1), 0);
    d.fused_variant = VKATTN_FUSED_AUTO;
    s = vkattn_attention(env->gpu, &d, q16.gpu, q16.gpu, q16.gpu, o.gpu);
    /* Restored before anything may fail. */
    assert_int_equal(was ? setenv("VKATTN_COOPMAT", saved, 1) : unsetenv("VKATTN_COOPMAT"), 0);
    assert_int_equal(s, VKATTN_OK);
    assert_int_equal(vkattn_attention(env->cpu, &d, q16.cpu, q16.cpu, q16.cpu, o.cpu), VKATTN_OK);
    expect_close("auto with VKATTN_COOPMAT=1", &o, 1e-5 + (info.cooperative_matrix ? 1e-3 : 0),
                 0.0, NULL);
    pair_destroy(&q16);
    pair_destroy(&q32);
    pair_destroy(&o);
}

/* The timing diagnostic coopmat.ablate (parts of the tile step left out, for
 * wrong results; coopmat_workgroup.ablate alike): ignored with a warning
 * unless VKATTN_DIAGNOSTICS=1, which a tuning string alone never sets; with
 * it, the bits reach the kernel: without the P V products every output is 0,
 * and with the rest left out too the kernel still runs to its end. */
static void test_coopmat_ablation(void **state)
{
    (void)state;
    int64_t shape[4] = {1, 2, 37, 24};
    assert_int_equal(unsetenv("VKATTN_DIAGNOSTICS"), 0);
    test_env *env = test_env_tuned("coopmat_emulated.ablate=4");
    vkattn_device_info info;
    if (!test_has_float16(env, &info)) {
        test_env_destroy(env);
        return;
    }
    assert_non_null(strstr(env->gpu_log.last_warning, "taken only with VKATTN_DIAGNOSTICS=1"));
    rng r = {59};
    at_case c = {"ablate refused", 1, 2, 2, 37, 37, 24, 24, BHSD, true, false, 0, false, 0.f, F16,
                 1.f};
    run_case(env, &c, coopmat_paths, NPATHS(coopmat_paths), &r);
    test_env_destroy(env);

    /* Each kernel's bits reach it: without the P V products (4), or without
     * the softmax's arithmetic (1: no row's sum grows, though P is still
     * written, from the raw scores), every output is 0; the others run to
     * their end. Head size 64
     * for the workgroup-scope kernel's loads left out (8): its whole tiles
     * then come straight from the buffers (from the first tile's rows). */
    static const struct {
        const char *tuning;
        vkattn_fused_variant variant;
        bool zeros;
        int64_t d;
    } ablations[] = {
        {"coopmat_emulated.ablate=4", VKATTN_FUSED_COOPMAT_EMULATED, true, 24},
        {"coopmat_emulated.ablate=1", VKATTN_FUSED_COOPMAT_EMULATED, true, 24},
        {"coopmat_emulated.ablate=15", VKATTN_FUSED_COOPMAT_EMULATED, false, 24},
        {"coopmat_emulated.ablate=3,coopmat_emulated.softmax=2", VKATTN_FUSED_COOPMAT_EMULATED,
         false, 24},
        {"coopmat_workgroup_emulated.ablate=4", VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED, true, 24},
        {"coopmat_workgroup_emulated.ablate=1", VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED, true, 24},
        {"coopmat_workgroup_emulated.ablate=10", VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED, false,
         64},
        {"coopmat_workgroup_emulated.ablate=12", VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED, true,
         64},
    };
    assert_int_equal(setenv("VKATTN_DIAGNOSTICS", "1", 1), 0);
    for (size_t a = 0; a < sizeof ablations / sizeof ablations[0]; a++) {
        env = test_env_tuned(ablations[a].tuning);
        assert_non_null(strstr(env->gpu_log.last_warning, "wrong on purpose"));
        if (strstr(ablations[a].tuning, "softmax=2") && test_register_softmax_refused(env)) {
            test_env_destroy(env);
            continue;
        }
        int64_t sized[4] = {shape[0], shape[1], shape[2], ablations[a].d};
        pair q = pair_random(env, F16, 4, sized, &r, -1.f, 1.f);
        pair o = pair_output(env, 4, sized);
        vkattn_attention_desc d = {.path = VKATTN_PATH_FUSED, .causal = true,
                                   .fused_variant = ablations[a].variant};
        assert_int_equal(vkattn_attention(env->gpu, &d, q.gpu, q.gpu, q.gpu, o.gpu), VKATTN_OK);
        float *got = malloc(o.count * sizeof *got);
        assert_non_null(got);
        assert_int_equal(vkattn_tensor_download(o.gpu, got, F32), VKATTN_OK);
        size_t nonzero = 0;
        for (size_t i = 0; i < o.count; i++)
            nonzero += got[i] != 0.f;
        if (ablations[a].zeros && nonzero)
            fail_msg("%s: %zu of %zu outputs are not 0", ablations[a].tuning, nonzero, o.count);
        free(got);
        pair_destroy(&q);
        pair_destroy(&o);
        test_env_destroy(env);
    }
    assert_int_equal(unsetenv("VKATTN_DIAGNOSTICS"), 0);
}

/* Tuned plans (vkattn_context_desc.tuning, VKATTN_TUNE: the knobs a sweep on
 * a GPU turns) give the reference's results on awkward shapes: tiles of 12
 * keys, four rows an invocation, two lanes a row, small workgroups; the decode
 * kernel one subgroup a workgroup and few splits; the emulated coopmat kernel
 * two subgroups on a CPU device; causal row blocks in grid order (the default
 * launches the heaviest first). A value a kernel cannot take is refused
 * naming the setting; malformed entries are warned about and ignored. */
static void test_tuning(void **state)
{
    (void)state;
    /* A small workgroup of whole subgroups: 16 invocations on lavapipe (8 lanes),
     * 64 on a GPU of 32 lanes, where 16 is refused. */
    test_env *env = test_env_create();
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(env->gpu, &info), VKATTN_OK);
    test_env_destroy(env);
    char tune[256];
    snprintf(tune, sizeof tune, "tiled.rows=4, tiled.keys=20,tiled.lanes=2,tiled.workgroup=%u,"
             "decode.subgroups=1,decode.target=5,coopmat_emulated.subgroups=2,tiled.rows=9,"
             "tiled.order=2,coopmat_emulated.order=2,bogus",
             2 * info.subgroup_size_max);
    env = test_env_tuned(tune);
    assert_true(env->gpu_log.warnings >= 2);
    assert_non_null(strstr(env->gpu_log.last_warning, "\"bogus\" ignored: not kernel.knob=N"));
    rng r = {23};

    static const at_path tiled[] = {
        {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 0},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 3},
    };
    static const char *const names[] = {"T=1", "non-causal ragged", "GQA", "odd D=5 Dv=7",
                                        "kv_len causal GQA", "two rows odd D GQA"};
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++)
        for (size_t i = 0; i < sizeof fixed_cases / sizeof fixed_cases[0]; i++)
            if (!strcmp(fixed_cases[i].name, names[n]))
                run_case(env, &fixed_cases[i], tiled, NPATHS(tiled), &r);

    static const at_path decode[] = {{VKATTN_PATH_FUSED, VKATTN_FUSED_DECODE, 0}};
    static const at_case decode_cases[] = {
        {"tuned decode GQA",    1, 8, 2, 1, 300, 64, 64, BHSD, true, false, 0, false, 0.f, F32, 1.f},
        {"tuned chunk kv_len",  3, 4, 2, 3, 150, 40, 40, BSHD, true, false, 0, true,  0.f, F16, 1.f},
    };
    for (size_t i = 0; i < sizeof decode_cases / sizeof decode_cases[0]; i++)
        run_case(env, &decode_cases[i], decode, NPATHS(decode), &r);

    /* 20 keys of D = Dv = 576 take 92160 bytes, more than any device's shared
     * memory (64 KiB at most): refused, where the planner's own tiles fit. */
    int64_t wide[4] = {1, 1, 2, 576};
    pair q = pair_random(env, F32, 4, wide, &r, -1.f, 1.f);
    pair o = pair_output(env, 4, wide);
    vkattn_attention_desc d = {.path = VKATTN_PATH_FUSED, .fused_variant = VKATTN_FUSED_TILED};
    assert_int_equal(vkattn_attention(env->gpu, &d, q.gpu, q.gpu, q.gpu, o.gpu),
                     VKATTN_ERROR_UNSUPPORTED);
    assert_non_null(strstr(vkattn_last_error(env->gpu), "tuning tiled.keys=20: "));
    pair_destroy(&q);
    pair_destroy(&o);

    if (test_has_float16(env, &info)) {
        at_case c = {"tuned coopmat", 2, 4, 2, 37, 45, 40, 24, BSHD, true, false, 0, true, 0.f,
                     F16, 1.f};
        run_case(env, &c, coopmat_paths, NPATHS(coopmat_paths), &r);
        /* Two subgroups' tiles at D = 256 outgrow lavapipe's 32 KiB (and the
         * 48 KiB of GPUs, even at 16 keys), and a tuned count is not shrunk to
         * fit. The most keys tried is 16 on CPU devices, 64 on GPUs. */
        int64_t shape[4] = {1, 1, 40, 256};
        expect_refused(env, VKATTN_FUSED_COOPMAT_EMULATED, F16, shape, &r,
                       "(2 subgroups of 16 rows, at most ", " keys: the tuning)");
    }
    test_env_destroy(env);

    /* Three 4-row blocks a subgroup: 12 rows, which neither divide nor are
     * divided by a subgroup of 8 to 128 lanes: refused, naming the setting. On
     * 4 lanes (lavapipe's narrow run) each lane takes 3 rows: it runs. */
    env = test_env_tuned("coopmat_emulated.rows=3");
    if (test_has_float16(env, &info)) {
        assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_SHAPE", "4x16x16", 1), 0);
        if (12 % info.subgroup_size == 0) {
            at_case c = {"3 row blocks on 4 lanes", 1, 2, 2, 30, 30, 24, 24, BHSD, true, false,
                         0, true, 0.f, F16, 1.f};
            run_case(env, &c, coopmat_paths, NPATHS(coopmat_paths), &r);
        } else {
            int64_t shape[4] = {1, 2, 30, 24};
            expect_refused(env, VKATTN_FUSED_COOPMAT_EMULATED, F16, shape, &r,
                           "12 rows a subgroup (4-row matrices, tuning coopmat_emulated.rows=3) "
                           "and subgroups of ", NULL);
        }
        assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_SHAPE"), 0);
    }
    test_env_destroy(env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_cases),
        cmocka_unit_test(test_head_sizes),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_coopmat_emulated),
        cmocka_unit_test(test_coopmat_workgroup_emulated),
        cmocka_unit_test(test_workgroup_spirv_forms),
        cmocka_unit_test(test_coopmat_workgroup_device),
        cmocka_unit_test(test_coopmat_emulated_gpu_tiling),
        cmocka_unit_test(test_coopmat_device),
        cmocka_unit_test(test_coopmat_two_stages),
        cmocka_unit_test(test_coopmat_two_buffers),
        cmocka_unit_test(test_coopmat_bf16_matrices),
        cmocka_unit_test(test_coopmat_row_tiles),
        cmocka_unit_test(test_coopmat_register_softmax),
        cmocka_unit_test(test_coopmat_shared_q),
        cmocka_unit_test(test_coopmat_bf16_range),
        cmocka_unit_test(test_choice),
        cmocka_unit_test(test_coopmat_refusals),
        cmocka_unit_test(test_tuning),
        cmocka_unit_test(test_coopmat_ablation),
        cmocka_unit_test(test_long_loops),
        cmocka_unit_test(test_random_sweep),
        cmocka_unit_test(test_long_sequence),
        cmocka_unit_test(test_unfused_chunking),
    };
    return test_run_group(tests, test_env_setup, test_env_teardown);
}
