#define _POSIX_C_SOURCE 200809L /* setenv */
#include "test_util.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether `name` matches one of the comma-separated patterns of `list`
 * (cmocka's wildcards: '*' any run of characters, '?' one). */
static bool name_in_list(const char *name, const char *list)
{
    while (*list) {
        size_t length = strcspn(list, ",");
        char pattern[256];
        if (length > 0 && length < sizeof pattern) {
            memcpy(pattern, list, length);
            pattern[length] = '\0';
            if (fnmatch(pattern, name, 0) == 0)
                return true;
        }
        list += length;
        if (*list == ',')
            list++;
    }
    return false;
}

int test_run_chosen(const char *group, const struct CMUnitTest *tests, size_t count,
                    CMFixtureFunction setup, CMFixtureFunction teardown)
{
    const char *only = getenv("VKATTN_TEST_FILTER");
    const char *skip = getenv("VKATTN_TEST_SKIP");
    struct CMUnitTest *chosen = calloc(count, sizeof *chosen);
    if (!chosen)
        return 1;
    size_t kept = 0;
    for (size_t i = 0; i < count; i++) {
        if (only && *only && !name_in_list(tests[i].name, only))
            continue;
        if (skip && *skip && name_in_list(tests[i].name, skip))
            continue;
        chosen[kept++] = tests[i];
    }
    /* A choice of no test is a mistake (a renamed test, a typo in
     * CMakeLists.txt), not a pass. */
    int failed = 1;
    if (kept == 0)
        fprintf(stderr, "%s: VKATTN_TEST_FILTER=%s and VKATTN_TEST_SKIP=%s leave none of its "
                "%zu tests\n", group, only ? only : "", skip ? skip : "", count);
    else
        failed = _cmocka_run_group_tests(group, chosen, kept, setup, teardown);
    free(chosen);
    return failed;
}

void test_logger(void *user, vkattn_log_level level, vkattn_log_source source, const char *msg)
{
    test_log *log = user;
    if (source == VKATTN_LOG_SOURCE_VALIDATION) {
        log->validation_messages++;
        fprintf(stderr, "VALIDATION: %s\n", msg);
    } else if (level >= VKATTN_LOG_WARNING) {
        log->warnings++;
        snprintf(log->last_warning, sizeof log->last_warning, "%s", msg);
        if (strstr(msg, "its SPIR-V 1.6 form refused"))
            snprintf(log->spirv16_fallback, sizeof log->spirv16_fallback, "%s", msg);
    } else if (strncmp(msg, "pipeline statistics", 19) == 0) {
        log->pipeline_statistics++;
        fprintf(stderr, "%s\n", msg); /* for the record, on GPUs whose drivers have them */
    } else if (strncmp(msg, "coopmat layout, workgroup scope", 31) == 0) {
        snprintf(log->coopmat_layout_workgroup, sizeof log->coopmat_layout_workgroup, "%s", msg);
        fprintf(stderr, "%s\n", msg);
    } else if (strncmp(msg, "coopmat layout", 14) == 0) {
        snprintf(log->coopmat_layout, sizeof log->coopmat_layout, "%s", msg);
        fprintf(stderr, "%s\n", msg); /* for the record: each GPU's own */
    } else if (strncmp(msg, "coopmat peak, workgroup scope", 29) == 0) {
        snprintf(log->coopmat_peak_workgroup, sizeof log->coopmat_peak_workgroup, "%s", msg);
        fprintf(stderr, "%s\n", msg);
    } else if (strncmp(msg, "SPIR-V 1.6 forms", 16) == 0) {
        snprintf(log->spirv16, sizeof log->spirv16, "%s", msg);
    } else if (strncmp(msg, "coopmat peak", 12) == 0) {
        snprintf(log->coopmat_peak, sizeof log->coopmat_peak, "%s", msg);
        fprintf(stderr, "%s\n", msg);
    }
    snprintf(log->last, sizeof log->last, "%s", msg);
}

/* The type of the last GPU context's device: 1 a CPU (lavapipe), 0 a GPU, -1
 * none yet. */
static int device_is_cpu = -1;

test_env *test_env_create(void)
{
    test_env *env = calloc(1, sizeof *env);
    assert_non_null(env);
    /* Always validated; VKATTN_VALIDATION=gpu adds GPU-assisted validation.
     * VKATTN_VALIDATION=off with VKATTN_TEST_ALLOW_NO_VALIDATION=1 only for
     * what the layer at hand predates (the GPU check's KHR cooperative-matrix
     * run: Debian 12's layer knows neither its structures nor its SPIR-V). */
    const char *level = getenv("VKATTN_VALIDATION");
    bool gpu_assisted = level && strcmp(level, "gpu") == 0;
    bool off = level && strcmp(level, "off") == 0;
    vkattn_context_desc gd = {
        .backend = VKATTN_BACKEND_VULKAN,
        .validation = gpu_assisted ? VKATTN_VALIDATION_GPU_ASSISTED
                      : off        ? VKATTN_VALIDATION_OFF
                                   : VKATTN_VALIDATION_ON,
        .log_fn = test_logger,
        .log_user_data = &env->gpu_log,
    };
    vkattn_status s = vkattn_context_create(&gd, &env->gpu);
    if (s == VKATTN_ERROR_NO_DEVICE) {
        fprintf(stderr, "no Vulkan device: skipping\n");
        exit(TEST_SKIP_CODE);
    }
    assert_int_equal(s, VKATTN_OK);
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(env->gpu, &info), VKATTN_OK);
    device_is_cpu = info.type == VKATTN_DEVICE_TYPE_CPU;
    const char *allow = getenv("VKATTN_TEST_ALLOW_NO_VALIDATION");
    if (!info.validation_enabled && !(allow && strcmp(allow, "1") == 0))
        fail_msg("the Khronos validation layer is not active (install vulkan-validationlayers, "
                 "or set VKATTN_TEST_ALLOW_NO_VALIDATION=1)");
    fprintf(stderr, "device: %s (%s), subgroup %u, validation %s, tensors %s\n", info.name,
            info.driver_info, info.subgroup_size,
            !info.validation_enabled ? "off" : gpu_assisted ? "on, GPU-assisted" : "on",
            info.host_visible_device_memory ? "mapped" : "staged");
    /* Runs meant for another subgroup size (lavapipe's LP_NATIVE_VECTOR_WIDTH)
     * fail rather than pass at the usual one where the driver ignored the ask;
     * on a GPU, where the width means nothing, they would only repeat other
     * runs: skipped. */
    const char *subgroup = getenv("VKATTN_TEST_SUBGROUP_SIZE");
    if (subgroup && *subgroup && info.type != VKATTN_DEVICE_TYPE_CPU) {
        fprintf(stderr, "skipped: VKATTN_TEST_SUBGROUP_SIZE sets lavapipe's width, and %s is "
                "not a CPU device\n", info.name);
        vkattn_context_destroy(env->gpu);
        exit(TEST_SKIP_CODE);
    }
    if (subgroup && *subgroup && info.subgroup_size != (uint32_t)strtoul(subgroup, NULL, 10))
        fail_msg("VKATTN_TEST_SUBGROUP_SIZE=%s but %s runs subgroups of %u", subgroup, info.name,
                 info.subgroup_size);
    vkattn_context_desc cd = {.backend = VKATTN_BACKEND_CPU, .log_fn = test_logger,
                              .log_user_data = &env->cpu_log};
    assert_int_equal(vkattn_context_create(&cd, &env->cpu), VKATTN_OK);
    return env;
}

