/* The persistent pipeline cache: written where asked, reused by the next
 * context, and a corrupt, truncated or foreign file is ignored with a warning
 * while results stay right. Disabled, nothing is written. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include "test_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The one cache file in `dir` (its path into `path`), or false. */
static bool cache_file(const char *dir, char *path, size_t size)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool found = false;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".cache")) {
            snprintf(path, size, "%s/%s", dir, e->d_name);
            found = true;
        }
    closedir(d);
    return found;
}

/* A context using `dir`, one attention checked against the reference, destroyed. */
static void run_once(test_env *env, const char *dir, bool disable, test_log *log)
{
    vkattn_context_desc cd = {.backend = VKATTN_BACKEND_VULKAN,
                              .validation = VKATTN_VALIDATION_ON,
                              .log_fn = test_logger,
                              .log_user_data = log,
                              .pipeline_cache_dir = dir,
                              .pipeline_cache_disable = disable};
    test_env e = {.cpu = env->cpu};
    assert_int_equal(vkattn_context_create(&cd, &e.gpu), VKATTN_OK);
    rng r = {61};
    int64_t shape[4] = {1, 2, 17, 16};
    pair q = pair_random(&e, VKATTN_DTYPE_F32, 4, shape, &r, -1, 1);
    pair o = pair_output(&e, 4, shape);
    vkattn_attention_desc d = {.causal = true};
    assert_int_equal(vkattn_attention(e.gpu, &d, q.gpu, q.gpu, q.gpu, o.gpu), VKATTN_OK);
    assert_int_equal(vkattn_attention(e.cpu, &d, q.cpu, q.cpu, q.cpu, o.cpu), VKATTN_OK);
    expect_close("attention with a pipeline cache", &o, 2e-5, 0, NULL);
    pair_destroy(&q);
    pair_destroy(&o);
    vkattn_context_destroy(e.gpu);
    assert_int_equal(log->validation_messages, 0);
}

/* How a cache file is damaged: bytes written over it at an offset, the whole
 * file replaced by them, cut to `offset` bytes, or the bytes appended. */
typedef enum { OVERWRITE, REPLACE, CUT, APPEND } damage_kind;

static void damage_file(const char *path, damage_kind kind, long offset, const char *bytes,
                        size_t n)
{
    if (kind == CUT) {
        assert_int_equal(truncate(path, offset), 0);
        return;
    }
    FILE *f = fopen(path, kind == REPLACE ? "wb" : kind == APPEND ? "ab" : "r+b");
    assert_non_null(f);
    if (kind == OVERWRITE)
        assert_int_equal(fseek(f, offset, SEEK_SET), 0);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void test_pipeline_cache(void **state)
{
    test_env *env = *state;
    char dir[] = "/tmp/vkattn-cache-XXXXXX", path[512];
    assert_non_null(mkdtemp(dir));

    test_log log = {0};
    run_once(env, dir, true, &log);
    assert_false(cache_file(dir, path, sizeof path)); /* disabled: nothing written */

    run_once(env, dir, false, &log);
    assert_true(cache_file(dir, path, sizeof path));
    memset(&log, 0, sizeof log);
    run_once(env, dir, false, &log);
    assert_int_equal(log.warnings, 0); /* a valid file loads silently */

    /* Each damaged file is ignored with a warning naming the reason. The
     * header: magic (8 bytes), format, version, vendor, device, driver,
     * reserved (4 each), two UUIDs (16 each), the data's size and checksum
     * (8 each, little-endian here): 80 bytes, the driver's data after it. */
    struct {
        damage_kind kind;
        long offset;
        const char *bytes;
        const char *reason;
    } damage[] = {
        {OVERWRITE, 90, "garbage", "checksum"},               /* data corrupted */
        {OVERWRITE, 20, "\x01\x02", "another device"},        /* the header's device id */
        {OVERWRITE, 8, "\x02", "another vkattn version"},     /* the format */
        {OVERWRITE, 68, "\x01", "absurd"},                    /* a data size past 256 MiB */
        {CUT, 100, "", "truncated"},                          /* 20 bytes of data left */
        {APPEND, 0, "x", "longer than its header says"},
        {REPLACE, 0, "VKATTNPC", "shorter than its header"},
        {REPLACE, 0, "NOTOURS!xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
         "not a vkattn pipeline cache"},
    };
    for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
        run_once(env, dir, false, &log); /* a good file again */
        damage_file(path, damage[i].kind, damage[i].offset, damage[i].bytes,
                    strlen(damage[i].bytes));
        memset(&log, 0, sizeof log);
        run_once(env, dir, false, &log);
        if (log.warnings != 1 || !strstr(log.last_warning, damage[i].reason))
            fail_msg("damage %zu: %d warnings, last \"%s\", expected \"%s\"", i, log.warnings,
                     log.last_warning, damage[i].reason);
    }
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_pipeline_cache)};
    return test_run_group(tests, test_env_setup, test_env_teardown);
}
