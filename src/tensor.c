/* Tensors: shape and dtype checks, creation, upload and download with conversion. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static vkattn_status validate_desc(vkattn_context *ctx, const vkattn_tensor_desc *d,
                                   size_t *count_out, size_t *bytes_out)
{
    if ((unsigned)d->dtype > VKATTN_DTYPE_BF16)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "tensor_create: dtype %d is not valid",
                        (int)d->dtype);
    if (d->ndim < 1 || d->ndim > VKATTN_MAX_DIMS)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_SHAPE,
                        "tensor_create: ndim is %d, must be 1 to %d", (int)d->ndim,
                        VKATTN_MAX_DIMS);
    uint64_t count = 1;
    for (int32_t i = 0; i < d->ndim; i++) {
        if (d->shape[i] < 1)
            return ctx_fail(ctx, VKATTN_ERROR_INVALID_SHAPE,
                            "tensor_create: dimension %d is %lld, must be >= 1", (int)i,
                            (long long)d->shape[i]);
        if ((uint64_t)d->shape[i] > UINT64_MAX / count)
            return ctx_fail(ctx, VKATTN_ERROR_SIZE_OVERFLOW,
                            "tensor_create: element count overflows 64 bits at dimension %d",
                            (int)i);
        count *= (uint64_t)d->shape[i];
    }
    uint64_t esize = dtype_size(d->dtype);
    if (count > (UINT64_MAX - 16) / esize || count * esize > SIZE_MAX - 16)
        return ctx_fail(ctx, VKATTN_ERROR_SIZE_OVERFLOW,
                        "tensor_create: %llu elements of %s overflow the byte size",
                        (unsigned long long)count, dtype_name(d->dtype));
    *count_out = (size_t)count;
    *bytes_out = (size_t)(count * esize);
    return VKATTN_OK;
}

static vkattn_status vk_tensor_alloc(vkattn_tensor *t)
{
    vkattn_context *ctx = t->ctx;
    /* Kernels read f16 tensors as 32-bit words and the vector paths read 16 bytes. */
    t->buffer_size = (t->bytes + 15) & ~(VkDeviceSize)15;
    uint64_t limit = ctx->info.max_storage_buffer_range;
    if (ctx->vk.max_allocation_size && ctx->vk.max_allocation_size < limit)
        limit = ctx->vk.max_allocation_size;
    if (t->buffer_size > limit) {
        char shape[96];
        return ctx_fail(ctx, VKATTN_ERROR_EXCEEDS_DEVICE_LIMIT,
                        "tensor_create: %s %s tensor is %llu bytes, over this device's limit "
                        "of %llu bytes (maxStorageBufferRange / maxMemoryAllocationSize)",
                        shape_string(t, shape, sizeof shape), dtype_name(t->dtype),
                        (unsigned long long)t->buffer_size, (unsigned long long)limit);
    }
    vkattn_status s = vk_buffer_create(ctx, t->buffer_size, MEMORY_DEVICE, &t->buffer,
                                       &t->memory, &t->map);
    /* No texel format reads bf16 as a float (an R16_UINT view would not feed the
     * float samplers): bf16 tensors have no float views, and kernels read them
     * from the storage binding, or from views of their bits where a kernel
     * widens them itself. */
    if (s == VKATTN_OK && t->dtype == VKATTN_DTYPE_BF16) {
        t->bits = vk_texel_view(ctx, t->buffer, VK_FORMAT_R16_UINT, t->count);
        if (t->count % 4 == 0)
            t->bits4 = vk_texel_view(ctx, t->buffer, VK_FORMAT_R16G16B16A16_UINT, t->count / 4);
    }
    if (s == VKATTN_OK && t->dtype != VKATTN_DTYPE_I32 && t->dtype != VKATTN_DTYPE_BF16) {
        bool f32 = t->dtype == VKATTN_DTYPE_F32;
        t->texels = vk_texel_view(ctx, t->buffer, f32 ? VK_FORMAT_R32_SFLOAT : VK_FORMAT_R16_SFLOAT,
                                  t->count);
        if (t->count % 4 == 0)
            t->texels4 = vk_texel_view(ctx, t->buffer,
                                       f32 ? VK_FORMAT_R32G32B32A32_SFLOAT
                                           : VK_FORMAT_R16G16B16A16_SFLOAT,
                                       t->count / 4);
    }
    return s;
}

vkattn_status vkattn_tensor_create(vkattn_context *ctx, const vkattn_tensor_desc *desc,
                                   vkattn_tensor **out)
{
    if (out)
        *out = NULL;
    if (!ctx)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    if (!desc || !out)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "tensor_create: desc or out is NULL");
    size_t count = 0, bytes = 0;
    vkattn_status s = validate_desc(ctx, desc, &count, &bytes);
    if (s != VKATTN_OK)
        return s;

    vkattn_tensor *t = calloc(1, sizeof *t);
    if (!t)
        return ctx_fail(ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "tensor_create: out of host memory");
    t->ctx = ctx;
    t->dtype = desc->dtype;
    t->ndim = desc->ndim;
    memcpy(t->shape, desc->shape, sizeof t->shape);
    for (int32_t i = t->ndim; i < VKATTN_MAX_DIMS; i++)
        t->shape[i] = 1;
    t->count = count;
    t->bytes = bytes;
    s = ctx->backend == VKATTN_BACKEND_VULKAN ? vk_tensor_alloc(t) : cpu_tensor_alloc(t);
    if (s != VKATTN_OK) {
        free(t);
        return s;
    }
    ctx->live_tensors++;
    *out = t;
    return VKATTN_OK;
}

