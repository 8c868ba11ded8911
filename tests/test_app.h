/* The application side of the adoption tests: an instance with the Khronos
 * validation layer (synchronization validation included) and its own messenger,
 * the first device with a compute queue, that queue, and a command pool. The
 * tests link the Vulkan loader itself, as applications do. */
#ifndef VKATTN_TEST_APP_H
#define VKATTN_TEST_APP_H

#include <vulkan/vulkan.h>

#include "vkattn.h"

typedef struct test_app {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical_device;
    VkDevice device;
    uint32_t family;
    VkQueue queue;
    VkCommandPool pool;
    int validation_messages; /* counted by the application's own messenger */
    bool with_features;      /* the device enables vkattn_device_features_query's */
    vkattn_device_features features;
} test_app;

/* Creates everything, or exits with TEST_SKIP_CODE when there is no Vulkan
 * device; fails the test if the validation layer is missing. */
void test_app_create(test_app *a);
/* The same, the device created with what vkattn_device_features_query asks for
 * (and vkattn told so by test_app_handles). */
void test_app_create_with_features(test_app *a);
/* Destroys everything (the device must be idle). */
void test_app_destroy(test_app *a);
/* The handles vkattn adopts. */
vkattn_vulkan_handles test_app_handles(const test_app *a);

#endif
