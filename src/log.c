/* The log callback and the per-context last-error message. */
#include "internal.h"

#include <stdio.h>

static void vlog_to(vkattn_log_fn fn, void *user, vkattn_log_level level,
                    vkattn_log_source source, const char *fmt, va_list args)
{
    if (!fn)
        return;
    char message[1024];
    vsnprintf(message, sizeof message, fmt, args);
    fn(user, level, source, message);
}

void log_to(vkattn_log_fn fn, void *user, vkattn_log_level level, vkattn_log_source source,
            const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vlog_to(fn, user, level, source, fmt, args);
    va_end(args);
}

void ctx_log(const vkattn_context *ctx, vkattn_log_level level, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vlog_to(ctx->log_fn, ctx->log_user_data, level, VKATTN_LOG_SOURCE_LIBRARY, fmt, args);
    va_end(args);
}

vkattn_status ctx_fail(vkattn_context *ctx, vkattn_status status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(ctx->last_error, sizeof ctx->last_error, fmt, args);
    va_end(args);
    ctx_log(ctx, VKATTN_LOG_DEBUG, "error: %s", ctx->last_error);
    return status;
}

const char *vk_result_string(VkResult result)
{
    switch (result) {
#define CASE_(r) \
    case r:      \
        return #r;
        CASE_(VK_SUCCESS)
        CASE_(VK_NOT_READY)
        CASE_(VK_TIMEOUT)
        CASE_(VK_INCOMPLETE)
        CASE_(VK_ERROR_OUT_OF_HOST_MEMORY)
        CASE_(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        CASE_(VK_ERROR_INITIALIZATION_FAILED)
        CASE_(VK_ERROR_DEVICE_LOST)
        CASE_(VK_ERROR_MEMORY_MAP_FAILED)
        CASE_(VK_ERROR_LAYER_NOT_PRESENT)
        CASE_(VK_ERROR_EXTENSION_NOT_PRESENT)
        CASE_(VK_ERROR_FEATURE_NOT_PRESENT)
        CASE_(VK_ERROR_INCOMPATIBLE_DRIVER)
        CASE_(VK_ERROR_TOO_MANY_OBJECTS)
        CASE_(VK_ERROR_FRAGMENTED_POOL)
        CASE_(VK_ERROR_OUT_OF_POOL_MEMORY)
        CASE_(VK_ERROR_INVALID_SHADER_NV)
#undef CASE_
    default:
        return "VkResult (other)";
    }
}

vkattn_status vk_status_from_result(VkResult result)
{
    switch (result) {
    case VK_SUCCESS: return VKATTN_OK;
    case VK_ERROR_OUT_OF_HOST_MEMORY: return VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return VKATTN_ERROR_OUT_OF_DEVICE_MEMORY;
    case VK_ERROR_DEVICE_LOST: return VKATTN_ERROR_DEVICE_LOST;
    default: return VKATTN_ERROR_VULKAN;
    }
}

vkattn_status ctx_fail_vk(vkattn_context *ctx, VkResult result, const char *what)
{
    if (result == VK_ERROR_DEVICE_LOST)
        ctx->vk.device_lost = true;
    return ctx_fail(ctx, vk_status_from_result(result), "%s: %s (%d)", what,
                    vk_result_string(result), (int)result);
}
