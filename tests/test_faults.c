/* Failure injection: vkattn runs in an application's device through a
 * vkGetInstanceProcAddr that makes the N-th fallible Vulkan call fail
 * (fault_vulkan.c), for every N over a run of context creation, tensor
 * creation and transfers, attention on each path (rows, tiled with key splits,
 * unfused, with variants), the layer, a timer, and a recording into the
 * application's command buffer. Each time:
 *  - the failing call returns the matching status (OUT_OF_DEVICE_MEMORY for an
 *    allocation, DEVICE_LOST for a submission or wait, VULKAN for a map) with a
 *    message;
 *  - after an out-of-memory the same call succeeds when repeated, an output the
 *    failed call would have written still holds what it held, and the rest of
 *    the run gives bit-identical results to a run without faults;
 *  - after a device loss every later call says DEVICE_LOST;
 *  - once the context is destroyed, everything vkattn created through the
 *    wrapper has been destroyed, and the validation layer said nothing.
 * Then streams longer than vkattn's descriptor pools hold, on pools that keep
 * to their limit as a GPU driver's do (lavapipe's do not): the context's own
 * stream, a recording, and a failure where each grows its pools or runs the
 * stream to reset them. */
#include "fault_descriptor_pools.h"
#include "fault_vulkan.h"
#include "shift_chain.h"
#include "test_app.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define B 2
#define H 4
#define HKV 2
#define T 19
#define D 16
#define C 16 /* mha: X (1, T, C), heads of D / 2 */

typedef struct outputs {
    float o[6][B * H * T * D]; /* attention by each path, then the layer's Y */
} outputs;

/* One run of the scenario. */
typedef struct run {
    test_app *app;
    vkattn_context *ctx;
    vkattn_tensor *q, *k, *v, *o, *kv_len, *sinks, *x, *w_qkv, *w_out, *y;
    const outputs *want;        /* a run without faults: NULL while making it */
    outputs got;
    int results;                /* outputs compared so far */
    bool failed;                /* an injected failure was seen */
    bool lost;
    const char *failed_at, *failed_entry;
    vkattn_status failed_status;
} run;

static float host_data[B * H * T * D];
static const float sentinel_value = -7.0f;
static float sentinel[B * H * T * D];

static vkattn_status expected_status(VkResult r)
{
    switch (r) {
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return VKATTN_ERROR_OUT_OF_DEVICE_MEMORY;
    case VK_ERROR_OUT_OF_HOST_MEMORY: return VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    case VK_ERROR_DEVICE_LOST: return VKATTN_ERROR_DEVICE_LOST;
    default: return VKATTN_ERROR_VULKAN;
    }
}

/* After a call: OK, or the injected failure (checked), which may be retried
 * (true) unless the device is now lost. */
static bool failed_call(run *r, vkattn_status s, const char *what)
{
    if (s == VKATTN_OK)
        return false;
    VkResult injected;
    const char *entry;
    if (!fault_fired(&injected, &entry))
        fail_msg("%s: %s (\"%s\") with no fault injected", what, vkattn_status_string(s),
                 vkattn_last_error(r->ctx));
    if (r->lost) {
        if (s != VKATTN_ERROR_DEVICE_LOST)
            fail_msg("%s after the device was lost: %s (\"%s\"), expected DEVICE_LOST", what,
                     vkattn_status_string(s), vkattn_last_error(r->ctx));
        return true;
    }
    if (r->failed)
        fail_msg("%s: %s (\"%s\") after the one injected failure (%s) had been handled", what,
                 vkattn_status_string(s), vkattn_last_error(r->ctx), entry);
    vkattn_status want = expected_status(injected);
    /* A map failure is reported as VULKAN or as out of memory: both name it. */
    bool ok = s == want || (injected == VK_ERROR_MEMORY_MAP_FAILED &&
                            (s == VKATTN_ERROR_OUT_OF_DEVICE_MEMORY || s == VKATTN_ERROR_VULKAN));
    const char *msg = r->ctx ? vkattn_last_error(r->ctx) : "";
    if (!ok)
        fail_msg("%s: %s failed injected, vkattn said %s (\"%s\"), expected %s", what, entry,
                 vkattn_status_string(s), msg, vkattn_status_string(want));
    if (r->ctx && msg[0] == '\0')
        fail_msg("%s: %s with no message", what, vkattn_status_string(s));
    r->failed = true, r->failed_at = what, r->failed_status = s, r->failed_entry = entry;
    r->lost = s == VKATTN_ERROR_DEVICE_LOST;
    return true;
}

/* Runs a call; on an out-of-memory failure runs it again, which must succeed.
 * False once the device is lost (the run then stops). */
