/* The fused attention path: variant choice, tiling, key splits, dispatch of the
 * fused kernel and (for split keys) the combine pass. */
#include "ops_common.h"

#include <stdio.h>

/* Keep in sync with shaders/attention_push.glsl. */
typedef struct attention_push {
    uint32_t Tq, Tk, Hkv, group;
    uint32_t q_sb, q_sh, q_ss;
    uint32_t k_sb, k_sh, k_ss;
    uint32_t v_sb, v_sh, v_ss;
    uint32_t o_sb, o_sh, o_ss;
    int32_t q_offset;
    float scale_log2e;
    uint32_t splits, keys_per_split;
    uint32_t ml_offset;
} attention_push;
_Static_assert(sizeof(attention_push) <= VKATTN_PUSH_CONSTANT_BYTES, "push constants too large");

enum rows_spec { /* constant_id values in attention_rows.comp */
    AR_SPEC_WORKGROUP = 0, AR_SPEC_KB, AR_SPEC_D, AR_SPEC_DV, AR_SPEC_VEC4,
    AR_SPEC_CAUSAL, AR_SPEC_HAS_KV_LEN, AR_SPEC_SPLIT, AR_SPEC_COUNT
};
enum combine_spec { /* constant_id values in attention_combine.comp */
    AC_SPEC_WORKGROUP = 0, AC_SPEC_DV, AC_SPEC_VEC4, AC_SPEC_COUNT
};

/* Head sizes the fused kernels keep in registers. */
#define FUSED_MAX_HEAD_SIZE 256
/* The rows variant: one SIMD vector per workgroup on lavapipe. */
#define ROWS_WORKGROUP 8
/* Split the keys until this many invocations run (a few hundred SIMD lanes keep
 * every core of a CPU device busy), but give no split fewer keys than this. */
#define ROWS_TARGET_INVOCATIONS 512
#define MIN_KEYS_PER_SPLIT 64
#define COMBINE_WORKGROUP 64

typedef struct fused_plan {
    vkattn_fused_variant variant;
    uint32_t kb, workgroup;
    uint32_t splits, keys_per_split;
    bool vec4;
} fused_plan;

