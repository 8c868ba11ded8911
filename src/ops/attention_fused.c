/* The fused attention path: the table of fused variants and the one function
 * that chooses from it, key splits from the device's size, dispatch of the
 * fused kernel and, where keys are split, of the combine pass. */
#include "attention_fused.h"

#include <stdio.h>
#include <string.h>

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
    int32_t window_left, window_right;
    float softcap_log2e;
    uint32_t mask_sb, mask_sh, mask_si;
    uint32_t block_size, max_blocks;
    uint32_t q_rows, k_rows;
    uint32_t block_shift;
} attention_push;
_Static_assert(sizeof(attention_push) <= VKATTN_PUSH_CONSTANT_BYTES, "push constants too large");

enum combine_spec { /* constant_id values in attention_combine.comp */
    AC_SPEC_WORKGROUP = 0, AC_SPEC_DV, AC_SPEC_VEC4, AC_SPEC_SPLIT_LANES
};

/* No split gets fewer keys than this. */
#define MIN_KEYS_PER_SPLIT 64
#define COMBINE_WORKGROUP 64
/* The combine pass gives each invocation about this many of a row's splits
 * (the loads one invocation issues at once), with up to COMBINE_MAX_LANES
 * invocations sharing a row's output columns. */
#define COMBINE_SPLITS_PER_LANE 8
#define COMBINE_MAX_LANES 16

/* The combine pass's layout for `splits` splits of `columns` output columns
 * (a row's four values each): lanes that share a column's splits (a decode's
 * 128 splits get 16 lanes of 8, a prefill's few one lane), its workgroup
 * within the device's limit, and the grid's x. */
typedef struct combine_layout {
    uint32_t lanes, workgroup;
    uint64_t groups_x;
} combine_layout;

static combine_layout combine_layout_for(const vkattn_context *ctx, uint32_t splits,
                                         uint64_t columns)
{
    combine_layout l = {.lanes = 1, .workgroup = COMBINE_WORKGROUP};
    while (l.lanes < COMBINE_MAX_LANES && 2 * l.lanes * COMBINE_SPLITS_PER_LANE <= splits &&
           32 * l.lanes <= ctx->info.max_workgroup_invocations)
        l.lanes *= 2;
    if (16 * l.lanes > l.workgroup)
        l.workgroup = 16 * l.lanes;
    l.groups_x = (columns + l.workgroup / l.lanes - 1) / (l.workgroup / l.lanes);
    return l;
}

/* Every fused kernel. Each row's file says what it needs and what it is good at. */
static const fused_variant_row *const fused_variants[] = {
    &fused_rows_variant,
    &fused_tiled_variant,
    &fused_decode_variant,
    &fused_coopmat_variant,
    &fused_coopmat_emulated_variant,
    &fused_coopmat_workgroup_variant,
    &fused_coopmat_workgroup_emulated_variant,
};
#define FUSED_VARIANT_COUNT (sizeof fused_variants / sizeof fused_variants[0])

static uint64_t u64_min(uint64_t a, uint64_t b) { return a < b ? a : b; }

static const fused_variant_row *variant_row(vkattn_fused_variant v)
{
    for (size_t i = 0; i < FUSED_VARIANT_COUNT; i++)
        if (fused_variants[i]->variant == v)
            return fused_variants[i];
    return NULL;
}

int fused_rank_never(const vkattn_context *ctx, const attention_call *c)
{
    (void)ctx, (void)c;
    return 0;
}

const char *vkattn_fused_variant_name(vkattn_fused_variant variant)
{
    if (variant == VKATTN_FUSED_AUTO)
        return "auto";
    const fused_variant_row *row = variant_row(variant);
    return row ? row->name : "?";
}

