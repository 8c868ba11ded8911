/* The matrix units' rate through workgroup-scope products
 * (shaders/coopmat_peak_workgroup.comp: VK_NV_cooperative_matrix2's workgroup
 * scope and flexible dimensions through VK_KHR_cooperative_matrix), beside the
 * subgroup-scope products of coopmat_peak.c, which calls it with
 * VKATTN_COOPMAT_PEAK=1: on the device where the context has them, else (no
 * matrix units at all) in the emulated build, a test of the kernel and of the
 * check of its results. A diagnostic: every failure is a warning. */
#include "attention_fused.h"
#include "coopmat_peak.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum workgroup_spec { /* constant_id values in coopmat_peak_workgroup.comp */
    WORKGROUP_SPEC_SIZE = 0, WORKGROUP_SPEC_M, WORKGROUP_SPEC_N, WORKGROUP_SPEC_K,
    WORKGROUP_SPEC_ITERS, WORKGROUP_SPEC_LOADS, WORKGROUP_SPEC_SLOTS, WORKGROUP_SPEC_COUNT
};
#define WORKGROUP_CHAINS 2        /* coopmat_peak_workgroup.comp's CHAINS */
#define WORKGROUP_BUFFER_SLOTS 64 /* its BUFFER_SLOTS */
#define WORKGROUP_VARIANTS 4      /* LOADS = 0, 1, 2, 3 */

/* Workgroup-scope products: M x N x K on workgroups of `invocations`, with
 * `slots` blocks of each operand in shared memory (coopmat_peak_workgroup.comp's
 * SLOTS: 1 for runs of its buffer variants only). */
typedef struct workgroup_setup {
    uint32_t m, n, k, invocations, iters, groups, slots;
    bool emulated;
} workgroup_setup;

enum { /* coopmat_peak_workgroup.comp's LOADS, by what feeds B */
    WORKGROUP_B_SHARED = 0, WORKGROUP_AB_SHARED, WORKGROUP_B_BUFFER, WORKGROUP_B_BUFFER_COLUMNS
};

static const char *const workgroup_variant_names[WORKGROUP_VARIANTS] = {
    "A held and B from shared memory for each product",
    "A and B from shared memory for each product",
    "A held and B from a storage buffer for each product",
    "A held and B from a storage buffer column-major for each product"};

/* Where coopmat_peak_workgroup.comp's accumulators start in its results: past
 * result[0], 16-byte aligned as a matrix store needs (its RESULTS). */
#define WORKGROUP_RESULTS 4

/* A WORKGROUP_CHAINS of M x N accumulators a workgroup: chain c's elements
 * c + ITERS * K / 256. */
static vkattn_status check_workgroup_results(vkattn_context *ctx, const workgroup_setup *w,
                                             const float *r, uint32_t loads)
{
    float added = (float)w->iters * (float)w->k / 256.0f;
    uint64_t cells = (uint64_t)w->m * w->n;
    uint64_t count = WORKGROUP_RESULTS + (uint64_t)w->groups * WORKGROUP_CHAINS * cells;
    for (uint64_t i = WORKGROUP_RESULTS; i < count; i++) {
        float want = (float)((i - WORKGROUP_RESULTS) / cells % WORKGROUP_CHAINS) + added;
        if (r[i] != want)
            return ctx_fail(ctx, VKATTN_ERROR_DEVICE_LOST, "coopmat peak, workgroup scope: %s: "
                            "result %llu is %g, not %g", workgroup_variant_names[loads],
                            (unsigned long long)i, r[i], want);
    }
    return VKATTN_OK;
}

/* The `count` variants of coopmat_peak_workgroup.comp in `variants`, timed and
 * checked: each one's rate into tflops[variant]. */