#define CALL(r, what, expr)                                                                    \
    do {                                                                                       \
        vkattn_status s_ = (expr);                                                             \
        if (failed_call(r, s_, what)) {                                                        \
            if ((r)->lost)                                                                     \
                return false;                                                                  \
            s_ = (expr);                                                                       \
            if (s_ != VKATTN_OK)                                                               \
                fail_msg("%s again after %s: %s (\"%s\")", what,                               \
                         vkattn_status_string((r)->failed_status), vkattn_status_string(s_),  \
                         vkattn_last_error((r)->ctx));                                         \
        }                                                                                      \
    } while (0)

static vkattn_tensor *make(run *r, vkattn_dtype dtype, int ndim, int64_t d0, int64_t d1,
                           int64_t d2, int64_t d3, bool *ok)
{
    vkattn_tensor_desc d = {.dtype = dtype, .ndim = ndim, .shape = {d0, d1, d2, d3}};
    vkattn_tensor *t = NULL;
    *ok = true;
    vkattn_status s = vkattn_tensor_create(r->ctx, &d, &t);
    if (failed_call(r, s, "vkattn_tensor_create")) {
        if (r->lost) {
            *ok = false;
            return NULL;
        }
        if (vkattn_tensor_create(r->ctx, &d, &t) != VKATTN_OK)
            fail_msg("tensor_create again: %s", vkattn_last_error(r->ctx));
    }
    return t;
}

/* Failures vkattn absorbs by design: a texel view it cannot create (the tensor
 * is then read through its storage binding, by other kernels whose results may
 * differ in the last bits), a command-pool reset after finished work (tried
 * again before the next recording), and memory that runs out, or cannot be
 * mapped, in one memory type where the buffer may go to another (discrete GPUs
 * rank several; lavapipe has one, so there the failure is reported). */
static bool absorbable(const char *entry, VkResult injected)
{
    return strcmp(entry, "vkCreateBufferView") == 0 || strcmp(entry, "vkResetCommandPool") == 0 ||
           (strcmp(entry, "vkAllocateMemory") == 0 &&
            (injected == VK_ERROR_OUT_OF_DEVICE_MEMORY || injected == VK_ERROR_OUT_OF_HOST_MEMORY)) ||
           (strcmp(entry, "vkMapMemory") == 0 && injected == VK_ERROR_MEMORY_MAP_FAILED);
}

/* Downloads an output and compares it with the run without faults (or keeps it). */
static bool check_output(run *r, vkattn_tensor *t, size_t count, const char *what)
{
    float *slot = r->got.o[r->results];
    CALL(r, what, vkattn_tensor_download(t, slot, VKATTN_DTYPE_F32));
    VkResult injected;
    const char *entry;
    bool absorbed = fault_fired(&injected, &entry) && !r->failed;
    if (absorbed && !absorbable(entry, injected))
        fail_msg("%s: the injected failure of %s was not reported", what, entry);
    const float *want = r->want ? r->want->o[r->results] : NULL;
    for (size_t i = 0; want && i < count; i++) {
        bool same = absorbed ? fabsf(slot[i] - want[i]) <= 1e-5f
                             : memcmp(&slot[i], &want[i], sizeof *slot) == 0;
        if (!same)
            fail_msg("%s: element %zu is %g, %g without faults (after %s in %s, %s)", what, i,
                     (double)slot[i], (double)want[i], vkattn_status_string(r->failed_status),
                     absorbed ? entry : r->failed_at ? r->failed_at : "-",
                     r->failed_entry ? r->failed_entry : "");
    }
    r->results++;
    return true;
}

/* Fails the test unless `out` still holds the sentinel. */
static void expect_sentinel(run *r, vkattn_tensor *out, size_t count, const char *what)
{
    float *held = malloc(count * sizeof *held);
    assert_non_null(held);
    assert_int_equal(vkattn_tensor_download(out, held, VKATTN_DTYPE_F32), VKATTN_OK);
    for (size_t i = 0; i < count; i++)
        if (held[i] != sentinel_value)
            fail_msg("%s failed (%s in %s) but its output was written (element %zu = %g)", what,
                     vkattn_status_string(r->failed_status), r->failed_entry, i, (double)held[i]);
    free(held);
}

/* The calls whose failure in a download drops the work recorded since the last
 * submission (it was never submitted). A download failing elsewhere leaves that
 * work queued (its staging buffer could not be made) or done (a failed
 * invalidate or map after the wait). */
static bool drops_recorded_work(const char *entry)
{
    static const char *entries[] = {"vkEndCommandBuffer", "vkResetFences", "vkQueueSubmit"};
    for (size_t i = 0; entry && i < sizeof entries / sizeof entries[0]; i++)
        if (strcmp(entry, entries[i]) == 0)
            return true;
    return false;
}

