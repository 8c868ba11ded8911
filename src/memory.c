/* Buffers and their memory: a buffer bound to its range of a pool block in the
 * ranked memory types (memory_pool.c), its mapping, flush and invalidate. */
#include "internal.h"

#include <stdio.h>

static const char *use_name(memory_use use)
{
    switch (use) {
    case MEMORY_DEVICE: return "device";
    case MEMORY_DEVICE_MAPPED: return "mapped device";
    case MEMORY_UPLOAD: return "upload staging";
    case MEMORY_DOWNLOAD: return "download staging";
    }
    return "?";
}

vkattn_status vk_buffer_create(vkattn_context *ctx, VkDeviceSize size, memory_use use,
                               VkBuffer *buffer, vk_allocation *memory, vk_mapping *mapping)
{
    vk_state *vk = &ctx->vk;
    *buffer = VK_NULL_HANDLE;
    *memory = (vk_allocation){0};
    *mapping = (vk_mapping){0};

    VkBufferCreateInfo bi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
                 VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult r = vk->vkd.CreateBuffer(vk->device, &bi, NULL, buffer);
    if (r != VK_SUCCESS)
        return ctx_fail_vk(ctx, r, "vkCreateBuffer");

    VkMemoryRequirements req;
    vk->vkd.GetBufferMemoryRequirements(vk->device, *buffer, &req);
    if (use == MEMORY_DEVICE && ctx->info.host_visible_device_memory)
        use = MEMORY_DEVICE_MAPPED;
    uint32_t order[VK_MAX_MEMORY_TYPES];
    uint32_t n = memory_types_ranked(&vk->memory_properties, req.memoryTypeBits, use, req.size,
                                     order);
    if (n == 0) {
        vk->vkd.DestroyBuffer(vk->device, *buffer, NULL);
        *buffer = VK_NULL_HANDLE;
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "no suitable memory type for %s memory",
                        use_name(use));
    }

    bool mapped = use != MEMORY_DEVICE;
    r = memory_pool_allocate(ctx, &req, order, n, mapped, memory);
    if (r == VK_SUCCESS)
        r = vk->vkd.BindBufferMemory(vk->device, *buffer, memory->block->memory, memory->offset);
    if (r != VK_SUCCESS) {
        vk_buffer_destroy(ctx, *buffer, memory);
        *buffer = VK_NULL_HANDLE;
        char what[96];
        snprintf(what, sizeof what, "allocating %llu bytes of %s memory",
                 (unsigned long long)req.size, use_name(use));
        return ctx_fail_vk(ctx, r, what);
    }
    if (mapped) {
        VkMemoryPropertyFlags f =
            vk->memory_properties.memoryTypes[memory->block->type].propertyFlags;
        mapping->host = (char *)memory->block->host + memory->offset;
        mapping->noncoherent =
            !(f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) || vk->assume_noncoherent;
    }
    return VKATTN_OK;
}

static vkattn_status sync_range(vkattn_context *ctx, const vk_allocation *memory,
                                const vk_mapping *m, VkDeviceSize bytes, bool flush)
{
    vk_state *vk = &ctx->vk;
    if (!m->host || !m->noncoherent)
        return VKATTN_OK;
    const memory_block *b = memory->block;
    VkMappedMemoryRange range = memory_atom_range(b->memory, memory->offset, bytes,
                                                  vk->noncoherent_atom_size, b->size);
    VkResult r = flush ? vk->vkd.FlushMappedMemoryRanges(vk->device, 1, &range)
                       : vk->vkd.InvalidateMappedMemoryRanges(vk->device, 1, &range);
    if (r != VK_SUCCESS)
        return ctx_fail_vk(ctx, r, flush ? "vkFlushMappedMemoryRanges"
                                         : "vkInvalidateMappedMemoryRanges");
    return VKATTN_OK;
}

vkattn_status vk_mapping_flush(vkattn_context *ctx, const vk_allocation *memory,
                               const vk_mapping *m, VkDeviceSize bytes)
{
    return sync_range(ctx, memory, m, bytes, true);
}

vkattn_status vk_mapping_invalidate(vkattn_context *ctx, const vk_allocation *memory,
                                    const vk_mapping *m, VkDeviceSize bytes)
{
    return sync_range(ctx, memory, m, bytes, false);
}

void vk_buffer_destroy(vkattn_context *ctx, VkBuffer buffer, vk_allocation *memory)
{
    vk_state *vk = &ctx->vk;
    if (buffer)
        vk->vkd.DestroyBuffer(vk->device, buffer, NULL);
    memory_pool_free(ctx, memory);
}

VkBufferView vk_texel_view(vkattn_context *ctx, VkBuffer buffer, VkFormat format, uint64_t elements)
{
    vk_state *vk = &ctx->vk;
    bool supported;
    uint32_t texel_bytes;
    switch (format) {
    case VK_FORMAT_R32_SFLOAT: supported = vk->texel_f32, texel_bytes = 4; break;
    case VK_FORMAT_R16_SFLOAT: supported = vk->texel_f16, texel_bytes = 2; break;
    case VK_FORMAT_R32G32B32A32_SFLOAT: supported = vk->texel4_f32, texel_bytes = 16; break;
    case VK_FORMAT_R16G16B16A16_SFLOAT: supported = vk->texel4_f16, texel_bytes = 8; break;
    case VK_FORMAT_R16_UINT: supported = vk->texel_u16, texel_bytes = 2; break;
    case VK_FORMAT_R16G16B16A16_UINT: supported = vk->texel4_u16, texel_bytes = 8; break;
    default: return VK_NULL_HANDLE;
    }
    if (!supported || elements > vk->max_texel_elements)
        return VK_NULL_HANDLE;
    VkBufferViewCreateInfo vi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
        .buffer = buffer,
        .format = format,
        .offset = 0,
        .range = elements * texel_bytes,
    };
    VkBufferView view = VK_NULL_HANDLE;
    if (vk->vkd.CreateBufferView(vk->device, &vi, NULL, &view) != VK_SUCCESS)
        return VK_NULL_HANDLE;
    return view;
}
