/* Randomized robustness of the public API: vkattn_attention (with
 * vkattn_attention_choose), vkattn_matmul, vkattn_softmax,
 * vkattn_head_transpose, vkattn_mha (with vkattn_mha_choose), vkattn_tensor_create
 * and the transfers, called with random arguments on the GPU context and on the CPU context
 * alike. Most calls are made invalid in exactly one way (a wrong rank, a
 * dimension off by one, a wrong dtype, a bad enum or scalar, sequence tables
 * that decrease or run past their tensor, block tables pointing outside the
 * cache, an output aliasing an input, NULL where a tensor is required, a
 * tensor of the other context); the rest are valid. Every call must:
 *  - return OK or an error status (never crash), with a message on error;
 *  - return what vkattn.h says for the one thing made invalid (OK if none);
 *  - return the same status on both contexts: the argument checks are shared
 *    (the one exception: a kernel variant or path forced where this device
 *    cannot run it is UNSUPPORTED on the GPU, while the CPU backend has none);
 *  - leave its output as it was when it fails (a sentinel, bit for bit);
 *  - agree with the CPU reference when it succeeds;
 *  - raise no validation-layer message.
 * Afterwards the context still computes known results, and every tensor has
 * been destroyed (the validation layer reports leaked Vulkan objects when the
 * device is destroyed, which fails the test in test_env_destroy).
 *
 * Deterministic: call i draws from its own generator seeded with (seed, i).
 * VKATTN_FUZZ_SEED and VKATTN_FUZZ_CALLS change the seed and the number of
 * calls for longer runs, VKATTN_FUZZ_ONLY=i runs call i alone (to reproduce
 * a finding), VKATTN_FUZZ_VERBOSE=1 prints every call.
 *
 * Findings are collected rather than fatal at once, so that one run reports
 * every kind of failure (the first few of each kind in full, with the call's
 * exact arguments); the test fails at the end if there was any. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "api_fuzz.h"

#include <time.h>

#define DEFAULT_SEED 0x5eedf022u
/* On lavapipe (2 cores): about 15 s with the pipeline cache warm, 45 s with
 * it empty, 50 s in the sanitizer build. Invalid calls are nearly free; the
 * valid ones compile their kernels, and set the time (the report printed at
 * the end has the split by operation). */
#define DEFAULT_CALLS 1000

/* ------------------------------------------------------------- the run -- */

typedef struct op_entry {
    const char *name;
    void (*fuzz)(fuzz *f);
    int weight;
} op_entry;

static const op_entry ops[] = {
    {"attention", fuzz_attention, 40},
    {"matmul", fuzz_matmul, 15},
    {"softmax", fuzz_softmax, 12},
    {"head_transpose", fuzz_head_transpose, 8},
    {"mha", fuzz_mha, 9},
    {"tensor_create", fuzz_create, 8},
    {"transfer", fuzz_transfer, 8},
};

static void fuzz_one(fuzz *f, int index)
{
    /* Each call its own stream: call i is the same whatever ran before it. */
    f->r.state = f->seed * 0x9e3779b97f4a7c15ull + (uint64_t)index * 0xbf58476d1ce4e5b9ull;
    rng_next(&f->r);
    f->call = index;
    f->mutation[0] = '\0';
    f->what[0] = '\0';
    f->what_len = 0;
    f->expect = EXPECT_OK;
    f->forced = false;
    int weights[COUNT(ops)];
    for (int i = 0; i < COUNT(ops); i++)
        weights[i] = ops[i].weight;
    int op = pick_weighted(&f->r, weights, COUNT(ops));
    f->op = ops[op].name;
    f->per_op[op]++;
    int validation_before = f->env->gpu_log.validation_messages;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ops[op].fuzz(f);
    finish_call(f, validation_before);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    f->op_seconds[op] += seconds;
    if (f->verbose)
        fprintf(stderr, "   (%.3f s)\n", seconds);
}

static long env_long(const char *name, long fallback)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 0) : fallback;
}

/* After everything: ones(3x5) @ ones(5x4) is 5 everywhere, and attention over
 * a constant V gives that constant, on both contexts. */
