/* Device memory in blocks that buffers share. One vkAllocateMemory per tensor
 * would run into the driver's cap on live allocations (maxMemoryAllocationCount:
 * 4096 on some, shared with the rest of the process) as an application's
 * tensors add up, and each allocation is a call into the kernel. Shared blocks
 * grow in size per memory type (memory_block_size); a large buffer gets a block
 * of its own, which is freed with it. A context is used from one thread at a
 * time (vkattn.h), so the pool needs no lock. */
#include "internal.h"

#include <stdlib.h>

static bool host_visible(const vk_state *vk, uint32_t type)
{
    return vk->memory_properties.memoryTypes[type].propertyFlags &
           VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
}

/* Where the host maps a type, flush ranges are rounded to nonCoherentAtomSize:
 * buffers there start and end on atoms, so that a flush of one never writes
 * back (stale) bytes of its neighbour. */
static VkDeviceSize atom_for(const vk_state *vk, uint32_t type)
{
    return host_visible(vk, type) && vk->noncoherent_atom_size ? vk->noncoherent_atom_size : 1;
}

static VkResult block_create(vkattn_context *ctx, uint32_t type, VkDeviceSize size, bool shared,
                             memory_block **out)
{
    vk_state *vk = &ctx->vk;
    memory_pool *pool = &vk->memory_pool;
    if (pool->count == pool->capacity) {
        uint32_t capacity = pool->capacity ? pool->capacity * 2 : 8;
        memory_block **grown = realloc(pool->blocks, capacity * sizeof *grown);
        if (!grown)
            return VK_ERROR_OUT_OF_HOST_MEMORY;
        pool->blocks = grown;
        pool->capacity = capacity;
    }
    memory_block *b = calloc(1, sizeof *b);
    if (!b || !memory_ranges_init(&b->ranges, size)) {
        free(b);
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    }
    VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = size,
        .memoryTypeIndex = type,
    };
    VkResult r = vk->vkd.AllocateMemory(vk->device, &ai, NULL, &b->memory);
    if (r != VK_SUCCESS) {
        memory_ranges_release(&b->ranges);
        free(b);
        return r;
    }
    b->size = size;
    b->type = type;
    b->shared = shared;
    pool->blocks[pool->count++] = b;
    if (shared)
        pool->shared_made[type]++;
    ctx_log(ctx, VKATTN_LOG_DEBUG, "memory: %s block of %llu bytes in type %u (%u blocks held)",
            shared ? "a shared" : "a buffer's own", (unsigned long long)size, type, pool->count);
    *out = b;
    return VK_SUCCESS;
}

static void block_destroy(vkattn_context *ctx, uint32_t index)
{
    vk_state *vk = &ctx->vk;
    memory_pool *pool = &vk->memory_pool;
    memory_block *b = pool->blocks[index];
    vk->vkd.FreeMemory(vk->device, b->memory, NULL); /* implicitly unmaps */
    memory_ranges_release(&b->ranges);
    free(b);
    pool->blocks[index] = pool->blocks[--pool->count];
}

/* `size` bytes at `alignment` from a shared block of `type` that has room;
 * for a buffer the host maps, a block mapped already first. */
static bool take_shared(memory_pool *pool, uint32_t type, VkDeviceSize size,
                        VkDeviceSize alignment, bool mapped, vk_allocation *out)
{
    for (int pass = mapped ? 0 : 1; pass < 2; pass++)
        for (uint32_t i = 0; i < pool->count; i++) {
            memory_block *b = pool->blocks[i];
            uint64_t offset;
            if (b->shared && b->type == type && (pass || b->host) &&
                memory_ranges_take(&b->ranges, size, alignment, &offset)) {
                *out = (vk_allocation){b, offset, size};
                return true;
            }
        }
    return false;
}

/* Memory in one type: a shared block with room, a new shared block, or one of
 * the buffer's own (for a large buffer, or where a new shared block does not
 * fit but the buffer alone may). */
static VkResult allocate_in_type(vkattn_context *ctx, const VkMemoryRequirements *req,
                                 uint32_t type, bool mapped, vk_allocation *out)
{
    vk_state *vk = &ctx->vk;
    memory_pool *pool = &vk->memory_pool;
    VkDeviceSize atom = atom_for(vk, type);
    VkDeviceSize alignment = req->alignment > atom ? req->alignment : atom;
    VkDeviceSize size = (req->size + atom - 1) / atom * atom;

    if (take_shared(pool, type, size, alignment, mapped, out))
        return VK_SUCCESS;
    VkDeviceSize block_size = memory_block_size(&vk->memory_properties, type, size + alignment,
                                                pool->shared_made[type], vk->max_allocation_size);
    memory_block *b = NULL;
    VkResult r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
    if (block_size) {
        r = block_create(ctx, type, block_size, true, &b);
        if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
            ctx_log(ctx, VKATTN_LOG_DEBUG,
                    "memory: no room for a %llu-byte block in type %u (%s); trying the "
                    "buffer's %llu bytes alone",
                    (unsigned long long)block_size, type, vk_result_string(r),
                    (unsigned long long)size);
        else if (r != VK_SUCCESS)
            return r;
    }
    if (!b && (r = block_create(ctx, type, size, false, &b)) != VK_SUCCESS)
        return r;
    /* A fresh block has room at offset 0 for what it was sized for; only the
     * bookkeeping's host memory can fail. */
    uint64_t offset;
    if (!memory_ranges_take(&b->ranges, size, alignment, &offset)) {
        block_destroy(ctx, pool->count - 1);
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    }
    *out = (vk_allocation){b, offset, size};
    return VK_SUCCESS;
}

