/* The vkattn program end to end: the test writes .npy files, runs the binary,
 * and checks outputs against the CPU reference, exit statuses, and the one-line
 * messages of bad runs (after which no output file may exist). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, setenv */
#include "test_util.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "npy.h"

static char dir[] = "/tmp/vkattn-cli-XXXXXX";
static char err_text[4096];

/* Runs `vkattn <args>` in the scratch directory; returns its exit status and
 * leaves its stderr in err_text. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
    char args[1024], command[2048], err_path[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", dir);
    snprintf(command, sizeof command, "cd %s && %s %s > stdout.txt 2> stderr.txt", dir, VKATTN_CLI,
             args);
    int status = system(command);
    FILE *f = fopen(err_path, "r");
    size_t n = f ? fread(err_text, 1, sizeof err_text - 1, f) : 0;
    err_text[n] = '\0';
    if (f)
        fclose(f);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void write_npy(const char *name, const float *data, int ndim, const int64_t *shape)
{
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (npy_write_f32(path, data, ndim, shape, err, sizeof err))
        fail_msg("%s: %s", path, err);
}

static bool exists(const char *name)
{
    char path[128];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

/* Reads `name` and compares it with `want` (count values of the given shape). */
static void expect_npy(const char *name, const float *want, int ndim, const int64_t *shape,
                       double atol)
{
    char path[128], err[256];
    npy_array a;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (npy_read(path, &a, err, sizeof err))
        fail_msg("%s: %s", path, err);
    assert_int_equal(a.dtype, NPY_F32);
    assert_int_equal(a.ndim, ndim);
    for (int i = 0; i < ndim; i++)
        assert_int_equal(a.shape[i], shape[i]);
    for (size_t i = 0; i < a.count; i++)
        if (!(fabs(((float *)a.data)[i] - want[i]) <= atol))
            fail_msg("%s: element %zu is %g, reference %g", name, i, (double)((float *)a.data)[i],
                     (double)want[i]);
    npy_free(&a);
}

/* The reference: the CPU backend on the same data, as 4-D BHSD, with Q, K and V
 * rounded to `dtype` as --dtype rounds them. */
static void reference_typed(test_env *env, vkattn_dtype dtype, const float *q, const float *k,
                            const float *v, const int64_t qs[4], const int64_t ks[4],
                            const int64_t vs[4], const vkattn_attention_desc *d, float *out)
{
    vkattn_tensor *t[4];
    const int64_t os[4] = {qs[0], qs[1], qs[2], vs[3]};
    const int64_t *shapes[4] = {qs, ks, vs, os};
    const float *data[3] = {q, k, v};
    for (int i = 0; i < 4; i++) {
        vkattn_tensor_desc td = {.dtype = i < 3 ? dtype : VKATTN_DTYPE_F32, .ndim = 4,
                                 .shape = {shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3]}};
        assert_int_equal(vkattn_tensor_create(env->cpu, &td, &t[i]), VKATTN_OK);
        if (i < 3)
            assert_int_equal(vkattn_tensor_upload(t[i], data[i], VKATTN_DTYPE_F32), VKATTN_OK);
    }
    assert_int_equal(vkattn_attention(env->cpu, d, t[0], t[1], t[2], t[3]), VKATTN_OK);
    assert_int_equal(vkattn_tensor_download(t[3], out, VKATTN_DTYPE_F32), VKATTN_OK);
    for (int i = 0; i < 4; i++)
        vkattn_tensor_destroy(t[i]);
}

static void reference_attention(test_env *env, const float *q, const float *k, const float *v,
                                const int64_t qs[4], const int64_t ks[4], const int64_t vs[4],
                                const vkattn_attention_desc *d, float *out)
{
    reference_typed(env, VKATTN_DTYPE_F32, q, k, v, qs, ks, vs, d, out);
}

static double max_difference(const float *a, const float *b, size_t n)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)a[i] - (double)b[i]));
    return worst;
}

/* --dtype: float32 files rounded to f16 or bf16 on loading, on every path, against
 * the CPU reference on the same rounded inputs (so the f32 tolerance holds). */
static void test_attention_dtype(void **state)
{
    test_env *env = *state;
    rng r = {44};
    const int64_t q3[3] = {4, 5, 8}, k3[3] = {2, 9, 8}, v3[3] = {2, 9, 6}, o3[3] = {4, 5, 6};
    float *q = random_floats(&r, 160, -1.0f, 1.0f);
    float *k = random_floats(&r, 144, -1.0f, 1.0f);
    float *v = random_floats(&r, 108, -1.0f, 1.0f);
    write_npy("dq.npy", q, 3, q3);
    write_npy("dk.npy", k, 3, k3);
    write_npy("dv.npy", v, 3, v3);
    const int64_t qs[4] = {1, 4, 5, 8}, ks[4] = {1, 2, 9, 8}, vs[4] = {1, 2, 9, 6};
    float want[120], unrounded[120];
    vkattn_attention_desc d = {.causal = true};
    reference_attention(env, q, k, v, qs, ks, vs, &d, unrounded);

    static const char *dtypes[] = {"bf16", "f16", "f32"};
    static const vkattn_dtype types[] = {VKATTN_DTYPE_BF16, VKATTN_DTYPE_F16, VKATTN_DTYPE_F32};
    static const char *paths[] = {"auto", "fused", "unfused"};
    for (int t = 0; t < 3; t++) {
        reference_typed(env, types[t], q, k, v, qs, ks, vs, &d, want);
        /* The rounding is real: 8 (bf16) or 11 (f16) significant bits move O by
         * far more than the tolerance. */
        if (types[t] != VKATTN_DTYPE_F32)
            assert_true(max_difference(want, unrounded, 120) > 1e-4);
        for (int i = 0; i < 3; i++) {
            int rc = run("attention -q dq.npy -k dk.npy -v dv.npy -o do.npy --causal --dtype %s "
                         "--path %s", dtypes[t], paths[i]);
            if (rc != 0)
                fail_msg("--dtype %s --path %s: exit %d: %s", dtypes[t], paths[i], rc, err_text);
            assert_string_equal(err_text, "");
            expect_npy("do.npy", want, 3, o3, 1e-5);
        }
        assert_int_equal(run("attention -q dq.npy -k dk.npy -v dv.npy -o do.npy --causal "
                             "--dtype %s --backend cpu", dtypes[t]), 0);
        expect_npy("do.npy", want, 3, o3, 1e-6);
    }
    free(q);
    free(k);
    free(v);
}

/* --out-dtype: O rounded to f16 (a float16 file) or bf16 (float32 values whose
 * low 16 bits are 0), on every path and the CPU backend, within one rounding
 * of the reference; the layer likewise. */
/* A float64 .npy file (version 1.0), as numpy writes one. */
static void write_npy_f64(const char *name, const double *data, int ndim, const int64_t *shape)
{
    char path[128], header[256];
    int n = snprintf(header, sizeof header, "{'descr': '<f8', 'fortran_order': False, 'shape': (");
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        n += snprintf(header + n, sizeof header - (size_t)n, "%lld, ", (long long)shape[i]);
        count *= (size_t)shape[i];
    }
    n += snprintf(header + n, sizeof header - (size_t)n, "), }");
    while ((10 + n + 1) % 64)
        header[n++] = ' ';
    header[n++] = '\n';
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    unsigned char prefix[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(n & 0xff),
                                (unsigned char)(n >> 8)};
    assert_int_equal(fwrite(prefix, 1, 10, f), 10);
    assert_int_equal(fwrite(header, 1, (size_t)n, f), (size_t)n);
    assert_int_equal(fwrite(data, sizeof *data, count, f), count);
    assert_int_equal(fclose(f), 0);
}

/* float64 files: --dtype f16 or bf16 rounds their values once, to nearest
 * even, not through float32 first (which moves a value just past a halfway
 * point onto it, and ties-to-even then goes the wrong way); a finite float64
 * mask value past float32's range (numpy's float64 min, as Hugging Face masks
 * use) stays a finite bias, so a row of them attends uniformly as in float64,
 * not a row of not-allowed keys (zeros); --scale and --softcap that float32
 * cannot hold are refused. */
