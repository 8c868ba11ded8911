/* Fused variant "tiled" (attention_tiled.comp): K/V tiles staged in shared
 * memory by the workgroup, a row's head dimension split over TPR invocations of
 * one subgroup whose partial scores are summed by shuffles. Good at: GPUs
 * without matrix units, and any input dtype. Needs: subgroup shuffles, shared
 * memory for a tile of 4 keys at least. Depends on the subgroup size: TPR lanes
 * must share a subgroup, so TPR is at most the size the pipeline is specialized
 * for, and that size is required where the device allows (else the smallest
 * size it may use). */
#include "attention_fused.h"

#include <stdio.h>

enum tiled_spec { /* constant_id values in attention_tiled.comp */
    AT_SPEC_WORKGROUP = 0, AT_SPEC_TPR, AT_SPEC_BC, AT_SPEC_D, AT_SPEC_DV, AT_SPEC_CAUSAL,
    AT_SPEC_SPLIT, AT_SPEC_Q_DTYPE, AT_SPEC_K_DTYPE, AT_SPEC_V_DTYPE, AT_SPEC_TM,
    AT_SPEC_HEAVY_FIRST
};

/* About this many invocations per workgroup, at most this many keys per tile
 * (the per-invocation score registers: with two rows an invocation, 32 keys
 * took NVIDIA's 255 registers at D=128 and 16 ran 1.54x as fast, the H200's
 * f32 causal prefill 22.3 -> 14.5 ms; bench/results/nvidia-h200). On CPU
 * devices, where it runs only when forced (tests), tiles are small: lavapipe
 * lowers barriers to LLVM coroutines, whose frame building takes seconds for
 * 32-key tiles (5.7 s for D=64 against 0.7 s with 8). */
#define TILED_WORKGROUP 128
#define TILED_MAX_TILE 16
#define TILED_MAX_TILE_CPU 8
/* Query rows per invocation where there are rows enough (prefill): each K and V
 * element read from shared memory then serves two rows, halving the shared
 * loads per multiply-add, which bound the kernel with one row (the H100's f32
 * prefill ran at 10 % of FP32 peak that way); more rows would take more
 * registers for scores, Q and O than a GPU thread keeps. */
#define TILED_ROWS_PER_INVOCATION 2
/* Keys are split until this many workgroups run: enough for a large GPU. */
#define TILED_TARGET_WORKGROUPS 512

static int tiled_rank(const vkattn_context *ctx, const attention_call *c)
{
    (void)ctx, (void)c;
    return 1; /* the fallback everywhere */
}

