/* What a physical device is and has: the device info and the limits kernels
 * need, which devices are usable, where tensors live, and the public listing
 * and feature queries. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------- device query -- */

static const char *vendor_name(uint32_t vendor_id)
{
    switch (vendor_id) {
    case 0x10de: return "NVIDIA";
    case 0x1002: return "AMD";
    case 0x8086: return "Intel";
    case 0x13b5: return "Arm";
    case 0x5143: return "Qualcomm";
    case 0x106b: return "Apple";
    case 0x1010: return "Imagination";
    case 0x10005: return "Mesa";
    default: return "unknown";
    }
}

static void decode_driver_version(uint32_t vendor_id, uint32_t v, char *out, size_t size)
{
    if (vendor_id == 0x10de) /* NVIDIA: 10.8.8.6 bits */
        snprintf(out, size, "%u.%u.%u.%u", v >> 22, (v >> 14) & 0xff, (v >> 6) & 0xff, v & 0x3f);
    else
        snprintf(out, size, "%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
                 VK_API_VERSION_PATCH(v));
}

static bool has_extension(const VkExtensionProperties *exts, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(exts[i].extensionName, name) == 0)
            return true;
    return false;
}

vkattn_device_type vk_device_type_of(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return VKATTN_DEVICE_TYPE_INTEGRATED_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return VKATTN_DEVICE_TYPE_DISCRETE_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return VKATTN_DEVICE_TYPE_VIRTUAL_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return VKATTN_DEVICE_TYPE_CPU;
    default: return VKATTN_DEVICE_TYPE_OTHER;
    }
}

/* The first queue family with compute, preferring one without graphics (an
 * async-compute queue does not compete with rendering). UINT32_MAX if none. */
uint32_t vk_compute_queue_family(const vk_instance_table *vki, VkPhysicalDevice pd,
                                 uint32_t *timestamp_bits)
{
    uint32_t n = 0;
    vki->GetPhysicalDeviceQueueFamilyProperties(pd, &n, NULL);
    VkQueueFamilyProperties *families = calloc(n ? n : 1, sizeof *families);
    if (!families)
        return UINT32_MAX;
    vki->GetPhysicalDeviceQueueFamilyProperties(pd, &n, families);
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        VkQueueFlags f = families[i].queueFlags;
        if (!(f & VK_QUEUE_COMPUTE_BIT))
            continue;
        if (best == UINT32_MAX || !(f & VK_QUEUE_GRAPHICS_BIT)) {
            best = i;
            *timestamp_bits = families[i].timestampValidBits;
            if (!(f & VK_QUEUE_GRAPHICS_BIT))
                break;
        }
    }
    free(families);
    return best;
}

/* Fills `info` from the physical device; the limits kernels need go to `vk`
 * (which may be a scratch struct when only listing). */
