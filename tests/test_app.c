#include "test_app.h"

#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static VkBool32 VKAPI_PTR on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                     VkDebugUtilsMessageTypeFlagsEXT types,
                                     const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)types;
    test_app *a = user;
    if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        a->validation_messages++;
        fprintf(stderr, "VALIDATION: %s\n", data->pMessage);
    }
    return VK_FALSE;
}

static void create_instance(test_app *a)
{
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME,
                                VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
    VkValidationFeatureEnableEXT enables[] = {
        VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                        .enabledValidationFeatureCount = 1,
                                        .pEnabledValidationFeatures = enables};
    VkApplicationInfo info = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                              .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pNext = &features,
                               .pApplicationInfo = &info,
                               .enabledLayerCount = 1,
                               .ppEnabledLayerNames = layers,
                               .enabledExtensionCount = 2,
                               .ppEnabledExtensionNames = extensions};
    VkResult r = vkCreateInstance(&ii, NULL, &a->instance);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
        fprintf(stderr, "no Vulkan driver: skipping\n");
        exit(TEST_SKIP_CODE);
    }
    if (r == VK_ERROR_LAYER_NOT_PRESENT || r == VK_ERROR_EXTENSION_NOT_PRESENT)
        fail_msg("the Khronos validation layer is not installed");
    assert_int_equal(r, VK_SUCCESS);
    PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(a->instance,
                                                                  "vkCreateDebugUtilsMessengerEXT");
    VkDebugUtilsMessengerCreateInfoEXT mi = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
        .pfnUserCallback = on_message,
        .pUserData = a,
    };
    assert_int_equal(create_messenger(a->instance, &mi, NULL, &a->messenger), VK_SUCCESS);
}

static void create(test_app *a, bool with_features)
{
    memset(a, 0, sizeof *a);
    a->with_features = with_features;
    create_instance(a);
    /* The application's own choice: the first device with a compute queue. */
    uint32_t n = 8;
    VkPhysicalDevice devices[8];
    vkEnumeratePhysicalDevices(a->instance, &n, devices);
    for (uint32_t i = 0; i < n && !a->physical_device; i++) {
        uint32_t nf = 16;
        VkQueueFamilyProperties families[16];
        vkGetPhysicalDeviceQueueFamilyProperties(devices[i], &nf, families);
        for (uint32_t f = 0; f < nf && !a->physical_device; f++)
            if (families[f].queueFlags & VK_QUEUE_COMPUTE_BIT) {
                a->physical_device = devices[i];
                a->family = f;
            }
    }
    if (!a->physical_device) {
        fprintf(stderr, "no Vulkan device: skipping\n");
        exit(TEST_SKIP_CODE);
    }
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                  .queueFamilyIndex = a->family,
                                  .queueCount = 1,
                                  .pQueuePriorities = &priority};
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &qi};
    if (with_features) {
        assert_int_equal(vkattn_device_features_query(a->instance, vkGetInstanceProcAddr,
                                                      a->physical_device, &a->features),
                         VKATTN_OK);
        di.pNext = a->features.chain;
        di.enabledExtensionCount = a->features.extension_count;
        di.ppEnabledExtensionNames = a->features.extensions;
    }
    assert_int_equal(vkCreateDevice(a->physical_device, &di, NULL, &a->device), VK_SUCCESS);
    vkGetDeviceQueue(a->device, a->family, 0, &a->queue);
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .queueFamilyIndex = a->family};
    assert_int_equal(vkCreateCommandPool(a->device, &pi, NULL, &a->pool), VK_SUCCESS);
}

void test_app_destroy(test_app *a)
{
    vkDestroyCommandPool(a->device, a->pool, NULL);
    vkDestroyDevice(a->device, NULL);
    PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger =
        (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(a->instance,
                                                                   "vkDestroyDebugUtilsMessengerEXT");
    destroy_messenger(a->instance, a->messenger, NULL);
    vkDestroyInstance(a->instance, NULL);
}

void test_app_create(test_app *a) { create(a, false); }
void test_app_create_with_features(test_app *a) { create(a, true); }

vkattn_vulkan_handles test_app_handles(const test_app *a)
{
    return (vkattn_vulkan_handles){
        .instance = a->instance,
        .physical_device = a->physical_device,
        .device = a->device,
        .queue_family_index = a->family,
        .queue = a->queue,
        .get_instance_proc_addr = vkGetInstanceProcAddr,
        .enabled_features = a->with_features ? &a->features : NULL,
    };
}
