/* VK_NV_cooperative_matrix2's feature and property structures, for Vulkan
 * headers older than the extension (Debian 12 has 1.3.239; it came with
 * 1.3.299). With newer headers theirs are used. Values from the Vulkan
 * registry. */
#ifndef VKATTN_VK_COOPMAT2_NV_H
#define VKATTN_VK_COOPMAT2_NV_H

#include "vk_coopmat_khr.h"

#include <vulkan/vulkan_core.h>

/* The header version that brought the extension: a layer written against an
 * older one does not know its structures. */
#define VKATTN_COOPMAT2_NV_HEADER_VERSION VK_MAKE_API_VERSION(0, 1, 3, 299)

#ifndef VK_NV_cooperative_matrix2
#define VK_NV_cooperative_matrix2 1
#define VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME "VK_NV_cooperative_matrix2"
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV \
    ((VkStructureType)1000593000)
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV \
    ((VkStructureType)1000593002)

typedef struct VkPhysicalDeviceCooperativeMatrix2FeaturesNV {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrixWorkgroupScope;
    VkBool32 cooperativeMatrixFlexibleDimensions;
    VkBool32 cooperativeMatrixReductions;
    VkBool32 cooperativeMatrixConversions;
    VkBool32 cooperativeMatrixPerElementOperations;
    VkBool32 cooperativeMatrixTensorAddressing;
    VkBool32 cooperativeMatrixBlockLoads;
} VkPhysicalDeviceCooperativeMatrix2FeaturesNV;

typedef struct VkPhysicalDeviceCooperativeMatrix2PropertiesNV {
    VkStructureType sType;
    void *pNext;
    uint32_t cooperativeMatrixWorkgroupScopeMaxWorkgroupSize;
    uint32_t cooperativeMatrixFlexibleDimensionsMaxDimension;
    uint32_t cooperativeMatrixWorkgroupScopeReservedSharedMemory;
} VkPhysicalDeviceCooperativeMatrix2PropertiesNV;

/* With flexible dimensions, each kind of product the device runs: its
 * component types and scope, the granularity its sizes must be multiples of,
 * and (workgroup scope) the workgroup size it is for. */
#define VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV \
    ((VkStructureType)1000593001)
typedef struct VkCooperativeMatrixFlexibleDimensionsPropertiesNV {
    VkStructureType sType;
    void *pNext;
    uint32_t MGranularity;
    uint32_t NGranularity;
    uint32_t KGranularity;
    VkComponentTypeKHR AType;
    VkComponentTypeKHR BType;
    VkComponentTypeKHR CType;
    VkComponentTypeKHR ResultType;
    VkBool32 saturatingAccumulation;
    VkScopeKHR scope;
    uint32_t workgroupInvocations;
} VkCooperativeMatrixFlexibleDimensionsPropertiesNV;
typedef VkResult(VKAPI_PTR *PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV)(
    VkPhysicalDevice physicalDevice, uint32_t *pPropertyCount,
    VkCooperativeMatrixFlexibleDimensionsPropertiesNV *pProperties);
#endif

#endif
