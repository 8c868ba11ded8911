/* The fault wrapper's memory layouts: the wrapper can present the device as
 * having memory types and heaps it does not have (a discrete GPU's VRAM, system
 * memory and 256 MiB BAR, say) over the ones it has. vkattn then chooses among
 * the presented types as it would on that device, and each allocation in a
 * presented type is made in the real type behind it (on lavapipe, its one
 * type). So the paths a one-type device never takes run here under
 * validation: a tensor in VRAM the host cannot map, staging in other types
 * than the tensor's, a full type passed over for the next, a map refused in one
 * type and taken in another. A presented type can also be made to refuse
 * allocations or maps. Counts per presented type say where memory went. One
 * device at a time, one thread. */
#ifndef VKATTN_FAULT_MEMORY_LAYOUT_H
#define VKATTN_FAULT_MEMORY_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

/* From now, vkGetPhysicalDeviceMemoryProperties reports `layout` (NULL: the
 * device's own again, with no refusals). Each presented type is backed by the
 * first real type that is host-visible, coherent and cached where it is (or,
 * lacking one, the first real type), so it must be presented before a context
 * queries the device. Clears the refusals and counts. */
void fault_memory_present(const VkPhysicalDeviceMemoryProperties *layout);
/* From now, allocations in presented type `type` fail with `allocations`,
 * and maps of its memory with `maps` (VK_SUCCESS: not refused). */
void fault_memory_refuse(uint32_t type, VkResult allocations, VkResult maps);
/* Allocations in presented type `type` made since fault_memory_present, and
 * the largest of them in bytes. */
uint32_t fault_memory_made(uint32_t type, VkDeviceSize *largest);
/* Allocations in presented type `type` live now. */
uint32_t fault_memory_live(uint32_t type);
/* Ranges of presented type `type`'s memory flushed, and invalidated, since
 * fault_memory_present. */
uint32_t fault_memory_flushed(uint32_t type);
uint32_t fault_memory_invalidated(uint32_t type);
/* Allocations and maps in presented type `type` refused as told, since
 * fault_memory_present: the refusal was met. */
uint32_t fault_memory_refused(uint32_t type);

/* For fault_vulkan.c's wrappers. */
void fault_memory_report(VkPhysicalDeviceMemoryProperties *properties);
void fault_memory_translate_bits(uint32_t *memory_type_bits);
/* The real type behind presented `type` (itself where no layout is
 * presented), or the refusal (not VK_SUCCESS). */
VkResult fault_memory_backing(uint32_t type, uint32_t *real_type);
void fault_memory_allocated(VkDeviceMemory memory, uint32_t type, VkDeviceSize size);
void fault_memory_freed(VkDeviceMemory memory);
VkResult fault_memory_map_refusal(VkDeviceMemory memory);
void fault_memory_synced(VkDeviceMemory memory, bool flush);

#endif