bool test_has_float16(test_env *env, vkattn_device_info *info)
{
    assert_int_equal(vkattn_context_info(env->gpu, info), VKATTN_OK);
    if (!info->float16_arithmetic)
        print_message("skipped: %s has no shaderFloat16\n", info->name);
    return info->float16_arithmetic;
}

test_env *test_env_tuned(const char *tuning)
{
    assert_int_equal(setenv("VKATTN_TUNE", tuning, 1), 0);
    test_env *env = test_env_create();
    assert_int_equal(unsetenv("VKATTN_TUNE"), 0);
    return env;
}

bool test_workgroup_scope(test_env *env)
{
    vkattn_tensor_desc desc = {.dtype = VKATTN_DTYPE_F16, .ndim = 4, .shape = {1, 1, 16, 16}};
    vkattn_tensor *t = NULL;
    assert_int_equal(vkattn_tensor_create(env->gpu, &desc, &t), VKATTN_OK);
    desc.dtype = VKATTN_DTYPE_F32;
    vkattn_tensor *o = NULL;
    assert_int_equal(vkattn_tensor_create(env->gpu, &desc, &o), VKATTN_OK);
    vkattn_attention_desc d = {.path = VKATTN_PATH_FUSED,
                               .fused_variant = VKATTN_FUSED_COOPMAT_WORKGROUP};
    vkattn_status s = vkattn_attention(env->gpu, &d, t, t, t, o);
    bool missing = s == VKATTN_ERROR_UNSUPPORTED &&
                   strstr(vkattn_last_error(env->gpu), "needs workgroup-scope matrices");
    if (s != VKATTN_OK && !missing)
        fail_msg("the workgroup-scope coopmat kernel: %s: %s", vkattn_status_string(s),
                 vkattn_last_error(env->gpu));
    vkattn_tensor_destroy(o);
    vkattn_tensor_destroy(t);
    return s == VKATTN_OK;
}

