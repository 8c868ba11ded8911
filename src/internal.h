/* Private structures shared by the library's source files. Never installed. */
#ifndef VKATTN_INTERNAL_H
#define VKATTN_INTERNAL_H

#include "memory_ranges.h"
#include "memory_types.h"
#include "vk_bfloat16_khr.h"
#include "vk_coopmat2_nv.h"
#include "vk_coopmat_khr.h"
#include "vkattn.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Whether the environment variable `name` is "1" (a diagnostic's or an
 * override's switch). */
static inline bool env_is_one(const char *name)
{
    const char *v = getenv(name);
    return v && strcmp(v, "1") == 0;
}

#if defined(__GNUC__)
#define VKATTN_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define VKATTN_PRINTF(fmt_index, first_arg)
#endif

/* ---------------------------------------------------- function tables --- */
/* Loaded per context through its own vkGetInstanceProcAddr/vkGetDeviceProcAddr,
 * so two contexts on two instances or devices never share function pointers and
 * an application that adopted its own loader is never disturbed. (volk's
 * VolkDeviceTable loader reads a process-global vkGetDeviceProcAddr, which an
 * adopted get_instance_proc_addr must not depend on.) */

#define VKATTN_INSTANCE_FUNCS(X)                  \
    X(DestroyInstance)                            \
    X(EnumeratePhysicalDevices)                   \
    X(GetPhysicalDeviceProperties)                \
    X(GetPhysicalDeviceProperties2)               \
    X(GetPhysicalDeviceFeatures2)                 \
    X(GetPhysicalDeviceMemoryProperties)          \
    X(GetPhysicalDeviceFormatProperties)          \
    X(GetPhysicalDeviceQueueFamilyProperties)     \
    X(EnumerateDeviceExtensionProperties)         \
    X(CreateDevice)                               \
    X(GetDeviceProcAddr)

/* Optional: present only with VK_EXT_debug_utils enabled. */
#define VKATTN_INSTANCE_DEBUG_FUNCS(X)            \
    X(CreateDebugUtilsMessengerEXT)               \
    X(DestroyDebugUtilsMessengerEXT)

/* Optional: the cooperative-matrix queries are present only where the device
 * extension exists; vkEnumerateDeviceLayerProperties is core, but an adopted
 * instance's loader is not trusted to return it. */
#define VKATTN_INSTANCE_OPTIONAL_FUNCS(X)         \
    X(GetPhysicalDeviceCooperativeMatrixPropertiesNV) \
    X(GetPhysicalDeviceCooperativeMatrixPropertiesKHR) \
    X(GetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV) \
    X(EnumerateDeviceLayerProperties)

#define VKATTN_DEVICE_FUNCS(X)                    \
    X(DestroyDevice)                              \
    X(GetDeviceQueue)                             \
    X(DeviceWaitIdle)                             \
    X(QueueSubmit)                                \
    X(QueueWaitIdle)                              \
    X(CreateBuffer)                               \
    X(DestroyBuffer)                              \
    X(CreateBufferView)                           \
    X(DestroyBufferView)                          \
    X(GetBufferMemoryRequirements)                \
    X(AllocateMemory)                             \
    X(FreeMemory)                                 \
    X(BindBufferMemory)                           \
    X(MapMemory)                                  \
    X(UnmapMemory)                                \
    X(FlushMappedMemoryRanges)                    \
    X(InvalidateMappedMemoryRanges)               \
    X(CreateShaderModule)                         \
    X(DestroyShaderModule)                        \
    X(CreateDescriptorSetLayout)                  \
    X(DestroyDescriptorSetLayout)                 \
    X(CreatePipelineLayout)                       \
    X(DestroyPipelineLayout)                      \
    X(CreatePipelineCache)                        \
    X(DestroyPipelineCache)                       \
    X(GetPipelineCacheData)                       \
    X(CreateComputePipelines)                     \
    X(DestroyPipeline)                            \
    X(CreateDescriptorPool)                       \
    X(DestroyDescriptorPool)                      \
    X(ResetDescriptorPool)                        \
    X(AllocateDescriptorSets)                     \
    X(UpdateDescriptorSets)                       \
    X(CreateCommandPool)                          \
    X(DestroyCommandPool)                         \
    X(ResetCommandPool)                           \
    X(AllocateCommandBuffers)                     \
    X(BeginCommandBuffer)                         \
    X(EndCommandBuffer)                           \
    X(CmdBindPipeline)                            \
    X(CmdBindDescriptorSets)                      \
    X(CmdPushConstants)                           \
    X(CmdDispatch)                                \
    X(CmdPipelineBarrier)                         \
    X(CmdCopyBuffer)                              \
    X(CmdResetQueryPool)                          \
    X(CmdWriteTimestamp)                          \
    X(CreateQueryPool)                            \
    X(DestroyQueryPool)                           \
    X(GetQueryPoolResults)                        \
    X(CreateFence)                                \
    X(DestroyFence)                               \
    X(ResetFences)                                \
    X(WaitForFences)

/* Optional: loaded only where the context enabled the extension. */
#define VKATTN_DEVICE_OPTIONAL_FUNCS(X)           \
    X(GetPipelineExecutablePropertiesKHR)         \
    X(GetPipelineExecutableStatisticsKHR)

#define VKATTN_DECLARE_PFN_(name) PFN_vk##name name;
typedef struct vk_instance_table {
    VKATTN_INSTANCE_FUNCS(VKATTN_DECLARE_PFN_)
    VKATTN_INSTANCE_DEBUG_FUNCS(VKATTN_DECLARE_PFN_)
    VKATTN_INSTANCE_OPTIONAL_FUNCS(VKATTN_DECLARE_PFN_)
} vk_instance_table;
typedef struct vk_device_table {
    VKATTN_DEVICE_FUNCS(VKATTN_DECLARE_PFN_)
    VKATTN_DEVICE_OPTIONAL_FUNCS(VKATTN_DECLARE_PFN_)
} vk_device_table;
#undef VKATTN_DECLARE_PFN_

/* ------------------------------------------------------------ shaders --- */

