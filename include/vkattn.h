/*
 * vkattn — multi-head attention on any GPU with a Vulkan compute queue.
 *
 * vkattn computes scaled dot-product attention (a fused flash-attention kernel,
 * or the unfused pipeline of the pieces it is built from: tiled matmul,
 * causal-masked scaled softmax, head transpose) and the multi-head attention
 * layer, with GLSL compute shaders embedded in the library as SPIR-V, and with
 * a CPU reference backend (double accumulation) that computes the same ops for
 * checking and as a fallback.
 *
 * Usage sketch
 *
 *     vkattn_context *ctx;
 *     vkattn_context_desc cd = {0};                 // zero = defaults: best device
 *     if (vkattn_context_create(&cd, &ctx) != VKATTN_OK) ...
 *
 *     // Q, K, V, O are (B, H, T, D) by default.
 *     vkattn_tensor *q, *k, *v, *o;
 *     vkattn_tensor_desc td = {.dtype = VKATTN_DTYPE_F32, .ndim = 4, .shape = {B, H, T, D}};
 *     vkattn_tensor_create(ctx, &td, &q);           // likewise k, v and o
 *     vkattn_tensor_upload(q, host_q, VKATTN_DTYPE_F32);   // likewise k, v
 *     vkattn_attention_desc ad = {.causal = true};  // scale 1/sqrt(D), fused path
 *     vkattn_status s = vkattn_attention(ctx, &ad, q, k, v, o);  // recorded, not yet run
 *     if (s == VKATTN_OK)
 *         s = vkattn_tensor_download(o, host_o, VKATTN_DTYPE_F32);  // submits and waits
 *     if (s != VKATTN_OK) fprintf(stderr, "%s\n", vkattn_last_error(ctx));
 *
 *     vkattn_tensor_destroy(q); ...; vkattn_context_destroy(ctx);
 *
 * Ownership. Every object created by vkattn_*_create is owned by the caller and
 * released by the matching *_destroy, which accepts NULL. Tensors belong to the
 * context that created them and must be destroyed before it. Host pointers passed
 * in are only read (or written) during the call.
 *
 * Execution. Ops are recorded into a command buffer and run asynchronously; many
 * ops go in one submission. vkattn_tensor_download() and vkattn_synchronize()
 * submit what was recorded and wait for it. Dependencies between recorded ops are
 * tracked per buffer, so the caller never inserts barriers.
 *
 * Threading. A context and its tensors are used by one thread at a time.
 * Separate contexts may be used from separate threads in parallel.
 *
 * Errors. Every call that can fail returns a vkattn_status (VKATTN_OK == 0).
 * vkattn_last_error(ctx) then says what exactly was wrong, with the numbers
 * ("matmul: A is 4x64 but B is 32x16"). A failed call leaves its outputs and
 * the context as they were: the context stays usable.
 *
 * Logging. Diagnostics (device choice, fallbacks, validation-layer messages) go
 * to the log callback given in vkattn_context_desc. With no callback vkattn
 * prints nothing.
 *
 * Devices. Chosen by vkattn_context_desc.device, else the VKATTN_DEVICE
 * environment variable (an index or a name substring), else the best discrete
 * GPU, else integrated, else any other Vulkan device (lavapipe), else the CPU
 * backend (with a log line saying so). A device that is named (by desc or
 * VKATTN_DEVICE) but matches none is an error, never a fallback.
 *
 * Adopted devices. An application that has its own VkInstance, VkDevice and
 * VkQueue hands them over in vkattn_context_desc.adopt; vkattn needs Vulkan 1.1
 * and a queue family with compute, and no device extension or feature beyond
 * core 1.1. Ops can also be recorded into the application's own command buffer
 * (vkattn_recording_begin). On a device vkattn creates itself it enables what
 * its faster kernels use where the device has it (shaderFloat16, subgroup size
 * control, cooperative matrices); in an adopted device only those the
 * application says it enabled (vkattn_device_features_query, then
 * vkattn_vulkan_handles.enabled_features).
 *
 * Memory. Tensors are device buffers. On devices that share memory with the
 * host (integrated GPUs, lavapipe) and expose it host-visible and coherent, they
 * are mapped, and upload/download are host copies. Elsewhere (discrete GPUs),
 * or everywhere with vkattn_context_desc.memory = VKATTN_MEMORY_DEVICE (or
 * VKATTN_MEMORY=device in the environment), they live in device-local memory
 * that the host does not see, and upload/download go through host-visible
 * staging buffers copied by the device; vkattn_device_info says which.
 * Large tensors never go in a small host-visible device-local heap (the 256 MiB
 * PCIe BAR of a discrete GPU without resizable BAR); staging buffers prefer
 * system memory, host-cached for downloads; memory that is not host-coherent is
 * flushed and invalidated as needed. Ops that need scratch memory (unfused
 * scores, split-key partial results, mha projections) keep it in the context
 * for later calls.
 *
 * vkattn does not:
 *  - link libvulkan: it opens the Vulkan loader at run time (volk), or uses the
 *    application's vkGetInstanceProcAddr;
 *  - create, destroy or reconfigure an adopted VkInstance/VkDevice/VkQueue, nor
 *    submit to the adopted queue while recording into the application's buffer;
 *  - read shader files at run time: the SPIR-V is inside the library;
 *  - print anything unless a log callback is given;
 *  - keep global mutable state: everything lives in the context.
 */
#ifndef VKATTN_H
#define VKATTN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan_core.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VKATTN_VERSION_MAJOR 0
#define VKATTN_VERSION_MINOR 1
#define VKATTN_VERSION_PATCH 0
#define VKATTN_MAKE_VERSION(major, minor, patch) \
    (((uint32_t)(major) << 22) | ((uint32_t)(minor) << 12) | (uint32_t)(patch))
#define VKATTN_VERSION \
    VKATTN_MAKE_VERSION(VKATTN_VERSION_MAJOR, VKATTN_VERSION_MINOR, VKATTN_VERSION_PATCH)

#if defined(_WIN32) && defined(VKATTN_SHARED)
#  ifdef VKATTN_BUILDING
#    define VKATTN_API __declspec(dllexport)
#  else
#    define VKATTN_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define VKATTN_API __attribute__((visibility("default")))
#else
#  define VKATTN_API
#endif

/* ---------------------------------------------------------------- status -- */

