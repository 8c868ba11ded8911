/* vkattn_attention's argument checks: every tensor, the shapes they must agree
 * on, and the variants (DESIGN.md section 1), each refused with a message that
 * names the tensor and the numbers. */
#include "attention_args.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

/* (batch, heads, sequence, width) of Q, K, V or O. Dense tensors follow the
 * layout; packed ones are (total, heads, width) and paged caches (num_blocks,
 * block_size, heads, width): their batch count and sequence length come from
 * the cu_seqlens or block table and are filled in later. */
typedef enum tensor_form { FORM_DENSE, FORM_PACKED, FORM_PAGED } tensor_form;

static const char *form_shape(tensor_form form, vkattn_layout layout)
{
    return form == FORM_PACKED  ? "total, heads, D"
           : form == FORM_PAGED ? "num_blocks, block_size, heads, D"
           : layout == VKATTN_LAYOUT_BSHD ? "B, T, H, D"
                                          : "B, H, T, D";
}

static void split_dims(const vkattn_tensor *t, tensor_form form, vkattn_layout layout, int64_t out[4])
{
    if (form == FORM_PACKED) {
        out[0] = 1, out[1] = t->shape[1], out[2] = t->shape[0], out[3] = t->shape[2];
    } else if (form == FORM_PAGED) {
        out[0] = 1, out[1] = t->shape[2], out[2] = t->shape[0] * t->shape[1], out[3] = t->shape[3];
    } else {
        bool bshd = layout == VKATTN_LAYOUT_BSHD;
        out[0] = t->shape[0];
        out[1] = bshd ? t->shape[2] : t->shape[1];
        out[2] = bshd ? t->shape[1] : t->shape[2];
        out[3] = t->shape[3];
    }
}

static vkattn_status mismatch(vkattn_context *ctx, const char *name, const char *what,
                              int64_t got, const char *ref_name, int64_t want)
{
    return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH, "attention: %s has %s %lld but %s has %lld",
                    name, what, (long long)got, ref_name, (long long)want);
}

static vkattn_status check_rank(vkattn_context *ctx, const vkattn_tensor *t, const char *name,
                                tensor_form form, vkattn_layout layout)
{
    int32_t rank = form == FORM_PACKED ? 3 : 4;
    if (t->ndim == rank)
        return VKATTN_OK;
    char shape[96];
    return ctx_fail(ctx, VKATTN_ERROR_INVALID_SHAPE, "attention: %s is %s, must be %d-D (%s)", name,
                    shape_string(t, shape, sizeof shape), rank, form_shape(form, layout));
}

static vkattn_status check_tensors(vkattn_context *ctx, const vkattn_attention_desc *d,
                                   const vkattn_tensor *q, const vkattn_tensor *k,
                                   const vkattn_tensor *v, const vkattn_tensor *o,
                                   tensor_form q_form, tensor_form k_form)
{
    vkattn_status s;
    if ((s = check_tensor(ctx, q, "attention", "Q")) || (s = check_tensor(ctx, k, "attention", "K")) ||
        (s = check_tensor(ctx, v, "attention", "V")) || (s = check_tensor(ctx, o, "attention", "O")))
        return s;
    const vkattn_tensor *optional[] = {d->kv_len, d->sinks, d->alibi_slopes, d->mask,
                                       d->cu_seqlens_q, d->cu_seqlens_k, d->block_table};
    const char *optional_names[] = {"kv_len", "sinks", "alibi_slopes", "mask",
                                    "cu_seqlens_q", "cu_seqlens_k", "block_table"};
    for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++)
        if (optional[i] && (s = check_tensor(ctx, optional[i], "attention", optional_names[i])))
            return s;
    if ((unsigned)d->layout > VKATTN_LAYOUT_BSHD || (unsigned)d->path > VKATTN_PATH_UNFUSED ||
        (unsigned)d->fused_variant > VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "attention: layout %d, path %d or fused_variant %d is not a valid value",
                        (int)d->layout, (int)d->path, (int)d->fused_variant);
    const vkattn_tensor *inputs[] = {q, k, v};
    const char *input_names[] = {"Q", "K", "V"};
    for (size_t i = 0; i < 3; i++)
        if (o == inputs[i])
            return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "attention: O must not alias %s",
                            input_names[i]);
    for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++)
        if (o == optional[i])
            return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "attention: O must not alias %s",
                            optional_names[i]);
    if ((s = check_float_input(ctx, q, "attention", "Q")) ||
        (s = check_float_input(ctx, k, "attention", "K")) ||
        (s = check_float_input(ctx, v, "attention", "V")) ||
        (s = check_float_output(ctx, o, "attention", "O")))
        return s;
    if ((s = check_rank(ctx, q, "Q", q_form, d->layout)) ||
        (s = check_rank(ctx, k, "K", k_form, d->layout)) ||
        (s = check_rank(ctx, v, "V", k_form, d->layout)) ||
        (s = check_rank(ctx, o, "O", q_form, d->layout)))
        return s;
    return VKATTN_OK;
}

