/* vkattn-bench: test data, tensors, the timing loop, row blocks and comparison. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void bench_fill(float *v, size_t n, uint64_t seed, float lo, float hi)
{
    uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        double unit = (double)(state >> 40) / 16777216.0; /* [0, 1) from 24 bits */
        v[i] = (float)(lo + (hi - lo) * unit);
    }
}

double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

vkattn_status bench_tensor(vkattn_context *ctx, bench_tensors *ts, vkattn_dtype dtype, int ndim,
                           const int64_t *shape, const float *data, vkattn_tensor **out)
{
    if (ts->n == BENCH_MAX_TENSORS)
        return VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    vkattn_tensor_desc d = {.dtype = dtype, .ndim = ndim};
    memcpy(d.shape, shape, (size_t)ndim * sizeof shape[0]);
    vkattn_status s = vkattn_tensor_create(ctx, &d, out);
    if (s != VKATTN_OK)
        return s;
    ts->t[ts->n++] = *out;
    return data ? vkattn_tensor_upload(*out, data, VKATTN_DTYPE_F32) : VKATTN_OK;
}

void bench_tensors_release(bench_tensors *ts)
{
    for (int i = 0; i < ts->n; i++)
        vkattn_tensor_destroy(ts->t[i]);
    ts->n = 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Each kernel's GPU time per timed run (the profile since the warm-up), the
 * most first: "attention_decode 21.3 us, attention_combine 4.1 us"; a kernel
 * dispatched several times a run gets "(xN)". */
static vkattn_status kernel_times(vkattn_context *ctx, int reps, char *buf, size_t size)
{
    vkattn_kernel_time k[6];
    uint32_t n = 0;
    vkattn_status s = vkattn_profile_read(ctx, k, 6, &n, true);
    buf[0] = '\0';
    size_t used = 0;
    for (uint32_t i = 0; s == VKATTN_OK && i < n && i < 6 && used < size; i++) {
        double us = k[i].total_ms * 1e3 / reps;
        uint64_t per_run = k[i].dispatches / (uint64_t)reps;
        used += (size_t)snprintf(buf + used, size - used, "%s%s %.1f us", i ? ", " : "",
                                 k[i].kernel, us);
        if (per_run > 1 && used < size)
            used += (size_t)snprintf(buf + used, size - used, " (x%llu)",
                                     (unsigned long long)per_run);
    }
    return s;
}

/* Untimed runs: the first compiles; on a GPU more follow until opt->warmup_ms
 * have passed, so that its clocks leave idle. */
static vkattn_status warm_up(vkattn_context *ctx, const bench_options *opt, bench_record_fn record,
                             void *user)
{
    vkattn_status s = VKATTN_OK;
    double ms = 0.0;
    /* The first run of a pipeline compiles its shaders: never time it. */
    /* Then a GPU leaves its idle clocks only after some busy time (an H100's SM
     * clock idles at 345 MHz, 1980 MHz under load): a case of a few short runs
     * after seconds of CPU verification would time the ramp. */
    /* The warm-up past the first run records several runs into one
     * submission: one run a submission left a 40 us decode's GPU idle between
     * the host's round trips, and the H200 timed 0.30 ms for a decode that
     * takes 0.07 warm (bench/results/nvidia-h200/first-check). With 200 ms of
     * batches it still timed 0.11 against 0.04 in the profile run that
     * followed, so 500 ms now (not yet run on a GPU). */
    int warmup = opt->warmup < 1 ? 1 : opt->warmup, batch = 1;
    double warm_start = 0.0;
    for (int i = 0; i < warmup || (bench_now_s() - warm_start) * 1e3 < opt->warmup_ms; i++) {
        if ((s = vkattn_synchronize(ctx)) || (s = vkattn_timer_begin(ctx)))
            return s;
        for (int k = 0; k < batch && s == VKATTN_OK; k++)
            s = record(ctx, user);
        if (s || (s = vkattn_timer_end(ctx, &ms)))
            return s;
        if (i == 0)
            warm_start = bench_now_s(); /* after the run that compiled */
        if (opt->warmup_ms > 0.0 && ms > 0.0) {
            double runs = BENCH_WARMUP_BATCH_MS / (ms / batch);
            batch = runs < 1.0 ? 1 : runs > BENCH_WARMUP_MAX_BATCH ? BENCH_WARMUP_MAX_BATCH : (int)runs;
        }
    }
    return VKATTN_OK;
}

/* One timed run, synchronised before it. */
static vkattn_status timed_run(vkattn_context *ctx, bench_record_fn record, void *user, double *ms)
{
    vkattn_status s;
    if ((s = vkattn_synchronize(ctx)) || (s = vkattn_timer_begin(ctx)) ||
        (s = record(ctx, user)) || (s = vkattn_timer_end(ctx, ms)))
        return s;
    return VKATTN_OK;
}

/* The median of n sorted values. */
static double sorted_median(const double *v, int n)
{
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Exactly --reps runs (or pairs) when given; otherwise up to --reps, stopping
 * once another would take the case past its time budget (wall clock), but
 * never fewer than 2, so that median and minimum mean something. */
static bool another_run(const bench_options *opt, int done, double start, double last_s)
{
    if (done >= opt->reps)
        return false;
    return opt->reps_given || done < 2 || (bench_now_s() - start + last_s) * 1e3 <= opt->budget_ms;
}

vkattn_status bench_time(vkattn_context *ctx, const bench_options *opt, bench_record_fn record,
                         void *user, bench_result *r)
{
    vkattn_status s = warm_up(ctx, opt, record, user);
    if (s)
        return s;
    uint32_t kernels = 0;
    if (opt->profile && (s = vkattn_profile_read(ctx, NULL, 0, &kernels, true)))
        return s; /* only the timed runs count */
    double *times = calloc((size_t)opt->reps, sizeof *times);
    if (!times)
        return VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    double start = bench_now_s(), last_s = 0.0;
    int reps = 0;
    while (another_run(opt, reps, start, last_s)) {
        double before = bench_now_s();
        if ((s = timed_run(ctx, record, user, &times[reps])))
            goto done;
        last_s = bench_now_s() - before;
        reps++;
    }
    qsort(times, (size_t)reps, sizeof *times, cmp_double);
    r->reps = reps;
    r->ms_min = times[0];
    r->ms_median = sorted_median(times, reps);
    if (opt->profile)
        s = kernel_times(ctx, reps, r->kernels, sizeof r->kernels);
done:
    free(times);
    return s;
}

vkattn_status bench_time_paired(vkattn_context *ctx, const bench_options *opt,
                                bench_record_fn record, void *user, bench_record_fn base_record,
                                void *base_user, bench_result *r)
{
    vkattn_status s;
    if ((s = warm_up(ctx, opt, base_record, base_user)) || (s = warm_up(ctx, opt, record, user)))
        return s;
    /* times, the base's times, and each pair's ratio */
    double *all = calloc(3 * (size_t)opt->reps, sizeof *all);
    if (!all)
        return VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    double *times = all, *base = all + opt->reps, *ratio = all + 2 * opt->reps;
    double start = bench_now_s(), last_s = 0.0;
    int pairs = 0, ratios = 0;
    while (another_run(opt, pairs, start, last_s)) {
        double before = bench_now_s();
        /* A B, then B A: neither always runs just after the other */
        bool base_first = pairs % 2 == 1;
        if ((base_first && (s = timed_run(ctx, base_record, base_user, &base[pairs]))) ||
            (s = timed_run(ctx, record, user, &times[pairs])) ||
            (!base_first && (s = timed_run(ctx, base_record, base_user, &base[pairs]))))
            goto done;
        last_s = bench_now_s() - before;
        if (base[pairs] > 0.0) /* else no ratio (a timer that read 0 ms) */
            ratio[ratios++] = times[pairs] / base[pairs];
        pairs++;
    }
    qsort(times, (size_t)pairs, sizeof *times, cmp_double);
    qsort(base, (size_t)pairs, sizeof *base, cmp_double);
    qsort(ratio, (size_t)ratios, sizeof *ratio, cmp_double);
    r->reps = pairs;
    r->ms_min = times[0];
    r->ms_median = sorted_median(times, pairs);
    r->base_ms_median = sorted_median(base, pairs);
    r->base_ratio = ratios ? sorted_median(ratio, ratios) : 0.0; /* 0: none shown */
done:
    free(all);
    return s;
}

void bench_row_blocks(int64_t rows, bench_blocks *out)
{
    memset(out, 0, sizeof *out);
    if (rows <= 3 * BENCH_BLOCK_ROWS) {
        out->first[0] = 0;
        out->count[0] = rows;
        out->n = 1;
        return;
    }
    out->first[0] = 0;
    out->first[1] = rows / 2 - BENCH_BLOCK_ROWS / 2;
    out->first[2] = rows - BENCH_BLOCK_ROWS;
    for (int i = 0; i < 3; i++)
        out->count[i] = BENCH_BLOCK_ROWS;
    out->n = 3;
}

void bench_kernel_note(const vkattn_attention_choice *ran, char *buf, size_t size)
{
    if (ran->path == VKATTN_PATH_UNFUSED)
        snprintf(buf, size, "ran unfused; ");
    else if (ran->path == VKATTN_PATH_FUSED)
        snprintf(buf, size, "ran %s x%u; ",
                 vkattn_fused_variant_name(ran->fused_variant),
                 ran->kv_splits);
    else
        snprintf(buf, size, "%s", "");
}

void bench_blocks_note(const bench_blocks *b, int64_t rows, char *buf, size_t size)
{
    if (b->n == 1 && b->count[0] == rows) {
        snprintf(buf, size, "all rows");
        return;
    }
    size_t used = (size_t)snprintf(buf, size, "rows");
    for (int i = 0; i < b->n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s %lld-%lld", i ? "," : "",
                                 (long long)b->first[i],
                                 (long long)(b->first[i] + b->count[i] - 1));
    if (used < size)
        snprintf(buf + used, size - used, " of %lld", (long long)rows);
}

void bench_compare(const float *got, const float *want, size_t n, double atol, double rtol,
                   const float *scale, bench_result *r)
{
    r->verified = true;
    for (size_t i = 0; i < n; i++) {
        double bound = atol + rtol * (scale ? fabs((double)scale[i]) : 0.0);
        if (bound > r->tolerance)
            r->tolerance = bound;
        double err;
        if (!isfinite(want[i]))
            /* The reference is NaN/Inf: the same value in the same place is right. */
            err = (isnan(want[i]) && isnan(got[i])) || want[i] == got[i] ? 0.0 : INFINITY;
        else
            err = isnan(got[i]) ? INFINITY : fabs((double)got[i] - (double)want[i]);
        if (err > r->max_abs_err)
            r->max_abs_err = err;
        if (!(err <= bound))
            r->ok = false;
    }
}

void bench_fail(bench_result *r, vkattn_context *ctx, vkattn_status s, const char *what)
{
    if (r->error[0])
        return; /* keep the first error */
    snprintf(r->error, sizeof r->error, "%s: %s: %s", what, vkattn_status_string(s),
             ctx ? vkattn_last_error(ctx) : "");
    r->ok = false;
}

double bench_unmasked_pairs(int64_t Tq, int64_t Tk, bool causal, int64_t q_offset)
{
    if (!causal)
        return (double)Tq * (double)Tk;
    /* Query i sees keys 0..min(i + q_offset, Tk - 1): clamp(i + q_offset + 1, 0, Tk). */
    double total = 0.0;
    for (int64_t i = 0; i < Tq; i++) {
        int64_t allowed = i + q_offset + 1;
        total += (double)(allowed < 0 ? 0 : allowed > Tk ? Tk : allowed);
    }
    return total;
}

vkattn_attention_path bench_api_path(bench_path path)
{
    return path == PATH_FUSED ? VKATTN_PATH_FUSED
           : path == PATH_UNFUSED ? VKATTN_PATH_UNFUSED
                                  : VKATTN_PATH_AUTO;
}
