/* 16-bit outputs (F16, BF16) of every op, on the GPU and the CPU backend: the
 * op computes in f32 and rounds into the output (src/ops/wide_output.c, and
 * shaders/narrow.comp on Vulkan). Each case runs an op twice on the same inputs,
 * into an F32 output and into a 16-bit one: the 16-bit result must be the f32
 * result rounded to nearest even, bit for bit, as the host rounds it (the
 * public download into F16 or BF16). The f32 results themselves are checked
 * against the CPU reference by every other test. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const vkattn_dtype narrow_types[] = {VKATTN_DTYPE_F16, VKATTN_DTYPE_BF16};

static const char *dtype_label(vkattn_dtype d)
{
    return d == VKATTN_DTYPE_F16 ? "f16" : d == VKATTN_DTYPE_BF16 ? "bf16" : "f32";
}

/* An output tensor holding a sentinel (0x5a5a bits in 16-bit tensors), so that
 * an element the narrowing forgets, or an op that fails and still writes, shows. */
static vkattn_tensor *sentinel_output(vkattn_context *ctx, vkattn_dtype dtype, int ndim,
                                      const int64_t *shape)
{
    vkattn_tensor_desc desc = {.dtype = dtype, .ndim = ndim};
    memcpy(desc.shape, shape, (size_t)ndim * sizeof *shape);
    vkattn_tensor *t = NULL;
    assert_int_equal(vkattn_tensor_create(ctx, &desc, &t), VKATTN_OK);
    size_t n = shape_count(ndim, shape);
    float *fill = malloc(n * sizeof *fill);
    assert_non_null(fill);
    for (size_t i = 0; i < n; i++)
        fill[i] = 203.25f; /* 0x5a5a in f16 */
    assert_int_equal(vkattn_tensor_upload(t, fill, VKATTN_DTYPE_F32), VKATTN_OK);
    free(fill);
    return t;
}

/* `narrow` (16-bit) must hold `wide` (F32) rounded to its dtype, bit for bit. */
static void expect_narrowed(const char *name, vkattn_tensor *wide, vkattn_tensor *narrow)
{
    vkattn_tensor_desc d = vkattn_tensor_get_desc(narrow);
    size_t n = shape_count(d.ndim, d.shape);
    uint16_t *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    float *f32 = malloc(n * sizeof *f32);
    assert_non_null(want);
    assert_non_null(got);
    assert_non_null(f32);
    assert_int_equal(vkattn_tensor_download(wide, f32, VKATTN_DTYPE_F32), VKATTN_OK);
    assert_int_equal(vkattn_tensor_download(wide, want, d.dtype), VKATTN_OK);
    assert_int_equal(vkattn_tensor_download(narrow, got, d.dtype), VKATTN_OK);
    for (size_t i = 0; i < n; i++)
        if (want[i] != got[i])
            fail_msg("%s %s: element %zu of %zu is 0x%04x, want 0x%04x (f32 %a = %g)", name,
                     dtype_label(d.dtype), i, n, got[i], want[i], (double)f32[i],
                     (double)f32[i]);
    free(want);
    free(got);
    free(f32);
}

/* One op on one context, writing `out`. */
typedef vkattn_status (*op_fn)(vkattn_context *ctx, void *args, vkattn_tensor *out);

/* Runs `op` into an F32 output and into F16 and BF16 ones, on the GPU and the
 * CPU backend, and checks the narrowing; gpu_args and cpu_args give the op
 * its inputs on each. */
