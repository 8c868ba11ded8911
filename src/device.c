/* Choosing the physical device, creating the logical device vkattn owns (with
 * the features its kernels use), adopting an application's, and destroying. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ choice ---- */

static int type_rank(vkattn_device_type t)
{
    switch (t) {
    case VKATTN_DEVICE_TYPE_DISCRETE_GPU: return 4;
    case VKATTN_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case VKATTN_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VKATTN_DEVICE_TYPE_CPU: return 1;
    default: return 0;
    }
}

/* Index into `devices` by the selector (an index or a name substring), or the
 * best by type when `selector` is NULL. UINT32_MAX when nothing matches. */
static uint32_t choose_device(const vk_instance_table *vki, VkPhysicalDevice *devices, uint32_t n,
                              const char *selector)
{
    if (selector && *selector) {
        char *end;
        unsigned long index = strtoul(selector, &end, 10);
        if (*end == '\0')
            return index < n ? (uint32_t)index : UINT32_MAX;
        for (uint32_t i = 0; i < n; i++) {
            VkPhysicalDeviceProperties p;
            vki->GetPhysicalDeviceProperties(devices[i], &p);
            if (strstr(p.deviceName, selector))
                return i;
        }
        return UINT32_MAX;
    }
    uint32_t best = UINT32_MAX;
    int best_rank = -1;
    for (uint32_t i = 0; i < n; i++) {
        VkPhysicalDeviceProperties p;
        vki->GetPhysicalDeviceProperties(devices[i], &p);
        int rank = type_rank(vk_device_type_of(p.deviceType));
        if (rank > best_rank) {
            best_rank = rank;
            best = i;
        }
    }
    return best;
}

/* ------------------------------------------------- logical device -------- */

