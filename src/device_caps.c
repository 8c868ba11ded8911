/* Optional device capabilities: what a physical device offers beyond core
 * Vulkan 1.1 that vkattn's kernels can use (fp16 arithmetic, a required
 * subgroup size, cooperative matrices), and the feature chain that enables them
 * on a device vkattn creates. An adopted device enables none of them as far as
 * vkattn knows: the application chose its features. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends `s` (a Vulkan structure) to the pNext chain that starts at `head`. */
static void chain_link(void *head, void *s, bool present)
{
    if (!present)
        return;
    VkBaseOutStructure *last = head;
    while (last->pNext)
        last = last->pNext;
    last->pNext = s;
}

static bool has_ext(const VkExtensionProperties *exts, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(exts[i].extensionName, name) == 0)
            return true;
    return false;
}

/* One f16 x f16 + f32 -> f32 subgroup shape, the only kind the coopmat
 * kernels are written for. */
static void add_coopmat_shape(device_caps *caps, bool f16_operands, bool f32_result, bool subgroup,
                              uint32_t m, uint32_t n, uint32_t k)
{
    if (f16_operands && f32_result && subgroup &&
        caps->coopmat_shape_count < VKATTN_MAX_COOPMAT_SHAPES)
        caps->coopmat_shapes[caps->coopmat_shape_count++] = (coopmat_shape){m, n, k};
}

/* One bf16 x bf16 + f32 -> f32 subgroup shape (VK_KHR_shader_bfloat16). */
static void add_bf16_shape(device_caps *caps, const VkCooperativeMatrixPropertiesKHR *p)
{
    if (p->AType == VK_COMPONENT_TYPE_BFLOAT16_KHR && p->BType == VK_COMPONENT_TYPE_BFLOAT16_KHR &&
        p->CType == VK_COMPONENT_TYPE_FLOAT32_KHR && p->ResultType == VK_COMPONENT_TYPE_FLOAT32_KHR &&
        !p->saturatingAccumulation && p->scope == VK_SCOPE_SUBGROUP_KHR &&
        caps->bf16_shape_count < VKATTN_MAX_COOPMAT_SHAPES)
        caps->bf16_shapes[caps->bf16_shape_count++] = (coopmat_shape){p->MSize, p->NSize, p->KSize};
}

/* The shapes of VK_NV_cooperative_matrix. */
static void query_coopmat_shapes_nv(const vk_instance_table *vki, VkPhysicalDevice pd,
                                    device_caps *caps)
{
    uint32_t n = 0;
    if (!vki->GetPhysicalDeviceCooperativeMatrixPropertiesNV ||
        vki->GetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n, NULL) != VK_SUCCESS || n == 0)
        return;
    VkCooperativeMatrixPropertiesNV *props = calloc(n, sizeof *props);
    if (!props)
        return;
    for (uint32_t i = 0; i < n; i++)
        props[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
    if (vki->GetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++) {
            const VkCooperativeMatrixPropertiesNV *p = &props[i];
            add_coopmat_shape(caps, p->AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
                                        p->BType == VK_COMPONENT_TYPE_FLOAT16_NV,
                              p->CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
                                  p->DType == VK_COMPONENT_TYPE_FLOAT32_NV,
                              p->scope == VK_SCOPE_SUBGROUP_NV, p->MSize, p->NSize, p->KSize);
        }
    free(props);
}

/* The shapes of VK_KHR_cooperative_matrix (without saturating accumulation,
 * which the kernels' products do not ask for): the f16 ones where the kernels
 * take the KHR extension (F16), the bf16 ones where the device has
 * VK_KHR_shader_bfloat16's matrices (BF16). */
