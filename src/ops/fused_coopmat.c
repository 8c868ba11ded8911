/* Fused variants "coopmat" and "coopmat_emulated" (attention_coopmat.comp):
 * Q K^T and P V as f16 x f16 -> f32 products on the matrix units, the online
 * softmax in f32 between them, every tile in shared memory. Good at: f16
 * attention on GPUs with cooperative matrices. Needs: f16 Q, K and V;
 * VK_NV_cooperative_matrix with an f16 shape (the real kernel) or shaderFloat16
 * (the emulated build); shared memory for Q, K, V, P, S and O tiles.
 *
 * AUTO takes the real kernel on the vendors it passed the GPU check on
 * (coopmat_shapes.c: NVIDIA, an H100), elsewhere with VKATTN_COOPMAT=1;
 * VKATTN_COOPMAT=0 turns it off. The emulated build runs the same kernel
 * with the matrix operations in plain code and is never chosen by AUTO: tests
 * force it on devices without matrix units. Its matrix shape is 16x16x16, or
 * VKATTN_COOPMAT_EMULATED_SHAPE=MxNxK (tests use the shapes GPUs report). */
#include "attention_fused.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum coopmat_spec { /* constant_id values in attention_coopmat.comp */
    AM_SPEC_WORKGROUP = 0, AM_SPEC_BR, AM_SPEC_BC, AM_SPEC_D, AM_SPEC_DV, AM_SPEC_CAUSAL,
    AM_SPEC_HAS_KV_LEN, AM_SPEC_SPLIT, AM_SPEC_MM, AM_SPEC_MN, AM_SPEC_MK, AM_SPEC_COUNT
};

/* Subgroups per workgroup, and tile sizes tried (largest first). On CPU devices
 * (where only the emulated build runs, in tests) tiles stay small: lavapipe
 * turns each barrier into a coroutine switch. */
#define COOPMAT_SUBGROUPS 4
#define COOPMAT_MAX_TILE 64
#define COOPMAT_MAX_TILE_CPU 16
#define COOPMAT_TARGET_WORKGROUPS 512

static uint32_t round_up(uint32_t v, uint32_t m) { return (v + m - 1) / m * m; }

static uint64_t shared_bytes(uint32_t br, uint32_t bc, uint32_t dp, uint32_t dvp)
{
    return 2ull * (br * dp + bc * dp + bc * dvp + br * bc) + 4ull * (br * bc + br * dvp + 3 * br);
}

static bool coopmat_plan_common(vkattn_context *ctx, const attention_call *c, bool emulated,
                                fused_plan *plan, char *why, size_t why_size)
{
    const attention_dims *d = &c->dims;
    const vkattn_device_info *info = &ctx->info;
    const char *name = emulated ? "the emulated coopmat kernel" : "the coopmat kernel";
    if (!fused_plain_only(c, emulated ? "emulated coopmat" : "coopmat", why, why_size))
        return false;
    if (d->D > FUSED_MAX_HEAD_SIZE || d->Dv > FUSED_MAX_HEAD_SIZE) {
        snprintf(why, why_size, "head sizes %lld and %lld: %s takes up to %d", (long long)d->D,
                 (long long)d->Dv, name, FUSED_MAX_HEAD_SIZE);
        return false;
    }
    if (c->q->dtype != VKATTN_DTYPE_F16 || c->k->dtype != VKATTN_DTYPE_F16 ||
        c->v->dtype != VKATTN_DTYPE_F16) {
        snprintf(why, why_size, "%s takes f16 Q, K and V (got %s, %s, %s)", name,
                 dtype_name(c->q->dtype), dtype_name(c->k->dtype), dtype_name(c->v->dtype));
        return false;
    }
    bool required = false;
    uint32_t sg;
    if (emulated) {
        if (!ctx->vk.enabled.float16) {
            snprintf(why, why_size, "%s needs shaderFloat16, which %s lacks or the "
                     "application did not enable", name, info->name);
            return false;
        }
        if (!coopmat_emulated_shape(&plan->shape)) {
            snprintf(why, why_size, "VKATTN_COOPMAT_EMULATED_SHAPE is not MxNxK with sizes 1..%d",
                     COOPMAT_MAX_TILE);
            return false;
        }
        sg = info->subgroup_size ? info->subgroup_size : 1; /* any size is correct */
    } else {
        if (!ctx->vk.enabled.coopmat || !coopmat_device_shape(&ctx->vk.enabled, &plan->shape)) {
            snprintf(why, why_size, "%s needs VK_NV_cooperative_matrix with an f16 x f16 -> f32 "
                     "subgroup shape, which %s lacks or the application did not enable",
                     name, info->name);
            return false;
        }
        sg = kernel_subgroup_size(ctx, &required);
        plan->subgroup_size = required ? sg : 0;
    }
    coopmat_shape s = plan->shape;
    uint32_t dp = round_up((uint32_t)d->D, s.k), dvp = round_up((uint32_t)d->Dv, s.n);
    uint32_t bc_unit = s.n * s.k; /* a multiple of both (enough for powers of two) */
    for (uint32_t g = s.n > s.k ? s.n : s.k; g <= bc_unit; g += s.n > s.k ? s.n : s.k)
        if (g % s.n == 0 && g % s.k == 0) {
            bc_unit = g;
            break;
        }
    uint32_t max_tile = info->type == VKATTN_DEVICE_TYPE_CPU ? COOPMAT_MAX_TILE_CPU : COOPMAT_MAX_TILE;
    uint64_t rows = fused_rows(d);
    /* Decoding: no more rows per workgroup than the problem has. */
    uint32_t br_cap = round_up((uint32_t)(rows < max_tile ? rows : max_tile), s.m);
    plan->bc = 0;
    for (uint32_t br = br_cap > s.m ? br_cap : s.m; br >= s.m && !plan->bc; br -= s.m) {
        if (br % s.m)
            continue;
        for (uint32_t bc = max_tile / bc_unit * bc_unit; bc >= bc_unit; bc -= bc_unit)
            if (shared_bytes(br, bc, dp, dvp) <= info->shared_memory_bytes) {
                plan->rows_per_workgroup = br;
                plan->bc = bc;
                break;
            }
    }
    if (!plan->bc) {
        snprintf(why, why_size, "%s: tiles for head sizes %lld and %lld with %ux%ux%u matrices "
                 "do not fit in %u bytes of shared memory", name, (long long)d->D,
                 (long long)d->Dv, s.m, s.n, s.k, info->shared_memory_bytes);
        return false;
    }
    uint32_t wg = round_up(COOPMAT_SUBGROUPS * sg > plan->rows_per_workgroup
                               ? COOPMAT_SUBGROUPS * sg : plan->rows_per_workgroup, sg);
    if (wg > info->max_workgroup_invocations) {
        snprintf(why, why_size, "%s: a workgroup of %u invocations exceeds the device's %u",
                 name, wg, info->max_workgroup_invocations);
        return false;
    }
    plan->workgroup = wg;
    plan->step = plan->bc;
    if (emulated && info->type == VKATTN_DEVICE_TYPE_CPU) {
        /* Per tile, each lane walks its share of the K and V tiles, of the
         * output rescaling, and of the score and output blocks' elements (the
         * loops over their inner dimension are unrolled); all counted as one. */
        uint32_t br = plan->rows_per_workgroup, nsg = wg / sg;
        uint32_t per_block = div_up((uint64_t)s.m * s.n, sg);
        uint32_t score_blocks = (br / s.m) * (plan->bc / s.n), output_blocks = (br / s.m) * (dvp / s.n);
        uint64_t per_tile = (uint64_t)(div_up(score_blocks, nsg) + div_up(output_blocks, nsg)) *
                                (per_block + 1) +
                            div_up((uint64_t)plan->bc * dp, wg) + div_up((uint64_t)plan->bc * dvp, wg) +
                            div_up((uint64_t)br * dvp, wg) + div_up(br, wg) + 8;
        plan->max_keys_per_split = (uint32_t)(CPU_LOOP_BUDGET / per_tile * plan->bc);
    }
    plan->vec4 = d->Dv % 4 == 0;
    plan->target_workgroups = COOPMAT_TARGET_WORKGROUPS;
    return true;
}