static vkattn_status measure_workgroup(vkattn_context *ctx, const workgroup_setup *w,
                                       const uint32_t *variants, uint32_t count,
                                       double tflops[WORKGROUP_VARIANTS])
{
    uint64_t n = WORKGROUP_RESULTS + (uint64_t)w->groups * WORKGROUP_CHAINS * w->m * w->n;
    uint64_t halves = (uint64_t)WORKGROUP_BUFFER_SLOTS * w->k * w->n;
    vkattn_tensor *out = NULL, *blocks = NULL;
    vkattn_tensor_desc out_desc = {.dtype = VKATTN_DTYPE_F32, .ndim = 1, .shape = {(int64_t)n}};
    vkattn_tensor_desc blocks_desc = {.dtype = VKATTN_DTYPE_F16, .ndim = 1,
                                      .shape = {(int64_t)halves}};
    float *host = NULL;
    vkattn_status s = vkattn_tensor_create(ctx, &out_desc, &out);
    if (s == VKATTN_OK)
        s = vkattn_tensor_create(ctx, &blocks_desc, &blocks);
    if (s == VKATTN_OK && !(host = calloc(n > halves ? n : halves, sizeof *host)))
        s = ctx_fail(ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "coopmat peak, workgroup scope: "
                     "%llu results", (unsigned long long)n);
    if (s == VKATTN_OK) {
        for (uint64_t i = 0; i < halves; i++)
            host[i] = 0.0625f;
        s = vkattn_tensor_upload(blocks, host, VKATTN_DTYPE_F32);
    }
    /* The real build's matrices need whole subgroups (SPIR-V below 1.6): the
     * size the kernels require, as the subgroup-scope probe's. */
    bool required;
    uint32_t sg = coopmat_subgroup_size(ctx, w->emulated, &required);
    for (uint32_t v = 0; s == VKATTN_OK && v < count; v++) {
        uint32_t loads = variants[v];
        if ((s = coopmat_peak_reset_results(out, host, n)) != VKATTN_OK)
            break;
        vk_dispatch d = {
            .key = {.shader = w->emulated ? SHADER_COOPMAT_PEAK_WORKGROUP_EMULATED
                                          : SHADER_COOPMAT_PEAK_WORKGROUP_KHR,
                    .subgroup_size = !w->emulated && required ? sg : 0,
                    .spec_count = WORKGROUP_SPEC_COUNT,
                    .spec = {[WORKGROUP_SPEC_SIZE] = w->invocations, [WORKGROUP_SPEC_M] = w->m,
                             [WORKGROUP_SPEC_N] = w->n, [WORKGROUP_SPEC_K] = w->k,
                             [WORKGROUP_SPEC_ITERS] = w->iters, [WORKGROUP_SPEC_LOADS] = loads,
                             [WORKGROUP_SPEC_SLOTS] = w->slots}},
            .bindings = {vk_bind(out, true), vk_bind(blocks, false)},
            .binding_count = 2,
            .groups = {w->groups, 1, 1},
        };
        double best = 0.0;
        if ((s = coopmat_peak_fastest_run(ctx, &d, w->emulated, &best)) == VKATTN_OK &&
            (s = vkattn_tensor_download(out, host, VKATTN_DTYPE_F32)) == VKATTN_OK)
            s = check_workgroup_results(ctx, w, host, loads);
        double flops = 2.0 * w->m * w->n * w->k * WORKGROUP_CHAINS * (double)w->iters * w->groups;
        tflops[loads] = best > 0.0 ? flops / (best * 1e-3) * 1e-12 : 0.0;
    }
    free(host);
    vkattn_tensor_destroy(blocks);
    vkattn_tensor_destroy(out);
    return s;
}

/* Whether w's products fit the device (its workgroup size, shared memory and,
 * on the matrix units, the largest flexible side); else why not, failed on ctx. */
static vkattn_status workgroup_fits(vkattn_context *ctx, const workgroup_setup *w)
{
    const device_caps *caps = &ctx->vk.caps;
    uint64_t operands = (uint64_t)w->m * w->k + (uint64_t)w->k * w->n;
    uint64_t shared = 2ull * w->slots * operands +
                      (w->emulated ? 2ull * operands + 8ull * w->m * w->n
                                   : caps->coopmat2_reserved_shared);
    uint32_t largest = w->m > w->n ? (w->m > w->k ? w->m : w->k) : (w->n > w->k ? w->n : w->k);
    if (w->invocations <= ctx->info.max_workgroup_invocations &&
        shared <= ctx->info.shared_memory_bytes &&
        (w->emulated || largest <= caps->coopmat2_flexible_max))
        return VKATTN_OK;
    return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "%ux%ux%u products on workgroups of %u need "
                    "%llu bytes of shared memory (%u here) and sides up to %u", w->m, w->n,
                    w->k, w->invocations, (unsigned long long)shared,
                    ctx->info.shared_memory_bytes,
                    w->emulated ? largest : caps->coopmat2_flexible_max);
}

/* w with sizes m x n x k, each a multiple of the device's granularity (and N
 * and K of the packing: a row-major B's rows are N/8 packed elements long, a
 * column-major one's K/8), or the emulated build's own. */
static workgroup_setup workgroup_sized(const vkattn_context *ctx, workgroup_setup w, uint32_t m,
                                       uint32_t n, uint32_t k)
{
    const uint32_t *g = ctx->vk.caps.coopmat2_granularity;
    w.m = w.emulated ? m : round_up(m, g[0]);
    w.n = w.emulated ? n : round_up(n, lcm(g[1], 8));
    w.k = w.emulated ? k : round_up(k, lcm(g[2], 8));
    return w;
}

