/* The matrix units' rate through VK_NV_cooperative_matrix on this device
 * (shaders/coopmat_peak.comp says what each variant feeds them), and through
 * workgroup-scope products where the device has VK_NV_cooperative_matrix2
 * (coopmat_peak_workgroup.c), logged as a context starts with
 * VKATTN_COOPMAT_PEAK=1 in the environment: the ceiling
 * against which the coopmat kernels' figures read, measured rather than taken
 * from a datasheet (a datasheet's rate assumes Hopper's warpgroup
 * instructions, which this extension does not reach). Where the device has no
 * matrix units the emulated build runs instead, a few rounds: that tests the
 * kernel and the check of its results, its rate means nothing. A diagnostic:
 * every failure is a warning, never an error of the context. */
#include "attention_fused.h"
#include "coopmat_peak.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum peak_spec { /* constant_id values in coopmat_peak.comp */
    PEAK_SPEC_WORKGROUP = 0, PEAK_SPEC_MM, PEAK_SPEC_MN, PEAK_SPEC_MK, PEAK_SPEC_SUBGROUPS,
    PEAK_SPEC_ITERS, PEAK_SPEC_LOADS, PEAK_SPEC_COUNT
};

#define PEAK_CHAINS 8      /* coopmat_peak.comp's CHAINS: keep the two the same */
#define PEAK_WARMUP_MS 300.0
#define PEAK_VARIANTS 4    /* LOADS = 0, 1, 2, 3 */

typedef struct peak_setup {
    coopmat_shape s;
    bool emulated;
    uint32_t sg, subgroups, iters, groups;
} peak_setup;

static const char *const peak_variant_names[PEAK_VARIANTS] = {
    "B in registers", "B from shared memory for each product",
    "B from shared memory for two products",
    "B from shared memory column-major for each product"};

/* result[0] (the step between B blocks), every accumulator of the first
 * workgroup, then every invocation's sum. */
static uint64_t result_count(const peak_setup *p)
{
    return 1 + (uint64_t)p->subgroups * PEAK_CHAINS * p->s.m * p->s.n +
           (uint64_t)p->groups * p->sg * p->subgroups;
}

/* Chain c's elements c + ITERS * MK / 256, every invocation's sum of one
 * element of each chain that summed over c. */
static vkattn_status check_results(vkattn_context *ctx, const peak_setup *p, const float *r,
                                   uint32_t loads)
{
    float added = (float)p->iters * (float)p->s.k / 256.0f;
    uint64_t cells = (uint64_t)p->s.m * p->s.n;
    uint64_t full = 1 + (uint64_t)p->subgroups * PEAK_CHAINS * cells;
    float total = 0.0f;
    for (int c = 0; c < PEAK_CHAINS; c++)
        total += (float)c + added;
    for (uint64_t i = 1; i < result_count(p); i++) {
        float want = i < full ? (float)((i - 1) / cells % PEAK_CHAINS) + added : total;
        if (r[i] != want)
            return ctx_fail(ctx, VKATTN_ERROR_DEVICE_LOST, "coopmat peak: %s: result %llu is "
                            "%g, not %g", peak_variant_names[loads], (unsigned long long)i,
                            r[i], want);
    }
    return VKATTN_OK;
}

/* One run, timed from an idle queue (nothing recorded before it). */
static vkattn_status timed_dispatch(vkattn_context *ctx, const vk_dispatch *d, double *ms)
{
    vkattn_status s;
    if ((s = vkattn_synchronize(ctx)) || (s = vkattn_timer_begin(ctx)) ||
        (s = vk_cmd_dispatch(ctx, d)))
        return s;
    return vkattn_timer_end(ctx, ms);
}

/* (coopmat_peak.h; the warm-up: PEAK_WARMUP_MS) */
vkattn_status coopmat_peak_fastest_run(vkattn_context *ctx, const vk_dispatch *d, bool emulated,
                                       double *best)
{
    double ms = 0.0;
    vkattn_status s = timed_dispatch(ctx, d, &ms);
    double warm_until = host_time_ms() + (emulated ? 0.0 : PEAK_WARMUP_MS);
    while (s == VKATTN_OK && host_time_ms() < warm_until)
        s = timed_dispatch(ctx, d, &ms);
    for (int i = 0; s == VKATTN_OK && i < COOPMAT_PEAK_TIMED_RUNS; i++)
        if ((s = timed_dispatch(ctx, d, &ms)) == VKATTN_OK && (i == 0 || ms < *best))
            *best = ms;
    return s;
}

/* One variant, timed (coopmat_peak_fastest_run): its rate into *tflops, the last run's
 * results checked. */
static vkattn_status run_variant(vkattn_context *ctx, const peak_setup *p, vkattn_tensor *out,
                                 float *host, uint32_t loads, double *tflops)
{
    bool required;
    coopmat_subgroup_size(ctx, p->emulated, &required);
    vk_dispatch d = {
        .key = {.shader = p->emulated ? SHADER_COOPMAT_PEAK_EMULATED
                                      : coopmat_shader(ctx, SHADER_COOPMAT_PEAK),
                .subgroup_size = required ? p->sg : 0,
                .spec_count = PEAK_SPEC_COUNT,
                .spec = {[PEAK_SPEC_WORKGROUP] = p->sg * p->subgroups, [PEAK_SPEC_MM] = p->s.m,
                         [PEAK_SPEC_MN] = p->s.n, [PEAK_SPEC_MK] = p->s.k,
                         [PEAK_SPEC_SUBGROUPS] = p->subgroups, [PEAK_SPEC_ITERS] = p->iters,
                         [PEAK_SPEC_LOADS] = loads}},
        .bindings = {vk_bind(out, true)},
        .binding_count = 1,
        .groups = {p->groups, 1, 1},
    };
    double best = 0.0;
    vkattn_status s = coopmat_peak_fastest_run(ctx, &d, p->emulated, &best);
    if (s == VKATTN_OK && (s = vkattn_tensor_download(out, host, VKATTN_DTYPE_F32)) == VKATTN_OK)
        s = check_results(ctx, p, host, loads);
    if (s != VKATTN_OK)
        return s;
    double flops = 2.0 * p->s.m * p->s.n * p->s.k * PEAK_CHAINS * (double)p->iters *
                   p->subgroups * p->groups;
    *tflops = best > 0.0 ? flops / (best * 1e-3) * 1e-12 : 0.0;
    return VKATTN_OK;
}

