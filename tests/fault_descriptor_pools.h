/* Descriptor pools that keep to their maxSets, for the fault-injecting
 * dispatch (fault_vulkan.c): a driver may hand out sets past a pool's limit
 * (lavapipe does; NVIDIA's and AMD's do not), and vkattn's code for full pools
 * (more pools, then running the stream to reset them) would never run here.
 * The wrapper counts each pool's sets from its creation or last reset and
 * answers VK_ERROR_OUT_OF_POOL_MEMORY past the limit, as such a driver does.
 * One device at a time, one thread. */
#ifndef VKATTN_FAULT_DESCRIPTOR_POOLS_H
#define VKATTN_FAULT_DESCRIPTOR_POOLS_H

#include <stdbool.h>
#include <vulkan/vulkan.h>

void set_pools_created(VkDescriptorPool pool, uint32_t max_sets);
/* Whether `count` more sets fit in `pool` (and counts them if so). */
bool set_pools_take(VkDescriptorPool pool, uint32_t count);
void set_pools_reset(VkDescriptorPool pool);
void set_pools_destroyed(VkDescriptorPool pool);
/* The most pools that were alive at once, and how often one was full, since
 * the last call (a test's proof that its stream got that far). */
void set_pools_stats(uint32_t *most_alive, long *full_answers);

#endif