/* An I32 vector of `count` entries (kv_len, cu_seqlens). */
static vkattn_status check_i32_vector(vkattn_context *ctx, const vkattn_tensor *t,
                                      const char *name, int64_t count, const char *what)
{
    if (t->dtype == VKATTN_DTYPE_I32 && t->ndim == 1 && t->shape[0] == count)
        return VKATTN_OK;
    char ts[96];
    return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH,
                    "attention: %s is %s of shape (%s), must be i32 of shape (%lld): %s", name,
                    dtype_name(t->dtype), shape_string(t, ts, sizeof ts), (long long)count, what);
}

/* A per-head F32 vector (sinks, ALiBi slopes). */
static vkattn_status check_head_vector(vkattn_context *ctx, const char *op,
                                       const vkattn_tensor *t, const char *name, int64_t H)
{
    vkattn_status s = check_tensor(ctx, t, op, name);
    if (s != VKATTN_OK || (t->dtype == VKATTN_DTYPE_F32 && t->ndim == 1 && t->shape[0] == H))
        return s;
    char ts[96];
    return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH,
                    "%s: %s is %s %s, must be f32 (%lld), one value per query head", op, name,
                    dtype_name(t->dtype), shape_string(t, ts, sizeof ts), (long long)H);
}

/* The mask's shape and its strides over (b, h, i). It broadcasts like a numpy
 * array against (B, H, Tq, Tk): 2 to 4 dimensions aligned to the right, each
 * equal to the problem's or 1 (stride 0), so a key padding mask (B, 1, 1, Tk),
 * one mask per head (H, Tq, Tk) or one value per query row (B, 1, Tq, 1: a
 * row's -inf masks it whole) needs no copies. */
static vkattn_status check_mask(vkattn_context *ctx, const char *op, const vkattn_tensor *m,
                                attention_dims *d)
{
    vkattn_status s = check_tensor(ctx, m, op, "mask");
    if (s == VKATTN_OK)
        s = check_float_input(ctx, m, op, "mask");
    if (s != VKATTN_OK)
        return s;
    const int64_t want[4] = {d->B, d->H, d->Tq, d->Tk};
    int64_t dim[4] = {1, 1, 1, 1};
    bool ok = m->ndim >= 2 && m->ndim <= 4;
    for (int i = 0; ok && i < m->ndim; i++)
        dim[4 - m->ndim + i] = m->shape[i];
    for (int i = 0; ok && i < 4; i++)
        ok = dim[i] == want[i] || dim[i] == 1;
    if (!ok) {
        char ms[96];
        return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH,
                        "%s: mask is %s, must broadcast to (B, H, Tq, Tk) = (%lld, %lld, "
                        "%lld, %lld): 2 to 4 dimensions, aligned to the right, each equal or 1%s",
                        op, shape_string(m, ms, sizeof ms), (long long)d->B, (long long)d->H,
                        (long long)d->Tq, (long long)d->Tk,
                        d->var.cu_q ? "; packed: Tq and Tk are the longest sequences"
                        : d->var.block_table ? "; paged: Tk = max_blocks * block_size" : "");
    }
    d->var.mask_si = dim[2] == 1 ? 0 : dim[3];
    d->var.mask_sh = dim[1] == 1 ? 0 : dim[2] * dim[3];
    d->var.mask_sb = dim[0] == 1 ? 0 : dim[1] * dim[2] * dim[3];
    d->var.mask_per_row = dim[3] == 1 && d->Tk != 1;
    return VKATTN_OK;
}

