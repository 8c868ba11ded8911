/* The matrix units' rate through VK_NV_cooperative_matrix on this device
 * (shaders/coopmat_peak.comp says what each variant feeds them), and through
 * workgroup-scope products where the device has VK_NV_cooperative_matrix2
 * (shaders/coopmat_peak_workgroup.comp), logged as a context starts with
 * VKATTN_COOPMAT_PEAK=1 in the environment: the ceiling
 * against which the coopmat kernels' figures read, measured rather than taken
 * from a datasheet (a datasheet's rate assumes Hopper's warpgroup
 * instructions, which this extension does not reach). Where the device has no
 * matrix units the emulated build runs instead, a few rounds: that tests the
 * kernel and the check of its results, its rate means nothing. A diagnostic:
 * every failure is a warning, never an error of the context. */
#include "attention_fused.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum peak_spec { /* constant_id values in coopmat_peak.comp */
    PEAK_SPEC_WORKGROUP = 0, PEAK_SPEC_MM, PEAK_SPEC_MN, PEAK_SPEC_MK, PEAK_SPEC_SUBGROUPS,
    PEAK_SPEC_ITERS, PEAK_SPEC_LOADS, PEAK_SPEC_COUNT
};

#define PEAK_CHAINS 8      /* coopmat_peak.comp's CHAINS: keep the two the same */
#define PEAK_TIMED_RUNS 5
#define PEAK_WARMUP_MS 300.0
#define PEAK_VARIANTS 4    /* LOADS = 0, 1, 2, 3 */

enum workgroup_spec { /* constant_id values in coopmat_peak_workgroup.comp */
    WORKGROUP_SPEC_SIZE = 0, WORKGROUP_SPEC_M, WORKGROUP_SPEC_N, WORKGROUP_SPEC_K,
    WORKGROUP_SPEC_ITERS, WORKGROUP_SPEC_LOADS, WORKGROUP_SPEC_SLOTS, WORKGROUP_SPEC_COUNT
};
#define WORKGROUP_CHAINS 2        /* coopmat_peak_workgroup.comp's CHAINS */
#define WORKGROUP_BUFFER_SLOTS 64 /* its BUFFER_SLOTS */
#define WORKGROUP_VARIANTS 4      /* LOADS = 0, 1, 2, 3 */

typedef struct peak_setup {
    coopmat_shape s;
    bool emulated;
    uint32_t sg, subgroups, iters, groups;
} peak_setup;

static const char *const peak_variant_names[PEAK_VARIANTS] = {
    "B in registers", "B from shared memory for each product",
    "B from shared memory for two products",
    "B from shared memory column-major for each product"};

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

/* A compiling run, on a GPU runs for PEAK_WARMUP_MS more (its clocks leave
 * idle only under load), then PEAK_TIMED_RUNS timed: the fastest's time (a
 * ceiling's: the least the host or the clocks held it back). */
static vkattn_status fastest_run(vkattn_context *ctx, const vk_dispatch *d, bool emulated,
                                 double *best)
{
    double ms = 0.0;
    vkattn_status s = timed_dispatch(ctx, d, &ms);
    double warm_until = host_time_ms() + (emulated ? 0.0 : PEAK_WARMUP_MS);
    while (s == VKATTN_OK && host_time_ms() < warm_until)
        s = timed_dispatch(ctx, d, &ms);
    for (int i = 0; s == VKATTN_OK && i < PEAK_TIMED_RUNS; i++)
        if ((s = timed_dispatch(ctx, d, &ms)) == VKATTN_OK && (i == 0 || ms < *best))
            *best = ms;
    return s;
}

/* One variant, timed (fastest_run): its rate into *tflops, the last run's
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
    vkattn_status s = fastest_run(ctx, &d, p->emulated, &best);
    if (s == VKATTN_OK && (s = vkattn_tensor_download(out, host, VKATTN_DTYPE_F32)) == VKATTN_OK)
        s = check_results(ctx, p, host, loads);
    if (s != VKATTN_OK)
        return s;
    double flops = 2.0 * p->s.m * p->s.n * p->s.k * PEAK_CHAINS * (double)p->iters *
                   p->subgroups * p->groups;
    *tflops = best > 0.0 ? flops / (best * 1e-3) * 1e-12 : 0.0;
    return VKATTN_OK;
}

/* The n results zeroed, but for result[0], the step between blocks (1): before
 * each variant, so that one that wrote nothing cannot pass on the last's. */
static vkattn_status reset_results(vkattn_tensor *out, float *host, uint64_t n)
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
        if ((s = reset_results(out, host, n)) == VKATTN_OK)
            s = run_variant(ctx, p, out, host, loads, &tflops[loads]);
    free(host);
    vkattn_tensor_destroy(out);
    return s;
}

/* "R TFLOP/s with NAME, ..." for variants first .. count - 1. */
static void format_rates(const double *tflops, const char *const *names, uint32_t first,
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
    format_rates(tflops, peak_variant_names, p.emulated ? 1 : 0, PEAK_VARIANTS, rates,
                 sizeof rates);
    ctx_log(ctx, VKATTN_LOG_INFO, "coopmat peak%s: %ux%ux%u f16 products into f32, %u "
            "workgroups of %u subgroup%s of %u, %u rounds of %d, fastest of %d runs: %s; "
            "results checked", build,
            p.s.m, p.s.n, p.s.k, p.groups, p.subgroups, p.subgroups > 1 ? "s" : "", p.sg,
            p.iters, PEAK_CHAINS, PEAK_TIMED_RUNS, rates);
    return p.emulated;
}

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
        if ((s = reset_results(out, host, n)) != VKATTN_OK)
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
        if ((s = fastest_run(ctx, &d, w->emulated, &best)) == VKATTN_OK &&
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

/* w with sizes m x n x k, each a multiple of the device's granularity (and K
 * of the packing), or the emulated build's own. */
static workgroup_setup workgroup_sized(const vkattn_context *ctx, workgroup_setup w, uint32_t m,
                                       uint32_t n, uint32_t k)
{
    const uint32_t *g = ctx->vk.caps.coopmat2_granularity;
    w.m = w.emulated ? m : round_up(m, g[0]);
    w.n = w.emulated ? n : round_up(n, g[1]);
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
static void report_workgroup_scope(vkattn_context *ctx, bool emulated)
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
    format_rates(tflops, workgroup_variant_names, 0, WORKGROUP_VARIANTS, rates, sizeof rates);
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
            w.m, w.n, w.k, w.groups, w.invocations, w.iters, WORKGROUP_CHAINS, PEAK_TIMED_RUNS,
            rates, shaped);
}

bool coopmat_peak_wanted(void) { return env_is_one("VKATTN_COOPMAT_PEAK"); }

void coopmat_peak_report(vkattn_context *ctx)
{
    if (!coopmat_peak_wanted() || ctx->vk.external)
        return;
    report_workgroup_scope(ctx, report_subgroup_scope(ctx));
}