typedef enum shader_id {
    SHADER_MATMUL = 0,
    SHADER_MATMUL_NAIVE,
    SHADER_MATMUL_TEXEL,
    SHADER_MATMUL_COOPMAT,
    SHADER_MATMUL_COOPMAT_EMULATED,
    SHADER_SOFTMAX_SUBGROUP,
    SHADER_SOFTMAX_SHARED,
    SHADER_HEAD_TRANSPOSE,
    SHADER_ATTENTION_ROWS,
    SHADER_ATTENTION_TILED,
    SHADER_ATTENTION_COOPMAT,
    SHADER_ATTENTION_COOPMAT_EMULATED,
    SHADER_ATTENTION_COMBINE,
    SHADER_ATTENTION_SCORES,
    SHADER_ATTENTION_DECODE,
    SHADER_NARROW,
    SHADER_FILL,
    SHADER_COOPMAT_LAYOUT,
    SHADER_COOPMAT_LAYOUT_EMULATED,
    SHADER_COOPMAT_LAYOUT_PRODUCT,
    SHADER_COOPMAT_LAYOUT_PRODUCT_EMULATED,
    SHADER_COOPMAT_PEAK,
    SHADER_COOPMAT_PEAK_EMULATED,
    SHADER_ATTENTION_COOPMAT_KHR,
    SHADER_ATTENTION_COOPMAT_KHR_BF16, /* KHR only: bf16 matrices (the NV extension has none) */
    SHADER_MATMUL_COOPMAT_KHR,
    SHADER_COOPMAT_PEAK_KHR,
    SHADER_COOPMAT_PEAK_WORKGROUP_KHR, /* KHR only: the NV extension has no workgroup scope */
    SHADER_COOPMAT_PEAK_WORKGROUP_EMULATED,
    SHADER_COOPMAT_LAYOUT_WORKGROUP_KHR, /* likewise */
    SHADER_COOPMAT_LAYOUT_WORKGROUP_EMULATED,
    SHADER_ATTENTION_COOPMAT_WORKGROUP_KHR, /* likewise */
    SHADER_ATTENTION_COOPMAT_WORKGROUP_EMULATED,
    /* The SPIR-V 1.6 forms of the workgroup-scope modules (shader_code.spirv16) */
    SHADER_COOPMAT_PEAK_WORKGROUP_KHR_SPIRV16,
    SHADER_COOPMAT_LAYOUT_WORKGROUP_KHR_SPIRV16,
    SHADER_ATTENTION_COOPMAT_WORKGROUP_KHR_SPIRV16,
    SHADER_ATTENTION_COOPMAT_WORKGROUP_EMULATED_SPIRV16,
    SHADER_COUNT
} shader_id;

typedef struct shader_code {
    const char *name;
    const uint32_t *words;
    size_t size_bytes;
    /* A module built twice (CMakeLists.txt): in SPIR-V 1.3, the id the kernels
     * name, and in SPIR-V 1.6 (workgroup size by LocalSizeId), which a context
     * takes where its device runs it (vk_state.spirv16), falling back to the
     * 1.3 form where the driver refuses a pipeline. `spirv16`: the 1.3 form's
     * 1.6 twin, 0 (SHADER_MATMUL, never one) where there is none. */
    shader_id spirv16;
} shader_code;

const shader_code *shader_get(shader_id id);

/* --------------------------------------------------------- pipelines --- */

/* Every kernel sees set 0 as: bindings 0..11 storage buffers, and bindings 12..23
 * the same twelve tensors again as uniform texel buffers (R32/R16 or RGBA32/RGBA16
 * float views), for kernels that read through texelFetch. Some devices fetch
 * texels far faster than they load storage buffers (lavapipe: a vector gather
 * instead of a branchy per-lane loop), and an R16 view converts f16 for free.
 * Keep in sync with TEXEL_BINDING in shaders/common.glsl. */
#define VKATTN_MAX_BINDINGS 12
#define VKATTN_TEXEL_BINDING_BASE 12
#define VKATTN_MAX_SPEC_CONSTANTS 24
/* Every pipeline's constant_id past the kernels' own: true where the context
 * poisons (vkattn_context.poison; shaders/poison_shared.glsl). */
#define VKATTN_SPEC_POISON_SHARED VKATTN_MAX_SPEC_CONSTANTS
/* And the next: the order of each workgroup's subgroups (subgroup_order;
 * vkattn_context.subgroup_order, shaders/invocation_order.glsl). */
#define VKATTN_SPEC_SUBGROUP_ORDER (VKATTN_MAX_SPEC_CONSTANTS + 1)
/* The values of VKATTN_SPEC_SUBGROUP_ORDER; keep in sync with SUBGROUP_ORDER
 * in shaders/invocation_order.glsl. */
typedef enum subgroup_order {
    SUBGROUP_ORDER_NATURAL = 0,        /* the default, and every GPU's */
    SUBGROUP_ORDER_REVERSED = 1,       /* in every workgroup */
    SUBGROUP_ORDER_ODD_REVERSED = 2,   /* in the workgroups of odd x + y + z */
    SUBGROUP_ORDER_EVEN_REVERSED = 3,  /* in the others */
    SUBGROUP_ORDER_MIXED = 4,          /* the context's setting: 2 or 3 per pipeline */
} subgroup_order;
/* The poison: NaN as an f32, as either f16 of a pair and as either bf16 of a
 * pair; as an integer past any index, count or exponent. Keep in sync with
 * POISON_BITS in shaders/poison_shared.glsl. */
#define VKATTN_POISON_BITS 0x7fc07fc0u
#define VKATTN_PUSH_CONSTANT_BYTES 128

typedef struct pipeline_key {
    shader_id shader;
    /* 0: the kernel is correct for any subgroup size the device may pick (its
     * comment says why). Else the size the kernel's tiling was specialized for,
     * required of the pipeline with full subgroups; set only where the device
     * allows it (device_caps.subgroup_size_control), see subgroup_size_for(). */
    uint32_t subgroup_size;
    uint32_t spec_count;
    uint32_t spec[VKATTN_MAX_SPEC_CONSTANTS]; /* constant_id i = spec[i] */
} pipeline_key;

typedef struct pipeline_entry {
    pipeline_key key;
    VkPipeline pipeline;
} pipeline_entry;

/* ------------------------------------------------ device capabilities --- */

typedef struct coopmat_shape {
    uint32_t m, n, k; /* A is m x k, B k x n, the accumulator m x n */
} coopmat_shape;
#define VKATTN_MAX_COOPMAT_SHAPES 8

/* How a softmax in registers finds its rows in an f32 accumulator
 * (attention_coopmat.comp's ROW_CLUSTER, LANE_ROWS, SLOT_TABLE). */
typedef struct coopmat_register_layout_state {
    int read;                   /* 0 not read, 1 usable (below), -1 not */
    coopmat_shape shape;        /* read for this shape */
    uint32_t row_cluster, lane_rows, slot_table;
    char why[200];              /* -1: why not */
} coopmat_register_layout_state;

