/* vkattn on memory layouts this machine's device does not have: the fault
 * wrapper presents lavapipe's one memory type as a discrete GPU's VRAM, system
 * memory and 256 MiB BAR (fault_memory_layout.h), each backed by the real type,
 * and vkattn chooses among them as it would on that GPU, validation on. So the
 * choices the unit tests of memory_types.c check on paper run through the
 * memory pool, the staging and the kernels here:
 *  - tensors in VRAM the host cannot map, staged through system memory, the
 *    downloads' staging host-cached, the BAR left alone;
 *  - VRAM full: tensors in the next type down, never a large one in the BAR;
 *  - a type whose maps fail: the next type that maps;
 *  - mapped tensors on a device with a small BAR, or an integrated GPU's
 *    512 MiB carve-out: large ones kept out of it;
 *  - staging that is not host-coherent: flushed and invalidated.
 * Each run's results are compared, bit for bit, with the same calls on the
 * device's own layout, and nothing vkattn made is left afterwards. */
#include "fault_memory_layout.h"
#include "fault_vulkan.h"
#include "test_app.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DL VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
#define HV VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
#define HC VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
#define CACHED VK_MEMORY_PROPERTY_HOST_CACHED_BIT
#define MIB ((VkDeviceSize)1 << 20)
#define GIB ((VkDeviceSize)1 << 30)

/* NVIDIA on Linux without resizable BAR (tests/test_memory_types.c's layout). */
enum { SYSTEM_ONLY, VRAM, UPLOAD, DOWNLOAD, BAR, TYPES };
static VkPhysicalDeviceMemoryProperties discrete_layout(VkMemoryPropertyFlags upload_flags,
                                                        VkMemoryPropertyFlags download_flags)
{
    VkPhysicalDeviceMemoryProperties mp = {.memoryTypeCount = TYPES, .memoryHeapCount = 3};
    mp.memoryHeaps[0] = (VkMemoryHeap){24 * GIB, VK_MEMORY_HEAP_DEVICE_LOCAL_BIT};
    mp.memoryHeaps[1] = (VkMemoryHeap){64 * GIB, 0};
    mp.memoryHeaps[2] = (VkMemoryHeap){256 * MIB, VK_MEMORY_HEAP_DEVICE_LOCAL_BIT};
    mp.memoryTypes[SYSTEM_ONLY] = (VkMemoryType){0, 1};
    mp.memoryTypes[VRAM] = (VkMemoryType){DL, 0};
    mp.memoryTypes[UPLOAD] = (VkMemoryType){upload_flags, 1};
    mp.memoryTypes[DOWNLOAD] = (VkMemoryType){download_flags, 1};
    mp.memoryTypes[BAR] = (VkMemoryType){DL | HV | HC, 2};
    return mp;
}

#define B 2
#define H 4
#define HKV 2
#define T 37
#define D 24

/* What one run computes: attention on the fused and unfused paths (the
 * unfused one with scratch memory). */
typedef struct results {
    float fused[B * H * T * D], unfused[B * H * T * D];
} results;

static float host_data[B * H * T * D + 64];

static vkattn_context *context_on(test_app *app, vkattn_memory_mode mode)
{
    vkattn_vulkan_handles h = test_app_handles(app);
    h.get_instance_proc_addr = fault_get_instance_proc_addr;
    vkattn_context_desc cd = {.adopt = &h, .memory = mode, .pipeline_cache_disable = true};
    vkattn_context *ctx = NULL;
    fault_arm(0);
    assert_int_equal(vkattn_context_create(&cd, &ctx), VKATTN_OK);
    return ctx;
}

static vkattn_tensor *tensor(vkattn_context *ctx, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    vkattn_tensor_desc d = {.dtype = VKATTN_DTYPE_F32, .ndim = 4, .shape = {d0, d1, d2, d3}};
    vkattn_tensor *t = NULL;
    vkattn_status s = vkattn_tensor_create(ctx, &d, &t);
    if (s != VKATTN_OK)
        fail_msg("tensor_create: %s (\"%s\")", vkattn_status_string(s), vkattn_last_error(ctx));
    return t;
}