uint32_t attention_variant_bits(const attention_call *c)
{
    const attention_variants *v = &c->dims.var;
    const vkattn_tensor *mask = v->mask;
    return (v->has_window ? VAR_WINDOW : 0) | (v->softcap != 0.0f ? VAR_SOFTCAP : 0) |
           (v->alibi ? VAR_ALIBI : 0) | (mask ? VAR_MASK : 0) | (v->sinks ? VAR_SINKS : 0) |
           (v->cu_q ? VAR_PACKED_Q : 0) | (v->cu_k ? VAR_PACKED_K : 0) |
           (v->block_table ? VAR_PAGED : 0) | (c->dims.fixed_q_offset ? 0 : VAR_SEQ_Q_OFFSET) |
           (mask && mask->dtype == VKATTN_DTYPE_F16 ? VAR_MASK_F16 : 0) |
           (mask && mask->dtype == VKATTN_DTYPE_BF16 ? VAR_MASK_BF16 : 0) |
           (c->kv_len ? VAR_KV_LEN : 0) | (mask && v->mask_per_row ? VAR_MASK_PER_ROW : 0);
}

uint32_t attention_bf16_inputs(const attention_call *c)
{
    const vkattn_tensor *in[3] = {c->q, c->k, c->v};
    uint32_t bits = 0;
    for (int i = 0; i < 3; i++)
        bits |= (uint32_t)(in[i]->dtype == VKATTN_DTYPE_BF16) << i;
    return bits;
}

bool attention_16bit_inputs(const attention_call *c, const char *name, char *why,
                            size_t why_size)
{
    const vkattn_tensor *in[3] = {c->q, c->k, c->v};
    for (int i = 0; i < 3; i++)
        if (in[i]->dtype != VKATTN_DTYPE_F16 && in[i]->dtype != VKATTN_DTYPE_BF16) {
            snprintf(why, why_size, "%s takes f16 or bf16 Q, K and V (got %s, %s, %s)", name,
                     dtype_name(c->q->dtype), dtype_name(c->k->dtype), dtype_name(c->v->dtype));
            return false;
        }
    return true;
}

/* A window side that excludes no key of any row is no bound at all (-1): every
 * position lies within |q_offset| + Tq of every key, a packed or paged
 * sequence's own offset (Tk_b - Tq_b) within Tq + Tk. Making such sides -1 keeps
 * the kernels' int arithmetic (pos + right + 1) from overflowing. */
int32_t attention_window_side(int32_t side, const attention_dims *d)
{
    int64_t reach = 2 * (d->Tk + d->Tq) + (d->q_offset < 0 ? -d->q_offset : d->q_offset);
    return side < 0 || (int64_t)side > reach ? -1 : side;
}

/* Splits, grid and limits, once the variant has planned its tiles. */
static bool finish_plan(vkattn_context *ctx, const attention_call *c, const fused_variant_row *row,
                        fused_plan *plan, char *why, size_t why_size)
{
    const attention_dims *d = &c->dims;
    plan->target_workgroups = tuning_value(ctx, row->variant, KNOB_TARGET, plan->target_workgroups);
    plan->blocks = div_up(fused_rows(d), plan->rows_per_workgroup);
    uint64_t workgroups = (uint64_t)(d->B * d->Hkv) * plan->blocks;
    uint64_t splits = c->kv_splits;
    if (splits == 0)
        splits = u64_min(div_up(plan->target_workgroups, workgroups),
                         div_up((uint64_t)d->Tk, MIN_KEYS_PER_SPLIT));
    splits = u64_min(splits ? splits : 1, (uint64_t)d->Tk);
    /* Whole steps of keys per split; the count of splits follows from that. */
    uint64_t keys = div_up(div_up((uint64_t)d->Tk, splits), plan->step) * (uint64_t)plan->step;
    if (plan->max_keys_per_split) {
        uint64_t most = plan->max_keys_per_split / plan->step * (uint64_t)plan->step;
        keys = u64_min(keys, most ? most : plan->step); /* more splits than asked, if need be */
    }
    plan->keys_per_split = (uint32_t)keys;
    plan->splits = div_up((uint64_t)d->Tk, keys);

    vk_dispatch probe = {0};
    row->specialize(c, plan, plan->splits > 1, &probe);
    /* The kernel's grid, and the combine pass's where keys are split. */
    uint64_t x = probe.groups[0];
    if (plan->splits > 1) {
        combine_layout combine = combine_layout_for(ctx, plan->splits,
                                                    fused_rows(d) * div_up((uint64_t)d->Dv, 4));
        if (combine.groups_x > x)
            x = combine.groups_x;
    }
    if (x > ctx->vk.max_workgroup_count[0] ||
        (uint64_t)d->Hkv > ctx->vk.max_workgroup_count[1] ||
        (uint64_t)d->B > ctx->vk.max_workgroup_count[2]) {
        snprintf(why, why_size, "a %llux%lldx%lld grid exceeds the device's limits",
                 (unsigned long long)x, (long long)d->Hkv, (long long)d->B);
        return false;
    }
    return true;
}

