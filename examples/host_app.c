/* An application with its own Vulkan instance, device and queue that hands them
 * to vkattn and records vkattn's attention into its own command buffer, between
 * its own commands, then keeps using its device after vkattn is gone.
 *
 * The application: uploads K and V through vkattn, writes Q itself with
 * vkCmdUpdateBuffer, runs vkattn's attention in the same command buffer, copies
 * O into a buffer of its own, submits, and checks the result against a plain C
 * computation. With the Khronos validation layer installed it enables it, with
 * synchronization validation, and fails on any message.
 *
 *     cc host_app.c $(pkg-config --cflags --libs vkattn) -lvulkan -lm -o host_app
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "vkattn.h"

#define T 16
#define D 8
#define CHECK(expr)                                                                       \
    do {                                                                                  \
        if (!(expr)) {                                                                    \
            fprintf(stderr, "host_app: %s failed (line %d)\n", #expr, __LINE__);          \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static int validation_messages;

static VkBool32 VKAPI_PTR on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                     VkDebugUtilsMessageTypeFlagsEXT types,
                                     const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)types;
    (void)user;
    if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        validation_messages++;
        fprintf(stderr, "VALIDATION: %s\n", data->pMessage);
    }
    return VK_FALSE;
}

static int has_validation_layer(void)
{
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, NULL);
    VkLayerProperties *layers = calloc(n ? n : 1, sizeof *layers);
    vkEnumerateInstanceLayerProperties(&n, layers);
    int found = 0;
    for (uint32_t i = 0; i < n; i++)
        found |= !strcmp(layers[i].layerName, "VK_LAYER_KHRONOS_validation");
    free(layers);
    return found;
}

/* The reference: causal attention of one head, in double. */
static void reference(const float *q, const float *k, const float *v, float *o)
{
    for (int i = 0; i < T; i++) {
        double s[T], max = -INFINITY, sum = 0.0;
        for (int j = 0; j <= i; j++) {
            s[j] = 0.0;
            for (int d = 0; d < D; d++)
                s[j] += (double)q[i * D + d] * k[j * D + d] / sqrt((double)D);
            max = s[j] > max ? s[j] : max;
        }
        for (int j = 0; j <= i; j++)
            sum += s[j] = exp(s[j] - max);
        for (int d = 0; d < D; d++) {
            double acc = 0.0;
            for (int j = 0; j <= i; j++)
                acc += s[j] * v[j * D + d];
            o[i * D + d] = (float)(acc / sum);
        }
    }
}

static void barrier(VkCommandBuffer cb, VkPipelineStageFlags src_stage, VkAccessFlags src,
                    VkPipelineStageFlags dst_stage, VkAccessFlags dst)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = src,
                          .dstAccessMask = dst};
    vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 1, &mb, 0, NULL, 0, NULL);
}

