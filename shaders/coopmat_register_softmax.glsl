// The softmax on the score accumulators' own elements in registers
// (attention_coopmat.comp with ROW_CLUSTER): which row and column this lane's
// elements are (read off a matrix of cell indices, where_acc), and the
// reductions over lanes.

#include "subgroup_lanes.glsl"

// Whether x holds in any lane of the subgroup: a vote, whose result the
// compiler knows to be the same in every lane, so that the branches on it
// around matrix operations and subgroup barriers are uniform to it too (a
// butterfly of shuffles gives every lane the same value, but no compiler or
// checker can see that: uniform_control_test.py).
bool subgroup_any_true(bool x)
{
    return subgroupAny(x);
}

// ROW_CLUSTER: the row slot of this lane's element k of an accumulator.
uint slot_of(uint k)
{
#ifdef COOPMAT_EMULATED
    return k % LANE_ROWS;
#else
    return (SLOT_TABLE >> (2u * k)) & 3u;
#endif
}

// The row (within its row block) and column of this lane's element k. The
// real build reads them off where_acc once, into lane_cells (its elements are
// never addressed in the tile loop).
#ifdef COOPMAT_EMULATED
uvec2 element_cell(uint k)
{
    uint cell = uint(ACC_ELEMENT(where_acc, 0, k));
    return uvec2(cell / MN, cell % MN);
}
#else
uint lane_cells[LANE_ELEMENTS > 0u ? LANE_ELEMENTS : 1u];
uvec2 element_cell(uint k)
{
    return uvec2(lane_cells[k] / MN, lane_cells[k] % MN);
}
#endif

// After where_acc is loaded: the real build's lane_cells.
void keep_element_cells()
{
#ifndef COOPMAT_EMULATED
    [[unroll]] for (uint k = 0; k < LANE_ELEMENTS; k++)
        lane_cells[k] = uint(ACC_ELEMENT(where_acc, 0, k));
#endif
}

// The row (within its row block) of this lane's row slot s.
uint slot_row(uint s)
{
    uint row = 0;
    MATRIX_UNROLL for (uint k = 0; k < LANE_ELEMENTS; k++)
        if (slot_of(k) == s)
            row = element_cell(k).x;
    return row;
}

// Runs BODY for each of this lane's elements K of accumulator NAME[I] (no
// comma outside parentheses in BODY), which BODY reads and writes as
// COPY_ELEMENT(NAME, K): on a copy of the matrix taken and put back whole
// (ACC_COPY). The count, LANE_ELEMENTS, is a specialization constant the
// layout check vouches for (every element held once), not the matrix's
// length(): that is an OpCooperativeMatrixLengthNV the driver need not fold
// before it unrolls. Unrolled in the real build (MATRIX_UNROLL), so that every
// element index and row slot (slot_of) is a constant there; rolled in the
// emulated build, which lavapipe compiles faster so. The H200 kept 352-464 bytes of these
// matrices in local memory (2026-11-28) when the loops ran to length() and
// addressed the elements in the arrays themselves: one of the two, a rolled
// loop or an element addressed in an array, is the suspect.
#define EDIT_ELEMENTS(NAME, I, K, BODY)                                                         \
    {                                                                                           \
        ACC_COPY(NAME, I)                                                                       \
        MATRIX_UNROLL for (uint K = 0; K < LANE_ELEMENTS; K++) {                                \
            BODY                                                                                \
        }                                                                                       \
        ACC_PUT(NAME, I)                                                                        \
    }