static uint64_t u64_min(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Fills the plan, or says in `why` why the fused path does not apply. */
static bool make_plan(vkattn_context *ctx, const attention_call *c, fused_plan *plan, char *why,
                      size_t why_size)
{
    const attention_dims *d = &c->dims;
    vkattn_fused_variant variant = c->fused_variant;
    if (variant == VKATTN_FUSED_AUTO)
        variant = vk_prefers_texels(ctx) ? VKATTN_FUSED_ROWS : VKATTN_FUSED_TILED;
    if (variant == VKATTN_FUSED_TILED) {
        snprintf(why, why_size, "the tiled fused kernel is not available yet");
        return false;
    }
    if (d->D > FUSED_MAX_HEAD_SIZE || d->Dv > FUSED_MAX_HEAD_SIZE) {
        snprintf(why, why_size, "head sizes %lld and %lld: the fused kernels take up to %d",
                 (long long)d->D, (long long)d->Dv, FUSED_MAX_HEAD_SIZE);
        return false;
    }
    plan->vec4 = d->D % 4 == 0 && d->Dv % 4 == 0;
    const vkattn_tensor *in[3] = {c->q, c->k, c->v};
    for (int i = 0; i < 3; i++)
        if (!(plan->vec4 ? in[i]->texels4 : in[i]->texels)) {
            snprintf(why, why_size, "the rows kernel reads Q, K and V through texel buffers, "
                     "which this device does not offer for them (format or maxTexelBufferElements)");
            return false;
        }
    if ((uint64_t)d->Hkv > ctx->vk.max_workgroup_count[1] ||
        (uint64_t)d->B > ctx->vk.max_workgroup_count[2]) {
        snprintf(why, why_size, "%lld kv heads x %lld batch entries exceed the device's grid",
                 (long long)d->Hkv, (long long)d->B);
        return false;
    }
    plan->variant = variant;
    plan->workgroup = ROWS_WORKGROUP;
    /* Four keys per step measured best on lavapipe for head sizes up to 128
     * (D=64: 180 ms against 200 for one key, B=1 H=8 T=2048 causal); past that
     * one key keeps the unrolled kernel small. */
    plan->kb = d->D <= 128 && d->Dv <= 128 ? 4 : 1;
    uint64_t rows = (uint64_t)(d->H / d->Hkv) * (uint64_t)d->Tq;
    uint64_t invocations = (uint64_t)(d->B * d->Hkv) * rows;
    uint64_t splits = c->kv_splits;
    if (splits == 0)
        splits = u64_min(div_up(ROWS_TARGET_INVOCATIONS, invocations),
                         div_up((uint64_t)d->Tk, MIN_KEYS_PER_SPLIT));
    splits = u64_min(splits ? splits : 1, (uint64_t)d->Tk);
    /* Whole steps of keys per split; the count of splits follows from that. */
    uint64_t keys = div_up(div_up((uint64_t)d->Tk, splits), plan->kb) * plan->kb;
    plan->keys_per_split = (uint32_t)keys;
    plan->splits = div_up((uint64_t)d->Tk, keys);
    if (div_up(rows * plan->splits, plan->workgroup) > ctx->vk.max_workgroup_count[0]) {
        snprintf(why, why_size, "%llu rows x %u splits exceed the device's grid",
                 (unsigned long long)rows, plan->splits);
        return false;
    }
    return true;
}

bool vk_attention_fused_applies(vkattn_context *ctx, const attention_call *c, char *why,
                                size_t why_size)
{
    fused_plan plan;
    return make_plan(ctx, c, &plan, why, why_size);
}

/* Element strides (batch, head, sequence) of a tensor in the call's layout. */
static void strides(vkattn_layout layout, int64_t heads, int64_t T, int64_t width, uint32_t *out)
{
    bool bshd = layout == VKATTN_LAYOUT_BSHD;
    out[0] = (uint32_t)(heads * T * width);
    out[1] = (uint32_t)(bshd ? width : T * width);
    out[2] = (uint32_t)(bshd ? heads * width : width);
}

vkattn_status vk_attention_fused(vkattn_context *ctx, const attention_call *c)
{
    const attention_dims *d = &c->dims;
    fused_plan plan;
    char why[256];
    if (!make_plan(ctx, c, &plan, why, sizeof why))
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "attention: fused path: %s", why);

    bool split = plan.splits > 1;
    uint64_t rows = (uint64_t)(d->H / d->Hkv) * (uint64_t)d->Tq;
    uint64_t records = (uint64_t)(d->B * d->Hkv) * plan.splits * rows;
    uint32_t dv4 = div_up((uint64_t)d->Dv, 4);
    vkattn_tensor *partial = NULL;
    if (split) {
        vkattn_status s = scratch_get(ctx, SCRATCH_ATTN_PARTIAL, records * (4 * dv4 + 2), &partial);
        if (s != VKATTN_OK)
            return s;
    }

    attention_push push = {
        .Tq = (uint32_t)d->Tq, .Tk = (uint32_t)d->Tk, .Hkv = (uint32_t)d->Hkv,
        .group = (uint32_t)(d->H / d->Hkv),
        .q_offset = (int32_t)d->q_offset,
        .scale_log2e = (float)((double)d->scale * LOG2_E),
        .splits = plan.splits,
        .keys_per_split = plan.keys_per_split,
        .ml_offset = (uint32_t)(records * 4 * dv4),
    };
    strides(d->layout, d->H, d->Tq, d->D, &push.q_sb);
    strides(d->layout, d->Hkv, d->Tk, d->D, &push.k_sb);
    strides(d->layout, d->Hkv, d->Tk, d->Dv, &push.v_sb);
    strides(d->layout, d->H, d->Tq, d->Dv, &push.o_sb);

    vk_binding q = vk_bind(c->q, false), k = vk_bind(c->k, false), v = vk_bind(c->v, false);
    if (plan.vec4)
        q.texels = c->q->texels4, k.texels = c->k->texels4, v.texels = c->v->texels4;
    vk_dispatch rows_dispatch = {
        .key = {.shader = SHADER_ATTENTION_ROWS,
                .spec_count = AR_SPEC_COUNT,
                .spec = {[AR_SPEC_WORKGROUP] = plan.workgroup, [AR_SPEC_KB] = plan.kb, [AR_SPEC_D] = (uint32_t)d->D,
                         [AR_SPEC_DV] = (uint32_t)d->Dv, [AR_SPEC_VEC4] = plan.vec4,
                         [AR_SPEC_CAUSAL] = d->causal, [AR_SPEC_HAS_KV_LEN] = c->kv_len != NULL,
                         [AR_SPEC_SPLIT] = split}},
        .bindings = {q, k, v, vk_bind(split ? partial : c->o, true), vk_bind(c->kv_len, false)},
        .binding_count = 5,
        .push = &push,
        .push_bytes = sizeof push,
        .groups = {div_up(rows * plan.splits, plan.workgroup),
                   (uint32_t)d->Hkv, (uint32_t)d->B},
    };
    vkattn_status s = vk_cmd_dispatch(ctx, &rows_dispatch);
    if (s != VKATTN_OK || !split)
        return s;

    vk_dispatch combine = {
        .key = {.shader = SHADER_ATTENTION_COMBINE,
                .spec_count = AC_SPEC_COUNT,
                .spec = {[AC_SPEC_WORKGROUP] = COMBINE_WORKGROUP, [AC_SPEC_DV] = (uint32_t)d->Dv,
                         [AC_SPEC_VEC4] = plan.vec4}},
        .bindings = {vk_bind(partial, false), [3] = vk_bind(c->o, true)},
        .binding_count = 4,
        .push = &push,
        .push_bytes = sizeof push,
        .groups = {div_up(rows * dv4, COMBINE_WORKGROUP), (uint32_t)d->Hkv, (uint32_t)d->B},
    };
    return vk_cmd_dispatch(ctx, &combine);
}