int main(void)
{
    /* ---- the application's own Vulkan objects ---- */
    int validate = has_validation_layer();
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME,
                                VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
    VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                        .enabledValidationFeatureCount = 1,
                                        .pEnabledValidationFeatures = &sync};
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "host_app",
                             .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pNext = validate ? &features : NULL,
                               .pApplicationInfo = &app,
                               .enabledLayerCount = validate ? 1 : 0,
                               .ppEnabledLayerNames = layers,
                               .enabledExtensionCount = validate ? 2 : 0,
                               .ppEnabledExtensionNames = extensions};
    VkInstance instance;
    CHECK(vkCreateInstance(&ii, NULL, &instance) == VK_SUCCESS);
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger = NULL;
    if (validate) {
        PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT");
        destroy_messenger = (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
            instance, "vkDestroyDebugUtilsMessengerEXT");
        VkDebugUtilsMessengerCreateInfoEXT mi = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
            .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
            .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
            .pfnUserCallback = on_message};
        CHECK(create_messenger(instance, &mi, NULL, &messenger) == VK_SUCCESS);
    }
    uint32_t n = 1;
    VkPhysicalDevice physical;
    VkResult r = vkEnumeratePhysicalDevices(instance, &n, &physical);
    CHECK((r == VK_SUCCESS || r == VK_INCOMPLETE) && n == 1);
    uint32_t nf = 16, family = UINT32_MAX;
    VkQueueFamilyProperties families[16];
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &nf, families);
    for (uint32_t f = 0; f < nf && family == UINT32_MAX; f++)
        if (families[f].queueFlags & VK_QUEUE_COMPUTE_BIT)
            family = f;
    CHECK(family != UINT32_MAX);
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                  .queueFamilyIndex = family,
                                  .queueCount = 1,
                                  .pQueuePriorities = &priority};
    /* What vkattn's faster kernels use (fp16, required subgroup sizes, matrix
     * units), where this device has it: enabled here, declared to vkattn below. */
    vkattn_device_features vkattn_features;
    CHECK(vkattn_device_features_query(instance, vkGetInstanceProcAddr, physical,
                                       &vkattn_features) == VKATTN_OK);
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .pNext = vkattn_features.chain,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &qi,
                             .enabledExtensionCount = vkattn_features.extension_count,
                             .ppEnabledExtensionNames = vkattn_features.extensions};
    VkDevice device;
    CHECK(vkCreateDevice(physical, &di, NULL, &device) == VK_SUCCESS);
    VkQueue queue;
    vkGetDeviceQueue(device, family, 0, &queue);
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .queueFamilyIndex = family};
    VkCommandPool pool;
    CHECK(vkCreateCommandPool(device, &pi, NULL, &pool) == VK_SUCCESS);

    /* ---- vkattn in the application's device ---- */
    vkattn_vulkan_handles handles = {instance, physical, device, family, queue,
                                     vkGetInstanceProcAddr, &vkattn_features};
    vkattn_context_desc cd = {.adopt = &handles};
    vkattn_context *ctx;
    CHECK(vkattn_context_create(&cd, &ctx) == VKATTN_OK);
    vkattn_tensor_desc td = {.dtype = VKATTN_DTYPE_F32, .ndim = 4, .shape = {1, 1, T, D}};
    vkattn_tensor *tq, *tk, *tv, *to;
    CHECK(vkattn_tensor_create(ctx, &td, &tq) == VKATTN_OK);
    CHECK(vkattn_tensor_create(ctx, &td, &tk) == VKATTN_OK);
    CHECK(vkattn_tensor_create(ctx, &td, &tv) == VKATTN_OK);
    CHECK(vkattn_tensor_create(ctx, &td, &to) == VKATTN_OK);
    float q[T * D], k[T * D], v[T * D], want[T * D];
    for (int i = 0; i < T * D; i++) {
        q[i] = sinf(0.37f * (float)i);
        k[i] = cosf(0.11f * (float)i);
        v[i] = (float)(i % 13) / 13.0f;
    }
    CHECK(vkattn_tensor_upload(tk, k, VKATTN_DTYPE_F32) == VKATTN_OK);
    CHECK(vkattn_tensor_upload(tv, v, VKATTN_DTYPE_F32) == VKATTN_OK);
    VkBuffer q_buffer, o_buffer;
    VkDeviceSize q_size, o_size;
    CHECK(vkattn_tensor_vulkan_buffer(tq, &q_buffer, &q_size) == VKATTN_OK);
    CHECK(vkattn_tensor_vulkan_buffer(to, &o_buffer, &o_size) == VKATTN_OK);

    /* The application's read-back buffer. */
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = sizeof want,
                             .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT};
    VkBuffer back;
    CHECK(vkCreateBuffer(device, &bi, NULL, &back) == VK_SUCCESS);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device, back, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(physical, &mp);
    uint32_t type = 0;
    VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    while (type < mp.memoryTypeCount &&
           !((req.memoryTypeBits >> type & 1) && (mp.memoryTypes[type].propertyFlags & host) == host))
        type++;
    CHECK(type < mp.memoryTypeCount);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = req.size,
                               .memoryTypeIndex = type};
    VkDeviceMemory back_memory;
    CHECK(vkAllocateMemory(device, &ai, NULL, &back_memory) == VK_SUCCESS);
    CHECK(vkBindBufferMemory(device, back, back_memory, 0) == VK_SUCCESS);
    float *out;
    CHECK(vkMapMemory(device, back_memory, 0, VK_WHOLE_SIZE, 0, (void **)&out) == VK_SUCCESS);

    /* ---- one command buffer: the application's work and vkattn's ---- */
    VkCommandBufferAllocateInfo cbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    VkCommandBuffer cb;
    CHECK(vkAllocateCommandBuffers(device, &cbi, &cb) == VK_SUCCESS);
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    CHECK(vkBeginCommandBuffer(cb, &begin) == VK_SUCCESS);
    vkCmdUpdateBuffer(cb, q_buffer, 0, sizeof q, q); /* the application writes Q */
    /* Entry barrier: the application's writes, before vkattn's compute shaders. */
    barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    CHECK(vkattn_recording_begin(ctx, cb) == VKATTN_OK);
    vkattn_attention_desc ad = {.causal = true};
    CHECK(vkattn_attention(ctx, &ad, tq, tk, tv, to) == VKATTN_OK);
    vkattn_recording *recording;
    CHECK(vkattn_recording_end(ctx, &recording) == VKATTN_OK);
    /* Exit barrier: vkattn's writes, before the application's copy. */
    barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    VkBufferCopy region = {0, 0, sizeof want};
    vkCmdCopyBuffer(cb, o_buffer, back, 1, &region);
    barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    CHECK(vkEndCommandBuffer(cb) == VK_SUCCESS);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
    CHECK(vkQueueSubmit(queue, 1, &si, VK_NULL_HANDLE) == VK_SUCCESS);
    CHECK(vkQueueWaitIdle(queue) == VK_SUCCESS);
    vkattn_recording_release(recording);

    reference(q, k, v, want);
    double worst = 0.0;
    for (int i = 0; i < T * D; i++)
        worst = fmax(worst, fabs((double)out[i] - want[i]));
    printf("attention in the application's command buffer: max error %.2e\n", worst);

    /* ---- vkattn gone, the application goes on with its device ---- */
    vkattn_tensor_destroy(tq);
    vkattn_tensor_destroy(tk);
    vkattn_tensor_destroy(tv);
    vkattn_tensor_destroy(to);
    vkattn_context_destroy(ctx);
    CHECK(vkResetCommandPool(device, pool, 0) == VK_SUCCESS);
    CHECK(vkBeginCommandBuffer(cb, &begin) == VK_SUCCESS);
    vkCmdFillBuffer(cb, back, 0, VK_WHOLE_SIZE, 0);
    barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    CHECK(vkEndCommandBuffer(cb) == VK_SUCCESS);
    CHECK(vkQueueSubmit(queue, 1, &si, VK_NULL_HANDLE) == VK_SUCCESS);
    CHECK(vkQueueWaitIdle(queue) == VK_SUCCESS);
    CHECK(out[0] == 0.0f);

    vkDestroyBuffer(device, back, NULL);
    vkFreeMemory(device, back_memory, NULL);
    vkDestroyCommandPool(device, pool, NULL);
    vkDestroyDevice(device, NULL);
    if (messenger)
        destroy_messenger(instance, messenger, NULL);
    vkDestroyInstance(instance, NULL);
    if (validation_messages)
        fprintf(stderr, "host_app: %d validation messages\n", validation_messages);
    return worst > 1e-5 || validation_messages;
}