static bool plan_variant(vkattn_context *ctx, const attention_call *c, const fused_variant_row *row,
                         fused_plan *plan, char *why, size_t why_size)
{
    memset(plan, 0, sizeof *plan);
    return row->plan(ctx, c, plan, why, why_size) &&
           finish_plan(ctx, c, row, plan, why, why_size);
}

/* The one place a fused variant is chosen: the forced one, or the variant of
 * highest rank whose planner accepts the call. `why` says why none can run. */
static const fused_variant_row *choose(vkattn_context *ctx, const attention_call *c,
                                       fused_plan *plan, char *why, size_t why_size)
{
    if (c->fused_variant != VKATTN_FUSED_AUTO) {
        const fused_variant_row *row = variant_row(c->fused_variant);
        if (!row) {
            snprintf(why, why_size, "fused variant %d does not exist", (int)c->fused_variant);
            return NULL;
        }
        return plan_variant(ctx, c, row, plan, why, why_size) ? row : NULL;
    }
    bool tried[FUSED_VARIANT_COUNT] = {false};
    snprintf(why, why_size, "no fused variant applies");
    for (;;) {
        size_t best = FUSED_VARIANT_COUNT;
        int best_rank = 0;
        for (size_t i = 0; i < FUSED_VARIANT_COUNT; i++) {
            int rank = tried[i] ? 0 : fused_variants[i]->auto_rank(ctx, c);
            if (rank > best_rank)
                best = i, best_rank = rank;
        }
        if (best == FUSED_VARIANT_COUNT)
            return NULL; /* `why` holds the last planner's reason */
        tried[best] = true;
        if (plan_variant(ctx, c, fused_variants[best], plan, why, why_size))
            return fused_variants[best];
        ctx_log(ctx, VKATTN_LOG_DEBUG, "attention: fused variant %s: %s",
                fused_variants[best]->name, why);
    }
}

bool vk_attention_fused_choice(vkattn_context *ctx, const attention_call *c,
                               vkattn_attention_choice *choice, char *why, size_t why_size)
{
    fused_plan plan;
    const fused_variant_row *row = choose(ctx, c, &plan, why, why_size);
    if (row) {
        choice->fused_variant = row->variant;
        choice->kv_splits = plan.splits;
        choice->weights_dtype = plan.weights_dtype;
    }
    return row != NULL;
}

/* Element strides (batch, head, sequence) of a tensor in the call's layout. */
static void strides(vkattn_layout layout, int64_t heads, int64_t T, int64_t width, uint32_t *out)
{
    bool bshd = layout == VKATTN_LAYOUT_BSHD;
    out[0] = (uint32_t)(heads * T * width);
    out[1] = (uint32_t)(bshd ? width : T * width);
    out[2] = (uint32_t)(bshd ? heads * width : width);
}

/* log2 of a power-of-two block size (the kernels shift), else 32 (they divide). */
static uint32_t block_shift(uint64_t block_size)
{
    for (uint32_t s = 0; s < 32; s++)
        if ((uint64_t)1 << s == block_size)
            return s;
    return 32;
}

/* Strides of a packed or paged tensor: (row, head, width) with no batch stride. */
static void packed_strides(int64_t heads, int64_t width, uint32_t *out)
{
    out[0] = 0;
    out[1] = (uint32_t)width;
    out[2] = (uint32_t)(heads * width);
}

