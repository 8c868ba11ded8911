/* Fused variant "decode" (attention_decode.comp): FlashDecoding's split keys.
 * Each subgroup owns one range of keys of one (batch, kv head) problem and all
 * of its query rows; a lane scores one key at a time against every row, and
 * the subgroup reads V's rows together, lanes over columns. Good at: decoding
 * and short query chunks on GPUs (few rows, many keys), where a kernel that
 * stages tiles for a workgroup of rows leaves most of it idle and too few
 * workgroups in flight to cover memory latency. Needs: subgroup arithmetic and
 * shuffles; at most DECODE_MAX_ROWS packed query rows per problem (group * Tq);
 * shared memory for their Q; whole subgroups. Correct for any subgroup size
 * (see the kernel); specialized for, and where possible required at,
 * kernel_subgroup_size(). */
#include "attention_fused.h"

#include <stdio.h>

enum decode_spec { /* constant_id values in attention_decode.comp */
    AD_SPEC_WORKGROUP = 0, AD_SPEC_SUBGROUP, AD_SPEC_ROWS, AD_SPEC_D, AD_SPEC_DV, AD_SPEC_CAUSAL,
    AD_SPEC_SPLIT, AD_SPEC_Q_DTYPE, AD_SPEC_K_DTYPE, AD_SPEC_V_DTYPE
};

/* Past this many rows per problem the O accumulators (rows x columns / lanes)
 * outgrow the registers, and a kernel that stages tiles for its rows wins. */
#define DECODE_MAX_ROWS 16
/* lavapipe compiles the unrolled accumulator loops in about a second with 32
 * vec4s per lane (16 rows, Dv 64, subgroup 8), in seconds with 64 (the same
 * at subgroup 4, LP_NATIVE_VECTOR_WIDTH=128) and in five minutes with 128
 * (16 rows, Dv 256), so on CPU devices, where it runs only when forced, the
 * kernel takes at most this many. */
#define DECODE_MAX_ACCUMULATORS_CPU 64
/* Subgroups (splits) per workgroup: they share the staged Q. */
#define DECODE_SPLITS_PER_WORKGROUP 4
/* Keys are split until about this many subgroups run: a few per SIMD unit of
 * a large GPU (an H100 has 132 SMs of 4). With the minimum of 64 keys a split,
 * decoding 8 kv heads from 8192 keys makes 1024 of 64 keys each. */
#define DECODE_TARGET_SUBGROUPS 2048

static int decode_rank(const vkattn_context *ctx, const attention_call *c)
{
    /* On CPU devices the rows kernel does this without shuffles (forced only). */
    if (ctx->info.type == VKATTN_DEVICE_TYPE_CPU || fused_rows(&c->dims) > DECODE_MAX_ROWS)
        return 0;
    /* Above the tiled kernel, its fallback, and above the coopmat kernel,
     * whose 16-row matrices would be mostly padding for a few rows and whose
     * K and V go through shared memory (the GPU check times both: the bench's
     * decode rows, auto and coopmat forced). */
    return 5;
}

