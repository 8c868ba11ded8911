/* device_caps.c against made-up devices: which cooperative-matrix extension the
 * kernels go through (NV where the device has it, else KHR, KHR on request),
 * which of a device's shapes they take, and the features and extensions
 * enabled for it. No device here has either extension: this is where the
 * choice is exercised before a GPU does. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "internal.h"
#include "ops/ops_common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* The made-up device. */
static struct {
    bool nv, khr;               /* the extensions it lists */
    bool coopmat2;              /* and VK_NV_cooperative_matrix2 */
    bool flexible;              /* with flexible dimensions too */
    bool bf16;                  /* and VK_KHR_shader_bfloat16 */
    VkBool32 bf16_matrices;     /* its shaderBFloat16CooperativeMatrix */
    bool bf16_shapes_only;      /* the KHR list without its f16 shapes */
    bool bf16_seen;             /* its feature structure was queried */
    uint32_t layer_version;     /* one active layer of this header version; 0: none */
    VkResult layers_result;     /* what listing them returns (VK_SUCCESS: as usual) */
    bool coopmat2_seen;         /* a VK_NV_cooperative_matrix2 structure was queried */
    VkShaderStageFlags stages;  /* cooperativeMatrixSupportedStages */
    VkStructureType properties_type_seen, features_type_seen;
} dev;

/* Shapes as a driver reports them: the kernels' kind and kinds they must
 * pass over (int8, saturating, workgroup scope, f16 results). */
static const struct {
    uint32_t m, n, k, a, b, c, result, saturating, scope;
} reported[] = {
    {16, 8, 16, 0, 0, 1, 1, 0, 3},  /* f16 x f16 + f32 -> f32, subgroup: taken */
    {16, 16, 16, 0, 0, 1, 1, 0, 3}, /* taken */
    {16, 16, 32, 3, 3, 5, 5, 0, 3}, /* int8: no */
    {32, 32, 16, 0, 0, 1, 1, 1, 3}, /* saturating (KHR): no */
    {8, 8, 8, 0, 0, 1, 1, 0, 2},    /* workgroup scope: no */
    {16, 16, 16, 0, 0, 0, 0, 0, 3}, /* f16 accumulators: no */
    /* VK_KHR_shader_bfloat16's (1000141000): bf16 x bf16 + f32 -> f32 at
     * subgroup scope is the bf16 kind; none is an f16 one */
    {16, 8, 16, 1000141000, 1000141000, 1, 1, 0, 3},       /* bf16: taken */
    {16, 16, 16, 1000141000, 1000141000, 1, 1, 0, 2},      /* workgroup scope: no */
    {16, 16, 16, 1000141000, 1000141000, 1000141000, 1000141000, 0, 3}, /* bf16 results: no */
    {16, 16, 16, 1000141000, 0, 1, 1, 0, 3},               /* bf16 x f16: no */
    {32, 8, 16, 1000141000, 1000141000, 1, 1, 0, 3},       /* bf16: taken */
};
#define REPORTED (sizeof reported / sizeof reported[0])

static void VKAPI_PTR get_properties2(VkPhysicalDevice pd, VkPhysicalDeviceProperties2 *p)
{
    (void)pd;
    for (VkBaseOutStructure *s = p->pNext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES)
            ((VkPhysicalDeviceSubgroupProperties *)s)->subgroupSize = 32;
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV ||
            s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR) {
            dev.properties_type_seen = s->sType;
            /* Both structures: sType, pNext, the stages. */
            ((VkPhysicalDeviceCooperativeMatrixPropertiesNV *)s)->cooperativeMatrixSupportedStages =
                dev.stages;
        }
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV) {
            dev.coopmat2_seen = true;
            VkPhysicalDeviceCooperativeMatrix2PropertiesNV *c = (void *)s;
            c->cooperativeMatrixWorkgroupScopeMaxWorkgroupSize = 256;
            c->cooperativeMatrixFlexibleDimensionsMaxDimension = 8192;
            c->cooperativeMatrixWorkgroupScopeReservedSharedMemory = 512;
        }
    }
}

