/* Shared by the tests: contexts with validation, host tensors, random data, and
 * comparison against the CPU reference. Uses only the public API. */
#ifndef VKATTN_TEST_UTIL_H
#define VKATTN_TEST_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "vkattn.h"

/* ctest's SKIP_RETURN_CODE: no Vulkan device on this machine. */
#define TEST_SKIP_CODE 77

typedef struct test_log {
    int validation_messages;
    int warnings;
    int pipeline_statistics;  /* INFO lines "pipeline statistics: ..." (profiling) */
    char coopmat_layout[1024]; /* the INFO line "coopmat layout...: ..." (VKATTN_COOPMAT_LAYOUT=1) */
    char coopmat_layout_workgroup[1024]; /* and "coopmat layout, workgroup scope...: ..." */
    char coopmat_peak[512];    /* the INFO line "coopmat peak...: ..." (VKATTN_COOPMAT_PEAK=1) */
    char coopmat_peak_workgroup[1024]; /* and "coopmat peak, workgroup scope...: ..." */
    char spirv16[256];         /* the INFO line "SPIR-V 1.6 forms ...: ..." (device.c) */
    char spirv16_fallback[512]; /* the last warning "...: its SPIR-V 1.6 form refused ..." */
    char last[1024];
    char last_warning[1024];
} test_log;

typedef struct test_env {
    vkattn_context *gpu;  /* Vulkan, validation on */
    vkattn_context *cpu;  /* the CPU reference */
    test_log gpu_log, cpu_log;
} test_env;

void test_logger(void *user, vkattn_log_level level, vkattn_log_source source, const char *msg);

/* Creates env->gpu (validation on; fails the test if the layer is missing unless
 * VKATTN_TEST_ALLOW_NO_VALIDATION=1) and env->cpu. Exits with TEST_SKIP_CODE when
 * no Vulkan device exists. */
test_env *test_env_create(void);
/* test_env_create under the tuning `tuning` (VKATTN_TUNE while the contexts
 * are created; "" for none). */
test_env *test_env_tuned(const char *tuning);
/* Destroys both contexts and asserts no validation message was logged. */
void test_env_destroy(test_env *env);
/* cmocka group setup and teardown around the two: *state is the test_env. */
int test_env_setup(void **state);
int test_env_teardown(void **state);
/* The GPU context's device info; false, after saying the test is skipped, where
 * the device lacks shaderFloat16 (the f16 kernels' tests). */
bool test_has_float16(test_env *env, vkattn_device_info *info);
/* Whether the GPU context runs the workgroup-scope coopmat kernel (its
 * workgroup-scope matrices enabled: VKATTN_COOPMAT_WORKGROUP=1 on a device
 * that has them): a small call forced onto it, whose only allowed refusal is
 * the missing matrices. */
bool test_workgroup_scope(test_env *env);
/* Whether the emulated coopmat kernel refuses its softmax in registers (a
 * context tuned coopmat_emulated.softmax=2), as it must where no layout gives
 * a lane 1 to 4 rows of the accumulators (16x16 on lavapipe's 4-lane run: 8
 * rows a lane at the least; the test prints that it is skipped). Asked only
 * with fewer lanes than lavapipe's usual 8; there, and on every GPU, the cases
 * must run. A refusal must be UNSUPPORTED and name the accumulators and the
 * lanes; a call that runs is checked by the caller's cases. */
bool test_register_softmax_refused(test_env *env);

/* cmocka_run_group_tests over the tests that VKATTN_TEST_FILTER and
 * VKATTN_TEST_SKIP choose, each a comma-separated list of cmocka-style patterns
 * ('*', '?'): FILTER runs only the tests matching one of its patterns (to work
 * on one kernel), SKIP leaves out those matching one of its (ctest splits a
 * long binary into parts that way, so that a machine with cores to spare runs
 * them at once and no part comes near its time limit). Choosing no test fails. */
