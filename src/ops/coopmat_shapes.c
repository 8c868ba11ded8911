/* The matrix shapes the cooperative-matrix kernels (attention and matmul) are
 * specialized for. */
#include "ops_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The revision of attention_coopmat.comp: a rewrite bumps it, and the kernel
 * is the default only where that revision passed the GPU check. */
#define COOPMAT_ATTENTION_REVISION 2

/* Vendors whose devices ran the real coopmat attention kernel through the GPU
 * check (scripts/gpu-check.sh: the test suite, validation on, and the bench
 * against the CPU reference), which revision of it, and whether with bf16
 * inputs (converted to f16 as they are staged, a code path of its own): it is
 * the default there, for those inputs, while that revision is the current one. */
static const struct {
    uint32_t vendor_id;
    int revision;
    bool bf16;
    const char *where; /* the device, driver and date of that run */
} coopmat_verified[] = {
    /* Revision 1: tiles of Q, O, S and P in shared memory, five barriers per
     * key tile. Revision 2: FlashAttention-2's shape, the variants, packed f16
     * tiles, two stages; bf16 inputs (since 2026-11-26, not yet on a GPU). */
    {0x10de, 1, false, "NVIDIA H100 80GB HBM3, driver 580.159.04, 2026-11-24 (bench/results/nvidia-h100-80gb-hbm3)"},
    {0x10de, 2, false, "NVIDIA H200, driver 580.159.04, 2026-11-26 (bench/results/nvidia-h200)"},
};

bool coopmat_attention_default(const vkattn_context *ctx, bool bf16_inputs)
{
    const char *env = getenv("VKATTN_COOPMAT");
    if (env && *env)
        return strcmp(env, "1") == 0; /* "0": off everywhere; "1": on wherever it runs */
    for (size_t i = 0; i < sizeof coopmat_verified / sizeof coopmat_verified[0]; i++)
        if (ctx->info.vendor_id == coopmat_verified[i].vendor_id &&
            coopmat_verified[i].revision == COOPMAT_ATTENTION_REVISION &&
            (coopmat_verified[i].bf16 || !bf16_inputs))
            return true;
    return false;
}

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