/* What a device offers beyond core Vulkan 1.1 that kernels can use
 * (device_caps.c). */
#define COOPMAT2_MAX_SHAPES 8

typedef struct device_caps {
    bool ext_float16_int8;          /* the device lists the extension: enabled with it */
    bool ext_subgroup_size_control; /* likewise */
    bool float16;                   /* shaderFloat16: float16_t in shaders */
    /* requiredSubgroupSize and full subgroups for compute pipelines. Without it
     * a pipeline may run with any size from subgroup_min to subgroup_max. */
    bool subgroup_size_control;
    uint32_t subgroup_min, subgroup_max;
    bool ext_vulkan_memory_model;   /* likewise */
    bool memory_model;              /* vulkanMemoryModel: the coopmat kernels need it */
    bool coopmat;                   /* cooperative matrices with the f16 shapes below */
    bool coopmat_khr;               /* ... through VK_KHR_cooperative_matrix, else the NV one */
    coopmat_shape coopmat_shapes[VKATTN_MAX_COOPMAT_SHAPES]; /* f16 A, B; f32 C; subgroup scope */
    uint32_t coopmat_shape_count;
    /* VK_KHR_pipeline_executable_properties (pipelineExecutableInfo): each
     * pipeline's registers, spills and the like, logged when profiling. A
     * diagnostic, enabled only on a device vkattn creates for a profiling
     * context; never on an adopted one. */
    bool pipeline_statistics;
    /* VK_NV_cooperative_matrix2, where the device lists it: its features
     * (DEVICE_COOPMAT2_* bits) and limits. Reported (device_caps_coopmat2_describe,
     * logged as a context starts), not used: kernels on it need
     * GL_NV_cooperative_matrix2, which Debian 12's glslang (12.0) lacks. */
    bool coopmat2;
    /* Empty where its features and limits were queried; else why its
     * structures were left out of the query (an active validation layer older
     * than the extension, named, which would flag them as unknown). */
    char coopmat2_unqueried_why[VK_MAX_EXTENSION_NAME_SIZE + 96];
    uint32_t coopmat2_features;
    uint32_t coopmat2_workgroup_max;    /* invocations of a workgroup-scope matrix's workgroup */
    uint32_t coopmat2_flexible_max;     /* the largest flexible dimension */
    uint32_t coopmat2_reserved_shared;  /* bytes of shared memory workgroup scope reserves */
    /* With workgroup scope and flexible dimensions: f16 x f16 + f32 -> f32
     * workgroup-scope products (the most invocations the device lists them
     * for): the granularity of M, N and K, and that workgroup size; 0 if none. */
    uint32_t coopmat2_granularity[3];
    uint32_t coopmat2_invocations;
    /* Every such product the device lists, in its order (the first
     * COOPMAT2_MAX_SHAPES): the workgroup-scope kernel takes the largest
     * unless its tuning asks for another workgroup size (ggml finds 128
     * invocations better than 256 for many rows on NVIDIA). */
    struct {
        uint32_t invocations, granularity[3];
    } coopmat2_shapes[COOPMAT2_MAX_SHAPES];
    uint32_t coopmat2_shape_count;
    /* Workgroup scope and flexible dimensions enabled (through the KHR
     * extension): only on a device vkattn creates for what uses them (the
     * probes, VKATTN_COOPMAT_PEAK=1 and VKATTN_COOPMAT_LAYOUT=1, and the
     * workgroup-scope kernel, VKATTN_COOPMAT_WORKGROUP=1). */
    bool coopmat2_workgroup;
    /* maintenance4 (Vulkan 1.3 core): SPIR-V 1.6's LocalSizeId needs it. */
    bool maintenance4;
    /* VK_KHR_shader_bfloat16's cooperative matrices (shaderBFloat16Type and
     * shaderBFloat16CooperativeMatrix), through VK_KHR_cooperative_matrix:
     * the bf16 x bf16 + f32 -> f32 subgroup shapes the device lists (reported
     * by device_caps_bf16_describe and vkattn devices). Enabled on a device
     * vkattn creates where its kernels take the KHR extension (device.c; the
     * enabled caps keep the shapes only then): the coopmat kernel's bf16
     * build (coopmat.bf16=2). bf16_unqueried_why as coopmat2_unqueried_why. */
    bool bf16_listed;
    char bf16_unqueried_why[VK_MAX_EXTENSION_NAME_SIZE + 96];
    coopmat_shape bf16_shapes[VKATTN_MAX_COOPMAT_SHAPES];
    uint32_t bf16_shape_count;
} device_caps;
enum { /* device_caps.coopmat2_features, in the extension's order */
    DEVICE_COOPMAT2_WORKGROUP_SCOPE = 1u << 0, DEVICE_COOPMAT2_FLEXIBLE_DIMENSIONS = 1u << 1,
    DEVICE_COOPMAT2_REDUCTIONS = 1u << 2, DEVICE_COOPMAT2_CONVERSIONS = 1u << 3,
    DEVICE_COOPMAT2_PER_ELEMENT = 1u << 4, DEVICE_COOPMAT2_TENSOR_ADDRESSING = 1u << 5,
    DEVICE_COOPMAT2_BLOCK_LOADS = 1u << 6,
};


void device_caps_query(const vk_instance_table *vki, VkPhysicalDevice pd, uint32_t api_version,
                       const VkExtensionProperties *exts, uint32_t ext_count, device_caps *caps);
/* What the device offers of VK_NV_cooperative_matrix2, in words (one line). */
void device_caps_coopmat2_describe(const device_caps *caps, char *out, size_t size);
/* VK_KHR_shader_bfloat16's matrices on the device, in words (not listed, not
 * queried and why, or the shapes). */
void device_caps_bf16_describe(const device_caps *caps, char *out, size_t size);
/* The extensions and the pNext chain that enable `caps` on vkCreateDevice. */
void device_caps_features(const device_caps *caps, vkattn_device_features *out);
/* Whether a device vkattn creates takes VK_NV_cooperative_matrix2's
 * workgroup scope and flexible dimensions: where the device has both and f16
 * workgroup-scope products, through the KHR extension (which that extension
 * builds on), for diagnostics that use them (`wanted`). */
bool device_caps_workgroup_scope_wanted(const device_caps *caps, bool wanted);
/* vkCreateDevice with `info` (whose extensions are the first `count` of
 * `extensions`, which has room for one more) and, where `optional` is given
 * (a feature structure, whose pNext it sets), that at the head of the chain and
 * `optional_extension` after the others; where that fails, once more without
 * them, `*optional_result` the first failure (else VK_SUCCESS): a diagnostic's
 * feature never costs a context its device. */
