/* Adoption: the application creates its own instance, device and queue (with
 * its own validation messenger), hands them to vkattn, runs a matmul and a
 * softmax, destroys the vkattn context, keeps using its device, then destroys
 * it: validation-clean throughout. This test links the Vulkan loader itself, as
 * an application would. */
#include <vulkan/vulkan.h>

#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int app_messages;

static VkBool32 VKAPI_PTR on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                     VkDebugUtilsMessageTypeFlagsEXT types,
                                     const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)types;
    (void)user;
    if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        app_messages++;
        fprintf(stderr, "VALIDATION: %s\n", data->pMessage);
    }
    return VK_FALSE;
}

static void test_adopted_device(void **state)
{
    (void)state;
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo ii = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
        .enabledLayerCount = 1,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = 1,
        .ppEnabledExtensionNames = extensions,
    };
    VkInstance instance;
    VkResult r = vkCreateInstance(&ii, NULL, &instance);
    if (r == VK_ERROR_LAYER_NOT_PRESENT)
        fail_msg("the Khronos validation layer is not installed");
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
        fprintf(stderr, "no Vulkan driver: skipping\n");
        exit(TEST_SKIP_CODE);
    }
    assert_int_equal(r, VK_SUCCESS);
    PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance,
                                                                  "vkCreateDebugUtilsMessengerEXT");
    PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger =
        (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance,
                                                                   "vkDestroyDebugUtilsMessengerEXT");
    VkDebugUtilsMessengerCreateInfoEXT mi = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
        .pfnUserCallback = on_message,
    };
    VkDebugUtilsMessengerEXT messenger;
    assert_int_equal(create_messenger(instance, &mi, NULL, &messenger), VK_SUCCESS);

    /* The application's own choice: the first device with a compute queue. */
    uint32_t n = 8;
    VkPhysicalDevice devices[8];
    vkEnumeratePhysicalDevices(instance, &n, devices);
    VkPhysicalDevice pd = VK_NULL_HANDLE;
    uint32_t family = 0;
    for (uint32_t i = 0; i < n && !pd; i++) {
        uint32_t nf = 16;
        VkQueueFamilyProperties families[16];
        vkGetPhysicalDeviceQueueFamilyProperties(devices[i], &nf, families);
        for (uint32_t f = 0; f < nf && !pd; f++)
            if (families[f].queueFlags & VK_QUEUE_COMPUTE_BIT) {
                pd = devices[i];
                family = f;
            }
    }
    if (!pd) {
        fprintf(stderr, "no Vulkan device: skipping\n");
        exit(TEST_SKIP_CODE);
    }
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                  .queueFamilyIndex = family,
                                  .queueCount = 1,
                                  .pQueuePriorities = &priority};
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &qi};
    VkDevice device;
    assert_int_equal(vkCreateDevice(pd, &di, NULL, &device), VK_SUCCESS);
    VkQueue queue;
    vkGetDeviceQueue(device, family, 0, &queue);

    vkattn_vulkan_handles handles = {
        .instance = instance,
        .physical_device = pd,
        .device = device,
        .queue_family_index = family,
        .queue = queue,
        .get_instance_proc_addr = vkGetInstanceProcAddr,
    };
    test_log log = {0};
    vkattn_context_desc cd = {.adopt = &handles, .log_fn = test_logger, .log_user_data = &log};
    vkattn_context *ctx;
    assert_int_equal(vkattn_context_create(&cd, &ctx), VKATTN_OK);
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(ctx, &info), VKATTN_OK);
    assert_true(info.adopted);
    assert_int_equal(info.backend, VKATTN_BACKEND_VULKAN);

    /* A matmul and a softmax on the adopted device, checked against the CPU. */
    test_env env = {.gpu = ctx};
    vkattn_context_desc cpu_desc = {.backend = VKATTN_BACKEND_CPU};
    assert_int_equal(vkattn_context_create(&cpu_desc, &env.cpu), VKATTN_OK);
    rng rg = {11};
    int64_t as[2] = {37, 29}, bs[2] = {29, 41}, cs[2] = {37, 41};
    pair a = pair_random(&env, VKATTN_DTYPE_F32, 2, as, &rg, -1, 1);
    pair b = pair_random(&env, VKATTN_DTYPE_F32, 2, bs, &rg, -1, 1);
    pair c = pair_output(&env, 2, cs);
    pair p = pair_output(&env, 2, cs);
    assert_int_equal(vkattn_matmul(ctx, NULL, a.gpu, b.gpu, NULL, c.gpu), VKATTN_OK);
    assert_int_equal(vkattn_matmul(env.cpu, NULL, a.cpu, b.cpu, NULL, c.cpu), VKATTN_OK);
    vkattn_softmax_desc sd = {.causal = true};
    assert_int_equal(vkattn_softmax(ctx, &sd, c.gpu, p.gpu), VKATTN_OK);
    assert_int_equal(vkattn_softmax(env.cpu, &sd, c.cpu, p.cpu), VKATTN_OK);
    expect_close("adopted matmul", &c, 1e-5, 1e-5, NULL);
    expect_close("adopted softmax", &p, 2e-6, 2e-5, NULL);
    pair_destroy(&a);
    pair_destroy(&b);
    pair_destroy(&c);
    pair_destroy(&p);
    vkattn_context_destroy(env.cpu);
    vkattn_context_destroy(ctx);

    /* The application's objects are intact: its queue still works. */
    assert_int_equal(vkQueueWaitIdle(queue), VK_SUCCESS);
    assert_int_equal(vkDeviceWaitIdle(device), VK_SUCCESS);
    vkDestroyDevice(device, NULL);
    destroy_messenger(instance, messenger, NULL);
    vkDestroyInstance(instance, NULL);
    assert_int_equal(app_messages, 0);
    assert_int_equal(log.validation_messages, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_adopted_device)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