static void test_float64_files(void **state)
{
    (void)state;
    /* One key: O is V, rounded as --dtype rounds it. */
    const int64_t shape[4] = {1, 1, 1, 3};
    const double ones[3] = {1.0, 1.0, 1.0};
    const double bf16_ties[3] = {1.0 + 0x1p-8 + 0x1p-30, 1.0 + 0x1p-8 - 0x1p-30,
                                 1.0 + 3 * 0x1p-8 + 0x1p-30};
    const float bf16_want[3] = {1.0078125f, 1.0f, 1.015625f};
    const double f16_ties[3] = {1.0 + 0x1p-11 + 0x1p-30, 1.0 + 0x1p-11 - 0x1p-30, -1.0 - 0x1p-11 - 0x1p-30};
    const float f16_want[3] = {1.0009765625f, 1.0f, -1.0009765625f};
    write_npy_f64("ones64.npy", ones, 4, shape);
    write_npy_f64("bf16ties.npy", bf16_ties, 4, shape);
    write_npy_f64("f16ties.npy", f16_ties, 4, shape);
    assert_int_equal(run("attention -q ones64.npy -k ones64.npy -v bf16ties.npy -o o.npy "
                         "--dtype bf16"), 0);
    expect_npy("o.npy", bf16_want, 4, shape, 0.0);
    assert_int_equal(run("attention -q ones64.npy -k ones64.npy -v f16ties.npy -o o.npy "
                         "--dtype f16"), 0);
    expect_npy("o.npy", f16_want, 4, shape, 0.0);

    /* Row 1 of the mask all float64 min: uniform weights, the mean of V. */
    rng r = {71};
    const int64_t qs[4] = {1, 1, 3, 8}, ks[4] = {1, 1, 5, 8}, ms[2] = {3, 5};
    float *q = random_floats(&r, 24, -1.0f, 1.0f);
    float *k = random_floats(&r, 40, -1.0f, 1.0f);
    float *v = random_floats(&r, 40, -1.0f, 1.0f);
    write_npy("q.npy", q, 4, qs);
    write_npy("k.npy", k, 4, ks);
    write_npy("v.npy", v, 4, ks);
    double mask[15] = {0};
    for (int j = 0; j < 5; j++)
        mask[5 + j] = -DBL_MAX;
    write_npy_f64("mask64.npy", mask, 2, ms);
    static const char *paths[] = {"auto", "fused", "unfused"};
    for (int p = 0; p < 3; p++) {
        assert_int_equal(run("attention -q q.npy -k k.npy -v v.npy -o o.npy --mask mask64.npy "
                             "--path %s", paths[p]), 0);
        char path[128], err[256];
        npy_array o;
        snprintf(path, sizeof path, "%s/o.npy", dir);
        assert_int_equal(npy_read(path, &o, err, sizeof err), 0);
        for (int d = 0; d < 8; d++) {
            double mean = 0;
            for (int j = 0; j < 5; j++)
                mean += v[j * 8 + d] / 5.0;
            float got = ((float *)o.data)[8 + d];
            if (!(fabs(got - mean) <= 1e-5))
                fail_msg("--path %s: row 1 (mask all float64 min) element %d is %g, the mean "
                         "of V %g", paths[p], d, (double)got, mean);
        }
        npy_free(&o);
    }
    free(q), free(k), free(v);

    assert_int_equal(run("attention -q q.npy -k k.npy -v v.npy -o refused64.npy --scale 1e-50"), 2);
    assert_non_null(strstr(err_text, "--scale 1e-50: expected a positive number that float32 "
                                     "holds"));
    assert_int_equal(run("attention -q q.npy -k k.npy -v v.npy -o refused64.npy --softcap 1e39"), 2);
    assert_non_null(strstr(err_text, "--softcap 1e39: expected a positive number"));
    assert_false(exists("refused64.npy"));

    /* --softcap 0 is off (DESIGN.md: a variant's zero), as the library's 0:
     * the same output as no --softcap, where a cap of 1 would change it. */
    assert_int_equal(run("attention -q q.npy -k k.npy -v v.npy -o plain.npy --scale 8"), 0);
    assert_int_equal(run("attention -q q.npy -k k.npy -v v.npy -o zero.npy --scale 8 "
                         "--softcap 0"), 0);
    assert_int_equal(run("attention -q q.npy -k k.npy -v v.npy -o capped.npy --scale 8 "
                         "--softcap 1"), 0);
    npy_array plain, zero, capped;
    char err[256], path[128];
    snprintf(path, sizeof path, "%s/plain.npy", dir);
    assert_int_equal(npy_read(path, &plain, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/zero.npy", dir);
    assert_int_equal(npy_read(path, &zero, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/capped.npy", dir);
    assert_int_equal(npy_read(path, &capped, err, sizeof err), 0);
    assert_int_equal(plain.count, zero.count);
    assert_int_equal(plain.count, capped.count);
    assert_memory_equal(plain.data, zero.data, plain.count * sizeof(float));
    assert_memory_not_equal(plain.data, capped.data, plain.count * sizeof(float));
    npy_free(&plain), npy_free(&zero), npy_free(&capped);
}

static void test_out_dtype(void **state)
{
    test_env *env = *state;
    rng r = {45};
    const int64_t q3[3] = {4, 5, 8}, k3[3] = {2, 9, 8}, o3[3] = {4, 5, 8};
    float *q = random_floats(&r, 160, -1.0f, 1.0f);
    float *k = random_floats(&r, 144, -1.0f, 1.0f);
    float *v = random_floats(&r, 144, -1.0f, 1.0f);
    for (int i = 0; i < 144; i++)
        v[i] *= 300.0f; /* outputs over many binades, past f16's subnormals */
    write_npy("oq.npy", q, 3, q3);
    write_npy("ok.npy", k, 3, k3);
    write_npy("ov.npy", v, 3, k3);
    const int64_t qs[4] = {1, 4, 5, 8}, ks[4] = {1, 2, 9, 8};
    float want[160];
    vkattn_attention_desc d = {.causal = true};
    reference_attention(env, q, k, v, qs, ks, ks, &d, want);
    static const char *runs[] = {"--path auto", "--path fused", "--path unfused", "--backend cpu"};
    for (int t = 0; t < 2; t++) {
        bool f16 = t == 0;
        for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
            int rc = run("attention -q oq.npy -k ok.npy -v ov.npy -o oo.npy --causal "
                         "--out-dtype %s %s", f16 ? "f16" : "bf16", runs[i]);
            if (rc != 0)
                fail_msg("--out-dtype %s %s: exit %d: %s", f16 ? "f16" : "bf16", runs[i], rc,
                         err_text);
            char path[128], err[256];
            npy_array a;
            snprintf(path, sizeof path, "%s/oo.npy", dir);
            if (npy_read(path, &a, err, sizeof err))
                fail_msg("%s: %s", path, err);
            assert_int_equal(a.dtype, f16 ? NPY_F16 : NPY_F32);
            assert_int_equal(a.ndim, 3);
            for (int j = 0; j < 3; j++)
                assert_int_equal(a.shape[j], o3[j]);
            double unit = f16 ? 0x1p-10 : 0x1p-7; /* one rounding, relative */
            for (size_t e = 0; e < a.count; e++) {
                uint32_t bits = 0;
                float got;
                if (f16) {
                    uint16_t h = ((uint16_t *)a.data)[e]; /* widened field by field */
                    int exponent = (h >> 10) & 31, mantissa = h & 1023;
                    got = exponent ? ldexpf(1.0f + mantissa / 1024.0f, exponent - 15)
                                   : ldexpf(mantissa / 1024.0f, -14);
                    if (h & 0x8000)
                        got = -got;
                } else {
                    got = ((float *)a.data)[e];
                    memcpy(&bits, &got, sizeof bits);
                    if (bits & 0xffffu)
                        fail_msg("--out-dtype bf16 %s: element %zu (%a) is not a bf16 value",
                                 runs[i], e, (double)got);
                }
                if (!(fabs((double)got - want[e]) <= unit * fabs(want[e]) + 1e-6))
                    fail_msg("--out-dtype %s %s: element %zu is %g, reference %g",
                             f16 ? "f16" : "bf16", runs[i], e, (double)got, (double)want[e]);
            }
            npy_free(&a);
        }
    }
    free(q);
    free(k);
    free(v);
}

static void test_attention_runs(void **state)
{
    test_env *env = *state;
    rng r = {41};
    /* 3-D: 4 query heads over 2 kv heads, Tq 5, Tk 9, D 8, Dv 6. */
    const int64_t q3[3] = {4, 5, 8}, k3[3] = {2, 9, 8}, v3[3] = {2, 9, 6}, o3[3] = {4, 5, 6};
    float *q = random_floats(&r, 160, -1.0f, 1.0f);
    float *k = random_floats(&r, 144, -1.0f, 1.0f);
    float *v = random_floats(&r, 108, -1.0f, 1.0f);
    write_npy("q.npy", q, 3, q3);
    write_npy("k.npy", k, 3, k3);
    write_npy("v.npy", v, 3, v3);
    const int64_t qs[4] = {1, 4, 5, 8}, ks[4] = {1, 2, 9, 8}, vs[4] = {1, 2, 9, 6};
    float want[120];

    static const char *paths[] = {"auto", "fused", "unfused"};
    vkattn_attention_desc d = {.causal = true};
    reference_attention(env, q, k, v, qs, ks, vs, &d, want);
    for (int i = 0; i < 3; i++) {
        int rc = run("attention -q q.npy -k k.npy -v v.npy -o o.npy --causal --path %s", paths[i]);
        if (rc != 0)
            fail_msg("exit %d: %s", rc, err_text);
        assert_string_equal(err_text, ""); /* validation is on: no message at all */
        expect_npy("o.npy", want, 3, o3, 1e-5);
    }
    /* Kernels by name: the one asked for runs (--verbose says which), with
     * no message of any other kind. */
    static const char *kernels[] = {"rows", "tiled", "decode"};
    for (int i = 0; i < 3; i++) {
        int rc = run("attention -q q.npy -k k.npy -v v.npy -o o.npy --causal --kernel %s --verbose",
                     kernels[i]);
        char ran[64];
        snprintf(ran, sizeof ran, "attention ran fused, variant %s,", kernels[i]);
        if (rc != 0 || !strstr(err_text, ran))
            fail_msg("--kernel %s: exit %d: %s", kernels[i], rc, err_text);
        rc = run("attention -q q.npy -k k.npy -v v.npy -o o.npy --causal --kernel %s", kernels[i]);
        if (rc != 0 || *err_text)
            fail_msg("--kernel %s: exit %d: %s", kernels[i], rc, err_text);
        expect_npy("o.npy", want, 3, o3, 1e-5);
    }
    d = (vkattn_attention_desc){.causal = true, .has_q_offset = true, .q_offset = 0, .scale = 0.5f};
    reference_attention(env, q, k, v, qs, ks, vs, &d, want);
    assert_int_equal(run("attention -q q.npy -k k.npy -v v.npy -o o.npy --causal --q-offset 0 "
                         "--scale 0.5 --backend cpu"), 0);
    expect_npy("o.npy", want, 3, o3, 1e-6);
    /* The same options as --name=value, as getopt_long takes them; a short option
     * does not take it so, and an empty value is a bad value */
    assert_int_equal(run("attention --q=q.npy --k=k.npy --v=v.npy --out=o.npy --causal "
                         "--q-offset=0 --scale=0.5 --backend=cpu"), 0);
    expect_npy("o.npy", want, 3, o3, 1e-6);
    assert_int_equal(run("attention -q=q.npy -k k.npy -v v.npy -o obad.npy"), 2);
    assert_non_null(strstr(err_text, "unknown option -q=q.npy"));
    assert_int_equal(run("attention -q q.npy -k k.npy -v v.npy -o obad.npy --scale="), 2);
    assert_non_null(strstr(err_text, "--scale"));
    assert_false(exists("obad.npy"));

    /* 2-D: one head. */
    const int64_t q2[2] = {5, 8}, k2[2] = {9, 8}, v2[2] = {9, 6}, o2[2] = {5, 6};
    write_npy("q2.npy", q, 2, q2);
    write_npy("k2.npy", k, 2, k2);
    write_npy("v2.npy", v, 2, v2);
    const int64_t qs1[4] = {1, 1, 5, 8}, ks1[4] = {1, 1, 9, 8}, vs1[4] = {1, 1, 9, 6};
    d = (vkattn_attention_desc){0};
    reference_attention(env, q, k, v, qs1, ks1, vs1, &d, want);
    assert_int_equal(run("attention -q q2.npy -k k2.npy -v v2.npy -o o2.npy"), 0);
    expect_npy("o2.npy", want, 2, o2, 1e-5);

    /* 4-D BSHD with per-batch key lengths: (B 2, T, H, D) read as BSHD. */
    const int64_t qb[4] = {2, 5, 2, 8}, kb[4] = {2, 9, 1, 8}, vb[4] = {2, 9, 1, 6};
    const int64_t ob[4] = {2, 5, 2, 6};
    write_npy("qb.npy", q, 4, qb);
    write_npy("kb.npy", k, 4, kb);
    write_npy("vb.npy", v, 4, vb);
    assert_int_equal(run("attention -q qb.npy -k kb.npy -v vb.npy -o ob.npy --layout bshd "
                         "--kv-len 4,9"), 0);
    assert_int_equal(run("attention -q qb.npy -k kb.npy -v vb.npy -o ob_cpu.npy --layout bshd "
                         "--kv-len 4,9 --backend cpu"), 0);
    npy_array ref;
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/ob_cpu.npy", dir);
    assert_int_equal(npy_read(path, &ref, err, sizeof err), 0);
    expect_npy("ob.npy", ref.data, 4, ob, 1e-5);
    npy_free(&ref);
    free(q);
    free(k);
    free(v);
}

static void test_mha_run(void **state)
{
    test_env *env = *state;
    rng r = {42};
    const int64_t xs[2] = {7, 6}, wq[2] = {3 * 2 * 4, 6}, bq[1] = {24}, wo[2] = {5, 8}, bo[1] = {5};
    float *x = random_floats(&r, 42, -1.0f, 1.0f);
    float *w_qkv = random_floats(&r, 144, -1.0f, 1.0f);
    float *b_qkv = random_floats(&r, 24, -1.0f, 1.0f);
    float *w_out = random_floats(&r, 40, -1.0f, 1.0f), *b_out = random_floats(&r, 5, -1.0f, 1.0f);
    write_npy("x.npy", x, 2, xs);
    write_npy("wq.npy", w_qkv, 2, wq);
    write_npy("bq.npy", b_qkv, 1, bq);
    write_npy("wo.npy", w_out, 2, wo);
    write_npy("bo.npy", b_out, 1, bo);
    /* The files' own dtype (float32), then X, weights and biases rounded by
     * --dtype; then q, k, v and the heads' output kept in a 16-bit
     * --compute-dtype, on the CPU backend, whose result is the reference's to
     * the last bit and differs from the f32 layer's (so the option got there). */
    static const struct {
        const char *args;
        vkattn_dtype dtype, compute;
    } runs[] = {
        {"", VKATTN_DTYPE_F32, VKATTN_DTYPE_F32},
        {"--dtype bf16", VKATTN_DTYPE_BF16, VKATTN_DTYPE_F32},
        {"--dtype f16", VKATTN_DTYPE_F16, VKATTN_DTYPE_F32},
        {"--compute-dtype f16 --backend cpu", VKATTN_DTYPE_F32, VKATTN_DTYPE_F16},
        {"--dtype f16 --compute-dtype=bf16 --backend cpu", VKATTN_DTYPE_F16, VKATTN_DTYPE_BF16},
    };
    for (size_t run_index = 0; run_index < sizeof runs / sizeof runs[0]; run_index++) {
        int rc = run("mha -x x.npy --w-qkv wq.npy --b-qkv bq.npy --w-out wo.npy --b-out bo.npy "
                     "--heads 2 --causal -o y.npy %s", runs[run_index].args);
        if (rc != 0)
            fail_msg("mha %s: exit %d: %s", runs[run_index].args, rc, err_text);
        assert_string_equal(err_text, "");

        /* The reference on the inputs rounded as --dtype rounds them, in the
         * compute dtype asked for and in f32. */
        vkattn_tensor *t[6];
        const int64_t shapes[6][3] = {{1, 7, 6}, {24, 6}, {24}, {5, 8}, {5}, {1, 7, 5}};
        const int ranks[6] = {3, 2, 1, 2, 1, 3};
        const float *data[5] = {x, w_qkv, b_qkv, w_out, b_out};
        for (int i = 0; i < 6; i++) {
            vkattn_tensor_desc td = {.dtype = i < 5 ? runs[run_index].dtype : VKATTN_DTYPE_F32,
                                     .ndim = ranks[i]};
            memcpy(td.shape, shapes[i], sizeof shapes[i]);
            assert_int_equal(vkattn_tensor_create(env->cpu, &td, &t[i]), VKATTN_OK);
            if (i < 5)
                assert_int_equal(vkattn_tensor_upload(t[i], data[i], VKATTN_DTYPE_F32),
                                 VKATTN_OK);
        }
        vkattn_mha_desc d = {.heads = 2, .causal = true, .compute_dtype = runs[run_index].compute};
        float want[35], in_f32[35];
        assert_int_equal(vkattn_mha(env->cpu, &d, t[0], t[1], t[2], t[3], t[4], t[5]), VKATTN_OK);
        assert_int_equal(vkattn_tensor_download(t[5], want, VKATTN_DTYPE_F32), VKATTN_OK);
        const int64_t ys[2] = {7, 5};
        /* the CPU backend's runs are the reference's own code: to the bit */
        expect_npy("y.npy", want, 2, ys, runs[run_index].compute != VKATTN_DTYPE_F32 ? 0.0 : 1e-5);
        if (runs[run_index].compute != VKATTN_DTYPE_F32) {
            d.compute_dtype = VKATTN_DTYPE_F32;
            assert_int_equal(vkattn_mha(env->cpu, &d, t[0], t[1], t[2], t[3], t[4], t[5]),
                             VKATTN_OK);
            assert_int_equal(vkattn_tensor_download(t[5], in_f32, VKATTN_DTYPE_F32), VKATTN_OK);
            double apart = 0.0;
            for (int i = 0; i < 35; i++)
                apart = fmax(apart, fabs((double)want[i] - in_f32[i]));
            if (apart < 1e-4)
                fail_msg("mha %s: the reference is %g from the f32 layer's, too close to tell",
                         runs[run_index].args, apart);
        }
        for (int i = 0; i < 6; i++)
            vkattn_tensor_destroy(t[i]);
    }
    /* --verbose names the attention step's path, as asked or as AUTO chose */
    static const struct { const char *path, *says; } verbose[] = {
        {"auto", "vkattn: mha's attention ran fused, variant "},
        {"fused", "vkattn: mha's attention ran fused, variant "},
        {"unfused", "vkattn: mha's attention ran unfused"},
    };
    for (int i = 0; i < 3; i++) {
        int rc = run("mha -x x.npy --w-qkv=wq.npy --w-out wo.npy --heads=2 -o y.npy --verbose "
                     "--path=%s", verbose[i].path);
        if (rc != 0 || !strstr(err_text, verbose[i].says))
            fail_msg("mha --verbose --path %s: exit %d: %s", verbose[i].path, rc, err_text);
    }
    free(x);
    free(w_qkv);
    free(b_qkv);
    free(w_out);
    free(b_out);
}

/* ------------------------------------------------------------ variants ---- */

/* The test's own reference for the attention variants: DESIGN.md section 1
 * written out in double, sharing nothing with the library. Q (and O) are dense
 * (B, H, Tq, D) or packed (rows, H, D); K and V dense (B, Hkv, Tk, D), packed
 * (rows, Hkv, D) or paged caches (blocks, block_size, Hkv, D). */
typedef struct ref_case {
    int B, H, Hkv, D, Dv;
    int Tq, Tk;                   /* dense lengths; the mask is (..., Tq, Tk) */
    const int32_t *cu_q, *cu_k;   /* packed sequences: B + 1 offsets, or NULL */
    const int32_t *table;         /* paged keys: (B, max_blocks), or NULL */
    int max_blocks, block_size;
    const int32_t *kv_len;        /* (B) or NULL */
    bool causal, has_q_offset;
    int q_offset;
    double scale;                 /* 0: 1/sqrt(D) */
    bool has_window;
    int window_left, window_right;
    double softcap;               /* 0: off */
    const float *sinks, *alibi;   /* (H) or NULL */
    const float *mask;            /* its shape broadcast to (B, H, Tq, Tk) is mask_shape */
    int mask_shape[3];            /* its B, H and Tq (1: broadcast); all 0: (1, 1, Tq) */
    const float *q, *k, *v;
} ref_case;

/* The row of Q (or O) holding query i of head h of entry b, in rows of D (or Dv). */
static size_t q_row(const ref_case *c, int b, int h, int i)
{
    return c->cu_q ? (size_t)(c->cu_q[b] + i) * c->H + h : ((size_t)b * c->H + h) * c->Tq + i;
}

/* The row of K (or V) holding key j of kv head g of entry b. */
static size_t kv_row(const ref_case *c, int b, int g, int j)
{
    if (c->table) {
        int block = c->table[b * c->max_blocks + j / c->block_size];
        return ((size_t)block * c->block_size + j % c->block_size) * c->Hkv + g;
    }
    return c->cu_k ? (size_t)(c->cu_k[b] + j) * c->Hkv + g : ((size_t)b * c->Hkv + g) * c->Tk + j;
}

/* scale * dot, then softcap, then ALiBi, then the mask, in that order. */
static double ref_score(const ref_case *c, int b, int h, int i, int j, int pos)
{
    const float *q = c->q + q_row(c, b, h, i) * c->D;
    const float *k = c->k + kv_row(c, b, h / (c->H / c->Hkv), j) * c->D;
    double dot = 0.0;
    for (int d = 0; d < c->D; d++)
        dot += (double)q[d] * k[d];
    double s = (c->scale ? c->scale : 1.0 / sqrt(c->D)) * dot;
    if (c->softcap > 0.0)
        s = c->softcap * tanh(s / c->softcap);
    if (c->alibi)
        s += c->alibi[h] * (double)(j - pos);
    if (c->mask) {
        int mb = c->mask_shape[0] ? c->mask_shape[0] : 1, mh = c->mask_shape[1] ? c->mask_shape[1] : 1,
            mi = c->mask_shape[2] ? c->mask_shape[2] : c->Tq;
        size_t at = (((size_t)(mb == 1 ? 0 : b) * mh + (mh == 1 ? 0 : h)) * mi + (mi == 1 ? 0 : i));
        s += c->mask[at * c->Tk + j];
    }
    return s;
}

/* With a mask, a score -inf once it is added is a key not allowed (vkattn.h);
 * without one, a -inf score is an allowed key of weight 0. */
static bool ref_allowed(const ref_case *c, int j, int pos, double score)
{
    bool window = !c->has_window || ((c->window_left < 0 || j >= pos - c->window_left) &&
                                     (c->window_right < 0 || j <= pos + c->window_right));
    return (!c->causal || j <= pos) && window && !(c->mask && score == -INFINITY);
}

/* One output row over the first `keys` keys; zeros when none is allowed, sinks or not. */
static void ref_row(const ref_case *c, int b, int h, int i, int keys, int pos, float *o)
{
    double s[32], acc[16] = {0}, sum = 0.0, m = -INFINITY;
    bool allowed[32], any = false;
    assert_true(keys <= 32 && c->Dv <= 16);
    for (int j = 0; j < keys; j++) {
        s[j] = ref_score(c, b, h, i, j, pos);
        allowed[j] = ref_allowed(c, j, pos, s[j]);
        any = any || allowed[j];
        if (allowed[j])
            m = fmax(m, s[j]);
    }
    /* every allowed score -inf: weights of 0 (PyTorch's safe softmax), no sum
     * and no sink */
    bool weightless = m == -INFINITY;
    if (c->sinks && !weightless) {
        m = fmax(m, c->sinks[h]);
        sum = exp(c->sinks[h] - m); /* a raw logit: not scaled */
    }
    m = weightless ? 0.0 : m;
    for (int j = 0; j < keys; j++) {
        if (!allowed[j])
            continue;
        const float *v = c->v + kv_row(c, b, h / (c->H / c->Hkv), j) * c->Dv;
        double w = exp(s[j] - m);
        sum += w;
        for (int d = 0; d < c->Dv; d++)
            acc[d] += w * v[d];
    }
    for (int d = 0; d < c->Dv; d++)
        o[d] = !any ? 0.0f : weightless ? (float)acc[d] : (float)(acc[d] / sum);
}

static void ref_attention(const ref_case *c, float *o)
{
    for (int b = 0; b < c->B; b++) {
        int tq = c->cu_q ? c->cu_q[b + 1] - c->cu_q[b] : c->Tq;
        /* Tk_b: the sequence's keys (a paged entry's kv_len), before kv_len masks any. */
        int tk = c->table ? c->kv_len[b] : c->cu_k ? c->cu_k[b + 1] - c->cu_k[b] : c->Tk;
        int keys = c->kv_len ? c->kv_len[b] : tk;
        int q_offset = c->has_q_offset ? c->q_offset : tk - tq;
        for (int h = 0; h < c->H; h++)
            for (int i = 0; i < tq; i++)
                ref_row(c, b, h, i, keys, i + q_offset, o + q_row(c, b, h, i) * c->Dv);
    }
}

/* One CLI run of a variant case and what it must write to vo.npy. */
typedef struct cli_case {
    char args[512];
    float want[64];
    int ndim;
    int64_t shape[4];
} cli_case;

static void fill(rng *r, float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] = rng_uniform(r, -1.0f, 1.0f);
}

static void write_i32(const char *name, const int32_t *data, int ndim, const int64_t *shape)
{
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (npy_write(path, data, NPY_I32, ndim, shape, err, sizeof err))
        fail_msg("%s: %s", path, err);
}

/* Writes `values` as a float16 file, leaving in them the values it holds. */
static void write_f16(test_env *env, const char *name, float *values, int ndim,
                      const int64_t *shape)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= (size_t)shape[i];
    uint16_t halves[128];
    assert_true(n <= 128);
    vkattn_tensor *t;
    vkattn_tensor_desc td = {.dtype = VKATTN_DTYPE_F16, .ndim = 1, .shape = {(int64_t)n}};
    assert_int_equal(vkattn_tensor_create(env->cpu, &td, &t), VKATTN_OK);
    assert_int_equal(vkattn_tensor_upload(t, values, VKATTN_DTYPE_F32), VKATTN_OK);
    assert_int_equal(vkattn_tensor_download(t, halves, VKATTN_DTYPE_F16), VKATTN_OK);
    assert_int_equal(vkattn_tensor_download(t, values, VKATTN_DTYPE_F32), VKATTN_OK);
    vkattn_tensor_destroy(t);
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (npy_write(path, halves, NPY_F16, ndim, shape, err, sizeof err))
        fail_msg("%s: %s", path, err);
}

/* Dense 3-D inputs: 2 query heads over 1 kv head, Tq 5, Tk 7, D 4, Dv 3. */
typedef struct dense_inputs {
    float q[40], k[28], v[21];
} dense_inputs;

static void dense_3d(dense_inputs *in, uint64_t seed, ref_case *r)
{
    rng g = {seed};
    fill(&g, in->q, 40);
    fill(&g, in->k, 28);
    fill(&g, in->v, 21);
    write_npy("vq.npy", in->q, 3, (const int64_t[3]){2, 5, 4});
    write_npy("vk.npy", in->k, 3, (const int64_t[3]){1, 7, 4});
    write_npy("vv.npy", in->v, 3, (const int64_t[3]){1, 7, 3});
    *r = (ref_case){.B = 1, .H = 2, .Hkv = 1, .D = 4, .Dv = 3, .Tq = 5, .Tk = 7,
                    .q = in->q, .k = in->k, .v = in->v};
}

static void finish_dense(cli_case *c, const ref_case *r, const char *options)
{
    snprintf(c->args, sizeof c->args, "attention -q vq.npy -k vk.npy -v vv.npy -o vo.npy %s",
             options);
    ref_attention(r, c->want);
    c->ndim = 3;
    memcpy(c->shape, (const int64_t[3]){2, 5, 3}, 3 * sizeof c->shape[0]);
}

static const float two_sinks[2] = {0.8f, -0.5f};

static void case_window(test_env *env, cli_case *c)
{
    (void)env;
    dense_inputs in;
    ref_case r;
    dense_3d(&in, 51, &r);
    r.has_window = true, r.window_left = 2, r.window_right = 1;
    finish_dense(c, &r, "--window 2,1");
}

/* -1 leaves the right side open; causality closes it. */
static void case_window_causal(test_env *env, cli_case *c)
{
    (void)env;
    dense_inputs in;
    ref_case r;
    dense_3d(&in, 52, &r);
    r.has_window = true, r.window_left = 1, r.window_right = -1, r.causal = true;
    finish_dense(c, &r, "--window 1,-1 --causal");
}

/* A large scale so that the cap bends the scores. */
static void case_softcap(test_env *env, cli_case *c)
{
    (void)env;
    dense_inputs in;
    ref_case r;
    dense_3d(&in, 53, &r);
    r.softcap = 1.5, r.scale = 2.0, r.causal = true;
    finish_dense(c, &r, "--softcap 1.5 --scale 2 --causal");
}

/* q_offset -2: rows 0 and 1 see no key and give zeros although there is a sink. */
static void case_sinks(test_env *env, cli_case *c)
{
    (void)env;
    dense_inputs in;
    ref_case r;
    dense_3d(&in, 54, &r);
    write_npy("vs.npy", two_sinks, 1, (const int64_t[1]){2});
    r.sinks = two_sinks, r.causal = true, r.has_q_offset = true, r.q_offset = -2;
    finish_dense(c, &r, "--sinks vs.npy --causal --q-offset -2");
}

/* Slopes from a float16 file (converted to f32 on loading). */
static void case_alibi(test_env *env, cli_case *c)
{
    dense_inputs in;
    ref_case r;
    static float slopes[2] = {0.5f, 0.25f};
    dense_3d(&in, 55, &r);
    write_f16(env, "va.npy", slopes, 1, (const int64_t[1]){2});
    r.alibi = slopes, r.causal = true;
    finish_dense(c, &r, "--alibi va.npy --causal");
}

/* q_offset far outside [-Tq, Tk]: causality then allows every key or none, but
 * ALiBi's j - pos and a window's bounds still follow pos = i + q_offset (a
 * clamp of q_offset into that range once changed them). */
static void case_alibi_far_offset(test_env *env, cli_case *c)
{
    dense_inputs in;
    ref_case r;
    static float slopes[2] = {0.5f, -0.25f};
    dense_3d(&in, 57, &r);
    write_f16(env, "va.npy", slopes, 1, (const int64_t[1]){2});
    write_npy("vs.npy", two_sinks, 1, (const int64_t[1]){2});
    r.alibi = slopes, r.sinks = two_sinks, r.has_q_offset = true, r.q_offset = -15;
    finish_dense(c, &r, "--alibi va.npy --sinks vs.npy --q-offset -15");
}

static void case_window_far_offset(test_env *env, cli_case *c)
{
    (void)env;
    dense_inputs in;
    ref_case r;
    dense_3d(&in, 58, &r);
    r.has_window = true, r.window_left = 14, r.window_right = -1;
    r.has_q_offset = true, r.q_offset = 12;
    finish_dense(c, &r, "--window 14,-1 --q-offset 12");
}

/* A (Tq, Tk) mask with -inf entries and a row of them: that row is zeros, sink or not. */
static void case_mask(test_env *env, cli_case *c)
{
    (void)env;
    dense_inputs in;
    ref_case r;
    static float mask[35];
    rng g = {56};
    dense_3d(&in, 57, &r);
    fill(&g, mask, 35);
    for (int j = 0; j < 7; j++)
        mask[3 * 7 + j] = -INFINITY;
    mask[0] = mask[1 * 7 + 4] = mask[4 * 7 + 6] = -INFINITY;
    write_npy("vm.npy", mask, 2, (const int64_t[2]){5, 7});
    write_npy("vs.npy", two_sinks, 1, (const int64_t[1]){2});
    r.mask = mask, r.sinks = two_sinks;
    finish_dense(c, &r, "--mask vm.npy --sinks vs.npy");
}

/* 4-D inputs: B 2, H 2, Hkv 1, Tq 3, Tk 6, D 4, Dv 3. */
typedef struct batched_inputs {
    float q[48], k[48], v[36];
} batched_inputs;

static void batched_4d(batched_inputs *in, uint64_t seed, ref_case *r)
{
    rng g = {seed};
    fill(&g, in->q, 48);
    fill(&g, in->k, 48);
    fill(&g, in->v, 36);
    write_npy("vq.npy", in->q, 4, (const int64_t[4]){2, 2, 3, 4});
    write_npy("vk.npy", in->k, 4, (const int64_t[4]){2, 1, 6, 4});
    write_npy("vv.npy", in->v, 4, (const int64_t[4]){2, 1, 6, 3});
    *r = (ref_case){.B = 2, .H = 2, .Hkv = 1, .D = 4, .Dv = 3, .Tq = 3, .Tk = 6,
                    .q = in->q, .k = in->k, .v = in->v};
}

static void finish_batched(cli_case *c, const ref_case *r, const char *options)
{
    snprintf(c->args, sizeof c->args, "attention -q vq.npy -k vk.npy -v vv.npy -o vo.npy %s",
             options);
    ref_attention(r, c->want);
    c->ndim = 4;
    memcpy(c->shape, (const int64_t[4]){2, 2, 3, 3}, sizeof c->shape);
}

/* A (B, 1, Tq, Tk) float16 mask (kept F16): quarters, exact in f16, and -inf. */
static void case_mask_batched_f16(test_env *env, cli_case *c)
{
    batched_inputs in;
    ref_case r;
    static float mask[36];
    rng g = {58};
    batched_4d(&in, 59, &r);
    for (int n = 0; n < 36; n++)
        mask[n] = n % 7 == 3 ? -INFINITY : 0.25f * (float)rng_int(&g, -4, 4);
    write_f16(env, "vm.npy", mask, 4, (const int64_t[4]){2, 1, 3, 6});
    r.mask = mask, r.mask_shape[0] = 2, r.mask_shape[1] = 1, r.mask_shape[2] = 3, r.causal = true;
    finish_batched(c, &r, "--mask vm.npy --causal");
}

/* A (B, H, Tq, Tk) mask after soft-capping and ALiBi: the order matters. */
static void case_mask_heads_softcap_alibi(test_env *env, cli_case *c)
{
    (void)env;
    batched_inputs in;
    ref_case r;
    static float mask[72];
    static const float slopes[2] = {0.5f, -0.375f};
    rng g = {60};
    batched_4d(&in, 61, &r);
    fill(&g, mask, 72);
    write_npy("vm.npy", mask, 4, (const int64_t[4]){2, 2, 3, 6});
    write_npy("va.npy", slopes, 1, (const int64_t[1]){2});
    r.mask = mask, r.mask_shape[0] = 2, r.mask_shape[1] = 2, r.mask_shape[2] = 3, r.alibi = slopes;
    r.softcap = 0.75, r.scale = 3.0;
    finish_batched(c, &r, "--mask vm.npy --alibi va.npy --softcap 0.75 --scale 3");
}

/* A key padding mask (B, 1, 1, Tk), broadcast over heads and queries, with sinks. */
static void case_mask_key_padding(test_env *env, cli_case *c)
{
    (void)env;
    batched_inputs in;
    ref_case r;
    static float mask[12];
    rng g = {65};
    batched_4d(&in, 66, &r);
    fill(&g, mask, 12);
    mask[4] = mask[5] = mask[6 + 1] = -INFINITY;
    write_npy("vm.npy", mask, 4, (const int64_t[4]){2, 1, 1, 6});
    write_npy("vs.npy", two_sinks, 1, (const int64_t[1]){2});
    r.mask = mask, r.mask_shape[0] = 2, r.mask_shape[1] = 1, r.mask_shape[2] = 1;
    r.sinks = two_sinks, r.causal = true;
    finish_batched(c, &r, "--mask vm.npy --sinks vs.npy --causal");
}

/* A 3-D mask (H, Tq, Tk), one per head, broadcast over the batch. */
static void case_mask_per_head(test_env *env, cli_case *c)
{
    (void)env;
    batched_inputs in;
    ref_case r;
    static float mask[36];
    rng g = {67};
    batched_4d(&in, 68, &r);
    fill(&g, mask, 36);
    mask[2 * 6 + 3] = -INFINITY;
    write_npy("vm.npy", mask, 3, (const int64_t[3]){2, 3, 6});
    r.mask = mask, r.mask_shape[0] = 1, r.mask_shape[1] = 2, r.mask_shape[2] = 3;
    finish_batched(c, &r, "--mask vm.npy");
}

/* Packed sequences of 2 and 3 queries over 4 and 3 keys: Q (5, 2, 4), K (7, 1, 4),
 * V (7, 1, 3); q_offset is Tk_b - Tq_b: 2, then 0 (neither is Tk - Tq of the
 * longest sequences). */
typedef struct packed_inputs {
    float q[40], k[28], v[21];
} packed_inputs;

static const int32_t packed_cu_q[3] = {0, 2, 5}, packed_cu_k[3] = {0, 4, 7};

static void packed(packed_inputs *in, uint64_t seed, ref_case *r)
{
    rng g = {seed};
    fill(&g, in->q, 40);
    fill(&g, in->k, 28);
    fill(&g, in->v, 21);
    write_npy("vq.npy", in->q, 3, (const int64_t[3]){5, 2, 4});
    write_npy("vk.npy", in->k, 3, (const int64_t[3]){7, 1, 4});
    write_npy("vv.npy", in->v, 3, (const int64_t[3]){7, 1, 3});
    write_i32("vcq.npy", packed_cu_q, 1, (const int64_t[1]){3});
    write_i32("vck.npy", packed_cu_k, 1, (const int64_t[1]){3});
    *r = (ref_case){.B = 2, .H = 2, .Hkv = 1, .D = 4, .Dv = 3, .Tq = 3, .Tk = 4,
                    .cu_q = packed_cu_q, .cu_k = packed_cu_k, .q = in->q, .k = in->k, .v = in->v};
}

static void finish_packed(cli_case *c, const ref_case *r, const char *options)
{
    snprintf(c->args, sizeof c->args, "attention -q vq.npy -k vk.npy -v vv.npy -o vo.npy "
             "--cu-seqlens-q vcq.npy --cu-seqlens-k vck.npy %s", options);
    ref_attention(r, c->want);
    c->ndim = 3;
    memcpy(c->shape, (const int64_t[3]){5, 2, 3}, 3 * sizeof c->shape[0]);
}

static void case_varlen(test_env *env, cli_case *c)
{
    (void)env;
    packed_inputs in;
    ref_case r;
    packed(&in, 62, &r);
    r.causal = true;
    finish_packed(c, &r, "--causal");
}

/* With a window, kv_len and a mask of the longest sequences (Tq 3, Tk 4). */
static void case_varlen_window_mask(test_env *env, cli_case *c)
{
    (void)env;
    packed_inputs in;
    ref_case r;
    static float mask[12];
    static const int32_t kv_len[2] = {3, 3};
    rng g = {63};
    packed(&in, 64, &r);
    fill(&g, mask, 12);
    mask[1 * 4 + 1] = -INFINITY;
    write_npy("vm.npy", mask, 2, (const int64_t[2]){3, 4});
    r.has_window = true, r.window_left = 1, r.window_right = 0, r.kv_len = kv_len, r.mask = mask;
    finish_packed(c, &r, "--window 1,0 --kv-len 3,3 --mask vm.npy");
}

/* A paged cache of 5 blocks of 2 keys (Hkv 1, D 4, Dv 3); entry 0 holds 5 keys in
 * blocks 3, 0, 4 and entry 1 holds 3 keys in blocks 1, 2 (its third slot unused). */
typedef struct paged_inputs {
    float q[48], k[40], v[30];
} paged_inputs;

static const int32_t paged_table[6] = {3, 0, 4, 1, 2, 0}, paged_kv_len[2] = {5, 3};

static void paged(paged_inputs *in, uint64_t seed, ref_case *r)
{
    rng g = {seed};
    fill(&g, in->q, 48);
    fill(&g, in->k, 40);
    fill(&g, in->v, 30);
    write_npy("vk.npy", in->k, 4, (const int64_t[4]){5, 2, 1, 4});
    write_npy("vv.npy", in->v, 4, (const int64_t[4]){5, 2, 1, 3});
    write_i32("vt.npy", paged_table, 2, (const int64_t[2]){2, 3});
    *r = (ref_case){.B = 2, .H = 2, .Hkv = 1, .D = 4, .Dv = 3, .Tk = 6, .table = paged_table,
                    .max_blocks = 3, .block_size = 2, .kv_len = paged_kv_len,
                    .q = in->q, .k = in->k, .v = in->v};
}

/* Dense Q (B 2, H 2, Tq 2, D 4); q_offset is kv_len - Tq: 3 and 1. */
static void case_paged(test_env *env, cli_case *c)
{
    (void)env;
    paged_inputs in;
    ref_case r;
    paged(&in, 65, &r);
    write_npy("vq.npy", in.q, 4, (const int64_t[4]){2, 2, 2, 4});
    r.Tq = 2, r.causal = true;
    snprintf(c->args, sizeof c->args, "attention -q vq.npy -k vk.npy -v vv.npy -o vo.npy "
             "--block-table vt.npy --kv-len 5,3 --causal");
    ref_attention(&r, c->want);
    c->ndim = 4;
    memcpy(c->shape, (const int64_t[4]){2, 2, 2, 3}, sizeof c->shape);
}

/* Packed queries (1 and 2 rows) over the paged cache, with sinks and a window. */
static void case_paged_packed(test_env *env, cli_case *c)
{
    (void)env;
    paged_inputs in;
    ref_case r;
    static const int32_t cu_q[3] = {0, 1, 3};
    paged(&in, 66, &r);
    write_npy("vq.npy", in.q, 3, (const int64_t[3]){3, 2, 4});
    write_i32("vcq.npy", cu_q, 1, (const int64_t[1]){3});
    write_npy("vs.npy", two_sinks, 1, (const int64_t[1]){2});
    r.cu_q = cu_q, r.Tq = 2, r.sinks = two_sinks;
    r.has_window = true, r.window_left = 2, r.window_right = -1;
    snprintf(c->args, sizeof c->args, "attention -q vq.npy -k vk.npy -v vv.npy -o vo.npy "
             "--cu-seqlens-q vcq.npy --block-table vt.npy --kv-len 5,3 --sinks vs.npy "
             "--window 2,-1");
    ref_attention(&r, c->want);
    c->ndim = 3;
    memcpy(c->shape, (const int64_t[3]){3, 2, 3}, 3 * sizeof c->shape[0]);
}

/* mha: X (T 5, C 6), H 2, Dh 4, W_qkv (24, 6) with its bias, W_out (5, 8) without.
 * The reference projects in double, attends with ref_attention (BHSD) and
 * projects back. */
static void mha_case(cli_case *c, uint64_t seed, ref_case *r, const char *options)
{
    float x[30], w_qkv[144], b_qkv[24], w_out[40], qkv[3][40], o[40];
    rng g = {seed};
    fill(&g, x, 30);
    fill(&g, w_qkv, 144);
    fill(&g, b_qkv, 24);
    fill(&g, w_out, 40);
    write_npy("mx.npy", x, 2, (const int64_t[2]){5, 6});
    write_npy("mwq.npy", w_qkv, 2, (const int64_t[2]){24, 6});
    write_npy("mbq.npy", b_qkv, 1, (const int64_t[1]){24});
    write_npy("mwo.npy", w_out, 2, (const int64_t[2]){5, 8});
    for (int t = 0; t < 5; t++)
        for (int n = 0; n < 24; n++) {
            double acc = b_qkv[n];
            for (int ch = 0; ch < 6; ch++)
                acc += (double)x[t * 6 + ch] * w_qkv[n * 6 + ch];
            /* column n is part n / 8 (q, k, v) of head (n % 8) / 4, element n % 4 */
            qkv[n / 8][((n % 8) / 4 * 5 + t) * 4 + n % 4] = (float)acc;
        }
    r->B = 1, r->H = 2, r->Hkv = 2, r->D = 4, r->Dv = 4, r->Tq = 5, r->Tk = 5;
    r->q = qkv[0], r->k = qkv[1], r->v = qkv[2];
    ref_attention(r, o);
    for (int t = 0; t < 5; t++)
        for (int n = 0; n < 5; n++) {
            double acc = 0.0;
            for (int h = 0; h < 2; h++)
                for (int d = 0; d < 4; d++)
                    acc += (double)o[(h * 5 + t) * 4 + d] * w_out[n * 8 + h * 4 + d];
            c->want[t * 5 + n] = (float)acc;
        }
    snprintf(c->args, sizeof c->args, "mha -x mx.npy --w-qkv mwq.npy --b-qkv mbq.npy --w-out "
             "mwo.npy --heads 2 -o vo.npy %s", options);
    c->ndim = 2;
    memcpy(c->shape, (const int64_t[2]){5, 5}, 2 * sizeof c->shape[0]);
}

static void case_mha_window(test_env *env, cli_case *c)
{
    (void)env;
    ref_case r = {.has_window = true, .window_left = 2, .window_right = 0};
    mha_case(c, 67, &r, "--window 2,0");
}

static void case_mha_softcap(test_env *env, cli_case *c)
{
    (void)env;
    ref_case r = {.softcap = 0.5, .causal = true};
    mha_case(c, 68, &r, "--softcap 0.5 --causal");
}

static void case_mha_sinks(test_env *env, cli_case *c)
{
    (void)env;
    write_npy("vs.npy", two_sinks, 1, (const int64_t[1]){2});
    ref_case r = {.sinks = two_sinks, .causal = true};
    mha_case(c, 69, &r, "--sinks vs.npy --causal");
}

static void case_mha_alibi(test_env *env, cli_case *c)
{
    (void)env;
    static const float slopes[2] = {0.25f, 0.0625f};
    write_npy("va.npy", slopes, 1, (const int64_t[1]){2});
    ref_case r = {.alibi = slopes, .causal = true};
    mha_case(c, 70, &r, "--alibi va.npy --causal");
}

static void case_mha_mask(test_env *env, cli_case *c)
{
    (void)env;
    static float mask[25];
    rng g = {71};
    fill(&g, mask, 25);
    for (int j = 0; j < 5; j++)
        mask[2 * 5 + j] = -INFINITY; /* row 2 sees no key: its o row is zeros */
    mask[1] = mask[4 * 5 + 3] = -INFINITY;
    write_npy("vm.npy", mask, 2, (const int64_t[2]){5, 5});
    ref_case r = {.mask = mask};
    mha_case(c, 72, &r, "--mask vm.npy");
}

static const struct {
    const char *name;
    void (*prepare)(test_env *env, cli_case *c);
} variant_cases[] = {
    {"window", case_window},
    {"window -1 side, causal", case_window_causal},
    {"softcap", case_softcap},
    {"sinks, rows without keys", case_sinks},
    {"alibi (float16 file)", case_alibi},
    {"alibi, sinks, q_offset -15", case_alibi_far_offset},
    {"window, q_offset 12 (past Tk)", case_window_far_offset},
    {"mask (Tq, Tk) with -inf, sinks", case_mask},
    {"mask (B, 1, Tq, Tk) float16", case_mask_batched_f16},
    {"mask (B, H, Tq, Tk), softcap, alibi", case_mask_heads_softcap_alibi},
    {"mask (B, 1, 1, Tk): key padding, sinks", case_mask_key_padding},
    {"mask (H, Tq, Tk)", case_mask_per_head},
    {"varlen", case_varlen},
    {"varlen, window, kv_len, mask", case_varlen_window_mask},
    {"paged", case_paged},
    {"paged, packed queries, sinks, window", case_paged_packed},
    {"mha window", case_mha_window},
    {"mha softcap", case_mha_softcap},
    {"mha sinks", case_mha_sinks},
    {"mha alibi", case_mha_alibi},
    {"mha mask (T, T) with -inf, a row masked whole", case_mha_mask},
};

/* Every variant case through the CLI with `backend` options, against ref_attention. */
static void run_variant_cases(test_env *env, const char *backend)
{
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/vo.npy", dir);
    for (size_t n = 0; n < sizeof variant_cases / sizeof variant_cases[0]; n++) {
        cli_case c;
        memset(&c, 0, sizeof c);
        variant_cases[n].prepare(env, &c);
        unlink(path);
        int rc = run("%s %s", c.args, backend);
        if (rc != 0)
            fail_msg("%s [%s]: vkattn %s: exit %d: %s", variant_cases[n].name, backend, c.args, rc,
                     err_text);
        if (err_text[0]) /* validation is on: any message is a failure */
            fail_msg("%s [%s]: stderr \"%s\"", variant_cases[n].name, backend, err_text);
        npy_array a;
        if (npy_read(path, &a, err, sizeof err))
            fail_msg("%s [%s]: %s", variant_cases[n].name, backend, err);
        assert_int_equal(a.ndim, c.ndim);
        for (int i = 0; i < c.ndim; i++)
            assert_int_equal(a.shape[i], c.shape[i]);
        for (size_t i = 0; i < a.count; i++) {
            double got = ((float *)a.data)[i];
            if (!(fabs(got - c.want[i]) <= 2e-5))
                fail_msg("%s [%s]: element %zu is %.7g, reference %.7g", variant_cases[n].name,
                         backend, i, got, (double)c.want[i]);
        }
        npy_free(&a);
    }
}

static void test_variants_cpu(void **state)
{
    run_variant_cases(*state, "--backend cpu");
}

/* The default backend: Vulkan where a device is (lavapipe in CI). */
static void test_variants_default(void **state)
{
    run_variant_cases(*state, "");
}

typedef struct bad_run {
    const char *args;
    int status;
    const char *message;    /* a fragment of the one line on stderr */
} bad_run;

static void test_bad_runs(void **state)
{
    (void)state;
    rng r = {43};
    float *data = random_floats(&r, 256, -1.0f, 1.0f);
    const int64_t q[2] = {4, 16}, k12[2] = {6, 12}, k[2] = {6, 16};
    write_npy("bq.npy", data, 2, q);
    write_npy("bk.npy", data, 2, k);
    write_npy("bk12.npy", data, 2, k12);
    write_npy("bk3.npy", data, 3, (const int64_t[3]){1, 6, 16});
    /* A truncated copy and a non-.npy file. */
    char path[128];
    snprintf(path, sizeof path, "%s/trunc.npy", dir);
    FILE *f = fopen(path, "wb");
    fwrite("\x93NUMPY\x01\x00\x76\x00{'descr': '<f4',", 1, 26, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/text.npy", dir);
    f = fopen(path, "wb");
    fputs("hello\n", f);
    fclose(f);

    /* For the variants: a float block table and cu_seqlens, an int32 Q, sinks of
     * the wrong length, a paged cache and a block table that points past it. */
    write_npy("bt_f.npy", data, 2, (const int64_t[2]){1, 3});
    write_npy("cu_f.npy", data, 1, (const int64_t[1]){2});
    write_npy("s3.npy", data, 1, (const int64_t[1]){3});
    write_npy("bk4.npy", data, 4, (const int64_t[4]){1, 6, 1, 16});
    write_i32("bi.npy", (const int32_t[64]){0}, 2, q);
    write_i32("cu.npy", (const int32_t[2]){0, 1}, 1, (const int64_t[1]){2});
    write_i32("bt.npy", (const int32_t[3]){0, 9, 0}, 2, (const int64_t[2]){1, 3});
    static const bad_run runs[] = {
        {"attention -q bq.npy -k bk.npy -v bk.npy", 2, "-o are required"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --frobnicate", 2, "unknown option --frobnicate"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --path sideways", 2, "--path sideways"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --scale -1", 2, "--scale -1"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --kernel sideways", 2,
         "--kernel sideways: expected one of auto, rows, tiled, coopmat, coopmat_emulated, decode, "
         "coopmat_workgroup, coopmat_workgroup_emulated"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --kernel tiled --path unfused", 2,
         "--kernel tiled is a fused kernel: not with --path unfused"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --kernel rows --backend cpu", 2,
         "--kernel rows is a Vulkan kernel: not with --backend cpu"},
        {"mha -x bq.npy --w-qkv bk.npy --w-out bk.npy --heads 2 -o out.npy --kernel tiled", 2,
         "unknown option --kernel"},
        /* A kernel forced where it cannot run fails with its reason (not the
         * unfused path AUTO would take): f32 inputs, on any device. */
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --kernel coopmat", 1,
         "fused path: the coopmat kernel takes f16 or bf16 Q, K and V (got f32, f32, f32)"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --scale", 2, "--scale needs a value"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --kv-len 3,4", 2, "--kv-len has more"},
        {"frobnicate", 2, "unknown command"},
        {"attention -q bq.npy -k bk12.npy -v bk12.npy -o out.npy", 1,
         "bk12.npy (K): K has head size 12 but Q has 16"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --q-offset 268435457", 2,
         "--q-offset 268435457: expected an integer from -268435456 to 268435456"},
        {"attention -q bq.npy -k bk3.npy -v bk3.npy -o out.npy", 1,
         "bq.npy (Q) is 2-D but bk3.npy (K) is 3-D and bk3.npy (V) 3-D"},
        {"attention -q missing.npy -k bk.npy -v bk.npy -o out.npy", 1, "missing.npy (Q): cannot open"},
        {"attention -q bq.npy -k trunc.npy -v bk.npy -o out.npy", 1, "trunc.npy (K): truncated"},
        {"attention -q bq.npy -k bk.npy -v text.npy -o out.npy", 1, "text.npy (V): not a .npy file"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --device 99", 1, "cannot open device 99"},
        {"mha -x bq.npy --w-qkv bk12.npy --w-out bk.npy --heads 2 -o out.npy", 1,
         "bk12.npy (W_qkv): W_qkv is 6x12"},
        {"mha -x bq.npy --w-qkv bk.npy --w-out bk.npy -o out.npy", 2, "--heads"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --dtype f8", 2,
         "--dtype f8: expected f32, f16 or bf16"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --dtype", 2, "--dtype needs a value"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --out-dtype f8", 2,
         "--out-dtype f8: expected f32, f16 or bf16"},
        {"mha -x bq.npy --w-qkv bk.npy --w-out bk.npy --heads 2 -o out.npy --out-dtype i32", 2,
         "--out-dtype i32: expected f32, f16 or bf16"},
        {"mha -x bq.npy --w-qkv bk.npy --w-out bk.npy --heads 2 -o out.npy --compute-dtype f64", 2,
         "--compute-dtype f64: expected f32, f16 or bf16"},
        {"mha -x bq.npy --w-qkv bk.npy --w-out bk.npy --heads 2 -o out.npy --dtype i32", 2,
         "--dtype i32: expected f32, f16 or bf16"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --window -2,0", 2,
         "--window -2,0: expected L,R: two integers, each >= 0 (up to 2147483647), or -1 "
         "for unbounded"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --window 2147483648,0", 2,
         "--window 2147483648,0: expected L,R"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --window 3", 2, "--window 3: expected"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --window 1,2,3", 2, "--window 1,2,3"},
        {"mha -x bq.npy --w-qkv bk.npy --w-out bk.npy --heads 2 -o out.npy --window 1,-3", 2,
         "--window 1,-3"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --softcap -1", 2,
         "--softcap -1: expected a positive number"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --softcap 0x", 2,
         "--softcap 0x: expected a positive number"},
        {"attention -q bq.npy -k bk4.npy -v bk4.npy -o out.npy --block-table bt.npy", 2,
         "--block-table needs --kv-len"},
        {"attention -q bk3.npy -k bk3.npy -v bk3.npy -o out.npy --cu-seqlens-k cu.npy", 2,
         "--cu-seqlens-k needs --cu-seqlens-q"},
        {"attention -q bk3.npy -k bk3.npy -v bk3.npy -o out.npy --cu-seqlens-q cu.npy", 2,
         "--cu-seqlens-q needs --cu-seqlens-k, or --block-table"},
        {"attention -q bk3.npy -k bk4.npy -v bk4.npy -o out.npy --cu-seqlens-q cu.npy "
         "--cu-seqlens-k cu.npy --block-table bt.npy --kv-len 4", 2, "both say where the keys are"},
        {"attention -q bq.npy -k bk4.npy -v bk4.npy -o out.npy --block-table bt_f.npy --kv-len 4", 1,
         "bt_f.npy (block_table): is float32, must be int32 or int64"},
        {"attention -q bk3.npy -k bk3.npy -v bk3.npy -o out.npy --cu-seqlens-q cu_f.npy "
         "--cu-seqlens-k cu.npy", 1, "cu_f.npy (cu_seqlens_q): is float32, must be int32"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --cu-seqlens-q cu.npy "
         "--cu-seqlens-k cu.npy", 1, "bq.npy (Q): is 2-D, must be 3-D (total, heads, D)"},
        {"attention -q bk3.npy -k bk3.npy -v bk3.npy -o out.npy --block-table bt.npy --kv-len 4",
         1, "bk3.npy (K): is 3-D, must be 4-D (num_blocks, block_size, Hkv, D)"},
        {"attention -q bi.npy -k bk.npy -v bk.npy -o out.npy", 1,
         "bi.npy (Q): is an integer array, must be float16, float32 or float64"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --sinks s3.npy", 1,
         "s3.npy (sinks): is (3), must be (1): one value per query head"},
        {"mha -x bq.npy --w-qkv bk.npy --w-out bk.npy --heads 2 -o out.npy --alibi s3.npy", 1,
         "s3.npy (alibi_slopes): is (3), must be (2)"},
        {"mha -x bq.npy --w-qkv bk.npy --w-out bk.npy --heads 2 -o out.npy --mask s3.npy", 1,
         "s3.npy (mask): is (3), must broadcast to (B, H, Tq, Tk) = (1, 2, 4, 4): 2 to 4 "
         "dimensions"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --mask s3.npy", 1,
         "s3.npy (mask): is (3), must broadcast to (B, H, Tq, Tk) = (1, 1, 4, 6)"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --mask bk3.npy", 1,
         "bk3.npy (mask): is (1, 6, 16), must broadcast to (B, H, Tq, Tk) = (1, 1, 4, 6)"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --mask bk.npy", 1,
         "bk.npy (mask): is (6, 16), must"},
        {"attention -q bq.npy -k bk4.npy -v bk4.npy -o out.npy --block-table bt.npy --kv-len 7", 1,
         "bt.npy (block_table): block_table[0][1] = 9 is outside the cache's 1 blocks"},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        int status = run("%s", runs[i].args);
        if (status != runs[i].status || !strstr(err_text, runs[i].message))
            fail_msg("vkattn %s: exit %d, stderr \"%s\"; expected exit %d and \"%s\"",
                     runs[i].args, status, err_text, runs[i].status, runs[i].message);
        /* One line, and no output file from a failed run. */
        const char *newline = strchr(err_text, '\n');
        if (!newline || newline[1] != '\0')
            fail_msg("vkattn %s: stderr is not one line: \"%s\"", runs[i].args, err_text);
        assert_false(exists("out.npy"));
    }
    /* No Vulkan driver: AUTO falls back to the CPU reference (saying so),
     * which has no kernel to force. The loader's variables are restored (a
     * GPU check names NVIDIA's driver in them). */
    static const char *const loader_vars[] = {"VK_DRIVER_FILES", "VK_ICD_FILENAMES"};
    char *saved[2];
    for (int i = 0; i < 2; i++) {
        saved[i] = getenv(loader_vars[i]) ? strdup(getenv(loader_vars[i])) : NULL;
        assert_int_equal(setenv(loader_vars[i], "/nonexistent/driver.json", 1), 0);
    }
    int status = run("attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --kernel tiled");
    for (int i = 0; i < 2; i++) {
        assert_int_equal(saved[i] ? setenv(loader_vars[i], saved[i], 1) : unsetenv(loader_vars[i]), 0);
        free(saved[i]);
    }
    if (status != 1 || !strstr(err_text, "falling back to the CPU reference backend") ||
        !strstr(err_text, "--kernel tiled: no Vulkan device, and the CPU backend has no fused kernels"))
        fail_msg("--kernel tiled without a Vulkan driver: exit %d, stderr \"%s\"", status, err_text);
    assert_false(exists("out.npy"));
    assert_int_equal(run("--help"), 0);
    assert_int_equal(run("attention --help"), 0);
    assert_int_equal(run("mha --help"), 0);
    assert_int_equal(run("devices"), 0);
    free(data);
}

static int setup(void **state)
{
    assert_non_null(mkdtemp(dir));
    setenv("VKATTN_VALIDATION", "1", 1);
    *state = test_env_create();
    return 0;
}

static int teardown(void **state)
{
    test_env_destroy(*state);
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", dir);
    return system(command) == 0 ? 0 : -1;
}

/* Packed sequences that are all empty: no query rows give an O with none, no
 * keys give zeros (every row sees no key, sinks or not); offsets past the
 * rows are still refused. */
static void test_attention_empty_batches(void **state)
{
    (void)state;
    rng r = {43};
    float *q = random_floats(&r, 3 * 2 * 8, -1.0f, 1.0f);
    const int64_t q3[3] = {3, 2, 8}, none_k[3] = {0, 1, 8}, none_v[3] = {0, 1, 6};
    const int64_t none_q[3] = {0, 2, 8}, k3[3] = {4, 1, 8}, v3[3] = {4, 1, 6};
    write_npy("eq.npy", q, 3, q3);
    write_npy("eq0.npy", q, 3, none_q);
    write_npy("ek0.npy", q, 3, none_k);
    write_npy("ev0.npy", q, 3, none_v);
    write_npy("ek.npy", q, 3, k3);
    write_npy("ev.npy", q, 3, v3);
    static const float sinks[2] = {0.5f, -1.0f};
    write_npy("es.npy", sinks, 1, (const int64_t[1]){2});
    write_i32("ecq.npy", (const int32_t[3]){0, 1, 3}, 1, (const int64_t[1]){3});
    write_i32("eck0.npy", (const int32_t[3]){0, 0, 0}, 1, (const int64_t[1]){3});
    write_i32("ecq0.npy", (const int32_t[3]){0, 0, 0}, 1, (const int64_t[1]){3});
    write_i32("eck.npy", (const int32_t[3]){0, 2, 4}, 1, (const int64_t[1]){3});
    static const float zeros[3 * 2 * 6] = {0};
    assert_int_equal(run("attention -q eq.npy -k ek0.npy -v ev0.npy -o eo.npy --causal "
                         "--cu-seqlens-q ecq.npy --cu-seqlens-k eck0.npy --sinks es.npy"), 0);
    expect_npy("eo.npy", zeros, 3, (const int64_t[3]){3, 2, 6}, 0.0);
    assert_int_equal(run("attention -q eq0.npy -k ek.npy -v ev.npy -o eo0.npy "
                         "--cu-seqlens-q ecq0.npy --cu-seqlens-k eck.npy"), 0);
    expect_npy("eo0.npy", zeros, 3, (const int64_t[3]){0, 2, 6}, 0.0);
    /* Every query sequence empty: the mask's Tq is 0, so a mask of 0 rows (never
     * read) broadcasts, as one of 1 does, and one of 2 does not; Q's rows, in
     * no sequence, are zeros. */
    write_npy("emq0.npy", q, 4, (const int64_t[4]){1, 1, 0, 2});
    write_npy("emq1.npy", q, 4, (const int64_t[4]){2, 1, 1, 2});
    write_npy("emq2.npy", q, 4, (const int64_t[4]){1, 1, 2, 2});
    const char *none_in_sequences = "attention -k ek.npy -v ev.npy -o eo.npy --cu-seqlens-q "
                                    "ecq0.npy --cu-seqlens-k eck.npy";
    assert_int_equal(run("%s -q eq0.npy --mask emq0.npy", none_in_sequences), 0);
    expect_npy("eo.npy", zeros, 3, (const int64_t[3]){0, 2, 6}, 0.0);
    assert_int_equal(run("%s -q eq.npy --mask emq0.npy --causal", none_in_sequences), 0);
    expect_npy("eo.npy", zeros, 3, (const int64_t[3]){3, 2, 6}, 0.0);
    assert_int_equal(run("%s -q eq.npy --mask emq1.npy", none_in_sequences), 0);
    expect_npy("eo.npy", zeros, 3, (const int64_t[3]){3, 2, 6}, 0.0);
    assert_int_equal(run("%s -q eq.npy --mask emq2.npy", none_in_sequences), 1);
    assert_non_null(strstr(err_text, "emq2.npy (mask): is (1, 1, 2, 2), must broadcast to "
                                     "(B, H, Tq, Tk) = (2, 2, 0, 2)"));
    /* cu_seqlens_k says 2 keys, K has none */
    assert_int_not_equal(run("attention -q eq.npy -k ek0.npy -v ev0.npy -o eo.npy "
                             "--cu-seqlens-q ecq.npy --cu-seqlens-k eck.npy"), 0);
    assert_non_null(strstr(err_text, "cu_seqlens_k"));
    assert_non_null(strstr(err_text, "outside"));
    /* With no rows the shapes are checked as the library checks them with:
     * K's head size, V's kv heads, the query heads' grouping, the sinks'
     * length; no output is written. */
    const int64_t k7[3] = {4, 1, 7}, v2[3] = {4, 2, 6}, k3h[3] = {4, 3, 8};
    float *kv = random_floats(&r, 4 * 3 * 8, -1.0f, 1.0f); /* enough for each of them */
    write_npy("ek7.npy", kv, 3, k7);
    write_npy("ev2.npy", kv, 3, v2);
    write_npy("ek3h.npy", kv, 3, k3h);
    write_npy("ev3h.npy", kv, 3, (const int64_t[3]){4, 3, 6});
    free(kv);
    write_npy("es3.npy", sinks, 1, (const int64_t[1]){1});
    static const struct {
        const char *k, *v, *extra, *message;
    } bad[] = {
        {"ek7.npy", "ev.npy", "", "ek7.npy (K): K has head size 7 but Q has 8"},
        {"ek.npy", "ev2.npy", "", "ev2.npy (V): V's dimension 1 is 2 but K's is 1"},
        {"ek3h.npy", "ev3h.npy", "", "eq0.npy (Q): Q has 2 heads but K and V 3"},
        {"ek.npy", "ev.npy", "--sinks es3.npy", "es3.npy (sinks): is (1), must be (2)"},
        {"ek.npy", "ev.npy", "--kv-len 3,1",
         "kv_len[0] = 3 is outside 0..2 (that sequence's keys in cu_seqlens_k)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(run("attention -q eq0.npy -k %s -v %s -o ebad.npy --cu-seqlens-q "
                             "ecq0.npy --cu-seqlens-k eck.npy %s", bad[i].k, bad[i].v,
                             bad[i].extra), 1);
        if (!strstr(err_text, bad[i].message))
            fail_msg("case %zu: stderr \"%s\", expected \"%s\"", i, err_text, bad[i].message);
        assert_false(exists("ebad.npy"));
    }
    free(q);
}

/* Dense Q, K and V with no rows, as numpy and PyTorch take them: no keys give
 * zeros in --out-dtype (every row sees none), no query rows or batch entries an
 * O with none; the shapes are still checked, and a refused run writes nothing. */
static void test_attention_empty_dense(void **state)
{
    (void)state;
    rng r = {44};
    float *data = random_floats(&r, 2 * 3 * 5 * 8, -1.0f, 1.0f);
    write_npy("dq.npy", data, 4, (const int64_t[4]){2, 3, 5, 8});
    write_npy("dk0.npy", data, 4, (const int64_t[4]){2, 3, 0, 8});
    write_npy("dv0.npy", data, 4, (const int64_t[4]){2, 3, 0, 6});
    write_npy("dqt0.npy", data, 4, (const int64_t[4]){2, 0, 3, 8}); /* BSHD: Tq = 0 */
    write_npy("dk.npy", data, 4, (const int64_t[4]){2, 4, 3, 8});
    write_npy("dv.npy", data, 4, (const int64_t[4]){2, 4, 3, 6});
    write_npy("dqb0.npy", data, 4, (const int64_t[4]){0, 3, 5, 8});
    write_npy("dkb0.npy", data, 4, (const int64_t[4]){0, 3, 4, 8});
    write_npy("dvb0.npy", data, 4, (const int64_t[4]){0, 3, 4, 6});
    static const float sinks[3] = {0.5f, -1.0f, 2.0f}, zeros[2 * 3 * 5 * 6] = {0};
    write_npy("ds.npy", sinks, 1, (const int64_t[1]){3});
    assert_int_equal(run("attention -q dq.npy -k dk0.npy -v dv0.npy -o do.npy --causal "
                         "--sinks ds.npy --kv-len 0,0"), 0);
    expect_npy("do.npy", zeros, 4, (const int64_t[4]){2, 3, 5, 6}, 0.0);
    /* a mask of the problem's shape is empty too, as numpy broadcasts it */
    write_npy("dme.npy", data, 2, (const int64_t[2]){5, 0});
    assert_int_equal(run("attention -q dq.npy -k dk0.npy -v dv0.npy -o do.npy --mask dme.npy"), 0);
    expect_npy("do.npy", zeros, 4, (const int64_t[4]){2, 3, 5, 6}, 0.0);
    assert_int_equal(run("attention -q dqt0.npy -k dk.npy -v dv.npy -o do.npy --layout bshd"), 0);
    expect_npy("do.npy", zeros, 4, (const int64_t[4]){2, 0, 3, 6}, 0.0);
    assert_int_equal(run("attention -q dqb0.npy -k dkb0.npy -v dvb0.npy -o do.npy"), 0);
    expect_npy("do.npy", zeros, 4, (const int64_t[4]){0, 3, 5, 6}, 0.0);
    /* no query heads and no kv heads */
    write_npy("dqh0.npy", data, 4, (const int64_t[4]){2, 0, 5, 8});
    write_npy("dkh0.npy", data, 4, (const int64_t[4]){2, 0, 3, 8});
    write_npy("dvh0.npy", data, 4, (const int64_t[4]){2, 0, 3, 6});
    assert_int_equal(run("attention -q dqh0.npy -k dkh0.npy -v dvh0.npy -o do.npy"), 0);
    expect_npy("do.npy", zeros, 4, (const int64_t[4]){2, 0, 5, 6}, 0.0);
    /* query heads but no kv heads to group them on */
    assert_int_equal(run("attention -q dq.npy -k dkh0.npy -v dvh0.npy -o dbad.npy"), 1);
    assert_non_null(strstr(err_text, "dq.npy (Q): Q has 3 heads but K and V 0"));
    assert_false(exists("dbad.npy"));
    /* zeros in float16, as --out-dtype f16 writes every O */
    assert_int_equal(run("attention -q dq.npy -k dk0.npy -v dv0.npy -o dh.npy --out-dtype f16"), 0);
    char path[128], err[256];
    npy_array a;
    snprintf(path, sizeof path, "%s/dh.npy", dir);
    if (npy_read(path, &a, err, sizeof err))
        fail_msg("%s: %s", path, err);
    assert_int_equal(a.dtype, NPY_F16);
    assert_int_equal(a.count, 2 * 3 * 5 * 6);
    for (size_t i = 0; i < a.count; i++)
        assert_int_equal(((const uint16_t *)a.data)[i], 0);
    npy_free(&a);
    write_npy("dk1.npy", data, 4, (const int64_t[4]){1, 3, 0, 8});
    write_npy("dv1.npy", data, 4, (const int64_t[4]){1, 3, 0, 6});
    write_npy("dvd0.npy", data, 4, (const int64_t[4]){2, 3, 0, 0});
    write_npy("dm.npy", data, 2, (const int64_t[2]){5, 2});
    static const struct {
        const char *k, *v, *extra, *message;
        int status;
    } bad[] = {
        {"dk1.npy", "dv1.npy", "", "dk1.npy (K): K has batch size 1 but Q has 2", 1},
        {"dk0.npy", "dv0.npy", "--mask dm.npy", "dm.npy (mask): is (5, 2), must broadcast to "
                                                "(B, H, Tq, Tk) = (2, 3, 5, 0)", 1},
        {"dk0.npy", "dv0.npy", "--kv-len 1", "--kv-len has 1 lengths, but B is 2", 2},
        {"dk0.npy", "dv0.npy", "--kv-len 0,3", "kv_len[1] = 3 is outside 0..0 (Tk of K)", 1},
        {"dk0.npy", "dvd0.npy", "", "dvd0.npy (V): V has head size 0, must be >= 1", 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = run("attention -q dq.npy -k %s -v %s -o dbad.npy %s", bad[i].k, bad[i].v,
                     bad[i].extra);
        if (rc != bad[i].status || !strstr(err_text, bad[i].message))
            fail_msg("case %zu: exit %d, stderr \"%s\", expected %d and \"%s\"", i, rc,
                     err_text, bad[i].status, bad[i].message);
        assert_false(exists("dbad.npy"));
    }
    /* No query rows against a paged cache: --kv-len within max_blocks *
     * block_size and every block it uses in the cache, as the library checks */
    write_npy("dpk.npy", data, 4, (const int64_t[4]){2, 2, 3, 8});
    write_npy("dpv.npy", data, 4, (const int64_t[4]){2, 2, 3, 6});
    write_npy("dq0.npy", data, 4, (const int64_t[4]){2, 3, 0, 8});
    write_i32("dt.npy", (const int32_t[4]){0, 1, 1, 5}, 2, (const int64_t[2]){2, 2});
    const char *paged = "attention -q dq0.npy -k dpk.npy -v dpv.npy --block-table dt.npy";
    assert_int_equal(run("%s -o dpo.npy --kv-len 3,2", paged), 0);
    expect_npy("dpo.npy", zeros, 4, (const int64_t[4]){2, 3, 0, 6}, 0.0);
    static const struct {
        const char *lens, *message;
    } bad_paged[] = {
        {"3,4", "dt.npy (block_table): entry [1][1] = 5 is outside the cache's 2 blocks"},
        {"5,0", "kv_len[0] = 5 is outside 0..4 (max_blocks * block_size of the block table)"},
    };
    for (size_t i = 0; i < sizeof bad_paged / sizeof bad_paged[0]; i++) {
        int rc = run("%s -o dbad.npy --kv-len %s", paged, bad_paged[i].lens);
        if (rc != 1 || !strstr(err_text, bad_paged[i].message))
            fail_msg("paged case %zu: exit %d, stderr \"%s\", expected 1 and \"%s\"", i, rc,
                     err_text, bad_paged[i].message);
        assert_false(exists("dbad.npy"));
    }
    /* --kv-len's count against a block table of one row, in a run with rows:
     * the message names where B comes from */
    write_i32("dt1.npy", (const int32_t[2]){0, 1}, 2, (const int64_t[2]){1, 2});
    assert_int_equal(run("attention -q dq.npy -k dpk.npy -v dpv.npy --block-table dt1.npy "
                         "-o dbad.npy --kv-len 3,2"), 2);
    assert_non_null(strstr(err_text, "--kv-len has more than B = 1 lengths (the rows of the "
                                     "block table)"));
    assert_false(exists("dbad.npy"));
    free(data);
}

/* mha with X of no rows (B or T of 0), as nn.Linear takes it: Y has none
 * either, in --out-dtype; the weights, biases and variants' files are checked
 * as for a run with rows, and a refused run writes no Y. */
static void test_mha_empty(void **state)
{
    (void)state;
    rng r = {45};
    float *data = random_floats(&r, 24 * 6, -1.0f, 1.0f);
    write_npy("ex0.npy", data, 3, (const int64_t[3]){2, 0, 6});  /* T = 0 */
    write_npy("exb0.npy", data, 3, (const int64_t[3]){0, 3, 6}); /* B = 0 */
    write_npy("ex2.npy", data, 2, (const int64_t[2]){0, 6});     /* (T, C), T = 0 */
    write_npy("exc0.npy", data, 3, (const int64_t[3]){2, 3, 0}); /* C = 0 */
    write_npy("ewq.npy", data, 2, (const int64_t[2]){24, 6});    /* H 2, Dh 4 */
    write_npy("ebq.npy", data, 1, (const int64_t[1]){24});
    write_npy("ewo.npy", data, 2, (const int64_t[2]){5, 8});
    write_npy("ebo.npy", data, 1, (const int64_t[1]){5});
    write_npy("es.npy", data, 1, (const int64_t[1]){2});
    write_npy("em.npy", data, 2, (const int64_t[2]){3, 1}); /* broadcasts to (0, 2, 3, 3) */
    const char *layer = "mha --w-qkv ewq.npy --b-qkv ebq.npy --w-out ewo.npy --b-out ebo.npy "
                        "--heads 2";
    assert_int_equal(run("%s -x ex0.npy -o ey.npy --causal --sinks es.npy", layer), 0);
    expect_npy("ey.npy", NULL, 3, (const int64_t[3]){2, 0, 5}, 0.0);
    assert_int_equal(run("%s -x exb0.npy -o ey.npy --mask em.npy --window 1,0", layer), 0);
    expect_npy("ey.npy", NULL, 3, (const int64_t[3]){0, 3, 5}, 0.0);
    assert_int_equal(run("%s -x ex2.npy -o ey.npy --out-dtype f16", layer), 0);
    char path[128], err[256];
    npy_array a;
    snprintf(path, sizeof path, "%s/ey.npy", dir);
    if (npy_read(path, &a, err, sizeof err))
        fail_msg("%s: %s", path, err);
    assert_int_equal(a.dtype, NPY_F16);
    assert_int_equal(a.ndim, 2);
    assert_int_equal(a.shape[0], 0);
    assert_int_equal(a.shape[1], 5);
    npy_free(&a);
    write_npy("ewq5.npy", data, 2, (const int64_t[2]){24, 5});
    write_npy("ebq3.npy", data, 1, (const int64_t[1]){3});
    write_npy("ewo7.npy", data, 2, (const int64_t[2]){5, 7});
    write_npy("ebo4.npy", data, 1, (const int64_t[1]){4});
    write_npy("es3.npy", data, 1, (const int64_t[1]){3});
    write_npy("em2.npy", data, 2, (const int64_t[2]){3, 2});
    write_i32("exi.npy", (const int32_t[1]){0}, 3, (const int64_t[3]){0, 3, 6});
    static const struct {
        const char *args, *message;
    } bad[] = {
        {"-x ex0.npy --w-qkv ewq5.npy --w-out ewo.npy",
         "ewq5.npy (W_qkv): is (24, 5), must be (3*H*Dh, C) = (a multiple of 6, 6) for X "
         "(2, 0, 6) and 2 heads"},
        {"-x ex0.npy --w-qkv ewq.npy --b-qkv ebq3.npy --w-out ewo.npy",
         "ebq3.npy (b_qkv): is (3), must be (24)"},
        {"-x ex0.npy --w-qkv ewq.npy --w-out ewo7.npy",
         "ewo7.npy (W_out): is (5, 7), must be (C_out, H*Dh) with H*Dh = 8"},
        {"-x ex0.npy --w-qkv ewq.npy --w-out ewo.npy --b-out ebo4.npy",
         "ebo4.npy (b_out): is (4), must be (5)"},
        {"-x ex0.npy --w-qkv ewq.npy --w-out ewo.npy --sinks es3.npy",
         "es3.npy (sinks): is (3), must be (2)"},
        {"-x exb0.npy --w-qkv ewq.npy --w-out ewo.npy --mask em2.npy",
         "em2.npy (mask): is (3, 2), must broadcast to (B, H, Tq, Tk) = (0, 2, 3, 3)"},
        {"-x exc0.npy --w-qkv ewq.npy --w-out ewo.npy", "exc0.npy (X): is (2, 3, 0), its C "
                                                        "must be positive"},
        {"-x exi.npy --w-qkv ewq.npy --w-out ewo.npy", "exi.npy (X): is an integer array"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = run("mha --heads 2 -o ebad.npy %s", bad[i].args);
        if (rc != 1 || !strstr(err_text, bad[i].message))
            fail_msg("case %zu: exit %d, stderr \"%s\", expected 1 and \"%s\"", i, rc, err_text,
                     bad[i].message);
        assert_false(exists("ebad.npy"));
    }
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attention_runs),
        cmocka_unit_test(test_attention_empty_batches),
        cmocka_unit_test(test_attention_empty_dense),
        cmocka_unit_test(test_mha_empty),
        cmocka_unit_test(test_attention_dtype),
        cmocka_unit_test(test_out_dtype),
        cmocka_unit_test(test_float64_files),
        cmocka_unit_test(test_mha_run),
        cmocka_unit_test(test_variants_cpu),
        cmocka_unit_test(test_variants_default),
        cmocka_unit_test(test_bad_runs),
    };
    return test_run_group(tests, setup, teardown);
}
