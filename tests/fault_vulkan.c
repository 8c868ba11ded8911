/* The fault-injecting Vulkan dispatch (fault_vulkan.h): wrappers for every
 * fallible device entry point vkattn uses, handed out by a wrapped
 * vkGetDeviceProcAddr, itself handed out by the wrapped vkGetInstanceProcAddr. */
#include "fault_vulkan.h"
#include "fault_descriptor_pools.h"
#include "fault_memory_layout.h"
#include "fault_pipeline_pool.h"

#include <string.h>

enum object_kind {
    KIND_BUFFER, KIND_MEMORY, KIND_VIEW, KIND_SHADER, KIND_SET_LAYOUT, KIND_PIPELINE_LAYOUT,
    KIND_PIPELINE_CACHE, KIND_PIPELINE, KIND_DESCRIPTOR_POOL, KIND_COMMAND_POOL, KIND_QUERY_POOL,
    KIND_FENCE, KIND_COUNT
};
static const char *const kind_names[KIND_COUNT] = {
    "VkBuffer", "VkDeviceMemory", "VkBufferView", "VkShaderModule", "VkDescriptorSetLayout",
    "VkPipelineLayout", "VkPipelineCache", "VkPipeline", "VkDescriptorPool", "VkCommandPool",
    "VkQueryPool", "VkFence",
};

static PFN_vkGetInstanceProcAddr real_gipa;
static PFN_vkGetDeviceProcAddr real_gdpa;
static long live[KIND_COUNT];
static long armed, calls;
static const char *armed_entry; /* fault_arm_entry's: only its calls count to `armed` */
static long entry_calls;
static bool fired, lost;
static VkResult fired_result;
static const char *fired_entry = "";
static long allocation_cap, allocations_peak; /* fault_cap_allocations */

void fault_install(PFN_vkGetInstanceProcAddr real) { real_gipa = real; }

void fault_arm(long n)
{
    armed = n, calls = 0, fired = false, lost = false, fired_entry = "";
    armed_entry = NULL;
}

void fault_arm_entry(const char *entry_point, long n)
{
    fault_arm(n);
    armed_entry = entry_point, entry_calls = 0;
}

long fault_calls(void) { return calls; }

void fault_cap_allocations(long max) { allocation_cap = max, allocations_peak = live[KIND_MEMORY]; }

long fault_allocations_peak(void) { return allocations_peak; }

long fault_live_allocations(void) { return live[KIND_MEMORY]; }

bool fault_fired(VkResult *result, const char **entry_point)
{
    if (result)
        *result = fired_result;
    if (entry_point)
        *entry_point = fired_entry;
    return fired;
}

long fault_live_objects(const char **kind)
{
    long total = 0;
    *kind = "";
    for (int k = 0; k < KIND_COUNT; k++) {
        total += live[k];
        if (live[k] != 0)
            *kind = kind_names[k];
    }
    return total;
}

/* One fallible call: VK_SUCCESS to go on to the driver, else the error to return. */
static VkResult inject(const char *entry_point, VkResult error)
{
    calls++;
    if (armed_entry ? strcmp(entry_point, armed_entry) != 0 || ++entry_calls != armed
                    : calls != armed)
        return VK_SUCCESS;
    fired = true, fired_result = error, fired_entry = entry_point;
    if (error == VK_ERROR_DEVICE_LOST)
        lost = true;
    return error;
}

/* Queue and fence calls: VK_ERROR_DEVICE_LOST once the device is lost. */
static VkResult inject_queue(const char *entry_point)
{
    return lost ? VK_ERROR_DEVICE_LOST : inject(entry_point, VK_ERROR_DEVICE_LOST);
}

/* Define(handle, info): what the pipeline pool notes of a new object
 * (fault_pipeline_pool.h), or NOTHING. */
