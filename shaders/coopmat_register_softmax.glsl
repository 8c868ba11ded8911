// The softmax on the score accumulators' own elements in registers
// (attention_coopmat.comp with ROW_CLUSTER): which row and column this lane's
// elements are (read off a matrix of cell indices, where_acc), and the
// reductions over lanes.

// The sum and the largest of x over the lanes whose indices differ from this
// lane's only in the bits from FIRST (a power of 2) up to END: a butterfly of
// shuffles that leaves every one of those lanes with the result. Over a row
// cluster (1 up to ROW_CLUSTER), over the lanes of a row of the shared-memory
// softmax (ROW_LANES up to SG_SIZE), over the subgroup (1 up to SG_SIZE).
float lanes_sum(float x, uint first, uint end)
{
    for (uint offset = first; offset < end; offset *= 2)
        x += subgroupShuffleXor(x, offset);
    return x;
}
float lanes_max(float x, uint first, uint end)
{
    for (uint offset = first; offset < end; offset *= 2)
        x = max(x, subgroupShuffleXor(x, offset));
    return x;
}

// Whether x holds in any lane of the subgroup.
bool subgroup_any_true(bool x)
{
    return lanes_max(x ? 1.0 : 0.0, 1, SG_SIZE) > 0.0;
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

// The row (within its row block) and column of this lane's element k.
uvec2 element_cell(uint k)
{
    uint cell = uint(ACC_ELEMENT(where_acc, 0, k));
    return uvec2(cell / MN, cell % MN);
}

// The row (within its row block) of this lane's row slot s.
uint slot_row(uint s)
{
    uint row = 0;
    MATRIX_UNROLL for (uint k = 0; k < ACC_ELEMENTS(where_acc, 0); k++)
        if (slot_of(k) == s)
            row = element_cell(k).x;
    return row;
}

// Runs BODY for each of this lane's elements K of an accumulator (no comma
// outside parentheses in BODY). Unrolled in the real build, where the
// elements' count is the driver's constant: every element index and row slot
// (slot_of) is a constant there. Rolled in the emulated build, which lavapipe
// compiles faster so.
#ifdef COOPMAT_EMULATED
#define FOR_ELEMENTS(K, BODY)                                                                   \
    for (uint K = 0; K < acc_elements(); K++) {                                                 \
        BODY                                                                                    \
    }
#else
#define FOR_ELEMENTS(K, BODY)                                                                   \
    [[unroll]] for (uint K = 0; K < ACC_ELEMENTS(where_acc, 0); K++) {                          \
        BODY                                                                                    \
    }
#endif