static void VKAPI_PTR get_features2(VkPhysicalDevice pd, VkPhysicalDeviceFeatures2 *f)
{
    (void)pd;
    for (VkBaseOutStructure *s = f->pNext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES)
            ((VkPhysicalDeviceShaderFloat16Int8Features *)s)->shaderFloat16 = VK_TRUE;
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES) {
            VkPhysicalDeviceVulkanMemoryModelFeatures *m = (void *)s;
            m->vulkanMemoryModel = m->vulkanMemoryModelDeviceScope = VK_TRUE;
        }
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV ||
            s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR) {
            dev.features_type_seen = s->sType;
            ((VkPhysicalDeviceCooperativeMatrixFeaturesNV *)s)->cooperativeMatrix = VK_TRUE;
        }
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR) {
            dev.bf16_seen = true;
            VkPhysicalDeviceShaderBfloat16FeaturesKHR *b = (void *)s;
            b->shaderBFloat16Type = VK_TRUE;
            b->shaderBFloat16CooperativeMatrix = dev.bf16_matrices;
        }
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV) {
            /* all but flexible dimensions, unless dev.flexible */
            dev.coopmat2_seen = true;
            VkPhysicalDeviceCooperativeMatrix2FeaturesNV *c = (void *)s;
            c->cooperativeMatrixFlexibleDimensions = dev.flexible;
            c->cooperativeMatrixWorkgroupScope = c->cooperativeMatrixReductions = VK_TRUE;
            c->cooperativeMatrixConversions = c->cooperativeMatrixPerElementOperations = VK_TRUE;
            c->cooperativeMatrixTensorAddressing = c->cooperativeMatrixBlockLoads = VK_TRUE;
        }
    }
}

/* The instance's active layers, as the loader lists them for a device: one
 * validation layer of dev.layer_version, behind Mesa's implicit device-select
 * layer as Debian 12 has it (older than the extension, but it reads no
 * structure chains: not a reason to leave them out). */
static VkResult VKAPI_PTR layers(VkPhysicalDevice pd, uint32_t *n, VkLayerProperties *p)
{
    (void)pd;
    const uint32_t listed = dev.layer_version ? 2 : 0;
    if (!p) {
        *n = listed;
        return VK_SUCCESS;
    }
    if (dev.layers_result != VK_SUCCESS)
        return dev.layers_result;
    static const char *const names[] = {"VK_LAYER_MESA_device_select", "VK_LAYER_KHRONOS_validation"};
    const uint32_t versions[] = {VK_MAKE_API_VERSION(0, 1, 3, 211), dev.layer_version};
    uint32_t i = 0;
    for (; i < *n && i < listed; i++) {
        memset(&p[i], 0, sizeof p[i]);
        strcpy(p[i].layerName, names[i]);
        p[i].specVersion = versions[i];
    }
    *n = i;
    return i < listed ? VK_INCOMPLETE : VK_SUCCESS;
}

static VkResult VKAPI_PTR shapes_nv(VkPhysicalDevice pd, uint32_t *n,
                                    VkCooperativeMatrixPropertiesNV *p)
{
    (void)pd;
    if (!dev.nv)
        return VK_ERROR_EXTENSION_NOT_PRESENT;
    if (p)
        for (uint32_t i = 0; i < *n && i < REPORTED; i++) {
            assert_int_equal(p[i].sType, VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV);
            p[i].MSize = reported[i].m;
            p[i].NSize = reported[i].n;
            p[i].KSize = reported[i].k;
            /* NV has no saturating accumulation: that entry is an int8 one here. */
            p[i].AType = reported[i].saturating ? VK_COMPONENT_TYPE_SINT8_NV : reported[i].a;
            p[i].BType = reported[i].b;
            p[i].CType = reported[i].c;
            p[i].DType = reported[i].result;
            p[i].scope = reported[i].scope;
        }
    *n = REPORTED;
    return VK_SUCCESS;
}

static VkResult VKAPI_PTR shapes_khr(VkPhysicalDevice pd, uint32_t *n,
                                     VkCooperativeMatrixPropertiesKHR *p)
{
    (void)pd;
    if (!dev.khr)
        return VK_ERROR_EXTENSION_NOT_PRESENT;
    uint32_t listed[REPORTED], count = 0;
    for (uint32_t i = 0; i < REPORTED; i++)
        if (!dev.bf16_shapes_only || reported[i].a == 1000141000)
            listed[count++] = i;
    if (p)
        for (uint32_t j = 0; j < *n && j < count; j++) {
            uint32_t i = listed[j];
            assert_int_equal(p[j].sType, VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR);
            p[j].MSize = reported[i].m;
            p[j].NSize = reported[i].n;
            p[j].KSize = reported[i].k;
            p[j].AType = reported[i].a;
            p[j].BType = reported[i].b;
            p[j].CType = reported[i].c;
            p[j].ResultType = reported[i].result;
            p[j].saturatingAccumulation = reported[i].saturating;
            p[j].scope = reported[i].scope;
        }
    *n = count;
    return VK_SUCCESS;
}

/* Flexible-dimension products as a driver might list them: the f16 x f16 +
 * f32 -> f32 workgroup-scope ones are kept, the one with the most
 * invocations taken by default. */
