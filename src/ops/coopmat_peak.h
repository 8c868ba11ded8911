/* What the rate probes share (coopmat_peak.c: subgroup scope;
 * coopmat_peak_workgroup.c: workgroup scope). */
#ifndef VKATTN_COOPMAT_PEAK_H
#define VKATTN_COOPMAT_PEAK_H

#include "ops_common.h"

#define COOPMAT_PEAK_TIMED_RUNS 5

/* A compiling run, on a GPU runs for a while more (its clocks leave idle
 * only under load), then COOPMAT_PEAK_TIMED_RUNS timed: the fastest's time in
 * *best (a ceiling's: the least the host or the clocks held it back). */
vkattn_status coopmat_peak_fastest_run(vkattn_context *ctx, const vk_dispatch *d, bool emulated,
                                       double *best);
/* The n results zeroed, but for result[0], the step between blocks (1):
 * before each variant, so that one that wrote nothing cannot pass on the
 * last's. */
vkattn_status coopmat_peak_reset_results(vkattn_tensor *out, float *host, uint64_t n);
/* "R TFLOP/s with NAME, ..." for variants first .. count - 1. */
void coopmat_peak_format_rates(const double *tflops, const char *const *names, uint32_t first,
                               uint32_t count, char *out, size_t size);
/* The workgroup-scope products, logged (`emulated`: the device has no matrix
 * units, so the emulated build runs where the real one cannot). */
void coopmat_peak_workgroup_report(vkattn_context *ctx, bool emulated);

#endif