static void query_physical_device(const vk_instance_table *vki, VkPhysicalDevice pd,
                                  vk_state *vk, vkattn_device_info *info)
{
    memset(info, 0, sizeof *info);
    info->backend = VKATTN_BACKEND_VULKAN;

    VkPhysicalDeviceProperties base;
    vki->GetPhysicalDeviceProperties(pd, &base);

    uint32_t ext_count = 0;
    vki->EnumerateDeviceExtensionProperties(pd, NULL, &ext_count, NULL);
    VkExtensionProperties *exts = calloc(ext_count ? ext_count : 1, sizeof *exts);
    if (exts)
        vki->EnumerateDeviceExtensionProperties(pd, NULL, &ext_count, exts);
    else
        ext_count = 0;
    bool v12 = base.apiVersion >= VK_API_VERSION_1_2;
    bool has_driver_props = v12 || has_extension(exts, ext_count, "VK_KHR_driver_properties");

    VkPhysicalDeviceDriverProperties driver = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceIDProperties ids = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES,
        .pNext = has_driver_props ? &driver : NULL};
    VkPhysicalDeviceMaintenance3Properties maintenance3 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
        .pNext = &ids};
    VkPhysicalDeviceSubgroupProperties subgroup = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
        .pNext = &maintenance3};
    VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                         .pNext = &subgroup};
    vki->GetPhysicalDeviceProperties2(pd, &props);

    /* fp16 arithmetic, subgroup size control, cooperative matrices: device_caps.c. */
    VkPhysicalDevice16BitStorageFeatures storage16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceFeatures2 features = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                          .pNext = &storage16};
    vki->GetPhysicalDeviceFeatures2(pd, &features);

    const VkPhysicalDeviceLimits *lim = &base.limits;
    snprintf(info->name, sizeof info->name, "%s", base.deviceName);
    snprintf(info->vendor, sizeof info->vendor, "%s", vendor_name(base.vendorID));
    info->vendor_id = base.vendorID;
    info->device_id = base.deviceID;
    if (has_driver_props) {
        snprintf(info->driver_name, sizeof info->driver_name, "%s", driver.driverName);
        snprintf(info->driver_info, sizeof info->driver_info, "%s", driver.driverInfo);
    }
    decode_driver_version(base.vendorID, base.driverVersion, info->driver_version,
                          sizeof info->driver_version);
    info->api_version = base.apiVersion;
    info->type = vk_device_type_of(base.deviceType);
    info->subgroup_size = subgroup.subgroupSize;
    info->subgroup_arithmetic =
        (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
        (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    vk->subgroup_shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                           (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
    vk->subgroup_vote = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                        (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_VOTE_BIT);
    info->shared_memory_bytes = lim->maxComputeSharedMemorySize;
    info->max_workgroup_invocations = lim->maxComputeWorkGroupInvocations;
    info->max_storage_buffer_range = lim->maxStorageBufferRange;
    info->storage_16bit = storage16.storageBuffer16BitAccess;
    info->timestamp_period_ns = lim->timestampPeriod;
    device_caps_query(vki, pd, base.apiVersion, exts, ext_count, &vk->caps);
    /* What the coopmat kernels need, not just an extension's name: tests and
     * callers force those kernels where this says yes. */
    info->cooperative_matrix = vk->caps.coopmat;
    info->cooperative_matrix_khr = vk->caps.coopmat && vk->caps.coopmat_khr;
    info->bf16_cooperative_matrix = vk->caps.bf16_shape_count > 0;
    info->float16_arithmetic = vk->caps.float16;
    info->subgroup_size_min = vk->caps.subgroup_min;
    info->subgroup_size_max = vk->caps.subgroup_max;
    info->subgroup_size_required = vk->caps.subgroup_size_control;
    info->pipeline_statistics = vk->caps.pipeline_statistics;

    memcpy(vk->device_uuid, ids.deviceUUID, sizeof vk->device_uuid);
    memcpy(vk->pipeline_cache_uuid, base.pipelineCacheUUID, sizeof vk->pipeline_cache_uuid);
    vk->driver_version = base.driverVersion;
    vk->min_storage_offset_alignment = (uint32_t)lim->minStorageBufferOffsetAlignment;
    for (int i = 0; i < 3; i++)
        vk->max_workgroup_count[i] = lim->maxComputeWorkGroupCount[i];
    vk->max_allocation_size = maintenance3.maxMemoryAllocationSize;
    vki->GetPhysicalDeviceMemoryProperties(pd, &vk->memory_properties);
    const VkFormat formats[6] = {VK_FORMAT_R32_SFLOAT,          VK_FORMAT_R16_SFLOAT,
                                 VK_FORMAT_R32G32B32A32_SFLOAT, VK_FORMAT_R16G16B16A16_SFLOAT,
                                 VK_FORMAT_R16_UINT,            VK_FORMAT_R16G16B16A16_UINT};
    bool *usable[6] = {&vk->texel_f32, &vk->texel_f16, &vk->texel4_f32,
                       &vk->texel4_f16, &vk->texel_u16, &vk->texel4_u16};
    for (int i = 0; i < 6; i++) {
        VkFormatProperties fp;
        vki->GetPhysicalDeviceFormatProperties(pd, formats[i], &fp);
        *usable[i] = fp.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT;
    }
    vk->max_texel_elements = lim->maxTexelBufferElements;
    uint32_t ts_bits = 0;
    vk_compute_queue_family(vki, pd, &ts_bits);
    vk->timestamp_valid_bits = ts_bits;
    info->timestamps = ts_bits > 0 && lim->timestampPeriod > 0;

    vk->noncoherent_atom_size = lim->nonCoherentAtomSize;
    free(exts);
}

/* The mode VKATTN_MEMORY names ("device", "auto", unset: AUTO); false, with
 * AUTO, for any other value. */
static bool memory_mode_from_env(vkattn_memory_mode *mode)
{
    const char *env = getenv("VKATTN_MEMORY");
    bool device = env && !strcmp(env, "device");
    *mode = device ? VKATTN_MEMORY_DEVICE : VKATTN_MEMORY_AUTO;
    return device || !env || !*env || !strcmp(env, "auto");
}

/* Settles where tensors live. Mapping device memory directly beats staging
 * where device memory is system memory (integrated GPUs, lavapipe); discrete
 * GPUs keep tensors in VRAM, and DEVICE makes any device do that. */
static void apply_memory_mode(const vk_state *vk, vkattn_device_info *info,
                              vkattn_memory_mode mode)
{
    bool shared_memory_device = info->type == VKATTN_DEVICE_TYPE_INTEGRATED_GPU ||
                                info->type == VKATTN_DEVICE_TYPE_CPU;
    info->memory = mode;
    info->host_visible_device_memory = mode == VKATTN_MEMORY_AUTO && shared_memory_device &&
                                       memory_has_mappable_device_memory(&vk->memory_properties);
}

static bool device_usable(const vk_instance_table *vki, VkPhysicalDevice pd)
{
    VkPhysicalDeviceProperties p;
    vki->GetPhysicalDeviceProperties(pd, &p);
    uint32_t ts = 0;
    return p.apiVersion >= VK_API_VERSION_1_1 &&
           vk_compute_queue_family(vki, pd, &ts) != UINT32_MAX;
}

/* Usable physical devices in loader order; caller frees. */
vkattn_status vk_usable_devices(const vk_instance_table *vki, VkInstance instance,
                                VkPhysicalDevice **out, uint32_t *count)
{
    uint32_t n = 0;
    *out = NULL;
    *count = 0;
    if (vki->EnumeratePhysicalDevices(instance, &n, NULL) != VK_SUCCESS || n == 0)
        return VKATTN_OK;
    VkPhysicalDevice *all = calloc(n, sizeof *all);
    if (!all)
        return VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    vki->EnumeratePhysicalDevices(instance, &n, all);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; i++)
        if (device_usable(vki, all[i]))
            all[kept++] = all[i];
    *out = all;
    *count = kept;
    return VKATTN_OK;
}

/* ----------------------------------------------------------- listing ---- */

vkattn_status vkattn_list_devices(vkattn_device_info *infos, uint32_t capacity, uint32_t *count)
{
    if (!count || (capacity > 0 && !infos))
        return VKATTN_ERROR_INVALID_ARGUMENT;
    *count = 0;
    PFN_vkGetInstanceProcAddr gipa = vk_loader();
    if (!gipa)
        return VKATTN_OK;
    VkInstance instance;
    if (vk_instance_create(gipa, VKATTN_VALIDATION_OFF, &instance, NULL) != VKATTN_OK)
        return VKATTN_OK;
    vk_instance_table vki;
    vk_load_instance_table(&vki, gipa, instance);
    VkPhysicalDevice *devices = NULL;
    uint32_t n = 0;
    vkattn_status s = vk_instance_table_complete(&vki)
                          ? vk_usable_devices(&vki, instance, &devices, &n)
                          : VKATTN_OK;
    vkattn_memory_mode memory;
    memory_mode_from_env(&memory);
    for (uint32_t i = 0; i < n && i < capacity; i++) {
        vk_state scratch;
        query_physical_device(&vki, devices[i], &scratch, &infos[i]);
        apply_memory_mode(&scratch, &infos[i], memory);
        infos[i].index = i;
    }
    *count = n;
    free(devices);
    if (vki.DestroyInstance)
        vki.DestroyInstance(instance, NULL);
    return s;
}

vkattn_status vkattn_device_features_query(VkInstance instance,
                                          PFN_vkGetInstanceProcAddr get_instance_proc_addr,
                                          VkPhysicalDevice physical_device,
                                          vkattn_device_features *out)
{
    if (!instance || !get_instance_proc_addr || !physical_device || !out)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    memset(out, 0, sizeof *out);
    vk_instance_table vki;
    vk_load_instance_table(&vki, get_instance_proc_addr, instance);
    if (!vk_instance_table_complete(&vki))
        return VKATTN_ERROR_UNSUPPORTED;
    VkPhysicalDeviceProperties props;
    vki.GetPhysicalDeviceProperties(physical_device, &props);
    uint32_t ext_count = 0;
    vki.EnumerateDeviceExtensionProperties(physical_device, NULL, &ext_count, NULL);
    VkExtensionProperties *exts = calloc(ext_count ? ext_count : 1, sizeof *exts);
    if (!exts)
        return VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    vki.EnumerateDeviceExtensionProperties(physical_device, NULL, &ext_count, exts);
    device_caps caps;
    device_caps_query(&vki, physical_device, props.apiVersion, exts, ext_count, &caps);
    free(exts);
    device_caps_features(&caps, out);
    return VKATTN_OK;
}

void vk_device_query(vkattn_context *ctx)
{
    vk_state *vk = &ctx->vk;
    vkattn_device_info *info = &ctx->info;
    query_physical_device(&vk->vki, vk->physical_device, vk, info);
    const char *env = getenv("VKATTN_PREFER_TEXELS");
    vk->prefer_texels = env && (!strcmp(env, "0") || !strcmp(env, "1"))
                            ? env[0] == '1'
                            : info->type == VKATTN_DEVICE_TYPE_CPU;

    if (vk->memory_mode == VKATTN_MEMORY_AUTO && !memory_mode_from_env(&vk->memory_mode))
        ctx_log(ctx, VKATTN_LOG_WARNING, "VKATTN_MEMORY=%s is neither \"auto\" nor \"device\"; "
                "using auto", getenv("VKATTN_MEMORY"));
    apply_memory_mode(vk, info, vk->memory_mode);
    env = getenv("VKATTN_MEMORY_ASSUME_NONCOHERENT");
    vk->assume_noncoherent = env && !strcmp(env, "1");
    ctx_log(ctx, VKATTN_LOG_DEBUG, "tensors %s%s%s",
            info->host_visible_device_memory ? "mapped" : "in device-local memory, staged",
            vk->assume_noncoherent ? "; host-visible memory treated as non-coherent" : "",
            ctx->poison ? "; shared memory and scratch tensors poisoned (NaN) before use" : "");
}