/* The workgroup-scope products (coopmat_peak_workgroup.comp), logged: on the
 * device's matrix units where VK_NV_cooperative_matrix2 gives them, else (no
 * matrix units at all) the emulated build, else why not. First 64 x 64
 * products over 32 (the attention kernel's tiles) fed each way; then shaped
 * as an attention kernel's with 64 query rows, 64 keys and D = 128 would be,
 * their B from a storage buffer as a kernel leaving the staging to the driver
 * would load K and V: S = Q K^T (64 x 64 x 128, K^T column-major) and
 * O += P V (64 x 128 x 64). Sizes rounded up to the device's granularity;
 * the emulated build's are small. */
void coopmat_peak_workgroup_report(vkattn_context *ctx, bool emulated)
{
    const device_caps *caps = &ctx->vk.caps;
    char why[512];
    if (!coopmat_workgroup_build(ctx, emulated, &emulated, why, sizeof why)) {
        ctx_log(ctx, VKATTN_LOG_INFO, "coopmat peak, workgroup scope: not measured: %s", why);
        return;
    }
    workgroup_setup base = {.emulated = emulated, .slots = 2};
    if (emulated)
        base.invocations = 16, base.iters = 2, base.groups = 2;
    else
        base.invocations = caps->coopmat2_invocations, base.iters = 256, base.groups = 1024;
    workgroup_setup w = workgroup_sized(ctx, base, emulated ? 16 : 64, emulated ? 16 : 64,
                                        emulated ? 8 : 32);
    base.slots = 1;
    workgroup_setup scores = workgroup_sized(ctx, base, emulated ? 16 : 64, emulated ? 16 : 64,
                                             emulated ? 32 : 128);
    workgroup_setup output = workgroup_sized(ctx, base, emulated ? 16 : 64, emulated ? 32 : 128,
                                             emulated ? 16 : 64);
    const char *build = emulated ? " (emulated build)" : "";
    static const uint32_t every[] = {WORKGROUP_B_SHARED, WORKGROUP_AB_SHARED, WORKGROUP_B_BUFFER,
                                     WORKGROUP_B_BUFFER_COLUMNS};
    static const uint32_t columns[] = {WORKGROUP_B_BUFFER_COLUMNS}, rows[] = {WORKGROUP_B_BUFFER};
    double tflops[WORKGROUP_VARIANTS] = {0}, s_rate[WORKGROUP_VARIANTS] = {0},
           o_rate[WORKGROUP_VARIANTS] = {0};
    vkattn_status s = workgroup_fits(ctx, &w);
    if (s == VKATTN_OK)
        s = measure_workgroup(ctx, &w, every, 4, tflops);
    if (s != VKATTN_OK) {
        ctx_log(ctx, VKATTN_LOG_WARNING, "coopmat peak, workgroup scope%s: not measured: %s",
                build, ctx->last_error);
        ctx->last_error[0] = '\0';
        return;
    }
    char rates[448], shaped[400];
    coopmat_peak_format_rates(tflops, workgroup_variant_names, 0, WORKGROUP_VARIANTS, rates,
                              sizeof rates);
    vkattn_status t = workgroup_fits(ctx, &scores);
    if (t == VKATTN_OK && (t = workgroup_fits(ctx, &output)) == VKATTN_OK &&
        (t = measure_workgroup(ctx, &scores, columns, 1, s_rate)) == VKATTN_OK)
        t = measure_workgroup(ctx, &output, rows, 1, o_rate);
    if (t == VKATTN_OK)
        snprintf(shaped, sizeof shaped, "S = Q K^T %ux%ux%u with K^T column-major from a "
                 "storage buffer %.4g TFLOP/s, O += P V %ux%ux%u with V from a storage buffer "
                 "%.4g TFLOP/s", scores.m, scores.n, scores.k, s_rate[WORKGROUP_B_BUFFER_COLUMNS],
                 output.m, output.n, output.k, o_rate[WORKGROUP_B_BUFFER]);
    else {
        snprintf(shaped, sizeof shaped, "not measured: %.300s", ctx->last_error);
        ctx->last_error[0] = '\0';
    }
    ctx_log(ctx, VKATTN_LOG_INFO, "coopmat peak, workgroup scope%s: %ux%ux%u f16 products into "
            "f32, %u workgroups of %u invocations, %u rounds of %d, fastest of %d runs: %s; "
            "shaped as attention's (64 query rows, 64 keys, D 128): %s; results checked", build,
            w.m, w.n, w.k, w.groups, w.invocations, w.iters, WORKGROUP_CHAINS,
            COOPMAT_PEAK_TIMED_RUNS,
            rates, shaped);
}
