/* The Vulkan loader, the function tables, and the instance vkattn creates for
 * itself (the validation layer with synchronization validation, and the
 * messenger that hands its messages to the context's log). */
#include "internal.h"

#include <pthread.h>
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

void vk_load_instance_table(vk_instance_table *t, PFN_vkGetInstanceProcAddr gipa,
                            VkInstance instance)
{
#define LOAD_(name) t->name = (PFN_vk##name)gipa(instance, "vk" #name);
    VKATTN_INSTANCE_FUNCS(LOAD_)
    VKATTN_INSTANCE_DEBUG_FUNCS(LOAD_)
    VKATTN_INSTANCE_OPTIONAL_FUNCS(LOAD_)
#undef LOAD_
}

bool vk_instance_table_complete(const vk_instance_table *t)
{
#define CHECK_(name) if (!t->name) return false;
    VKATTN_INSTANCE_FUNCS(CHECK_)
#undef CHECK_
    return true;
}

bool vk_load_device_table(vk_device_table *t, PFN_vkGetDeviceProcAddr gdpa, VkDevice device)
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
vkattn_status vk_instance_create(PFN_vkGetInstanceProcAddr gipa, vkattn_validation level,
                                 VkInstance *out, uint32_t *api_version)
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
    if (api_version)
        *api_version = app.apiVersion;
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

/* ------------------------------------------------------- owned instance -- */

vkattn_status vk_instance_create_owned(vkattn_context *ctx, vkattn_validation wanted)
{
    vk_state *vk = &ctx->vk;
    PFN_vkGetInstanceProcAddr gipa = vk_loader();
    if (!gipa)
        return ctx_fail(ctx, VKATTN_ERROR_NO_DEVICE, "no Vulkan loader (libvulkan.so.1) found");

    vkattn_validation validation = validation_wanted(wanted);
    if (validation != VKATTN_VALIDATION_OFF && !layer_available(gipa, VALIDATION_LAYER)) {
        ctx_log(ctx, VKATTN_LOG_WARNING, "validation requested but %s is not installed",
                VALIDATION_LAYER);
        validation = VKATTN_VALIDATION_OFF;
    }
    vkattn_status s = vk_instance_create(gipa, validation, &vk->instance,
                                         &vk->instance_api_version);
    if (s != VKATTN_OK)
        return ctx_fail(ctx, s == VKATTN_ERROR_NO_DEVICE ? s : VKATTN_ERROR_VULKAN,
                        "cannot create a Vulkan 1.1 instance");
    vk->owns_instance = true;
    vk_load_instance_table(&vk->vki, gipa, vk->instance);
    if (!vk_instance_table_complete(&vk->vki))
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
    return VKATTN_OK;
}
