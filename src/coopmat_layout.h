/* Where a cooperative matrix's elements live: the row and column of each
 * invocation's element k of an f32 accumulator, as the device's
 * implementation lays it out (VK_NV_cooperative_matrix leaves that opaque, and
 * vendors differ). A kernel that works on a matrix's elements in registers (a
 * softmax on the scores without their trip through shared memory) needs to
 * know which row an element is of and which invocations share that row.
 *
 * shaders/coopmat_layout.comp reads it off the device; the functions here are
 * pure, so that layouts of devices this machine does not have (NVIDIA's) are
 * unit-tested on synthetic tables (tests/test_coopmat_layout.c). */
#ifndef VKATTN_COOPMAT_LAYOUT_H
#define VKATTN_COOPMAT_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest matrix the probe takes: 64 x 64 (the kernels' largest side). */
#define COOPMAT_LAYOUT_MAX_CELLS 4096

typedef struct coopmat_layout {
    uint32_t rows, cols;  /* the matrix: rows x cols */
    uint32_t lanes;       /* invocations of the subgroup */
    uint32_t elements;    /* elements each invocation holds */
    /* cell[lane * elements + k]: row * cols + column of the lane's element k */
    uint32_t cell[COOPMAT_LAYOUT_MAX_CELLS];
} coopmat_layout;

typedef struct coopmat_layout_traits {
    bool bijective;       /* every element of the matrix held exactly once */
    /* Invocations that share each row: aligned groups of row_lanes neighbours
     * (lanes g * row_lanes .. + row_lanes - 1), each holding the rows of the
     * same element indices k, no row in two groups; 0 where the layout is not
     * so (then a row's reduction is no clustered subgroup operation). */
    uint32_t row_lanes;
    uint32_t lane_rows;   /* with row_lanes: the most distinct rows one invocation holds */
} coopmat_layout_traits;

/* What the layout allows; a layout with elements * lanes != rows * cols is
 * not bijective. */
coopmat_layout_traits coopmat_layout_analyze(const coopmat_layout *layout);

/* Each element's row slot (its row's place among the lane's rows, in the
 * order the lane's elements first reach them), 2 bits an element (element k
 * at bits 2k, 2k + 1), where it is the same in every lane: the
 * attention kernel's SLOT_TABLE. False where it differs between lanes or does
 * not fit (more than 16 elements or 4 rows a lane). */
bool coopmat_layout_slot_table(const coopmat_layout *layout, uint32_t lane_rows, uint32_t *out);

/* One line: the shape, the traits and the (row, column) of each element of
 * the first row group's invocations (the pattern the rest repeat; four at
 * most), cut to `size`. */
void coopmat_layout_describe(const coopmat_layout *layout, char *out, size_t size);

#endif