/* X(name, value, description): one list makes the enum and the strings. */
#define VKATTN_STATUS_LIST(X)                                                         \
    X(OK, 0, "success")                                                              \
    X(ERROR_INVALID_ARGUMENT, 1, "invalid argument (NULL pointer or bad enum value)") \
    X(ERROR_INVALID_SHAPE, 2, "invalid shape (dimension count or a size < 1)")       \
    X(ERROR_SHAPE_MISMATCH, 3, "tensor shapes do not match")                         \
    X(ERROR_SIZE_OVERFLOW, 4, "size computation overflows")                          \
    X(ERROR_UNSUPPORTED, 5, "not supported by this backend or device")              \
    X(ERROR_EXCEEDS_DEVICE_LIMIT, 6, "exceeds a limit of the device")                \
    X(ERROR_OUT_OF_HOST_MEMORY, 7, "out of host memory")                             \
    X(ERROR_OUT_OF_DEVICE_MEMORY, 8, "out of device memory")                         \
    X(ERROR_NO_DEVICE, 9, "no suitable device")                                      \
    X(ERROR_DEVICE_LOST, 10, "device lost")                                          \
    X(ERROR_VULKAN, 11, "a Vulkan call failed")                                      \
    X(ERROR_IO, 12, "input/output error")

typedef enum vkattn_status {
#define VKATTN_STATUS_ENUM_(name, value, text) VKATTN_##name = value,
    VKATTN_STATUS_LIST(VKATTN_STATUS_ENUM_)
#undef VKATTN_STATUS_ENUM_
} vkattn_status;

/* A static description of `status`; "unknown status" for values not in the list. */
VKATTN_API const char *vkattn_status_string(vkattn_status status);

/* The library's version as "MAJOR.MINOR.PATCH" and as VKATTN_MAKE_VERSION(...);
 * compare with VKATTN_VERSION to detect a header/library mismatch. */
VKATTN_API const char *vkattn_version_string(void);
VKATTN_API uint32_t vkattn_version(void);

/* ------------------------------------------------------------- handles ---- */

typedef struct vkattn_context vkattn_context;
typedef struct vkattn_tensor vkattn_tensor;
typedef struct vkattn_recording vkattn_recording;

typedef enum vkattn_backend {
    VKATTN_BACKEND_AUTO = 0, /* Vulkan if a device is usable, else CPU */
    VKATTN_BACKEND_VULKAN,
    VKATTN_BACKEND_CPU,      /* the CPU reference backend */
} vkattn_backend;

typedef enum vkattn_dtype {
    VKATTN_DTYPE_F32 = 0,
    VKATTN_DTYPE_F16,        /* IEEE binary16; ops read it and accumulate in f32 */
    VKATTN_DTYPE_I32,        /* for index tensors such as kv_len */
    VKATTN_DTYPE_BF16,       /* bfloat16: the upper 16 bits of an IEEE binary32 (8 exponent
                                bits, 8 significant bits), so f32's range at f16's size;
                                ops read it and accumulate in f32. Uniform texel buffers
                                have no bf16 format: kernels that read inputs through
                                texels read a bf16 tensor's bits and widen them */
} vkattn_dtype;

/* ------------------------------------------------------------- logging ---- */

typedef enum vkattn_log_level {
    VKATTN_LOG_DEBUG = 0,
    VKATTN_LOG_INFO,
    VKATTN_LOG_WARNING,
    VKATTN_LOG_ERROR,
} vkattn_log_level;

typedef enum vkattn_log_source {
    VKATTN_LOG_SOURCE_LIBRARY = 0,  /* vkattn itself */
    VKATTN_LOG_SOURCE_VALIDATION,   /* a Khronos validation-layer message */
} vkattn_log_source;

/* Called on the thread that made the vkattn call. `message` is valid during the
 * call only. */
typedef void (*vkattn_log_fn)(void *user_data, vkattn_log_level level,
                              vkattn_log_source source, const char *message);

/* ------------------------------------------------------------- devices ---- */

typedef enum vkattn_device_type {
    VKATTN_DEVICE_TYPE_OTHER = 0,
    VKATTN_DEVICE_TYPE_INTEGRATED_GPU,
    VKATTN_DEVICE_TYPE_DISCRETE_GPU,
    VKATTN_DEVICE_TYPE_VIRTUAL_GPU,
    VKATTN_DEVICE_TYPE_CPU,         /* a Vulkan CPU device (lavapipe) or the CPU backend */
} vkattn_device_type;

/* Where tensors live (see "Memory." at the top of this file). */
typedef enum vkattn_memory_mode {
    VKATTN_MEMORY_AUTO = 0,  /* mapped where device memory is host-visible and coherent
                                and the device shares memory with the host (integrated
                                GPUs, CPU devices); device-local with staging elsewhere */
    VKATTN_MEMORY_DEVICE,    /* always device-local with staged uploads and downloads,
                                as on a discrete GPU, even where mapping would work */
} vkattn_memory_mode;

/* What a context runs on. For the CPU backend, the Vulkan-specific fields are 0. */
typedef struct vkattn_device_info {
    vkattn_backend backend;            /* VULKAN or CPU, never AUTO */
    uint32_t index;                    /* position in vkattn_list_devices() */
    char name[256];
    char vendor[32];                   /* "NVIDIA", "AMD", "Intel", "Mesa", ... */
    uint32_t vendor_id, device_id;
    char driver_name[256];             /* e.g. "llvmpipe"; "" if unknown */
    char driver_info[256];             /* e.g. "Mesa 22.3.6 (LLVM 15.0.6)" */
    char driver_version[64];           /* decoded the vendor's way */
    uint32_t api_version;              /* VK_MAKE_API_VERSION encoding */
    vkattn_device_type type;
    uint32_t subgroup_size;
    bool subgroup_arithmetic;          /* subgroupAdd/Max in compute shaders */
    uint32_t shared_memory_bytes;      /* maxComputeSharedMemorySize */
    uint32_t max_workgroup_invocations;
    uint64_t max_storage_buffer_range; /* bytes: the largest tensor this device takes */
    bool storage_16bit;                /* storageBuffer16BitAccess */
    bool float16_arithmetic;           /* shaderFloat16 */
    bool cooperative_matrix;           /* vkattn's matrix-unit kernels can run here:
                                          VK_NV_cooperative_matrix or
                                          VK_KHR_cooperative_matrix with f16 shapes,
                                          shaderFloat16 and the Vulkan memory model
                                          (the attention kernel also needs subgroup
                                          shuffles and votes and a required subgroup
                                          size, which every such GPU known has; it
                                          says why where one lacks them) */
    bool timestamps;                   /* compute queue has GPU timestamps */
    double timestamp_period_ns;
    bool host_visible_device_memory;   /* tensors are mapped, not staged */
    bool validation_enabled;           /* Khronos validation layer active (owned instances) */
    bool adopted;                      /* running in the application's VkDevice */
    /* The subgroup sizes a compute pipeline may get (min == max where the size
     * is fixed; subgroup_size is the default within them). */
    uint32_t subgroup_size_min, subgroup_size_max;
    bool subgroup_size_required;       /* kernels whose tiling depends on the subgroup
                                          size require it (Vulkan 1.3 or
                                          VK_EXT_subgroup_size_control, full subgroups);
                                          false on adopted devices */
    vkattn_memory_mode memory;         /* the memory mode in force: AUTO, or DEVICE when
                                          asked for (desc or VKATTN_MEMORY=device);
                                          host_visible_device_memory says the outcome */
    bool pipeline_statistics;          /* the driver reports compiled pipelines' statistics
                                          (VK_KHR_pipeline_executable_properties): a
                                          profiling context on a device vkattn creates
                                          logs each pipeline's; false on adopted devices */
    bool cooperative_matrix_khr;       /* with cooperative_matrix: the kernels go through
                                          VK_KHR_cooperative_matrix (devices without the
                                          NV extension, or VKATTN_COOPMAT_KHR=1) */
    bool bf16_cooperative_matrix;      /* the device lists VK_KHR_shader_bfloat16's
                                          bf16 x bf16 + f32 -> f32 subgroup products
                                          (false where an active validation layer is
                                          older than the extension, which keeps it
                                          from being queried); a device vkattn creates
                                          with cooperative_matrix_khr enables them for
                                          the coopmat kernel's tuning coopmat.bf16=2;
                                          false on adopted devices */
} vkattn_device_info;

