/* The fused attention path: variant choice, tiling and key splits from the
 * device's limits, dispatch of the fused kernel and, where keys are split, of
 * the combine pass. */
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
    AR_SPEC_WORKGROUP = 0, AR_SPEC_KB, AR_SPEC_D, AR_SPEC_DV, AR_SPEC_VEC4, AR_SPEC_CAUSAL,
    AR_SPEC_HAS_KV_LEN, AR_SPEC_SPLIT, AR_SPEC_TM, AR_SPEC_UNROLL, AR_SPEC_COUNT
};
enum tiled_spec { /* constant_id values in attention_tiled.comp */
    AT_SPEC_WORKGROUP = 0, AT_SPEC_TPR, AT_SPEC_BC, AT_SPEC_D, AT_SPEC_DV, AT_SPEC_CAUSAL,
    AT_SPEC_HAS_KV_LEN, AT_SPEC_SPLIT, AT_SPEC_Q_DTYPE, AT_SPEC_K_DTYPE, AT_SPEC_V_DTYPE,
    AT_SPEC_COUNT
};
enum combine_spec { /* constant_id values in attention_combine.comp */
    AC_SPEC_WORKGROUP = 0, AC_SPEC_DV, AC_SPEC_VEC4, AC_SPEC_COUNT
};

/* Head sizes the fused kernels keep in registers. */
#define FUSED_MAX_HEAD_SIZE 256
/* Rows variant: one SIMD vector of lavapipe per workgroup. */
#define ROWS_WORKGROUP 8
/* Tiled variant: about this many invocations per workgroup, at most this many
 * keys per tile (the per-invocation score registers). On CPU devices, where it
 * runs only when forced (tests), tiles are small: lavapipe lowers barriers to
 * LLVM coroutines, whose frame building takes seconds for 32-key tiles (5.7 s
 * for D=64 against 0.7 s with 8). */
#define TILED_WORKGROUP 128
#define TILED_MAX_TILE 32
#define TILED_MAX_TILE_CPU 8
/* Keys are split until this many workgroups run (enough to fill the cores of
 * a CPU device or the compute units of a large GPU), but no split gets fewer
 * than MIN_KEYS_PER_SPLIT keys. */
#define ROWS_TARGET_WORKGROUPS 64
#define TILED_TARGET_WORKGROUPS 512
#define MIN_KEYS_PER_SPLIT 64
#define COMBINE_WORKGROUP 64

typedef struct fused_plan {
    vkattn_fused_variant variant;
    uint32_t workgroup;
    uint32_t rows_per_workgroup;  /* rows: 8 (one per invocation); tiled: workgroup / tpr */
    uint32_t kb, tm;              /* rows: keys per step, rows per invocation */
    bool unroll;                  /* rows: head-dimension loops unrolled */
    uint32_t tpr, bc;             /* tiled: invocations per row, keys per tile */
    uint32_t blocks;              /* workgroups per split */
    uint32_t splits, keys_per_split;
    bool vec4;
    char fallback[320];           /* why AUTO did not take its first choice ("" if it did) */
} fused_plan;