static vkattn_status create_logical_device(vkattn_context *ctx)
{
    vk_state *vk = &ctx->vk;
    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = vk->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    VkDeviceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue,
    };
    vkattn_device_features features;
    device_caps_features(&vk->caps, &features);
    /* the features' extensions, pipeline statistics', bf16's, one optional
     * (device_create_with_optional) */
    const char *extensions[sizeof features.extensions / sizeof features.extensions[0] + 3];
    memcpy(extensions, features.extensions, features.extension_count * sizeof extensions[0]);
    uint32_t extension_count = features.extension_count;
    info.pNext = features.chain;
    /* Pipeline statistics only for a profiling context: a diagnostic that
     * the kernels never need (and that drivers may pay for at compile time). */
    bool statistics = vk->caps.pipeline_statistics && ctx->profile.wanted;
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable_info = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pNext = features.chain,
        .pipelineExecutableInfo = VK_TRUE,
    };
    if (statistics) {
        info.pNext = &executable_info;
        extensions[extension_count++] = "VK_KHR_pipeline_executable_properties";
    }
    /* VK_KHR_shader_bfloat16's matrices where the kernels take the KHR
     * extension and the device lists bf16 shapes (queried only where no
     * validation layer older than the extension would flag its structure):
     * the coopmat kernel's bf16 build (coopmat.bf16=2) needs them. */
    bool bf16 = vk->caps.coopmat_khr && vk->caps.bf16_shape_count > 0; /* none without coopmat */
    VkPhysicalDeviceShaderBfloat16FeaturesKHR bf16_features = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR,
        .pNext = (void *)info.pNext,
        .shaderBFloat16Type = VK_TRUE,
        .shaderBFloat16CooperativeMatrix = VK_TRUE,
    };
    if (bf16) {
        info.pNext = &bf16_features;
        extensions[extension_count++] = VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME;
    }
    /* maintenance4 for the SPIR-V 1.6 forms of the modules built twice
     * (shader_code.spirv16: LocalSizeId needs it), on a Vulkan 1.3 device of a
     * Vulkan 1.3 instance (SPIR-V 1.6's version), unless VKATTN_SPIRV16=0. */
    const char *spirv16_env = getenv("VKATTN_SPIRV16");
    bool spirv16 = vk->caps.maintenance4 && vk->instance_api_version >= VK_API_VERSION_1_3 &&
                   !(spirv16_env && strcmp(spirv16_env, "0") == 0);
    VkPhysicalDeviceMaintenance4Features maintenance4 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES,
        .pNext = (void *)info.pNext,
        .maintenance4 = VK_TRUE,
    };
    if (spirv16)
        info.pNext = &maintenance4;
    /* VK_NV_cooperative_matrix2's workgroup scope and flexible dimensions,
     * only where asked for until a GPU check has run them: the rate and
     * layout probes (VKATTN_COOPMAT_PEAK=1, VKATTN_COOPMAT_LAYOUT=1) and the
     * workgroup-scope attention kernel (VKATTN_COOPMAT_WORKGROUP=1). */
    bool workgroup_scope = device_caps_workgroup_scope_wanted(
        &vk->caps, coopmat_peak_wanted() || coopmat_layout_wanted() ||
                       env_is_one("VKATTN_COOPMAT_WORKGROUP"));
    VkPhysicalDeviceCooperativeMatrix2FeaturesNV coopmat2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV,
        .cooperativeMatrixWorkgroupScope = VK_TRUE,
        .cooperativeMatrixFlexibleDimensions = VK_TRUE,
    };
    VkResult optional_result;
    VkResult r = device_create_with_optional(
        &vk->vki, vk->physical_device, info, extensions, extension_count,
        workgroup_scope ? &coopmat2 : NULL, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME,
        &optional_result, &vk->device);
    if (optional_result != VK_SUCCESS) {
        ctx_log(ctx, VKATTN_LOG_WARNING, "vkCreateDevice with VK_NV_cooperative_matrix2's "
                "workgroup scope (for the probes or VKATTN_COOPMAT_WORKGROUP) failed "
                "(VkResult %d); %s without it",
                (int)optional_result, r == VK_SUCCESS ? "created" : "tried once more");
        workgroup_scope = false;
    }
    if (r != VK_SUCCESS)
        return ctx_fail_vk(ctx, r, "vkCreateDevice");
    vk->owns_device = true;
    vk->enabled = vk->caps;
    vk->enabled.pipeline_statistics = statistics;
    vk->enabled.coopmat2_workgroup = workgroup_scope;
    vk->enabled.maintenance4 = spirv16;
    vk->spirv16 = spirv16;
    vk->spirv16_refused = spirv16 && spirv16_env && strcmp(spirv16_env, "refused") == 0;
    ctx_log(ctx, VKATTN_LOG_INFO, "SPIR-V 1.6 forms of the modules built twice: %s",
            spirv16 ? (vk->spirv16_refused ? "taken, refused on purpose (VKATTN_SPIRV16=refused)"
                                           : "taken (Vulkan 1.3, maintenance4 enabled)")
                    : !vk->caps.maintenance4 ? "not taken (the device lacks maintenance4)"
                    : vk->instance_api_version < VK_API_VERSION_1_3
                        ? "not taken (the loader gives a Vulkan 1.1 or 1.2 instance)"
                        : "not taken (VKATTN_SPIRV16=0)");
    if (!bf16)
        vk->enabled.bf16_shape_count = 0;
    return VKATTN_OK;
}

static vkattn_status finish_device_setup(vkattn_context *ctx)
{
    vk_state *vk = &ctx->vk;
    if (!vk_load_device_table(&vk->vkd, vk->vki.GetDeviceProcAddr, vk->device))
        return ctx_fail(ctx, VKATTN_ERROR_VULKAN, "a core Vulkan 1.1 device function is missing");
    if (!vk->queue)
        vk->vkd.GetDeviceQueue(vk->device, vk->queue_family, 0, &vk->queue);
    return VKATTN_OK;
}