static void check_op(test_env *env, const char *name, op_fn op, void *gpu_args, void *cpu_args,
                     int ndim, const int64_t *shape)
{
    for (int backend = 0; backend < 2; backend++) {
        vkattn_context *ctx = backend ? env->cpu : env->gpu;
        void *args = backend ? cpu_args : gpu_args;
        char label[160];
        snprintf(label, sizeof label, "%s (%s)", name, backend ? "cpu" : "gpu");
        vkattn_tensor *wide = sentinel_output(ctx, VKATTN_DTYPE_F32, ndim, shape);
        assert_int_equal(op(ctx, args, wide), VKATTN_OK);
        for (size_t t = 0; t < sizeof narrow_types / sizeof narrow_types[0]; t++) {
            vkattn_tensor *narrow = sentinel_output(ctx, narrow_types[t], ndim, shape);
            vkattn_status s = op(ctx, args, narrow);
            if (s != VKATTN_OK)
                fail_msg("%s into %s: status %d", label, dtype_label(narrow_types[t]), (int)s);
            expect_narrowed(label, wide, narrow);
            vkattn_tensor_destroy(narrow);
        }
        vkattn_tensor_destroy(wide);
    }
}

/* ------------------------------------------------------ head transpose -- */

static vkattn_status transpose_op(vkattn_context *ctx, void *args, vkattn_tensor *out)
{
    return vkattn_head_transpose(ctx, args, out);
}

static float from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The rounding's edge cases, moved through a transpose (a copy) into 16-bit
 * outputs: ties to even in both types, f16 overflow and its exact threshold,
 * f16 subnormals and the ties below them, f32 subnormals, signed zeros, Inf
 * and NaN, and bf16's own ties and overflow. Element counts not a multiple of 4
 * (the narrowing works four at a time). */
static void test_rounding_edges(void **state)
{
    test_env *env = *state;
    const float edges[] = {
        0.0f, -0.0f, 1.0f, -1.0f,
        1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, -(1.0f + 0x1p-11f),    /* f16 ties */
        65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e6f, 3.0e38f,        /* f16 overflow */
        0x1p-24f, 0x1p-25f, 1.5f * 0x1p-25f, 3 * 0x1p-25f, -0x1p-25f,   /* f16 subnormals */
        0x1p-14f, 0x1p-14f - 0x1p-25f, 0x1p-14f - 0x1p-26f, 6.0e-5f,
        1e-40f, -1e-45f,                                                 /* f32 subnormals */
        1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f,  /* bf16 ties */
        from_bits(0x7f7fffffu), from_bits(0x7f7f8000u), from_bits(0x7f7f7fffu), /* bf16 overflow */
        INFINITY, -INFINITY, from_bits(0x7fc00000u), from_bits(0xffc12345u), from_bits(0x7f812345u),
        3.14159265f, -2.71828183f, 1234.5678f, 1e-3f, -7e-6f,
    };
    size_t n = sizeof edges / sizeof edges[0];
    for (size_t len = 1; len <= n; len += (len < 8 ? 1 : 13)) {
        vkattn_tensor *x[2];
        for (int backend = 0; backend < 2; backend++) {
            vkattn_tensor_desc desc = {.dtype = VKATTN_DTYPE_F32, .ndim = 4,
                                       .shape = {1, (int64_t)len, 1, 1}};
            assert_int_equal(vkattn_tensor_create(backend ? env->cpu : env->gpu, &desc, &x[backend]),
                             VKATTN_OK);
            assert_int_equal(vkattn_tensor_upload(x[backend], edges, VKATTN_DTYPE_F32), VKATTN_OK);
        }
        char name[64];
        snprintf(name, sizeof name, "rounding edges, %zu elements", len);
        int64_t out_shape[4] = {1, 1, (int64_t)len, 1};
        check_op(env, name, transpose_op, x[0], x[1], 4, out_shape);
        vkattn_tensor_destroy(x[0]);
        vkattn_tensor_destroy(x[1]);
    }
}

/* Random values over many binades, more than one workgroup of the narrowing. */
static void test_rounding_random(void **state)
{
    test_env *env = *state;
    rng r = {91};
    enum { N = 3 * 1024 + 7 };
    float *v = malloc(N * sizeof *v);
    assert_non_null(v);
    for (int i = 0; i < N; i++)
        v[i] = ldexpf(rng_uniform(&r, -1.0f, 1.0f), rng_int(&r, -30, 20));
    vkattn_tensor *x[2];
    for (int backend = 0; backend < 2; backend++) {
        vkattn_tensor_desc desc = {.dtype = VKATTN_DTYPE_F32, .ndim = 4, .shape = {1, 1, N, 1}};
        assert_int_equal(vkattn_tensor_create(backend ? env->cpu : env->gpu, &desc, &x[backend]),
                         VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(x[backend], v, VKATTN_DTYPE_F32), VKATTN_OK);
    }
    int64_t out_shape[4] = {1, N, 1, 1};
    check_op(env, "random binades", transpose_op, x[0], x[1], 4, out_shape);
    vkattn_tensor_destroy(x[0]);
    vkattn_tensor_destroy(x[1]);
    free(v);
}

