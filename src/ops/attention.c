/* vkattn_attention: path choice (the checks are in attention_args.c). */
#include "attention_args.h"

#include <stdio.h>

/* The path the call takes: AUTO is fused wherever a fused variant runs it
 * (packed and paged sequences exist on the fused path only). With the fused
 * path, `runs` says whether a variant can run it (else `why` says why not). */
static vkattn_attention_path resolved_path(vkattn_context *ctx, const attention_call *c,
                                           vkattn_attention_choice *choice, bool *runs,
                                           char *why, size_t why_size)
{
    *choice = (vkattn_attention_choice){.path = VKATTN_PATH_UNFUSED};
    *runs = true;
    if (c->path == VKATTN_PATH_UNFUSED)
        return VKATTN_PATH_UNFUSED;
    *runs = vk_attention_fused_choice(ctx, c, choice, why, why_size);
    if (c->path == VKATTN_PATH_AUTO && !*runs && !attention_has_layout_variants(&c->dims)) {
        ctx_log(ctx, VKATTN_LOG_DEBUG, "attention: %s; taking the unfused path", why);
        *runs = true;
        return VKATTN_PATH_UNFUSED;
    }
    return choice->path = VKATTN_PATH_FUSED;
}

vkattn_status vk_attention_record(vkattn_context *ctx, const attention_call *c)
{
    vkattn_attention_choice choice;
    bool runs;
    char why[256];
    if (resolved_path(ctx, c, &choice, &runs, why, sizeof why) == VKATTN_PATH_UNFUSED)
        return vk_attention_unfused(ctx, c);
    /* The kernels write the rows of sequences only; rows of packed O in none are
     * zero, as the CPU reference leaves them. Checked first, so an O that the
     * fused path refuses stays as it was. */
    if (c->dims.var.o_gaps && runs) {
        vkattn_status s = vk_output_zero(ctx, c->o);
        if (s != VKATTN_OK)
            return s;
    }
    return vk_attention_fused(ctx, c); /* says why where it cannot run */
}

/* The checked call of the arguments (its dims filled by the checks). */
static attention_call call_of(const vkattn_attention_desc *d, const attention_dims *dims,
                              const vkattn_tensor *q, const vkattn_tensor *k,
                              const vkattn_tensor *v, vkattn_tensor *o)
{
    return (attention_call){
        .dims = *dims,
        .q = q, .k = k, .v = v, .kv_len = d->kv_len, .o = o,
        .path = d->path,
        .fused_variant = d->fused_variant,
        .kv_splits = d->kv_splits,
    };
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
    wide_output out;
    if ((s = wide_output_begin(ctx, o, &out)) != VKATTN_OK)
        return s;
    if (ctx->backend == VKATTN_BACKEND_CPU)
        return wide_output_end(ctx, &out, cpu_attention(ctx, &dims, q, k, v, d->kv_len, out.write));
    attention_call call = call_of(d, &dims, q, k, v, out.write);
    return wide_output_end(ctx, &out, vk_attention_record(ctx, &call));
}

vkattn_status vkattn_attention_choose(vkattn_context *ctx, const vkattn_attention_desc *desc,
                                      const vkattn_tensor *q, const vkattn_tensor *k,
                                      const vkattn_tensor *v, const vkattn_tensor *o,
                                      vkattn_attention_choice *out)
{
    static const vkattn_attention_desc defaults;
    if (!ctx)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    if (!out)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "attention_choose: out is NULL");
    const vkattn_attention_desc *d = desc ? desc : &defaults;
    attention_dims dims;
    /* The checks only read o (its shape, dtype, aliasing). */
    vkattn_tensor *o_checked = (vkattn_tensor *)o;
    vkattn_status s = attention_check_args(ctx, d, q, k, v, o_checked, &dims);
    if (s != VKATTN_OK)
        return s;
    *out = (vkattn_attention_choice){.path = VKATTN_PATH_AUTO};
    if (ctx->backend == VKATTN_BACKEND_CPU)
        return VKATTN_OK;
    attention_call call = call_of(d, &dims, q, k, v, o_checked);
    return vk_attention_choice(ctx, &call, out);
}

vkattn_status vk_attention_choice(vkattn_context *ctx, const attention_call *c,
                                  vkattn_attention_choice *out)
{
    bool runs;
    char why[256];
    resolved_path(ctx, c, out, &runs, why, sizeof why);
    if (!runs)
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "attention: fused path: %s", why);
    return VKATTN_OK;
}