#define NOTHING(handle, info) ((void)0)
#define CREATE_WRAPPER(Name, Kind, Info, Handle, Define)                                        \
    static PFN_vk##Name real_##Name;                                                           \
    static VKAPI_ATTR VkResult VKAPI_CALL wrap_##Name(VkDevice d, const Info *info,             \
                                                      const VkAllocationCallbacks *a,           \
                                                      Handle *out)                              \
    {                                                                                          \
        VkResult r = inject("vk" #Name, VK_ERROR_OUT_OF_DEVICE_MEMORY);                        \
        if (r == VK_SUCCESS)                                                                   \
            r = real_##Name(d, info, a, out);                                                  \
        if (r == VK_SUCCESS) {                                                                 \
            live[Kind]++;                                                                      \
            Define(POOL_HANDLE(*out), info);                                                   \
        }                                                                                      \
        return r;                                                                              \
    }
#define DESTROY_WRAPPER(Name, Kind, Handle)                                                     \
    static PFN_vk##Name real_##Name;                                                           \
    static VKAPI_ATTR void VKAPI_CALL wrap_##Name(VkDevice d, Handle h,                         \
                                                  const VkAllocationCallbacks *a)               \
    {                                                                                          \
        if (h != VK_NULL_HANDLE) {                                                             \
            live[Kind]--;                                                                      \
            pool_forget(POOL_HANDLE(h));                                                       \
        }                                                                                      \
        real_##Name(d, h, a);                                                                  \
    }

CREATE_WRAPPER(CreateBuffer, KIND_BUFFER, VkBufferCreateInfo, VkBuffer, NOTHING)
DESTROY_WRAPPER(DestroyBuffer, KIND_BUFFER, VkBuffer)
/* vkAllocateMemory also answers VK_ERROR_TOO_MANY_OBJECTS at the cap, as a
 * driver may past maxMemoryAllocationCount, and allocates in the real type
 * behind a presented one (fault_memory_layout.h), or refuses as it is told. */
static PFN_vkAllocateMemory real_AllocateMemory;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_AllocateMemory(VkDevice d,
                                                          const VkMemoryAllocateInfo *info,
                                                          const VkAllocationCallbacks *a,
                                                          VkDeviceMemory *out)
{
    VkMemoryAllocateInfo real = *info;
    VkResult r = inject("vkAllocateMemory", VK_ERROR_OUT_OF_DEVICE_MEMORY);
    if (r == VK_SUCCESS && allocation_cap && live[KIND_MEMORY] >= allocation_cap)
        r = VK_ERROR_TOO_MANY_OBJECTS;
    if (r == VK_SUCCESS)
        r = fault_memory_backing(info->memoryTypeIndex, &real.memoryTypeIndex);
    if (r == VK_SUCCESS)
        r = real_AllocateMemory(d, &real, a, out);
    if (r != VK_SUCCESS)
        return r;
    fault_memory_allocated(*out, info->memoryTypeIndex, info->allocationSize);
    if (++live[KIND_MEMORY] > allocations_peak)
        allocations_peak = live[KIND_MEMORY];
    return r;
}

static PFN_vkFreeMemory real_FreeMemory;
static VKAPI_ATTR void VKAPI_CALL wrap_FreeMemory(VkDevice d, VkDeviceMemory m,
                                                  const VkAllocationCallbacks *a)
{
    if (m != VK_NULL_HANDLE) {
        live[KIND_MEMORY]--;
        fault_memory_freed(m);
    }
    real_FreeMemory(d, m, a);
}

/* A buffer may go in the presented types backed by the real types it may. */
static PFN_vkGetBufferMemoryRequirements real_GetBufferMemoryRequirements;
static VKAPI_ATTR void VKAPI_CALL wrap_GetBufferMemoryRequirements(VkDevice d, VkBuffer b,
                                                                   VkMemoryRequirements *req)
{
    real_GetBufferMemoryRequirements(d, b, req);
    fault_memory_translate_bits(&req->memoryTypeBits);
}
CREATE_WRAPPER(CreateBufferView, KIND_VIEW, VkBufferViewCreateInfo, VkBufferView, NOTHING)
DESTROY_WRAPPER(DestroyBufferView, KIND_VIEW, VkBufferView)
CREATE_WRAPPER(CreateShaderModule, KIND_SHADER, VkShaderModuleCreateInfo, VkShaderModule,
               pool_define_module)
DESTROY_WRAPPER(DestroyShaderModule, KIND_SHADER, VkShaderModule)
CREATE_WRAPPER(CreateDescriptorSetLayout, KIND_SET_LAYOUT, VkDescriptorSetLayoutCreateInfo,
               VkDescriptorSetLayout, pool_define_set_layout)
DESTROY_WRAPPER(DestroyDescriptorSetLayout, KIND_SET_LAYOUT, VkDescriptorSetLayout)
CREATE_WRAPPER(CreatePipelineLayout, KIND_PIPELINE_LAYOUT, VkPipelineLayoutCreateInfo,
               VkPipelineLayout, pool_define_pipeline_layout)