#define EXPECT_OK(ctx, call)                                                                   \
    do {                                                                                       \
        vkattn_status s_ = (call);                                                             \
        if (s_ != VKATTN_OK)                                                                   \
            fail_msg("%s: %s (\"%s\")", #call, vkattn_status_string(s_),                       \
                     vkattn_last_error(ctx));                                                  \
    } while (0)

static void compute(vkattn_context *ctx, results *out)
{
    vkattn_tensor *q = tensor(ctx, B, H, T, D), *k = tensor(ctx, B, HKV, T, D);
    vkattn_tensor *v = tensor(ctx, B, HKV, T, D), *o = tensor(ctx, B, H, T, D);
    EXPECT_OK(ctx, vkattn_tensor_upload(q, host_data, VKATTN_DTYPE_F32));
    EXPECT_OK(ctx, vkattn_tensor_upload(k, host_data + 7, VKATTN_DTYPE_F32));
    EXPECT_OK(ctx, vkattn_tensor_upload(v, host_data + 11, VKATTN_DTYPE_F32));
    vkattn_attention_desc d = {.causal = true};
    EXPECT_OK(ctx, vkattn_attention(ctx, &d, q, k, v, o));
    EXPECT_OK(ctx, vkattn_tensor_download(o, out->fused, VKATTN_DTYPE_F32));
    d.path = VKATTN_PATH_UNFUSED;
    EXPECT_OK(ctx, vkattn_attention(ctx, &d, q, k, v, o));
    EXPECT_OK(ctx, vkattn_tensor_download(o, out->unfused, VKATTN_DTYPE_F32));
    vkattn_tensor_destroy(q);
    vkattn_tensor_destroy(k);
    vkattn_tensor_destroy(v);
    vkattn_tensor_destroy(o);
}

typedef struct fixture {
    test_app app;
    results want; /* on the device's own layout */
    results got;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    rng r = {0x3e3047};
    for (size_t i = 0; i < sizeof host_data / sizeof host_data[0]; i++)
        host_data[i] = rng_uniform(&r, -2.0f, 2.0f);
    test_app_create(&f->app);
    /* Every presented type is backed by a real one that every buffer may use:
     * a device with one memory type (lavapipe). On a GPU the layouts are its
     * own, which the rest of the suite runs on. */
    VkPhysicalDeviceMemoryProperties real;
    vkGetPhysicalDeviceMemoryProperties(f->app.physical_device, &real);
    if (real.memoryTypeCount != 1) {
        printf("skipped: the device has %u memory types; presented layouts need one\n",
               real.memoryTypeCount);
        test_app_destroy(&f->app);
        free(f);
        exit(TEST_SKIP_CODE);
    }
    fault_install(vkGetInstanceProcAddr);
    fault_memory_present(NULL);
    vkattn_context *ctx = context_on(&f->app, VKATTN_MEMORY_AUTO);
    compute(ctx, &f->want);
    vkattn_context_destroy(ctx);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    fault_memory_present(NULL);
    const char *kind;
    long live = fault_live_objects(&kind);
    fault_release_pipelines();
    test_app_destroy(&f->app);
    int messages = f->app.validation_messages;
    free(f);
    if (live != 0) {
        fprintf(stderr, "%ld objects left after the last context (%s)\n", live, kind);
        return -1;
    }
    return messages == 0 ? 0 : -1;
}