void vkattn_tensor_destroy(vkattn_tensor *t)
{
    if (!t)
        return;
    vkattn_context *ctx = t->ctx;
    if (ctx->backend == VKATTN_BACKEND_VULKAN) {
        /* Recorded work may still reference the buffer. */
        if (ctx->vk.recording && !ctx->vk.device_lost)
            vk_cmd_submit_and_wait(ctx);
        if (t->texels)
            ctx->vk.vkd.DestroyBufferView(ctx->vk.device, t->texels, NULL);
        if (t->texels4)
            ctx->vk.vkd.DestroyBufferView(ctx->vk.device, t->texels4, NULL);
        if (t->bits)
            ctx->vk.vkd.DestroyBufferView(ctx->vk.device, t->bits, NULL);
        if (t->bits4)
            ctx->vk.vkd.DestroyBufferView(ctx->vk.device, t->bits4, NULL);
        vk_buffer_destroy(ctx, t->buffer, &t->memory);
    }
    free(t->host);
    free(t->i32_shadow);
    ctx->live_tensors--;
    free(t);
}

vkattn_tensor_desc vkattn_tensor_get_desc(const vkattn_tensor *t)
{
    vkattn_tensor_desc d = {0};
    if (t) {
        d.dtype = t->dtype;
        d.ndim = t->ndim;
        memcpy(d.shape, t->shape, sizeof d.shape);
        for (int32_t i = t->ndim; i < VKATTN_MAX_DIMS; i++)
            d.shape[i] = 0;
    }
    return d;
}

/* Copies `count` elements between host layouts, converting between f32, f16 and
 * bf16: each element is widened to f32 (exact from f16 and bf16) and narrowed
 * to the target with round to nearest even, so f16 <-> bf16 rounds once. */
void host_convert(void *dst, vkattn_dtype dst_type, const void *src, vkattn_dtype src_type,
                  size_t count)
{
    if (dst_type == src_type) {
        memcpy(dst, src, count * dtype_size(dst_type));
        return;
    }
    for (size_t i = 0; i < count; i++) {
        float v = src_type == VKATTN_DTYPE_F32   ? ((const float *)src)[i]
                  : src_type == VKATTN_DTYPE_F16 ? half_to_float(((const uint16_t *)src)[i])
                                                 : bf16_to_float(((const uint16_t *)src)[i]);
        if (dst_type == VKATTN_DTYPE_F32)
            ((float *)dst)[i] = v;
        else if (dst_type == VKATTN_DTYPE_F16)
            ((uint16_t *)dst)[i] = float_to_half(v);
        else
            ((uint16_t *)dst)[i] = float_to_bf16(v);
    }
}

static vkattn_status check_transfer(vkattn_tensor *t, const void *host, vkattn_dtype host_type,
                                    const char *op)
{
    if (!t)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    vkattn_context *ctx = t->ctx;
    if (!host)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "%s: host pointer is NULL", op);
    if ((unsigned)host_type > VKATTN_DTYPE_BF16)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "%s: dtype %d is not valid", op,
                        (int)host_type);
    if ((host_type == VKATTN_DTYPE_I32) != (t->dtype == VKATTN_DTYPE_I32))
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED,
                        "%s: cannot convert between a %s tensor and %s host data", op,
                        dtype_name(t->dtype), dtype_name(host_type));
    if (ctx->backend == VKATTN_BACKEND_VULKAN && ctx->vk.device_lost)
        return ctx_fail(ctx, VKATTN_ERROR_DEVICE_LOST, "%s: the device was lost", op);
    return check_not_recording(ctx, op);
}

/* Keeps the values of an uploaded I32 tensor on the host (see i32_shadow); on
 * failure or for other dtypes there is none. */
static void remember_i32(vkattn_tensor *t, const void *src, vkattn_status upload)
{
    if (t->dtype != VKATTN_DTYPE_I32 || upload != VKATTN_OK || t->app_writes) {
        free(t->i32_shadow);
        t->i32_shadow = NULL;
        return;
    }
    if (!t->i32_shadow)
        t->i32_shadow = malloc(t->bytes);
    if (t->i32_shadow)
        memcpy(t->i32_shadow, src, t->bytes);
}

static vkattn_status vk_upload(vkattn_tensor *t, const void *src, vkattn_dtype src_dtype);

