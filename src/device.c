/* Physical-device choice and query, the owned instance/device path, adoption. */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <volk.h>

#define VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"

/* ---------------------------------------------------------------- loader -- */

static PFN_vkGetInstanceProcAddr loader_gipa;
static pthread_once_t loader_once = PTHREAD_ONCE_INIT;

static void loader_open(void)
{
    /* volk keeps the loader handle in its own globals; it is set once per process
     * and never changes afterwards, so contexts only read it. */
    if (volkInitialize() == VK_SUCCESS)
        loader_gipa = vkGetInstanceProcAddr;
}

PFN_vkGetInstanceProcAddr vk_loader(void)
{
    pthread_once(&loader_once, loader_open);
    return loader_gipa;
}

static void load_instance_table(vk_instance_table *t, PFN_vkGetInstanceProcAddr gipa,
                                VkInstance instance)
{
#define LOAD_(name) t->name = (PFN_vk##name)gipa(instance, "vk" #name);
    VKATTN_INSTANCE_FUNCS(LOAD_)
    VKATTN_INSTANCE_DEBUG_FUNCS(LOAD_)
    VKATTN_INSTANCE_OPTIONAL_FUNCS(LOAD_)
#undef LOAD_
}

static bool instance_table_complete(const vk_instance_table *t)
{
#define CHECK_(name) if (!t->name) return false;
    VKATTN_INSTANCE_FUNCS(CHECK_)
#undef CHECK_
    return true;
}