bool test_register_softmax_refused(test_env *env)
{
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(env->gpu, &info), VKATTN_OK);
    if (info.subgroup_size >= 8)
        return false;
    int64_t shape[4] = {1, 1, 4, 8};
    rng r = {71};
    pair q = pair_random(env, VKATTN_DTYPE_F16, 4, shape, &r, -1.f, 1.f);
    pair o = pair_output(env, 4, shape);
    vkattn_attention_desc d = {.path = VKATTN_PATH_FUSED,
                               .fused_variant = VKATTN_FUSED_COOPMAT_EMULATED};
    vkattn_status s = vkattn_attention(env->gpu, &d, q.gpu, q.gpu, q.gpu, o.gpu);
    char lanes[48];
    snprintf(lanes, sizeof lanes, "accumulators on %u lanes: no cluster", info.subgroup_size);
    bool refused = s == VKATTN_ERROR_UNSUPPORTED && strstr(vkattn_last_error(env->gpu), lanes);
    if (s != VKATTN_OK && !refused)
        fail_msg("the softmax in registers on %u lanes: %s: %s", info.subgroup_size,
                 vkattn_status_string(s), vkattn_last_error(env->gpu));
    pair_destroy(&q);
    pair_destroy(&o);
    if (refused)
        print_message("not run on %u lanes (refused, as it must be): the softmax in registers\n",
                      info.subgroup_size);
    return refused;
}

void test_env_destroy(test_env *env)
{
    if (!env)
        return;
    vkattn_context_destroy(env->gpu);
    vkattn_context_destroy(env->cpu);
    /* Destroying the device reports leaked Vulkan objects through validation. */
    int messages = env->gpu_log.validation_messages;
    free(env);
    if (messages) {
        /* cmocka (1.1) prints a failed group teardown but leaves it out of the
         * exit status, so a failed assertion here would pass the test. */
        fprintf(stderr, "FAILED: %d validation message(s) (above)\n", messages);
        exit(1);
    }
}

int test_env_setup(void **state)
{
    *state = test_env_create();
    return 0;
}

int test_env_teardown(void **state)
{
    test_env_destroy(*state);
    return 0;
}

bool test_exhaustive(void)
{
    const char *e = getenv("VKATTN_TEST_EXHAUSTIVE");
    if (e && *e)
        return strcmp(e, "1") == 0;
    return device_is_cpu == 0;
}

/* The turn, and whether the case before took one: a case that held no
 * kernel both ways (a sweep's single-path runs between its pairs) leaves the
 * turn as it was, so that the pairs keep alternating. */
static unsigned case_turn;
static bool turn_taken;

void test_next_case(void)
{
    case_turn += turn_taken;
    turn_taken = false;
}

bool test_path_runs(const test_path *paths, int npaths, int i)
{
    const test_path *p = &paths[i];
    if (p->path != VKATTN_PATH_FUSED || p->kv_splits == 0 || test_exhaustive())
        return true;
    bool split = p->kv_splits > 1;
    for (int j = 0; j < npaths; j++)
        if (paths[j].path == p->path && paths[j].variant == p->variant &&
            paths[j].kv_splits != 0 && (paths[j].kv_splits > 1) != split) {
            turn_taken = true;
            return (case_turn + (unsigned)p->variant) % 2 == (unsigned)split;
        }
    return true;
}

bool test_case_turn(size_t i, unsigned repeat, unsigned repeats)
{
    return test_exhaustive() || repeats < 2 || i % repeats == repeat % repeats;
}

uint64_t rng_next(rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

float rng_uniform(rng *r, float lo, float hi)
{
    return lo + (hi - lo) * (float)((rng_next(r) >> 40) * (1.0 / 16777216.0));
}

int rng_int(rng *r, int lo, int hi) { return lo + (int)(rng_next(r) % (uint64_t)(hi - lo + 1)); }

size_t shape_count(int ndim, const int64_t *shape)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= (size_t)shape[i];
    return n;
}

float *random_floats(rng *r, size_t n, float lo, float hi)
{
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    for (size_t i = 0; i < n; i++)
        x[i] = rng_uniform(r, lo, hi);
    return x;
}

static vkattn_tensor *make(vkattn_context *ctx, vkattn_dtype dtype, int ndim, const int64_t *shape)
{
    vkattn_tensor_desc d = {.dtype = dtype, .ndim = ndim};
    for (int i = 0; i < ndim; i++)
        d.shape[i] = shape[i];
    vkattn_tensor *t = NULL;
    vkattn_status s = vkattn_tensor_create(ctx, &d, &t);
    if (s != VKATTN_OK)
        fail_msg("tensor_create: %s: %s", vkattn_status_string(s), vkattn_last_error(ctx));
    return t;
}