static const struct {
    uint32_t m, n, k, a, c, saturating, scope, invocations;
} flexible_rows[] = {
    {16, 16, 16, 0, 1, 0, 2, 128},  /* f16, workgroup scope, 128 invocations */
    {32, 32, 16, 0, 1, 0, 2, 256},  /* the same for 256: taken */
    {16, 16, 16, 0, 0, 0, 2, 512},  /* f16 accumulators: no */
    {16, 8, 16, 0, 1, 0, 3, 1024},  /* subgroup scope: no */
    {16, 16, 32, 3, 5, 0, 2, 1024}, /* int8: no */
    {16, 16, 16, 0, 1, 1, 2, 1024}, /* saturating: no */
};

static VkResult VKAPI_PTR flexible_shapes(VkPhysicalDevice pd, uint32_t *n,
                                          VkCooperativeMatrixFlexibleDimensionsPropertiesNV *p)
{
    (void)pd;
    const uint32_t listed = sizeof flexible_rows / sizeof flexible_rows[0];
    if (p)
        for (uint32_t i = 0; i < *n && i < listed; i++) {
            VkStructureType want =
                VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV;
            assert_int_equal(p[i].sType, want);
            p[i].MGranularity = flexible_rows[i].m;
            p[i].NGranularity = flexible_rows[i].n;
            p[i].KGranularity = flexible_rows[i].k;
            p[i].AType = p[i].BType = flexible_rows[i].a;
            p[i].CType = p[i].ResultType = flexible_rows[i].c;
            p[i].saturatingAccumulation = flexible_rows[i].saturating;
            p[i].scope = flexible_rows[i].scope;
            p[i].workgroupInvocations = flexible_rows[i].invocations;
        }
    *n = listed;
    return VK_SUCCESS;
}

static device_caps query(bool nv, bool khr, const char *khr_env)
{
    dev.nv = nv, dev.khr = khr;
    dev.properties_type_seen = dev.features_type_seen = 0;
    dev.coopmat2_seen = dev.bf16_seen = false;
    if (khr_env)
        setenv("VKATTN_COOPMAT_KHR", khr_env, 1);
    else
        unsetenv("VKATTN_COOPMAT_KHR");
    VkExtensionProperties exts[5] = {{"VK_KHR_shader_float16_int8", 1}};
    uint32_t count = 1;
    if (nv)
        strcpy(exts[count++].extensionName, "VK_NV_cooperative_matrix");
    if (khr)
        strcpy(exts[count++].extensionName, "VK_KHR_cooperative_matrix");
    if (dev.coopmat2)
        strcpy(exts[count++].extensionName, "VK_NV_cooperative_matrix2");
    if (dev.bf16)
        strcpy(exts[count++].extensionName, "VK_KHR_shader_bfloat16");
    vk_instance_table vki = {
        .GetPhysicalDeviceProperties2 = get_properties2,
        .GetPhysicalDeviceFeatures2 = get_features2,
        .EnumerateDeviceLayerProperties = layers,
        .GetPhysicalDeviceCooperativeMatrixPropertiesNV = nv ? shapes_nv : NULL,
        .GetPhysicalDeviceCooperativeMatrixPropertiesKHR = khr ? shapes_khr : NULL,
        .GetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV = flexible_shapes,
    };
    device_caps caps;
    device_caps_query(&vki, (VkPhysicalDevice)(uintptr_t)1, VK_API_VERSION_1_2, exts, count, &caps);
    unsetenv("VKATTN_COOPMAT_KHR");
    return caps;
}

static void expect_taken_shapes(const device_caps *caps)
{
    assert_int_equal(caps->coopmat_shape_count, 2);
    assert_int_equal(caps->coopmat_shapes[0].m, 16);
    assert_int_equal(caps->coopmat_shapes[0].n, 8);
    assert_int_equal(caps->coopmat_shapes[1].n, 16);
    assert_int_equal(caps->coopmat_shapes[1].k, 16);
}

static bool lists(const vkattn_device_features *f, const char *name)
{
    for (uint32_t i = 0; i < f->extension_count; i++)
        if (strcmp(f->extensions[i], name) == 0)
            return true;
    return false;
}

