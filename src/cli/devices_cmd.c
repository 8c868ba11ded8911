/* vkattn devices: the Vulkan devices vkattn can run on. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *type_name(vkattn_device_type t)
{
    switch (t) {
    case VKATTN_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VKATTN_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VKATTN_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VKATTN_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
    }
}

int run_devices(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            puts("usage: vkattn devices\n\nLists the Vulkan devices vkattn can use (Vulkan 1.1 "
                 "with a compute queue),\nwith the index --device takes, and which one a context "
                 "picks by default.");
            return 0;
        }
        return cli_error("devices", EXIT_USAGE, "unknown option %s (see --help)", argv[i]);
    }
    uint32_t count = 0;
    vkattn_list_devices(NULL, 0, &count);
    vkattn_device_info *infos = calloc(count ? count : 1, sizeof *infos);
    if (!infos)
        return cli_error("devices", EXIT_RUNTIME, "out of memory");
    vkattn_list_devices(infos, count, &count);
    /* The default choice, as a context makes it (VKATTN_DEVICE, else the best type). */
    vkattn_context *ctx = NULL;
    vkattn_device_info chosen = {0};
    vkattn_context_desc cd = {.backend = VKATTN_BACKEND_AUTO};
    if (vkattn_context_create(&cd, &ctx) == VKATTN_OK)
        vkattn_context_info(ctx, &chosen);
    vkattn_context_destroy(ctx);

    if (count == 0)
        puts("no Vulkan device: vkattn runs on its CPU reference backend");
    for (uint32_t i = 0; i < count; i++) {
        const vkattn_device_info *d = &infos[i];
        bool is_default = chosen.backend == VKATTN_BACKEND_VULKAN && chosen.index == i;
        printf("%u%s %s\n", i, is_default ? "*" : " ", d->name);
        printf("    %s, %s, driver %s %s (%s), Vulkan %u.%u.%u\n", type_name(d->type), d->vendor,
               d->driver_name, d->driver_info, d->driver_version, VK_API_VERSION_MAJOR(d->api_version),
               VK_API_VERSION_MINOR(d->api_version), VK_API_VERSION_PATCH(d->api_version));
        printf("    subgroup %u (sizes %u-%u, %s)%s, shared memory %u B, max storage buffer "
               "%llu B, 16-bit storage %s, fp16 %s, cooperative matrix %s, bf16 matrices %s, "
               "pipeline statistics %s\n",
               d->subgroup_size, d->subgroup_size_min, d->subgroup_size_max,
               d->subgroup_size_required ? "can be required" : "cannot be required",
               d->subgroup_arithmetic ? " (arithmetic)" : "",
               d->shared_memory_bytes, (unsigned long long)d->max_storage_buffer_range,
               d->storage_16bit ? "yes" : "no", d->float16_arithmetic ? "yes" : "no",
               !d->cooperative_matrix ? "no" : d->cooperative_matrix_khr ? "yes (KHR)" : "yes (NV)",
               d->bf16_cooperative_matrix ? "yes" : "no",
               d->pipeline_statistics ? "yes" : "no");
    }
    if (count)
        puts("(* the default: VKATTN_DEVICE if set, else the best device type)");
    free(infos);
    return 0;
}
