/* The command stream: one command buffer recorded per context, barriers placed
 * from per-buffer hazard tracking, descriptor sets from pools that are reset
 * after each submission, submit + fence wait, GPU timestamps. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

vkattn_status vk_descriptor_pool_create(vkattn_context *ctx, VkDescriptorPool *out)
{
    vk_state *vk = &ctx->vk;
    VkDescriptorPoolSize sizes[2] = {
        {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VKATTN_DESCRIPTOR_SETS_PER_POOL * VKATTN_MAX_BINDINGS},
        {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
         VKATTN_DESCRIPTOR_SETS_PER_POOL * VKATTN_MAX_BINDINGS},
    };
    VkDescriptorPoolCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = VKATTN_DESCRIPTOR_SETS_PER_POOL,
        .poolSizeCount = 2,
        .pPoolSizes = sizes,
    };
    VkResult r = vk->vkd.CreateDescriptorPool(vk->device, &pi, NULL, out);
    return r == VK_SUCCESS ? VKATTN_OK : ctx_fail_vk(ctx, r, "vkCreateDescriptorPool");
}

vkattn_status vk_cmd_init(vkattn_context *ctx)
{
    vk_state *vk = &ctx->vk;
    VkCommandPoolCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
        .queueFamilyIndex = vk->queue_family,
    };
    VkResult r = vk->vkd.CreateCommandPool(vk->device, &pi, NULL, &vk->command_pool);
    if (r != VK_SUCCESS)
        return ctx_fail_vk(ctx, r, "vkCreateCommandPool");
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = vk->command_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    if ((r = vk->vkd.AllocateCommandBuffers(vk->device, &ai, &vk->command_buffer)) != VK_SUCCESS)
        return ctx_fail_vk(ctx, r, "vkAllocateCommandBuffers");
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if ((r = vk->vkd.CreateFence(vk->device, &fi, NULL, &vk->fence)) != VK_SUCCESS)
        return ctx_fail_vk(ctx, r, "vkCreateFence");
    if (ctx->info.timestamps) {
        VkQueryPoolCreateInfo qi = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_TIMESTAMP,
            .queryCount = 2,
        };
        if ((r = vk->vkd.CreateQueryPool(vk->device, &qi, NULL, &vk->query_pool)) != VK_SUCCESS)
            return ctx_fail_vk(ctx, r, "vkCreateQueryPool");
    }
    vkattn_status s = vk_descriptor_pool_create(ctx, &vk->descriptor_pools[0]);
    if (s != VKATTN_OK)
        return s;
    vk->descriptor_pool_count = 1;
    vk_mapping unused;
    s = vk_buffer_create(ctx, 16, MEMORY_DEVICE, &vk->dummy_buffer, &vk->dummy_memory, &unused);
    if (s != VKATTN_OK)
        return s;
    /* Texel bindings always need a valid view: the dummy's, if nothing else, of
     * the numeric type the shader declares (float, or uint for views of bits). */
    VkBufferViewCreateInfo vi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
        .buffer = vk->dummy_buffer,
        .format = VK_FORMAT_R32_SFLOAT,
        .range = 16,
    };
    if ((r = vk->vkd.CreateBufferView(vk->device, &vi, NULL, &vk->dummy_view)) != VK_SUCCESS)
        return ctx_fail_vk(ctx, r, "vkCreateBufferView");
    vi.format = VK_FORMAT_R32_UINT;
    if ((r = vk->vkd.CreateBufferView(vk->device, &vi, NULL, &vk->dummy_uint_view)) != VK_SUCCESS)
        return ctx_fail_vk(ctx, r, "vkCreateBufferView");
    return VKATTN_OK;
}

static void free_staging(vkattn_context *ctx)
{
    vk_state *vk = &ctx->vk;
    for (uint32_t i = 0; i < vk->staging_count; i++)
        vk_buffer_destroy(ctx, vk->staging[i].buffer, &vk->staging[i].memory);
    vk->staging_count = 0;
}