VkResult device_create_with_optional(const vk_instance_table *vki, VkPhysicalDevice pd,
                                     VkDeviceCreateInfo info, const char **extensions,
                                     uint32_t count, void *optional,
                                     const char *optional_extension, VkResult *optional_result,
                                     VkDevice *out);
/* What of `caps` an application says it enabled. */
device_caps device_caps_enabled(const device_caps *caps, const vkattn_device_features *enabled);
/* Whether a kernel that needs every lane of its subgroups active (a row per
 * subgroup, lanes counted as gl_SubgroupSize) gets them: where the size can be
 * required with full subgroups, or where the device has one size only. Where
 * the size varies and cannot be required, SPIR-V below 1.6 promises neither a
 * size nor full subgroups: Intel's Mesa driver, for one, reports
 * gl_SubgroupSize 32 there and may run 8 or 16 lanes of it. "One size" is
 * what the device says: without Vulkan 1.3 or VK_EXT_subgroup_size_control
 * min and max are its default size, taken on trust (llvmpipe at
 * LP_NATIVE_VECTOR_WIDTH=1024 reports 32 and runs 16, README). */
bool device_caps_whole_subgroups(const device_caps *enabled);
/* Why a kernel refuses where device_caps_whole_subgroups is false, for its
 * message: "needs whole subgroups: ..." naming `device` and its sizes. */
void device_caps_whole_subgroups_why(const device_caps *enabled, const char *device, char *why,
                                     size_t why_size);

/* ---------------------------------------------------- command stream --- */

#define VKATTN_MAX_TRACKED_BUFFERS 64
#define VKATTN_DESCRIPTOR_SETS_PER_POOL 256
/* Recording more dispatches than this many pools hold flushes the stream (submit
 * and wait), so descriptor memory stays bounded however much one recording does. */
#define VKATTN_MAX_DESCRIPTOR_POOLS 16

/* One allocation from the driver, which buffers share (memory_pool.c). */
typedef struct memory_block {
    VkDeviceMemory memory;
    VkDeviceSize size;
    uint32_t type;
    bool shared;       /* false: one buffer's own (a large one) */
    void *host;        /* the whole block mapped, once a buffer in it is; else NULL */
    memory_ranges ranges;
} memory_block;

/* The blocks a context holds. */
typedef struct memory_pool {
    memory_block **blocks;
    uint32_t count, capacity;
    uint32_t shared_made[VK_MAX_MEMORY_TYPES]; /* shared blocks made per type: sizes grow */
} memory_pool;

/* A buffer's memory: bytes [offset, offset + size) of a block. */
typedef struct vk_allocation {
    memory_block *block; /* NULL: none */
    VkDeviceSize offset, size;
} vk_allocation;

/* How the host reaches a buffer's memory. */
typedef struct vk_mapping {
    void *host;               /* NULL: not mapped */
    bool noncoherent;         /* host writes need a flush, device writes an invalidate */
} vk_mapping;

typedef struct staging_buffer {
    VkBuffer buffer;
    vk_allocation memory;
} staging_buffer;

typedef struct vk_state {
    bool owns_instance, owns_device;
    VkInstance instance;
    uint32_t instance_api_version; /* vkattn's own instance's apiVersion; 0 if adopted */
    /* Pipelines of modules built twice take the SPIR-V 1.6 form
     * (shader_code.spirv16): a device vkattn created with Vulkan 1.3 and
     * maintenance4 (LocalSizeId), unless VKATTN_SPIRV16=0. */
    bool spirv16;
    bool spirv16_refused; /* VKATTN_SPIRV16=refused: a diagnostic, pipeline.c */
    bool spirv16_declined[SHADER_COUNT]; /* 1.6 forms refused once: not tried again */
    VkPhysicalDevice physical_device;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    VkDebugUtilsMessengerEXT messenger;
    vk_instance_table vki;
    vk_device_table vkd;

    VkPhysicalDeviceMemoryProperties memory_properties;
    VkDeviceSize noncoherent_atom_size;
    memory_pool memory_pool;
    /* The memory mode asked for (desc, else VKATTN_MEMORY); whether tensors are
     * mapped is ctx->info.host_visible_device_memory. */
    vkattn_memory_mode memory_mode;
    /* VKATTN_MEMORY_ASSUME_NONCOHERENT=1 (tests): flush and invalidate all mapped
     * memory, so that path runs on devices whose memory is all coherent. */
    bool assume_noncoherent;
    uint8_t device_uuid[VK_UUID_SIZE], pipeline_cache_uuid[VK_UUID_SIZE];
    uint32_t driver_version;
    uint32_t min_storage_offset_alignment;
    uint32_t max_workgroup_count[3];
    uint64_t max_allocation_size;
    uint32_t timestamp_valid_bits;
    bool subgroup_shuffle;  /* subgroupShuffle* in compute shaders */
    bool subgroup_vote;     /* subgroupAny and subgroupAll in compute shaders */
    device_caps caps;       /* what the physical device offers */
    /* The f32 accumulator layout as a softmax in registers needs it
     * (coopmat_register_layout), read as the context starts where its tuning
     * asks: [0] the matrix units', [1] the emulated build's (a check). */
    coopmat_register_layout_state coopmat_layouts[2];
    device_caps enabled;    /* what is enabled on the VkDevice (adopted: none of the
                               features; subgroup_min/max still describe the device) */
    /* Kernels read through texel views and pick the CPU-friendly variants: on
     * CPU devices, or as VKATTN_PREFER_TEXELS=0|1 says (tests run the GPU
     * variants on lavapipe that way). */
    bool prefer_texels;

    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipeline_layout;
    VkPipelineCache pipeline_cache;
    char *pipeline_cache_path;      /* NULL: not persisted */
    size_t pipeline_cache_loaded;   /* bytes of data loaded from it (0: none) */
    VkShaderModule modules[SHADER_COUNT];
    pipeline_entry *pipelines;
    uint32_t pipeline_count, pipeline_capacity;

    VkBuffer dummy_buffer; /* bound where a shader's optional input is absent */
    vk_allocation dummy_memory;
    VkBufferView dummy_view;      /* R32_SFLOAT: for float samplers */
    VkBufferView dummy_uint_view; /* R32_UINT: for usamplerBuffer bindings */

    /* uniform texel buffers: usable for a tensor of this dtype and size? */
    bool texel_f32, texel_f16, texel4_f32, texel4_f16, texel_u16, texel4_u16;
    uint32_t max_texel_elements;

    VkCommandPool command_pool;
    VkCommandBuffer command_buffer;
    /* Where ops record: command_buffer, or the application's between
     * vkattn_recording_begin and _end (then `external` is that recording). */
    VkCommandBuffer active;
    vkattn_recording *external;
    VkFence fence;
    bool recording;
    bool pool_needs_reset;    /* resetting the command pool failed: retried before the next begin */
    uint32_t recorded_commands;

    VkDescriptorPool descriptor_pools[VKATTN_MAX_DESCRIPTOR_POOLS];
    uint32_t descriptor_pool_count, descriptor_pool_current;

    /* hazard tracking since the last barrier */
    VkBuffer written[VKATTN_MAX_TRACKED_BUFFERS];
    uint32_t written_count;
    VkBuffer read[VKATTN_MAX_TRACKED_BUFFERS];
    uint32_t read_count;

    staging_buffer *staging; /* freed after the next submission completes */
    uint32_t staging_count, staging_capacity;

    VkQueryPool query_pool;
    bool device_lost;
} vk_state;