static bool tiled_plan(vkattn_context *ctx, const attention_call *c, fused_plan *plan, char *why,
                       size_t why_size)
{
    const attention_dims *d = &c->dims;
    const vkattn_device_info *info = &ctx->info;
    if (d->D > TILED_MAX_HEAD_SIZE || d->Dv > TILED_MAX_HEAD_SIZE) {
        snprintf(why, why_size, "head sizes %lld and %lld: the tiled kernel takes up to %d",
                 (long long)d->D, (long long)d->Dv, TILED_MAX_HEAD_SIZE);
        return false;
    }
    bool required;
    uint32_t sg = kernel_subgroup_size(ctx, &required);
    if (!ctx->vk.subgroup_shuffle || sg == 0) {
        snprintf(why, why_size, "the tiled kernel needs subgroup shuffles, which %s lacks",
                 info->name);
        return false;
    }
    uint64_t width = (uint64_t)(d->D > d->Dv ? d->D : d->Dv);
    /* About 16 dimensions per invocation, a row within one subgroup. */
    uint32_t tpr = pow2_floor(width / 16 ? width / 16 : 1);
    uint32_t max_tpr = sg < 16 ? pow2_floor(sg) : 16;
    plan->tpr = tuning_value(ctx, VKATTN_FUSED_TILED, KNOB_LANES, tpr < max_tpr ? tpr : max_tpr);
    plan->heavy_first = fused_heavy_first(ctx, VKATTN_FUSED_TILED, d);
    /* Tuned values are kept as asked or refused, never bent (tuning.c):
     * lanes a power of 2 within a subgroup, a workgroup of whole subgroups
     * (a required size needs them) within the device's limit. */
    uint32_t tuned_workgroup = tuning_value(ctx, VKATTN_FUSED_TILED, KNOB_WORKGROUP, 0);
    bool lanes_fit = !(plan->tpr & (plan->tpr - 1)) && plan->tpr <= sg;
    bool workgroup_fits = !tuned_workgroup ||
                          (tuned_workgroup % plan->tpr == 0 && tuned_workgroup % sg == 0 &&
                           tuned_workgroup <= info->max_workgroup_invocations);
    if (!lanes_fit || !workgroup_fits) {
        char setting[48];
        tuning_describe(VKATTN_FUSED_TILED, lanes_fit ? KNOB_WORKGROUP : KNOB_LANES,
                        lanes_fit ? tuned_workgroup : plan->tpr, setting, sizeof setting);
        snprintf(why, why_size, "%s: the tiled kernel's lanes per row are a power of 2 within a "
                 "subgroup of %u, and its workgroup whole subgroups, at most %u invocations "
                 "(%u lanes, %u invocations)", setting, sg, info->max_workgroup_invocations,
                 plan->tpr, tuned_workgroup ? tuned_workgroup : TILED_WORKGROUP);
        return false;
    }
    uint64_t rows = fused_rows(d);
    uint32_t br = (tuned_workgroup ? tuned_workgroup : TILED_WORKGROUP) / plan->tpr;
    if (!tuned_workgroup) {
        if (br * plan->tpr > info->max_workgroup_invocations)
            br = info->max_workgroup_invocations / plan->tpr;
        if (br > pow2_ceil(rows))
            br = pow2_ceil(rows); /* decoding: do not idle most of the workgroup */
        /* A required size comes with full subgroups: the workgroup is whole subgroups. */
        if (required && br * plan->tpr < sg)
            br = sg / plan->tpr;
    }
    plan->subgroup_size = required ? sg : 0;
    plan->tm = tuning_value(ctx, VKATTN_FUSED_TILED, KNOB_ROWS,
                            rows >= 2ull * br * TILED_ROWS_PER_INVOCATION ? TILED_ROWS_PER_INVOCATION : 1);
    plan->rows_per_workgroup = br * plan->tm;
    plan->workgroup = br * plan->tpr;
    /* K and V rows in shared memory as vec4s (zeros past D and Dv). */
    uint64_t tile_bytes_per_key = 16 * (div_up((uint64_t)d->D, 4) + div_up((uint64_t)d->Dv, 4));
    uint64_t bc = info->shared_memory_bytes / tile_bytes_per_key;
    uint64_t max_tile = info->type == VKATTN_DEVICE_TYPE_CPU ? TILED_MAX_TILE_CPU : TILED_MAX_TILE;
    bc = bc > max_tile ? max_tile : bc / 4 * 4;
    uint32_t tuned_bc = tuning_value(ctx, VKATTN_FUSED_TILED, KNOB_KEYS, 0);
    if (tuned_bc && (tuned_bc % 4 || tuned_bc * tile_bytes_per_key > info->shared_memory_bytes)) {
        char setting[48];
        tuning_describe(VKATTN_FUSED_TILED, KNOB_KEYS, tuned_bc, setting, sizeof setting);
        snprintf(why, why_size, "%s: the tiled kernel's tiles are a multiple of 4 keys, and %u "
                 "keys of head sizes %lld and %lld take %llu bytes of shared memory (%u here)",
                 setting, tuned_bc, (long long)d->D, (long long)d->Dv,
                 (unsigned long long)(tuned_bc * tile_bytes_per_key), info->shared_memory_bytes);
        return false;
    }
    if (tuned_bc)
        bc = tuned_bc;
    if (bc < 4) {
        snprintf(why, why_size, "K and V tiles of head sizes %lld and %lld do not fit in %u bytes "
                 "of shared memory", (long long)d->D, (long long)d->Dv, info->shared_memory_bytes);
        return false;
    }
    plan->bc = (uint32_t)bc;
    plan->step = plan->bc;
    plan->vec4 = d->Dv % 4 == 0;
    plan->target_workgroups = TILED_TARGET_WORKGROUPS;
    if (info->type == VKATTN_DEVICE_TYPE_CPU) {
        /* Per tile, each invocation loads its share of K and V, four elements
         * at a time (the loops over the tile's keys and its dimensions are
         * unrolled). */
        uint64_t per_tile = div_up((uint64_t)plan->bc * (tile_bytes_per_key / 16), plan->workgroup) + 8;
        plan->max_keys_per_split = (uint32_t)(CPU_LOOP_BUDGET / per_tile * plan->bc);
    }
    return true;
}

static void tiled_specialize(const attention_call *c, const fused_plan *plan, bool split,
                             vk_dispatch *dispatch)
{
    const attention_dims *d = &c->dims;
    uint32_t *spec = dispatch->key.spec;
    dispatch->key.shader = SHADER_ATTENTION_TILED;
    dispatch->key.subgroup_size = plan->subgroup_size;
    dispatch->key.spec_count = ATTENTION_SPEC_COUNT;
    spec[AT_SPEC_WORKGROUP] = plan->workgroup;
    spec[AT_SPEC_TPR] = plan->tpr;
    spec[AT_SPEC_BC] = plan->bc;
    spec[AT_SPEC_D] = (uint32_t)d->D;
    spec[AT_SPEC_DV] = (uint32_t)d->Dv;
    spec[AT_SPEC_CAUSAL] = d->causal;
    spec[AT_SPEC_SPLIT] = split;
    spec[AT_SPEC_Q_DTYPE] = shader_dtype(c->q);
    spec[AT_SPEC_K_DTYPE] = shader_dtype(c->k);
    spec[AT_SPEC_V_DTYPE] = shader_dtype(c->v);
    spec[AT_SPEC_TM] = plan->tm;
    spec[AT_SPEC_HEAVY_FIRST] = plan->heavy_first;
    spec[ATTENTION_VARIANTS_SPEC_ID] = attention_variant_bits(c);
    dispatch->groups[0] = plan->blocks * plan->splits;
}

const fused_variant_row fused_tiled_variant = {
    VKATTN_FUSED_TILED, "tiled", tiled_rank, tiled_plan, tiled_specialize,
};