CREATE_WRAPPER(CreatePipelineCache, KIND_PIPELINE_CACHE, VkPipelineCacheCreateInfo,
               VkPipelineCache, NOTHING)
DESTROY_WRAPPER(DestroyPipelineCache, KIND_PIPELINE_CACHE, VkPipelineCache)
CREATE_WRAPPER(CreateCommandPool, KIND_COMMAND_POOL, VkCommandPoolCreateInfo, VkCommandPool,
               NOTHING)
DESTROY_WRAPPER(DestroyCommandPool, KIND_COMMAND_POOL, VkCommandPool)
CREATE_WRAPPER(CreateQueryPool, KIND_QUERY_POOL, VkQueryPoolCreateInfo, VkQueryPool, NOTHING)
DESTROY_WRAPPER(DestroyQueryPool, KIND_QUERY_POOL, VkQueryPool)
CREATE_WRAPPER(CreateFence, KIND_FENCE, VkFenceCreateInfo, VkFence, NOTHING)
DESTROY_WRAPPER(DestroyFence, KIND_FENCE, VkFence)

/* Pipelines go through the pool (fault_pipeline_pool.h): one the pool has
 * comes back from it, one it keeps is not destroyed. */
static VkDevice pipeline_device;
static PFN_vkCreateComputePipelines real_CreateComputePipelines;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_CreateComputePipelines(
    VkDevice d, VkPipelineCache cache, uint32_t n, const VkComputePipelineCreateInfo *infos,
    const VkAllocationCallbacks *a, VkPipeline *out)
{
    VkResult r = inject("vkCreateComputePipelines", VK_ERROR_OUT_OF_DEVICE_MEMORY);
    if (r != VK_SUCCESS)
        return r;
    uint64_t key;
    if (n == 1 && !a && pool_key(infos, &key)) {
        if (!pool_take(key, out)) {
            r = real_CreateComputePipelines(d, cache, 1, infos, a, out);
            if (r == VK_SUCCESS)
                pool_add(key, *out, infos->layout);
        }
        pipeline_device = d;
    } else {
        r = real_CreateComputePipelines(d, cache, n, infos, a, out);
    }
    if (r == VK_SUCCESS)
        live[KIND_PIPELINE] += n;
    return r;
}

static PFN_vkDestroyPipeline real_DestroyPipeline;
static VKAPI_ATTR void VKAPI_CALL wrap_DestroyPipeline(VkDevice d, VkPipeline p,
                                                       const VkAllocationCallbacks *a)
{
    if (p == VK_NULL_HANDLE)
        return;
    live[KIND_PIPELINE]--;
    if (!pool_give_back(p))
        real_DestroyPipeline(d, p, a);
}

/* A layout a pooled pipeline was created with outlives vkattn's destroy. */
static PFN_vkDestroyPipelineLayout real_DestroyPipelineLayout;
static VKAPI_ATTR void VKAPI_CALL wrap_DestroyPipelineLayout(VkDevice d, VkPipelineLayout l,
                                                             const VkAllocationCallbacks *a)
{
    if (l == VK_NULL_HANDLE)
        return;
    live[KIND_PIPELINE_LAYOUT]--;
    pool_forget(POOL_HANDLE(l));
    if (!pool_keeps_layout(l))
        real_DestroyPipelineLayout(d, l, a);
}

static void destroy_pooled(VkPipeline p) { real_DestroyPipeline(pipeline_device, p, NULL); }
static void destroy_kept_layout(VkPipelineLayout l)
{
    real_DestroyPipelineLayout(pipeline_device, l, NULL);
}

void fault_release_pipelines(void) { pool_drain(destroy_pooled, destroy_kept_layout); }

static PFN_vkMapMemory real_MapMemory;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_MapMemory(VkDevice d, VkDeviceMemory m,
                                                     VkDeviceSize offset, VkDeviceSize size,
                                                     VkMemoryMapFlags flags, void **data)
{
    /* Not counted as an object: vkFreeMemory unmaps implicitly. */
    VkResult r = inject("vkMapMemory", VK_ERROR_MEMORY_MAP_FAILED);
    if (r == VK_SUCCESS)
        r = fault_memory_map_refusal(m);
    return r != VK_SUCCESS ? r : real_MapMemory(d, m, offset, size, flags, data);
}