/* An op that writes `out`, then its result. When the op fails with out of
 * memory, or the download that runs its work does so on submitting (the work
 * recorded since the last submission is then dropped), `out` must still hold
 * the sentinel; a download failing before or after that leaves the work queued
 * or done. The op is run again and must give the result of the run without
 * faults. */
#define OP(r, what, out, count, expr)                                                          \
    do {                                                                                       \
        CALL(r, "sentinel upload", vkattn_tensor_upload(out, sentinel, VKATTN_DTYPE_F32));    \
        vkattn_status s_ = (expr);                                                             \
        bool again_ = failed_call(r, s_, what), queued_ = false;                               \
        if (!again_) {                                                                         \
            s_ = vkattn_tensor_download(out, r->got.o[r->results], VKATTN_DTYPE_F32);         \
            again_ = failed_call(r, s_, "download of " what);                                  \
            queued_ = again_ && !drops_recorded_work((r)->failed_entry);                       \
        }                                                                                      \
        if (again_) {                                                                          \
            if ((r)->lost)                                                                     \
                return false;                                                                  \
            if (!queued_)                                                                      \
                expect_sentinel(r, out, count, what);                                          \
            if ((s_ = (expr)) != VKATTN_OK)                                                    \
                fail_msg("%s again: %s", what, vkattn_last_error((r)->ctx));                   \
        }                                                                                      \
        if (!check_output(r, out, count, what))                                                \
            return false;                                                                      \
    } while (0)

static bool create_tensors(run *r)
{
    bool ok = true;
    vkattn_tensor **all[] = {&r->q, &r->k, &r->v, &r->o, &r->kv_len, &r->sinks,
                             &r->x, &r->w_qkv, &r->w_out, &r->y};
    const int64_t shapes[][5] = {
        {4, B, H, T, D}, {4, B, HKV, T, D}, {4, B, HKV, T, D}, {4, B, H, T, D}, {1, B, 0, 0, 0},
        {1, H, 0, 0, 0}, {3, 1, T, C, 0}, {2, 3 * C, C, 0, 0}, {2, C, C, 0, 0}, {3, 1, T, C, 0},
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0] && ok; i++) {
        vkattn_dtype dtype = i == 4 ? VKATTN_DTYPE_I32 : i == 1 ? VKATTN_DTYPE_F16 : VKATTN_DTYPE_F32;
        *all[i] = make(r, dtype, (int)shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3],
                       shapes[i][4], &ok);
    }
    if (!ok)
        return false;
    int32_t lens[B] = {T, T - 5};
    CALL(r, "upload Q", vkattn_tensor_upload(r->q, host_data, VKATTN_DTYPE_F32));
    CALL(r, "upload K", vkattn_tensor_upload(r->k, host_data + 7, VKATTN_DTYPE_F32));
    CALL(r, "upload V", vkattn_tensor_upload(r->v, host_data + 11, VKATTN_DTYPE_F32));
    CALL(r, "upload kv_len", vkattn_tensor_upload(r->kv_len, lens, VKATTN_DTYPE_I32));
    CALL(r, "upload sinks", vkattn_tensor_upload(r->sinks, host_data + 3, VKATTN_DTYPE_F32));
    CALL(r, "upload X", vkattn_tensor_upload(r->x, host_data + 5, VKATTN_DTYPE_F32));
    CALL(r, "upload W_qkv", vkattn_tensor_upload(r->w_qkv, host_data + 13, VKATTN_DTYPE_F32));
    CALL(r, "upload W_out", vkattn_tensor_upload(r->w_out, host_data + 17, VKATTN_DTYPE_F32));
    return true;
}

static bool attention_paths(run *r)
{
    const size_t n = B * H * T * D;
    vkattn_attention_desc d = {.causal = true, .kv_len = r->kv_len};
    OP(r, "attention (auto)", r->o, n, vkattn_attention(r->ctx, &d, r->q, r->k, r->v, r->o));
    d.path = VKATTN_PATH_FUSED, d.fused_variant = VKATTN_FUSED_TILED, d.kv_splits = 2;
    OP(r, "attention (tiled, 2 splits)", r->o, n,
       vkattn_attention(r->ctx, &d, r->q, r->k, r->v, r->o));
    d = (vkattn_attention_desc){.causal = true, .path = VKATTN_PATH_UNFUSED, .layout = VKATTN_LAYOUT_BSHD};
    OP(r, "attention (unfused, bshd)", r->o, n,
       vkattn_attention(r->ctx, &d, r->q, r->k, r->v, r->o));
    d = (vkattn_attention_desc){.causal = true, .has_window = true, .window_left = 5,
                                .sinks = r->sinks, .softcap = 4.0f};
    OP(r, "attention (window, sinks, softcap)", r->o, n,
       vkattn_attention(r->ctx, &d, r->q, r->k, r->v, r->o));
    vkattn_mha_desc md = {.heads = 2, .causal = true};
    OP(r, "mha", r->y, (size_t)(T * C),
       vkattn_mha(r->ctx, &md, r->x, r->w_qkv, NULL, r->w_out, NULL, r->y));
    return true;
}