/* ------------------------------------------------------------ scratch --- */

/* Device buffers that ops keep between calls (one per role), grown on demand and
 * never shrunk, so repeated calls of one shape allocate nothing. */
typedef enum scratch_slot {
    SCRATCH_ATTN_Q, SCRATCH_ATTN_K, SCRATCH_ATTN_V, /* BHSD copies of BSHD inputs (unfused) */
    SCRATCH_ATTN_O,                                  /* BHSD output before its transpose */
    SCRATCH_ATTN_SCORES,                             /* Tq x Tk scores, chunked (unfused) */
    SCRATCH_ATTN_PARTIAL,                            /* split-key partial results (fused) */
    SCRATCH_MHA_Q, SCRATCH_MHA_K, SCRATCH_MHA_V, SCRATCH_MHA_O, /* the layer's, f32 */
    SCRATCH_MHA_Q16, SCRATCH_MHA_K16, SCRATCH_MHA_V16, /* rounded to its 16-bit compute dtype
                                                          (o reuses q's: src/ops/mha.c) */
    SCRATCH_OUTPUT,                                  /* an op's f32 output before narrowing */
    SCRATCH_COUNT
} scratch_slot;
_Static_assert(SCRATCH_COUNT <= VKATTN_MAX_TRACKED_BUFFERS, "vk_hazards_reset tracks every slot");

/* ------------------------------------------------------------ context --- */

/* ------------------------------------------------------------ profile --- */

/* Timestamps per command buffer (profile.c): at most PROFILE_STAMPS - 1
 * commands of one submission are measured. */
#define PROFILE_STAMPS 1024

typedef struct profile_total {
    uint64_t dispatches, ticks;
} profile_total;

typedef struct profile_state {
    bool wanted;                /* vkattn_context_desc.profile or VKATTN_PROFILE=1 */
    VkQueryPool pool;           /* where the device has timestamps */
    uint32_t used;              /* stamps written into the current command buffer */
    uint16_t shader[PROFILE_STAMPS];            /* the command each stamp ends */
    profile_total totals[SHADER_COUNT + 1];     /* per shader_id; [SHADER_COUNT]: copies */
} profile_state;

bool profile_wanted(const vkattn_context_desc *desc);
void profile_init(vkattn_context *ctx);
void profile_destroy(vkattn_context *ctx);
void profile_begin_commands(vkattn_context *ctx);
void profile_after_command(vkattn_context *ctx, uint32_t shader);
void profile_collect(vkattn_context *ctx);

/* Knob values of the kernels' plans from vkattn_context_desc.tuning or
 * VKATTN_TUNE (src/ops/tuning.c, tuning.h): [kernel][knob], 0 where the
 * planner chooses. Fixed when the context is created. */
#define TUNING_VARIANTS 10
#define TUNING_KNOBS 16
typedef struct kernel_tuning {
    uint32_t value[TUNING_VARIANTS][TUNING_KNOBS];
} kernel_tuning;

void tuning_init(vkattn_context *ctx, const vkattn_context_desc *desc);
/* With VKATTN_COOPMAT_LAYOUT=1 in the environment, logs the device's
 * cooperative-matrix accumulator layout (ops/coopmat_layout_probe.c); a new
 * Vulkan context calls it. */
void coopmat_layout_report(vkattn_context *ctx);
/* Whether VKATTN_COOPMAT_LAYOUT=1 asks for that report. */
bool coopmat_layout_wanted(void);
/* With VKATTN_COOPMAT_PEAK=1 in the environment, logs the rate of the matrix
 * units' products through the extension (ops/coopmat_peak.c); a new Vulkan
 * context calls it. */
void coopmat_peak_report(vkattn_context *ctx);
/* Whether VKATTN_COOPMAT_PEAK=1 asks for that report. */
bool coopmat_peak_wanted(void);
/* Where the context's tuning asks for the coopmat kernel's softmax in
 * registers, reads the accumulator layout it needs (a submission of its own:
 * a new Vulkan context calls it, so that no attention call submits). */
void coopmat_register_layout_init(vkattn_context *ctx);

struct vkattn_context {
    vkattn_backend backend;
    vkattn_device_info info;
    vkattn_log_fn log_fn;
    void *log_user_data;
    char last_error[512];
    uint32_t live_tensors;

    vkattn_tensor *scratch[SCRATCH_COUNT];
    /* VKATTN_POISON=1 (the tests): NaN in what nothing has written yet, as a
     * GPU's memory may hold anything where lavapipe's tends to hold zeros or
     * the last call's values: every kernel's shared memory as it starts
     * (VKATTN_SPEC_POISON_SHARED) and every scratch tensor as scratch_get hands
     * it out, so that a read before the first write gives a wrong result. */
    bool poison;
    /* VKATTN_SUBGROUP_ORDER (the tests, on lavapipe only): natural, reversed
     * or mixed (half of each dispatch's workgroups reversed), so that a
     * barrier missing between two subgroups fails there in one of the two
     * orders, whichever way the data goes (VKATTN_SPEC_SUBGROUP_ORDER). */
    subgroup_order subgroup_order;
    /* Scratch tensors replaced while an unreleased recording still uses them. */
    vkattn_tensor **retired;
    uint32_t retired_count, retired_capacity;
    vkattn_recording *recordings; /* unreleased ones, a list through `next` */

    bool timer_running;
    double timer_host_start_ms;
    profile_state profile;
    kernel_tuning tuning;