/* The run's results against the device's own layout's, and nothing left. */
static void expect_same_results(fixture *f, vkattn_context *ctx, const char *layout)
{
    compute(ctx, &f->got);
    vkattn_context_destroy(ctx);
    if (memcmp(f->got.fused, f->want.fused, sizeof f->want.fused) != 0)
        fail_msg("%s: fused attention differs from the device's own layout's", layout);
    if (memcmp(f->got.unfused, f->want.unfused, sizeof f->want.unfused) != 0)
        fail_msg("%s: unfused attention differs from the device's own layout's", layout);
    for (uint32_t t = 0; t < TYPES; t++)
        if (fault_memory_live(t) != 0)
            fail_msg("%s: %u allocations left in type %u", layout, fault_memory_live(t), t);
    assert_int_equal(f->app.validation_messages, 0);
}

static uint32_t made(uint32_t type) { return fault_memory_made(type, NULL); }

static vkattn_device_info device_info(const vkattn_context *ctx)
{
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(ctx, &info), VKATTN_OK);
    return info;
}

/* A tensor 4 MiB larger than a small device-local host-visible heap
 * (`small_type`'s, of `heap_bytes`) takes in one buffer (1/16 of it: 16 MiB of
 * a 256 MiB BAR) is made in `type`, not there, and holds what is uploaded. */
static void expect_large_tensor_in(vkattn_context *ctx, uint32_t type, uint32_t small_type,
                                   VkDeviceSize heap_bytes)
{
    const int64_t cols = 1024, rows = (int64_t)((heap_bytes / 16 + 4 * MIB) / (cols * 4));
    vkattn_tensor *big = tensor(ctx, 1, 1, rows, cols);
    VkDeviceSize in_small, in_type;
    fault_memory_made(small_type, &in_small);
    fault_memory_made(type, &in_type);
    assert_true(in_small <= heap_bytes / 16);
    assert_true(in_type >= (VkDeviceSize)(rows * cols) * sizeof(float));
    expect_f32_round_trip(big, (size_t)(rows * cols));
    vkattn_tensor_destroy(big);
}

/* As on a discrete GPU: tensors in VRAM the host cannot map, uploads staged in
 * system memory, downloads in host-cached memory, nothing in the BAR. */
static void test_discrete_gpu(void **state)
{
    fixture *f = *state;
    VkPhysicalDeviceMemoryProperties layout = discrete_layout(HV | HC, HV | HC | CACHED);
    fault_memory_present(&layout);
    vkattn_context *ctx = context_on(&f->app, VKATTN_MEMORY_DEVICE);
    assert_false(device_info(ctx).host_visible_device_memory);
    compute(ctx, &f->got);
    assert_true(made(VRAM) > 0);
    assert_true(made(UPLOAD) > 0);
    assert_true(made(DOWNLOAD) > 0);
    assert_int_equal(made(BAR), 0);
    assert_int_equal(made(SYSTEM_ONLY), 0);
    expect_same_results(f, ctx, "a discrete GPU's layout");
}

/* VRAM full: small tensors go to the BAR, the next type down; with the BAR
 * full too, to system memory; a large tensor never to the BAR. */
static void test_full_vram(void **state)
{
    fixture *f = *state;
    VkPhysicalDeviceMemoryProperties layout = discrete_layout(HV | HC, HV | HC | CACHED);
    fault_memory_present(&layout);
    fault_memory_refuse(VRAM, VK_ERROR_OUT_OF_DEVICE_MEMORY, VK_SUCCESS);
    vkattn_context *ctx = context_on(&f->app, VKATTN_MEMORY_DEVICE);
    compute(ctx, &f->got);
    assert_true(fault_memory_refused(VRAM) > 0);
    assert_int_equal(made(VRAM), 0);
    assert_true(made(BAR) > 0);

    expect_large_tensor_in(ctx, SYSTEM_ONLY, BAR, 256 * MIB);
    expect_same_results(f, ctx, "VRAM full");

    fault_memory_present(&layout);
    fault_memory_refuse(VRAM, VK_ERROR_OUT_OF_DEVICE_MEMORY, VK_SUCCESS);
    fault_memory_refuse(BAR, VK_ERROR_OUT_OF_DEVICE_MEMORY, VK_SUCCESS);
    ctx = context_on(&f->app, VKATTN_MEMORY_DEVICE);
    compute(ctx, &f->got);
    assert_true(fault_memory_refused(VRAM) > 0 && fault_memory_refused(BAR) > 0);
    assert_int_equal(made(VRAM) + made(BAR), 0);
    assert_true(made(SYSTEM_ONLY) > 0);
    expect_same_results(f, ctx, "VRAM and the BAR full");
}

