/* Fused variant "rows" (attention_rows.comp): query rows per invocation, K and
 * V read through texel fetches, no shared memory or barriers. Good at: CPU
 * devices (lavapipe), where a texel fetch is one vector gather and a storage or
 * shared load a loop over SIMD lanes. Needs: texel views of Q, K and V (float
 * views, or views of the bits of bf16 inputs, which the kernel widens). Uses no
 * subgroup operations, so any subgroup size is correct. */
#include "attention_fused.h"

#include <stdio.h>

enum rows_spec { /* constant_id values in attention_rows.comp */
    AR_SPEC_WORKGROUP = 0, AR_SPEC_KB, AR_SPEC_D, AR_SPEC_DV, AR_SPEC_VEC4, AR_SPEC_CAUSAL,
    AR_SPEC_SPLIT, AR_SPEC_TM, AR_SPEC_UNROLL, AR_SPEC_HEADS_IN_LANES, AR_SPEC_BF16_INPUTS
};

/* One SIMD vector of lavapipe per workgroup. */
#define ROWS_WORKGROUP 8
/* Keys are split until this many workgroups run: enough for the cores of a
 * CPU device. */
#define ROWS_TARGET_WORKGROUPS 64

static int rows_rank(const vkattn_context *ctx, const attention_call *c)
{
    (void)c;
    return vk_prefers_texels(ctx) ? 3 : 0;
}

static bool rows_plan(vkattn_context *ctx, const attention_call *c, fused_plan *plan, char *why,
                      size_t why_size)
{
    const attention_dims *d = &c->dims;
    if (d->D > FUSED_MAX_HEAD_SIZE || d->Dv > FUSED_MAX_HEAD_SIZE) {
        snprintf(why, why_size, "head sizes %lld and %lld: the rows kernel takes up to %d",
                 (long long)d->D, (long long)d->Dv, FUSED_MAX_HEAD_SIZE);
        return false;
    }
    plan->vec4 = d->D % 4 == 0 && d->Dv % 4 == 0;
    const vkattn_tensor *in[3] = {c->q, c->k, c->v};
    for (int i = 0; i < 3; i++) {
        if (!vk_texel_input_view(in[i], plan->vec4)) {
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
    uint64_t rows = fused_rows(d);
    while (plan->tm > rows) /* decoding: do not compute copies of the last row */
        plan->tm /= 2;
    plan->rows_per_workgroup = plan->workgroup * plan->tm;
    /* One row group per problem (decoding) from K and V stored token-major:
     * the lanes take neighbouring kv heads, which share the key's row, rather
     * than neighbouring splits, whose rows lie a page or more apart. Measured
     * on lavapipe, decode H=8 Tk=4096 D=128 from a BSHD cache: see
     * bench/results/lavapipe/. */
    const attention_variants *var = &d->var;
    bool token_major = d->layout == VKATTN_LAYOUT_BSHD || var->cu_k || var->block_table;
    plan->heads_in_lanes = token_major && d->Hkv > 1 && div_up(rows, plan->tm) == 1;
    plan->step = plan->kb;
    plan->target_workgroups = ROWS_TARGET_WORKGROUPS;
    /* Without unrolling, each key runs loops over D and Dv (in vec4s). */
    if (!plan->unroll && ctx->info.type == VKATTN_DEVICE_TYPE_CPU) {
        uint64_t per_key = (uint64_t)(d->D + d->Dv) / (plan->vec4 ? 4 : 1) + 4;
        plan->max_keys_per_split = (uint32_t)(CPU_LOOP_BUDGET / per_key);
    }
    return true;
}

/* The mask through its texel view where it has one (this kernel's reads); with
 * four keys per step and rows of Tk % 4 == 0 entries (then every mask stride is
 * a multiple of 4), its four-component view, a step's entries for a row in one
 * fetch. Measured on lavapipe, B=1 H=8 T=2048 D=64 causal with a (T, T) f32
 * mask: 89.6 ms with one fetch per key, 80 ms with one per step (plain causal
 * 72.0 ms). The variant bits that say which, or 0. */
static uint32_t rows_mask_view(const attention_call *c, const fused_plan *plan,
                               vk_dispatch *dispatch)
{
    const vkattn_tensor *mask = c->dims.var.mask;
    if (!mask || !mask->texels)
        return 0;
    if (plan->kb == 4 && c->dims.Tk % 4 == 0 && mask->texels4 && !c->dims.var.mask_per_row) {
        dispatch->bindings[ATTENTION_MASK_BINDING].texels = mask->texels4;
        return VAR_MASK_TEXELS | VAR_MASK_TEXELS4;
    }
    return VAR_MASK_TEXELS;
}

static void rows_specialize(const attention_call *c, const fused_plan *plan, bool split,
                            vk_dispatch *dispatch)
{
    const attention_dims *d = &c->dims;
    uint32_t *spec = dispatch->key.spec;
    const vkattn_tensor *in[3] = {c->q, c->k, c->v};
    for (int i = 0; i < 3; i++)
        vk_bind_texel_input(dispatch, (uint32_t)i, ATTENTION_QKV_BITS_TEXELS + (uint32_t)i, in[i],
                            plan->vec4);
    spec[AR_SPEC_BF16_INPUTS] = attention_bf16_inputs(c);
    dispatch->key.shader = SHADER_ATTENTION_ROWS;
    dispatch->key.spec_count = ATTENTION_SPEC_COUNT;
    spec[AR_SPEC_WORKGROUP] = plan->workgroup;
    spec[AR_SPEC_KB] = plan->kb;
    spec[AR_SPEC_D] = (uint32_t)d->D;
    spec[AR_SPEC_DV] = (uint32_t)d->Dv;
    spec[AR_SPEC_VEC4] = plan->vec4;
    spec[AR_SPEC_CAUSAL] = d->causal;
    spec[AR_SPEC_SPLIT] = split;
    spec[AR_SPEC_TM] = plan->tm;
    spec[AR_SPEC_UNROLL] = plan->unroll;
    spec[AR_SPEC_HEADS_IN_LANES] = plan->heads_in_lanes;
    spec[ATTENTION_VARIANTS_SPEC_ID] = attention_variant_bits(c) | rows_mask_view(c, plan, dispatch);
    /* Invocations run over (row group, split) pairs linearly, and over the kv
     * heads too (fastest) with heads_in_lanes. */
    uint64_t heads = plan->heads_in_lanes ? (uint64_t)d->Hkv : 1;
    dispatch->groups[0] = div_up(heads * div_up(fused_rows(d), plan->tm) * (uint64_t)plan->splits,
                                 plan->workgroup);
    if (plan->heads_in_lanes)
        dispatch->groups[1] = 1;
}

const fused_variant_row fused_rows_variant = {
    VKATTN_FUSED_ROWS, "rows", rows_rank, rows_plan, rows_specialize,
};