    vk_state vk; /* unused on the CPU backend */
};

struct vkattn_tensor {
    vkattn_context *ctx;
    vkattn_dtype dtype;
    int32_t ndim;
    int64_t shape[VKATTN_MAX_DIMS];
    size_t count;   /* elements */
    size_t bytes;   /* count * dtype size */

    /* Vulkan */
    VkBuffer buffer;
    vk_allocation memory;
    VkDeviceSize buffer_size; /* bytes rounded up to 16: f16/bf16 tensors are read as uint words */
    vk_mapping map;           /* map.host non-NULL where tensors are mapped */
    VkBufferView texels;      /* uniform texel view, or VK_NULL_HANDLE where unsupported
                                 (always for bf16: no texel format) */
    VkBufferView texels4;     /* the same as 4-component texels (element count % 4 == 0) */
    /* bf16 only: views of its raw bits (R16_UINT, and R16G16B16A16_UINT where
     * the element count % 4 == 0), which the texel kernels read and widen
     * themselves (vk_texel_input_view); VK_NULL_HANDLE where unsupported */
    VkBufferView bits, bits4;

    /* CPU backend */
    void *host;
    /* I32 tensors on Vulkan: the values last uploaded, so that attention can
     * check kv_len, cu_seqlens and block tables without reading the device
     * back (NULL: never uploaded, or written by the application itself) */
    int32_t *i32_shadow;
    bool app_writes; /* its VkBuffer was handed out: no i32_shadow from then on */

    uint32_t pins; /* unreleased recordings using this (scratch) tensor */
};

/* Resources that an application's command buffer uses after
 * vkattn_recording_end: descriptor pools and the scratch tensors it touched. */
struct vkattn_recording {
    vkattn_context *ctx;
    VkCommandBuffer command_buffer;
    VkDescriptorPool *pools;
    uint32_t pool_count, pool_capacity;
    vkattn_tensor **pinned;
    uint32_t pinned_count, pinned_capacity;
    vkattn_recording *next;
};

/* The attention variants of one call (vkattn_attention_desc, DESIGN.md section
 * 1), checked: tensors NULL when off. */
typedef struct attention_variants {
    bool has_window;
    int32_t window_left, window_right;  /* -1: unbounded */
    float softcap;                      /* 0: off */
    const vkattn_tensor *sinks, *alibi, *mask;
    /* Element strides of the mask over (b, h, i); j is contiguous. 0 broadcasts. */
    int64_t mask_sb, mask_sh, mask_si;
    bool mask_per_row;  /* its last dimension is 1 (Tk is not): one value for every key */
    const vkattn_tensor *cu_q, *cu_k;   /* packed sequences (NULL: dense) */
    const vkattn_tensor *block_table;   /* paged keys (NULL: dense) */
    int64_t block_size, max_blocks, num_blocks;
    int64_t total_q, total_k;           /* packed rows of Q, K (varlen) */
    bool o_gaps;                        /* packed O has rows in no sequence (or may: the
                                           host has not seen cu_seqlens_q), zeroed first */
} attention_variants;

/* The shape of one attention problem, resolved from the tensors and the desc.
 * With packed sequences Tq and Tk are the longest ones (bounds where the values
 * cannot be read first); with paged keys Tk is max_blocks * block_size. */
typedef struct attention_dims {
    int64_t B, H, Hkv, Tq, Tk, D, Dv;
    vkattn_layout layout;
    bool causal;
    /* false: q_offset is each sequence's Tk_b - Tq_b (packed or paged sequences
     * with no q_offset given); dense calls always resolve it here */
    bool fixed_q_offset;
    int64_t q_offset;
    float scale;
    attention_variants var;
} attention_dims;

/* Whether the call uses any variant that changes scores or which keys a row sees
 * beyond causal/kv_len (window, softcap, sinks, ALiBi, mask). */
static inline bool attention_has_score_variants(const attention_dims *d)
{
    const attention_variants *v = &d->var;
    return v->has_window || v->softcap != 0.0f || v->sinks || v->alibi || v->mask;
}
/* Whether keys or queries are addressed through cu_seqlens or a block table. */
static inline bool attention_has_layout_variants(const attention_dims *d)
{
    return d->var.cu_q || d->var.cu_k || d->var.block_table;
}

/* A 1-D scratch tensor of `dtype` (F32, F16 or BF16) and at least `elements`
 * (rounded up to a multiple of 4, so it has vec4 texel views where the device
 * allows); a slot asked for another dtype than it holds is made anew. With
 * ctx->poison, every word of the elements asked for VKATTN_POISON_BITS
 * (recorded before the op's own work on Vulkan). */
vkattn_status scratch_get(vkattn_context *ctx, scratch_slot slot, vkattn_dtype dtype,
                          uint64_t elements, vkattn_tensor **out);
/* A scratch tensor's memory under another shape of `count` elements at most
 * its own (a copy, for the call that got it: the slot's tensor keeps the
 * recording's pin, so the view has none). */
vkattn_tensor scratch_view(const vkattn_tensor *scratch, int32_t ndim, const int64_t *shape,
                           size_t count);
void scratch_release_all(vkattn_context *ctx);
/* Records `bits` into the first `count` 32-bit words of the tensor `t` (at
 * most its size in bytes rounded up to 16, over 4; shaders/fill.comp, in the
 * compute-shader stage). */
vkattn_status vk_tensor_fill(vkattn_context *ctx, vkattn_tensor *t, uint64_t count,
                             uint32_t bits);
/* Destroys retired scratch tensors that no recording pins any more. */
void scratch_sweep_retired(vkattn_context *ctx);

/* While recording into an application's command buffer: a descriptor set from
 * the recording's own pools, and a pin on a scratch tensor it uses. */
vkattn_status recording_allocate_set(vkattn_recording *r, VkDescriptorSet *out);
vkattn_status recording_pin(vkattn_recording *r, vkattn_tensor *t);
void recording_release_all(vkattn_context *ctx);
/* INVALID_ARGUMENT while recording into an application's command buffer, for
 * calls that would submit work or touch memory the recording may use. */
vkattn_status check_not_recording(vkattn_context *ctx, const char *op);

/* ------------------------------------------------------ error helpers --- */

/* Records a formatted message as the context's last error; returns `status`. */
vkattn_status ctx_fail(vkattn_context *ctx, vkattn_status status, const char *fmt, ...)
    VKATTN_PRINTF(3, 4);
