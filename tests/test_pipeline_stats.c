/* The pipeline-statistics line (pipeline_stats.c) on synthetic statistics of
 * the kinds drivers report: lavapipe has no VK_KHR_pipeline_executable_properties,
 * so this is the only part of that diagnostic that runs here. Compiles
 * src/pipeline_stats.c directly: no GPU needed, always runs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "pipeline_stats.h"

static VkPipelineExecutableStatisticKHR statistic(const char *name,
                                                  VkPipelineExecutableStatisticFormatKHR format)
{
    VkPipelineExecutableStatisticKHR s = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR, .format = format};
    strncpy(s.name, name, sizeof s.name);
    return s;
}

static void test_every_format(void **state)
{
    (void)state;
    VkPipelineExecutableStatisticKHR stats[4] = {
        statistic("Register Count", VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR),
        statistic("Spills", VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR),
        statistic("Occupancy", VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR),
        statistic("Uses Shared", VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR),
    };
    stats[0].value.u64 = 18446744073709551615ull;
    stats[1].value.i64 = -3;
    stats[2].value.f64 = 0.1234567;
    stats[3].value.b32 = VK_TRUE;
    char line[256];
    size_t n = pipeline_stats_format(stats, 4, line, sizeof line);
    assert_string_equal(line, "Register Count=18446744073709551615, Spills=-3, "
                              "Occupancy=0.123457, Uses Shared=yes");
    assert_int_equal(n, strlen(line));
    stats[3].value.b32 = VK_FALSE;
    pipeline_stats_format(stats + 3, 1, line, sizeof line);
    assert_string_equal(line, "Uses Shared=no");
    pipeline_stats_format(stats, 0, line, sizeof line);
    assert_string_equal(line, "");
}

/* A name filling the whole array, unterminated, as the spec allows. */
static void test_unterminated_name(void **state)
{
    (void)state;
    VkPipelineExecutableStatisticKHR s =
        statistic("", VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR);
    memset(s.name, 'r', sizeof s.name);
    s.value.u64 = 7;
    char line[VK_MAX_DESCRIPTION_SIZE + 16];
    pipeline_stats_format(&s, 1, line, sizeof line);
    assert_int_equal(strlen(line), VK_MAX_DESCRIPTION_SIZE + 2);
    assert_string_equal(line + VK_MAX_DESCRIPTION_SIZE, "=7");
}

/* A line too long for its buffer is cut off and says so. */
static void test_cut_off(void **state)
{
    (void)state;
    VkPipelineExecutableStatisticKHR stats[3];
    for (int i = 0; i < 3; i++) {
        stats[i] = statistic("Instructions", VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR);
        stats[i].value.u64 = 1000u + (uint64_t)i;
    }
    char line[32];
    memset(line, 'x', sizeof line);
    size_t n = pipeline_stats_format(stats, 3, line, sizeof line);
    assert_int_equal(n, sizeof line - 1);
    assert_int_equal(strlen(line), sizeof line - 1);
    assert_memory_equal(line, "Instructions=1000, Instruc", 26);
    assert_string_equal(line + sizeof line - 4, "...");
    char tiny[2] = {'x', 'x'};
    assert_int_equal(pipeline_stats_format(stats, 3, tiny, sizeof tiny), 1);
    assert_int_equal(tiny[1], '\0');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_format),
        cmocka_unit_test(test_unterminated_name),
        cmocka_unit_test(test_cut_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