static bool coopmat_plan(vkattn_context *ctx, const attention_call *c, fused_plan *plan,
                         char *why, size_t why_size)
{
    return coopmat_plan_common(ctx, c, false, plan, why, why_size);
}

static bool coopmat_emulated_plan(vkattn_context *ctx, const attention_call *c, fused_plan *plan,
                                  char *why, size_t why_size)
{
    return coopmat_plan_common(ctx, c, true, plan, why, why_size);
}

static int coopmat_rank(const vkattn_context *ctx, const attention_call *c)
{
    (void)c;
    return ctx->vk.enabled.coopmat && coopmat_attention_default(ctx) ? 4 : 0;
}

static int never(const vkattn_context *ctx, const attention_call *c)
{
    (void)ctx, (void)c;
    return 0;
}

static void specialize(const attention_call *c, const fused_plan *plan, bool split,
                       shader_id shader, vk_dispatch *dispatch)
{
    const attention_dims *d = &c->dims;
    uint32_t *spec = dispatch->key.spec;
    dispatch->key.shader = shader;
    dispatch->key.subgroup_size = plan->subgroup_size;
    dispatch->key.spec_count = AM_SPEC_COUNT;
    spec[AM_SPEC_WORKGROUP] = plan->workgroup;
    spec[AM_SPEC_BR] = plan->rows_per_workgroup;
    spec[AM_SPEC_BC] = plan->bc;
    spec[AM_SPEC_D] = (uint32_t)d->D;
    spec[AM_SPEC_DV] = (uint32_t)d->Dv;
    spec[AM_SPEC_CAUSAL] = d->causal;
    spec[AM_SPEC_HAS_KV_LEN] = c->kv_len != NULL;
    spec[AM_SPEC_SPLIT] = split;
    spec[AM_SPEC_MM] = plan->shape.m;
    spec[AM_SPEC_MN] = plan->shape.n;
    spec[AM_SPEC_MK] = plan->shape.k;
    dispatch->groups[0] = plan->blocks * plan->splits;
}

static void coopmat_specialize(const attention_call *c, const fused_plan *plan, bool split,
                               vk_dispatch *d)
{
    specialize(c, plan, split, SHADER_ATTENTION_COOPMAT, d);
}

static void coopmat_emulated_specialize(const attention_call *c, const fused_plan *plan,
                                        bool split, vk_dispatch *d)
{
    specialize(c, plan, split, SHADER_ATTENTION_COOPMAT_EMULATED, d);
}

const fused_variant_row fused_coopmat_variant = {
    VKATTN_FUSED_COOPMAT, "coopmat", coopmat_rank, coopmat_plan, coopmat_specialize,
};

const fused_variant_row fused_coopmat_emulated_variant = {
    VKATTN_FUSED_COOPMAT_EMULATED, "coopmat_emulated", never, coopmat_emulated_plan,
    coopmat_emulated_specialize,
};