void vk_cmd_destroy(vkattn_context *ctx)
{
    vk_state *vk = &ctx->vk;
    if (!vk->device || !vk->vkd.DestroyCommandPool)
        return;
    free_staging(ctx);
    free(vk->staging);
    vk->staging = NULL;
    if (vk->dummy_view)
        vk->vkd.DestroyBufferView(vk->device, vk->dummy_view, NULL);
    if (vk->dummy_uint_view)
        vk->vkd.DestroyBufferView(vk->device, vk->dummy_uint_view, NULL);
    vk_buffer_destroy(ctx, vk->dummy_buffer, &vk->dummy_memory);
    for (uint32_t i = 0; i < vk->descriptor_pool_count; i++)
        vk->vkd.DestroyDescriptorPool(vk->device, vk->descriptor_pools[i], NULL);
    if (vk->query_pool)
        vk->vkd.DestroyQueryPool(vk->device, vk->query_pool, NULL);
    if (vk->fence)
        vk->vkd.DestroyFence(vk->device, vk->fence, NULL);
    if (vk->command_pool)
        vk->vkd.DestroyCommandPool(vk->device, vk->command_pool, NULL);
}

static vkattn_status begin_if_needed(vkattn_context *ctx)
{
    vk_state *vk = &ctx->vk;
    if (vk->device_lost)
        return ctx_fail(ctx, VKATTN_ERROR_DEVICE_LOST, "the device was lost");
    if (vk->recording || vk->external)
        return VKATTN_OK;
    if (vk->pool_needs_reset) {
        VkResult reset = vk->vkd.ResetCommandPool(vk->device, vk->command_pool, 0);
        if (reset != VK_SUCCESS)
            return ctx_fail_vk(ctx, reset, "vkResetCommandPool");
        vk->pool_needs_reset = false;
    }
    VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    VkResult r = vk->vkd.BeginCommandBuffer(vk->command_buffer, &bi);
    if (r != VK_SUCCESS)
        return ctx_fail_vk(ctx, r, "vkBeginCommandBuffer");
    vk->recording = true;
    vk->active = vk->command_buffer;
    vk->recorded_commands = 0;
    /* vkattn's own earlier work has been waited for; an application's command
     * buffer recorded earlier may not have run yet. */
    vk_hazards_reset(ctx, ctx->recordings != NULL);
    profile_begin_commands(ctx);
    return VKATTN_OK;
}

/* ---------------------------------------------------------- hazards ----- */

void vk_hazards_reset(vkattn_context *ctx, bool scratch_unordered)
{
    vk_state *vk = &ctx->vk;
    vk->written_count = vk->read_count = 0;
    if (!scratch_unordered)
        return;
    for (int i = 0; i < SCRATCH_COUNT; i++)
        if (ctx->scratch[i])
            vk->written[vk->written_count++] = ctx->scratch[i]->buffer;
}

static bool contains(const VkBuffer *set, uint32_t n, VkBuffer b)
{
    for (uint32_t i = 0; i < n; i++)
        if (set[i] == b)
            return true;
    return false;
}

static void full_barrier(vk_state *vk)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
    };
    const VkPipelineStageFlags stages =
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vk->vkd.CmdPipelineBarrier(vk->active, stages, stages, 0, 1, &mb, 0, NULL, 0, NULL);
    vk->written_count = vk->read_count = 0;
}

/* Places a barrier before a command that reads `reads` and writes `writes` when
 * it would race with a command recorded since the last barrier: read-after-write,
 * write-after-write or write-after-read on the same buffer. Independent commands
 * (the Q, K and V transposes, say) run without one between them. */
static void order_accesses(vk_state *vk, const VkBuffer *reads, uint32_t nr,
                           const VkBuffer *writes, uint32_t nw)
{
    bool hazard = vk->written_count + nw > VKATTN_MAX_TRACKED_BUFFERS ||
                  vk->read_count + nr > VKATTN_MAX_TRACKED_BUFFERS;
    for (uint32_t i = 0; i < nr && !hazard; i++)
        hazard = contains(vk->written, vk->written_count, reads[i]);
    for (uint32_t i = 0; i < nw && !hazard; i++)
        hazard = contains(vk->written, vk->written_count, writes[i]) ||
                 contains(vk->read, vk->read_count, writes[i]);
    if (hazard)
        full_barrier(vk);
    for (uint32_t i = 0; i < nr; i++)
        if (!contains(vk->read, vk->read_count, reads[i]))
            vk->read[vk->read_count++] = reads[i];
    for (uint32_t i = 0; i < nw; i++)
        if (!contains(vk->written, vk->written_count, writes[i]))
            vk->written[vk->written_count++] = writes[i];
}

/* ------------------------------------------------------- descriptors ---- */