static bool timed(run *r)
{
    double ms = 0;
    vkattn_attention_desc d = {.causal = true};
    CALL(r, "timer_begin", vkattn_timer_begin(r->ctx));
    CALL(r, "timed attention", vkattn_attention(r->ctx, &d, r->q, r->k, r->v, r->o));
    vkattn_status s = vkattn_timer_end(r->ctx, &ms);
    if (failed_call(r, s, "timer_end") && r->lost)
        return false;
    return true;
}

/* A command buffer of the application's, begun for one submission. */
static VkCommandBuffer app_begin(test_app *a)
{
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = a->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkCommandBuffer cb;
    assert_int_equal(vkAllocateCommandBuffers(a->device, &ai, &cb), VK_SUCCESS);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    assert_int_equal(vkBeginCommandBuffer(cb, &bi), VK_SUCCESS);
    return cb;
}

/* The application submits `cb` (ended) and waits for it. */
static void app_run(test_app *a, VkCommandBuffer cb)
{
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                       .pCommandBuffers = &cb};
    assert_int_equal(vkQueueSubmit(a->queue, 1, &si, VK_NULL_HANDLE), VK_SUCCESS);
    assert_int_equal(vkQueueWaitIdle(a->queue), VK_SUCCESS);
}

/* Recording into the application's command buffer, which it submits itself. */
static bool recorded(run *r)
{
    test_app *a = r->app;
    VkCommandBuffer cb = app_begin(a);
    vkattn_status s = vkattn_recording_begin(r->ctx, cb);
    bool ok = true;
    vkattn_recording *rec = NULL;
    if (failed_call(r, s, "recording_begin")) {
        ok = !r->lost && vkattn_recording_begin(r->ctx, cb) == VKATTN_OK;
    }
    if (ok) {
        vkattn_attention_desc d = {.causal = true, .kv_len = NULL};
        s = vkattn_attention(r->ctx, &d, r->q, r->k, r->v, r->o);
        if (failed_call(r, s, "recorded attention"))
            s = vkattn_attention(r->ctx, &d, r->q, r->k, r->v, r->o);
        if (s != VKATTN_OK)
            fail_msg("recorded attention again: %s", vkattn_last_error(r->ctx));
        assert_int_equal(vkattn_recording_end(r->ctx, &rec), VKATTN_OK);
    }
    assert_int_equal(vkEndCommandBuffer(cb), VK_SUCCESS);
    if (ok) {
        app_run(a, cb);
    }
    vkattn_recording_release(rec);
    vkFreeCommandBuffers(a->device, a->pool, 1, &cb);
    return ok && check_output(r, r->o, B * H * T * D, "recorded attention");
}

/* After a device loss: every call that reaches the device says so. */
static void expect_lost(run *r)
{
    int32_t lens[B] = {1, 1};
    vkattn_attention_desc d = {.causal = true};
    vkattn_status s[] = {
        vkattn_synchronize(r->ctx),
        r->o ? vkattn_tensor_download(r->o, sentinel, VKATTN_DTYPE_F32) : VKATTN_ERROR_DEVICE_LOST,
        r->kv_len ? vkattn_tensor_upload(r->kv_len, lens, VKATTN_DTYPE_I32) : VKATTN_ERROR_DEVICE_LOST,
        r->o ? vkattn_attention(r->ctx, &d, r->q, r->k, r->v, r->o) : VKATTN_ERROR_DEVICE_LOST,
    };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        if (s[i] != VKATTN_ERROR_DEVICE_LOST && s[i] != VKATTN_ERROR_INVALID_ARGUMENT)
            fail_msg("call %zu after the device was lost (%s): %s, expected DEVICE_LOST", i,
                     r->failed_at, vkattn_status_string(s[i]));
}

static void destroy_all(run *r)
{
    vkattn_tensor *all[] = {r->q, r->k, r->v, r->o, r->kv_len, r->sinks,
                            r->x, r->w_qkv, r->w_out, r->y};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        vkattn_tensor_destroy(all[i]);
    vkattn_context_destroy(r->ctx);
}

