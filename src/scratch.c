/* Scratch tensors kept by the context between op calls, one per role. */
#include "internal.h"

vkattn_status scratch_get(vkattn_context *ctx, scratch_slot slot, uint64_t elements,
                          vkattn_tensor **out)
{
    uint64_t rounded = (elements + 3) & ~(uint64_t)3;
    vkattn_tensor *t = ctx->scratch[slot];
    if (t && t->count >= rounded) {
        *out = t;
        return VKATTN_OK;
    }
    /* Destroying waits for recorded work that still uses the old buffer. */
    if (t) {
        ctx->live_tensors++;
        vkattn_tensor_destroy(t);
    }
    ctx->scratch[slot] = NULL;
    vkattn_tensor_desc desc = {.dtype = VKATTN_DTYPE_F32, .ndim = 1, .shape = {(int64_t)rounded}};
    vkattn_status s = vkattn_tensor_create(ctx, &desc, &ctx->scratch[slot]);
    if (s != VKATTN_OK)
        return s;
    ctx->live_tensors--; /* the context's own, not the application's */
    *out = ctx->scratch[slot];
    return VKATTN_OK;
}

void scratch_release_all(vkattn_context *ctx)
{
    for (int i = 0; i < SCRATCH_COUNT; i++)
        if (ctx->scratch[i]) {
            ctx->live_tensors++;
            vkattn_tensor_destroy(ctx->scratch[i]);
            ctx->scratch[i] = NULL;
        }
}