static PFN_vkBindBufferMemory real_BindBufferMemory;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_BindBufferMemory(VkDevice d, VkBuffer b,
                                                            VkDeviceMemory m, VkDeviceSize off)
{
    VkResult r = inject("vkBindBufferMemory", VK_ERROR_OUT_OF_DEVICE_MEMORY);
    return r != VK_SUCCESS ? r : real_BindBufferMemory(d, b, m, off);
}

/* Descriptor pools keep to their maxSets (fault_descriptor_pools.h). */
static PFN_vkCreateDescriptorPool real_CreateDescriptorPool;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_CreateDescriptorPool(
    VkDevice d, const VkDescriptorPoolCreateInfo *info, const VkAllocationCallbacks *a,
    VkDescriptorPool *out)
{
    VkResult r = inject("vkCreateDescriptorPool", VK_ERROR_OUT_OF_DEVICE_MEMORY);
    if (r == VK_SUCCESS)
        r = real_CreateDescriptorPool(d, info, a, out);
    if (r == VK_SUCCESS) {
        live[KIND_DESCRIPTOR_POOL]++;
        set_pools_created(*out, info->maxSets);
    }
    return r;
}

static PFN_vkDestroyDescriptorPool real_DestroyDescriptorPool;
static VKAPI_ATTR void VKAPI_CALL wrap_DestroyDescriptorPool(VkDevice d, VkDescriptorPool p,
                                                             const VkAllocationCallbacks *a)
{
    if (p != VK_NULL_HANDLE) {
        live[KIND_DESCRIPTOR_POOL]--;
        set_pools_destroyed(p);
    }
    real_DestroyDescriptorPool(d, p, a);
}

static PFN_vkResetDescriptorPool real_ResetDescriptorPool;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_ResetDescriptorPool(VkDevice d, VkDescriptorPool p,
                                                               VkDescriptorPoolResetFlags flags)
{
    set_pools_reset(p);
    return real_ResetDescriptorPool(d, p, flags);
}

static PFN_vkAllocateDescriptorSets real_AllocateDescriptorSets;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_AllocateDescriptorSets(
    VkDevice d, const VkDescriptorSetAllocateInfo *info, VkDescriptorSet *sets)
{
    VkResult r = inject("vkAllocateDescriptorSets", VK_ERROR_OUT_OF_DEVICE_MEMORY);
    if (r == VK_SUCCESS && !set_pools_take(info->descriptorPool, info->descriptorSetCount))
        r = VK_ERROR_OUT_OF_POOL_MEMORY;
    return r != VK_SUCCESS ? r : real_AllocateDescriptorSets(d, info, sets);
}

static PFN_vkAllocateCommandBuffers real_AllocateCommandBuffers;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_AllocateCommandBuffers(
    VkDevice d, const VkCommandBufferAllocateInfo *info, VkCommandBuffer *cbs)
{
    VkResult r = inject("vkAllocateCommandBuffers", VK_ERROR_OUT_OF_DEVICE_MEMORY);
    return r != VK_SUCCESS ? r : real_AllocateCommandBuffers(d, info, cbs);
}

static PFN_vkBeginCommandBuffer real_BeginCommandBuffer;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_BeginCommandBuffer(VkCommandBuffer cb,
                                                              const VkCommandBufferBeginInfo *info)
{
    VkResult r = inject("vkBeginCommandBuffer", VK_ERROR_OUT_OF_DEVICE_MEMORY);
    return r != VK_SUCCESS ? r : real_BeginCommandBuffer(cb, info);
}

static PFN_vkEndCommandBuffer real_EndCommandBuffer;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_EndCommandBuffer(VkCommandBuffer cb)
{
    VkResult r = inject("vkEndCommandBuffer", VK_ERROR_OUT_OF_DEVICE_MEMORY);
    return r != VK_SUCCESS ? r : real_EndCommandBuffer(cb);
}

static PFN_vkResetFences real_ResetFences;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_ResetFences(VkDevice d, uint32_t n, const VkFence *f)
{
    VkResult r = inject("vkResetFences", VK_ERROR_OUT_OF_DEVICE_MEMORY);
    return r != VK_SUCCESS ? r : real_ResetFences(d, n, f);
}

static PFN_vkResetCommandPool real_ResetCommandPool;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_ResetCommandPool(VkDevice d, VkCommandPool p,
                                                            VkCommandPoolResetFlags flags)
{
    VkResult r = inject("vkResetCommandPool", VK_ERROR_OUT_OF_DEVICE_MEMORY);
    return r != VK_SUCCESS ? r : real_ResetCommandPool(d, p, flags);
}