/* Staging whose type cannot be mapped now: the next type that can. */
static void test_refused_maps(void **state)
{
    fixture *f = *state;
    VkPhysicalDeviceMemoryProperties layout = discrete_layout(HV | HC, HV | HC | CACHED);
    fault_memory_present(&layout);
    fault_memory_refuse(UPLOAD, VK_SUCCESS, VK_ERROR_MEMORY_MAP_FAILED);
    vkattn_context *ctx = context_on(&f->app, VKATTN_MEMORY_DEVICE);
    /* An upload's staging: tried in the upload type, whose block is given
     * back, and made in the next (nothing has been downloaded yet). */
    vkattn_tensor *q = tensor(ctx, B, H, T, D);
    EXPECT_OK(ctx, vkattn_tensor_upload(q, host_data, VKATTN_DTYPE_F32));
    vkattn_tensor_destroy(q);
    assert_true(fault_memory_refused(UPLOAD) > 0);
    assert_int_equal(fault_memory_live(UPLOAD), 0);
    assert_true(made(DOWNLOAD) > 0);
    expect_same_results(f, ctx, "the upload type's maps refused");

    /* No type maps: a status and a message; no block whose map failed is
     * kept, and nothing is left once the context is gone. */
    fault_memory_present(&layout);
    for (uint32_t t = 0; t < TYPES; t++)
        fault_memory_refuse(t, VK_SUCCESS, VK_ERROR_MEMORY_MAP_FAILED);
    ctx = context_on(&f->app, VKATTN_MEMORY_DEVICE);
    q = tensor(ctx, B, H, T, D);
    vkattn_status s = vkattn_tensor_upload(q, host_data, VKATTN_DTYPE_F32);
    assert_int_equal(s, VKATTN_ERROR_VULKAN);
    const char *msg = vkattn_last_error(ctx);
    if (!strstr(msg, "VK_ERROR_MEMORY_MAP_FAILED") || !strstr(msg, "upload staging"))
        fail_msg("the failed upload said \"%s\"", msg);
    for (uint32_t t = UPLOAD; t <= BAR; t++)
        if (fault_memory_refused(t) == 0 || fault_memory_live(t) != 0)
            fail_msg("type %u: %u maps refused, %u allocations live", t,
                     fault_memory_refused(t), fault_memory_live(t));
    vkattn_tensor_destroy(q);
    vkattn_context_destroy(ctx);
    for (uint32_t t = 0; t < TYPES; t++)
        assert_int_equal(fault_memory_live(t), 0);
}

/* Tensors mapped (AUTO on a device that shares memory with the host) where
 * the device-local host-visible heap is a 256 MiB BAR: small tensors there,
 * a large one not; where the BAR's maps fail, the next mappable type. */
static void test_mapped_tensors_small_bar(void **state)
{
    fixture *f = *state;
    VkPhysicalDeviceMemoryProperties layout = discrete_layout(HV | HC, HV | HC | CACHED);
    fault_memory_present(&layout);
    vkattn_context *ctx = context_on(&f->app, VKATTN_MEMORY_AUTO);
    assert_true(device_info(ctx).host_visible_device_memory);
    compute(ctx, &f->got);
    assert_true(made(BAR) > 0);
    expect_large_tensor_in(ctx, UPLOAD, BAR, 256 * MIB);
    expect_same_results(f, ctx, "mapped tensors, a small BAR");

    fault_memory_present(&layout);
    fault_memory_refuse(BAR, VK_SUCCESS, VK_ERROR_MEMORY_MAP_FAILED);
    ctx = context_on(&f->app, VKATTN_MEMORY_AUTO);
    compute(ctx, &f->got);
    assert_true(fault_memory_refused(BAR) > 0);
    assert_int_equal(fault_memory_live(BAR), 0);
    assert_true(made(UPLOAD) + made(DOWNLOAD) > 0);
    expect_same_results(f, ctx, "mapped tensors, the BAR's maps refused");
}

