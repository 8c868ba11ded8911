/* Memory-type choice and flush ranges over a reported memory layout (no Vulkan
 * calls: tests/test_memory_types.c compiles this file on its own). */
#include "memory_types.h"

#define DL VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
#define HV VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
#define HC VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
#define CACHED VK_MEMORY_PROPERTY_HOST_CACHED_BIT

/* Types that need a feature or a kind of allocation vkattn never asks for. */
static const VkMemoryPropertyFlags unusable_flags =
    VK_MEMORY_PROPERTY_PROTECTED_BIT | VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT |
    VK_MEMORY_PROPERTY_DEVICE_COHERENT_BIT_AMD | VK_MEMORY_PROPERTY_DEVICE_UNCACHED_BIT_AMD;

/* Scores of a type for a use: -1 unusable, 0 last resort, higher is better. */
enum { UNUSABLE = -1, LAST_RESORT = 0 };

static int type_score(const VkPhysicalDeviceMemoryProperties *mp, uint32_t index, memory_use use,
                      VkDeviceSize size)
{
    VkMemoryPropertyFlags f = mp->memoryTypes[index].propertyFlags;
    if (f & unusable_flags)
        return UNUSABLE;
    bool device_local = f & DL, host_visible = f & HV;
    bool coherent = f & HC, cached = f & CACHED;
    if (use != MEMORY_DEVICE && !host_visible)
        return UNUSABLE;

    /* A big buffer in a small device-local host-visible heap (a BAR) would take
     * the window from everything else that needs it. */
    VkDeviceSize heap = mp->memoryHeaps[mp->memoryTypes[index].heapIndex].size;
    if (device_local && host_visible && heap < MEMORY_SMALL_HEAP_BYTES &&
        size > heap / MEMORY_SMALL_HEAP_FRACTION)
        return LAST_RESORT;

    switch (use) {
    case MEMORY_DEVICE:
        /* VRAM the host cannot see first: host-visible device-local memory is
         * the BAR window (or resizable BAR), worth keeping for what maps it;
         * system memory, read across the bus, only when nothing else is left. */
        if (device_local)
            return host_visible ? 3 : 4;
        return 2;
    case MEMORY_DEVICE_MAPPED:
        /* Coherent memory needs no flushes; device-local memory is the GPU's
         * fast memory (on shared-memory devices both are the same RAM). */
        return 1 + (coherent ? 4 : 0) + (device_local ? 2 : 0);
    case MEMORY_UPLOAD:
        /* System memory: the copy reads it across the bus once, and the BAR
         * window stays free. */
        return 1 + (device_local ? 0 : 2) + (coherent ? 1 : 0);
    case MEMORY_DOWNLOAD:
        /* The host reads every byte: from uncached (write-combined) memory that
         * is many times slower than from cached memory, which outweighs a flush. */
        return 1 + (device_local ? 0 : 4) + (cached ? 2 : 0) + (coherent ? 1 : 0);
    }
    return UNUSABLE;
}

uint32_t memory_types_ranked(const VkPhysicalDeviceMemoryProperties *mp, uint32_t allowed,
                             memory_use use, VkDeviceSize size,
                             uint32_t order[VK_MAX_MEMORY_TYPES])
{
    int score[VK_MAX_MEMORY_TYPES];
    uint32_t n = 0;
    bool better_than_last_resort = false;
    for (uint32_t i = 0; i < mp->memoryTypeCount && i < VK_MAX_MEMORY_TYPES; i++) {
        if (!(allowed & (1u << i)))
            continue;
        int s = type_score(mp, i, use, size);
        if (s == UNUSABLE)
            continue;
        better_than_last_resort |= s > LAST_RESORT;
        /* Insertion sort, stable: among equal scores the driver's order stands. */
        uint32_t at = n;
        while (at > 0 && score[at - 1] < s) {
            score[at] = score[at - 1];
            order[at] = order[at - 1];
            at--;
        }
        score[at] = s;
        order[at] = i;
        n++;
    }
    /* A last resort is only kept where it is the only place there is (a device
     * whose whole memory is one small host-visible heap). */
    while (better_than_last_resort && n > 0 && score[n - 1] == LAST_RESORT)
        n--;
    return n;
}

bool memory_has_mappable_device_memory(const VkPhysicalDeviceMemoryProperties *mp)
{
    const VkMemoryPropertyFlags mappable = DL | HV | HC;
    for (uint32_t i = 0; i < mp->memoryTypeCount && i < VK_MAX_MEMORY_TYPES; i++) {
        VkMemoryPropertyFlags f = mp->memoryTypes[i].propertyFlags;
        if ((f & mappable) == mappable && !(f & unusable_flags))
            return true;
    }
    return false;
}

VkMappedMemoryRange memory_atom_range(VkDeviceMemory memory, VkDeviceSize offset,
                                      VkDeviceSize bytes, VkDeviceSize atom,
                                      VkDeviceSize allocation_size)
{
    if (atom == 0)
        atom = 1;
    VkDeviceSize begin = offset - offset % atom;
    VkDeviceSize end = offset + bytes;
    if (end % atom)
        end += atom - end % atom;
    VkMappedMemoryRange range = {
        .sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
        .memory = memory,
        .offset = begin,
        .size = end >= allocation_size ? VK_WHOLE_SIZE : end - begin,
    };
    return range;
}

/* The largest shared block of a type: MEMORY_BLOCK_BYTES, 1/16 of a small heap,
 * never more than one allocation may be. */
static VkDeviceSize full_block_size(const VkPhysicalDeviceMemoryProperties *mp, uint32_t type,
                                    VkDeviceSize max_allocation)
{
    VkDeviceSize heap = mp->memoryHeaps[mp->memoryTypes[type].heapIndex].size;
    VkDeviceSize block = MEMORY_BLOCK_BYTES;
    if (heap < MEMORY_SMALL_HEAP_BYTES && heap / MEMORY_SMALL_HEAP_FRACTION < block)
        block = heap / MEMORY_SMALL_HEAP_FRACTION;
    if (max_allocation && max_allocation < block)
        block = max_allocation;
    return block;
}

VkDeviceSize memory_dedicated_above(const VkPhysicalDeviceMemoryProperties *mp, uint32_t type,
                                    VkDeviceSize max_allocation)
{
    return full_block_size(mp, type, max_allocation) / 2;
}

VkDeviceSize memory_block_size(const VkPhysicalDeviceMemoryProperties *mp, uint32_t type,
                               VkDeviceSize size, uint32_t blocks_made,
                               VkDeviceSize max_allocation)
{
    VkDeviceSize full = full_block_size(mp, type, max_allocation);
    if (size > full / 2)
        return 0;
    VkDeviceSize block = full / MEMORY_FIRST_BLOCK_FRACTION;
    if (block == 0)
        block = full;
    for (uint32_t i = 0; i < blocks_made && block < full; i++)
        block *= 2;
    while (block < size)
        block *= 2;
    return block < full ? block : full;
}