static PFN_vkFlushMappedMemoryRanges real_FlushMappedMemoryRanges;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_FlushMappedMemoryRanges(VkDevice d, uint32_t n,
                                                                   const VkMappedMemoryRange *r)
{
    VkResult e = inject("vkFlushMappedMemoryRanges", VK_ERROR_OUT_OF_DEVICE_MEMORY);
    for (uint32_t i = 0; e == VK_SUCCESS && i < n; i++)
        fault_memory_synced(r[i].memory, true);
    return e != VK_SUCCESS ? e : real_FlushMappedMemoryRanges(d, n, r);
}

static PFN_vkInvalidateMappedMemoryRanges real_InvalidateMappedMemoryRanges;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_InvalidateMappedMemoryRanges(
    VkDevice d, uint32_t n, const VkMappedMemoryRange *r)
{
    VkResult e = inject("vkInvalidateMappedMemoryRanges", VK_ERROR_OUT_OF_DEVICE_MEMORY);
    for (uint32_t i = 0; e == VK_SUCCESS && i < n; i++)
        fault_memory_synced(r[i].memory, false);
    return e != VK_SUCCESS ? e : real_InvalidateMappedMemoryRanges(d, n, r);
}

static PFN_vkQueueSubmit real_QueueSubmit;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_QueueSubmit(VkQueue q, uint32_t n,
                                                       const VkSubmitInfo *submits, VkFence fence)
{
    VkResult r = inject_queue("vkQueueSubmit");
    return r != VK_SUCCESS ? r : real_QueueSubmit(q, n, submits, fence);
}

static PFN_vkWaitForFences real_WaitForFences;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_WaitForFences(VkDevice d, uint32_t n, const VkFence *f,
                                                         VkBool32 all, uint64_t timeout)
{
    VkResult r = inject_queue("vkWaitForFences");
    return r != VK_SUCCESS ? r : real_WaitForFences(d, n, f, all, timeout);
}

static PFN_vkQueueWaitIdle real_QueueWaitIdle;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_QueueWaitIdle(VkQueue q)
{
    /* A lost device still lets the real queue drain: teardown stays clean. */
    if (lost) {
        real_QueueWaitIdle(q);
        return VK_ERROR_DEVICE_LOST;
    }
    VkResult r = inject_queue("vkQueueWaitIdle");
    return r != VK_SUCCESS ? r : real_QueueWaitIdle(q);
}

static PFN_vkDeviceWaitIdle real_DeviceWaitIdle;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_DeviceWaitIdle(VkDevice d)
{
    if (lost) {
        real_DeviceWaitIdle(d);
        return VK_ERROR_DEVICE_LOST;
    }
    VkResult r = inject_queue("vkDeviceWaitIdle");
    return r != VK_SUCCESS ? r : real_DeviceWaitIdle(d);
}

static PFN_vkGetQueryPoolResults real_GetQueryPoolResults;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_GetQueryPoolResults(VkDevice d, VkQueryPool p,
                                                               uint32_t first, uint32_t count,
                                                               size_t size, void *data,
                                                               VkDeviceSize stride,
                                                               VkQueryResultFlags flags)
{
    VkResult r = inject_queue("vkGetQueryPoolResults");
    return r != VK_SUCCESS ? r : real_GetQueryPoolResults(d, p, first, count, size, data, stride, flags);
}

static PFN_vkGetPipelineCacheData real_GetPipelineCacheData;
static VKAPI_ATTR VkResult VKAPI_CALL wrap_GetPipelineCacheData(VkDevice d, VkPipelineCache c,
                                                                size_t *size, void *data)
{
    VkResult r = inject("vkGetPipelineCacheData", VK_ERROR_OUT_OF_HOST_MEMORY);
    return r != VK_SUCCESS ? r : real_GetPipelineCacheData(d, c, size, data);
}

