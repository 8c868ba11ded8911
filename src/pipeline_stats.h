/* A compiled pipeline's statistics as the driver reports them through
 * VK_KHR_pipeline_executable_properties (registers, spills, shared memory:
 * whatever the driver names), formatted into one log line. Pure functions, no
 * Vulkan calls, so the formatting is unit-tested on devices without the
 * extension (lavapipe has none). */
#ifndef VKATTN_PIPELINE_STATS_H
#define VKATTN_PIPELINE_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan_core.h>

/* The length of a driver's name or description array (VK_MAX_DESCRIPTION_SIZE
 * chars), which need not be NUL-terminated when full. */
size_t pipeline_stats_name_length(const char *name);

/* Appends "name=value" for each of `count` statistics to `out` (NUL-terminated,
 * `size` bytes), separated by ", ", a statistic's name with its spaces kept:
 * booleans as yes/no, integers in decimal, floats with up to 6 significant
 * digits. Whatever does not fit is cut off and the line ends in "...". Returns
 * the length written. */
size_t pipeline_stats_format(const VkPipelineExecutableStatisticKHR *stats, uint32_t count,
                             char *out, size_t size);

#endif
