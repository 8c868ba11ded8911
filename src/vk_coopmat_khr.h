/* VK_KHR_cooperative_matrix's types, for Vulkan headers older than the
 * extension (Debian 12 has 1.3.239; the extension came with 1.3.255). With
 * newer headers theirs are used. Values from the Vulkan registry. */
#ifndef VKATTN_VK_COOPMAT_KHR_H
#define VKATTN_VK_COOPMAT_KHR_H

#include <vulkan/vulkan_core.h>

#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_cooperative_matrix 1
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR \
    ((VkStructureType)1000506000)
#define VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR ((VkStructureType)1000506001)
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR \
    ((VkStructureType)1000506002)

/* The same values as the NV extension's enums (the KHR ones alias them). */
typedef VkComponentTypeNV VkComponentTypeKHR;
typedef VkScopeNV VkScopeKHR;
#define VK_COMPONENT_TYPE_FLOAT16_KHR VK_COMPONENT_TYPE_FLOAT16_NV
#define VK_COMPONENT_TYPE_FLOAT32_KHR VK_COMPONENT_TYPE_FLOAT32_NV
#define VK_SCOPE_SUBGROUP_KHR VK_SCOPE_SUBGROUP_NV
#define VK_SCOPE_WORKGROUP_KHR VK_SCOPE_WORKGROUP_NV

typedef struct VkCooperativeMatrixPropertiesKHR {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize;
    uint32_t NSize;
    uint32_t KSize;
    VkComponentTypeKHR AType;
    VkComponentTypeKHR BType;
    VkComponentTypeKHR CType;
    VkComponentTypeKHR ResultType;
    VkBool32 saturatingAccumulation;
    VkScopeKHR scope;
} VkCooperativeMatrixPropertiesKHR;

typedef struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix;
    VkBool32 cooperativeMatrixRobustBufferAccess;
} VkPhysicalDeviceCooperativeMatrixFeaturesKHR;

typedef struct VkPhysicalDeviceCooperativeMatrixPropertiesKHR {
    VkStructureType sType;
    void *pNext;
    VkShaderStageFlags cooperativeMatrixSupportedStages;
} VkPhysicalDeviceCooperativeMatrixPropertiesKHR;

typedef VkResult(VKAPI_PTR *PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(
    VkPhysicalDevice physicalDevice, uint32_t *pPropertyCount,
    VkCooperativeMatrixPropertiesKHR *pProperties);
#endif

#endif