/* Every wrapped entry point: its name, the wrapper, and where its real pointer goes. */
#define ENTRY(Name) {"vk" #Name, (PFN_vkVoidFunction)wrap_##Name, (PFN_vkVoidFunction *)&real_##Name}
static const struct {
    const char *name;
    PFN_vkVoidFunction wrapper;
    PFN_vkVoidFunction *real;
} entries[] = {
    ENTRY(CreateBuffer), ENTRY(DestroyBuffer), ENTRY(AllocateMemory), ENTRY(FreeMemory),
    ENTRY(CreateBufferView), ENTRY(DestroyBufferView), ENTRY(CreateShaderModule),
    ENTRY(DestroyShaderModule), ENTRY(CreateDescriptorSetLayout),
    ENTRY(DestroyDescriptorSetLayout), ENTRY(CreatePipelineLayout), ENTRY(DestroyPipelineLayout),
    ENTRY(CreatePipelineCache), ENTRY(DestroyPipelineCache), ENTRY(DestroyPipeline),
    ENTRY(CreateDescriptorPool), ENTRY(DestroyDescriptorPool), ENTRY(ResetDescriptorPool),
    ENTRY(CreateCommandPool),
    ENTRY(DestroyCommandPool), ENTRY(CreateQueryPool), ENTRY(DestroyQueryPool),
    ENTRY(CreateFence), ENTRY(DestroyFence), ENTRY(CreateComputePipelines), ENTRY(MapMemory),
    ENTRY(BindBufferMemory), ENTRY(AllocateDescriptorSets),
    ENTRY(AllocateCommandBuffers), ENTRY(BeginCommandBuffer), ENTRY(EndCommandBuffer),
    ENTRY(ResetFences), ENTRY(ResetCommandPool), ENTRY(FlushMappedMemoryRanges),
    ENTRY(InvalidateMappedMemoryRanges), ENTRY(QueueSubmit), ENTRY(WaitForFences),
    ENTRY(QueueWaitIdle), ENTRY(DeviceWaitIdle), ENTRY(GetQueryPoolResults),
    ENTRY(GetPipelineCacheData), ENTRY(GetBufferMemoryRequirements),
};

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fault_get_device_proc_addr(VkDevice device,
                                                                          const char *name)
{
    PFN_vkVoidFunction real = real_gdpa(device, name);
    for (size_t i = 0; real && i < sizeof entries / sizeof entries[0]; i++)
        if (strcmp(entries[i].name, name) == 0) {
            *entries[i].real = real;
            return entries[i].wrapper;
        }
    return real;
}

/* The device's memory as presented (fault_memory_layout.h). */
static PFN_vkGetPhysicalDeviceMemoryProperties real_GetPhysicalDeviceMemoryProperties;
static VKAPI_ATTR void VKAPI_CALL wrap_GetPhysicalDeviceMemoryProperties(
    VkPhysicalDevice pd, VkPhysicalDeviceMemoryProperties *properties)
{
    real_GetPhysicalDeviceMemoryProperties(pd, properties);
    fault_memory_report(properties);
}

static PFN_vkGetPhysicalDeviceMemoryProperties2 real_GetPhysicalDeviceMemoryProperties2;
static VKAPI_ATTR void VKAPI_CALL wrap_GetPhysicalDeviceMemoryProperties2(
    VkPhysicalDevice pd, VkPhysicalDeviceMemoryProperties2 *properties)
{
    real_GetPhysicalDeviceMemoryProperties2(pd, properties);
    fault_memory_report(&properties->memoryProperties);
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fault_get_instance_proc_addr(VkInstance instance,
                                                                     const char *name)
{
    if (strcmp(name, "vkGetDeviceProcAddr") == 0) {
        real_gdpa = (PFN_vkGetDeviceProcAddr)real_gipa(instance, name);
        return real_gdpa ? (PFN_vkVoidFunction)fault_get_device_proc_addr : NULL;
    }
    PFN_vkVoidFunction real = real_gipa(instance, name);
    if (real && strcmp(name, "vkGetPhysicalDeviceMemoryProperties") == 0) {
        real_GetPhysicalDeviceMemoryProperties = (PFN_vkGetPhysicalDeviceMemoryProperties)real;
        return (PFN_vkVoidFunction)wrap_GetPhysicalDeviceMemoryProperties;
    }
    if (real && (strcmp(name, "vkGetPhysicalDeviceMemoryProperties2") == 0 ||
                 strcmp(name, "vkGetPhysicalDeviceMemoryProperties2KHR") == 0)) {
        real_GetPhysicalDeviceMemoryProperties2 = (PFN_vkGetPhysicalDeviceMemoryProperties2)real;
        return (PFN_vkVoidFunction)wrap_GetPhysicalDeviceMemoryProperties2;
    }
    return real;
}