vkattn_status vk_status_from_result(VkResult result);
/* ctx_fail for a failed Vulkan call: "what: VK_ERROR_..." with the matching status. */
vkattn_status ctx_fail_vk(vkattn_context *ctx, VkResult result, const char *what);
const char *vk_result_string(VkResult result);

void ctx_log(const vkattn_context *ctx, vkattn_log_level level, const char *fmt, ...)
    VKATTN_PRINTF(3, 4);
void log_to(vkattn_log_fn fn, void *user, vkattn_log_level level, vkattn_log_source source,
            const char *fmt, ...) VKATTN_PRINTF(5, 6);

/* -------------------------------------------------------------- device --- */

/* vk_instance.c. Opens the Vulkan loader once per process; returns its
 * vkGetInstanceProcAddr or NULL when no loader is installed. */
PFN_vkGetInstanceProcAddr vk_loader(void);
/* The instance functions vkattn calls, through `gipa`; whether the core ones
 * all resolved. */
void vk_load_instance_table(vk_instance_table *t, PFN_vkGetInstanceProcAddr gipa,
                            VkInstance instance);
bool vk_instance_table_complete(const vk_instance_table *t);
/* The device functions; false when a core one is missing. */
bool vk_load_device_table(vk_device_table *t, PFN_vkGetDeviceProcAddr gdpa, VkDevice device);
/* A Vulkan 1.1+ instance, with the validation layer and synchronization
 * validation unless `level` is OFF, GPU-assisted validation too with
 * GPU_ASSISTED; its apiVersion (the loader's, up to 1.3) into *api_version
 * unless NULL. */
vkattn_status vk_instance_create(PFN_vkGetInstanceProcAddr gipa, vkattn_validation level,
                                 VkInstance *out, uint32_t *api_version);
/* ctx's own instance and, with validation (`wanted`, else VKATTN_VALIDATION),
 * the messenger to its log; without the layer installed, a warning and no
 * validation. */
vkattn_status vk_instance_create_owned(vkattn_context *ctx, vkattn_validation wanted);

/* device_query.c (and vk_device_query below). */
vkattn_device_type vk_device_type_of(VkPhysicalDeviceType type);
/* The first queue family with compute, preferring one without graphics;
 * UINT32_MAX if none. */
uint32_t vk_compute_queue_family(const vk_instance_table *vki, VkPhysicalDevice pd,
                                 uint32_t *timestamp_bits);
/* The usable physical devices (Vulkan 1.1, a compute queue) in loader order;
 * the caller frees *out. */
vkattn_status vk_usable_devices(const vk_instance_table *vki, VkInstance instance,
                                VkPhysicalDevice **out, uint32_t *count);

/* Creates an instance (with validation when asked), picks and creates a device. */
vkattn_status vk_device_create_owned(vkattn_context *ctx, const vkattn_context_desc *desc);
/* Uses the application's handles as they are. */
vkattn_status vk_device_adopt(vkattn_context *ctx, const vkattn_vulkan_handles *handles);
/* Fills ctx->info and the limits in ctx->vk from the physical device, and
 * settles the memory mode (ctx->vk.memory_mode, else VKATTN_MEMORY). */
void vk_device_query(vkattn_context *ctx);
void vk_device_destroy(vkattn_context *ctx);

/* -------------------------------------------------------------- memory --- */

/* A buffer of `size` bytes for `use` (memory_types.h). MEMORY_DEVICE is mapped
 * as well where the context maps tensors (info.host_visible_device_memory);
 * staging is always mapped. Where an allocation fails for lack of memory the
 * next best memory type is tried. `mapping` tells how the host reaches it. */
vkattn_status vk_buffer_create(vkattn_context *ctx, VkDeviceSize size, memory_use use,
                               VkBuffer *buffer, vk_allocation *memory, vk_mapping *mapping);
/* Destroys the buffer and gives its memory back (either may be null); resets *memory. */
void vk_buffer_destroy(vkattn_context *ctx, VkBuffer buffer, vk_allocation *memory);
/* After host writes to bytes [0, bytes) of a mapped buffer, before the device
 * reads them; and before the host reads what the device wrote. No-ops on
 * coherent memory. */
vkattn_status vk_mapping_flush(vkattn_context *ctx, const vk_allocation *memory,
                               const vk_mapping *m, VkDeviceSize bytes);
vkattn_status vk_mapping_invalidate(vkattn_context *ctx, const vk_allocation *memory,
                                    const vk_mapping *m, VkDeviceSize bytes);

/* memory_pool.c. Memory for a buffer with requirements `req` in the first type
 * of `order` (memory_types_ranked's) that has room, from a shared block or, for
 * a large buffer, one of its own; `mapped`: the block is mapped too (the type
 * must be host-visible). Where a type has no room (out of memory, or at the
 * driver's cap on allocations), its empty block kept for later buffers is
 * freed and the type tried again, then the next type is tried; so is the
 * next where `mapped` memory of a type cannot be mapped.
 * VK_SUCCESS, or the failure (no room: the last type's). */
VkResult memory_pool_allocate(vkattn_context *ctx, const VkMemoryRequirements *req,
                              const uint32_t *order, uint32_t n, bool mapped,
                              vk_allocation *out);
/* Gives the bytes back; a block left empty is freed, except one shared block
 * per type kept for the next buffer (uploads make and drop staging buffers). */
void memory_pool_free(vkattn_context *ctx, vk_allocation *a);
/* Frees every block (context teardown). */
void memory_pool_destroy(vkattn_context *ctx);
/* A uniform texel view of `elements` texels of `format`; VK_NULL_HANDLE when not
 * supported or on failure (kernels then read the storage binding). */
VkBufferView vk_texel_view(vkattn_context *ctx, VkBuffer buffer, VkFormat format, uint64_t elements);

/* ------------------------------------------------------------ pipeline --- */

vkattn_status vk_pipelines_init(vkattn_context *ctx, const vkattn_context_desc *desc);
/* The persistent pipeline cache (pipeline_cache.c): the path for this device
 * (NULL when disabled), the validated data of its file (NULL when absent,
 * corrupt or foreign, with a log line saying why), and saving at the end. */
char *pipeline_cache_file(vkattn_context *ctx, const vkattn_context_desc *desc);
void *pipeline_cache_load(vkattn_context *ctx, const char *path, size_t *size);
void pipeline_cache_save(vkattn_context *ctx);
void vk_pipelines_destroy(vkattn_context *ctx);
vkattn_status vk_pipeline_get(vkattn_context *ctx, const pipeline_key *key, VkPipeline *out);

/* ----------------------------------------------------------------- cmd --- */

