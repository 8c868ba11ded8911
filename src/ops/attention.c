/* vkattn_attention: argument checks, the shape of the problem, path choice. */
#include "ops_common.h"

#include <math.h>
#include <stdio.h>

/* A 4-D tensor's (batch, heads, sequence, width) in the given layout. */
static void split_dims(const vkattn_tensor *t, vkattn_layout layout, int64_t out[4])
{
    bool bshd = layout == VKATTN_LAYOUT_BSHD;
    out[0] = t->shape[0];
    out[1] = bshd ? t->shape[2] : t->shape[1];
    out[2] = bshd ? t->shape[1] : t->shape[2];
    out[3] = t->shape[3];
}

static vkattn_status mismatch(vkattn_context *ctx, const char *name, const char *what,
                              int64_t got, const char *ref_name, int64_t want)
{
    return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH, "attention: %s has %s %lld but %s has %lld",
                    name, what, (long long)got, ref_name, (long long)want);
}

static vkattn_status check_tensors(vkattn_context *ctx, const vkattn_attention_desc *d,
                                   const vkattn_tensor *q, const vkattn_tensor *k,
                                   const vkattn_tensor *v, const vkattn_tensor *o)
{
    vkattn_status s;
    if ((s = check_tensor(ctx, q, "attention", "Q")) || (s = check_tensor(ctx, k, "attention", "K")) ||
        (s = check_tensor(ctx, v, "attention", "V")) || (s = check_tensor(ctx, o, "attention", "O")))
        return s;
    if (d->kv_len && (s = check_tensor(ctx, d->kv_len, "attention", "kv_len")))
        return s;
    if ((unsigned)d->layout > VKATTN_LAYOUT_BSHD || (unsigned)d->path > VKATTN_PATH_UNFUSED ||
        (unsigned)d->fused_variant > VKATTN_FUSED_COOPMAT_EMULATED)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "attention: layout %d, path %d or fused_variant %d is not a valid value",
                        (int)d->layout, (int)d->path, (int)d->fused_variant);
    if (o == q || o == k || o == v)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "attention: O must not alias Q, K or V");
    if ((s = check_float_input(ctx, q, "attention", "Q")) ||
        (s = check_float_input(ctx, k, "attention", "K")) ||
        (s = check_float_input(ctx, v, "attention", "V")) ||
        (s = check_f32_output(ctx, o, "attention", "O")))
        return s;
    const vkattn_tensor *all[4] = {q, k, v, o};
    const char *names = "QKVO";
    for (int i = 0; i < 4; i++)
        if (all[i]->ndim != 4) {
            char shape[96];
            return ctx_fail(ctx, VKATTN_ERROR_INVALID_SHAPE,
                            "attention: %c is %s, must be 4-D (%s)", names[i],
                            shape_string(all[i], shape, sizeof shape),
                            d->layout == VKATTN_LAYOUT_BSHD ? "B, T, H, D" : "B, H, T, D");
        }
    return VKATTN_OK;
}

static vkattn_status check_args(vkattn_context *ctx, const vkattn_attention_desc *d,
                                const vkattn_tensor *q, const vkattn_tensor *k,
                                const vkattn_tensor *v, const vkattn_tensor *o, attention_dims *dims)
{
    vkattn_status s = check_tensors(ctx, d, q, k, v, o);
    if (s != VKATTN_OK)
        return s;
    int64_t qd[4], kd[4], vd[4], od[4];
    split_dims(q, d->layout, qd);
    split_dims(k, d->layout, kd);
    split_dims(v, d->layout, vd);
    split_dims(o, d->layout, od);
    if (kd[0] != qd[0])
        return mismatch(ctx, "K", "batch size", kd[0], "Q", qd[0]);
    if (vd[0] != qd[0])
        return mismatch(ctx, "V", "batch size", vd[0], "Q", qd[0]);
    if (kd[3] != qd[3])
        return mismatch(ctx, "K", "head size", kd[3], "Q", qd[3]);
    if (vd[1] != kd[1])
        return mismatch(ctx, "V", "head count", vd[1], "K", kd[1]);
    if (vd[2] != kd[2])
        return mismatch(ctx, "V", "sequence length", vd[2], "K", kd[2]);
    if (qd[1] % kd[1] != 0)
        return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH,
                        "attention: Q has %lld heads, not a multiple of K's %lld (grouped-query "
                        "attention needs H %% Hkv == 0)",
                        (long long)qd[1], (long long)kd[1]);
    if (od[0] != qd[0] || od[1] != qd[1] || od[2] != qd[2] || od[3] != vd[3]) {
        char os[96];
        bool bshd = d->layout == VKATTN_LAYOUT_BSHD;
        return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH,
                        "attention: O is %s but must be %lldx%lldx%lldx%lld (%s, Dv from V)",
                        shape_string(o, os, sizeof os), (long long)qd[0],
                        (long long)(bshd ? qd[2] : qd[1]), (long long)(bshd ? qd[1] : qd[2]),
                        (long long)vd[3], bshd ? "B, Tq, H, Dv" : "B, H, Tq, Dv");
    }
    if (d->kv_len) {
        char ks[96];
        if (d->kv_len->dtype != VKATTN_DTYPE_I32 || d->kv_len->ndim != 1 ||
            d->kv_len->shape[0] != qd[0])
            return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH,
                            "attention: kv_len is %s %s, must be i32 (%lld), one length per batch "
                            "entry", dtype_name(d->kv_len->dtype),
                            shape_string(d->kv_len, ks, sizeof ks), (long long)qd[0]);
    }
    if (d->scale != 0.0f && !(isfinite(d->scale) && d->scale > 0.0f))
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "attention: scale is %g, must be positive and finite (0: 1/sqrt(D))",
                        (double)d->scale);
    int64_t q_offset = d->has_q_offset ? d->q_offset : kd[2] - qd[2];
    if (q_offset < -(int64_t)INT32_MAX || q_offset > INT32_MAX)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "attention: q_offset %lld is out of range",
                        (long long)q_offset);
    /* Past these bounds the mask no longer changes (every key allowed, or none);
     * clamping keeps i + q_offset + 1 far from overflow in the kernels. */
    if (q_offset > kd[2])
        q_offset = kd[2];
    if (q_offset < -qd[2])
        q_offset = -qd[2];
    *dims = (attention_dims){
        .B = qd[0], .H = qd[1], .Hkv = kd[1], .Tq = qd[2], .Tk = kd[2], .D = qd[3], .Dv = vd[3],
        .layout = d->layout,
        .causal = d->causal,
        .q_offset = q_offset,
        .scale = d->scale != 0.0f ? d->scale : (float)(1.0 / sqrt((double)qd[3])),
    };
    return VKATTN_OK;
}

vkattn_status vk_attention_record(vkattn_context *ctx, const attention_call *c)
{
    char why[256];
    if (c->path == VKATTN_PATH_UNFUSED)
        return vk_attention_unfused(ctx, c);
    if (c->path == VKATTN_PATH_AUTO && !vk_attention_fused_applies(ctx, c, why, sizeof why)) {
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
    vkattn_status s = check_args(ctx, d, q, k, v, o, &dims);
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