#define test_run_group(tests, setup, teardown) \
    test_run_chosen(#tests, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown)
int test_run_chosen(const char *group, const struct CMUnitTest *tests, size_t count,
                    CMFixtureFunction setup, CMFixtureFunction teardown);

/* How a test runs a case on the GPU: the path, the fused kernel forced (AUTO:
 * the library's choice) and the key splits (0: the library's choice). */
typedef struct test_path {
    vkattn_attention_path path;
    vkattn_fused_variant variant;
    uint32_t kv_splits;
} test_path;

/* Whether every sweep runs each of its cases in every way it names: on a GPU,
 * whose driver compiles a pipeline in milliseconds, or where
 * VKATTN_TEST_EXHAUSTIVE=1 (0: never). On a CPU device (lavapipe) the sweeps
 * take turns where noted: each new pipeline costs a second or more of LLVM
 * there, nearly all of the suite's time, and CI has two cores. */
bool test_exhaustive(void);

/* Key splits in turns. A fused kernel forced with whole rows of keys
 * (kv_splits 1) and with split keys (more than 1: another pipeline, and a
 * combine pass after it) is two pipelines for every shape and variant. Where
 * a case's paths hold a kernel both ways, the case runs it one way and the
 * next case the other (call test_next_case() once a case), each kernel out
 * of step with the others: over a sweep each way meets about half of the
 * shapes, and every tuning or tiling a sweep repeats meets both. Paths with
 * kv_splits 0, forced one way only, or not forced always run; every path
 * runs where test_exhaustive(). */
void test_next_case(void);
bool test_path_runs(const test_path *paths, int npaths, int i);

/* Cases in turns over a sweep's repeats. A sweep that runs its cases again
 * under other tilings, tunings or matrix shapes (repeat `repeat` of `repeats`
 * of the same list) runs case `i` in the repeat whose turn it is,
 * i % repeats == repeat % repeats: each case in one repeat, each repeat on a
 * share of the awkward shapes (the lists mix them so that every share holds
 * several). Every case in every repeat where test_exhaustive(). */
bool test_case_turn(size_t i, unsigned repeat, unsigned repeats);

/* Deterministic random numbers. */
typedef struct rng { uint64_t state; } rng;
uint64_t rng_next(rng *r);
float rng_uniform(rng *r, float lo, float hi);
int rng_int(rng *r, int lo, int hi); /* inclusive */
/* n values uniform in [lo, hi] in a new array (free() it); fails the test when
 * out of memory. */
float *random_floats(rng *r, size_t n, float lo, float hi);
/* The element count of a shape. */
size_t shape_count(int ndim, const int64_t *shape);

/* A host array and the same data in a GPU and a CPU tensor. */
typedef struct pair {
    vkattn_tensor *gpu, *cpu;
    float *host;            /* f32 view of the data (for F16 and BF16, already rounded) */
    size_t count;
} pair;

/* Creates a pair with random values in [lo, hi] (uploaded as f32, so F16 and BF16
 * tensors round them; host[] then holds the rounded values, which the GPU and
 * the CPU reference both read). */
pair pair_random(test_env *env, vkattn_dtype dtype, int ndim, const int64_t *shape, rng *r,
                 float lo, float hi);
/* A pair of uninitialised f32 outputs, filled with a sentinel on the GPU. */
pair pair_output(test_env *env, int ndim, const int64_t *shape);
void pair_destroy(pair *p);

/* An f32 tensor of `count` elements gives back exactly what is uploaded to it
 * (values 0 to 1008 in turn). */
void expect_f32_round_trip(vkattn_tensor *t, size_t count);

/* Downloads both sides of `out` and compares: NaN and Inf at the same places,
 * then |gpu - ref| <= atol + rtol * |ref| (scale[i] replaces |ref| when given).
 * Fails the test with the worst element and the case name. Returns max error. */
double expect_close(const char *case_name, const pair *out, double atol, double rtol,
                    const float *scale);

#endif