static void test_nv_only(void **state)
{
    (void)state;
    dev.stages = VK_SHADER_STAGE_COMPUTE_BIT;
    device_caps caps = query(true, false, "1"); /* KHR asked for, the device lacks it */
    assert_true(caps.coopmat);
    assert_false(caps.coopmat_khr);
    assert_int_equal(dev.features_type_seen,
                     VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
    expect_taken_shapes(&caps);
    vkattn_device_features f;
    device_caps_features(&caps, &f);
    assert_true(lists(&f, "VK_NV_cooperative_matrix"));
    assert_false(lists(&f, "VK_KHR_cooperative_matrix"));
    assert_int_equal(f.cooperative_matrix.sType,
                     VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
    device_caps e = device_caps_enabled(&caps, &f);
    assert_true(e.coopmat);
    assert_false(e.coopmat_khr);
}

static void test_khr_only(void **state)
{
    (void)state;
    dev.stages = VK_SHADER_STAGE_COMPUTE_BIT;
    device_caps caps = query(false, true, NULL);
    assert_true(caps.coopmat);
    assert_true(caps.coopmat_khr);
    assert_int_equal(dev.properties_type_seen,
                     VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR);
    assert_int_equal(dev.features_type_seen,
                     VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR);
    expect_taken_shapes(&caps); /* the saturating 32x32x16 passed over */
    vkattn_device_features f;
    device_caps_features(&caps, &f);
    assert_true(lists(&f, "VK_KHR_cooperative_matrix"));
    assert_false(lists(&f, "VK_NV_cooperative_matrix"));
    assert_int_equal(f.cooperative_matrix.sType,
                     VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR);
    assert_true(f.cooperative_matrix.cooperativeMatrix);
    /* The chain reaches the structure vkCreateDevice must see. */
    bool chained = false;
    for (VkBaseOutStructure *s = f.chain; s; s = s->pNext)
        chained |= s == (void *)&f.cooperative_matrix;
    assert_true(chained);
    device_caps e = device_caps_enabled(&caps, &f);
    assert_true(e.coopmat);
    assert_true(e.coopmat_khr);
    assert_int_equal(e.coopmat_shape_count, 2);
    /* An application that enabled the NV structure has not enabled KHR's. */
    f.cooperative_matrix.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
    e = device_caps_enabled(&caps, &f);
    assert_false(e.coopmat);
    assert_false(e.coopmat_khr);
}

static void test_both(void **state)
{
    (void)state;
    dev.stages = VK_SHADER_STAGE_COMPUTE_BIT;
    device_caps caps = query(true, true, NULL);
    assert_true(caps.coopmat);
    assert_false(caps.coopmat_khr); /* NVIDIA's own, verified there */
    caps = query(true, true, "0");
    assert_false(caps.coopmat_khr);
    caps = query(true, true, "1");
    assert_true(caps.coopmat);
    assert_true(caps.coopmat_khr);
    expect_taken_shapes(&caps);
}

static void test_no_compute_stage(void **state)
{
    (void)state;
    dev.stages = VK_SHADER_STAGE_FRAGMENT_BIT;
    assert_false(query(false, true, NULL).coopmat);
    assert_false(query(true, false, NULL).coopmat);
    dev.stages = VK_SHADER_STAGE_COMPUTE_BIT;
    device_caps none = query(false, false, NULL);
    assert_false(none.coopmat);
    assert_false(none.coopmat_khr);
    assert_int_equal(none.coopmat_shape_count, 0);
}

/* Kernels that count a row's lanes as gl_SubgroupSize (the subgroup softmax,
 * the decode kernel) run only where subgroups are whole: a size that can be
 * required with full subgroups, or a device of one size. Intel's Mesa driver
 * reports 32 where the size varies (8 to 32) and may run 16 lanes of it. */
static void test_whole_subgroups(void **state)
{
    (void)state;
    device_caps varying = {.subgroup_min = 8, .subgroup_max = 32};
    assert_false(device_caps_whole_subgroups(&varying));
    varying.subgroup_size_control = true;
    assert_true(device_caps_whole_subgroups(&varying));
    device_caps fixed = {.subgroup_min = 32, .subgroup_max = 32};
    assert_true(device_caps_whole_subgroups(&fixed));
    device_caps unknown = {0};
    assert_false(device_caps_whole_subgroups(&unknown));
    /* An application that did not enable size control: the device's range
     * remains, the control does not. */
    vkattn_device_features none;
    memset(&none, 0, sizeof none);
    device_caps adopted = device_caps_enabled(&varying, &none);
    assert_false(adopted.subgroup_size_control);
    assert_false(device_caps_whole_subgroups(&adopted));
    assert_true(device_caps_whole_subgroups(&(device_caps){
        .subgroup_min = 64, .subgroup_max = 64}));
    /* The refusal every such kernel gives names the device and its sizes,
     * and fits the callers' 256 bytes. */
    char why[256];
    device_caps_whole_subgroups_why(&adopted, "Intel(R) Arc(tm) A770 Graphics (DG2)", why,
                                    sizeof why);
    assert_non_null(strstr(why, "needs whole subgroups"));
    assert_non_null(strstr(why, "Intel(R) Arc(tm) A770 Graphics (DG2) lacks"));
    assert_non_null(strstr(why, "it has 8 to 32)"));
}

/* VK_NV_cooperative_matrix2 is reported (its features and limits, one line
 * logged as a context starts), never enabled for an application's device: no
 * kernel uses it yet (the rate probe enables its workgroup scope on a device
 * vkattn creates, test_api's test_coopmat_peak_probe). */
static void test_coopmat2_reported(void **state)
{
    (void)state;
    dev.stages = VK_SHADER_STAGE_COMPUTE_BIT;
    dev.coopmat2 = true;
    device_caps caps = query(true, false, NULL);
    dev.coopmat2 = false;
    assert_true(dev.coopmat2_seen);
    assert_true(caps.coopmat2);
    assert_int_equal(caps.coopmat2_features,
                     DEVICE_COOPMAT2_WORKGROUP_SCOPE | DEVICE_COOPMAT2_REDUCTIONS |
                         DEVICE_COOPMAT2_CONVERSIONS | DEVICE_COOPMAT2_PER_ELEMENT |
                         DEVICE_COOPMAT2_TENSOR_ADDRESSING | DEVICE_COOPMAT2_BLOCK_LOADS);
    char line[320];
    device_caps_coopmat2_describe(&caps, line, sizeof line);
    assert_non_null(strstr(line, "listed; features: workgroup scope, reductions, conversions, "
                                 "per-element operations, tensor addressing, block loads;"));
    assert_non_null(strstr(line, "up to 256 invocations (512 bytes of shared memory reserved), "
                                 "flexible dimensions up to 8192; no kernel uses it"));
    /* Without flexible dimensions, no workgroup-scope products are taken. */
    assert_int_equal(caps.coopmat2_invocations, 0);
    assert_null(strstr(line, "workgroup-scope products"));
    vkattn_device_features f;
    device_caps_features(&caps, &f);
    assert_false(lists(&f, "VK_NV_cooperative_matrix2"));
    /* With them, the f16 workgroup-scope products with the most invocations. */
    dev.coopmat2 = dev.flexible = true;
    caps = query(true, false, NULL);
    dev.coopmat2 = dev.flexible = false;
    assert_true(caps.coopmat2_features & DEVICE_COOPMAT2_FLEXIBLE_DIMENSIONS);
    assert_int_equal(caps.coopmat2_invocations, 256);
    assert_int_equal(caps.coopmat2_granularity[0], 32);
    assert_int_equal(caps.coopmat2_granularity[1], 32);
    assert_int_equal(caps.coopmat2_granularity[2], 16);
    /* and every f16 one it lists, in its order (a tuning may take another) */
    assert_int_equal(caps.coopmat2_shape_count, 2);
    assert_int_equal(caps.coopmat2_shapes[0].invocations, 128);
    assert_int_equal(caps.coopmat2_shapes[0].granularity[0], 16);
    assert_int_equal(caps.coopmat2_shapes[0].granularity[1], 16);
    assert_int_equal(caps.coopmat2_shapes[0].granularity[2], 16);
    assert_int_equal(caps.coopmat2_shapes[1].invocations, 256);
    assert_int_equal(caps.coopmat2_shapes[1].granularity[0], 32);
    assert_false(caps.coopmat2_workgroup); /* enabled only by device creation */
    char long_line[512];
    device_caps_coopmat2_describe(&caps, long_line, sizeof long_line);
    assert_non_null(strstr(long_line, "; f16 workgroup-scope products in multiples of 16x16x16 "
                                      "for workgroups of 128, multiples of 32x32x16 for "
                                      "workgroups of 256; no kernel uses it"));
    device_caps_features(&caps, &f);
    assert_false(lists(&f, "VK_NV_cooperative_matrix2"));
    /* A short buffer is cut, not overrun. */
    char short_line[24];
    device_caps_coopmat2_describe(&caps, short_line, sizeof short_line);
    assert_int_equal(strlen(short_line), sizeof short_line - 1);

    /* Under a layer as new as the extension (1.3.299) its structures are queried. */
    dev.coopmat2 = true;
    dev.layer_version = VK_MAKE_API_VERSION(0, 1, 3, 299);
    caps = query(true, false, NULL);
    assert_true(dev.coopmat2_seen);
    assert_int_equal(caps.coopmat2_workgroup_max, 256);
    assert_string_equal(caps.coopmat2_unqueried_why, "");
    /* Under an older one (Debian 12's validation layer) they stay out of the
     * chain, which that layer would flag, and the line says why. */
    dev.layer_version = VK_MAKE_API_VERSION(0, 1, 3, 239);
    caps = query(true, false, NULL);
    assert_false(dev.coopmat2_seen);
    assert_true(caps.coopmat2);
    assert_int_equal(caps.coopmat2_features, 0);
    assert_int_equal(caps.coopmat2_workgroup_max, 0);
    assert_true(caps.coopmat);  /* the rest of the query is untouched */
    device_caps_coopmat2_describe(&caps, line, sizeof line);
    assert_string_equal(line, "listed; features and limits not queried: the active layer "
                              "VK_LAYER_KHRONOS_validation 1.3.239 is older than the extension "
                              "and would flag its structures; not used by vkattn's kernels");
    /* A list that cannot be read counts as such a layer. */
    dev.layer_version = VK_MAKE_API_VERSION(0, 1, 3, 299);
    dev.layers_result = VK_ERROR_OUT_OF_HOST_MEMORY;
    caps = query(true, false, NULL);
    dev.layers_result = VK_SUCCESS;
    dev.coopmat2 = false;
    dev.layer_version = 0;
    assert_false(dev.coopmat2_seen);
    device_caps_coopmat2_describe(&caps, line, sizeof line);
    assert_string_equal(line, "listed; features and limits not queried: the active layers "
                              "could not be listed (out of host memory); not used by "
                              "vkattn's kernels");

    caps = query(true, false, NULL);
    assert_false(caps.coopmat2);
    assert_int_equal(caps.coopmat2_features, 0);
    device_caps_coopmat2_describe(&caps, line, sizeof line);
    assert_string_equal(line, "not listed");
}

/* VK_KHR_shader_bfloat16's matrices are reported (vkattn devices, the log)
 * where the device lists the extension with the KHR matrices, both features
 * and bf16 x bf16 + f32 -> f32 subgroup shapes, whichever extension the
 * kernels take. Never in the features an application enables for vkattn
 * (a device vkattn creates enables them itself, device.c). */
static void test_bf16_reported(void **state)
{
    (void)state;
    dev.stages = VK_SHADER_STAGE_COMPUTE_BIT;
    dev.bf16 = true;
    dev.bf16_matrices = VK_TRUE;
    char line[256];
    for (int khr_taken = 0; khr_taken < 2; khr_taken++) {
        /* NVIDIA: both extensions, the NV one taken unless asked; AMD/Intel: KHR */
        device_caps caps = query(!khr_taken, true, NULL);
        assert_true(dev.bf16_seen);
        assert_true(caps.bf16_listed);
        assert_int_equal(caps.coopmat_khr, khr_taken);
        assert_int_equal(caps.bf16_shape_count, 2);
        assert_int_equal(caps.bf16_shapes[0].m, 16);
        assert_int_equal(caps.bf16_shapes[0].n, 8);
        assert_int_equal(caps.bf16_shapes[1].m, 32);
        expect_taken_shapes(&caps); /* the f16 ones as before, from either list */
        device_caps_bf16_describe(&caps, line, sizeof line);
        assert_string_equal(line, "VK_KHR_shader_bfloat16's bf16 x bf16 + f32 subgroup "
                                  "products: 16x8x16, 32x8x16; the coopmat kernel takes them "
                                  "with the tuning coopmat.bf16=2 where it takes the KHR "
                                  "extension (else it converts bf16 to f16 as it stages it)");
        vkattn_device_features f;
        device_caps_features(&caps, &f);
        assert_false(lists(&f, "VK_KHR_shader_bfloat16"));
    }
    /* Without the matrices feature: no shapes. */
    dev.bf16_matrices = VK_FALSE;
    device_caps caps = query(false, true, NULL);
    assert_int_equal(caps.bf16_shape_count, 0);
    device_caps_bf16_describe(&caps, line, sizeof line);
    assert_non_null(strstr(line, "products: none; the coopmat kernel"));
    /* bf16 shapes but no f16 ones: no cooperative matrices for the kernels,
     * so no bf16 ones either (their device would lack VK_KHR_cooperative_matrix). */
    dev.bf16_matrices = VK_TRUE;
    dev.bf16_shapes_only = true;
    caps = query(false, true, NULL);
    dev.bf16_shapes_only = false;
    assert_false(caps.coopmat);
    assert_int_equal(caps.bf16_shape_count, 0);
    /* Under Debian 12's validation layer the structure stays out of the chain. */
    dev.bf16_matrices = VK_TRUE;
    dev.layer_version = VK_MAKE_API_VERSION(0, 1, 3, 239);
    caps = query(false, true, NULL);
    dev.layer_version = 0;
    assert_false(dev.bf16_seen);
    assert_int_equal(caps.bf16_shape_count, 0);
    assert_true(caps.coopmat);
    device_caps_bf16_describe(&caps, line, sizeof line);
    assert_string_equal(line, "VK_KHR_shader_bfloat16 listed; not queried: the active layer "
                              "VK_LAYER_KHRONOS_validation 1.3.239 is older than the extension "
                              "and would flag its structures");
    /* Only with the KHR matrices: NV's have no bf16. */
    caps = query(true, false, NULL);
    assert_false(caps.bf16_listed);
    assert_false(dev.bf16_seen);
    dev.bf16 = false;
    caps = query(false, true, NULL);
    assert_false(caps.bf16_listed);
    assert_false(dev.bf16_seen);
    assert_int_equal(caps.bf16_shape_count, 0);
    device_caps_bf16_describe(&caps, line, sizeof line);
    assert_string_equal(line, "VK_KHR_shader_bfloat16 with VK_KHR_cooperative_matrix not listed");
}

/* Workgroup scope is enabled, for the probes that ask, only through the KHR
 * extension on a device with both features and f16 workgroup-scope products. */
static void test_workgroup_scope_wanted(void **state)
{
    (void)state;
    dev.stages = VK_SHADER_STAGE_COMPUTE_BIT;
    dev.coopmat2 = dev.flexible = true;
    device_caps khr = query(false, true, NULL), nv = query(true, false, NULL);
    dev.flexible = false;
    device_caps rigid = query(false, true, NULL);
    dev.coopmat2 = false;
    assert_true(device_caps_workgroup_scope_wanted(&khr, true));
    assert_false(device_caps_workgroup_scope_wanted(&khr, false));  /* no probe asks */
    assert_false(device_caps_workgroup_scope_wanted(&nv, true));    /* NV's extension */
    assert_false(device_caps_workgroup_scope_wanted(&rigid, true)); /* no flexible sizes */
    khr.coopmat2_invocations = 0;
    assert_false(device_caps_workgroup_scope_wanted(&khr, true));
}

/* vkCreateDevice as a driver that refuses VK_NV_cooperative_matrix2: each
 * call's extensions and chain, and the result. */
static struct {
    int calls;
    bool refuse_optional, refuse_all;
    bool optional_listed[2], optional_chained[2], float16_chained[2];
    uint32_t extension_count[2];
} create;

static VkResult VKAPI_PTR create_device(VkPhysicalDevice pd, const VkDeviceCreateInfo *info,
                                        const VkAllocationCallbacks *allocator, VkDevice *out)
{
    (void)pd, (void)allocator;
    int call = create.calls++;
    assert_true(call < 2);
    bool listed = false, chained = false, float16 = false;
    for (uint32_t i = 0; i < info->enabledExtensionCount; i++)
        listed = listed ||
                 strcmp(info->ppEnabledExtensionNames[i], "VK_NV_cooperative_matrix2") == 0;
    for (const VkBaseInStructure *c = info->pNext; c; c = c->pNext) {
        VkStructureType t = c->sType;
        chained = chained ||
                  t == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV;
        float16 = float16 || t == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
    }
    create.optional_listed[call] = listed;
    create.optional_chained[call] = chained;
    create.float16_chained[call] = float16;
    create.extension_count[call] = info->enabledExtensionCount;
    if (create.refuse_all || (create.refuse_optional && listed))
        return VK_ERROR_EXTENSION_NOT_PRESENT;
    *out = (VkDevice)(uintptr_t)0x1234;
    return VK_SUCCESS;
}

static VkResult create_with(bool optional, VkResult *optional_result)
{
    vk_instance_table vki = {.CreateDevice = create_device};
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceCooperativeMatrix2FeaturesNV coopmat2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
    VkDeviceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &f16};
    const char *extensions[3] = {"VK_KHR_cooperative_matrix", "VK_KHR_shader_float16_int8"};
    VkDevice device = VK_NULL_HANDLE;
    create.calls = 0;
    VkResult r = device_create_with_optional(&vki, (VkPhysicalDevice)(uintptr_t)1, info,
                                             extensions, 2, optional ? &coopmat2 : NULL,
                                             "VK_NV_cooperative_matrix2", optional_result,
                                             &device);
    assert_true(r != VK_SUCCESS || device != VK_NULL_HANDLE);
    return r;
}

/* A diagnostic's feature never costs a context its device: a driver that
 * refuses it gets the device asked for again without it, the rest of the
 * chain and the extensions as they were. */
static void test_create_with_optional(void **state)
{
    (void)state;
    VkResult optional_result;
    memset(&create, 0, sizeof create);
    assert_int_equal(create_with(true, &optional_result), VK_SUCCESS);  /* taken */
    assert_int_equal(create.calls, 1);
    assert_int_equal(optional_result, VK_SUCCESS);
    assert_true(create.optional_listed[0] && create.optional_chained[0]);
    assert_true(create.float16_chained[0]);
    assert_int_equal(create.extension_count[0], 3);

    create.refuse_optional = true;                                   /* refused: again without */
    assert_int_equal(create_with(true, &optional_result), VK_SUCCESS);
    assert_int_equal(create.calls, 2);
    assert_int_equal(optional_result, VK_ERROR_EXTENSION_NOT_PRESENT);
    assert_false(create.optional_listed[1] || create.optional_chained[1]);
    assert_true(create.float16_chained[1]);
    assert_int_equal(create.extension_count[1], 2);

    assert_int_equal(create_with(false, &optional_result), VK_SUCCESS); /* none asked */
    assert_int_equal(create.calls, 1);
    assert_int_equal(optional_result, VK_SUCCESS);
    assert_false(create.optional_listed[0] || create.optional_chained[0]);

    create.refuse_all = true;                                        /* the device's own failure */
    assert_int_equal(create_with(true, &optional_result), VK_ERROR_EXTENSION_NOT_PRESENT);
    assert_int_equal(create.calls, 2);
    assert_int_equal(create_with(false, &optional_result), VK_ERROR_EXTENSION_NOT_PRESENT);
    assert_int_equal(create.calls, 1);
    assert_int_equal(optional_result, VK_SUCCESS);
}

/* Where each coopmat kernel is AUTO's choice (coopmat_verified.c): the vendor
 * and the build its current revision passed the GPU check with, for the inputs
 * it passed with; VKATTN_COOPMAT=0 or 1 overrides. */
static bool chosen(uint32_t vendor, bool khr, coopmat_kernel kernel, bool bf16, const char *env)
{
    static vkattn_context ctx; /* large: not on the stack */
    memset(&ctx, 0, sizeof ctx);
    ctx.info.vendor_id = vendor;
    ctx.vk.enabled.coopmat_khr = khr;
    if (env)
        setenv("VKATTN_COOPMAT", env, 1);
    else
        unsetenv("VKATTN_COOPMAT");
    bool taken = coopmat_default(&ctx, kernel, bf16);
    unsetenv("VKATTN_COOPMAT");
    return taken;
}

static void test_coopmat_defaults(void **state)
{
    (void)state;
    const uint32_t nvidia = 0x10de, amd = 0x1002, intel = 0x8086;
    for (int khr = 0; khr < 2; khr++) { /* the H200 passed both builds */
        assert_true(chosen(nvidia, khr, COOPMAT_KERNEL_ATTENTION, false, NULL));
        assert_true(chosen(nvidia, khr, COOPMAT_KERNEL_ATTENTION, true, NULL));
        assert_true(chosen(nvidia, khr, COOPMAT_KERNEL_MATMUL, false, NULL));
        assert_false(chosen(nvidia, khr, COOPMAT_KERNEL_ATTENTION, false, "0"));
        assert_false(chosen(nvidia, khr, COOPMAT_KERNEL_MATMUL, false, "0"));
    }
    /* No AMD or Intel device has run them: only on request. */
    for (int k = 0; k < 2; k++) {
        coopmat_kernel kernel = k ? COOPMAT_KERNEL_MATMUL : COOPMAT_KERNEL_ATTENTION;
        assert_false(chosen(amd, true, kernel, false, NULL));
        assert_false(chosen(intel, true, kernel, false, NULL));
        assert_true(chosen(amd, true, kernel, false, "1"));
        assert_true(chosen(intel, true, kernel, true, "1"));
    }
    /* An empty value is unset. */
    assert_true(chosen(nvidia, false, COOPMAT_KERNEL_MATMUL, false, ""));
    assert_false(chosen(amd, true, COOPMAT_KERNEL_MATMUL, false, ""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nv_only),
        cmocka_unit_test(test_khr_only),
        cmocka_unit_test(test_both),
        cmocka_unit_test(test_no_compute_stage),
        cmocka_unit_test(test_whole_subgroups),
        cmocka_unit_test(test_coopmat2_reported),
        cmocka_unit_test(test_bf16_reported),
        cmocka_unit_test(test_workgroup_scope_wanted),
        cmocka_unit_test(test_create_with_optional),
        cmocka_unit_test(test_coopmat_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