/* An integrated GPU whose device-local memory is a 512 MiB carve-out beside
 * system memory (tests/test_memory_types.c's layout): tensors mapped, small
 * ones in the carve-out, one over 32 MiB in system memory. */
enum { CARVE_OUT_ONLY, SYSTEM_MAPPED, CARVE_OUT_MAPPED, SYSTEM_CACHED, CARVE_OUT_TYPES };
static void test_integrated_carve_out(void **state)
{
    fixture *f = *state;
    VkPhysicalDeviceMemoryProperties mp = {.memoryTypeCount = CARVE_OUT_TYPES,
                                           .memoryHeapCount = 2};
    mp.memoryHeaps[0] = (VkMemoryHeap){512 * MIB, VK_MEMORY_HEAP_DEVICE_LOCAL_BIT};
    mp.memoryHeaps[1] = (VkMemoryHeap){16 * GIB, 0};
    mp.memoryTypes[CARVE_OUT_ONLY] = (VkMemoryType){DL, 0};
    mp.memoryTypes[SYSTEM_MAPPED] = (VkMemoryType){HV | HC, 1};
    mp.memoryTypes[CARVE_OUT_MAPPED] = (VkMemoryType){DL | HV | HC, 0};
    mp.memoryTypes[SYSTEM_CACHED] = (VkMemoryType){HV | HC | CACHED, 1};
    fault_memory_present(&mp);
    vkattn_context *ctx = context_on(&f->app, VKATTN_MEMORY_AUTO);
    assert_true(device_info(ctx).host_visible_device_memory);
    compute(ctx, &f->got);
    assert_true(made(CARVE_OUT_MAPPED) > 0);
    assert_int_equal(made(CARVE_OUT_ONLY), 0);
    expect_large_tensor_in(ctx, SYSTEM_MAPPED, CARVE_OUT_MAPPED, 512 * MIB);
    expect_same_results(f, ctx, "an integrated GPU's carve-out");
}

/* Staging that is not host-coherent (some ARM and AMD drivers' system
 * memory): uploads flushed after the host writes them, downloads invalidated
 * before the host reads them, each in whole atoms (validation checks the
 * ranges), and neither the other way round. */
static void test_noncoherent_staging(void **state)
{
    fixture *f = *state;
    VkPhysicalDeviceMemoryProperties layout = discrete_layout(HV, HV | CACHED);
    fault_memory_present(&layout);
    vkattn_context *ctx = context_on(&f->app, VKATTN_MEMORY_DEVICE);
    compute(ctx, &f->got);
    assert_true(made(UPLOAD) > 0);
    assert_true(made(DOWNLOAD) > 0);
    assert_true(fault_memory_flushed(UPLOAD) > 0);
    assert_int_equal(fault_memory_invalidated(UPLOAD), 0);
    assert_true(fault_memory_invalidated(DOWNLOAD) > 0);
    assert_int_equal(fault_memory_flushed(DOWNLOAD), 0);
    expect_same_results(f, ctx, "non-coherent staging");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_discrete_gpu),
        cmocka_unit_test(test_full_vram),
        cmocka_unit_test(test_refused_maps),
        cmocka_unit_test(test_mapped_tensors_small_bar),
        cmocka_unit_test(test_integrated_carve_out),
        cmocka_unit_test(test_noncoherent_staging),
    };
    return test_run_group(tests, setup, teardown);
}
