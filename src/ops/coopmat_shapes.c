/* The matrix shapes the cooperative-matrix kernels (attention and matmul) are
 * specialized for, and the build of each for the device's extension. */
#include "ops_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Larger shapes would not leave room for the kernels' tiles. */
#define COOPMAT_MAX_SHAPE 64

bool coopmat_device_shape(const device_caps *caps, coopmat_shape *out)
{
    uint64_t best = 0;
    for (uint32_t i = 0; i < caps->coopmat_shape_count; i++) {
        coopmat_shape s = caps->coopmat_shapes[i];
        uint64_t work = (uint64_t)s.m * s.n * s.k;
        if (s.m && s.n && s.k && s.m <= COOPMAT_MAX_SHAPE && s.n <= COOPMAT_MAX_SHAPE &&
            s.k <= COOPMAT_MAX_SHAPE && work > best)
            best = work, *out = s;
    }
    return best > 0;
}

bool coopmat_bf16_shape(const device_caps *caps, coopmat_shape s)
{
    for (uint32_t i = 0; i < caps->bf16_shape_count; i++)
        if (caps->bf16_shapes[i].m == s.m && caps->bf16_shapes[i].n == s.n &&
            caps->bf16_shapes[i].k == s.k)
            return true;
    return false;
}

bool coopmat_emulated_shape(coopmat_shape *out)
{
    *out = (coopmat_shape){16, 16, 16};
    const char *env = getenv("VKATTN_COOPMAT_EMULATED_SHAPE");
    unsigned m, n, k;
    if (env && sscanf(env, "%ux%ux%u", &m, &n, &k) == 3) {
        if (!m || !n || !k || m > COOPMAT_MAX_SHAPE || n > COOPMAT_MAX_SHAPE ||
            k > COOPMAT_MAX_SHAPE)
            return false;
        *out = (coopmat_shape){m, n, k};
    }
    return true;
}

/* Each cooperative-matrix kernel's VK_KHR_cooperative_matrix build (made from
 * its NV SPIR-V by tools/coopmat_khr.c). The layout probe has none: it serves
 * the softmax in registers, which needs NV's conversion of accumulators into
 * operands. */
static const struct {
    shader_id nv, khr;
} coopmat_khr_builds[] = {
    {SHADER_ATTENTION_COOPMAT, SHADER_ATTENTION_COOPMAT_KHR},
    {SHADER_MATMUL_COOPMAT, SHADER_MATMUL_COOPMAT_KHR},
    {SHADER_COOPMAT_PEAK, SHADER_COOPMAT_PEAK_KHR},
};

uint32_t coopmat_subgroup_size(const vkattn_context *ctx, bool emulated, bool *required)
{
    uint32_t sg = kernel_subgroup_size(ctx, required);
    const device_caps *caps = &ctx->vk.enabled;
    /* VK_KHR_cooperative_matrix does not say which subgroup size a device's
     * matrix units take. AMD's (WMMA: wave32 on RDNA3, where drivers default
     * to 64) and Intel's (DPAS: SIMD8 on Alchemist, SIMD16 on Battlemage) run
     * at the device's smallest size, so the KHR builds require that. Not yet
     * run on either. NVIDIA has one size. */
    if (!emulated && caps->coopmat_khr && caps->subgroup_size_control && caps->subgroup_min) {
        *required = true;
        return caps->subgroup_min;
    }
    return sg;
}

shader_id coopmat_shader(const vkattn_context *ctx, shader_id nv)
{
    if (ctx->vk.enabled.coopmat_khr)
        for (size_t i = 0; i < sizeof coopmat_khr_builds / sizeof coopmat_khr_builds[0]; i++)
            if (coopmat_khr_builds[i].nv == nv)
                return coopmat_khr_builds[i].khr;
    return nv;
}

/* Why this context cannot run workgroup-scope matrices ("" where it can). */
static void coopmat_workgroup_missing(const vkattn_context *ctx, char *why, size_t size)
{
    const device_caps *caps = &ctx->vk.caps;
    uint32_t both = DEVICE_COOPMAT2_WORKGROUP_SCOPE | DEVICE_COOPMAT2_FLEXIBLE_DIMENSIONS;
    why[0] = '\0';
    if (ctx->vk.enabled.coopmat2_workgroup)
        return;
    if (!caps->coopmat2)
        snprintf(why, size, "%s lacks VK_NV_cooperative_matrix2", ctx->info.name);
    else if (caps->coopmat2_unqueried_why[0])
        snprintf(why, size, "VK_NV_cooperative_matrix2 not queried: %s",
                 caps->coopmat2_unqueried_why);
    else if ((caps->coopmat2_features & both) != both)
        snprintf(why, size, "%s lacks VK_NV_cooperative_matrix2's workgroup scope or flexible "
                 "dimensions", ctx->info.name);
    else if (!caps->coopmat2_invocations)
        snprintf(why, size, "%s lists no f16 x f16 + f32 workgroup-scope products",
                 ctx->info.name);
    else if (!ctx->vk.enabled.coopmat_khr)
        snprintf(why, size, "they go through VK_KHR_cooperative_matrix, and this context takes "
                 "VK_NV_cooperative_matrix (VKATTN_COOPMAT_KHR=1 takes the KHR one)");
    else
        snprintf(why, size, "not enabled on this device (VKATTN_COOPMAT_WORKGROUP=1 enables them "
                 "on a device vkattn creates)");
}

bool coopmat_workgroup_build(const vkattn_context *ctx, bool no_matrix_units, bool *emulated,
                             char *why, size_t size)
{
    coopmat_workgroup_missing(ctx, why, size);
    *emulated = why[0] != '\0';
    return !*emulated || no_matrix_units;
}
