/* vkattn_softmax: argument checks, variant choice, dispatch; CPU reference otherwise. */
#include "ops_common.h"

#include <math.h>

/* Keep in sync with the Push block in shaders/softmax_body.glsl. */
typedef struct softmax_push {
    uint32_t rows;
    uint32_t Tq, Tk;
    uint32_t rows_per_batch;
    float scale_log2e;
    int32_t q_offset;
    uint32_t rows_per_workgroup;
    uint32_t kv_row_base;
    uint32_t rows_per_head, heads;
    int32_t window_left, window_right;
} softmax_push;
_Static_assert(sizeof(softmax_push) <= VKATTN_PUSH_CONSTANT_BYTES, "push constants too large");

enum softmax_spec { /* constant_id values in softmax_body.glsl */
    SM_SPEC_WORKGROUP = 0, SM_SPEC_X_DTYPE, SM_SPEC_CAUSAL, SM_SPEC_HAS_KV_LEN, SM_SPEC_X_TEXELS,
    SM_SPEC_VEC4, SM_SPEC_HAS_SINKS, SM_SPEC_MARK_MASKED, SM_SPEC_MARK_NEG_INF, SM_SPEC_HAS_WINDOW,
    SM_SPEC_SINK_ALIBI, SM_SPEC_COUNT
};

/* Rows per workgroup for the subgroup variant: enough that a workgroup is 64
 * invocations or one subgroup, whichever is larger. The kernel is correct for
 * any subgroup size (its subgroups stride over the rows by gl_NumSubgroups)
 * but not for partial subgroups: a row's lanes are gl_SubgroupSize of them, so
 * it runs only where the subgroups are whole (device_caps_whole_subgroups):
 * at the size required where the device allows, full; else on a device of one
 * size. AUTO takes the shared variant elsewhere, which uses no subgroup
 * operations. */
#define SUBGROUP_VARIANT_INVOCATIONS 64
/* The shared-memory variant: one row per workgroup of this many (a power of 2). */
#define SHARED_VARIANT_WORKGROUP 64

static vkattn_status check_args(vkattn_context *ctx, const vkattn_softmax_desc *d,
                                const vkattn_tensor *x, const vkattn_tensor *y,
                                int64_t *q_offset)
{
    vkattn_status s;
    if ((s = check_tensor(ctx, x, "softmax", "X")) || (s = check_tensor(ctx, y, "softmax", "Y")))
        return s;
    if (d->kv_len && (s = check_tensor(ctx, d->kv_len, "softmax", "kv_len")))
        return s;
    if ((unsigned)d->variant > VKATTN_SOFTMAX_SHARED)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "softmax: variant %d is not valid",
                        (int)d->variant);
    if (d->scale != 0.0f && !(isfinite(d->scale) && d->scale > 0.0f))
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "softmax: scale is %g, must be positive and finite", (double)d->scale);
    if ((s = check_float_input(ctx, x, "softmax", "X")) ||
        (s = check_float_output(ctx, y, "softmax", "Y")))
        return s;
    if (x->ndim < 2) {
        char xs[96];
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_SHAPE,
                        "softmax: X is %s, needs 2 to 4 dimensions (..., Tq, Tk)",
                        shape_string(x, xs, sizeof xs));
    }
    char xs[96], ys[96];
    bool same = x->ndim == y->ndim;
    for (int32_t i = 0; i < x->ndim && same; i++)
        same = x->shape[i] == y->shape[i];
    if (!same)
        return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH, "softmax: X is %s but Y is %s",
                        shape_string(x, xs, sizeof xs), shape_string(y, ys, sizeof ys));
    int64_t Tq = x->shape[x->ndim - 2], Tk = x->shape[x->ndim - 1];
    if (d->kv_len) {
        int64_t n = x->ndim >= 3 ? x->shape[0] : 1;
        if (d->kv_len->dtype != VKATTN_DTYPE_I32 || d->kv_len->ndim != 1 ||
            d->kv_len->shape[0] != n)
            return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH,
                            "softmax: kv_len is %s %s, must be i32 (%lld) for X %s",
                            dtype_name(d->kv_len->dtype),
                            shape_string(d->kv_len, ys, sizeof ys), (long long)n,
                            shape_string(x, xs, sizeof xs));
    }
    *q_offset = d->has_q_offset ? d->q_offset : Tk - Tq;
    if (*q_offset < -(int64_t)INT32_MAX || *q_offset > INT32_MAX)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "softmax: q_offset %lld is out of range",
                        (long long)*q_offset);
    /* Past these bounds the mask no longer changes (every key allowed, or none);
     * clamping keeps i + q_offset + 1 far from overflow in the kernel. */
    if (*q_offset > Tk)
        *q_offset = Tk;
    if (*q_offset < -Tq)
        *q_offset = -Tq;
    return VKATTN_OK;
}

