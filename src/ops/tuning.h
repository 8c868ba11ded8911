/* Plan knobs that an experiment may set (vkattn_context_desc.tuning,
 * VKATTN_TUNE), so that one run on a new GPU can compare tile sizes and key
 * splits without a rebuild: "kernel.knob=N" entries, parsed once when a
 * context is created (tuning.c, which says which kernels take which knobs). */
#ifndef VKATTN_TUNING_H
#define VKATTN_TUNING_H

#include "internal.h"

/* The kernels that take knobs: the fused attention variants (their
 * vkattn_fused_variant values), then the cooperative-matrix matmul's two
 * builds. */
typedef enum tuning_kernel {
    TUNING_MATMUL_COOPMAT = VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED + 1,
    TUNING_MATMUL_COOPMAT_EMULATED,
    TUNING_KERNEL_END
} tuning_kernel;
_Static_assert(TUNING_KERNEL_END <= TUNING_VARIANTS, "kernel_tuning has too few kernels");

typedef enum tuning_knob {
    KNOB_TARGET,    /* every fused variant: workgroups (decode: subgroups) the key splits aim for */
    KNOB_ROWS,      /* tiled: query rows per invocation; coopmat: row blocks of the
                       matrix height per subgroup; coopmat_workgroup: query rows
                       per workgroup in blocks of 16; matmul_coopmat: a
                       subgroup's matrices along M */
    KNOB_KEYS,      /* tiled: keys per tile; coopmat, coopmat_workgroup: the
                       largest key tile tried */
    KNOB_LANES,     /* tiled: invocations per query row */
    KNOB_WORKGROUP, /* tiled: invocations per workgroup */
    KNOB_SUBGROUPS, /* coopmat: subgroups per workgroup (the matrix rows each);
                       decode: subgroups, each its own split, per workgroup;
                       coopmat_workgroup_emulated: subgroups per workgroup (the
                       real build takes the device's workgroup size);
                       matmul_coopmat: subgroups per workgroup */
    KNOB_STAGES,    /* coopmat, matmul_coopmat: 1 stages a tile and then
                       computes; 2 loads the next tile into registers while this
                       one computes */
    KNOB_ORDER,     /* tiled, coopmat, coopmat_workgroup, causal: 1 launches the
                       row blocks that see the most keys first, 2 in order
                       (fused_heavy_first) */
    KNOB_SOFTMAX,   /* coopmat: 1 runs the softmax through shared memory, 2 on the
                       score accumulators' elements in registers */
    KNOB_ABLATE,    /* coopmat, coopmat_workgroup: parts of the tile step left
                       out (a timing diagnostic with wrong results: the
                       kernels' ABLATE), taken only with VKATTN_DIAGNOSTICS=1 */
    KNOB_Q,         /* coopmat: 1 keeps a subgroup's Q in its registers, 2 reads it
                       from a shared tile for each product */
    KNOB_COLUMNS,   /* matmul_coopmat: a subgroup's matrices along N */
    KNOB_GRID_COLUMNS, /* matmul_coopmat: subgroups side by side along N (the
                       others stack along M) */
    KNOB_DEPTH,     /* matmul_coopmat: K per staged slab */
    KNOB_BUFFERS,   /* coopmat: 1 stages each tile into the one K and V buffer
                       between two barriers; 2 into one of two buffers while
                       the other computes, one barrier a tile */
    KNOB_BF16,      /* coopmat: bf16 Q, K and V 1 converted to f16 as they are
                       staged (exactly: a power of 2 each group), 2 on bf16
                       matrices (VK_KHR_shader_bfloat16), P rounded to bf16 */
    KNOB_COUNT
} tuning_knob;
_Static_assert(KNOB_COUNT <= TUNING_KNOBS, "kernel_tuning has too few knobs");

/* The knob's value for the kernel (a vkattn_fused_variant or a tuning_kernel),
 * or `fallback` where none was set. */
uint32_t tuning_value(const vkattn_context *ctx, int kernel, tuning_knob knob, uint32_t fallback);
/* Writes "tuning tiled.keys=64" (the knob's setting) into `out`. */
void tuning_describe(int kernel, tuning_knob knob, uint32_t value, char *out, size_t out_size);

#endif