/* Lists the Vulkan devices that can run vkattn (Vulkan >= 1.1, a compute queue),
 * in the order the loader reports them; `index` is what vkattn_context_desc.device
 * takes. Writes at most `capacity` entries to `infos` (which may be NULL when
 * capacity is 0) and the total count to `*count`. Returns VKATTN_OK also when no
 * device or no Vulkan loader exists (count 0). VKATTN_ERROR_INVALID_ARGUMENT if
 * count is NULL. */
VKATTN_API vkattn_status vkattn_list_devices(vkattn_device_info *infos, uint32_t capacity,
                                             uint32_t *count);

/* ------------------------------------------------------------- context ---- */

typedef enum vkattn_validation {
    VKATTN_VALIDATION_DEFAULT = 0,  /* as the environment says: VKATTN_VALIDATION=1 ON,
                                       VKATTN_VALIDATION=gpu GPU_ASSISTED, else off */
    VKATTN_VALIDATION_ON,           /* Khronos layer with synchronization validation;
                                       a warning is logged if the layer is missing */
    VKATTN_VALIDATION_OFF,
    VKATTN_VALIDATION_GPU_ASSISTED, /* ON, and the layer's GPU-assisted validation: the
                                       kernels instrumented to report reads and writes
                                       outside their buffers and texel views, which a
                                       driver that bounds-checks (lavapipe) otherwise
                                       hides; slower */
} vkattn_validation;

/* What vkattn's faster kernels use beyond core Vulkan 1.1, for an application
 * that creates the device vkattn will adopt: fp16 arithmetic (shaderFloat16),
 * required subgroup sizes (subgroupSizeControl, computeFullSubgroups) and
 * cooperative matrices (VK_NV_cooperative_matrix, or VK_KHR_cooperative_matrix
 * on a device without the NV one or with VKATTN_COOPMAT_KHR=1, with
 * vulkanMemoryModel and its device scope, which their shaders declare), each
 * only where the physical device has it. `cooperative_matrix` holds the KHR
 * extension's features where that is the one named (the two structures have
 * the same members; sType says which, and headers before 1.3.255 lack the KHR
 * type).
 * `extensions` names every extension these come from that the device lists, also
 * where a newer core version has them: an instance created for Vulkan 1.1 gives
 * even a 1.3 device only 1.1. Enable `extensions` and put `chain` in VkDeviceCreateInfo.pNext
 * (the last structure's pNext is NULL: append the application's own there, or
 * copy the booleans into its own structures), then pass this struct as
 * vkattn_vulkan_handles.enabled_features. `chain` points into the struct
 * itself: use it where vkattn_device_features_query filled it, do not copy it. */
typedef struct vkattn_device_features {
    const char *extensions[4];
    uint32_t extension_count;
    VkPhysicalDeviceShaderFloat16Int8Features float16_int8;
    VkPhysicalDeviceSubgroupSizeControlFeatures subgroup_size_control;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cooperative_matrix;
    void *chain;                       /* the first structure to enable, NULL if none */
    VkPhysicalDeviceVulkanMemoryModelFeatures vulkan_memory_model;
} vkattn_device_features;

/* Fills `*out` with the extensions and features vkattn would enable on
 * `physical_device` of `instance` (created with apiVersion >= 1.1), whose
 * functions come from `get_instance_proc_addr`. Structures for features the
 * device lacks are left out of the chain. INVALID_ARGUMENT on NULL arguments,
 * UNSUPPORTED if the instance lacks a Vulkan 1.1 query function. */
VKATTN_API vkattn_status vkattn_device_features_query(VkInstance instance,
                                                      PFN_vkGetInstanceProcAddr get_instance_proc_addr,
                                                      VkPhysicalDevice physical_device,
                                                      vkattn_device_features *out);

/* An application's Vulkan objects for vkattn to run in. vkattn never destroys
 * them. The device must have been created with Vulkan >= 1.1 and with the queue
 * family `queue_family_index` supporting compute. */
typedef struct vkattn_vulkan_handles {
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    uint32_t queue_family_index;
    VkQueue queue;                                  /* used from the context's thread only */
    PFN_vkGetInstanceProcAddr get_instance_proc_addr;
    const vkattn_device_features *enabled_features; /* default NULL: the device enables
                                       nothing beyond core 1.1 as far as vkattn knows;
                                       else what the application enabled from
                                       vkattn_device_features_query (vkattn reads the
                                       booleans during vkattn_context_create only) */
} vkattn_vulkan_handles;

typedef struct vkattn_context_desc {
    vkattn_backend backend;          /* default AUTO */
    const char *device;              /* index ("1") or name substring; default NULL:
                                        VKATTN_DEVICE from the environment, else best */
    vkattn_validation validation;    /* default: see vkattn_validation */
    vkattn_log_fn log_fn;            /* default NULL: silent */
    void *log_user_data;
    const vkattn_vulkan_handles *adopt; /* default NULL: vkattn creates its own instance
                                           and device; else runs in these (backend and
                                           device are then ignored) */
    const char *pipeline_cache_dir; /* default NULL: $XDG_CACHE_HOME/vkattn, else
                                       ~/.cache/vkattn. Compiled pipelines are kept there in
                                       one file per device (UUID, driver version) between
                                       runs. A corrupt or foreign file is ignored with a
                                       log line, never trusted. */
    bool pipeline_cache_disable;    /* default false; true: no cache file is read or written
                                       (also with VKATTN_PIPELINE_CACHE=0 in the environment) */
    vkattn_memory_mode memory;      /* default AUTO: VKATTN_MEMORY from the environment
                                       ("device" or "auto"), else AUTO (see
                                       vkattn_memory_mode); ignored by the CPU backend */
    bool profile;                   /* default false: per-kernel GPU times for
                                       vkattn_profile_read (also with VKATTN_PROFILE=1);
                                       on a device vkattn creates whose driver has
                                       VK_KHR_pipeline_executable_properties, each
                                       compiled pipeline's statistics (registers,
                                       spills) are also logged at INFO level */
    const char *tuning;             /* default NULL: VKATTN_TUNE from the environment,
                                       else none. For experiments on a new GPU: the
                                       kernels' tile sizes and key splits, as
                                       "kernel.knob=N,..." where a kernel is a fused
                                       variant's name or "matmul_coopmat" (e.g.
                                       "tiled.rows=2,tiled.keys=16,decode.target=4096,
                                       matmul_coopmat.stages=1"; the knobs are listed in
                                       README.md and may change between versions). A
                                       malformed or unknown entry is logged as a
                                       warning and ignored; a value the device or the
                                       call cannot take makes that kernel's planner
                                       refuse the call, saying why. */
} vkattn_context_desc;

