/* The vkattn program end to end: the test writes .npy files, runs the binary,
 * and checks outputs against the CPU reference, exit statuses, and the one-line
 * messages of bad runs (after which no output file may exist). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, setenv */
#include "test_util.h"

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

static float *random_array(rng *r, size_t n)
{
    float *v = malloc(n * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = rng_uniform(r, -1.0f, 1.0f);
    return v;
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
    float *q = random_array(&r, 160), *k = random_array(&r, 144), *v = random_array(&r, 108);
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

static void test_attention_runs(void **state)
{
    test_env *env = *state;
    rng r = {41};
    /* 3-D: 4 query heads over 2 kv heads, Tq 5, Tk 9, D 8, Dv 6. */
    const int64_t q3[3] = {4, 5, 8}, k3[3] = {2, 9, 8}, v3[3] = {2, 9, 6}, o3[3] = {4, 5, 6};
    float *q = random_array(&r, 160), *k = random_array(&r, 144), *v = random_array(&r, 108);
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
    d = (vkattn_attention_desc){.causal = true, .has_q_offset = true, .q_offset = 0, .scale = 0.5f};
    reference_attention(env, q, k, v, qs, ks, vs, &d, want);
    assert_int_equal(run("attention -q q.npy -k k.npy -v v.npy -o o.npy --causal --q-offset 0 "
                         "--scale 0.5 --backend cpu"), 0);
    expect_npy("o.npy", want, 3, o3, 1e-6);

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
    float *x = random_array(&r, 42), *w_qkv = random_array(&r, 144), *b_qkv = random_array(&r, 24);
    float *w_out = random_array(&r, 40), *b_out = random_array(&r, 5);
    write_npy("x.npy", x, 2, xs);
    write_npy("wq.npy", w_qkv, 2, wq);
    write_npy("bq.npy", b_qkv, 1, bq);
    write_npy("wo.npy", w_out, 2, wo);
    write_npy("bo.npy", b_out, 1, bo);
    /* The files' own dtype (float32), then X, weights and biases rounded by --dtype. */
    static const char *dtype_args[] = {"", "--dtype bf16", "--dtype f16"};
    static const vkattn_dtype dtypes[] = {VKATTN_DTYPE_F32, VKATTN_DTYPE_BF16, VKATTN_DTYPE_F16};
    for (int run_index = 0; run_index < 3; run_index++) {
        int rc = run("mha -x x.npy --w-qkv wq.npy --b-qkv bq.npy --w-out wo.npy --b-out bo.npy "
                     "--heads 2 --causal -o y.npy %s", dtype_args[run_index]);
        if (rc != 0)
            fail_msg("mha %s: exit %d: %s", dtype_args[run_index], rc, err_text);
        assert_string_equal(err_text, "");

        /* The reference on the inputs rounded as --dtype rounds them. */
        vkattn_tensor *t[6];
        const int64_t shapes[6][3] = {{1, 7, 6}, {24, 6}, {24}, {5, 8}, {5}, {1, 7, 5}};
        const int ranks[6] = {3, 2, 1, 2, 1, 3};
        const float *data[5] = {x, w_qkv, b_qkv, w_out, b_out};
        for (int i = 0; i < 6; i++) {
            vkattn_tensor_desc td = {.dtype = i < 5 ? dtypes[run_index] : VKATTN_DTYPE_F32,
                                     .ndim = ranks[i]};
            memcpy(td.shape, shapes[i], sizeof shapes[i]);
            assert_int_equal(vkattn_tensor_create(env->cpu, &td, &t[i]), VKATTN_OK);
            if (i < 5)
                assert_int_equal(vkattn_tensor_upload(t[i], data[i], VKATTN_DTYPE_F32),
                                 VKATTN_OK);
        }
        vkattn_mha_desc d = {.heads = 2, .causal = true};
        assert_int_equal(vkattn_mha(env->cpu, &d, t[0], t[1], t[2], t[3], t[4], t[5]), VKATTN_OK);
        float want[35];
        assert_int_equal(vkattn_tensor_download(t[5], want, VKATTN_DTYPE_F32), VKATTN_OK);
        const int64_t ys[2] = {7, 5};
        expect_npy("y.npy", want, 2, ys, 1e-5);
        for (int i = 0; i < 6; i++)
            vkattn_tensor_destroy(t[i]);
    }
    free(x);
    free(w_qkv);
    free(b_qkv);
    free(w_out);
    free(b_out);
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
    float *data = random_array(&r, 256);
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

    static const bad_run runs[] = {
        {"attention -q bq.npy -k bk.npy -v bk.npy", 2, "-o are required"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --frobnicate", 2, "unknown option --frobnicate"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --path sideways", 2, "--path sideways"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --scale -1", 2, "--scale -1"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --scale", 2, "--scale needs a value"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --kv-len 3,4", 2, "--kv-len has more"},
        {"frobnicate", 2, "unknown command"},
        {"attention -q bq.npy -k bk12.npy -v bk12.npy -o out.npy", 1, "K has head size 12 but Q has 16"},
        {"attention -q bq.npy -k bk3.npy -v bk3.npy -o out.npy", 1, "Q is 2-D but K is 3-D"},
        {"attention -q missing.npy -k bk.npy -v bk.npy -o out.npy", 1, "missing.npy (Q): cannot open"},
        {"attention -q bq.npy -k trunc.npy -v bk.npy -o out.npy", 1, "trunc.npy (K): truncated"},
        {"attention -q bq.npy -k bk.npy -v text.npy -o out.npy", 1, "text.npy (V): not a .npy file"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --device 99", 1, "cannot open device 99"},
        {"mha -x bq.npy --w-qkv bk12.npy --w-out bk.npy --heads 2 -o out.npy", 1, "W_qkv is 6x12"},
        {"mha -x bq.npy --w-qkv bk.npy --w-out bk.npy -o out.npy", 2, "--heads"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --dtype f8", 2,
         "--dtype f8: expected f32, f16 or bf16"},
        {"attention -q bq.npy -k bk.npy -v bk.npy -o out.npy --dtype", 2, "--dtype needs a value"},
        {"mha -x bq.npy --w-qkv bk.npy --w-out bk.npy --heads 2 -o out.npy --dtype i32", 2,
         "--dtype i32: expected f32, f16 or bf16"},
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attention_runs),
        cmocka_unit_test(test_attention_dtype),
        cmocka_unit_test(test_mha_run),
        cmocka_unit_test(test_bad_runs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