static vkattn_status allocate_set(vkattn_context *ctx, VkDescriptorSet *out)
{
    vk_state *vk = &ctx->vk;
    if (vk->external)
        return recording_allocate_set(vk->external, out);
    for (;;) {
        VkDescriptorSetAllocateInfo ai = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
            .descriptorPool = vk->descriptor_pools[vk->descriptor_pool_current],
            .descriptorSetCount = 1,
            .pSetLayouts = &vk->set_layout,
        };
        VkResult r = vk->vkd.AllocateDescriptorSets(vk->device, &ai, out);
        if (r == VK_SUCCESS)
            return VKATTN_OK;
        if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
            return ctx_fail_vk(ctx, r, "vkAllocateDescriptorSets");
        if (vk->descriptor_pool_current + 1 < vk->descriptor_pool_count) {
            vk->descriptor_pool_current++;
            continue;
        }
        if (vk->descriptor_pool_count == VKATTN_MAX_DESCRIPTOR_POOLS)
            return VKATTN_ERROR_EXCEEDS_DEVICE_LIMIT; /* caller flushes and retries */
        vkattn_status s = vk_descriptor_pool_create(ctx, &vk->descriptor_pools[vk->descriptor_pool_count]);
        if (s != VKATTN_OK)
            return s;
        vk->descriptor_pool_current = vk->descriptor_pool_count++;
    }
}

/* ---------------------------------------------------------- commands ---- */

vkattn_status vk_cmd_dispatch(vkattn_context *ctx, const vk_dispatch *d)
{
    vk_state *vk = &ctx->vk;
    VkPipeline pipeline;
    vkattn_status s = vk_pipeline_get(ctx, &d->key, &pipeline);
    if (s != VKATTN_OK)
        return s;
    if ((s = begin_if_needed(ctx)) != VKATTN_OK)
        return s;

    VkDescriptorSet set;
    s = allocate_set(ctx, &set);
    if (s == VKATTN_ERROR_EXCEEDS_DEVICE_LIMIT) {
        /* Every pool is in use by recorded work: run it, recycle the pools. */
        if ((s = vk_cmd_submit_and_wait(ctx)) != VKATTN_OK || (s = begin_if_needed(ctx)))
            return s;
        s = allocate_set(ctx, &set);
    }
    if (s != VKATTN_OK)
        return s;

    VkDescriptorBufferInfo infos[VKATTN_MAX_BINDINGS];
    VkBufferView views[VKATTN_MAX_BINDINGS];
    VkWriteDescriptorSet writes[2 * VKATTN_MAX_BINDINGS];
    VkBuffer reads[VKATTN_MAX_BINDINGS], written[VKATTN_MAX_BINDINGS];
    uint32_t nr = 0, nw = 0;
    for (uint32_t i = 0; i < VKATTN_MAX_BINDINGS; i++) {
        VkBuffer b = i < d->binding_count && d->bindings[i].buffer ? d->bindings[i].buffer
                                                                   : vk->dummy_buffer;
        infos[i] = (VkDescriptorBufferInfo){b, 0, VK_WHOLE_SIZE};
        writes[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = set,
            .dstBinding = i,
            .descriptorCount = 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = &infos[i],
        };
        const vk_binding *bound = i < d->binding_count ? &d->bindings[i] : NULL;
        views[i] = bound && bound->texels       ? bound->texels
                   : bound && bound->uint_texels ? vk->dummy_uint_view
                                                 : vk->dummy_view;
        writes[VKATTN_TEXEL_BINDING_BASE + i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = set,
            .dstBinding = VKATTN_TEXEL_BINDING_BASE + i,
            .descriptorCount = 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
            .pTexelBufferView = &views[i],
        };
        if (i < d->binding_count && d->bindings[i].buffer) {
            if (d->bindings[i].written)
                written[nw++] = b;
            else
                reads[nr++] = b;
        }
    }
    vk->vkd.UpdateDescriptorSets(vk->device, 2 * VKATTN_MAX_BINDINGS, writes, 0, NULL);
    order_accesses(vk, reads, nr, written, nw);

    VkCommandBuffer cb = vk->active;
    vk->vkd.CmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vk->vkd.CmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, vk->pipeline_layout, 0, 1,
                                  &set, 0, NULL);
    if (d->push_bytes)
        vk->vkd.CmdPushConstants(cb, vk->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                 d->push_bytes, d->push);
    vk->vkd.CmdDispatch(cb, d->groups[0], d->groups[1], d->groups[2]);
    vk->recorded_commands++;
    profile_after_command(ctx, d->key.shader);
    return VKATTN_OK;
}

