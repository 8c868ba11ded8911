/* Helpers shared by the op files: dtype checks and workgroup grids. */
#ifndef VKATTN_OPS_COMMON_H
#define VKATTN_OPS_COMMON_H

#include "internal.h"

/* An input an op reads: F32 or F16. */
vkattn_status check_float_input(vkattn_context *ctx, const vkattn_tensor *t, const char *op,
                                const char *name);
/* An op's output: F32. */
vkattn_status check_f32_output(vkattn_context *ctx, const vkattn_tensor *t, const char *op,
                               const char *name);

/* Spreads `count` workgroups over x then y (both within the device's limits).
 * Kernels recover the linear index with linear_workgroup_index(); the grid may
 * hold up to x-1 more workgroups than asked, which kernels must bounds-check. */
vkattn_status grid_for(vkattn_context *ctx, uint64_t count, const char *op, uint32_t groups[3]);

static inline uint32_t div_up(uint64_t a, uint64_t b) { return (uint32_t)((a + b - 1) / b); }

#endif
