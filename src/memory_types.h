/* Which memory type a buffer goes in, and which bytes a flush covers: pure
 * functions over the device's reported memory layout, no Vulkan calls, so the
 * layouts of devices this machine does not have (a discrete GPU with a 256 MiB
 * PCIe BAR) are unit-tested with synthetic VkPhysicalDeviceMemoryProperties. */
#ifndef VKATTN_MEMORY_TYPES_H
#define VKATTN_MEMORY_TYPES_H

#include <stdbool.h>
#include <stdint.h>
#include <vulkan/vulkan_core.h>

typedef enum memory_use {
    MEMORY_DEVICE,        /* a tensor the host never maps: device-local, not host-visible */
    MEMORY_DEVICE_MAPPED, /* a tensor the host maps (shared-memory devices): host-visible */
    MEMORY_UPLOAD,        /* staging the host writes and a copy reads */
    MEMORY_DOWNLOAD,      /* staging a copy writes and the host reads: cached preferred */
} memory_use;

/* A heap smaller than this is "small": a PCIe BAR window (256 MiB on discrete
 * GPUs without resizable BAR) or an integrated GPU's carve-out. */
#define MEMORY_SMALL_HEAP_BYTES ((VkDeviceSize)1 << 30)
/* A buffer larger than this fraction of a small heap never goes in a
 * device-local host-visible type there while any other type can hold it: 16 MiB
 * of a 256 MiB BAR. The window is shared with the driver, other processes and
 * the application's own uploads, and one attention call holds several tensors. */
#define MEMORY_SMALL_HEAP_FRACTION 16

/* The memory types a buffer of `size` bytes for `use` may be allocated in, best
 * first: only types in `allowed` (VkMemoryRequirements.memoryTypeBits), never
 * protected, lazily allocated or AMD device-coherent ones (vkattn enables no
 * feature for them). The next entry is where to retry when an allocation fails
 * for lack of memory. Returns the count written to `order` (0: none usable). */
uint32_t memory_types_ranked(const VkPhysicalDeviceMemoryProperties *mp, uint32_t allowed,
                             memory_use use, VkDeviceSize size,
                             uint32_t order[VK_MAX_MEMORY_TYPES]);

/* Whether the device has memory that is device-local, host-visible and
 * host-coherent: where tensors of a shared-memory device can be mapped. */
bool memory_has_mappable_device_memory(const VkPhysicalDeviceMemoryProperties *mp);

/* The range of `memory` (an allocation of `allocation_size` bytes, mapped whole)
 * that vkFlushMappedMemoryRanges or vkInvalidateMappedMemoryRanges needs for
 * bytes [offset, offset + bytes): the offset rounded down and the end rounded up
 * to `atom` (nonCoherentAtomSize), VK_WHOLE_SIZE where that reaches the end of
 * the allocation, as the spec requires. */
VkMappedMemoryRange memory_atom_range(VkDeviceMemory memory, VkDeviceSize offset,
                                      VkDeviceSize bytes, VkDeviceSize atom,
                                      VkDeviceSize allocation_size);

/* Buffers share blocks of device memory taken from the driver (memory_pool.c):
 * drivers cap the number of allocations (maxMemoryAllocationCount: 4096 on some)
 * and each costs a call into the kernel. A heap's blocks are 64 MiB, or 1/16 of
 * a small heap (the size no single buffer in a BAR may exceed); the first block of
 * a type is 1/8 of that and each further one doubles, up to it, so a context with
 * a few small tensors holds little. */
#define MEMORY_BLOCK_BYTES ((VkDeviceSize)64 << 20)
#define MEMORY_FIRST_BLOCK_FRACTION 8

/* The size of the next shared block of memory type `type` for a request of
 * `size` bytes (alignment included), when `blocks_made` shared blocks of that
 * type were made before; `max_allocation` (maxMemoryAllocationSize, 0: none)
 * caps it. 0 where the request should have a block of its own
 * (memory_dedicated_above). */
VkDeviceSize memory_block_size(const VkPhysicalDeviceMemoryProperties *mp, uint32_t type,
                               VkDeviceSize size, uint32_t blocks_made,
                               VkDeviceSize max_allocation);

/* Requests larger than this get an allocation of their own: half a block, so a
 * shared block never holds less than two of the largest buffers it takes. */
VkDeviceSize memory_dedicated_above(const VkPhysicalDeviceMemoryProperties *mp, uint32_t type,
                                    VkDeviceSize max_allocation);

#endif /* VKATTN_MEMORY_TYPES_H */