/* ----------------------------------------------------------- attention -- */

typedef struct attention_args {
    vkattn_attention_desc desc;
    const vkattn_tensor *q, *k, *v;
} attention_args;

static vkattn_status attention_op(vkattn_context *ctx, void *args, vkattn_tensor *out)
{
    attention_args *a = args;
    return vkattn_attention(ctx, &a->desc, a->q, a->k, a->v, out);
}

typedef struct attention_case {
    const char *name;
    int64_t B, H, Hkv, Tq, Tk, D;
    vkattn_attention_path path;
    vkattn_fused_variant variant;
    uint32_t splits;
    bool causal;
} attention_case;

/* Every fused variant this device runs, with and without key splits (the
 * combine pass writes the output then), and the unfused path, into 16-bit
 * outputs whose element counts are not a multiple of 4. */
static void test_attention(void **state)
{
    test_env *env = *state;
    static const attention_case cases[] = {
        {"auto", 2, 3, 3, 5, 7, 5, VKATTN_PATH_AUTO, VKATTN_FUSED_AUTO, 0, true},
        {"rows", 1, 4, 2, 9, 13, 7, VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 1, true},
        {"rows, 3 splits", 1, 4, 2, 1, 41, 7, VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 3, false},
        {"tiled", 1, 3, 1, 17, 17, 9, VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 1, true},
        {"tiled, 2 splits", 2, 2, 2, 3, 37, 16, VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 2, false},
        {"decode, 4 splits", 1, 8, 2, 1, 100, 33, VKATTN_PATH_FUSED, VKATTN_FUSED_DECODE, 4, false},
        {"coopmat emulated", 1, 2, 1, 19, 23, 16, VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_EMULATED,
         1, true},
        {"unfused", 2, 3, 1, 6, 11, 3, VKATTN_PATH_UNFUSED, VKATTN_FUSED_AUTO, 0, true},
    };
    rng r = {17};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const attention_case *c = &cases[i];
        vkattn_dtype in_dtype = c->variant == VKATTN_FUSED_COOPMAT_EMULATED ? VKATTN_DTYPE_F16
                                                                            : VKATTN_DTYPE_F32;
        int64_t qs[4] = {c->B, c->H, c->Tq, c->D}, ks[4] = {c->B, c->Hkv, c->Tk, c->D};
        pair q = pair_random(env, in_dtype, 4, qs, &r, -3.f, 3.f);
        pair k = pair_random(env, in_dtype, 4, ks, &r, -3.f, 3.f);
        pair v = pair_random(env, in_dtype, 4, ks, &r, -40.f, 40.f);
        attention_args ga = {.desc = {.causal = c->causal, .path = c->path,
                                      .fused_variant = c->variant, .kv_splits = c->splits},
                             .q = q.gpu, .k = k.gpu, .v = v.gpu};
        attention_args ca = ga;
        ca.desc.path = VKATTN_PATH_AUTO;
        ca.desc.fused_variant = VKATTN_FUSED_AUTO;
        ca.desc.kv_splits = 0;
        ca.q = q.cpu, ca.k = k.cpu, ca.v = v.cpu;
        char name[96];
        snprintf(name, sizeof name, "attention %s", c->name);
        check_op(env, name, attention_op, &ga, &ca, 4, qs);
        pair_destroy(&q);
        pair_destroy(&k);
        pair_destroy(&v);
    }
}

/* Packed queries whose O has rows in no sequence (before the first, after the
 * last): those rows are zero in every output dtype, after other ops have left
 * other values in the f32 scratch the 16-bit outputs go through. */
