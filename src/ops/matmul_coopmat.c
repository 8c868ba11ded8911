/* Matmul variants "coopmat" and "coopmat_emulated" (matmul_coopmat.comp): f16 A
 * and B on the matrix units, f32 accumulation, for the layer's projections with
 * f16 weights. Needs: f16 A and B; VK_NV_cooperative_matrix with an f16 shape
 * (real) or shaderFloat16 (emulated). The real one is opt-in (VKATTN_COOPMAT=1
 * or forced) until its test cases pass on a GPU: revision 2 has run only the
 * H200's 4096^3 bench case (4.5 ms, correct; the scalar f32 kernel 7.5). The
 * emulated build (VKATTN_COOPMAT_EMULATED_SHAPE) is for tests only. */
#include "ops_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum matmul_coopmat_spec { /* constant_id values in matmul_coopmat.comp */
    MC_SPEC_WORKGROUP = 0, MC_SPEC_BM, MC_SPEC_BN, MC_SPEC_BK, MC_SPEC_TRANSPOSE_B,
    MC_SPEC_HAS_BIAS, MC_SPEC_BIAS_DTYPE, MC_SPEC_MM, MC_SPEC_MN, MC_SPEC_MK,
    MC_SPEC_A_ALIGNED8, MC_SPEC_B_ALIGNED8, MC_SPEC_SUBGROUPS, MC_SPEC_COUNT
};

/* GPUs: 4 subgroups of MM rows each by 128 columns (8 accumulators of 16x16
 * in registers a subgroup), K in 32-wide slabs. CPU devices (the emulated
 * build, in tests): 2 subgroups by 32 columns, 16-wide slabs. */
