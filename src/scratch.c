/* Scratch tensors kept by the context between op calls, one per role. A tensor
 * that an unreleased recording (an application's command buffer) still uses is
 * retired instead of destroyed when its slot grows. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static void destroy_owned(vkattn_context *ctx, vkattn_tensor *t)
{
    ctx->live_tensors++; /* scratch tensors are not counted as the application's */
    vkattn_tensor_destroy(t);
}

static vkattn_status retire(vkattn_context *ctx, vkattn_tensor *t)
{
    if (ctx->retired_count == ctx->retired_capacity) {
        uint32_t cap = ctx->retired_capacity ? 2 * ctx->retired_capacity : 4;
        vkattn_tensor **grown = realloc(ctx->retired, cap * sizeof *grown);
        if (!grown)
            return ctx_fail(ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "scratch: out of host memory");
        ctx->retired = grown;
        ctx->retired_capacity = cap;
    }
    ctx->retired[ctx->retired_count++] = t;
    return VKATTN_OK;
}

vkattn_status scratch_get(vkattn_context *ctx, scratch_slot slot, vkattn_dtype dtype,
                          uint64_t elements, vkattn_tensor **out)
{
    uint64_t rounded = (elements + 3) & ~(uint64_t)3;
    vkattn_tensor *t = ctx->scratch[slot];
    if (!t || t->count < rounded || t->dtype != dtype) {
        vkattn_status s = VKATTN_OK;
        if (t && t->pins) {
            s = retire(ctx, t);
        } else if (t) {
            /* The context's own work recorded so far may use it: submitted
             * and waited for here, so that a failure is this op's status
             * (vkattn_tensor_destroy, which would wait too, returns none). */
            if (ctx->backend == VKATTN_BACKEND_VULKAN && ctx->vk.recording && !ctx->vk.external)
                s = vk_cmd_submit_and_wait(ctx);
            if (s == VKATTN_OK)
                destroy_owned(ctx, t);
        }
        if (s != VKATTN_OK)
            return s;
        ctx->scratch[slot] = NULL;
        vkattn_tensor_desc desc = {.dtype = dtype, .ndim = 1, .shape = {(int64_t)rounded}};
        if ((s = vkattn_tensor_create(ctx, &desc, &ctx->scratch[slot])) != VKATTN_OK)
            return s;
        ctx->live_tensors--;
        t = ctx->scratch[slot];
    }
    if (ctx->vk.external) {
        vkattn_status s = recording_pin(ctx->vk.external, t);
        if (s != VKATTN_OK)
            return s;
    }
    /* The elements asked for, not the whole slot: a slot grown once for a large
     * call would otherwise be filled whole for every small one after it. */
    if (ctx->poison) {
        /* 16-bit slots hold two elements a word (the poison is NaN as either) */
        uint64_t words = dtype == VKATTN_DTYPE_F32 ? rounded : rounded / 2;
        if (ctx->backend == VKATTN_BACKEND_CPU) {
            uint32_t *host = t->host;
            for (uint64_t i = 0; i < words; i++)
                host[i] = VKATTN_POISON_BITS;
        } else {
            vkattn_status s = vk_tensor_fill(ctx, t, words, VKATTN_POISON_BITS);
            if (s != VKATTN_OK)
                return s;
        }
    }
    *out = t;
    return VKATTN_OK;
}

vkattn_tensor scratch_view(const vkattn_tensor *scratch, int32_t ndim, const int64_t *shape,
                           size_t count)
{
    vkattn_tensor view = *scratch;
    view.ndim = ndim;
    memset(view.shape, 0, sizeof view.shape);
    memcpy(view.shape, shape, (size_t)ndim * sizeof *shape);
    view.count = count;
    view.bytes = count * dtype_size(scratch->dtype);
    view.pins = 0;
    return view;
}

void scratch_sweep_retired(vkattn_context *ctx)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < ctx->retired_count; i++) {
        if (ctx->retired[i]->pins)
            ctx->retired[kept++] = ctx->retired[i];
        else
            destroy_owned(ctx, ctx->retired[i]);
    }
    ctx->retired_count = kept;
}

void scratch_release_all(vkattn_context *ctx)
{
    for (int i = 0; i < SCRATCH_COUNT; i++)
        if (ctx->scratch[i]) {
            destroy_owned(ctx, ctx->scratch[i]);
            ctx->scratch[i] = NULL;
        }
    for (uint32_t i = 0; i < ctx->retired_count; i++)
        destroy_owned(ctx, ctx->retired[i]);
    free(ctx->retired);
    ctx->retired = NULL;
    ctx->retired_count = ctx->retired_capacity = 0;
}