/* The scalar variants and the per-head and mask tensors; `op` names the call
 * in messages ("attention", "mha"). */
vkattn_status attention_check_variants(vkattn_context *ctx, const char *op,
                                      const vkattn_attention_desc *a, attention_dims *d)
{
    attention_variants *v = &d->var;
    /* -1 is the one unbounded side (FlashAttention's window_size); any other
     * negative is likelier a mistake than a wish, and issue 11 asks that it be
     * refused. DESIGN.md's "window_left < 0 ||" is then -1's case. */
    if (a->has_window && (a->window_left < -1 || a->window_right < -1))
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "%s: window (%d, %d): each side must be >= 0, or -1 for unbounded", op,
                        a->window_left, a->window_right);
    /* Not subnormal either: GPUs may flush it to 0. */
    if (a->softcap != 0.0f && !(isfinite(a->softcap) && a->softcap >= FLT_MIN))
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "%s: softcap is %g, must be positive (at least %g) and finite "
                        "(0: off)", op, (double)a->softcap, (double)FLT_MIN);
    v->has_window = a->has_window;
    v->window_left = a->has_window ? a->window_left : -1;
    v->window_right = a->has_window ? a->window_right : -1;
    v->softcap = a->softcap;
    vkattn_status s;
    if (a->sinks && (s = check_head_vector(ctx, op, a->sinks, "sinks", d->H)))
        return s;
    if (a->alibi_slopes && (s = check_head_vector(ctx, op, a->alibi_slopes, "alibi_slopes", d->H)))
        return s;
    v->sinks = a->sinks;
    v->alibi = a->alibi_slopes;
    v->mask = a->mask;
    return a->mask ? check_mask(ctx, op, a->mask, d) : VKATTN_OK;
}