static void test_packed_gaps(void **state)
{
    test_env *env = *state;
    rng r = {19};
    const int32_t cu_q[4] = {2, 5, 5, 12}, cu_k[4] = {0, 9, 13, 30};
    int64_t qs[3] = {15, 4, 8}, ks[3] = {30, 2, 8};
    pair q = pair_random(env, VKATTN_DTYPE_F32, 3, qs, &r, -2.f, 2.f);
    pair k = pair_random(env, VKATTN_DTYPE_F32, 3, ks, &r, -2.f, 2.f);
    pair v = pair_random(env, VKATTN_DTYPE_F32, 3, ks, &r, 5.f, 9.f);
    vkattn_tensor *cq[2], *ck[2];
    for (int backend = 0; backend < 2; backend++) {
        vkattn_context *ctx = backend ? env->cpu : env->gpu;
        vkattn_tensor_desc d = {.dtype = VKATTN_DTYPE_I32, .ndim = 1, .shape = {4}};
        assert_int_equal(vkattn_tensor_create(ctx, &d, &cq[backend]), VKATTN_OK);
        assert_int_equal(vkattn_tensor_create(ctx, &d, &ck[backend]), VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(cq[backend], cu_q, VKATTN_DTYPE_I32), VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(ck[backend], cu_k, VKATTN_DTYPE_I32), VKATTN_OK);
    }
    attention_args g = {.desc = {.causal = true, .cu_seqlens_q = cq[0], .cu_seqlens_k = ck[0]},
                        .q = q.gpu, .k = k.gpu, .v = v.gpu};
    attention_args c = {.desc = {.causal = true, .cu_seqlens_q = cq[1], .cu_seqlens_k = ck[1]},
                        .q = q.cpu, .k = k.cpu, .v = v.cpu};
    check_op(env, "attention packed, rows in no sequence", attention_op, &g, &c, 3, qs);
    /* And the gap rows are zero (the sentinel is gone), not merely alike. */
    float o[15 * 4 * 8];
    vkattn_tensor *out = sentinel_output(env->gpu, VKATTN_DTYPE_F16, 3, qs);
    assert_int_equal(attention_op(env->gpu, &g, out), VKATTN_OK);
    assert_int_equal(vkattn_tensor_download(out, o, VKATTN_DTYPE_F32), VKATTN_OK);
    for (int row = 0; row < 15; row++)
        for (int e = 0; e < 32; e++)
            if ((row < 2 || row >= 12) && o[row * 32 + e] != 0.0f)
                fail_msg("row %d (in no sequence) holds %g", row, (double)o[row * 32 + e]);
    vkattn_tensor_destroy(out);
    for (int backend = 0; backend < 2; backend++) {
        vkattn_tensor_destroy(cq[backend]);
        vkattn_tensor_destroy(ck[backend]);
    }
    pair_destroy(&q);
    pair_destroy(&k);
    pair_destroy(&v);
}

/* An op that fails leaves a 16-bit output as it was, and an I32 output is
 * refused with a message naming it. */