static bool load_device_table(vk_device_table *t, PFN_vkGetDeviceProcAddr gdpa, VkDevice device)
{
#define LOAD_(name)                                            \
    t->name = (PFN_vk##name)gdpa(device, "vk" #name);          \
    if (!t->name)                                              \
        return false;
    VKATTN_DEVICE_FUNCS(LOAD_)
#undef LOAD_
#define LOAD_OPTIONAL_(name) t->name = (PFN_vk##name)gdpa(device, "vk" #name);
    VKATTN_DEVICE_OPTIONAL_FUNCS(LOAD_OPTIONAL_)
#undef LOAD_OPTIONAL_
    return true;
}

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

static vkattn_device_type map_device_type(VkPhysicalDeviceType t)
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
static uint32_t find_compute_queue_family(const vk_instance_table *vki, VkPhysicalDevice pd,
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
    info->type = map_device_type(base.deviceType);
    info->subgroup_size = subgroup.subgroupSize;
    info->subgroup_arithmetic =
        (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
        (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    vk->subgroup_shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                           (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
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
    find_compute_queue_family(vki, pd, &ts_bits);
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
           find_compute_queue_family(vki, pd, &ts) != UINT32_MAX;
}

/* Usable physical devices in loader order; caller frees. */
static vkattn_status enumerate_usable(const vk_instance_table *vki, VkInstance instance,
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

/* --------------------------------------------------------- instance ------ */

static bool layer_available(PFN_vkGetInstanceProcAddr gipa, const char *name)
{
    PFN_vkEnumerateInstanceLayerProperties enumerate =
        (PFN_vkEnumerateInstanceLayerProperties)gipa(NULL, "vkEnumerateInstanceLayerProperties");
    uint32_t n = 0;
    if (!enumerate || enumerate(&n, NULL) != VK_SUCCESS || n == 0)
        return false;
    VkLayerProperties *layers = calloc(n, sizeof *layers);
    if (!layers)
        return false;
    bool found = false;
    if (enumerate(&n, layers) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = strcmp(layers[i].layerName, name) == 0;
    free(layers);
    return found;
}

static VkBool32 VKAPI_PTR debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                         VkDebugUtilsMessageTypeFlagsEXT types,
                                         const VkDebugUtilsMessengerCallbackDataEXT *data,
                                         void *user)
{
    (void)types;
    const vkattn_context *ctx = user;
    vkattn_log_level level = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT
                                 ? VKATTN_LOG_ERROR
                                 : VKATTN_LOG_WARNING;
    log_to(ctx->log_fn, ctx->log_user_data, level, VKATTN_LOG_SOURCE_VALIDATION, "%s",
           data->pMessage ? data->pMessage : "(no message)");
    return VK_FALSE;
}

/* ON, OFF or GPU_ASSISTED: the desc's choice, or the environment's. */
static vkattn_validation validation_wanted(vkattn_validation v)
{
    if (v != VKATTN_VALIDATION_DEFAULT)
        return v;
    const char *env = getenv("VKATTN_VALIDATION");
    if (env && strcmp(env, "1") == 0)
        return VKATTN_VALIDATION_ON;
    if (env && strcmp(env, "gpu") == 0)
        return VKATTN_VALIDATION_GPU_ASSISTED;
    return VKATTN_VALIDATION_OFF;
}

/* Creates an instance, with the validation layer and synchronization validation
 * unless `level` is OFF, and GPU-assisted validation too with GPU_ASSISTED. */
static vkattn_status create_instance(PFN_vkGetInstanceProcAddr gipa, vkattn_validation level,
                                     VkInstance *out)
{
    bool validation = level != VKATTN_VALIDATION_OFF;
    PFN_vkCreateInstance create = (PFN_vkCreateInstance)gipa(NULL, "vkCreateInstance");
    PFN_vkEnumerateInstanceVersion version_fn =
        (PFN_vkEnumerateInstanceVersion)gipa(NULL, "vkEnumerateInstanceVersion");
    uint32_t loader_version = VK_API_VERSION_1_0;
    if (version_fn)
        version_fn(&loader_version);
    if (!create || loader_version < VK_API_VERSION_1_1)
        return VKATTN_ERROR_NO_DEVICE;

    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pEngineName = "vkattn",
        .engineVersion = VKATTN_VERSION,
        .apiVersion = loader_version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : loader_version,
    };
    const char *layers[] = {VALIDATION_LAYER};
    const char *extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME,
                                VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
    VkValidationFeatureEnableEXT enables[] = {
        VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT,
        VK_VALIDATION_FEATURE_ENABLE_GPU_ASSISTED_EXT};
    VkValidationFeaturesEXT features = {
        .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
        .enabledValidationFeatureCount = level == VKATTN_VALIDATION_GPU_ASSISTED ? 2 : 1,
        .pEnabledValidationFeatures = enables,
    };
    VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = validation ? &features : NULL,
        .pApplicationInfo = &app,
        .enabledLayerCount = validation ? 1 : 0,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = validation ? 2 : 0,
        .ppEnabledExtensionNames = extensions,
    };
    VkResult r = create(&info, NULL, out);
    return r == VK_SUCCESS ? VKATTN_OK : vk_status_from_result(r);
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
    if (create_instance(gipa, VKATTN_VALIDATION_OFF, &instance) != VKATTN_OK)
        return VKATTN_OK;
    vk_instance_table vki;
    load_instance_table(&vki, gipa, instance);
    VkPhysicalDevice *devices = NULL;
    uint32_t n = 0;
    vkattn_status s = instance_table_complete(&vki)
                          ? enumerate_usable(&vki, instance, &devices, &n)
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
    load_instance_table(&vki, get_instance_proc_addr, instance);
    if (!instance_table_complete(&vki))
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
        int rank = type_rank(map_device_type(p.deviceType));
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
    /* the features' extensions, pipeline statistics', one optional (device_create_with_optional) */
    const char *extensions[sizeof features.extensions / sizeof features.extensions[0] + 2];
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
    return VKATTN_OK;
}

static vkattn_status finish_device_setup(vkattn_context *ctx)
{
    vk_state *vk = &ctx->vk;
    if (!load_device_table(&vk->vkd, vk->vki.GetDeviceProcAddr, vk->device))
        return ctx_fail(ctx, VKATTN_ERROR_VULKAN, "a core Vulkan 1.1 device function is missing");
    if (!vk->queue)
        vk->vkd.GetDeviceQueue(vk->device, vk->queue_family, 0, &vk->queue);
    return VKATTN_OK;
}

vkattn_status vk_device_create_owned(vkattn_context *ctx, const vkattn_context_desc *desc)
{
    vk_state *vk = &ctx->vk;
    PFN_vkGetInstanceProcAddr gipa = vk_loader();
    if (!gipa)
        return ctx_fail(ctx, VKATTN_ERROR_NO_DEVICE, "no Vulkan loader (libvulkan.so.1) found");

    vkattn_validation validation = validation_wanted(desc->validation);
    if (validation != VKATTN_VALIDATION_OFF && !layer_available(gipa, VALIDATION_LAYER)) {
        ctx_log(ctx, VKATTN_LOG_WARNING, "validation requested but %s is not installed",
                VALIDATION_LAYER);
        validation = VKATTN_VALIDATION_OFF;
    }
    vkattn_status s = create_instance(gipa, validation, &vk->instance);
    if (s != VKATTN_OK)
        return ctx_fail(ctx, s == VKATTN_ERROR_NO_DEVICE ? s : VKATTN_ERROR_VULKAN,
                        "cannot create a Vulkan 1.1 instance");
    vk->owns_instance = true;
    load_instance_table(&vk->vki, gipa, vk->instance);
    if (!instance_table_complete(&vk->vki))
        return ctx_fail(ctx, VKATTN_ERROR_VULKAN, "a core Vulkan 1.1 instance function is missing");

    if (validation != VKATTN_VALIDATION_OFF && vk->vki.CreateDebugUtilsMessengerEXT) {
        VkDebugUtilsMessengerCreateInfoEXT mi = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
            .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
            .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
            .pfnUserCallback = debug_callback,
            .pUserData = ctx,
        };
        VkResult r = vk->vki.CreateDebugUtilsMessengerEXT(vk->instance, &mi, NULL, &vk->messenger);
        if (r != VK_SUCCESS)
            return ctx_fail_vk(ctx, r, "vkCreateDebugUtilsMessengerEXT");
    }
    ctx->info.validation_enabled = validation != VKATTN_VALIDATION_OFF;

    VkPhysicalDevice *devices;
    uint32_t n;
    s = enumerate_usable(&vk->vki, vk->instance, &devices, &n);
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
    vk->queue_family = find_compute_queue_family(&vk->vki, vk->physical_device, &ts_bits);

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
    load_instance_table(&vk->vki, h->get_instance_proc_addr, h->instance);
    if (!instance_table_complete(&vk->vki))
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
    vk->timestamp_valid_bits = families[h->queue_family_index].timestampValidBits;
    ctx->info.timestamps = vk->timestamp_valid_bits > 0 && ctx->info.timestamp_period_ns > 0;
    ctx->info.adopted = true;
    return finish_device_setup(ctx);
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
    ctx_log(ctx, VKATTN_LOG_DEBUG, "tensors %s%s",
            info->host_visible_device_memory ? "mapped" : "in device-local memory, staged",
            vk->assume_noncoherent ? "; host-visible memory treated as non-coherent" : "");
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
