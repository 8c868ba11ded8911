/* Memory layouts presented over the device's own (fault_memory_layout.h). */
#include "fault_memory_layout.h"

#include <stdlib.h>

static bool presenting;
static VkPhysicalDeviceMemoryProperties presented;
static uint32_t backing[VK_MAX_MEMORY_TYPES]; /* presented type -> real type */
static VkResult refused_allocations[VK_MAX_MEMORY_TYPES], refused_maps[VK_MAX_MEMORY_TYPES];
static uint32_t made[VK_MAX_MEMORY_TYPES], live_in[VK_MAX_MEMORY_TYPES];
static VkDeviceSize largest[VK_MAX_MEMORY_TYPES];
static uint32_t flushed[VK_MAX_MEMORY_TYPES], invalidated[VK_MAX_MEMORY_TYPES];
static uint32_t refused[VK_MAX_MEMORY_TYPES]; /* allocations and maps refused */

/* Live allocations and their presented types, for maps and frees. */
typedef struct allocation {
    VkDeviceMemory memory;
    uint32_t type;
} allocation;
static allocation *allocations;
static size_t allocation_count, allocation_capacity;

void fault_memory_present(const VkPhysicalDeviceMemoryProperties *layout)
{
    presenting = layout != NULL;
    if (layout)
        presented = *layout;
    for (uint32_t i = 0; i < VK_MAX_MEMORY_TYPES; i++) {
        backing[i] = i;
        refused_allocations[i] = refused_maps[i] = VK_SUCCESS;
        made[i] = 0, largest[i] = 0, flushed[i] = 0, invalidated[i] = 0, refused[i] = 0;
    }
}

void fault_memory_refuse(uint32_t type, VkResult allocations_result, VkResult maps_result)
{
    refused_allocations[type] = allocations_result;
    refused_maps[type] = maps_result;
}

uint32_t fault_memory_made(uint32_t type, VkDeviceSize *largest_bytes)
{
    if (largest_bytes)
        *largest_bytes = largest[type];
    return made[type];
}

uint32_t fault_memory_live(uint32_t type) { return live_in[type]; }
uint32_t fault_memory_flushed(uint32_t type) { return flushed[type]; }
uint32_t fault_memory_invalidated(uint32_t type) { return invalidated[type]; }
uint32_t fault_memory_refused(uint32_t type) { return refused[type]; }

/* The real type that has every host property `want` has, else the first. */
static uint32_t real_type_for(const VkPhysicalDeviceMemoryProperties *real,
                              VkMemoryPropertyFlags want)
{
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                                       VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    for (uint32_t i = 0; i < real->memoryTypeCount; i++)
        if ((real->memoryTypes[i].propertyFlags & (want & host)) == (want & host))
            return i;
    return 0;
}

void fault_memory_report(VkPhysicalDeviceMemoryProperties *properties)
{
    if (!presenting)
        return;
    for (uint32_t i = 0; i < presented.memoryTypeCount; i++)
        backing[i] = real_type_for(properties, presented.memoryTypes[i].propertyFlags);
    *properties = presented;
}

void fault_memory_translate_bits(uint32_t *memory_type_bits)
{
    if (!presenting)
        return;
    uint32_t bits = 0;
    for (uint32_t i = 0; i < presented.memoryTypeCount; i++)
        if (*memory_type_bits & (1u << backing[i]))
            bits |= 1u << i;
    *memory_type_bits = bits;
}

VkResult fault_memory_backing(uint32_t type, uint32_t *real_type)
{
    *real_type = type;
    if (!presenting || type >= VK_MAX_MEMORY_TYPES)
        return VK_SUCCESS;
    *real_type = backing[type];
    if (refused_allocations[type] != VK_SUCCESS)
        refused[type]++;
    return refused_allocations[type];
}

void fault_memory_allocated(VkDeviceMemory memory, uint32_t type, VkDeviceSize size)
{
    if (allocation_count == allocation_capacity) {
        size_t capacity = allocation_capacity ? allocation_capacity * 2 : 64;
        allocation *grown = realloc(allocations, capacity * sizeof *grown);
        if (!grown)
            abort(); /* a test helper: no way to report it */
        allocations = grown, allocation_capacity = capacity;
    }
    allocations[allocation_count++] = (allocation){memory, type};
    made[type]++, live_in[type]++;
    if (size > largest[type])
        largest[type] = size;
}

static allocation *find(VkDeviceMemory memory)
{
    for (size_t i = 0; i < allocation_count; i++)
        if (allocations[i].memory == memory)
            return &allocations[i];
    return NULL;
}

void fault_memory_freed(VkDeviceMemory memory)
{
    allocation *a = find(memory);
    if (!a)
        return;
    live_in[a->type]--;
    *a = allocations[--allocation_count];
}

VkResult fault_memory_map_refusal(VkDeviceMemory memory)
{
    const allocation *a = find(memory);
    if (!a || refused_maps[a->type] == VK_SUCCESS)
        return VK_SUCCESS;
    refused[a->type]++;
    return refused_maps[a->type];
}

void fault_memory_synced(VkDeviceMemory memory, bool flush)
{
    const allocation *a = find(memory);
    if (a)
        (flush ? flushed : invalidated)[a->type]++;
}