/* (coopmat_peak.h) */
vkattn_status coopmat_peak_reset_results(vkattn_tensor *out, float *host, uint64_t n)
{
    memset(host, 0, n * sizeof *host);
    host[0] = 1.0f;
    return vkattn_tensor_upload(out, host, VKATTN_DTYPE_F32);
}

static vkattn_status measure(vkattn_context *ctx, const peak_setup *p,
                             double tflops[PEAK_VARIANTS])
{
    uint64_t n = result_count(p);
    vkattn_tensor *out;
    vkattn_tensor_desc desc = {.dtype = VKATTN_DTYPE_F32, .ndim = 1, .shape = {(int64_t)n}};
    vkattn_status s = vkattn_tensor_create(ctx, &desc, &out);
    if (s != VKATTN_OK)
        return s;
    float *host = calloc(n, sizeof *host);
    if (!host)
        s = ctx_fail(ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "coopmat peak: %llu results",
                     (unsigned long long)n);
    /* The emulated build has no B in registers: its variant 0 is not run. */
    for (uint32_t loads = p->emulated ? 1 : 0; s == VKATTN_OK && loads < PEAK_VARIANTS; loads++)
        if ((s = coopmat_peak_reset_results(out, host, n)) == VKATTN_OK)
            s = run_variant(ctx, p, out, host, loads, &tflops[loads]);
    free(host);
    vkattn_tensor_destroy(out);
    return s;
}

/* (coopmat_peak.h) */
void coopmat_peak_format_rates(const double *tflops, const char *const *names, uint32_t first,
                               uint32_t count, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (uint32_t v = first; v < count && used < size; v++)
        used += (size_t)snprintf(out + used, size - used, "%s%.4g TFLOP/s with %s",
                                 used ? ", " : "", tflops[v], names[v]);
}

/* The subgroup-scope products (coopmat_peak.comp), logged. Returns whether
 * they are the emulated build's (the device has no matrix units vkattn can
 * run). */
static bool report_subgroup_scope(vkattn_context *ctx)
{
    bool required;
    peak_setup p = {.sg = coopmat_subgroup_size(ctx, false, &required)};
    p.emulated = !(ctx->vk.enabled.coopmat && required &&
                   coopmat_device_shape(&ctx->vk.enabled, &p.s));
    if (p.emulated)
        p.sg = coopmat_subgroup_size(ctx, true, &required);
    if (p.emulated && !coopmat_emulated_shape(&p.s))
        return p.emulated;
    /* On the matrix units: enough workgroups to fill a large GPU several times
     * over, a millisecond or so of products. Emulated (shared memory for every
     * matrix, 32 KiB on lavapipe): one subgroup a workgroup, a few rounds. */
    p.subgroups = p.emulated ? 1 : 4;
    p.iters = p.emulated ? 2 : 1024;
    p.groups = p.emulated ? 2 : 1024;
    const char *build = p.emulated ? " (emulated build)" : "";
    double tflops[PEAK_VARIANTS] = {0};
    vkattn_status s = VKATTN_OK;
    if (!p.sg || p.s.n % 8 || p.s.k % 8)
        s = ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "coopmat peak: %ux%ux%u matrices: N and K "
                     "must be multiples of 8 (packed operands)", p.s.m, p.s.n, p.s.k);
    else if (!device_caps_whole_subgroups(&ctx->vk.enabled)) {
        /* As the emulated kernels: its workgroup is one subgroup of the size
         * specialized for, which a varying size would leave part idle or short. */
        char why[256];
        device_caps_whole_subgroups_why(&ctx->vk.enabled, ctx->info.name, why, sizeof why);
        s = ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "coopmat peak: %s", why);
    } else
        s = measure(ctx, &p, tflops);
    if (s != VKATTN_OK) {
        ctx_log(ctx, VKATTN_LOG_WARNING, "coopmat peak%s: not measured: %s", build,
                ctx->last_error);
        ctx->last_error[0] = '\0';
        return p.emulated;
    }
    char rates[448];
    coopmat_peak_format_rates(tflops, peak_variant_names, p.emulated ? 1 : 0, PEAK_VARIANTS,
                              rates, sizeof rates);
    ctx_log(ctx, VKATTN_LOG_INFO, "coopmat peak%s: %ux%ux%u f16 products into f32, %u "
            "workgroups of %u subgroup%s of %u, %u rounds of %d, fastest of %d runs: %s; "
            "results checked", build,
            p.s.m, p.s.n, p.s.k, p.groups, p.subgroups, p.subgroups > 1 ? "s" : "", p.sg,
            p.iters, PEAK_CHAINS, COOPMAT_PEAK_TIMED_RUNS, rates);
    return p.emulated;
}

bool coopmat_peak_wanted(void) { return env_is_one("VKATTN_COOPMAT_PEAK"); }

void coopmat_peak_report(vkattn_context *ctx)
{
    if (!coopmat_peak_wanted() || ctx->vk.external)
        return;
    coopmat_peak_workgroup_report(ctx, report_subgroup_scope(ctx));
}