static void test_failures_leave_output(void **state)
{
    test_env *env = *state;
    rng r = {3};
    int64_t s4[4] = {1, 2, 5, 8};
    pair q = pair_random(env, VKATTN_DTYPE_F32, 4, s4, &r, -1.f, 1.f);
    /* A forced variant that cannot run: the real coopmat kernel with f32 inputs. */
    attention_args a = {.desc = {.path = VKATTN_PATH_FUSED, .fused_variant = VKATTN_FUSED_COOPMAT},
                        .q = q.gpu, .k = q.gpu, .v = q.gpu};
    for (size_t t = 0; t < sizeof narrow_types / sizeof narrow_types[0]; t++) {
        vkattn_tensor *o = sentinel_output(env->gpu, narrow_types[t], 4, s4);
        assert_int_equal(attention_op(env->gpu, &a, o), VKATTN_ERROR_UNSUPPORTED);
        uint16_t got[80];
        assert_int_equal(vkattn_tensor_download(o, got, narrow_types[t]), VKATTN_OK);
        for (int i = 0; i < 80; i++)
            assert_int_equal(got[i], narrow_types[t] == VKATTN_DTYPE_F16 ? 0x5a5a : 0x434b);
        vkattn_tensor_destroy(o);
    }
    vkattn_tensor_desc idesc = {.dtype = VKATTN_DTYPE_I32, .ndim = 4, .shape = {1, 2, 5, 8}};
    for (int backend = 0; backend < 2; backend++) {
        vkattn_context *ctx = backend ? env->cpu : env->gpu;
        test_log *log = backend ? &env->cpu_log : &env->gpu_log;
        vkattn_tensor *o;
        assert_int_equal(vkattn_tensor_create(ctx, &idesc, &o), VKATTN_OK);
        const vkattn_tensor *qq = backend ? q.cpu : q.gpu;
        assert_int_equal(vkattn_attention(ctx, NULL, qq, qq, qq, o), VKATTN_ERROR_UNSUPPORTED);
        assert_non_null(strstr(log->last, "O is i32, outputs must be f32, f16 or bf16"));
        vkattn_tensor_destroy(o);
    }
    pair_destroy(&q);
}

/* --------------------------------------------------------- matmul, mha -- */

typedef struct matmul_args {
    vkattn_matmul_desc desc;
    const vkattn_tensor *a, *b, *bias;
} matmul_args;

static vkattn_status matmul_op(vkattn_context *ctx, void *args, vkattn_tensor *out)
{
    matmul_args *m = args;
    return vkattn_matmul(ctx, &m->desc, m->a, m->b, m->bias, out);
}

static void test_matmul(void **state)
{
    test_env *env = *state;
    rng r = {23};
    static const vkattn_matmul_variant variants[] = {VKATTN_MATMUL_AUTO, VKATTN_MATMUL_NAIVE,
                                                     VKATTN_MATMUL_TILED};
    int64_t as[3] = {2, 7, 13}, bs[2] = {9, 13}, biass[1] = {9}, cs[3] = {2, 7, 9};
    pair a = pair_random(env, VKATTN_DTYPE_F32, 3, as, &r, -2.f, 2.f);
    pair b = pair_random(env, VKATTN_DTYPE_BF16, 2, bs, &r, -2.f, 2.f);
    pair bias = pair_random(env, VKATTN_DTYPE_F32, 1, biass, &r, -5.f, 5.f);
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        matmul_args g = {.desc = {.transpose_b = true, .alpha = 0.75f, .variant = variants[i]},
                         .a = a.gpu, .b = b.gpu, .bias = bias.gpu};
        matmul_args c = {.desc = {.transpose_b = true, .alpha = 0.75f},
                         .a = a.cpu, .b = b.cpu, .bias = bias.cpu};
        char name[64];
        snprintf(name, sizeof name, "matmul variant %d", (int)variants[i]);
        check_op(env, name, matmul_op, &g, &c, 3, cs);
    }
    pair_destroy(&a);
    pair_destroy(&b);
    pair_destroy(&bias);
}

typedef struct mha_args {
    vkattn_mha_desc desc;
    const vkattn_tensor *x, *w_qkv, *b_qkv, *w_out, *b_out;
} mha_args;

static vkattn_status mha_op(vkattn_context *ctx, void *args, vkattn_tensor *out)
{
    mha_args *m = args;
    return vkattn_mha(ctx, &m->desc, m->x, m->w_qkv, m->b_qkv, m->w_out, m->b_out, out);
}