/* Creates a context. `desc` may be NULL (all defaults). On success `*out` is a
 * new context; on failure `*out` is NULL and, if desc has a log callback, the
 * reason is logged. Statuses: INVALID_ARGUMENT (out NULL, bad enum),
 * NO_DEVICE (backend VULKAN but no usable device, or `device` matches none),
 * UNSUPPORTED (adopted device below Vulkan 1.1 or queue family without compute),
 * OUT_OF_HOST_MEMORY, OUT_OF_DEVICE_MEMORY, VULKAN. */
VKATTN_API vkattn_status vkattn_context_create(const vkattn_context_desc *desc,
                                               vkattn_context **out);

/* Waits for recorded work, then releases everything the context created (never
 * adopted objects). Tensors must be destroyed first. NULL is accepted. */
VKATTN_API void vkattn_context_destroy(vkattn_context *ctx);

/* Fills `*info` with what the context runs on. INVALID_ARGUMENT on NULL. */
VKATTN_API vkattn_status vkattn_context_info(const vkattn_context *ctx, vkattn_device_info *info);

/* The message of the last failed call on this context ("" if none yet). Valid
 * until the next call on the context. NULL ctx gives a static string. */
VKATTN_API const char *vkattn_last_error(const vkattn_context *ctx);

/* Submits everything recorded and waits for it. DEVICE_LOST if the device was
 * lost (the context is then unusable), VULKAN on other failures. */
VKATTN_API vkattn_status vkattn_synchronize(vkattn_context *ctx);

/* GPU timing of recorded work: begin() marks a point in the command stream;
 * end() marks a second one, synchronizes, and writes the elapsed milliseconds
 * between them measured with GPU timestamps (host wall-clock on the CPU backend
 * or where the queue has no timestamps; vkattn_device_info.timestamps says which).
 * INVALID_ARGUMENT if end() comes without begin(). */
VKATTN_API vkattn_status vkattn_timer_begin(vkattn_context *ctx);
VKATTN_API vkattn_status vkattn_timer_end(vkattn_context *ctx, double *elapsed_ms);

/* One kernel's GPU time since profiling began or was last reset. */
typedef struct vkattn_kernel_time {
    const char *kernel;     /* the shader ("attention_decode", "attention_combine",
                               "matmul", ...; "copy" for buffer copies); static */
    uint64_t dispatches;
    double total_ms;
} vkattn_kernel_time;

/* Per-kernel GPU times of a context created with `profile` (or VKATTN_PROFILE=1):
 * vkattn writes a GPU timestamp after every dispatch and copy it submits and
 * charges each the time since the stamp before it, which is the command's own
 * run time where it waits for the previous one (vkattn puts a barrier between
 * dependent commands; independent ones that overlap share their time in record
 * order). Counts work that has completed (vkattn_synchronize first), at most
 * 1023 commands per submission. Writes up to `capacity` kernels, the most time
 * first, to `out` and the number of kernels with time to `*count` (which may
 * exceed `capacity`); with `reset` the totals start over. Without profiling, on
 * the CPU backend, where the queue has no timestamps
 * (vkattn_device_info.timestamps) and for work recorded into an application's
 * command buffer there are no times: `*count` is 0. INVALID_ARGUMENT: ctx or
 * count NULL, or out NULL with capacity > 0. Profiling adds a timestamp per
 * command: leave it off where every microsecond is timed. */
VKATTN_API vkattn_status vkattn_profile_read(vkattn_context *ctx, vkattn_kernel_time *out,
                                             uint32_t capacity, uint32_t *count, bool reset);

/* ------------------------------------------------------------- tensors ---- */

#define VKATTN_MAX_DIMS 4

typedef struct vkattn_tensor_desc {
    vkattn_dtype dtype;                /* default F32 */
    int32_t ndim;                      /* 1..4, required */
    int64_t shape[VKATTN_MAX_DIMS];    /* outermost first; each >= 1 */
} vkattn_tensor_desc;

/* Creates a dense row-major tensor in the context's memory (device memory,
 * mapped or staged as "Memory." at the top says; host memory on the CPU
 * backend). Its content is undefined until written. On failure `*out` is NULL
 * (where out is not). Statuses: INVALID_ARGUMENT (NULL, bad dtype),
 * INVALID_SHAPE (ndim outside 1..4, a size < 1), SIZE_OVERFLOW (byte size does
 * not fit in 64 bits or size_t), EXCEEDS_DEVICE_LIMIT (larger than the device's
 * maxStorageBufferRange or allocation limit), OUT_OF_HOST_MEMORY,
 * OUT_OF_DEVICE_MEMORY. */
VKATTN_API vkattn_status vkattn_tensor_create(vkattn_context *ctx, const vkattn_tensor_desc *desc,
                                              vkattn_tensor **out);

/* Releases the tensor; waits first if recorded work still uses it. NULL accepted. */
VKATTN_API void vkattn_tensor_destroy(vkattn_tensor *tensor);

/* The tensor's dtype, dimension count and shape. */
VKATTN_API vkattn_tensor_desc vkattn_tensor_get_desc(const vkattn_tensor *tensor);

/* Copies the whole tensor from host memory `src`, which holds the tensor's element
 * count of `src_dtype` values, converting between F32, F16 and BF16 as needed (I32
 * only to I32). Narrowing rounds to nearest, ties to even: a value past the
 * target's largest finite one becomes Inf, NaN stays a (quiet) NaN, Inf and
 * signed zeros are kept, and values below the target's smallest subnormal
 * round to (signed) zero; F16 <-> BF16 goes through F32, exactly, then rounds
 * once. Ordered after work already recorded that reads the tensor; outside a
 * recording (vkattn_recording_begin) the data is in the tensor when the call
 * returns, and the work recorded before it has been submitted. Statuses:
 * INVALID_ARGUMENT (NULL, bad dtype), UNSUPPORTED (I32 <-> float),
 * OUT_OF_HOST_MEMORY, OUT_OF_DEVICE_MEMORY, DEVICE_LOST. */