static bool scenario(run *r)
{
    vkattn_vulkan_handles h = test_app_handles(r->app);
    h.get_instance_proc_addr = fault_get_instance_proc_addr;
    vkattn_context_desc cd = {.adopt = &h, .pipeline_cache_disable = true};
    vkattn_status s = vkattn_context_create(&cd, &r->ctx);
    if (s != VKATTN_OK) {
        if (r->ctx)
            fail_msg("context_create failed (%s) but returned a context", vkattn_status_string(s));
        failed_call(r, s, "vkattn_context_create");
        if (r->lost)
            return false; /* nothing to use */
        if (vkattn_context_create(&cd, &r->ctx) != VKATTN_OK)
            fail_msg("context_create again failed");
    }
    return create_tensors(r) && attention_paths(r) && timed(r) && recorded(r);
}

/* The whole run with the n-th fallible call failing (0: none); the number of
 * fallible calls it made. */
static long run_with_fault(test_app *app, long n, const outputs *want, outputs *keep)
{
    run *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->app = app;
    r->want = want;
    fault_arm(n);
    bool finished = scenario(r);
    long calls = fault_calls();
    if (!finished) {
        assert_true(r->lost);
        expect_lost(r);
    }
    VkResult injected;
    const char *entry;
    if (n && !r->failed && fault_fired(&injected, &entry) && !absorbable(entry, injected))
        fail_msg("fallible call %ld of %ld (%s) failed but no vkattn call reported it", n, calls,
                 entry);
    if (keep)
        *keep = r->got;
    destroy_all(r);
    const char *kind;
    long live = fault_live_objects(&kind);
    if (live != 0)
        fail_msg("fault at call %ld (%s): %ld objects left after vkattn_context_destroy (%s)", n,
                 r->failed_at ? r->failed_at : "-", live, kind);
    assert_int_equal(app->validation_messages, 0);
    free(r);
    return calls;
}

static void test_every_fault(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof host_data / sizeof host_data[0]; i++) {
        host_data[i] = (float)((i * 7919) % 2001) / 1000.0f - 1.0f;
        sentinel[i] = sentinel_value;
    }
    test_app app;
    test_app_create(&app);
    fault_install(vkGetInstanceProcAddr);
    static outputs clean;
    long total = run_with_fault(&app, 0, NULL, &clean);
    int lost_runs = 0, runs = 0;
    for (long n = 1; n <= total; n++, runs++) {
        run_with_fault(&app, n, &clean, NULL);
        VkResult r;
        const char *entry;
        if (fault_fired(&r, &entry) && r == VK_ERROR_DEVICE_LOST)
            lost_runs++;
    }
    printf("failure injection: %ld fallible Vulkan calls in the run; %d runs, each with one "
           "of them failing (%d losing the device)\n", total, runs, lost_runs);
    fault_release_pipelines();
    test_app_destroy(&app);
    /* The device's destruction found nothing left: no pooled pipeline or kept
     * layout. */
    assert_int_equal(app.validation_messages, 0);
}

/* After the last vkattn_context_destroy: nothing vkattn made is left, then the
 * application's device goes, and the validation layer said nothing. */
static void expect_nothing_left(test_app *app)
{
    const char *kind;
    long live = fault_live_objects(&kind);
    if (live != 0)
        fail_msg("%ld objects left after vkattn_context_destroy (%s)", live, kind);
    fault_release_pipelines();
    test_app_destroy(app);
    assert_int_equal(app->validation_messages, 0);
}

/* A context on the application's device through the wrapper. */
static vkattn_context *wrapped_context(test_app *app)
{
    vkattn_vulkan_handles h = test_app_handles(app);
    h.get_instance_proc_addr = fault_get_instance_proc_addr;
    vkattn_context_desc cd = {.adopt = &h, .pipeline_cache_disable = true};
    vkattn_context *ctx = NULL;
    fault_arm(0);
    assert_int_equal(vkattn_context_create(&cd, &ctx), VKATTN_OK);
    return ctx;
}

enum { STREAM_STEPS = 5000, RECORDED_STEPS = 700 };

/* `steps` steps of the chain; a step that fails with `fails_with` (once, if
 * not OK) is taken again and must succeed. Returns the failed step or -1. */
static int chain_steps(shift_chain *c, int steps, vkattn_status fails_with)
{
    int failed = -1;
    for (int i = 0; i < steps; i++) {
        vkattn_status s = shift_chain_step(c);
        if (s != VKATTN_OK && s == fails_with && failed < 0) {
            failed = i;
            s = shift_chain_step(c);
        }
        if (s != VKATTN_OK)
            fail_msg("step %d: %s: %s", i, vkattn_status_string(s), vkattn_last_error(c->ctx));
    }
    if (fails_with != VKATTN_OK && failed < 0)
        fail_msg("no step failed with %s", vkattn_status_string(fails_with));
    return failed;
}

