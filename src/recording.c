/* Recording ops into an application's command buffer (vkattn_recording_*):
 * descriptor sets come from pools the recording owns, and the scratch tensors it
 * uses are pinned, so both outlive the application's submission. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

vkattn_status check_not_recording(vkattn_context *ctx, const char *op)
{
    if (ctx->backend == VKATTN_BACKEND_VULKAN && ctx->vk.external)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "%s: not allowed while recording into an application command buffer "
                        "(between vkattn_recording_begin and _end)", op);
    return VKATTN_OK;
}

static bool grow(void **array, uint32_t *capacity, size_t element)
{
    uint32_t cap = *capacity ? *capacity * 2 : 8;
    void *grown = realloc(*array, cap * element);
    if (!grown)
        return false;
    *array = grown;
    *capacity = cap;
    return true;
}

vkattn_status recording_allocate_set(vkattn_recording *r, VkDescriptorSet *out)
{
    vkattn_context *ctx = r->ctx;
    vk_state *vk = &ctx->vk;
    if (r->pool_count) {
        VkDescriptorSetAllocateInfo ai = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
            .descriptorPool = r->pools[r->pool_count - 1],
            .descriptorSetCount = 1,
            .pSetLayouts = &vk->set_layout,
        };
        VkResult res = vk->vkd.AllocateDescriptorSets(vk->device, &ai, out);
        if (res == VK_SUCCESS)
            return VKATTN_OK;
        if (res != VK_ERROR_OUT_OF_POOL_MEMORY && res != VK_ERROR_FRAGMENTED_POOL)
            return ctx_fail_vk(ctx, res, "vkAllocateDescriptorSets");
    }
    /* The application's buffer cannot be flushed: take another pool. */
    if (r->pool_count == r->pool_capacity &&
        !grow((void **)&r->pools, &r->pool_capacity, sizeof *r->pools))
        return ctx_fail(ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "recording: out of host memory");
    vkattn_status s = vk_descriptor_pool_create(ctx, &r->pools[r->pool_count]);
    if (s != VKATTN_OK)
        return s;
    r->pool_count++;
    return recording_allocate_set(r, out);
}

vkattn_status recording_pin(vkattn_recording *r, vkattn_tensor *t)
{
    for (uint32_t i = 0; i < r->pinned_count; i++)
        if (r->pinned[i] == t)
            return VKATTN_OK;
    if (r->pinned_count == r->pinned_capacity &&
        !grow((void **)&r->pinned, &r->pinned_capacity, sizeof *r->pinned))
        return ctx_fail(r->ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "recording: out of host memory");
    r->pinned[r->pinned_count++] = t;
    t->pins++;
    return VKATTN_OK;
}

vkattn_status vkattn_recording_begin(vkattn_context *ctx, VkCommandBuffer command_buffer)
{
    if (!ctx)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    if (ctx->backend != VKATTN_BACKEND_VULKAN)
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED,
                        "recording_begin: the CPU backend has no command buffers");
    if (!command_buffer)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "recording_begin: command_buffer is NULL");
    vkattn_status s = check_not_recording(ctx, "recording_begin");
    if (s != VKATTN_OK)
        return s;
    /* The recorded commands may read what earlier vkattn work (uploads) wrote. */
    if ((s = vk_cmd_submit_and_wait(ctx)) != VKATTN_OK)
        return s;
    vkattn_recording *r = calloc(1, sizeof *r);
    if (!r)
        return ctx_fail(ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "recording_begin: out of host memory");
    r->ctx = ctx;
    r->command_buffer = command_buffer;
    r->next = ctx->recordings;
    ctx->recordings = r;
    vk_state *vk = &ctx->vk;
    vk->external = r;
    vk->active = command_buffer;
    /* The application ordered its own tensors before this; the scratch memory
     * that an earlier recording (or vkattn's own work) also used, nobody did. */
    vk_hazards_reset(ctx, true);
    return VKATTN_OK;
}

vkattn_status vkattn_recording_end(vkattn_context *ctx, vkattn_recording **out)
{
    if (out)
        *out = NULL;
    if (!ctx)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    if (!out)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "recording_end: out is NULL");
    if (ctx->backend != VKATTN_BACKEND_VULKAN || !ctx->vk.external)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "recording_end: no vkattn_recording_begin before it");
    *out = ctx->vk.external;
    ctx->vk.external = NULL;
    ctx->vk.active = ctx->vk.command_buffer;
    vk_hazards_reset(ctx, true); /* this recording's commands may run after later own work */
    return VKATTN_OK;
}

void vkattn_recording_release(vkattn_recording *r)
{
    if (!r)
        return;
    vkattn_context *ctx = r->ctx;
    if (ctx->vk.external == r) { /* released without ending: end it first */
        ctx->vk.external = NULL;
        ctx->vk.active = ctx->vk.command_buffer;
    }
    for (vkattn_recording **link = &ctx->recordings; *link; link = &(*link)->next)
        if (*link == r) {
            *link = r->next;
            break;
        }
    for (uint32_t i = 0; i < r->pool_count; i++)
        ctx->vk.vkd.DestroyDescriptorPool(ctx->vk.device, r->pools[i], NULL);
    for (uint32_t i = 0; i < r->pinned_count; i++)
        r->pinned[i]->pins--;
    free(r->pools);
    free(r->pinned);
    free(r);
    scratch_sweep_retired(ctx);
}

void recording_release_all(vkattn_context *ctx)
{
    if (ctx->recordings)
        ctx_log(ctx, VKATTN_LOG_WARNING,
                "context destroyed with unreleased recordings; releasing them");
    while (ctx->recordings)
        vkattn_recording_release(ctx->recordings);
}

vkattn_status vkattn_tensor_vulkan_buffer(const vkattn_tensor *t, VkBuffer *buffer,
                                          VkDeviceSize *size)
{
    if (!t || !buffer || !size)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    if (t->ctx->backend != VKATTN_BACKEND_VULKAN)
        return ctx_fail(t->ctx, VKATTN_ERROR_UNSUPPORTED,
                        "tensor_vulkan_buffer: a CPU-backend tensor has no VkBuffer");
    *buffer = t->buffer;
    *size = t->buffer_size;
    /* The application may now write it: the host copy of an I32 tensor's
     * values could go stale, so it is dropped for good (the kernels clamp). */
    vkattn_tensor *writable = (vkattn_tensor *)t;
    writable->app_writes = true;
    free(writable->i32_shadow);
    writable->i32_shadow = NULL;
    return VKATTN_OK;
}