VKATTN_API vkattn_status vkattn_tensor_upload(vkattn_tensor *tensor, const void *src,
                                              vkattn_dtype src_dtype);

/* Submits recorded work, waits, and copies the whole tensor to host memory `dst`
 * as `dst_dtype` values. Statuses as for upload. */
VKATTN_API vkattn_status vkattn_tensor_download(vkattn_tensor *tensor, void *dst,
                                                vkattn_dtype dst_dtype);

/* Where a Vulkan tensor lives: its VkBuffer (the tensor's data at offset 0) and
 * the buffer's size in bytes (the data rounded up to 16). For applications that
 * read or write tensors with their own commands (adopted devices). The buffer
 * belongs to the tensor: never destroy it. From this call on, attention no longer
 * checks the values of an I32 tensor (the application may write them; the kernels
 * clamp instead, see vkattn_attention). INVALID_ARGUMENT on NULL arguments;
 * UNSUPPORTED on the CPU backend. */
VKATTN_API vkattn_status vkattn_tensor_vulkan_buffer(const vkattn_tensor *tensor, VkBuffer *buffer,
                                                     VkDeviceSize *size);

/* ------------------------------------- recording into the application's buffer -- */
/*
 * With an adopted device, ops can go into a command buffer the application owns,
 * between its own commands; the application submits it. Usage:
 *
 *     vkBeginCommandBuffer(cb, ...);  ...own work...;  <entry barrier>
 *     vkattn_recording_begin(ctx, cb);
 *     vkattn_attention(ctx, ...);                  // recorded into cb
 *     vkattn_recording *rec;
 *     vkattn_recording_end(ctx, &rec);
 *     <exit barrier>;  ...own work...;  vkEndCommandBuffer(cb);  vkQueueSubmit(...);
 *     ...wait for the submission...;  vkattn_recording_release(rec);
 *
 * Barriers, the application's part:
 *  - entry: vkattn's kernels read their input tensors and write their outputs in
 *    the compute-shader stage (shader reads, including uniform texel buffer reads,
 *    and shader writes). Before vkattn_recording_begin, record a barrier that
 *    makes the application's earlier writes to those buffers available there
 *    (dstStageMask VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, dstAccessMask
 *    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT), and that orders
 *    its earlier reads of the outputs before vkattn overwrites them.
 *  - exit: after vkattn_recording_end, before using an output (or writing an
 *    input) again, a barrier with srcStageMask VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
 *    and srcAccessMask VK_ACCESS_SHADER_WRITE_BIT (| SHADER_READ_BIT for inputs).
 *  Between vkattn's own dispatches vkattn records the barriers they need.
 *
 * While recording, calls that would submit work or move data (tensor upload and
 * download, vkattn_synchronize, the timer) return INVALID_ARGUMENT: upload
 * inputs before vkattn_recording_begin (it waits for vkattn's own pending work).
 * Tensors used by the recorded commands must outlive the command buffer's
 * execution; the scratch memory and descriptor sets vkattn uses are kept by the
 * vkattn_recording until vkattn_recording_release.
 */

/* Starts recording ops into `command_buffer`, which the application has begun
 * (primary or secondary, on a queue family with compute, of the adopted device;
 * also works with a context's own device). First submits and waits for work
 * the context recorded itself. Statuses: INVALID_ARGUMENT (NULL, already
 * recording), UNSUPPORTED (CPU backend), DEVICE_LOST, VULKAN. */
VKATTN_API vkattn_status vkattn_recording_begin(vkattn_context *ctx, VkCommandBuffer command_buffer);

/* Stops recording into the application's command buffer; later ops go to the
 * context's own again. `*out` receives the recording, which the application
 * releases once the command buffer has finished executing (or will never run).
 * INVALID_ARGUMENT if no recording is in progress or out is NULL; on failure
 * `*out` is NULL (where out is not). */
VKATTN_API vkattn_status vkattn_recording_end(vkattn_context *ctx, vkattn_recording **out);

/* Frees what the recorded commands used. Call it after the command buffer has
 * completed. NULL is accepted. Unreleased recordings are released by
 * vkattn_context_destroy. */
VKATTN_API void vkattn_recording_release(vkattn_recording *recording);

/* ----------------------------------------------------------------- ops ---- */
/*
 * Every op validates all its arguments before recording anything; an error
 * leaves every tensor as it was. Inputs may be F32, F16 or BF16, each tensor its
 * own (accumulation is F32). Outputs may be F32, F16 or BF16: an op computes in
 * F32 and, for a 16-bit output, rounds its result into it (to nearest even, as
 * vkattn_tensor_upload rounds) once the op has succeeded, through F32 scratch
 * memory kept in the context (twice the output's size, so near the device's
 * buffer limit a 16-bit output can be refused where an F32 one of half the
 * elements is not): one more pass over the output, which an op that fails
 * never makes.
 * The tensors must belong to `ctx`. (The one exception to "nothing recorded":
 * with the tests' VKATTN_POISON=1, a call refused after it took its scratch
 * memory has filled that scratch with NaN; the caller's tensors are as they
 * were.)
 */

typedef enum vkattn_matmul_variant {
    VKATTN_MATMUL_AUTO = 0,   /* COOPMAT for f16 A and B where it is the default (below)
                                 and can plan the call, else TEXEL on CPU devices where
                                 texel buffers work, else TILED */
    VKATTN_MATMUL_TILED,      /* shared-memory tiles, register micro-tiles */
    VKATTN_MATMUL_NAIVE,      /* one output per invocation: a baseline for benchmarks */
    VKATTN_MATMUL_TEXEL,      /* register tiles fed by texel fetches, no shared memory:
                                 the fast kernel on CPU devices (lavapipe); BF16 inputs
                                 read as their bits (no texel format) and widened */
    VKATTN_MATMUL_COOPMAT,    /* f16 A and B on the matrix units (VK_NV_ or VK_KHR_cooperative_matrix),
                                 f32 accumulation. AUTO takes it for f16 where its
                                 current revision passed the GPU check (NVIDIA), elsewhere
                                 only with VKATTN_COOPMAT=1 */
    VKATTN_MATMUL_COOPMAT_EMULATED, /* the same kernel, matrix operations in plain code
                                 (needs shaderFloat16): for tests, never chosen by AUTO */
} vkattn_matmul_variant;

typedef struct vkattn_matmul_desc {
    bool transpose_b;                 /* default false: B is (K, N); true: B is (N, K),
                                         as nn.Linear weights are stored */
    float alpha;                      /* default 0 means 1 */
    vkattn_matmul_variant variant;    /* default AUTO */
} vkattn_matmul_desc;