vkattn_status vk_softmax_record(vkattn_context *ctx, const softmax_call *c)
{
    vkattn_softmax_variant variant = c->variant;
    bool whole = device_caps_whole_subgroups(&ctx->vk.enabled);
    if (variant == VKATTN_SOFTMAX_AUTO)
        variant = ctx->info.subgroup_arithmetic && whole ? VKATTN_SOFTMAX_SUBGROUP
                                                         : VKATTN_SOFTMAX_SHARED;
    if (variant == VKATTN_SOFTMAX_SUBGROUP && !ctx->info.subgroup_arithmetic)
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED,
                        "softmax: the subgroup variant needs subgroup arithmetic, which %s lacks",
                        ctx->info.name);
    if (variant == VKATTN_SOFTMAX_SUBGROUP && !whole) {
        char why[256];
        device_caps_whole_subgroups_why(&ctx->vk.enabled, ctx->info.name, why, sizeof why);
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "softmax: the subgroup variant %s", why);
    }

    uint32_t workgroup, rows_per_workgroup, required_size = 0;
    if (variant == VKATTN_SOFTMAX_SUBGROUP) {
        bool required;
        uint32_t sg = kernel_subgroup_size(ctx, &required);
        if (sg == 0)
            sg = 1;
        workgroup = sg > SUBGROUP_VARIANT_INVOCATIONS ? sg : SUBGROUP_VARIANT_INVOCATIONS;
        rows_per_workgroup = workgroup / sg;
        required_size = required ? sg : 0;
    } else {
        workgroup = SHARED_VARIANT_WORKGROUP;
        rows_per_workgroup = 1;
    }
    /* Rows a multiple of 4 long are read and written as vec4. The subgroup
     * variant reads X through texels where the device prefers them and X has
     * a view (bf16 never does); the shared variant, the portable fallback,
     * always reads the storage buffer. */
    bool vec4 = c->Tk % 4 == 0;
    bool texels = variant == VKATTN_SOFTMAX_SUBGROUP && vk_prefers_texels(ctx) &&
                  (vec4 ? c->x->texels4 : c->x->texels);
    softmax_push push = {
        .rows = (uint32_t)c->rows,
        .Tq = c->Tq,
        .Tk = c->Tk,
        .rows_per_batch = c->rows_per_batch,
        .scale_log2e = (float)((double)c->scale * LOG2_E),
        .q_offset = c->q_offset,
        .rows_per_workgroup = rows_per_workgroup,
        .kv_row_base = c->kv_row_base,
        .rows_per_head = c->rows_per_head ? c->rows_per_head : 1,
        .heads = c->heads ? c->heads : 1,
        .window_left = c->has_window ? c->window_left : -1,
        .window_right = c->has_window ? c->window_right : -1,
    };
    vk_binding x = vk_bind(c->x, false);
    if (vec4)
        x.texels = c->x->texels4;
    vk_dispatch dispatch = {
        .key = {.shader = variant == VKATTN_SOFTMAX_SUBGROUP ? SHADER_SOFTMAX_SUBGROUP
                                                             : SHADER_SOFTMAX_SHARED,
                .subgroup_size = required_size,
                .spec_count = SM_SPEC_COUNT,
                .spec = {[SM_SPEC_WORKGROUP] = workgroup,
                         [SM_SPEC_X_DTYPE] = shader_dtype(c->x),
                         [SM_SPEC_CAUSAL] = c->causal,
                         [SM_SPEC_HAS_KV_LEN] = c->kv_len != NULL,
                         [SM_SPEC_X_TEXELS] = texels,
                         [SM_SPEC_VEC4] = vec4,
                         [SM_SPEC_HAS_SINKS] = c->sinks != NULL,
                         [SM_SPEC_MARK_MASKED] = c->mark_masked,
                         [SM_SPEC_MARK_NEG_INF] = c->mark_masked && c->neg_inf_masked,
                         [SM_SPEC_HAS_WINDOW] = c->has_window,
                         [SM_SPEC_SINK_ALIBI] = c->sinks && c->alibi}},
        .bindings = {x, vk_bind(c->kv_len, false), vk_bind(c->y, true), vk_bind(c->sinks, false),
                     vk_bind(c->sinks ? c->alibi : NULL, false)},
        .binding_count = 5,
        .push = &push,
        .push_bytes = sizeof push,
    };
    vkattn_status s = grid_for(ctx, div_up(c->rows, rows_per_workgroup), "softmax", dispatch.groups);
    if (s != VKATTN_OK)
        return s;
    return vk_cmd_dispatch(ctx, &dispatch);
}

vkattn_status vkattn_softmax(vkattn_context *ctx, const vkattn_softmax_desc *desc,
                             const vkattn_tensor *x, vkattn_tensor *y)
{
    static const vkattn_softmax_desc defaults;
    if (!ctx)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    const vkattn_softmax_desc *d = desc ? desc : &defaults;
    int64_t q_offset = 0;
    vkattn_status s = check_args(ctx, d, x, y, &q_offset);
    if (s != VKATTN_OK)
        return s;
    float scale = d->scale == 0.0f ? 1.0f : d->scale;
    wide_output out;
    if ((s = wide_output_begin(ctx, y, &out)) != VKATTN_OK)
        return s;
    if (ctx->backend == VKATTN_BACKEND_CPU) {
        vkattn_softmax_desc resolved = *d;
        resolved.scale = scale;
        return wide_output_end(ctx, &out, cpu_softmax(&resolved, q_offset, x, out.write));
    }
    int64_t Tk = x->shape[x->ndim - 1];
    uint64_t rows = x->count / (uint64_t)Tk;
    softmax_call call = {
        .x = x, .y = out.write, .kv_len = d->kv_len,
        .rows = rows,
        .Tq = (uint32_t)x->shape[x->ndim - 2],
        .Tk = (uint32_t)Tk,
        .rows_per_batch = (uint32_t)(rows / (uint64_t)(x->ndim >= 3 ? x->shape[0] : 1)),
        .scale = scale,
        .causal = d->causal,
        .q_offset = (int32_t)q_offset,
        .variant = d->variant,
    };
    return wide_output_end(ctx, &out, vk_softmax_record(ctx, &call));
}
