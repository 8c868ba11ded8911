/* Formatting of pipeline statistics (pipeline_stats.h). */
#include "pipeline_stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

size_t pipeline_stats_name_length(const char *name)
{
    size_t n = 0;
    while (n < VK_MAX_DESCRIPTION_SIZE && name[n])
        n++;
    return n;
}

static int format_value(const VkPipelineExecutableStatisticKHR *s, char *out, size_t size)
{
    switch (s->format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
        return snprintf(out, size, "%s", s->value.b32 ? "yes" : "no");
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
        return snprintf(out, size, "%" PRId64, s->value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
        return snprintf(out, size, "%" PRIu64, s->value.u64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR:
        return snprintf(out, size, "%.6g", s->value.f64);
    default:
        return snprintf(out, size, "?");
    }
}

size_t pipeline_stats_format(const VkPipelineExecutableStatisticKHR *stats, uint32_t count,
                             char *out, size_t size)
{
    if (size == 0)
        return 0;
    out[0] = '\0';
    size_t len = 0;
    for (uint32_t i = 0; i < count; i++) {
        char value[64];
        format_value(&stats[i], value, sizeof value);
        /* The driver's name is a fixed array that need not be terminated. */
        int name_len = (int)pipeline_stats_name_length(stats[i].name);
        int n = snprintf(out + len, size - len, "%s%.*s=%s", i ? ", " : "", name_len,
                         stats[i].name, value);
        if (n < 0 || (size_t)n >= size - len) {
            /* Cut off: end in "..." where there is room for it. */
            len = size - 1;
            if (size > 4)
                memcpy(out + size - 4, "...", 4);
            else
                out[len] = '\0';
            return strlen(out);
        }
        len += (size_t)n;
    }
    return len;
}