/* C = alpha * A @ op(B) + bias, batched over leading dimensions.
 * A is (..., M, K) with 0 to 2 leading (batch) dimensions; C is (..., M, N) with
 * A's leading dimensions. B is either 2-D, op(B) (K, N), shared by every batch
 * (weights), or has A's dimension count with the same leading dimensions except
 * that A's innermost batch dimension may be a multiple of B's (grouped-query
 * attention: A batch h uses B batch h / (A_h / B_h)). bias, optional (NULL), is
 * (N). `desc` may be NULL. C must not alias A, B or bias. Statuses:
 * INVALID_ARGUMENT, INVALID_SHAPE, SHAPE_MISMATCH (with the shapes in the
 * message), UNSUPPORTED (I32 C or inputs, TEXEL forced where an input has no
 * texel view), EXCEEDS_DEVICE_LIMIT. */
VKATTN_API vkattn_status vkattn_matmul(vkattn_context *ctx, const vkattn_matmul_desc *desc,
                                       const vkattn_tensor *a, const vkattn_tensor *b,
                                       const vkattn_tensor *bias, vkattn_tensor *c);

typedef enum vkattn_softmax_variant {
    VKATTN_SOFTMAX_AUTO = 0,  /* SUBGROUP where the device has subgroup arithmetic and
                                 whole subgroups (a required size or one size), else SHARED */
    VKATTN_SOFTMAX_SUBGROUP,  /* one row per subgroup, subgroup reductions, no barriers */
    VKATTN_SOFTMAX_SHARED,    /* one row per workgroup, shared-memory reductions */
} vkattn_softmax_variant;

typedef struct vkattn_softmax_desc {
    float scale;                      /* default 0 means 1: softmax(scale * x) */
    bool causal;                      /* mask key j of query row i when j > i + q_offset */
    bool has_q_offset;                /* default false: q_offset = Tk - Tq (bottom-right) */
    int64_t q_offset;                 /* used when has_q_offset; 0 = PyTorch's top-left */
    const vkattn_tensor *kv_len;      /* default NULL; else I32 (N) with N = X's outermost
                                         size (1 for 2-D X): keys j >= kv_len[n] are masked */
    vkattn_softmax_variant variant;   /* default AUTO */
} vkattn_softmax_desc;

/* Y = masked softmax over the last dimension of scale * X. X is (..., Tq, Tk), 2-D to
 * 4-D; row i of each Tq x Tk matrix is a query position. Masked entries and rows
 * with no allowed key give 0. Computed stably (row maximum subtracted), f32.
 * Y has X's shape and may be X itself (in place, any float dtype). `desc` may be
 * NULL. Statuses: INVALID_ARGUMENT (also scale not positive and finite), INVALID_SHAPE,
 * SHAPE_MISMATCH, UNSUPPORTED (I32 X or Y; SUBGROUP forced on
 * a device without subgroup arithmetic). */
VKATTN_API vkattn_status vkattn_softmax(vkattn_context *ctx, const vkattn_softmax_desc *desc,
                                        const vkattn_tensor *x, vkattn_tensor *y);

/* Head transpose: Y[a, c, b, d] = X[a, b, c, d] for 4-D X (A, B, C, D) and Y (A, C, B, D):
 * (B, T, H, D) <-> (B, H, T, D). Y must not alias X. Statuses:
 * INVALID_ARGUMENT, INVALID_SHAPE, SHAPE_MISMATCH, UNSUPPORTED. */
VKATTN_API vkattn_status vkattn_head_transpose(vkattn_context *ctx, const vkattn_tensor *x,
                                               vkattn_tensor *y);

/* ----------------------------------------------------------- attention ---- */

typedef enum vkattn_layout {
    VKATTN_LAYOUT_BHSD = 0,  /* (B, H, T, D): heads outside the sequence (the default) */
    VKATTN_LAYOUT_BSHD,      /* (B, T, H, D): a (B, T, H*D) projection viewed per head */
} vkattn_layout;

typedef enum vkattn_attention_path {
    VKATTN_PATH_AUTO = 0,    /* the fused kernel wherever it applies, else unfused */
    VKATTN_PATH_FUSED,       /* flash attention: one pass over K/V, no Tq x Tk buffer */
    VKATTN_PATH_UNFUSED,     /* scores matmul, masked softmax, P @ V matmul (+ transposes):
                                materialises Tq x Tk scores, chunked to the device's limits */
} vkattn_attention_path;

typedef enum vkattn_fused_variant {
    VKATTN_FUSED_AUTO = 0,   /* chosen from the device's type and limits */
    VKATTN_FUSED_ROWS,       /* rows per invocation, K/V read through texel fetches, no
                                shared memory or barriers: for CPU devices (lavapipe).
                                BF16 Q, K or V are read as their bits and widened */
    VKATTN_FUSED_TILED,      /* K/V tiles staged in shared memory by a workgroup: for GPUs */
    VKATTN_FUSED_COOPMAT,    /* Q K^T and P V on the matrix units (VK_NV_ or VK_KHR_cooperative_matrix,
                                f16 or bf16 Q, K, V, f32 accumulation; bf16 is converted
                                to f16 exactly as it is staged, each Q row, key and V tile
                                scaled by a power of 2), every variant, head sizes up to
                                256. AUTO takes it where this revision of it passed the
                                GPU check for those inputs (NVIDIA, f16 and bf16),
                                elsewhere only with VKATTN_COOPMAT=1 */
    VKATTN_FUSED_COOPMAT_EMULATED, /* the same kernel with the matrix operations done in
                                plain code (needs shaderFloat16): for tests on devices
                                without matrix units, never chosen by AUTO */
    VKATTN_FUSED_DECODE,     /* split keys, a subgroup per key range, a lane per key
                                (FlashDecoding): for GPUs decoding, up to 16 query rows
                                per kv head (GQA group x Tq), head sizes up to 256 */
    VKATTN_FUSED_COOPMAT_WORKGROUP, /* Q K^T and P V each one product spanning the
                                workgroup (VK_NV_cooperative_matrix2's workgroup scope
                                through VK_KHR_cooperative_matrix), f16 or bf16 Q, K,
                                V, every variant, head sizes up to 256. Not yet run on
                                a GPU: AUTO takes it only with
                                VKATTN_COOPMAT_WORKGROUP=1 (with VKATTN_COOPMAT_KHR=1,
                                on a device vkattn creates) */
    VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED, /* the same kernel with its matrices in shared
                                memory (needs shaderFloat16): for tests, never chosen
                                by AUTO */
} vkattn_fused_variant;