/* Batch count, packed totals and cache geometry from cu_seqlens and the block table. */
static vkattn_status check_sequence_tensors(vkattn_context *ctx, const vkattn_attention_desc *a,
                                            const vkattn_tensor *q, const vkattn_tensor *k,
                                            attention_dims *d)
{
    attention_variants *v = &d->var;
    vkattn_status s;
    if (a->cu_seqlens_k && !a->cu_seqlens_q)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "attention: cu_seqlens_k needs cu_seqlens_q (packed queries)");
    if (a->cu_seqlens_k && a->block_table)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "attention: cu_seqlens_k and block_table both say where the keys are: "
                        "give one");
    if (a->cu_seqlens_q && !a->cu_seqlens_k && !a->block_table)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "attention: cu_seqlens_q needs cu_seqlens_k or a block_table for the keys");
    if (a->cu_seqlens_q) {
        int64_t n = a->cu_seqlens_q->shape[0];
        if (a->cu_seqlens_q->ndim != 1 || n < 2)
            n = 2; /* the check below then names the shape */
        if ((s = check_i32_vector(ctx, a->cu_seqlens_q, "cu_seqlens_q", n, "B + 1 offsets")))
            return s;
        d->B = n - 1;
        v->cu_q = a->cu_seqlens_q;
        v->total_q = q->shape[0];
    }
    if (a->cu_seqlens_k) {
        if ((s = check_i32_vector(ctx, a->cu_seqlens_k, "cu_seqlens_k", d->B + 1,
                                  "B + 1 offsets as cu_seqlens_q")))
            return s;
        v->cu_k = a->cu_seqlens_k;
        v->total_k = k->shape[0];
    }
    if (a->block_table) {
        const vkattn_tensor *t = a->block_table;
        char ts[96];
        bool batch_ok = a->cu_seqlens_q ? t->ndim == 2 && t->shape[0] == d->B : t->ndim == 2;
        if (t->dtype != VKATTN_DTYPE_I32 || !batch_ok)
            return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH,
                            "attention: block_table is %s %s, must be i32 (B, max_blocks)",
                            dtype_name(t->dtype), shape_string(t, ts, sizeof ts));
        if (k->shape[1] > 256)
            return ctx_fail(ctx, VKATTN_ERROR_INVALID_SHAPE,
                            "attention: the paged K cache has blocks of %lld keys; 1..256 are "
                            "supported", (long long)k->shape[1]);
        if (!a->kv_len)
            return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                            "attention: a block_table needs kv_len (each entry's key count)");
        if (!a->cu_seqlens_q)
            d->B = q->shape[0];
        if (t->shape[0] != d->B)
            return mismatch(ctx, "block_table", "batch size", t->shape[0], "Q", d->B);
        v->block_table = t;
        v->block_size = k->shape[1];
        v->num_blocks = k->shape[0];
        v->max_blocks = t->shape[1];
        d->Tk = v->max_blocks * v->block_size;
    }
    return VKATTN_OK;
}

static vkattn_status check_shapes(vkattn_context *ctx, const vkattn_attention_desc *d,
                                  const vkattn_tensor *q, const vkattn_tensor *k,
                                  const vkattn_tensor *v, const vkattn_tensor *o,
                                  tensor_form q_form, tensor_form k_form, attention_dims *dims)
{
    int64_t qd[4], kd[4], vd[4], od[4];
    split_dims(q, q_form, d->layout, qd);
    split_dims(k, k_form, d->layout, kd);
    split_dims(v, k_form, d->layout, vd);
    split_dims(o, q_form, d->layout, od);
    bool dense_k = k_form == FORM_DENSE;
    if (q_form == FORM_DENSE && dense_k && kd[0] != qd[0])
        return mismatch(ctx, "K", "batch size", kd[0], "Q", qd[0]);
    if (dense_k && vd[0] != kd[0])
        return mismatch(ctx, "V", "batch size", vd[0], "K", kd[0]);
    if (kd[3] != qd[3])
        return mismatch(ctx, "K", "head size", kd[3], "Q", qd[3]);
    if (vd[1] != kd[1])
        return mismatch(ctx, "V", "head count", vd[1], "K", kd[1]);
    if (k_form == FORM_PAGED && (v->shape[0] != k->shape[0] || v->shape[1] != k->shape[1]))
        return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH,
                        "attention: the V cache has %lld blocks of %lld keys but K has %lld of %lld",
                        (long long)v->shape[0], (long long)v->shape[1], (long long)k->shape[0],
                        (long long)k->shape[1]);
    if (vd[2] != kd[2])
        return mismatch(ctx, "V", "sequence length", vd[2], "K", kd[2]);
    if (qd[1] % kd[1] != 0)
        return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH,
                        "attention: Q has %lld heads, not a multiple of K's %lld (grouped-query "
                        "attention needs H %% Hkv == 0)",
                        (long long)qd[1], (long long)kd[1]);
    if (od[0] != qd[0] || od[1] != qd[1] || od[2] != qd[2] || od[3] != vd[3]) {
        char os[96], want[96];
        bool bshd = d->layout == VKATTN_LAYOUT_BSHD;
        if (q_form == FORM_PACKED)
            snprintf(want, sizeof want, "%lldx%lldx%lld", (long long)qd[2], (long long)qd[1],
                     (long long)vd[3]);
        else
            snprintf(want, sizeof want, "%lldx%lldx%lldx%lld", (long long)qd[0],
                     (long long)(bshd ? qd[2] : qd[1]), (long long)(bshd ? qd[1] : qd[2]),
                     (long long)vd[3]);
        return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH,
                        "attention: O is %s but must be %s (%s, Dv from V)",
                        shape_string(o, os, sizeof os), want, form_shape(q_form, d->layout));
    }
    *dims = (attention_dims){
        .B = qd[0], .H = qd[1], .Hkv = kd[1], .Tq = qd[2], .Tk = kd[2], .D = qd[3], .Dv = vd[3],
        .layout = d->layout,
        .causal = d->causal,
    };
    return VKATTN_OK;
}

