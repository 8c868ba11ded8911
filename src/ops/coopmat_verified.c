/* Where each cooperative-matrix kernel is AUTO's choice: the devices its
 * current revision passed the GPU check on (coopmat_default, ops_common.h). */
#include "ops_common.h"

#include <stdlib.h>
#include <string.h>

/* Each coopmat kernel's revision: a rewrite bumps it, and the kernel is the
 * default only where that revision passed the GPU check. */
static const int coopmat_revision[] = {
    [COOPMAT_KERNEL_ATTENTION] = 2, /* attention_coopmat.comp */
    [COOPMAT_KERNEL_MATMUL] = 3,    /* matmul_coopmat.comp */
};

/* Vendors whose devices ran a real coopmat kernel through the GPU check
 * (scripts/gpu-check.sh: its tests, validation on, and the bench against the
 * CPU reference), which revision, with which extension's build, and whether
 * with bf16 inputs (the attention kernel converts them to f16 as they are
 * staged, a code path of its own): the kernel is the default there, for those
 * inputs, while that revision is the current one. By vendor, not by device:
 * NVIDIA's rows were earned on Hopper (H100, H200) and hold for its other
 * GPUs with the extension, whose matrix units the same driver serves; a
 * device of such a vendor that cannot plan a call still falls back to the
 * scalar kernels (the attention choice's plan, matmul_coopmat_wanted). */
static const struct {
    coopmat_kernel kernel;
    uint32_t vendor_id;
    int revision;
    bool bf16;
    bool khr;          /* the VK_KHR_cooperative_matrix build (else the NV one) */
    const char *where; /* the device, driver and date of that run */
} coopmat_verified[] = {
    /* Attention revision 1: tiles of Q, O, S and P in shared memory, five
     * barriers per key tile. Revision 2: FlashAttention-2's shape, the
     * variants, packed f16 tiles, two stages, bf16 inputs. */
    {COOPMAT_KERNEL_ATTENTION, 0x10de, 1, false, false,
     "NVIDIA H100 80GB HBM3, driver 580.159.04, 2026-11-24 (bench/results/nvidia-h100-80gb-hbm3)"},
    {COOPMAT_KERNEL_ATTENTION, 0x10de, 2, false, false,
     "NVIDIA H200, driver 580.159.04, 2026-11-26 (bench/results/nvidia-h200)"},
    /* bf16: test_coopmat_device's bf16 cases (magnitudes to 1e5, bf16 beside
     * f16) and the bench's bf16 prefill, on the real kernel, in both builds. */
    {COOPMAT_KERNEL_ATTENTION, 0x10de, 2, true, false,
     "NVIDIA H200, driver 580.159.04, 2026-11-27 (bench/results/nvidia-h200/third-check)"},
    /* Matmul revision 3: a grid of subgroups each owning several matrices both
     * ways, two stages; every fixed case and the tuned layouts of test_matmul,
     * the NV build with validation, the KHR build without (the layer predates
     * it); 99.6 TFLOP/s at 4096^3, the scalar kernel's 7.5 ms in 1.38. */
    {COOPMAT_KERNEL_MATMUL, 0x10de, 3, false, false,
     "NVIDIA H200, driver 580.159.04, 2026-11-27 (bench/results/nvidia-h200/third-check-rerun)"},
    /* The KHR builds on NVIDIA (taken there only with VKATTN_COOPMAT_KHR=1):
     * test_coopmat_device (bf16 cases too) and test_matmul's coopmat tests,
     * without validation. AMD and Intel, where the KHR build is the one, have
     * not run them. */
    {COOPMAT_KERNEL_ATTENTION, 0x10de, 2, true, true,
     "NVIDIA H200, driver 580.159.04, 2026-11-27 (bench/results/nvidia-h200/third-check)"},
    {COOPMAT_KERNEL_MATMUL, 0x10de, 3, false, true,
     "NVIDIA H200, driver 580.159.04, 2026-11-27 (bench/results/nvidia-h200/third-check-rerun)"},
};

bool coopmat_default(const vkattn_context *ctx, coopmat_kernel kernel, bool bf16_inputs)
{
    const char *env = getenv("VKATTN_COOPMAT");
    if (env && *env)
        return strcmp(env, "1") == 0; /* "0": off everywhere; "1": on wherever it runs */
    for (size_t i = 0; i < sizeof coopmat_verified / sizeof coopmat_verified[0]; i++)
        if (coopmat_verified[i].kernel == kernel &&
            ctx->info.vendor_id == coopmat_verified[i].vendor_id &&
            coopmat_verified[i].revision == coopmat_revision[kernel] &&
            coopmat_verified[i].khr == ctx->vk.enabled.coopmat_khr &&
            (coopmat_verified[i].bf16 || !bf16_inputs))
            return true;
    return false;
}