vkattn_status vk_attention_fused(vkattn_context *ctx, const attention_call *c)
{
    const attention_dims *d = &c->dims;
    fused_plan plan;
    char why[256];
    const fused_variant_row *row = choose(ctx, c, &plan, why, sizeof why);
    if (!row)
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "attention: fused path: %s", why);

    bool split = plan.splits > 1;
    uint64_t rows = fused_rows(d);
    uint64_t records = (uint64_t)(d->B * d->Hkv) * plan.splits * rows;
    uint32_t dv4 = div_up((uint64_t)d->Dv, 4);
    vkattn_tensor *partial = NULL;
    if (split) {
        vkattn_status s = scratch_get(ctx, SCRATCH_ATTN_PARTIAL, VKATTN_DTYPE_F32,
                                      records * (4 * dv4 + 2), &partial);
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
        .window_left = attention_window_side(d->var.window_left, d),
        .window_right = attention_window_side(d->var.window_right, d),
        .softcap_log2e = softcap_log2e(d->var.softcap),
        .mask_sb = (uint32_t)d->var.mask_sb,
        .mask_sh = (uint32_t)d->var.mask_sh,
        .mask_si = (uint32_t)d->var.mask_si,
        .block_size = (uint32_t)d->var.block_size,
        .max_blocks = (uint32_t)d->var.max_blocks,
        .q_rows = (uint32_t)d->var.total_q,
        .k_rows = (uint32_t)(d->var.block_table ? d->var.num_blocks : d->var.total_k),
        .block_shift = block_shift((uint64_t)d->var.block_size),
    };
    strides(d->layout, d->H, d->Tq, d->D, &push.q_sb);
    strides(d->layout, d->Hkv, d->Tk, d->D, &push.k_sb);
    strides(d->layout, d->Hkv, d->Tk, d->Dv, &push.v_sb);
    strides(d->layout, d->H, d->Tq, d->Dv, &push.o_sb);
    /* Packed rows and cache rows: (row, head, width), no batch stride. */
    if (d->var.cu_q) {
        packed_strides(d->H, d->D, &push.q_sb);
        packed_strides(d->H, d->Dv, &push.o_sb);
    }
    if (d->var.cu_k || d->var.block_table) {
        packed_strides(d->Hkv, d->D, &push.k_sb);
        packed_strides(d->Hkv, d->Dv, &push.v_sb);
    }
    const vk_binding variant_bindings[] = {
        vk_bind(c->kv_len, false), vk_bind(d->var.cu_q, false), vk_bind(d->var.cu_k, false),
        vk_bind(d->var.block_table, false), vk_bind(d->var.mask, false),
        vk_bind(d->var.sinks, false), vk_bind(d->var.alibi, false),
    };

    vk_dispatch attend = {
        .bindings = {vk_bind(c->q, false), vk_bind(c->k, false), vk_bind(c->v, false),
                     vk_bind(split ? partial : c->o, true)},
        .binding_count = 11,
        .push = &push,
        .push_bytes = sizeof push,
        .groups = {0, (uint32_t)d->Hkv, (uint32_t)d->B},
    };
    memcpy(&attend.bindings[ATTENTION_KV_LEN_BINDING], variant_bindings, sizeof variant_bindings);
    row->specialize(c, &plan, split, &attend);
    vkattn_status s = vk_cmd_dispatch(ctx, &attend);
    if (s != VKATTN_OK || !split)
        return s;

    /* Any subgroup size (key.subgroup_size 0): the split lanes of a column meet
     * in shared memory behind a workgroup barrier, and no subgroup operation
     * reads another lane (the subgroup extension is there for the tests'
     * invocation orders only). */
    combine_layout layout = combine_layout_for(ctx, plan.splits, rows * dv4);
    vk_dispatch combine = {
        .key = {.shader = SHADER_ATTENTION_COMBINE,
                .spec_count = ATTENTION_SPEC_COUNT,
                .spec = {[AC_SPEC_WORKGROUP] = layout.workgroup, [AC_SPEC_DV] = (uint32_t)d->Dv,
                         [AC_SPEC_VEC4] = plan.vec4, [AC_SPEC_SPLIT_LANES] = layout.lanes,
                         [ATTENTION_VARIANTS_SPEC_ID] = attention_variant_bits(c)}},
        .bindings = {vk_bind(partial, false), [3] = vk_bind(c->o, true)},
        .binding_count = 11,
        .push = &push,
        .push_bytes = sizeof push,
        .groups = {(uint32_t)layout.groups_x, (uint32_t)d->Hkv, (uint32_t)d->B},
    };
    memcpy(&combine.bindings[4], variant_bindings, sizeof variant_bindings);
    return vk_cmd_dispatch(ctx, &combine);
}