static vkattn_status resolve_q_offset(vkattn_context *ctx, const vkattn_attention_desc *d,
                                      attention_dims *dims)
{
    bool per_sequence = dims->var.cu_q || dims->var.block_table;
    int64_t q_offset = d->has_q_offset ? d->q_offset : dims->Tk - dims->Tq;
    /* Used as given: past [-Tq, Tk] causality no longer changes, but ALiBi's
     * j - pos and a window's bounds still do (an earlier clamp to that range
     * changed them). The bound keeps pos = i + q_offset and a window's
     * pos +- side (sides past Tq + Tk are unbounded) inside the kernels' int. */
    if (q_offset < -VKATTN_MAX_Q_OFFSET || q_offset > VKATTN_MAX_Q_OFFSET)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "attention: q_offset %lld is out of range (|q_offset| <= %lld)",
                        (long long)q_offset, (long long)VKATTN_MAX_Q_OFFSET);
    dims->fixed_q_offset = d->has_q_offset || !per_sequence;
    dims->q_offset = q_offset;
    return VKATTN_OK;
}

vkattn_status attention_check_args(vkattn_context *ctx, const vkattn_attention_desc *d,
                                   const vkattn_tensor *q, const vkattn_tensor *k,
                                   const vkattn_tensor *v, const vkattn_tensor *o,
                                   attention_dims *dims)
{
    tensor_form q_form = d->cu_seqlens_q ? FORM_PACKED : FORM_DENSE;
    tensor_form k_form = d->block_table ? FORM_PAGED : d->cu_seqlens_k ? FORM_PACKED : FORM_DENSE;
    vkattn_status s = check_tensors(ctx, d, q, k, v, o, q_form, k_form);
    if (!s)
        s = check_shapes(ctx, d, q, k, v, o, q_form, k_form, dims);
    if (!s)
        s = check_sequence_tensors(ctx, d, q, k, dims);
    if (s)
        return s;
    if (d->kv_len && (s = check_i32_vector(ctx, d->kv_len, "kv_len", dims->B,
                                           "one length per batch entry")))
        return s;
    if (d->scale != 0.0f && !(isfinite(d->scale) && d->scale > 0.0f))
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "attention: scale is %g, must be positive and finite (0: 1/sqrt(D))",
                        (double)d->scale);
    dims->scale = d->scale != 0.0f ? d->scale : (float)(1.0 / sqrt((double)dims->D));
    if ((s = attention_check_sequences(ctx, d, dims)) || (s = attention_check_variants(ctx, "attention", d, dims)))
        return s;
    /* Packed and paged sequences are addressing inside the fused kernels. The
     * CPU backend has no paths, but whether a call is valid does not depend on
     * the backend, so it refuses them unfused as well. */
    if (d->path == VKATTN_PATH_UNFUSED && attention_has_layout_variants(dims))
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED,
                        "attention: packed (cu_seqlens) and paged (block_table) sequences run on "
                        "the fused path only; the unfused path was asked for");
    return resolve_q_offset(ctx, d, dims);
}