static void query_coopmat_shapes_khr(const vk_instance_table *vki, VkPhysicalDevice pd,
                                     bool f16, bool bf16, device_caps *caps)
{
    uint32_t n = 0;
    if (!vki->GetPhysicalDeviceCooperativeMatrixPropertiesKHR ||
        vki->GetPhysicalDeviceCooperativeMatrixPropertiesKHR(pd, &n, NULL) != VK_SUCCESS || n == 0)
        return;
    VkCooperativeMatrixPropertiesKHR *props = calloc(n, sizeof *props);
    if (!props)
        return;
    for (uint32_t i = 0; i < n; i++)
        props[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
    if (vki->GetPhysicalDeviceCooperativeMatrixPropertiesKHR(pd, &n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++) {
            const VkCooperativeMatrixPropertiesKHR *p = &props[i];
            if (bf16)
                add_bf16_shape(caps, p);
            if (!f16)
                continue;
            add_coopmat_shape(caps, p->AType == VK_COMPONENT_TYPE_FLOAT16_KHR &&
                                        p->BType == VK_COMPONENT_TYPE_FLOAT16_KHR,
                              p->CType == VK_COMPONENT_TYPE_FLOAT32_KHR &&
                                  p->ResultType == VK_COMPONENT_TYPE_FLOAT32_KHR &&
                                  !p->saturatingAccumulation,
                              p->scope == VK_SCOPE_SUBGROUP_KHR, p->MSize, p->NSize, p->KSize);
        }
    free(props);
}

/* The NV and KHR structures have the same members; sType says which. */
static VkStructureType coopmat_features_type(bool khr)
{
    return khr ? VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR
               : VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
}

/* Whether structures newer than `version` must stay out of a query, and why
 * (into `why`; empty where they need not): an active validation layer written
 * against an older Vulkan header flags each one as an unknown pNext structure
 * (Debian 12's, 1.3.239, does so for VK_NV_cooperative_matrix2's), which would
 * fail every validated run on a device that lists the extension. The loader
 * lists the instance's active layers (explicit and implicit) as the physical
 * device's. Other layers pass chains through unread, however old (Mesa's
 * implicit VK_LAYER_MESA_device_select is 1.3.211 on Debian 12). A list that
 * cannot be read counts as such a layer: a report left out costs nothing. */
static bool layer_older_than(const vk_instance_table *vki, VkPhysicalDevice pd, uint32_t version,
                             char *why, size_t size)
{
    why[0] = '\0';
    uint32_t count = 0;
    if (!vki->EnumerateDeviceLayerProperties ||
        vki->EnumerateDeviceLayerProperties(pd, &count, NULL) != VK_SUCCESS || count == 0)
        return false;
    VkLayerProperties *layers = calloc(count, sizeof *layers);
    VkResult r = layers ? vki->EnumerateDeviceLayerProperties(pd, &count, layers)
                        : VK_ERROR_OUT_OF_HOST_MEMORY;
    if (r != VK_SUCCESS && r != VK_INCOMPLETE)
        snprintf(why, size, "the active layers could not be listed (%s)",
                 r == VK_ERROR_OUT_OF_HOST_MEMORY ? "out of host memory" : "an error");
    for (uint32_t i = 0; !why[0] && i < count; i++)
        if (layers[i].specVersion < version && strstr(layers[i].layerName, "validation"))
            snprintf(why, size, "the active layer %s %u.%u.%u is older than the extension and "
                     "would flag its structures", layers[i].layerName,
                     VK_API_VERSION_MAJOR(layers[i].specVersion),
                     VK_API_VERSION_MINOR(layers[i].specVersion),
                     VK_API_VERSION_PATCH(layers[i].specVersion));
    free(layers);
    return why[0] != '\0';
}

/* With VK_NV_cooperative_matrix2's flexible dimensions: the f16 x f16 + f32
 * -> f32 workgroup-scope products the device lists, and those with the most
 * invocations. */
static void query_coopmat2_workgroup(const vk_instance_table *vki, VkPhysicalDevice pd,
                                     device_caps *caps)
{
    uint32_t n = 0;
    PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV query =
        vki->GetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV;
    if (!query || query(pd, &n, NULL) != VK_SUCCESS || n == 0)
        return;
    VkCooperativeMatrixFlexibleDimensionsPropertiesNV *props = calloc(n, sizeof *props);
    if (!props)
        return;
    for (uint32_t i = 0; i < n; i++)
        props[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV;
    if (query(pd, &n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++) {
            const VkCooperativeMatrixFlexibleDimensionsPropertiesNV *p = &props[i];
            if (p->AType == VK_COMPONENT_TYPE_FLOAT16_KHR &&
                p->BType == VK_COMPONENT_TYPE_FLOAT16_KHR &&
                p->CType == VK_COMPONENT_TYPE_FLOAT32_KHR &&
                p->ResultType == VK_COMPONENT_TYPE_FLOAT32_KHR && !p->saturatingAccumulation &&
                p->scope == VK_SCOPE_WORKGROUP_KHR && p->MGranularity && p->NGranularity &&
                p->KGranularity && p->workgroupInvocations) {
                uint32_t g[3] = {p->MGranularity, p->NGranularity, p->KGranularity};
                if (caps->coopmat2_shape_count < COOPMAT2_MAX_SHAPES) {
                    uint32_t at = caps->coopmat2_shape_count++;
                    caps->coopmat2_shapes[at].invocations = p->workgroupInvocations;
                    memcpy(caps->coopmat2_shapes[at].granularity, g, sizeof g);
                }
                if (p->workgroupInvocations > caps->coopmat2_invocations) {
                    memcpy(caps->coopmat2_granularity, g, sizeof g);
                    caps->coopmat2_invocations = p->workgroupInvocations;
                }
            }
        }
    free(props);
}

/* Which cooperative-matrix extension the kernels go through: NVIDIA's own
 * where the device has it (verified there), else the KHR one (AMD, Intel);
 * VKATTN_COOPMAT_KHR=1 takes the KHR one wherever the device has it (how a
 * GPU check runs the KHR build on NVIDIA). */
static bool take_khr(bool has_nv, bool has_khr)
{
    return has_khr && (!has_nv || env_is_one("VKATTN_COOPMAT_KHR"));
}

void device_caps_query(const vk_instance_table *vki, VkPhysicalDevice pd, uint32_t api_version,
                       const VkExtensionProperties *exts, uint32_t ext_count, device_caps *caps)
{
    memset(caps, 0, sizeof *caps);
    bool v12 = api_version >= VK_API_VERSION_1_2, v13 = api_version >= VK_API_VERSION_1_3;
    /* An extension a later core version promoted is enabled wherever the device
     * lists it, core or not: a device has the lesser of its own version and its
     * instance's, and an application's Vulkan 1.1 instance on a 1.3 device gives
     * 1.1, where the features need their extensions (vkattn cannot see an
     * adopted instance's version). On a device of the later version, enabling
     * the extension as well changes nothing. */
    caps->ext_float16_int8 = has_ext(exts, ext_count, "VK_KHR_shader_float16_int8");
    caps->ext_subgroup_size_control = has_ext(exts, ext_count, "VK_EXT_subgroup_size_control");
    bool has_float16 = v12 || caps->ext_float16_int8;
    bool has_size_control = v13 || caps->ext_subgroup_size_control;
    caps->ext_vulkan_memory_model = has_ext(exts, ext_count, "VK_KHR_vulkan_memory_model");
    bool has_memory_model = v12 || caps->ext_vulkan_memory_model;
    bool has_nv = has_ext(exts, ext_count, "VK_NV_cooperative_matrix");
    bool has_khr = has_ext(exts, ext_count, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    caps->coopmat_khr = take_khr(has_nv, has_khr);
    bool has_coopmat = has_nv || has_khr;
    bool has_executable_info = has_ext(exts, ext_count, "VK_KHR_pipeline_executable_properties");
    caps->coopmat2 = has_ext(exts, ext_count, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);
    bool query_coopmat2 =
        caps->coopmat2 && !layer_older_than(vki, pd, VKATTN_COOPMAT2_NV_HEADER_VERSION,
                                            caps->coopmat2_unqueried_why,
                                            sizeof caps->coopmat2_unqueried_why);
    /* bf16 matrices are the KHR extension's (NV's has no bf16 type). */
    caps->bf16_listed = has_khr && has_ext(exts, ext_count, VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME);
    bool query_bf16 =
        caps->bf16_listed && !layer_older_than(vki, pd, VKATTN_BFLOAT16_KHR_HEADER_VERSION,
                                               caps->bf16_unqueried_why,
                                               sizeof caps->bf16_unqueried_why);

    /* Each structure goes into the chain only where the device knows it. The
     * NV and KHR structures have the same members; sType says which. */
    VkPhysicalDeviceCooperativeMatrixPropertiesNV coopmat_props = {
        .sType = caps->coopmat_khr
                     ? VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR
                     : VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV};
    VkPhysicalDeviceSubgroupSizeControlProperties size_props = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties subgroup = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceCooperativeMatrix2PropertiesNV coopmat2_props = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV};
    VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    chain_link(&props, &subgroup, true);
    chain_link(&props, &size_props, has_size_control);
    chain_link(&props, &coopmat_props, has_coopmat);
    chain_link(&props, &coopmat2_props, query_coopmat2);
    vki->GetPhysicalDeviceProperties2(pd, &props);

    VkPhysicalDeviceCooperativeMatrixFeaturesNV coopmat = {
        .sType = coopmat_features_type(caps->coopmat_khr)};
    VkPhysicalDeviceSubgroupSizeControlFeatures size_control = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceVulkanMemoryModelFeatures memory_model = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable_info = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    VkPhysicalDeviceCooperativeMatrix2FeaturesNV coopmat2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
    VkPhysicalDeviceShaderBfloat16FeaturesKHR bf16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR};
    VkPhysicalDeviceMaintenance4Features maintenance4 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES};
    VkPhysicalDeviceFeatures2 features = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    chain_link(&features, &maintenance4, v13);
    chain_link(&features, &coopmat2, query_coopmat2);
    chain_link(&features, &bf16, query_bf16);
    chain_link(&features, &f16, has_float16);
    chain_link(&features, &executable_info, has_executable_info);
    chain_link(&features, &size_control, has_size_control);
    chain_link(&features, &coopmat, has_coopmat);
    chain_link(&features, &memory_model, has_memory_model);
    vki->GetPhysicalDeviceFeatures2(pd, &features);

    caps->float16 = has_float16 && f16.shaderFloat16;
    caps->pipeline_statistics = has_executable_info && executable_info.pipelineExecutableInfo;
    caps->maintenance4 = v13 && maintenance4.maintenance4;
    /* Without size control every size from min to max may occur; the subgroup
     * size reported is only the default. */
    caps->subgroup_min = subgroup.subgroupSize;
    caps->subgroup_max = subgroup.subgroupSize;
    if (has_size_control && size_props.minSubgroupSize) {
        caps->subgroup_min = size_props.minSubgroupSize;
        caps->subgroup_max = size_props.maxSubgroupSize;
        caps->subgroup_size_control =
            size_control.subgroupSizeControl && size_control.computeFullSubgroups &&
            (size_props.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT);
    }
    /* The coopmat kernels' SPIR-V declares the Vulkan memory model (as
     * GL_NV_cooperative_matrix's scopes need) and uses device scope: without
     * both features the module is invalid. */
    caps->memory_model = has_memory_model && memory_model.vulkanMemoryModel &&
                         memory_model.vulkanMemoryModelDeviceScope;
    caps->coopmat = has_coopmat && coopmat.cooperativeMatrix && caps->float16 && caps->memory_model &&
                    (coopmat_props.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
    bool bf16_matrices = caps->coopmat && query_bf16 && bf16.shaderBFloat16Type &&
                         bf16.shaderBFloat16CooperativeMatrix;
    if (caps->coopmat && (caps->coopmat_khr || bf16_matrices))
        query_coopmat_shapes_khr(vki, pd, caps->coopmat_khr, bf16_matrices, caps);
    if (caps->coopmat && !caps->coopmat_khr)
        query_coopmat_shapes_nv(vki, pd, caps);
    caps->coopmat = caps->coopmat && caps->coopmat_shape_count > 0;
    /* bf16 matrices go through VK_KHR_cooperative_matrix, which a device
     * without f16 shapes does not get enabled: none without them. */
    if (!caps->coopmat)
        caps->bf16_shape_count = 0;
    const VkBool32 coopmat2_bits[] = {
        coopmat2.cooperativeMatrixWorkgroupScope, coopmat2.cooperativeMatrixFlexibleDimensions,
        coopmat2.cooperativeMatrixReductions, coopmat2.cooperativeMatrixConversions,
        coopmat2.cooperativeMatrixPerElementOperations, coopmat2.cooperativeMatrixTensorAddressing,
        coopmat2.cooperativeMatrixBlockLoads};
    for (uint32_t i = 0; query_coopmat2 && i < sizeof coopmat2_bits / sizeof *coopmat2_bits; i++)
        caps->coopmat2_features |= coopmat2_bits[i] ? 1u << i : 0;
    caps->coopmat2_workgroup_max = coopmat2_props.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize;
    caps->coopmat2_flexible_max = coopmat2_props.cooperativeMatrixFlexibleDimensionsMaxDimension;
    caps->coopmat2_reserved_shared = coopmat2_props.cooperativeMatrixWorkgroupScopeReservedSharedMemory;
    uint32_t workgroup = DEVICE_COOPMAT2_WORKGROUP_SCOPE | DEVICE_COOPMAT2_FLEXIBLE_DIMENSIONS;
    if ((caps->coopmat2_features & workgroup) == workgroup)
        query_coopmat2_workgroup(vki, pd, caps);
}

void device_caps_coopmat2_describe(const device_caps *caps, char *out, size_t size)
{
    static const char *const names[] = {"workgroup scope", "flexible dimensions", "reductions",
                                        "conversions", "per-element operations",
                                        "tensor addressing", "block loads"};
    if (!caps->coopmat2) {
        snprintf(out, size, "not listed");
        return;
    }
    if (caps->coopmat2_unqueried_why[0]) {
        snprintf(out, size, "listed; features and limits not queried: %s; not used by vkattn's "
                 "kernels", caps->coopmat2_unqueried_why);
        return;
    }
    size_t at = (size_t)snprintf(out, size, "listed; features:");
    bool any = false;
    for (uint32_t i = 0; i < sizeof names / sizeof *names && at < size; i++)
        if (caps->coopmat2_features & 1u << i) {
            at += (size_t)snprintf(out + at, size - at, "%s %s", any ? "," : "", names[i]);
            any = true;
        }
    if (at < size)
        at += (size_t)snprintf(out + at, size - at, "%s; workgroup scope up to %u invocations "
                               "(%u bytes of shared memory reserved), flexible dimensions up to "
                               "%u", any ? "" : " none", caps->coopmat2_workgroup_max,
                               caps->coopmat2_reserved_shared, caps->coopmat2_flexible_max);
    for (uint32_t i = 0; i < caps->coopmat2_shape_count && at < size; i++)
        at += (size_t)snprintf(out + at, size - at, "%s multiples of %ux%ux%u for workgroups of %u",
                               i ? "," : "; f16 workgroup-scope products in",
                               caps->coopmat2_shapes[i].granularity[0],
                               caps->coopmat2_shapes[i].granularity[1],
                               caps->coopmat2_shapes[i].granularity[2],
                               caps->coopmat2_shapes[i].invocations);
    if (at < size)
        snprintf(out + at, size - at, "; no kernel uses it (the rate probe measures its "
                 "workgroup scope: VKATTN_COOPMAT_PEAK=1 with the KHR extension)");
}

void device_caps_bf16_describe(const device_caps *caps, char *out, size_t size)
{
    if (!caps->bf16_listed) {
        snprintf(out, size, "VK_KHR_shader_bfloat16 with VK_KHR_cooperative_matrix not listed");
        return;
    }
    if (caps->bf16_unqueried_why[0]) {
        snprintf(out, size, "VK_KHR_shader_bfloat16 listed; not queried: %s",
                 caps->bf16_unqueried_why);
        return;
    }
    size_t at = (size_t)snprintf(out, size, "VK_KHR_shader_bfloat16's bf16 x bf16 + f32 "
                                 "subgroup products:");
    for (uint32_t i = 0; i < caps->bf16_shape_count && at < size; i++)
        at += (size_t)snprintf(out + at, size - at, "%s %ux%ux%u", i ? "," : "",
                               caps->bf16_shapes[i].m, caps->bf16_shapes[i].n,
                               caps->bf16_shapes[i].k);
    if (at < size)
        snprintf(out + at, size - at, "%s; the coopmat kernel takes them with the tuning "
                 "coopmat.bf16=2 where it takes the KHR extension (else it converts bf16 to "
                 "f16 as it stages it)", caps->bf16_shape_count ? "" : " none");
}

void device_caps_features(const device_caps *caps, vkattn_device_features *c)
{
    memset(c, 0, sizeof *c);
    void *next = NULL;
    if (caps->coopmat) {
        c->cooperative_matrix = (VkPhysicalDeviceCooperativeMatrixFeaturesNV){
            .sType = coopmat_features_type(caps->coopmat_khr), .pNext = next,
            .cooperativeMatrix = VK_TRUE};
        next = &c->cooperative_matrix;
        c->extensions[c->extension_count++] = caps->coopmat_khr
                                                  ? VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME
                                                  : "VK_NV_cooperative_matrix";
        c->vulkan_memory_model = (VkPhysicalDeviceVulkanMemoryModelFeatures){
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES,
            .pNext = next, .vulkanMemoryModel = VK_TRUE, .vulkanMemoryModelDeviceScope = VK_TRUE};
        next = &c->vulkan_memory_model;
        if (caps->ext_vulkan_memory_model)
            c->extensions[c->extension_count++] = "VK_KHR_vulkan_memory_model";
    }
    if (caps->subgroup_size_control) {
        c->subgroup_size_control = (VkPhysicalDeviceSubgroupSizeControlFeatures){
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES,
            .pNext = next, .subgroupSizeControl = VK_TRUE, .computeFullSubgroups = VK_TRUE};
        next = &c->subgroup_size_control;
        if (caps->ext_subgroup_size_control)
            c->extensions[c->extension_count++] = "VK_EXT_subgroup_size_control";
    }
    if (caps->float16) {
        c->float16_int8 = (VkPhysicalDeviceShaderFloat16Int8Features){
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
            .pNext = next, .shaderFloat16 = VK_TRUE};
        next = &c->float16_int8;
        if (caps->ext_float16_int8)
            c->extensions[c->extension_count++] = "VK_KHR_shader_float16_int8";
    }
    c->chain = next;
}

bool device_caps_whole_subgroups(const device_caps *e)
{
    return e->subgroup_size_control || (e->subgroup_min > 0 && e->subgroup_min == e->subgroup_max);
}

void device_caps_whole_subgroups_why(const device_caps *e, const char *device, char *why,
                                     size_t why_size)
{
    snprintf(why, why_size, "needs whole subgroups: a required size (subgroupSizeControl and "
             "computeFullSubgroups, which %s lacks or the application did not enable) or one "
             "size (it has %u to %u)", device, e->subgroup_min, e->subgroup_max);
}

device_caps device_caps_enabled(const device_caps *caps, const vkattn_device_features *f)
{
    device_caps e = {.subgroup_min = caps->subgroup_min, .subgroup_max = caps->subgroup_max};
    if (!f)
        return e;
    e.float16 = caps->float16 && f->float16_int8.shaderFloat16;
    e.subgroup_size_control = caps->subgroup_size_control &&
                              f->subgroup_size_control.subgroupSizeControl &&
                              f->subgroup_size_control.computeFullSubgroups;
    e.memory_model = caps->memory_model && f->vulkan_memory_model.vulkanMemoryModel &&
                     f->vulkan_memory_model.vulkanMemoryModelDeviceScope;
    /* The application enabled the extension vkattn_device_features_query
     * named: its structure's sType says which. */
    e.coopmat = caps->coopmat && e.float16 && e.memory_model &&
                f->cooperative_matrix.sType == coopmat_features_type(caps->coopmat_khr) &&
                f->cooperative_matrix.cooperativeMatrix;
    e.coopmat_khr = e.coopmat && caps->coopmat_khr;
    if (e.coopmat) {
        e.coopmat_shape_count = caps->coopmat_shape_count;
        memcpy(e.coopmat_shapes, caps->coopmat_shapes, sizeof e.coopmat_shapes);
    }
    return e;
}

bool device_caps_workgroup_scope_wanted(const device_caps *caps, bool wanted)
{
    uint32_t both = DEVICE_COOPMAT2_WORKGROUP_SCOPE | DEVICE_COOPMAT2_FLEXIBLE_DIMENSIONS;
    return wanted && caps->coopmat && caps->coopmat_khr &&
           (caps->coopmat2_features & both) == both && caps->coopmat2_invocations > 0;
}

VkResult device_create_with_optional(const vk_instance_table *vki, VkPhysicalDevice pd,
                                     VkDeviceCreateInfo info, const char **extensions,
                                     uint32_t count, void *optional,
                                     const char *optional_extension, VkResult *optional_result,
                                     VkDevice *out)
{
    *optional_result = VK_SUCCESS;
    const void *rest = info.pNext;
    uint32_t without = count;
    if (optional) {
        ((VkBaseOutStructure *)optional)->pNext = (VkBaseOutStructure *)rest;
        info.pNext = optional;
        extensions[count++] = optional_extension;
    }
    info.enabledExtensionCount = count;
    info.ppEnabledExtensionNames = count ? extensions : NULL;
    VkResult r = vki->CreateDevice(pd, &info, NULL, out);
    if (r == VK_SUCCESS || !optional)
        return r;
    *optional_result = r;
    info.pNext = rest;
    info.enabledExtensionCount = without;
    info.ppEnabledExtensionNames = without ? extensions : NULL;
    return vki->CreateDevice(pd, &info, NULL, out);
}