/* The variant's name as the CLI and the bench print it ("auto", "rows",
 * "tiled", "coopmat", "coopmat_emulated", "decode", "coopmat_workgroup",
 * "coopmat_workgroup_emulated"); "?" for a value that is
 * not a variant. */
VKATTN_API const char *vkattn_fused_variant_name(vkattn_fused_variant variant);

/* The largest |q_offset| an attention call takes (2^28): positions and window
 * bounds stay exact in the kernels' 32-bit arithmetic. */
#define VKATTN_MAX_Q_OFFSET ((int64_t)1 << 28)

typedef struct vkattn_attention_desc {
    vkattn_layout layout;           /* default BHSD; Q, K, V and O all use it */
    float scale;                    /* default 0 means 1/sqrt(D); else positive and finite */
    bool causal;                    /* default false; key j masked for query row i when
                                       j > i + q_offset */
    bool has_q_offset;              /* default false: q_offset = Tk - Tq (bottom-right, as
                                       FlashAttention-2 and KV-cache decoding align) */
    int64_t q_offset;               /* used when has_q_offset; 0 = PyTorch's top-left;
                                       |q_offset| <= VKATTN_MAX_Q_OFFSET, used as given
                                       (ALiBi and windows see pos = i + q_offset even
                                       where causality allows every key or none) */
    const vkattn_tensor *kv_len;    /* default NULL; else I32 (B): keys j >= kv_len[b] of
                                       batch entry b are masked (padding) */
    vkattn_attention_path path;     /* default AUTO */
    vkattn_fused_variant fused_variant; /* default AUTO; a forced variant is for tests */
    uint32_t kv_splits;             /* default 0: chosen; 1: never split the keys; n > 1:
                                       split them n ways (flash-decoding), fused path only.
                                       On CPU devices (lavapipe) a kernel whose loops the
                                       driver would cut short splits more (see
                                       CPU_LOOP_BUDGET in src/ops/attention_fused.h) */

    /* Variants LLM runtimes use (DESIGN.md section 1); zero/NULL = off, every
     * one composable with the others and with everything above. pos = i + q_offset
     * is the key position of query row i. */
    bool has_window;                /* default false; true: sliding window (FlashAttention's
                                       window_size): key j is allowed only if
                                       pos - window_left <= j <= pos + window_right */
    int32_t window_left, window_right; /* with has_window: >= 0, or -1 = unbounded (other
                                          negatives: VKATTN_ERROR_INVALID_ARGUMENT) */
    float softcap;                  /* default 0: off; else positive and finite: each score
                                       s becomes softcap * tanh(s / softcap) (Gemma 2) */
    const vkattn_tensor *sinks;     /* default NULL; else F32 (H): one raw logit per query
                                       head (not scaled) that joins the softmax denominator
                                       with no value row (gpt-oss) */
    const vkattn_tensor *alibi_slopes; /* default NULL; else F32 (H): s += slope[h] * (j - pos) */
    const vkattn_tensor *mask;      /* default NULL; else F32, F16 or BF16 added to the scores
                                       (after softcap and ALiBi); its shape broadcasts like a
                                       numpy array to (B, H, Tq, Tk): 2 to 4 dimensions aligned
                                       to the right, each equal or 1, e.g. (Tq, Tk),
                                       (B, 1, Tq, Tk), (B, H, Tq, Tk), (H, Tq, Tk), a key
                                       padding mask (B, 1, 1, Tk) or one value per query row
                                       (B, 1, Tq, 1); -inf = key not allowed.
                                       With packed sequences Tq and Tk are the longest ones;
                                       with a paged cache Tk is max_blocks * block_size */
    const vkattn_tensor *cu_seqlens_q; /* default NULL; else I32 (B + 1) offsets: packed
                                       variable-length queries, Q (total_q, H, D) and O
                                       (total_q, H, Dv); sequence b is rows cu_q[b]..cu_q[b+1]-1.
                                       Rows of O in no sequence (before cu_q[0], from
                                       cu_q[B] on) are set to zero. The layout field is
                                       then ignored */
    const vkattn_tensor *cu_seqlens_k; /* likewise for keys: K (total_k, Hkv, D), V (total_k,
                                       Hkv, Dv); required with cu_seqlens_q unless the keys
                                       are paged. q_offset defaults per sequence to
                                       Tk_b - Tq_b. Fused path only */
    const vkattn_tensor *block_table; /* default NULL; else I32 (B, max_blocks): paged KV
                                       cache. K is (num_blocks, block_size, Hkv, D), V
                                       (num_blocks, block_size, Hkv, Dv), block_size 1..256;
                                       key j of entry b is row j % block_size of block
                                       block_table[b][j / block_size]; kv_len is required and
                                       is each entry's key count (Tk_b), so q_offset defaults
                                       per entry to kv_len[b] - Tq; entries past the blocks an
                                       entry uses are never read (padding such as -1 is
                                       fine). Fused path only */
} vkattn_attention_desc;

/* O = softmax(scale * Q K^T, masked) V per batch entry and query head; DESIGN.md
 * section 1 has the exact definition. With layout BHSD, Q is (B, H, Tq, D), K is
 * (B, Hkv, Tk, D), V is (B, Hkv, Tk, Dv) and O is (B, H, Tq, Dv); with BSHD the
 * middle two dimensions of each are swapped. H must be a multiple of Hkv
 * (grouped-query attention: query head h reads kv head h / (H / Hkv); Hkv == 1
 * is MQA). Q, K, V may be F32, F16 or BF16, mixed (accumulation is F32); O (F32, F16 or
 * BF16) must not alias an input. A query row with no allowed key gives zeros. One
 * whose every allowed score is -inf gives each key a weight of 0, as PyTorch's safe
 * softmax does, with no sum to divide by, sink or no sink: zeros, but NaN in a column
 * where an allowed key's V is not finite (0 * Inf, as PyTorch's P V). With a mask,
 * a score that is -inf once the mask is added counts as not allowed, whatever made
 * it -inf (no path can tell the mask's -inf from the data's), so a NaN in its V row
 * never reaches the row; without a mask a -inf score is an allowed key of weight 0,
 * and a NaN in its V row does (0 * NaN, as IEEE arithmetic has it). The GPU paths
 * compute scores in f32 with scale * log2(e) applied first: a scaled score past
 * about 2.3e38 (f32's largest over log2 e) overflows there, where the CPU
 * reference, in double, stays finite. Scratch
 * memory the call needs is kept in the context and reused by later calls of the
 * same or smaller size. `desc` may be NULL.
 * kv_len, cu_seqlens and block tables are checked before anything is recorded,
 * against the values last uploaded to them (vkattn keeps a host copy of every
 * I32 tensor's last upload, so checking never waits for the device): kv_len[b]
 * must lie in 0..(that entry's key count), offsets must start at 0 or more,
 * never decrease and end within the packed tensor, and every block an entry uses
 * (below its kv_len) must be in the cache. Values vkattn has not seen (an I32
 * tensor the application wrote with its own commands) are not checked: the grid
 * is then sized for the packed totals, and the kernels clamp every offset, length
 * and block index into its tensor, so nothing outside a tensor is ever read.
 * Every variant runs on the fused path; the unfused one takes all but packed
 * and paged sequences (it refuses those; AUTO takes the fused path for them). Statuses: INVALID_ARGUMENT (NULL,
 * aliasing, bad enum, scale not positive and finite, q_offset out of range, a
 * window side below -1, softcap not positive and finite, the sequence values
 * above, a missing kv_len with a block table),
 * INVALID_SHAPE (not 4-D), SHAPE_MISMATCH (with both shapes in the message;
 * also a kv_len, sinks, slopes, sequence or block table of the wrong dtype,
 * which each states with its shape), UNSUPPORTED (Q, K, V, O or the mask of a
 * dtype it cannot be; FUSED or a fused variant forced where it cannot run),
 * EXCEEDS_DEVICE_LIMIT, OUT_OF_DEVICE_MEMORY, OUT_OF_HOST_MEMORY. */