pair pair_random(test_env *env, vkattn_dtype dtype, int ndim, const int64_t *shape, rng *r,
                 float lo, float hi)
{
    pair p = {.count = shape_count(ndim, shape)};
    p.host = malloc(p.count * sizeof *p.host);
    assert_non_null(p.host);
    for (size_t i = 0; i < p.count; i++)
        p.host[i] = rng_uniform(r, lo, hi);
    p.gpu = make(env->gpu, dtype, ndim, shape);
    p.cpu = make(env->cpu, dtype, ndim, shape);
    assert_int_equal(vkattn_tensor_upload(p.gpu, p.host, VKATTN_DTYPE_F32), VKATTN_OK);
    assert_int_equal(vkattn_tensor_upload(p.cpu, p.host, VKATTN_DTYPE_F32), VKATTN_OK);
    if (dtype != VKATTN_DTYPE_F32) /* keep the values the tensors really hold */
        assert_int_equal(vkattn_tensor_download(p.cpu, p.host, VKATTN_DTYPE_F32), VKATTN_OK);
    return p;
}

pair pair_output(test_env *env, int ndim, const int64_t *shape)
{
    pair p = {.count = shape_count(ndim, shape)};
    p.host = malloc(p.count * sizeof *p.host);
    assert_non_null(p.host);
    /* A sentinel: an element the kernel forgets to write stays 12345 and fails. */
    for (size_t i = 0; i < p.count; i++)
        p.host[i] = 12345.0f;
    p.gpu = make(env->gpu, VKATTN_DTYPE_F32, ndim, shape);
    p.cpu = make(env->cpu, VKATTN_DTYPE_F32, ndim, shape);
    assert_int_equal(vkattn_tensor_upload(p.gpu, p.host, VKATTN_DTYPE_F32), VKATTN_OK);
    return p;
}

void pair_destroy(pair *p)
{
    vkattn_tensor_destroy(p->gpu);
    vkattn_tensor_destroy(p->cpu);
    free(p->host);
    memset(p, 0, sizeof *p);
}

void expect_f32_round_trip(vkattn_tensor *t, size_t count)
{
    float *data = malloc(count * sizeof *data), *back = malloc(count * sizeof *back);
    assert_non_null(data);
    assert_non_null(back);
    for (size_t j = 0; j < count; j++)
        data[j] = (float)(j % 1009);
    vkattn_status s = vkattn_tensor_upload(t, data, VKATTN_DTYPE_F32);
    if (s == VKATTN_OK)
        s = vkattn_tensor_download(t, back, VKATTN_DTYPE_F32);
    if (s != VKATTN_OK)
        fail_msg("a round trip of %zu floats: %s", count, vkattn_status_string(s));
    assert_memory_equal(back, data, count * sizeof *data);
    free(data);
    free(back);
}

double expect_close(const char *case_name, const pair *out, double atol, double rtol,
                    const float *scale)
{
    float *got = malloc(out->count * sizeof *got);
    float *want = malloc(out->count * sizeof *want);
    assert_non_null(got);
    assert_non_null(want);
    assert_int_equal(vkattn_tensor_download(out->gpu, got, VKATTN_DTYPE_F32), VKATTN_OK);
    assert_int_equal(vkattn_tensor_download(out->cpu, want, VKATTN_DTYPE_F32), VKATTN_OK);
    double worst = 0.0, worst_ratio = 0.0;
    size_t worst_at = 0;
    for (size_t i = 0; i < out->count; i++) {
        if (isnan(want[i]) != isnan(got[i]) || (isinf(want[i]) && want[i] != got[i]))
            fail_msg("%s: element %zu is %g, reference %g (NaN/Inf position differs)", case_name,
                     i, (double)got[i], (double)want[i]);
        if (isnan(want[i]) || isinf(want[i]))
            continue;
        double err = fabs((double)got[i] - (double)want[i]);
        double bound = atol + rtol * (scale ? (double)scale[i] : fabs((double)want[i]));
        if (!(err / bound <= worst_ratio)) { /* also catches a NaN error */
            worst_ratio = isnan(err) ? INFINITY : err / bound;
            worst_at = i;
        }
        if (err > worst)
            worst = err;
    }
    if (worst_ratio > 1.0)
        fail_msg("%s: element %zu is %.9g, reference %.9g (error %.3g over bound by %.3gx)",
                 case_name, worst_at, (double)got[worst_at], (double)want[worst_at],
                 fabs((double)got[worst_at] - (double)want[worst_at]), worst_ratio);
    free(got);
    free(want);
    return worst;
}