vkattn_status vk_cmd_copy(vkattn_context *ctx, VkBuffer src, VkBuffer dst, VkDeviceSize bytes)
{
    vk_state *vk = &ctx->vk;
    vkattn_status s = begin_if_needed(ctx);
    if (s != VKATTN_OK)
        return s;
    order_accesses(vk, &src, 1, &dst, 1);
    VkBufferCopy region = {0, 0, bytes};
    vk->vkd.CmdCopyBuffer(vk->command_buffer, src, dst, 1, &region);
    vk->recorded_commands++;
    profile_after_command(ctx, SHADER_COUNT);
    return VKATTN_OK;
}

vkattn_status vk_cmd_defer_free(vkattn_context *ctx, VkBuffer buffer, vk_allocation memory)
{
    vk_state *vk = &ctx->vk;
    if (vk->staging_count == vk->staging_capacity) {
        uint32_t cap = vk->staging_capacity ? vk->staging_capacity * 2 : 8;
        staging_buffer *grown = realloc(vk->staging, cap * sizeof *grown);
        if (!grown)
            return ctx_fail(ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "staging list: out of memory");
        vk->staging = grown;
        vk->staging_capacity = cap;
    }
    vk->staging[vk->staging_count++] = (staging_buffer){buffer, memory};
    return VKATTN_OK;
}

vkattn_status vk_cmd_timestamp(vkattn_context *ctx, uint32_t query)
{
    vk_state *vk = &ctx->vk;
    vkattn_status s = begin_if_needed(ctx);
    if (s != VKATTN_OK)
        return s;
    if (query == 0)
        vk->vkd.CmdResetQueryPool(vk->command_buffer, vk->query_pool, 0, 2);
    /* The second stamp waits for all prior work; the first marks the start of
     * what follows it. */
    vk->vkd.CmdWriteTimestamp(vk->command_buffer,
                              query == 0 ? VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT
                                         : VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                              vk->query_pool, query);
    vk->recorded_commands++;
    return VKATTN_OK;
}

vkattn_status vk_cmd_submit_and_wait(vkattn_context *ctx)
{
    vk_state *vk = &ctx->vk;
    if (vk->external)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "cannot submit while recording into an application command buffer");
    if (vk->device_lost)
        return ctx_fail(ctx, VKATTN_ERROR_DEVICE_LOST, "the device was lost");
    if (!vk->recording)
        return VKATTN_OK;
    /* Make device writes visible to host reads of mapped memory after the fence. */
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
    };
    vk->vkd.CmdPipelineBarrier(vk->command_buffer,
                               VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                               VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    vk->recording = false;
    /* The fence is reset before the submission, so a failed reset submits nothing. */
    VkResult r = vk->vkd.EndCommandBuffer(vk->command_buffer);
    if (r == VK_SUCCESS)
        r = vk->vkd.ResetFences(vk->device, 1, &vk->fence);
    bool submitted = false;
    if (r == VK_SUCCESS) {
        VkSubmitInfo si = {
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
            .commandBufferCount = 1,
            .pCommandBuffers = &vk->command_buffer,
        };
        r = vk->vkd.QueueSubmit(vk->queue, 1, &si, vk->fence);
        submitted = r == VK_SUCCESS;
    }
    if (r == VK_SUCCESS)
        r = vk->vkd.WaitForFences(vk->device, 1, &vk->fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS && (submitted || r == VK_ERROR_DEVICE_LOST)) {
        /* Work in flight that cannot be waited for: the context cannot go on.
         * Let the queue drain (a lost device returns at once) so that tensors
         * and the context can still be destroyed with nothing in flight. */
        vk->device_lost = true;
        if (submitted)
            vk->vkd.QueueWaitIdle(vk->queue);
        return ctx_fail_vk(ctx, r, "submitting recorded work");
    }
    /* Done, or nothing was submitted: then the recorded work is dropped (its
     * outputs keep what they held) and the context stays usable. */
    vkattn_status s = r == VK_SUCCESS ? VKATTN_OK
                                      : ctx_fail_vk(ctx, r, "submitting recorded work (dropped)");
    if (r == VK_SUCCESS)
        profile_collect(ctx);
    ctx->profile.used = 0;
    if (vk->vkd.ResetCommandPool(vk->device, vk->command_pool, 0) != VK_SUCCESS)
        vk->pool_needs_reset = true;
    for (uint32_t i = 0; i < vk->descriptor_pool_count; i++)
        vk->vkd.ResetDescriptorPool(vk->device, vk->descriptor_pools[i], 0);
    vk->descriptor_pool_current = 0;
    free_staging(ctx);
    return s;
}
