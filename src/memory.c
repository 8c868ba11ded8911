/* Buffers and their memory: allocation in the ranked memory types (with a
 * retry in the next one when memory runs out), mapping, flush and invalidate. */
#include "internal.h"

/* Allocates `req` in the best type of `order` that has room; VK_SUCCESS or
 * the last failure. */
static VkResult allocate_ranked(vkattn_context *ctx, const VkMemoryRequirements *req,
                                const uint32_t *order, uint32_t n, VkDeviceMemory *memory,
                                uint32_t *type)
{
    vk_state *vk = &ctx->vk;
    VkResult r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
    for (uint32_t i = 0; i < n; i++) {
        VkMemoryAllocateInfo ai = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
            .allocationSize = req->size,
            .memoryTypeIndex = order[i],
        };
        r = vk->vkd.AllocateMemory(vk->device, &ai, NULL, memory);
        if (r == VK_SUCCESS) {
            *type = order[i];
            return r;
        }
        if (r != VK_ERROR_OUT_OF_DEVICE_MEMORY && r != VK_ERROR_OUT_OF_HOST_MEMORY)
            return r;
        if (i + 1 < n)
            ctx_log(ctx, VKATTN_LOG_DEBUG,
                    "%llu bytes do not fit in memory type %u (%s); trying type %u",
                    (unsigned long long)req->size, order[i], vk_result_string(r), order[i + 1]);
    }
    return r;
}

vkattn_status vk_buffer_create(vkattn_context *ctx, VkDeviceSize size, memory_use use,
                               VkBuffer *buffer, VkDeviceMemory *memory, vk_mapping *mapping)
{
    vk_state *vk = &ctx->vk;
    *buffer = VK_NULL_HANDLE;
    *memory = VK_NULL_HANDLE;
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
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "no suitable memory type for a %s buffer",
                        use == MEMORY_UPLOAD || use == MEMORY_DOWNLOAD ? "staging" : "device");
    }

    uint32_t type = order[0];
    r = allocate_ranked(ctx, &req, order, n, memory, &type);
    if (r == VK_SUCCESS)
        r = vk->vkd.BindBufferMemory(vk->device, *buffer, *memory, 0);
    if (r == VK_SUCCESS && use != MEMORY_DEVICE)
        r = vk->vkd.MapMemory(vk->device, *memory, 0, VK_WHOLE_SIZE, 0, &mapping->host);
    if (r != VK_SUCCESS) {
        vk_buffer_destroy(ctx, *buffer, *memory);
        *buffer = VK_NULL_HANDLE;
        *memory = VK_NULL_HANDLE;
        *mapping = (vk_mapping){0};
        return ctx_fail_vk(ctx, r, "allocating buffer memory");
    }
    if (mapping->host) {
        VkMemoryPropertyFlags f = vk->memory_properties.memoryTypes[type].propertyFlags;
        mapping->size = req.size;
        mapping->noncoherent =
            !(f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) || vk->assume_noncoherent;
    }
    return VKATTN_OK;
}

static vkattn_status sync_range(vkattn_context *ctx, VkDeviceMemory memory, const vk_mapping *m,
                                VkDeviceSize bytes, bool flush)
{
    vk_state *vk = &ctx->vk;
    if (!m->host || !m->noncoherent)
        return VKATTN_OK;
    VkMappedMemoryRange range = memory_atom_range(memory, 0, bytes, vk->noncoherent_atom_size,
                                                  m->size);
    VkResult r = flush ? vk->vkd.FlushMappedMemoryRanges(vk->device, 1, &range)
                       : vk->vkd.InvalidateMappedMemoryRanges(vk->device, 1, &range);
    if (r != VK_SUCCESS)
        return ctx_fail_vk(ctx, r, flush ? "vkFlushMappedMemoryRanges"
                                         : "vkInvalidateMappedMemoryRanges");
    return VKATTN_OK;
}

vkattn_status vk_mapping_flush(vkattn_context *ctx, VkDeviceMemory memory, const vk_mapping *m,
                               VkDeviceSize bytes)
{
    return sync_range(ctx, memory, m, bytes, true);
}

vkattn_status vk_mapping_invalidate(vkattn_context *ctx, VkDeviceMemory memory,
                                    const vk_mapping *m, VkDeviceSize bytes)
{
    return sync_range(ctx, memory, m, bytes, false);
}

void vk_buffer_destroy(vkattn_context *ctx, VkBuffer buffer, VkDeviceMemory memory)
{
    vk_state *vk = &ctx->vk;
    if (buffer)
        vk->vkd.DestroyBuffer(vk->device, buffer, NULL);
    if (memory)
        vk->vkd.FreeMemory(vk->device, memory, NULL); /* implicitly unmaps */
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