typedef struct vk_binding {
    VkBuffer buffer;      /* VK_NULL_HANDLE: the dummy buffer */
    VkBufferView texels;  /* the same buffer as texels; VK_NULL_HANDLE: the dummy view */
    bool written;
    /* The shader declares this texel binding usamplerBuffer (a view of a bf16
     * tensor's bits): where texels is VK_NULL_HANDLE it gets the integer dummy
     * view, since a float one is invalid there even where nothing reads it. */
    bool uint_texels;
} vk_binding;

/* A tensor as a kernel input or output (NULL: an absent optional input); its
 * texel binding gets the 1-component view, or with vk_bind4 the 4-component one. */
vk_binding vk_bind(const vkattn_tensor *t, bool written);
vk_binding vk_bind4(const vkattn_tensor *t);

typedef struct vk_dispatch vk_dispatch;
/* The texel view a kernel reads t through (1 or 4 elements a texel): its float
 * view, or for bf16, which no texel format reads as a float, the R16_UINT view
 * of its bits, which the kernel widens. VK_NULL_HANDLE where there is none. */
VkBufferView vk_texel_input_view(const vkattn_tensor *t, bool vec4);
/* Binds t (NULL: absent) as an input read through texel fetches: its buffer and
 * float view at binding `slot`, or for bf16 its bits view at the texel slot of
 * binding `bits_slot`, which the shader declares usamplerBuffer (and which gets
 * the integer dummy view otherwise). The shader picks the view by t's dtype. */
void vk_bind_texel_input(vk_dispatch *d, uint32_t slot, uint32_t bits_slot,
                         const vkattn_tensor *t, bool vec4);

struct vk_dispatch {
    pipeline_key key;
    vk_binding bindings[VKATTN_MAX_BINDINGS];
    uint32_t binding_count;
    const void *push;
    uint32_t push_bytes;
    uint32_t groups[3];
};

vkattn_status vk_cmd_init(vkattn_context *ctx);
vkattn_status vk_descriptor_pool_create(vkattn_context *ctx, VkDescriptorPool *out);
void vk_cmd_destroy(vkattn_context *ctx);
vkattn_status vk_cmd_dispatch(vkattn_context *ctx, const vk_dispatch *d);
vkattn_status vk_cmd_copy(vkattn_context *ctx, VkBuffer src, VkBuffer dst, VkDeviceSize bytes);
/* Starts hazard tracking over for a new stretch of commands. With
 * scratch_unordered, the context's scratch buffers count as written by work
 * that nothing orders before what comes next (an application's command buffer
 * that reuses them may run just before), so the first command touching one gets
 * a barrier; the application orders its own tensors (vkattn_recording_begin). */
void vk_hazards_reset(vkattn_context *ctx, bool scratch_unordered);
/* Keeps a staging buffer alive until the recorded work has completed. */
vkattn_status vk_cmd_defer_free(vkattn_context *ctx, VkBuffer buffer, vk_allocation memory);
vkattn_status vk_cmd_timestamp(vkattn_context *ctx, uint32_t query);
vkattn_status vk_cmd_submit_and_wait(vkattn_context *ctx);

/* --------------------------------------------------------------- shape --- */

size_t dtype_size(vkattn_dtype dtype);
const char *dtype_name(vkattn_dtype dtype);
/* "2x3x4" into buf. */
const char *shape_string(const vkattn_tensor *t, char *buf, size_t size);
/* Checks a tensor argument: non-NULL and owned by ctx. */
vkattn_status check_tensor(vkattn_context *ctx, const vkattn_tensor *t, const char *op,
                           const char *name);
int64_t product(const int64_t *dims, int32_t n);

/* --------------------------------------------------------------- half --- */

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
/* bfloat16: widening is exact; narrowing rounds to nearest even (NaN stays a
 * quiet NaN, overflow gives Inf). */
float bf16_to_float(uint16_t b);
uint16_t float_to_bf16(float f);
/* Copies `count` elements between host layouts of F32, F16 and BF16 (tensor.c):
 * widened to f32 exactly, narrowed to nearest even, so F16 <-> BF16 rounds once. */
void host_convert(void *dst, vkattn_dtype dst_type, const void *src, vkattn_dtype src_type,
                  size_t count);
/* Element i of a tensor's host data as double (F32, F16, BF16 or I32). */
double host_element(const void *data, vkattn_dtype dtype, size_t i);
/* count elements of a tensor's host data as doubles. */
void host_to_double(const void *data, vkattn_dtype dtype, size_t count, double *out);

/* ------------------------------------------------------ CPU reference --- */

/* The CPU reference's parallel loop (cpu/parallel.c): body(arg, worker, begin,
 * end) over chunks of [0, items), on `threads` threads (worker 0 is the
 * caller's own). cpu_threads_for: VKATTN_CPU_THREADS, else one a CPU online
 * but fewer where the loop's `work` (multiply-adds) would not keep them busy;
 * never more than `items`. */
typedef void (*cpu_range_fn)(void *arg, int worker, int64_t begin, int64_t end);
int cpu_threads_for(int64_t items, double work);
void cpu_parallel_for(int threads, int64_t items, cpu_range_fn body, void *arg);
vkattn_status cpu_tensor_alloc(vkattn_tensor *t);
void cpu_matmul(const vkattn_matmul_desc *d, const vkattn_tensor *a, const vkattn_tensor *b,
                const vkattn_tensor *bias, vkattn_tensor *c);
vkattn_status cpu_softmax(const vkattn_softmax_desc *d, int64_t q_offset, const vkattn_tensor *x,
                          vkattn_tensor *y);
void cpu_head_transpose(const vkattn_tensor *x, vkattn_tensor *y);
vkattn_status cpu_attention(vkattn_context *ctx, const attention_dims *d, const vkattn_tensor *q,
                            const vkattn_tensor *k, const vkattn_tensor *v,
                            const vkattn_tensor *kv_len, vkattn_tensor *o);
/* d->Tq is T, d->D is Dh; Tk == Tq, Hkv == H, layout BSHD. q, k, v and the
 * heads' output are rounded to `compute` where it is 16-bit. */
vkattn_status cpu_mha(vkattn_context *ctx, const attention_dims *d, vkattn_dtype compute,
                      const vkattn_tensor *x, const vkattn_tensor *w_qkv,
                      const vkattn_tensor *b_qkv, const vkattn_tensor *w_out,
                      const vkattn_tensor *b_out, vkattn_tensor *y);

/* -------------------------------------------------------------- timing --- */

double host_time_ms(void);

#endif /* VKATTN_INTERNAL_H */