static void test_mha(void **state)
{
    test_env *env = *state;
    rng r = {29};
    int64_t xs[3] = {2, 5, 12}, wq[2] = {3 * 3 * 4, 12}, bq[1] = {3 * 3 * 4}, wo[2] = {11, 12},
            bo[1] = {11}, ys[3] = {2, 5, 11};
    pair x = pair_random(env, VKATTN_DTYPE_F16, 3, xs, &r, -1.f, 1.f);
    pair w_qkv = pair_random(env, VKATTN_DTYPE_F32, 2, wq, &r, -0.5f, 0.5f);
    pair b_qkv = pair_random(env, VKATTN_DTYPE_F32, 1, bq, &r, -0.5f, 0.5f);
    pair w_out = pair_random(env, VKATTN_DTYPE_F32, 2, wo, &r, -0.5f, 0.5f);
    pair b_out = pair_random(env, VKATTN_DTYPE_F32, 1, bo, &r, -0.5f, 0.5f);
    mha_args g = {.desc = {.heads = 3, .causal = true, .softcap = 5.0f},
                  .x = x.gpu, .w_qkv = w_qkv.gpu, .b_qkv = b_qkv.gpu, .w_out = w_out.gpu,
                  .b_out = b_out.gpu};
    mha_args c = {.desc = g.desc, .x = x.cpu, .w_qkv = w_qkv.cpu, .b_qkv = b_qkv.cpu,
                  .w_out = w_out.cpu, .b_out = b_out.cpu};
    check_op(env, "mha", mha_op, &g, &c, 3, ys);
    /* and keeping its intermediates in 16 bits, narrowed by the same pass */
    g.desc.compute_dtype = c.desc.compute_dtype = VKATTN_DTYPE_F16;
    check_op(env, "mha, f16 compute", mha_op, &g, &c, 3, ys);
    g.desc.compute_dtype = c.desc.compute_dtype = VKATTN_DTYPE_BF16;
    check_op(env, "mha, bf16 compute", mha_op, &g, &c, 3, ys);
    pair_destroy(&x);
    pair_destroy(&w_qkv);
    pair_destroy(&b_qkv);
    pair_destroy(&w_out);
    pair_destroy(&b_out);
}

/* ------------------------------------------------------------- softmax -- */

typedef struct softmax_args {
    vkattn_softmax_desc desc;
    const vkattn_tensor *x;
} softmax_args;

static vkattn_status softmax_op(vkattn_context *ctx, void *args, vkattn_tensor *out)
{
    softmax_args *s = args;
    return vkattn_softmax(ctx, &s->desc, s->x, out);
}

/* Into a new 16-bit tensor, and in place over 16-bit X (X is read whole before
 * the narrowing writes it). */
static void test_softmax(void **state)
{
    test_env *env = *state;
    rng r = {31};
    int64_t xs[3] = {3, 5, 9};
    pair x = pair_random(env, VKATTN_DTYPE_F32, 3, xs, &r, -6.f, 6.f);
    softmax_args g = {.desc = {.causal = true, .scale = 0.5f}, .x = x.gpu};
    softmax_args c = {.desc = g.desc, .x = x.cpu};
    check_op(env, "softmax", softmax_op, &g, &c, 3, xs);
    for (size_t t = 0; t < sizeof narrow_types / sizeof narrow_types[0]; t++)
        for (int backend = 0; backend < 2; backend++) {
            vkattn_context *ctx = backend ? env->cpu : env->gpu;
            vkattn_tensor *x16 = sentinel_output(ctx, narrow_types[t], 3, xs);
            assert_int_equal(vkattn_tensor_upload(x16, x.host, VKATTN_DTYPE_F32), VKATTN_OK);
            vkattn_tensor *wide = sentinel_output(ctx, VKATTN_DTYPE_F32, 3, xs);
            assert_int_equal(vkattn_softmax(ctx, &g.desc, x16, wide), VKATTN_OK);
            assert_int_equal(vkattn_softmax(ctx, &g.desc, x16, x16), VKATTN_OK);
            expect_narrowed(backend ? "softmax in place (cpu)" : "softmax in place (gpu)", wide,
                            x16);
            vkattn_tensor_destroy(x16);
            vkattn_tensor_destroy(wide);
        }
    pair_destroy(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounding_edges),
        cmocka_unit_test(test_rounding_random),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_packed_gaps),
        cmocka_unit_test(test_failures_leave_output),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_mha),
        cmocka_unit_test(test_softmax),
    };
    return test_run_group(tests, test_env_setup, test_env_teardown);
}