VKATTN_API vkattn_status vkattn_attention(vkattn_context *ctx, const vkattn_attention_desc *desc,
                                          const vkattn_tensor *q, const vkattn_tensor *k,
                                          const vkattn_tensor *v, vkattn_tensor *o);

/* What vkattn_attention would run for these arguments on this context, without
 * recording anything: its path (FUSED or UNFUSED; AUTO on the CPU backend,
 * which has one), and for the fused path the variant and the number of key
 * splits, and what the softmax weights are rounded to before P V. For
 * benchmarks and logs. Same arguments and statuses as vkattn_attention, and
 * `out` (not NULL). */
typedef struct vkattn_attention_choice {
    vkattn_attention_path path;
    vkattn_fused_variant fused_variant; /* when path is FUSED */
    uint32_t kv_splits;                 /* when path is FUSED: >= 1 */
    /* F32: kept (the unfused path and the f32 kernels); F16: rounded to f16, half
     * an ulp (2^-11) of error relative to sum_j P_j |V_j| (the coopmat variants);
     * BF16: to bf16, 2^-8 (the coopmat kernel on bf16 matrices, coopmat.bf16=2). */
    vkattn_dtype weights_dtype;
} vkattn_attention_choice;

VKATTN_API vkattn_status vkattn_attention_choose(vkattn_context *ctx,
                                                 const vkattn_attention_desc *desc,
                                                 const vkattn_tensor *q, const vkattn_tensor *k,
                                                 const vkattn_tensor *v, const vkattn_tensor *o,
                                                 vkattn_attention_choice *out);

typedef struct vkattn_mha_desc {
    int32_t heads;                  /* H, required (>= 1) */
    bool causal;                    /* default false */
    float scale;                    /* default 0 means 1/sqrt(Dh) */
    vkattn_attention_path path;     /* default AUTO, as for vkattn_attention */
    /* The attention variants a layer uses, as in vkattn_attention_desc (zero/NULL = off) */
    bool has_window;
    int32_t window_left, window_right;
    float softcap;
    const vkattn_tensor *sinks;     /* F32 (H) */
    const vkattn_tensor *alibi_slopes; /* F32 (H) */
    const vkattn_tensor *mask;      /* additive, F32/F16/BF16, as vkattn_attention_desc's
                                       with Tq = Tk = T: (T, T), (B, 1, T, T), (B, H, T, T),
                                       (B, 1, 1, T), ... */
    /* The type the layer keeps q, k, v and the heads' output in between its
     * steps: F32 (the default, 0) or F16/BF16 (anything else:
     * VKATTN_ERROR_INVALID_ARGUMENT). A 16-bit type rounds each projection's
     * result and attention's output to it (to nearest even, from the f32
     * accumulators), as a PyTorch module in that dtype does, so that the
     * attention step reads 16-bit q, k and v: the fused path's 16-bit
     * kernels, the coopmat one where AUTO takes it (the unfused path widens
     * them to f32 again). The output projection then reads a 16-bit o, and
     * takes the coopmat matmul where that is AUTO's choice for f16 and W_out
     * is f16 too. Each step still accumulates in f32. */
    vkattn_dtype compute_dtype;
} vkattn_mha_desc;

/* The multi-head attention layer (the seeds' MultiHeadCausalSelfAttention, with
 * PyTorch nn.Linear weight layout, dropout the identity):
 *     qkv = X @ W_qkv^T + b_qkv;  q, k, v = split(qkv, H*Dh, dim=-1)
 *     o = attention(q, k, v) per head (BSHD view of each);  Y = o @ W_out^T + b_out
 * X is (B, T, C); W_qkv is (3*H*Dh, C), which fixes Dh; b_qkv (3*H*Dh) is
 * optional (NULL); W_out is (C_out, H*Dh) and b_out (C_out) optional; Y is
 * (B, T, C_out). C, H and Dh are independent. Inputs may be F32, F16 or BF16.
 * Intermediates live in context scratch memory. Statuses as vkattn_attention. */
VKATTN_API vkattn_status vkattn_mha(vkattn_context *ctx, const vkattn_mha_desc *desc,
                                    const vkattn_tensor *x, const vkattn_tensor *w_qkv,
                                    const vkattn_tensor *b_qkv, const vkattn_tensor *w_out,
                                    const vkattn_tensor *b_out, vkattn_tensor *y);

/* What vkattn_mha's attention step would run for these arguments on this
 * context, as vkattn_attention_choose says it for vkattn_attention (AUTO on
 * the CPU backend). Runs no projection or attention. The choice depends on the
 * layer's scratch tensors (q, k, v and the heads' output), so on a Vulkan
 * context it takes them as vkattn_mha would: it may allocate them (vkattn_mha
 * then reuses them), and between vkattn_recording_begin and _end they stay
 * with that recording, as vkattn_mha's do. Same arguments as vkattn_mha, and
 * `out` (not NULL); the same statuses for the arguments (INVALID_ARGUMENT,
 * INVALID_SHAPE, SHAPE_MISMATCH, UNSUPPORTED for a FUSED path that cannot
 * run), and OUT_OF_DEVICE_MEMORY where the scratch cannot be had. */
VKATTN_API vkattn_status vkattn_mha_choose(vkattn_context *ctx, const vkattn_mha_desc *desc,
                                           const vkattn_tensor *x, const vkattn_tensor *w_qkv,
                                           const vkattn_tensor *b_qkv,
                                           const vkattn_tensor *w_out,
                                           const vkattn_tensor *b_out, const vkattn_tensor *y,
                                           vkattn_attention_choice *out);

#ifdef __cplusplus
}
#endif
#endif /* VKATTN_H */