/* The chain's next `steps` steps recorded into a command buffer of the
 * application's, which it submits; a step that fails with `fails_with` as in
 * chain_steps. */
static void record_chain(test_app *a, shift_chain *c, int steps, vkattn_status fails_with)
{
    VkCommandBuffer cb = app_begin(a);
    assert_int_equal(vkattn_recording_begin(c->ctx, cb), VKATTN_OK);
    chain_steps(c, steps, fails_with);
    vkattn_recording *rec;
    assert_int_equal(vkattn_recording_end(c->ctx, &rec), VKATTN_OK);
    /* The exit barrier: vkattn reads the results back next (a copy, or the
     * host through the mapping). */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
                         NULL, 0, NULL);
    assert_int_equal(vkEndCommandBuffer(cb), VK_SUCCESS);
    app_run(a, cb);
    vkattn_recording_release(rec);
    vkFreeCommandBuffers(a->device, a->pool, 1, &cb);
}

/* Fails the test unless the last stream needed more than one pool at once
 * and found one full. */
static void expect_pools_filled(const char *what)
{
    uint32_t most;
    long full;
    set_pools_stats(&most, &full);
    if (most < 2 || full < 1)
        fail_msg("%s: at most %u descriptor pools at once, %ld full answers: the stream did "
                 "not fill a pool", what, most, full);
}

/* Thousands of dependent steps (shift_chain.h, exact) queued in the context's
 * stream with no synchronize between them, as a long decode loop queues them:
 * each dispatch takes a descriptor set, the context's pools (256 sets each)
 * fill one after another up to its limit of them, then it runs the stream to
 * reset them and takes sets from them again (5000 steps cross each point).
 * Then a recording of 700 steps into the application's command buffer, which
 * cannot be run part-way: the recording takes pool after pool. Then the same
 * with a failure where the stream takes a new pool (the step fails with
 * OUT_OF_DEVICE_MEMORY, records nothing and succeeds again), where it runs
 * part-way (the device is lost: every later call says so) and where a
 * recording takes its second pool; nothing left afterwards. */
static void test_long_streams(void **state)
{
    (void)state;
    test_app app;
    test_app_create(&app);
    fault_install(vkGetInstanceProcAddr);
    rng r = {93};
    uint32_t most;
    long full;
    set_pools_stats(&most, &full);

    vkattn_context *ctx = wrapped_context(&app);
    shift_chain chain;
    shift_chain_create(ctx, 5, 7, &r, &chain);
    chain_steps(&chain, STREAM_STEPS, VKATTN_OK);
    shift_chain_expect(&chain, "the context's stream");
    expect_pools_filled("the context's stream");
    record_chain(&app, &chain, RECORDED_STEPS, VKATTN_OK);
    shift_chain_expect(&chain, "a recording");
    expect_pools_filled("a recording");
    /* The recording's second pool fails (its first comes with its first set). */
    fault_arm_entry("vkCreateDescriptorPool", 2);
    record_chain(&app, &chain, RECORDED_STEPS, VKATTN_ERROR_OUT_OF_DEVICE_MEMORY);
    shift_chain_expect(&chain, "a recording whose second pool failed once");
    shift_chain_destroy(&chain);
    vkattn_context_destroy(ctx);

    /* A new context (one pool so far): its second pool fails once. */
    ctx = wrapped_context(&app);
    shift_chain_create(ctx, 5, 7, &r, &chain);
    fault_arm_entry("vkCreateDescriptorPool", 1);
    int failed = chain_steps(&chain, STREAM_STEPS, VKATTN_ERROR_OUT_OF_DEVICE_MEMORY);
    shift_chain_expect(&chain, "the context's stream, a pool failed once");
    if (failed < 200)
        fail_msg("step %d failed: before the first pool was full", failed);
    shift_chain_destroy(&chain);
    vkattn_context_destroy(ctx);

    /* Another: the submission that runs the stream part-way loses the device. */
    ctx = wrapped_context(&app);
    shift_chain_create(ctx, 5, 7, &r, &chain);
    fault_arm_entry("vkQueueSubmit", 1);
    vkattn_status s = VKATTN_OK;
    int step = 0;
    while (step < STREAM_STEPS && (s = shift_chain_step(&chain)) == VKATTN_OK)
        step++;
    if (s != VKATTN_ERROR_DEVICE_LOST || step < 1000)
        fail_msg("step %d: %s, expected DEVICE_LOST once the pools were full", step,
                 vkattn_status_string(s));
    assert_int_equal(shift_chain_step(&chain), VKATTN_ERROR_DEVICE_LOST);
    assert_int_equal(vkattn_synchronize(ctx), VKATTN_ERROR_DEVICE_LOST);
    shift_chain_destroy(&chain);
    vkattn_context_destroy(ctx);

    expect_nothing_left(&app);
}