static bool decode_plan(vkattn_context *ctx, const attention_call *c, fused_plan *plan, char *why,
                        size_t why_size)
{
    const attention_dims *d = &c->dims;
    const vkattn_device_info *info = &ctx->info;
    uint64_t rows = fused_rows(d);
    if (rows > DECODE_MAX_ROWS) {
        snprintf(why, why_size, "%llu query rows per kv head (group %lld x Tq %lld): the decode "
                 "kernel takes up to %d", (unsigned long long)rows, (long long)(d->H / d->Hkv),
                 (long long)d->Tq, DECODE_MAX_ROWS);
        return false;
    }
    if (d->D > FUSED_MAX_HEAD_SIZE || d->Dv > FUSED_MAX_HEAD_SIZE) {
        snprintf(why, why_size, "head sizes %lld and %lld: the decode kernel takes up to %d",
                 (long long)d->D, (long long)d->Dv, FUSED_MAX_HEAD_SIZE);
        return false;
    }
    bool required;
    uint32_t sg = kernel_subgroup_size(ctx, &required);
    if (!ctx->vk.subgroup_shuffle || !info->subgroup_arithmetic || sg == 0) {
        snprintf(why, why_size, "the decode kernel needs subgroup shuffles and arithmetic, "
                 "which %s lacks", info->name);
        return false;
    }
    /* A lane's keys and columns are counted in gl_SubgroupSize lanes: a
     * partial subgroup would leave some unscored (device_caps_whole_subgroups). */
    if (!device_caps_whole_subgroups(&ctx->vk.enabled)) {
        char reason[256];
        device_caps_whole_subgroups_why(&ctx->vk.enabled, info->name, reason, sizeof reason);
        snprintf(why, why_size, "the decode kernel %s", reason);
        return false;
    }
    uint32_t rm = pow2_ceil(rows);
    uint64_t q_bytes = (uint64_t)rm * div_up((uint64_t)d->D, 4) * 16;
    if (q_bytes > info->shared_memory_bytes) {
        snprintf(why, why_size, "the decode kernel's %u rows of Q (%llu bytes) do not fit in "
                 "%u bytes of shared memory", rm, (unsigned long long)q_bytes,
                 info->shared_memory_bytes);
        return false;
    }
    /* O vec4s per lane: rows x the lane's share of the columns. */
    uint64_t accumulators = rm * div_up(div_up((uint64_t)d->Dv, 4), sg);
    if (info->type == VKATTN_DEVICE_TYPE_CPU && accumulators > DECODE_MAX_ACCUMULATORS_CPU) {
        snprintf(why, why_size, "the decode kernel's %llu O accumulators per lane (%u rows, Dv "
                 "%lld, subgroup %u) take minutes to compile on a CPU device; at most %d there",
                 (unsigned long long)accumulators, rm, (long long)d->Dv, sg,
                 DECODE_MAX_ACCUMULATORS_CPU);
        return false;
    }
    /* Whole subgroups whatever size the pipeline gets: where the size is not
     * required, the workgroup is at least the widest (sizes are powers of 2). */
    uint32_t widest = required || ctx->vk.enabled.subgroup_max < sg ? sg : ctx->vk.enabled.subgroup_max;
    uint32_t tuned = tuning_value(ctx, VKATTN_FUSED_DECODE, KNOB_SUBGROUPS, 0);
    uint32_t splits_per_workgroup = tuned ? tuned : DECODE_SPLITS_PER_WORKGROUP;
    if (!tuned) {
        while (splits_per_workgroup * sg < widest)
            splits_per_workgroup *= 2;
        while (splits_per_workgroup > 1 && splits_per_workgroup * sg > info->max_workgroup_invocations)
            splits_per_workgroup /= 2;
    } else if ((tuned & (tuned - 1)) || tuned * sg < widest ||
               tuned * sg > info->max_workgroup_invocations) {
        char setting[48];  /* kept as asked or refused (tuning.c) */
        tuning_describe(VKATTN_FUSED_DECODE, KNOB_SUBGROUPS, tuned, setting, sizeof setting);
        snprintf(why, why_size, "%s: the decode kernel's workgroup is a power of 2 of subgroups "
                 "of %u, whole subgroups of every size the pipeline may get (up to %u), at "
                 "most %u invocations", setting, sg, widest, info->max_workgroup_invocations);
        return false;
    }
    plan->subgroup_size = required ? sg : 0;
    plan->specialized_subgroup = sg;
    plan->workgroup = splits_per_workgroup * sg;
    plan->rows_per_workgroup = rm;
    plan->tm = rm;
    plan->step = 1;
    plan->vec4 = d->Dv % 4 == 0;
    plan->target_workgroups = DECODE_TARGET_SUBGROUPS;
    if (info->type == VKATTN_DEVICE_TYPE_CPU) {
        /* Per key, if the compiler keeps them loops: a share of the score
         * loop over D (a lane per key), a step of the P V loop and its loop
         * over the lane's columns. */
        uint64_t per_key = div_up((uint64_t)d->D, 4ull * sg) + 2 + div_up((uint64_t)d->Dv, 4ull * sg);
        plan->max_keys_per_split = (uint32_t)(CPU_LOOP_BUDGET / per_key);
    }
    return true;
}

static void decode_specialize(const attention_call *c, const fused_plan *plan, bool split,
                              vk_dispatch *dispatch)
{
    const attention_dims *d = &c->dims;
    uint32_t *spec = dispatch->key.spec;
    dispatch->key.shader = SHADER_ATTENTION_DECODE;
    dispatch->key.subgroup_size = plan->subgroup_size;
    dispatch->key.spec_count = ATTENTION_SPEC_COUNT;
    spec[AD_SPEC_WORKGROUP] = plan->workgroup;
    spec[AD_SPEC_SUBGROUP] = plan->specialized_subgroup;
    spec[AD_SPEC_ROWS] = plan->tm;
    spec[AD_SPEC_D] = (uint32_t)d->D;
    spec[AD_SPEC_DV] = (uint32_t)d->Dv;
    spec[AD_SPEC_CAUSAL] = d->causal;
    spec[AD_SPEC_SPLIT] = split;
    spec[AD_SPEC_Q_DTYPE] = shader_dtype(c->q);
    spec[AD_SPEC_K_DTYPE] = shader_dtype(c->k);
    spec[AD_SPEC_V_DTYPE] = shader_dtype(c->v);
    spec[ATTENTION_VARIANTS_SPEC_ID] = attention_variant_bits(c);
    uint32_t splits_per_workgroup = plan->workgroup / plan->specialized_subgroup;
    dispatch->groups[0] = (uint32_t)div_up(plan->splits, splits_per_workgroup);
}

const fused_variant_row fused_decode_variant = {
    VKATTN_FUSED_DECODE, "decode", decode_rank, decode_plan, decode_specialize,
};
