/* A fault-injecting Vulkan dispatch for the failure tests: an application hands
 * vkattn fault_get_instance_proc_addr instead of the loader's, and every
 * fallible entry point vkattn loads through it counts its calls; the armed one
 * returns an error instead of calling the driver. Object creations and
 * destructions are counted, so a test can check that everything vkattn created
 * was destroyed. Compute pipelines are kept and handed out again
 * (fault_pipeline_pool.h); descriptor pools keep to their maxSets as a GPU
 * driver's do (fault_descriptor_pools.h). The device's memory can be presented
 * as another device's (fault_memory_layout.h). One device at a time, one
 * thread. */
#ifndef VKATTN_FAULT_VULKAN_H
#define VKATTN_FAULT_VULKAN_H

#include <stdbool.h>
#include <vulkan/vulkan.h>

/* The real vkGetInstanceProcAddr that the wrapper forwards to. */
void fault_install(PFN_vkGetInstanceProcAddr real);
/* What vkattn_vulkan_handles.get_instance_proc_addr gets. */
VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fault_get_instance_proc_addr(VkInstance instance,
                                                                     const char *name);

/* The n-th fallible call from now fails (counting from 1); 0 disarms. A failed
 * vkQueueSubmit or vkWaitForFences loses the device: every later submit, wait
 * and idle call fails with VK_ERROR_DEVICE_LOST until fault_arm again. */
void fault_arm(long n);
/* The n-th call of the entry point `entry_point` ("vkQueueSubmit", say) from
 * now fails instead; fault_arm disarms it. */
void fault_arm_entry(const char *entry_point, long n);
/* From now, vkAllocateMemory fails with VK_ERROR_TOO_MANY_OBJECTS while `max`
 * allocations are live, as a driver may at maxMemoryAllocationCount (4096 on
 * some); 0 lifts the cap. Also restarts the count of the most allocations live
 * at once, which fault_allocations_peak returns. */
void fault_cap_allocations(long max);
long fault_allocations_peak(void);
/* Memory allocations live now. */
long fault_live_allocations(void);
/* Fallible calls since fault_arm. */
long fault_calls(void);
/* Whether the armed call has failed, and with what (and which entry point). */
bool fault_fired(VkResult *result, const char **entry_point);
/* Objects created through the wrapper and not yet destroyed (all kinds), and
 * the kind of one of them ("" if none). */
long fault_live_objects(const char **kind);
/* Destroys the compute pipelines the wrapper kept after vkattn destroyed them,
 * and the pipeline layouts kept for them (fault_pipeline_pool.h): before the
 * application destroys its device. */
void fault_release_pipelines(void);

#endif
