/* VK_KHR_shader_bfloat16's feature structure and component type, for Vulkan
 * headers older than the extension (Debian 12 has 1.3.239; it came with
 * 1.4.311). With newer headers theirs are used. Values from the Vulkan
 * registry (extension number 142). */
#ifndef VKATTN_VK_BFLOAT16_KHR_H
#define VKATTN_VK_BFLOAT16_KHR_H

#include "vk_coopmat_khr.h"

#include <vulkan/vulkan_core.h>

/* The header version that brought the extension: a validation layer written
 * against an older one flags its structure as unknown. */
#define VKATTN_BFLOAT16_KHR_HEADER_VERSION VK_MAKE_API_VERSION(0, 1, 4, 311)

#ifndef VK_KHR_shader_bfloat16
#define VK_KHR_shader_bfloat16 1
#define VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME "VK_KHR_shader_bfloat16"
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR ((VkStructureType)1000141000)
#define VK_COMPONENT_TYPE_BFLOAT16_KHR ((VkComponentTypeKHR)1000141000)

typedef struct VkPhysicalDeviceShaderBfloat16FeaturesKHR {
    VkStructureType sType;
    void *pNext;
    VkBool32 shaderBFloat16Type;
    VkBool32 shaderBFloat16DotProduct;
    VkBool32 shaderBFloat16CooperativeMatrix;
} VkPhysicalDeviceShaderBfloat16FeaturesKHR;
#endif

#endif