static void expect_still_usable(test_env *env)
{
    for (int side = 0; side < 2; side++) {
        vkattn_context *ctx = side == GPU ? env->gpu : env->cpu;
        vkattn_tensor *a, *b, *c, *q, *k, *v, *o;
        vkattn_tensor_desc da = {.ndim = 2, .shape = {3, 5}}, db = {.ndim = 2, .shape = {5, 4}},
                           dc = {.ndim = 2, .shape = {3, 4}};
        vkattn_tensor_desc dq = {.ndim = 4, .shape = {1, 2, 3, 8}},
                           dk = {.ndim = 4, .shape = {1, 1, 6, 8}};
        assert_int_equal(vkattn_tensor_create(ctx, &da, &a), VKATTN_OK);
        assert_int_equal(vkattn_tensor_create(ctx, &db, &b), VKATTN_OK);
        assert_int_equal(vkattn_tensor_create(ctx, &dc, &c), VKATTN_OK);
        assert_int_equal(vkattn_tensor_create(ctx, &dq, &q), VKATTN_OK);
        assert_int_equal(vkattn_tensor_create(ctx, &dk, &k), VKATTN_OK);
        assert_int_equal(vkattn_tensor_create(ctx, &dk, &v), VKATTN_OK);
        assert_int_equal(vkattn_tensor_create(ctx, &dq, &o), VKATTN_OK);
        float data[48], out[48];
        for (int i = 0; i < 48; i++)
            data[i] = 1.0f;
        assert_int_equal(vkattn_tensor_upload(a, data, F32), VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(b, data, F32), VKATTN_OK);
        assert_int_equal(vkattn_matmul(ctx, NULL, a, b, NULL, c), VKATTN_OK);
        assert_int_equal(vkattn_tensor_download(c, out, F32), VKATTN_OK);
        for (int i = 0; i < 12; i++)
            assert_true(out[i] == 5.0f);
        for (int i = 0; i < 48; i++)
            data[i] = 0.1f * (float)(i % 7);
        assert_int_equal(vkattn_tensor_upload(q, data, F32), VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(k, data, F32), VKATTN_OK);
        for (int i = 0; i < 48; i++)
            data[i] = 2.5f;
        assert_int_equal(vkattn_tensor_upload(v, data, F32), VKATTN_OK);
        vkattn_attention_desc d = {.causal = true};
        assert_int_equal(vkattn_attention(ctx, &d, q, k, v, o), VKATTN_OK);
        assert_int_equal(vkattn_tensor_download(o, out, F32), VKATTN_OK);
        for (int i = 0; i < 48; i++)
            if (fabsf(out[i] - 2.5f) > 1e-5f)
                fail_msg("%s: attention over V = 2.5 gave %g at %d", side ? "CPU" : "GPU",
                         (double)out[i], i);
        vkattn_tensor *all[] = {a, b, c, q, k, v, o};
        for (int i = 0; i < 7; i++)
            vkattn_tensor_destroy(all[i]);
    }
}

static void test_api_fuzz(void **state)
{
    fuzz *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->env = *state;
    f->seed = (uint64_t)env_long("VKATTN_FUZZ_SEED", DEFAULT_SEED);
    f->verbose = env_long("VKATTN_FUZZ_VERBOSE", 0) != 0;
    long calls = env_long("VKATTN_FUZZ_CALLS", DEFAULT_CALLS);
    long only = env_long("VKATTN_FUZZ_ONLY", -1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = only >= 0 ? only : 0; i < (only >= 0 ? only + 1 : calls); i++)
        fuzz_one(f, (int)i);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);

    print_message("seed %#llx: %ld calls in %.1f s: %d ok on both, %d failing, %d refused by "
                  "the device (forced variants)\n", (unsigned long long)f->seed,
                  only >= 0 ? 1 : calls, seconds, f->ok_calls, f->error_calls, f->refusals);
    for (int i = 0; i < COUNT(ops); i++)
        print_message("  %-15s %4d calls %6.1f s\n", ops[i].name, f->per_op[i], f->op_seconds[i]);
    for (int s = 0; s <= VKATTN_ERROR_IO; s++)
        if (f->status_count[s])
            print_message("  %-40s %d\n", vkattn_status_string((vkattn_status)s), f->status_count[s]);
    for (int k = 0; k < f->nkinds; k++)
        print_message("  finding x%-4d %s\n", f->kind_count[k], f->kinds[k]);

    expect_still_usable(f->env);
    int findings = f->findings;
    free(f);
    if (findings)
        fail_msg("%d finding(s), listed above", findings);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_fuzz),
    };
    return test_run_group(tests, test_env_setup, test_env_teardown);
}