vkattn_status vk_device_create_owned(vkattn_context *ctx, const vkattn_context_desc *desc)
{
    vk_state *vk = &ctx->vk;
    vkattn_status s = vk_instance_create_owned(ctx, desc->validation);
    if (s != VKATTN_OK)
        return s;

    VkPhysicalDevice *devices;
    uint32_t n;
    s = vk_usable_devices(&vk->vki, vk->instance, &devices, &n);
    if (s != VKATTN_OK)
        return ctx_fail(ctx, s, "enumerating Vulkan devices");
    const char *selector = desc->device ? desc->device : getenv("VKATTN_DEVICE");
    uint32_t chosen = choose_device(&vk->vki, devices, n, selector);
    if (chosen == UINT32_MAX) {
        free(devices);
        if (n == 0)
            return ctx_fail(ctx, VKATTN_ERROR_NO_DEVICE, "no Vulkan 1.1 device with a compute queue");
        return ctx_fail(ctx, VKATTN_ERROR_NO_DEVICE,
                        "device \"%s\" matches none of the %u Vulkan devices "
                        "(give an index or a name substring)", selector, n);
    }
    vk->physical_device = devices[chosen];
    free(devices);
    uint32_t ts_bits = 0;
    vk->queue_family = vk_compute_queue_family(&vk->vki, vk->physical_device, &ts_bits);

    bool validation_enabled = ctx->info.validation_enabled;
    vk_device_query(ctx);
    ctx->info.validation_enabled = validation_enabled;
    ctx->info.index = chosen;
    s = create_logical_device(ctx);
    if (s != VKATTN_OK)
        return s;
    return finish_device_setup(ctx);
}

vkattn_status vk_device_adopt(vkattn_context *ctx, const vkattn_vulkan_handles *h)
{
    vk_state *vk = &ctx->vk;
    if (!h->instance || !h->physical_device || !h->device || !h->queue ||
        !h->get_instance_proc_addr)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "adopt: instance, physical_device, device, queue and "
                        "get_instance_proc_addr are all required");
    vk->instance = h->instance;
    vk->physical_device = h->physical_device;
    vk->device = h->device;
    vk->queue = h->queue;
    vk->queue_family = h->queue_family_index;
    vk_load_instance_table(&vk->vki, h->get_instance_proc_addr, h->instance);
    if (!vk_instance_table_complete(&vk->vki))
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED,
                        "adopt: the instance lacks a Vulkan 1.1 function (create it with "
                        "apiVersion >= VK_API_VERSION_1_1)");

    VkPhysicalDeviceProperties p;
    vk->vki.GetPhysicalDeviceProperties(h->physical_device, &p);
    if (p.apiVersion < VK_API_VERSION_1_1)
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "adopt: %s supports Vulkan %u.%u, need 1.1",
                        p.deviceName, VK_API_VERSION_MAJOR(p.apiVersion),
                        VK_API_VERSION_MINOR(p.apiVersion));
    uint32_t n = 0;
    vk->vki.GetPhysicalDeviceQueueFamilyProperties(h->physical_device, &n, NULL);
    VkQueueFamilyProperties families[64];
    if (n > 64)
        n = 64;
    vk->vki.GetPhysicalDeviceQueueFamilyProperties(h->physical_device, &n, families);
    if (h->queue_family_index >= n ||
        !(families[h->queue_family_index].queueFlags & VK_QUEUE_COMPUTE_BIT))
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED,
                        "adopt: queue family %u does not support compute", h->queue_family_index);

    vk_device_query(ctx);
    /* The application chose the device's features: only what it says it enabled. */
    vk->enabled = device_caps_enabled(&vk->caps, h->enabled_features);
    ctx->info.subgroup_size_required = vk->enabled.subgroup_size_control;
    ctx->info.pipeline_statistics = false;
    /* vkattn_device_features names no VK_KHR_shader_bfloat16 (the enabled
     * caps keep no bf16 shapes): its matrices are never used here. */
    ctx->info.bf16_cooperative_matrix = false;
    vk->timestamp_valid_bits = families[h->queue_family_index].timestampValidBits;
    ctx->info.timestamps = vk->timestamp_valid_bits > 0 && ctx->info.timestamp_period_ns > 0;
    ctx->info.adopted = true;
    return finish_device_setup(ctx);
}

void vk_device_destroy(vkattn_context *ctx)
{
    vk_state *vk = &ctx->vk;
    if (vk->owns_device && vk->device)
        vk->vkd.DestroyDevice(vk->device, NULL);
    if (vk->messenger)
        vk->vki.DestroyDebugUtilsMessengerEXT(vk->instance, vk->messenger, NULL);
    if (vk->owns_instance && vk->instance)
        vk->vki.DestroyInstance(vk->instance, NULL);
}
