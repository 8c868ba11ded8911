/* Matmul variants "coopmat" and "coopmat_emulated" (matmul_coopmat.comp): f16 A
 * and B on the matrix units, f32 accumulation, for the layer's projections with
 * f16 weights. Needs: f16 A and B; VK_NV_cooperative_matrix with an f16 shape
 * (real) or shaderFloat16 (emulated). Like the coopmat attention kernel, the
 * real one is opt-in (VKATTN_COOPMAT=1 or forced) until verified on a GPU, and
 * the emulated build (VKATTN_COOPMAT_EMULATED_SHAPE) is for tests only. */
#include "ops_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum matmul_coopmat_spec { /* constant_id values in matmul_coopmat.comp */
    MC_SPEC_WORKGROUP = 0, MC_SPEC_BM, MC_SPEC_BN, MC_SPEC_BK, MC_SPEC_TRANSPOSE_B,
    MC_SPEC_HAS_BIAS, MC_SPEC_BIAS_DTYPE, MC_SPEC_MM, MC_SPEC_MN, MC_SPEC_MK, MC_SPEC_COUNT
};

/* A 64x64 block in 32-wide K slabs on GPUs (24 KiB of shared memory); 32x32 in
 * 16-wide slabs on CPU devices (the emulated build in tests). */
#define COOPMAT_SUBGROUPS 4

static uint32_t round_up(uint32_t v, uint32_t m) { return (v + m - 1) / m * m; }

bool matmul_coopmat_wanted(const vkattn_context *ctx, const matmul_call *c)
{
    const char *env = getenv("VKATTN_COOPMAT");
    return ctx->vk.enabled.coopmat && env && strcmp(env, "1") == 0 && !c->masked_a_skips &&
           c->a->dtype == VKATTN_DTYPE_F16 && c->b->dtype == VKATTN_DTYPE_F16;
}

vkattn_status vk_matmul_coopmat(vkattn_context *ctx, const matmul_call *c, bool emulated)
{
    const vkattn_device_info *info = &ctx->info;
    const char *name = emulated ? "the emulated coopmat variant" : "the coopmat variant";
    if (c->a->dtype != VKATTN_DTYPE_F16 || c->b->dtype != VKATTN_DTYPE_F16)
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "matmul: %s takes f16 A and B (got %s, %s)",
                        name, dtype_name(c->a->dtype), dtype_name(c->b->dtype));
    if (c->masked_a_skips)
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED,
                        "matmul: %s cannot skip masked elements of A (the matrix units "
                        "multiply whole blocks)", name);
    coopmat_shape shape;
    uint32_t sg = info->subgroup_size ? info->subgroup_size : 1, required_size = 0;
    if (emulated) {
        if (!ctx->vk.enabled.float16)
            return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "matmul: %s needs shaderFloat16, which "
                            "%s lacks or the application did not enable", name, info->name);
        if (!coopmat_emulated_shape(&shape))
            return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                            "matmul: VKATTN_COOPMAT_EMULATED_SHAPE is not MxNxK with sizes 1..64");
    } else {
        if (!ctx->vk.enabled.coopmat || !coopmat_device_shape(&ctx->vk.enabled, &shape))
            return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "matmul: %s needs "
                            "VK_NV_cooperative_matrix with an f16 x f16 -> f32 subgroup shape, "
                            "which %s lacks or the application did not enable", name, info->name);
        bool required;
        sg = kernel_subgroup_size(ctx, &required);
        /* A matrix operation needs every lane of its subgroup active, which
         * only full subgroups promise. */
        if (!required)
            return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "matmul: %s needs full subgroups of "
                            "a required size (subgroupSizeControl and computeFullSubgroups), "
                            "which %s lacks or the application did not enable", name,
                            info->name);
        required_size = sg;
    }
    bool cpu = info->type == VKATTN_DEVICE_TYPE_CPU;
    uint32_t bm = round_up(cpu ? 32 : 64, shape.m), bn = round_up(cpu ? 32 : 64, shape.n);
    uint32_t bk = round_up(cpu ? 16 : 32, shape.k);
    uint64_t shared = 2ull * (bm * bk + bk * bn) + 4ull * bm * bn;
    uint32_t wg = COOPMAT_SUBGROUPS * sg;
    if (shared > info->shared_memory_bytes || wg > info->max_workgroup_invocations)
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED,
                        "matmul: %s: a %ux%u block with %ux%ux%u matrices needs %llu bytes of "
                        "shared memory and %u invocations; %s has %u and %u", name, bm, bn,
                        shape.m, shape.n, shape.k, (unsigned long long)shared, wg, info->name,
                        info->shared_memory_bytes, info->max_workgroup_invocations);
    vk_dispatch dispatch = {
        .key = {.shader = emulated ? SHADER_MATMUL_COOPMAT_EMULATED : SHADER_MATMUL_COOPMAT,
                .subgroup_size = required_size,
                .spec_count = MC_SPEC_COUNT,
                .spec = {[MC_SPEC_WORKGROUP] = wg, [MC_SPEC_BM] = bm, [MC_SPEC_BN] = bn,
                         [MC_SPEC_BK] = bk, [MC_SPEC_TRANSPOSE_B] = c->transpose_b,
                         [MC_SPEC_HAS_BIAS] = c->bias != NULL,
                         [MC_SPEC_BIAS_DTYPE] = shader_dtype(c->bias),
                         [MC_SPEC_MM] = shape.m, [MC_SPEC_MN] = shape.n, [MC_SPEC_MK] = shape.k}},
        .bindings = {vk_bind(c->a, false), vk_bind(c->b, false), vk_bind(c->bias, false),
                     vk_bind(c->c, true)},
        .binding_count = 4,
    };
    return matmul_record_batches(ctx, &dispatch, c, div_up(c->N, bn), div_up(c->M, bm));
}
