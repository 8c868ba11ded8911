/* Buffers and their memory: memory-type choice, allocation, mapping. */
#include "internal.h"

static int32_t find_memory_type(const VkPhysicalDeviceMemoryProperties *mp, uint32_t allowed,
                                VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred)
{
    int32_t fallback = -1;
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = mp->memoryTypes[i].propertyFlags;
        if (!(allowed & (1u << i)) || (f & required) != required)
            continue;
        if ((f & preferred) == preferred)
            return (int32_t)i;
        if (fallback < 0)
            fallback = (int32_t)i;
    }
    return fallback;
}

vkattn_status vk_buffer_create(vkattn_context *ctx, VkDeviceSize size, memory_use use,
                               VkBuffer *buffer, VkDeviceMemory *memory, void **mapped)
{
    vk_state *vk = &ctx->vk;
    *buffer = VK_NULL_HANDLE;
    *memory = VK_NULL_HANDLE;
    *mapped = NULL;

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
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    bool map = use == MEMORY_STAGING || ctx->info.host_visible_device_memory;
    int32_t type;
    if (use == MEMORY_STAGING)
        type = find_memory_type(&vk->memory_properties, req.memoryTypeBits, host,
                                VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    else if (map)
        type = find_memory_type(&vk->memory_properties, req.memoryTypeBits,
                                host | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    else
        type = find_memory_type(&vk->memory_properties, req.memoryTypeBits,
                                VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    if (type < 0) {
        vk->vkd.DestroyBuffer(vk->device, *buffer, NULL);
        *buffer = VK_NULL_HANDLE;
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "no suitable memory type for a %s buffer",
                        use == MEMORY_STAGING ? "staging" : "device");
    }

    VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = (uint32_t)type,
    };
    r = vk->vkd.AllocateMemory(vk->device, &ai, NULL, memory);
    if (r == VK_SUCCESS)
        r = vk->vkd.BindBufferMemory(vk->device, *buffer, *memory, 0);
    if (r == VK_SUCCESS && map)
        r = vk->vkd.MapMemory(vk->device, *memory, 0, VK_WHOLE_SIZE, 0, mapped);
    if (r != VK_SUCCESS) {
        vk_buffer_destroy(ctx, *buffer, *memory);
        *buffer = VK_NULL_HANDLE;
        *memory = VK_NULL_HANDLE;
        *mapped = NULL;
        return ctx_fail_vk(ctx, r, "allocating buffer memory");
    }
    return VKATTN_OK;
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
