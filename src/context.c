/* Context create/destroy, backend choice, info, last error, synchronize. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static void fill_cpu_info(vkattn_device_info *info)
{
    memset(info, 0, sizeof *info);
    info->backend = VKATTN_BACKEND_CPU;
    info->type = VKATTN_DEVICE_TYPE_CPU;
    strcpy(info->name, "vkattn CPU reference");
    strcpy(info->vendor, "vkattn");
    strcpy(info->driver_name, "cpu-reference");
    strcpy(info->driver_version, VKATTN_VERSION_STRING_BUILT);
    info->max_storage_buffer_range = UINT64_MAX;
    info->host_visible_device_memory = true;
}

/* VKATTN_SUBGROUP_ORDER=reversed|mixed (the tests): the order in which each
 * workgroup's subgroups take their roles (shaders/invocation_order.glsl).
 * Only on a CPU device: lavapipe runs a workgroup's subgroups in one fixed
 * order, which this turns round; a GPU runs them in any order, and need not
 * number its invocations by subgroup and lane, which the reversal assumes. */
static subgroup_order subgroup_order_wanted(vkattn_context *ctx)
{
    const char *v = getenv("VKATTN_SUBGROUP_ORDER");
    if (!v || ctx->info.type != VKATTN_DEVICE_TYPE_CPU)
        return SUBGROUP_ORDER_NATURAL;
    if (strcmp(v, "reversed") == 0)
        return SUBGROUP_ORDER_REVERSED;
    if (strcmp(v, "mixed") == 0)
        return SUBGROUP_ORDER_MIXED;
    if (strcmp(v, "natural") != 0)
        ctx_log(ctx, VKATTN_LOG_WARNING,
                "VKATTN_SUBGROUP_ORDER=%s: not natural, reversed or mixed; natural", v);
    return SUBGROUP_ORDER_NATURAL;
}

static vkattn_status vulkan_init(vkattn_context *ctx, const vkattn_context_desc *desc)
{
    vkattn_status s = desc->adopt ? vk_device_adopt(ctx, desc->adopt)
                                  : vk_device_create_owned(ctx, desc);
    if (s != VKATTN_OK)
        return s;
    if ((s = vk_pipelines_init(ctx, desc)) != VKATTN_OK || (s = vk_cmd_init(ctx)) != VKATTN_OK)
        return s;
    profile_init(ctx); /* a diagnostic: without it the context just has no times */
    tuning_init(ctx, desc);
    return VKATTN_OK;
}

static void vulkan_release(vkattn_context *ctx)
{
    profile_destroy(ctx);
    vk_cmd_destroy(ctx);
    if (ctx->vk.device)
        memory_pool_destroy(ctx); /* after every buffer in it */
    vk_pipelines_destroy(ctx);
    vk_device_destroy(ctx);
    memset(&ctx->vk, 0, sizeof ctx->vk);
}

vkattn_status vkattn_context_create(const vkattn_context_desc *desc, vkattn_context **out)
{
    static const vkattn_context_desc defaults;
    if (!out)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    if (!desc)
        desc = &defaults;
    if ((unsigned)desc->backend > VKATTN_BACKEND_CPU ||
        (unsigned)desc->validation > VKATTN_VALIDATION_GPU_ASSISTED ||
        (unsigned)desc->memory > VKATTN_MEMORY_DEVICE) {
        log_to(desc->log_fn, desc->log_user_data, VKATTN_LOG_ERROR, VKATTN_LOG_SOURCE_LIBRARY,
               "context: backend, validation or memory is not a valid enum value");
        return VKATTN_ERROR_INVALID_ARGUMENT;
    }

    vkattn_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    ctx->log_fn = desc->log_fn;
    ctx->log_user_data = desc->log_user_data;
    ctx->vk.memory_mode = desc->memory;
    ctx->poison = env_is_one("VKATTN_POISON");
    ctx->profile.wanted = profile_wanted(desc);

    vkattn_backend wanted = desc->adopt ? VKATTN_BACKEND_VULKAN : desc->backend;
    if (wanted != VKATTN_BACKEND_CPU) {
        vkattn_status s = vulkan_init(ctx, desc);
        if (s == VKATTN_OK) {
            ctx->backend = VKATTN_BACKEND_VULKAN;
            ctx->info.backend = VKATTN_BACKEND_VULKAN;
            ctx->subgroup_order = subgroup_order_wanted(ctx);
            ctx_log(ctx, VKATTN_LOG_INFO, "running on %s (%s %s)", ctx->info.name,
                    ctx->info.driver_name, ctx->info.driver_info);
            if (ctx->vk.caps.coopmat2) {
                char coopmat2[512];
                device_caps_coopmat2_describe(&ctx->vk.caps, coopmat2, sizeof coopmat2);
                ctx_log(ctx, VKATTN_LOG_INFO, "cooperative matrix 2: %s", coopmat2);
            }
            if (ctx->vk.caps.bf16_listed) {
                char bf16[256];
                device_caps_bf16_describe(&ctx->vk.caps, bf16, sizeof bf16);
                ctx_log(ctx, VKATTN_LOG_INFO, "bf16 matrices: %s", bf16);
            }
            coopmat_layout_report(ctx);
            coopmat_peak_report(ctx);
            coopmat_register_layout_init(ctx);
            *out = ctx;
            return VKATTN_OK;
        }
        vulkan_release(ctx);
        /* A device the application named must be there: only "any device" falls
         * back to the CPU. */
        bool named = (desc->device && *desc->device) || getenv("VKATTN_DEVICE");
        if (wanted == VKATTN_BACKEND_VULKAN || (named && s == VKATTN_ERROR_NO_DEVICE)) {
            log_to(desc->log_fn, desc->log_user_data, VKATTN_LOG_ERROR,
                   VKATTN_LOG_SOURCE_LIBRARY, "context: %s", ctx->last_error);
            free(ctx);
            return s;
        }
        ctx_log(ctx, VKATTN_LOG_WARNING, "no usable Vulkan device (%s); "
                "falling back to the CPU reference backend", ctx->last_error);
        ctx->last_error[0] = '\0';
    }
    ctx->backend = VKATTN_BACKEND_CPU;
    fill_cpu_info(&ctx->info);
    *out = ctx;
    return VKATTN_OK;
}

void vkattn_context_destroy(vkattn_context *ctx)
{
    if (!ctx)
        return;
    if (ctx->backend == VKATTN_BACKEND_VULKAN)
        recording_release_all(ctx);
    scratch_release_all(ctx);
    if (ctx->live_tensors)
        ctx_log(ctx, VKATTN_LOG_WARNING,
                "context destroyed with %u tensors still alive; they are now invalid",
                ctx->live_tensors);
    if (ctx->backend == VKATTN_BACKEND_VULKAN) {
        if (ctx->vk.recording && !ctx->vk.device_lost)
            vk_cmd_submit_and_wait(ctx);
        vulkan_release(ctx);
    }
    free(ctx);
}

vkattn_status vkattn_context_info(const vkattn_context *ctx, vkattn_device_info *info)
{
    if (!ctx || !info)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    *info = ctx->info;
    return VKATTN_OK;
}

const char *vkattn_last_error(const vkattn_context *ctx)
{
    return ctx ? ctx->last_error : "no context";
}

vkattn_status vkattn_synchronize(vkattn_context *ctx)
{
    if (!ctx)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    if (ctx->backend != VKATTN_BACKEND_VULKAN)
        return VKATTN_OK;
    vkattn_status s = check_not_recording(ctx, "synchronize");
    return s != VKATTN_OK ? s : vk_cmd_submit_and_wait(ctx);
}