vkattn_status vkattn_tensor_upload(vkattn_tensor *t, const void *src, vkattn_dtype src_dtype)
{
    vkattn_status s = check_transfer(t, src, src_dtype, "tensor_upload");
    if (s != VKATTN_OK)
        return s;
    if (t->ctx->backend != VKATTN_BACKEND_VULKAN) {
        host_convert(t->host, t->dtype, src, src_dtype, t->count);
        return VKATTN_OK;
    }
    s = vk_upload(t, src, src_dtype);
    remember_i32(t, src, s);
    return s;
}

static vkattn_status vk_upload(vkattn_tensor *t, const void *src, vkattn_dtype src_dtype)
{
    vkattn_status s;
    vkattn_context *ctx = t->ctx;
    if (t->map.host) {
        /* Recorded work may still read or write this memory: finish it first. */
        if (ctx->vk.recording && (s = vk_cmd_submit_and_wait(ctx)) != VKATTN_OK)
            return s;
        host_convert(t->map.host, t->dtype, src, src_dtype, t->count);
        return vk_mapping_flush(ctx, &t->memory, &t->map, t->bytes);
    }
    /* Device-local memory: fill a staging buffer, and copy it in the command
     * stream, after the work recorded so far and before what follows; then
     * submit and wait, as the mapped path does. A copy left queued would be
     * lost, with the upload long reported done, if a later call's submission
     * failed (seen on an H100: Q, K and V dropped with an op's work). Inside an
     * application's recording the copy runs when the application submits. */
    VkBuffer staging;
    vk_allocation memory;
    vk_mapping map;
    if ((s = vk_buffer_create(ctx, t->buffer_size, MEMORY_UPLOAD, &staging, &memory, &map)))
        return s;
    host_convert(map.host, t->dtype, src, src_dtype, t->count);
    if ((s = vk_mapping_flush(ctx, &memory, &map, t->bytes)) != VKATTN_OK ||
        (s = vk_cmd_defer_free(ctx, staging, memory)) != VKATTN_OK) {
        vk_buffer_destroy(ctx, staging, &memory);
        return s;
    }
    /* From here the stream owns the staging buffer, also if the copy fails. */
    if ((s = vk_cmd_copy(ctx, staging, t->buffer, t->buffer_size)) != VKATTN_OK)
        return s;
    return ctx->vk.external ? VKATTN_OK : vk_cmd_submit_and_wait(ctx);
}

vkattn_status vkattn_tensor_download(vkattn_tensor *t, void *dst, vkattn_dtype dst_dtype)
{
    vkattn_status s = check_transfer(t, dst, dst_dtype, "tensor_download");
    if (s != VKATTN_OK)
        return s;
    vkattn_context *ctx = t->ctx;
    if (ctx->backend != VKATTN_BACKEND_VULKAN) {
        host_convert(dst, dst_dtype, t->host, t->dtype, t->count);
        return VKATTN_OK;
    }
    if (t->map.host) {
        if ((s = vk_cmd_submit_and_wait(ctx)) != VKATTN_OK ||
            (s = vk_mapping_invalidate(ctx, &t->memory, &t->map, t->bytes)) != VKATTN_OK)
            return s;
        host_convert(dst, dst_dtype, t->map.host, t->dtype, t->count);
        return VKATTN_OK;
    }
    VkBuffer staging;
    vk_allocation memory;
    vk_mapping map;
    if ((s = vk_buffer_create(ctx, t->buffer_size, MEMORY_DOWNLOAD, &staging, &memory, &map)))
        return s;
    s = vk_cmd_copy(ctx, t->buffer, staging, t->buffer_size);
    if (s == VKATTN_OK)
        s = vk_cmd_submit_and_wait(ctx);
    if (s == VKATTN_OK)
        s = vk_mapping_invalidate(ctx, &memory, &map, t->bytes);
    if (s == VKATTN_OK)
        host_convert(dst, dst_dtype, map.host, t->dtype, t->count);
    vk_buffer_destroy(ctx, staging, &memory);
    return s;
}

vk_binding vk_bind(const vkattn_tensor *t, bool written)
{
    if (!t)
        return (vk_binding){.buffer = VK_NULL_HANDLE};
    return (vk_binding){.buffer = t->buffer, .texels = t->texels, .written = written};
}

vk_binding vk_bind4(const vkattn_tensor *t)
{
    return (vk_binding){.buffer = t->buffer, .texels = t->texels4};
}

VkBufferView vk_texel_input_view(const vkattn_tensor *t, bool vec4)
{
    if (t->dtype == VKATTN_DTYPE_BF16)
        return vec4 ? t->bits4 : t->bits;
    return vec4 ? t->texels4 : t->texels;
}

void vk_bind_texel_input(vk_dispatch *d, uint32_t slot, uint32_t bits_slot,
                         const vkattn_tensor *t, bool vec4)
{
    d->bindings[bits_slot].uint_texels = true;
    if (!t)
        return;
    bool bits = t->dtype == VKATTN_DTYPE_BF16;
    VkBufferView view = vk_texel_input_view(t, vec4);
    d->bindings[slot].buffer = t->buffer; /* orders the accesses */
    d->bindings[slot].texels = bits ? VK_NULL_HANDLE : view;
    d->bindings[bits_slot].texels = bits ? view : VK_NULL_HANDLE;
}