/* Whether `r` says a type has no room (for a try after its kept empty block
 * is freed, then the next type): out of memory, or the driver's cap
 * on live allocations (maxMemoryAllocationCount), where a type's shared block
 * may still have room that needs no allocation. */
static bool out_of_room(VkResult r)
{
    return r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY ||
           r == VK_ERROR_TOO_MANY_OBJECTS;
}

/* Frees the empty shared block of `type` kept for the next buffer
 * (memory_pool_free keeps one a type); whether there was one. */
static bool release_kept_block(vkattn_context *ctx, uint32_t type)
{
    memory_pool *pool = &ctx->vk.memory_pool;
    for (uint32_t i = 0; i < pool->count; i++) {
        const memory_block *b = pool->blocks[i];
        if (b->shared && b->type == type && memory_ranges_empty(&b->ranges)) {
            block_destroy(ctx, i);
            return true;
        }
    }
    return false;
}

/* Gives `a`'s range back to its block; a block left empty is freed, unless
 * `keep` and it is the only empty shared block of its type (kept for the next
 * buffer: staging comes and goes with every transfer). */
static void give_back(vkattn_context *ctx, vk_allocation *a, bool keep)
{
    memory_pool *pool = &ctx->vk.memory_pool;
    vk_allocation given = *a;
    memory_block *b = given.block;
    *a = (vk_allocation){0};
    if (!b)
        return;
    memory_ranges_give(&b->ranges, given.offset, given.size);
    if (!memory_ranges_empty(&b->ranges))
        return;
    uint32_t index = pool->count, empty_shared_of_type = 0;
    for (uint32_t i = 0; i < pool->count; i++) {
        if (pool->blocks[i] == b)
            index = i;
        if (pool->blocks[i]->shared && pool->blocks[i]->type == b->type &&
            memory_ranges_empty(&pool->blocks[i]->ranges))
            empty_shared_of_type++;
    }
    if (!keep || !b->shared || empty_shared_of_type > 1)
        block_destroy(ctx, index);
}

/* Maps the block of `a` whole, once, when the first buffer that the host
 * reaches lands in it: mapping per buffer is not allowed (one mapping per
 * allocation). Where the map fails, `a` is given back, and its block too if
 * that leaves it empty (not kept: the next buffer the host maps would fail
 * on it again). */
static VkResult map_block(vkattn_context *ctx, vk_allocation *a)
{
    vk_state *vk = &ctx->vk;
    memory_block *b = a->block;
    if (b->host)
        return VK_SUCCESS;
    VkResult r = vk->vkd.MapMemory(vk->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->host);
    if (r != VK_SUCCESS) {
        b->host = NULL;
        give_back(ctx, a, false);
    }
    return r;
}

VkResult memory_pool_allocate(vkattn_context *ctx, const VkMemoryRequirements *req,
                              const uint32_t *order, uint32_t n, bool mapped,
                              vk_allocation *out)
{
    *out = (vk_allocation){0};
    VkResult r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
    for (uint32_t i = 0; i < n; i++) {
        r = allocate_in_type(ctx, req, order[i], mapped, out);
        /* A kept empty block (up to 64 MiB) holds memory, and an allocation,
         * that nothing uses: where the type has no room, it goes back to the
         * driver and the type is tried again, before memory further down the
         * order (slower, for a device tensor) is taken. */
        if (out_of_room(r) && release_kept_block(ctx, order[i])) {
            ctx_log(ctx, VKATTN_LOG_DEBUG, "memory: freed type %u's kept empty block for %llu "
                    "bytes (%s); trying again", order[i], (unsigned long long)req->size,
                    vk_result_string(r));
            r = allocate_in_type(ctx, req, order[i], mapped, out);
        }
        /* A type whose memory the host cannot map now (address space, a
         * driver's limit on mappings) is passed over as a full one is. */
        if (r == VK_SUCCESS && mapped)
            r = map_block(ctx, out);
        if (r == VK_SUCCESS)
            return VK_SUCCESS;
        if (!out_of_room(r) && r != VK_ERROR_MEMORY_MAP_FAILED)
            return r;
        if (i + 1 < n)
            ctx_log(ctx, VKATTN_LOG_DEBUG,
                    "%llu bytes find no %s in memory type %u (%s); trying type %u",
                    (unsigned long long)req->size,
                    r == VK_ERROR_MEMORY_MAP_FAILED ? "mapping" : "room", order[i],
                    vk_result_string(r), order[i + 1]);
    }
    return r;
}

void memory_pool_free(vkattn_context *ctx, vk_allocation *a) { give_back(ctx, a, true); }

void memory_pool_destroy(vkattn_context *ctx)
{
    memory_pool *pool = &ctx->vk.memory_pool;
    while (pool->count)
        block_destroy(ctx, pool->count - 1);
    free(pool->blocks);
    *pool = (memory_pool){0};
}