static uint64_t u64_min(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint32_t pow2_floor(uint64_t v) { uint32_t p = 1; while ((uint64_t)p * 2 <= v) p *= 2; return p; }
static uint32_t pow2_ceil(uint64_t v) { uint32_t p = 1; while (p < v) p *= 2; return p; }

static bool plan_rows(vkattn_context *ctx, const attention_call *c, fused_plan *plan, char *why,
                      size_t why_size)
{
    const attention_dims *d = &c->dims;
    (void)ctx;
    plan->vec4 = d->D % 4 == 0 && d->Dv % 4 == 0;
    const vkattn_tensor *in[3] = {c->q, c->k, c->v};
    for (int i = 0; i < 3; i++) {
        if (in[i]->dtype == VKATTN_DTYPE_BF16) {
            snprintf(why, why_size, "the rows kernel reads Q, K and V through texel buffers, "
                     "and %c is bf16, which has no texel format", "QKV"[i]);
            return false;
        }
        if (!(plan->vec4 ? in[i]->texels4 : in[i]->texels)) {
            snprintf(why, why_size, "the rows kernel reads Q, K and V through texel buffers, "
                     "which this device does not offer for them (format or maxTexelBufferElements)");
            return false;
        }
    }
    plan->workgroup = ROWS_WORKGROUP;
    /* Measured on lavapipe, B=1 H=8 T=2048 causal: the kernel is bound by its
     * K/V gathers, which TM rows per invocation share. D=64: 177 ms with one row
     * and 4 keys per step, 87 ms with 4 rows and 4 keys; D=128: 350 ms against
     * 198 ms with 4 rows and 1 key (more keys, or 8 rows, spill and compile
     * for seconds). Past 128 the unrolled kernel takes seconds to compile
     * (60 s at D=256 with 4 rows): one row, loops. */
    uint64_t width = (uint64_t)(d->D > d->Dv ? d->D : d->Dv);
    plan->unroll = width <= 128;
    plan->tm = plan->unroll ? 4 : 1;
    plan->kb = width <= 64 ? 4 : 1;
    uint64_t rows = (uint64_t)(d->H / d->Hkv) * (uint64_t)d->Tq;
    while (plan->tm > rows) /* decoding: do not compute copies of the last row */
        plan->tm /= 2;
    plan->rows_per_workgroup = plan->workgroup * plan->tm;
    return true;
}

static bool plan_tiled(vkattn_context *ctx, const attention_call *c, fused_plan *plan, char *why,
                       size_t why_size)
{
    const attention_dims *d = &c->dims;
    const vkattn_device_info *info = &ctx->info;
    if (!ctx->vk.subgroup_shuffle || info->subgroup_size == 0) {
        snprintf(why, why_size, "the tiled kernel needs subgroup shuffles, which %s lacks",
                 info->name);
        return false;
    }
    uint64_t width = (uint64_t)(d->D > d->Dv ? d->D : d->Dv);
    /* About 16 dimensions per invocation, a row within one subgroup. */
    uint32_t tpr = pow2_floor(width / 16 ? width / 16 : 1);
    uint32_t max_tpr = info->subgroup_size < 16 ? pow2_floor(info->subgroup_size) : 16;
    plan->tpr = tpr < max_tpr ? tpr : max_tpr;
    uint64_t rows = (uint64_t)(d->H / d->Hkv) * (uint64_t)d->Tq;
    uint32_t br = TILED_WORKGROUP / plan->tpr;
    if (br * plan->tpr > info->max_workgroup_invocations)
        br = info->max_workgroup_invocations / plan->tpr;
    if (br > pow2_ceil(rows))
        br = pow2_ceil(rows); /* decoding: do not idle most of the workgroup */
    plan->rows_per_workgroup = br;
    plan->workgroup = br * plan->tpr;
    uint64_t tile_bytes_per_key = 4 * (uint64_t)(d->D + d->Dv);
    uint64_t bc = info->shared_memory_bytes / tile_bytes_per_key;
    uint64_t max_tile = info->type == VKATTN_DEVICE_TYPE_CPU ? TILED_MAX_TILE_CPU : TILED_MAX_TILE;
    bc = bc > max_tile ? max_tile : bc / 4 * 4;
    if (bc < 4) {
        snprintf(why, why_size, "K and V tiles of head sizes %lld and %lld do not fit in %u bytes "
                 "of shared memory", (long long)d->D, (long long)d->Dv, info->shared_memory_bytes);
        return false;
    }
    plan->bc = (uint32_t)bc;
    plan->vec4 = d->Dv % 4 == 0; /* for the combine pass */
    return true;
}

/* Fills the plan, or says in `why` why the fused path does not apply. */
static bool make_plan(vkattn_context *ctx, const attention_call *c, fused_plan *plan, char *why,
                      size_t why_size)
{
    const attention_dims *d = &c->dims;
    vkattn_fused_variant variant = c->fused_variant;
    if (variant == VKATTN_FUSED_AUTO)
        variant = vk_prefers_texels(ctx) ? VKATTN_FUSED_ROWS : VKATTN_FUSED_TILED;
    if (d->D > FUSED_MAX_HEAD_SIZE || d->Dv > FUSED_MAX_HEAD_SIZE) {
        snprintf(why, why_size, "head sizes %lld and %lld: the fused kernels take up to %d",
                 (long long)d->D, (long long)d->Dv, FUSED_MAX_HEAD_SIZE);
        return false;
    }
    plan->variant = variant;
    plan->fallback[0] = '\0';
    bool ok = variant == VKATTN_FUSED_ROWS ? plan_rows(ctx, c, plan, why, why_size)
                                           : plan_tiled(ctx, c, plan, why, why_size);
    /* AUTO: where the rows kernel cannot read the inputs (bf16 has no texel
     * format), the tiled kernel, which reads storage buffers, still can. */
    if (!ok && variant == VKATTN_FUSED_ROWS && c->fused_variant == VKATTN_FUSED_AUTO) {
        snprintf(plan->fallback, sizeof plan->fallback, "%s", why);
        variant = plan->variant = VKATTN_FUSED_TILED;
        ok = plan_tiled(ctx, c, plan, why, why_size);
        if (!ok) {
            char tiled_why[256];
            snprintf(tiled_why, sizeof tiled_why, "%s", why);
            snprintf(why, why_size, "%s; and %s", plan->fallback, tiled_why);
        }
    }
    if (!ok)
        return false;

    uint64_t rows = (uint64_t)(d->H / d->Hkv) * (uint64_t)d->Tq;
    plan->blocks = div_up(rows, plan->rows_per_workgroup);
    uint64_t workgroups = (uint64_t)(d->B * d->Hkv) * plan->blocks;
    uint64_t target = variant == VKATTN_FUSED_ROWS ? ROWS_TARGET_WORKGROUPS : TILED_TARGET_WORKGROUPS;
    uint64_t splits = c->kv_splits;
    if (splits == 0)
        splits = u64_min(div_up(target, workgroups), div_up((uint64_t)d->Tk, MIN_KEYS_PER_SPLIT));
    splits = u64_min(splits ? splits : 1, (uint64_t)d->Tk);
    /* Whole steps of keys per split; the count of splits follows from that. */
    uint32_t step = variant == VKATTN_FUSED_ROWS ? plan->kb : plan->bc;
    uint64_t keys = div_up(div_up((uint64_t)d->Tk, splits), step) * step;
    plan->keys_per_split = (uint32_t)keys;
    plan->splits = div_up((uint64_t)d->Tk, keys);

    uint64_t grid_x = variant == VKATTN_FUSED_ROWS
                          ? div_up(div_up(rows, plan->tm) * (uint64_t)plan->splits, plan->workgroup)
                          : (uint64_t)plan->blocks * plan->splits;
    if (grid_x > ctx->vk.max_workgroup_count[0] ||
        (uint64_t)d->Hkv > ctx->vk.max_workgroup_count[1] ||
        (uint64_t)d->B > ctx->vk.max_workgroup_count[2]) {
        snprintf(why, why_size, "a %llux%lldx%lld grid exceeds the device's limits",
                 (unsigned long long)grid_x, (long long)d->Hkv, (long long)d->B);
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

static vk_dispatch fused_dispatch(const attention_call *c, const fused_plan *plan,
                                  vkattn_tensor *out, bool split)
{
    const attention_dims *d = &c->dims;
    uint64_t rows = (uint64_t)(d->H / d->Hkv) * (uint64_t)d->Tq;
    vk_dispatch dispatch = {
        .bindings = {vk_bind(c->q, false), vk_bind(c->k, false), vk_bind(c->v, false),
                     vk_bind(out, true), vk_bind(c->kv_len, false)},
        .binding_count = 5,
        .groups = {0, (uint32_t)d->Hkv, (uint32_t)d->B},
    };
    uint32_t *spec = dispatch.key.spec;
    if (plan->variant == VKATTN_FUSED_ROWS) {
        if (plan->vec4)
            for (int i = 0; i < 3; i++)
                dispatch.bindings[i].texels = (i == 0 ? c->q : i == 1 ? c->k : c->v)->texels4;
        dispatch.key.shader = SHADER_ATTENTION_ROWS;
        dispatch.key.spec_count = AR_SPEC_COUNT;
        spec[AR_SPEC_WORKGROUP] = plan->workgroup;
        spec[AR_SPEC_KB] = plan->kb;
        spec[AR_SPEC_D] = (uint32_t)d->D;
        spec[AR_SPEC_DV] = (uint32_t)d->Dv;
        spec[AR_SPEC_VEC4] = plan->vec4;
        spec[AR_SPEC_CAUSAL] = d->causal;
        spec[AR_SPEC_HAS_KV_LEN] = c->kv_len != NULL;
        spec[AR_SPEC_SPLIT] = split;
        spec[AR_SPEC_TM] = plan->tm;
        spec[AR_SPEC_UNROLL] = plan->unroll;
        dispatch.groups[0] = div_up(div_up(rows, plan->tm) * (uint64_t)plan->splits, plan->workgroup);
    } else {
        dispatch.key.shader = SHADER_ATTENTION_TILED;
        dispatch.key.spec_count = AT_SPEC_COUNT;
        spec[AT_SPEC_WORKGROUP] = plan->workgroup;
        spec[AT_SPEC_TPR] = plan->tpr;
        spec[AT_SPEC_BC] = plan->bc;
        spec[AT_SPEC_D] = (uint32_t)d->D;
        spec[AT_SPEC_DV] = (uint32_t)d->Dv;
        spec[AT_SPEC_CAUSAL] = d->causal;
        spec[AT_SPEC_HAS_KV_LEN] = c->kv_len != NULL;
        spec[AT_SPEC_SPLIT] = split;
        spec[AT_SPEC_Q_DTYPE] = shader_dtype(c->q);
        spec[AT_SPEC_K_DTYPE] = shader_dtype(c->k);
        spec[AT_SPEC_V_DTYPE] = shader_dtype(c->v);
        dispatch.groups[0] = plan->blocks * plan->splits;
    }
    return dispatch;
}

vkattn_status vk_attention_fused(vkattn_context *ctx, const attention_call *c)
{
    const attention_dims *d = &c->dims;
    fused_plan plan;
    char why[256];
    if (!make_plan(ctx, c, &plan, why, sizeof why))
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "attention: fused path: %s", why);
    if (plan.fallback[0])
        ctx_log(ctx, VKATTN_LOG_DEBUG, "attention: %s; taking the tiled fused variant",
                plan.fallback);

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

    vk_dispatch attend = fused_dispatch(c, &plan, split ? partial : c->o, split);
    attend.push = &push;
    attend.push_bytes = sizeof push;
    vkattn_status s = vk_cmd_dispatch(ctx, &attend);
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