#define COOPMAT_SUBGROUPS 4
#define COOPMAT_BLOCK_N 128
#define COOPMAT_SLAB_K 32
#define COOPMAT_SUBGROUPS_CPU 2
#define COOPMAT_BLOCK_N_CPU 32
#define COOPMAT_SLAB_K_CPU 16

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
    if (emulated) {
        if (!ctx->vk.enabled.float16)
            return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "matmul: %s needs shaderFloat16, which "
                            "%s lacks or the application did not enable", name, info->name);
        if (!coopmat_emulated_shape(&shape))
            return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                            "matmul: VKATTN_COOPMAT_EMULATED_SHAPE is not MxNxK with sizes 1..64");
    } else if (!ctx->vk.enabled.coopmat || !coopmat_device_shape(&ctx->vk.enabled, &shape)) {
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "matmul: %s needs "
                        "VK_NV_cooperative_matrix or VK_KHR_cooperative_matrix with an f16 x f16 "
                        "-> f32 subgroup shape, "
                        "which %s lacks or the application did not enable", name, info->name);
    }
    /* Each subgroup owns MM rows of the block (gl_SubgroupID), so the
     * pipeline's subgroup size must be the one counted here; and a matrix
     * operation needs every lane of its subgroup active, which only full
     * subgroups of a required size promise. */
    bool required;
    uint32_t sg = coopmat_subgroup_size(ctx, emulated, &required);
    const device_caps *caps = &ctx->vk.enabled;
    if (sg == 0 || (emulated ? !required && caps->subgroup_min != caps->subgroup_max : !required))
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "matmul: %s needs one subgroup size for "
                        "the pipeline (%s: full subgroups of a required size), which %s cannot "
                        "give", name, emulated ? "one the device always uses, or" : "with",
                        info->name);
    /* The real kernel's matrix loads start on a whole packed element. */
    if (!emulated && (shape.k % COOPMAT_PACK || shape.n % COOPMAT_PACK))
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "matmul: %s: the device's %ux%ux%u "
                        "matrices; the kernel loads tiles %d halves at a time, so N and K must "
                        "be multiples of %d", name, shape.m, shape.n, shape.k, COOPMAT_PACK,
                        COOPMAT_PACK);
    /* GPU blocks for the real kernel; small ones for the emulated build
     * (tests), on any device, unless VKATTN_COOPMAT_EMULATED_TILING=gpu asks
     * for the GPU's (then as wide as shared memory allows: 48 columns in
     * lavapipe's 32 KiB, the emulated matrices living there too). */
    const char *tiling = getenv("VKATTN_COOPMAT_EMULATED_TILING");
    bool gpu_tiles = emulated ? tiling && strcmp(tiling, "gpu") == 0
                              : info->type != VKATTN_DEVICE_TYPE_CPU;
    uint32_t subgroups = gpu_tiles ? COOPMAT_SUBGROUPS : COOPMAT_SUBGROUPS_CPU;
    uint32_t bm = subgroups * shape.m, unit = lcm(shape.n, COOPMAT_PACK);
    uint32_t bk = round_up(gpu_tiles ? COOPMAT_SLAB_K : COOPMAT_SLAB_K_CPU, lcm(shape.k, COOPMAT_PACK));
    uint32_t bn = round_up(gpu_tiles ? COOPMAT_BLOCK_N : COOPMAT_BLOCK_N_CPU, unit);
    uint64_t shared;
    for (;; bn -= unit) {
        /* Packed slabs with rows padded by one element, one accumulator per
         * subgroup on its way out; the emulated build's matrices besides. */
        uint64_t b_rows = c->transpose_b ? bn : bk, b_width = c->transpose_b ? bk : bn;
        shared = 2ull * (bm * (bk + COOPMAT_PACK) + b_rows * (b_width + COOPMAT_PACK)) +
                 4ull * subgroups * shape.m * shape.n +
                 (emulated ? 2ull * subgroups * shape.m * shape.k + 4ull * bm * bn : 0);
        if (shared <= info->shared_memory_bytes || bn == unit)
            break;
    }
    uint32_t wg = subgroups * sg;
    if (shared > info->shared_memory_bytes || wg > info->max_workgroup_invocations)
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED,
                        "matmul: %s: a %ux%u block with %ux%ux%u matrices needs %llu bytes of "
                        "shared memory and %u invocations; %s has %u and %u", name, bm, bn,
                        shape.m, shape.n, shape.k, (unsigned long long)shared, wg, info->name,
                        info->shared_memory_bytes, info->max_workgroup_invocations);
    /* 16-byte loads where every row of a slab starts on 8 halves. */
    bool a_aligned8 = c->K % 8 == 0 && c->a_offset % 8 == 0;
    bool b_aligned8 = (c->transpose_b ? c->K % 8 == 0 : c->N % 8 == 0) && c->b_offset % 8 == 0 &&
                      (uint64_t)c->N * c->K % 8 == 0;
    vk_dispatch dispatch = {
        .key = {.shader = emulated ? SHADER_MATMUL_COOPMAT_EMULATED
                                   : coopmat_shader(ctx, SHADER_MATMUL_COOPMAT),
                .subgroup_size = required ? sg : 0,
                .spec_count = MC_SPEC_COUNT,
                .spec = {[MC_SPEC_WORKGROUP] = wg, [MC_SPEC_BM] = bm, [MC_SPEC_BN] = bn,
                         [MC_SPEC_BK] = bk, [MC_SPEC_TRANSPOSE_B] = c->transpose_b,
                         [MC_SPEC_HAS_BIAS] = c->bias != NULL,
                         [MC_SPEC_BIAS_DTYPE] = shader_dtype(c->bias),
                         [MC_SPEC_MM] = shape.m, [MC_SPEC_MN] = shape.n, [MC_SPEC_MK] = shape.k,
                         [MC_SPEC_A_ALIGNED8] = a_aligned8, [MC_SPEC_B_ALIGNED8] = b_aligned8,
                         [MC_SPEC_SUBGROUPS] = subgroups}},
        .bindings = {vk_bind(c->a, false), vk_bind(c->b, false), vk_bind(c->bias, false),
                     vk_bind(c->c, true)},
        .binding_count = 4,
    };
    return matmul_record_batches(ctx, &dispatch, c, div_up(c->N, bn), div_up(c->M, bm));
}
