/* Per-kernel GPU times (vkattn_profile_read): a timestamp after every dispatch
 * and copy that the context records into its own command buffer, each command
 * charged the time since the stamp before it. Where a command waits for the one
 * before it (vkattn puts a barrier between dependent commands) that is its own
 * run time; commands that overlap share theirs in record order. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

bool profile_wanted(const vkattn_context_desc *desc)
{
    return desc->profile || env_is_one("VKATTN_PROFILE");
}

void profile_init(vkattn_context *ctx)
{
    vk_state *vk = &ctx->vk;
    if (!ctx->profile.wanted || !ctx->info.timestamps)
        return;
    VkQueryPoolCreateInfo qi = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = PROFILE_STAMPS,
    };
    VkResult r = vk->vkd.CreateQueryPool(vk->device, &qi, NULL, &ctx->profile.pool);
    if (r != VK_SUCCESS) {
        ctx->profile.pool = VK_NULL_HANDLE;
        ctx_log(ctx, VKATTN_LOG_WARNING, "profile: vkCreateQueryPool: %s; no kernel times",
                vk_result_string(r));
    }
}

void profile_destroy(vkattn_context *ctx)
{
    if (ctx->profile.pool)
        ctx->vk.vkd.DestroyQueryPool(ctx->vk.device, ctx->profile.pool, NULL);
    ctx->profile.pool = VK_NULL_HANDLE;
}

/* At the start of the context's command buffer: the stamp the first command's
 * time counts from. */
void profile_begin_commands(vkattn_context *ctx)
{
    vk_state *vk = &ctx->vk;
    ctx->profile.used = 0;
    if (!ctx->profile.pool)
        return;
    vk->vkd.CmdResetQueryPool(vk->command_buffer, ctx->profile.pool, 0, PROFILE_STAMPS);
    vk->vkd.CmdWriteTimestamp(vk->command_buffer, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                              ctx->profile.pool, 0);
    ctx->profile.used = 1;
}

/* After a dispatch of `shader` (or a copy: SHADER_COUNT). Past the pool's
 * PROFILE_STAMPS the rest of the command buffer goes unmeasured. */
void profile_after_command(vkattn_context *ctx, uint32_t shader)
{
    vk_state *vk = &ctx->vk;
    if (!ctx->profile.pool || vk->external)
        return;
    if (ctx->profile.used == 0 || ctx->profile.used == PROFILE_STAMPS)
        return;
    ctx->profile.shader[ctx->profile.used] = (uint16_t)shader;
    vk->vkd.CmdWriteTimestamp(vk->command_buffer, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                              ctx->profile.pool, ctx->profile.used++);
}

/* After the command buffer's work completed: its stamps into the totals. A
 * failed read loses this submission's profile, never the work. */
void profile_collect(vkattn_context *ctx)
{
    vk_state *vk = &ctx->vk;
    uint32_t used = ctx->profile.used;
    ctx->profile.used = 0;
    if (!ctx->profile.pool || used < 2)
        return;
    uint64_t stamps[PROFILE_STAMPS];
    VkResult r = vk->vkd.GetQueryPoolResults(vk->device, ctx->profile.pool, 0, used,
                                             sizeof stamps, stamps, sizeof stamps[0],
                                             VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS) {
        ctx_log(ctx, VKATTN_LOG_WARNING, "profile: vkGetQueryPoolResults: %s; this "
                "submission's times are lost", vk_result_string(r));
        return;
    }
    uint64_t mask = vk->timestamp_valid_bits >= 64 ? UINT64_MAX
                                                   : ((uint64_t)1 << vk->timestamp_valid_bits) - 1;
    for (uint32_t i = 1; i < used; i++) {
        profile_total *t = &ctx->profile.totals[ctx->profile.shader[i]];
        t->dispatches++;
        t->ticks += (stamps[i] - stamps[i - 1]) & mask;
    }
}

static const char *command_name(uint32_t shader)
{
    return shader == SHADER_COUNT ? "copy" : shader_get((shader_id)shader)->name;
}

vkattn_status vkattn_profile_read(vkattn_context *ctx, vkattn_kernel_time *out, uint32_t capacity,
                                  uint32_t *count, bool reset)
{
    if (!ctx)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    if (!count || (!out && capacity > 0))
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "profile_read: %s", !count ? "count is NULL"
                                                   : "out is NULL with a capacity above 0");
    /* Kernels with time, the most first (a selection: there are few). */
    bool taken[SHADER_COUNT + 1] = {false};
    uint32_t n = 0;
    for (;; n++) {
        int best = -1;
        for (int i = 0; i <= SHADER_COUNT; i++)
            if (!taken[i] && ctx->profile.totals[i].dispatches &&
                (best < 0 || ctx->profile.totals[i].ticks > ctx->profile.totals[best].ticks))
                best = i;
        if (best < 0)
            break;
        taken[best] = true;
        if (n < capacity)
            out[n] = (vkattn_kernel_time){
                .kernel = command_name((uint32_t)best),
                .dispatches = ctx->profile.totals[best].dispatches,
                .total_ms = (double)ctx->profile.totals[best].ticks *
                            ctx->info.timestamp_period_ns * 1e-6,
            };
    }
    *count = n;
    if (reset)
        memset(ctx->profile.totals, 0, sizeof ctx->profile.totals);
    return VKATTN_OK;
}