enum { MANY = 2000, MORE = 1000, ALLOCATION_CAP = 16 };

/* Fills tensor `i` (count elements) with values exact in f16 and bf16 that
 * differ from every other tensor's (small integers, and the index). */
static void many_values(int i, size_t count, float *out)
{
    for (size_t j = 0; j < count; j++)
        out[j] = (float)((int)((j * 7 + (size_t)i * 13) % 201) - 100);
    out[0] = (float)(i % 256);
}

static vkattn_tensor *many_create(vkattn_context *ctx, int i, rng *r, float *scratch)
{
    static const vkattn_dtype dtypes[] = {VKATTN_DTYPE_F32, VKATTN_DTYPE_F16, VKATTN_DTYPE_BF16};
    int64_t count = rng_int(r, 1, 3000);
    vkattn_tensor_desc d = {.dtype = dtypes[i % 3], .ndim = 1, .shape = {count}};
    vkattn_tensor *t = NULL;
    vkattn_status s = vkattn_tensor_create(ctx, &d, &t);
    if (s != VKATTN_OK)
        fail_msg("tensor %d of %lld elements: %s (\"%s\"); %ld allocations at most", i,
                 (long long)count, vkattn_status_string(s), vkattn_last_error(ctx),
                 fault_allocations_peak());
    many_values(i, (size_t)count, scratch);
    assert_int_equal(vkattn_tensor_upload(t, scratch, VKATTN_DTYPE_F32), VKATTN_OK);
    return t;
}

static void many_expect(vkattn_tensor *const *tensors, const int *ids, int n, float *got,
                        float *want, const char *what)
{
    for (int k = 0; k < n; k++) {
        if (!tensors[k])
            continue;
        vkattn_tensor_desc d = vkattn_tensor_get_desc(tensors[k]);
        assert_int_equal(vkattn_tensor_download(tensors[k], got, VKATTN_DTYPE_F32), VKATTN_OK);
        many_values(ids[k], (size_t)d.shape[0], want);
        for (int64_t j = 0; j < d.shape[0]; j++)
            if (got[j] != want[j])
                fail_msg("%s: tensor %d element %lld is %g, uploaded %g: another tensor's "
                         "memory overlaps it", what, ids[k], (long long)j, (double)got[j],
                         (double)want[j]);
    }
}

/* Thousands of small tensors on a driver that allows 16 live memory allocations
 * (real ones allow 4096 or 4 billion, shared with the whole process): tensors
 * share blocks, so all of them fit, each holds what was uploaded to it after
 * half are destroyed and more made in the holes, and a large tensor gets a
 * block of its own. Where no allocation is left, creating a tensor that needs
 * one fails with a message and the context goes on. Nothing is left after
 * vkattn_context_destroy. */
