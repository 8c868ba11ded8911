/* vkattn_attention: path choice (the checks are in attention_args.c). */
#include "attention_args.h"

#include <stdio.h>

vkattn_status vk_attention_record(vkattn_context *ctx, const attention_call *c)
{
    char why[256];
    if (c->path == VKATTN_PATH_UNFUSED)
        return vk_attention_unfused(ctx, c);
    /* Packed and paged sequences exist on the fused path only. */
    bool fused_only = attention_has_layout_variants(&c->dims);
    if (c->path == VKATTN_PATH_AUTO && !fused_only &&
        !vk_attention_fused_applies(ctx, c, why, sizeof why)) {
        ctx_log(ctx, VKATTN_LOG_DEBUG, "attention: %s; taking the unfused path", why);
        return vk_attention_unfused(ctx, c);
    }
    return vk_attention_fused(ctx, c);
}

vkattn_status vkattn_attention(vkattn_context *ctx, const vkattn_attention_desc *desc,
                               const vkattn_tensor *q, const vkattn_tensor *k,
                               const vkattn_tensor *v, vkattn_tensor *o)
{
    static const vkattn_attention_desc defaults;
    if (!ctx)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    const vkattn_attention_desc *d = desc ? desc : &defaults;
    attention_dims dims;
    vkattn_status s = attention_check_args(ctx, d, q, k, v, o, &dims);
    if (s != VKATTN_OK)
        return s;
    if (ctx->backend == VKATTN_BACKEND_CPU)
        return cpu_attention(ctx, &dims, q, k, v, d->kv_len, o);
    attention_call call = {
        .dims = dims,
        .q = q, .k = k, .v = v, .kv_len = d->kv_len, .o = o,
        .path = d->path,
        .fused_variant = d->fused_variant,
        .kv_splits = d->kv_splits,
    };
    return vk_attention_record(ctx, &call);
}
