/* vkattn_timer_begin/end: GPU timestamps around recorded work, host clock otherwise. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "internal.h"

#include <time.h>

double host_time_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static bool uses_gpu_timestamps(const vkattn_context *ctx)
{
    return ctx->backend == VKATTN_BACKEND_VULKAN && ctx->info.timestamps;
}

vkattn_status vkattn_timer_begin(vkattn_context *ctx)
{
    if (!ctx)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    vkattn_status not_recording = check_not_recording(ctx, "timer_begin");
    if (not_recording != VKATTN_OK)
        return not_recording;
    if (uses_gpu_timestamps(ctx)) {
        vkattn_status s = vk_cmd_timestamp(ctx, 0);
        if (s != VKATTN_OK)
            return s;
    } else {
        /* Host timing must not include work recorded before begin(). */
        vkattn_status s = vkattn_synchronize(ctx);
        if (s != VKATTN_OK)
            return s;
        ctx->timer_host_start_ms = host_time_ms();
    }
    ctx->timer_running = true;
    return VKATTN_OK;
}

vkattn_status vkattn_timer_end(vkattn_context *ctx, double *elapsed_ms)
{
    if (!ctx || !elapsed_ms)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    if (!ctx->timer_running)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "timer_end: no timer_begin before it");
    vkattn_status not_recording = check_not_recording(ctx, "timer_end");
    if (not_recording != VKATTN_OK)
        return not_recording;
    ctx->timer_running = false;
    if (!uses_gpu_timestamps(ctx)) {
        vkattn_status s = vkattn_synchronize(ctx);
        *elapsed_ms = host_time_ms() - ctx->timer_host_start_ms;
        return s;
    }
    vk_state *vk = &ctx->vk;
    vkattn_status s = vk_cmd_timestamp(ctx, 1);
    if (s == VKATTN_OK)
        s = vk_cmd_submit_and_wait(ctx);
    if (s != VKATTN_OK)
        return s;
    uint64_t stamps[2];
    VkResult r = vk->vkd.GetQueryPoolResults(vk->device, vk->query_pool, 0, 2, sizeof stamps,
                                             stamps, sizeof stamps[0],
                                             VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS)
        return ctx_fail_vk(ctx, r, "vkGetQueryPoolResults");
    uint64_t mask = vk->timestamp_valid_bits >= 64 ? UINT64_MAX
                                                   : ((uint64_t)1 << vk->timestamp_valid_bits) - 1;
    uint64_t ticks = (stamps[1] - stamps[0]) & mask;
    *elapsed_ms = (double)ticks * ctx->info.timestamp_period_ns * 1e-6;
    return VKATTN_OK;
}