static void test_many_tensors(void **state)
{
    (void)state;
    test_app app;
    test_app_create(&app);
    fault_install(vkGetInstanceProcAddr);
    vkattn_context *ctx = wrapped_context(&app);
    fault_cap_allocations(ALLOCATION_CAP);
    rng r = {17};
    static vkattn_tensor *tensors[MANY + MORE];
    static int ids[MANY + MORE];
    static float got[3000], want[3000];
    for (int i = 0; i < MANY; i++) {
        tensors[i] = many_create(ctx, i, &r, want);
        ids[i] = i;
    }
    many_expect(tensors, ids, MANY, got, want, "all made");
    /* Every other one destroyed, in an order that jumps about; then more. */
    for (int k = 0; k < MANY; k++) {
        int i = (int)(((long)k * 7919) % MANY);
        if (i % 2) {
            vkattn_tensor_destroy(tensors[i]);
            tensors[i] = NULL;
        }
    }
    for (int i = MANY; i < MANY + MORE; i++) {
        tensors[i] = many_create(ctx, i, &r, want);
        ids[i] = i;
    }
    many_expect(tensors, ids, MANY + MORE, got, want, "half destroyed, more made");
    printf("%d tensors in %ld memory allocations at most\n", MANY + MORE,
           fault_allocations_peak());

    /* Larger than half a block: its own allocation, freed with it. */
    const char *kind;
    long before = fault_live_objects(&kind), allocations = fault_live_allocations();
    vkattn_tensor_desc big = {.dtype = VKATTN_DTYPE_F32, .ndim = 2, .shape = {4096, 2049}};
    vkattn_tensor *t = NULL;
    assert_int_equal(vkattn_tensor_create(ctx, &big, &t), VKATTN_OK);
    assert_int_equal(fault_live_allocations(), allocations + 1);
    expect_f32_round_trip(t, 4096 * 2049);
    vkattn_tensor_destroy(t);
    assert_int_equal(fault_live_objects(&kind), before);

    /* No allocation left: a tensor that needs a new block fails, with the
     * numbers, and writes nothing; the context goes on. */
    fault_cap_allocations(1);
    t = NULL;
    vkattn_status s = vkattn_tensor_create(ctx, &big, &t);
    assert_int_equal(s, VKATTN_ERROR_VULKAN);
    assert_null(t);
    const char *msg = vkattn_last_error(ctx);
    if (!strstr(msg, "VK_ERROR_TOO_MANY_OBJECTS") || !strstr(msg, "bytes"))
        fail_msg("the failed tensor_create said \"%s\"", msg);
    assert_int_equal(fault_live_objects(&kind), before);
    fault_cap_allocations(0);
    many_expect(tensors, ids, MANY + MORE, got, want, "after a failed allocation");

    for (int i = 0; i < MANY + MORE; i++)
        vkattn_tensor_destroy(tensors[i]);
    vkattn_context_destroy(ctx);
    expect_nothing_left(&app);
}

/* A shared block left empty is kept for the next tensor; where the driver
 * then has no allocation left (its cap, or out of memory), the kept block is
 * freed and the tensor made in its place, rather than failing on memory that
 * nothing uses. */
static void test_kept_block_released(void **state)
{
    (void)state;
    test_app app;
    test_app_create(&app);
    fault_install(vkGetInstanceProcAddr);
    vkattn_context *ctx = wrapped_context(&app);
    /* Tensors until one lands in a new shared block: it is then alone there. */
    vkattn_tensor_desc small = {.dtype = VKATTN_DTYPE_F32, .ndim = 1, .shape = {3000}};
    enum { MOST = 4000 };
    static vkattn_tensor *made[MOST];
    int n = 0;
    long allocations = fault_live_allocations();
    while (fault_live_allocations() == allocations) {
        if (n == MOST)
            fail_msg("%d tensors of %lld floats made no new memory block", MOST,
                     (long long)small.shape[0]);
        assert_int_equal(vkattn_tensor_create(ctx, &small, &made[n]), VKATTN_OK);
        n++;
    }
    allocations = fault_live_allocations();
    vkattn_tensor_destroy(made[--n]);
    assert_int_equal(fault_live_allocations(), allocations); /* kept, empty */

    /* No allocation left but the kept block's: a tensor larger than any
     * shared block (64 MiB at most), so a block of its own, is made all the
     * same. */
    fault_cap_allocations(allocations);
    vkattn_tensor_desc big = {.dtype = VKATTN_DTYPE_F32, .ndim = 2, .shape = {4096, 4101}};
    vkattn_tensor *t = NULL;
    vkattn_status s = vkattn_tensor_create(ctx, &big, &t);
    if (s != VKATTN_OK)
        fail_msg("with the kept block freeable, the large tensor failed: %s (\"%s\")",
                 vkattn_status_string(s), vkattn_last_error(ctx));
    assert_int_equal(fault_live_allocations(), allocations);

    /* Nothing kept now: one more fails, with the numbers. */
    fault_cap_allocations(fault_live_allocations());
    vkattn_tensor *u = NULL;
    s = vkattn_tensor_create(ctx, &big, &u);
    assert_int_equal(s, VKATTN_ERROR_VULKAN);
    assert_null(u);
    if (!strstr(vkattn_last_error(ctx), "VK_ERROR_TOO_MANY_OBJECTS"))
        fail_msg("the failed tensor_create said \"%s\"", vkattn_last_error(ctx));

    /* The one made holds what is uploaded to it (staged in device memory:
     * the staging buffers need allocations of their own). */
    fault_cap_allocations(0);
    expect_f32_round_trip(t, 4096 * 4101);

    vkattn_tensor_destroy(t);
    for (int i = 0; i < n; i++)
        vkattn_tensor_destroy(made[i]);
    vkattn_context_destroy(ctx);
    expect_nothing_left(&app);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_fault),
        cmocka_unit_test(test_long_streams),
        cmocka_unit_test(test_many_tensors),
        cmocka_unit_test(test_kept_block_released),
    };
    return test_run_group(tests, NULL, NULL);
}
