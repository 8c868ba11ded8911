// The softmax on the score accumulators' own elements in registers
// (attention_coopmat.comp with ROW_CLUSTER): which row and column this lane's
// elements are (read off a matrix of cell indices, where_acc), and the
// reductions over the lanes that share a row.

// Whether x holds in any lane of the subgroup.
bool subgroup_any_true(bool x)
{
    float f = x ? 1.0 : 0.0;
    for (uint offset = 1; offset < SG_SIZE; offset *= 2)
        f = max(f, subgroupShuffleXor(f, offset));
    return f > 0.0;
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

// Runs BODY for each of this lane's elements K of row slot S of an
// accumulator (no comma outside parentheses in BODY).
#ifdef COOPMAT_EMULATED
#define FOR_SLOT_ELEMENTS(S, K, BODY)                                                           \
    for (uint t_ = 0; t_ < acc_elements() / LANE_ROWS; t_++) {                                  \
        uint K = t_ * LANE_ROWS + (S);                                                          \
        BODY                                                                                    \
    }
#else
#define FOR_SLOT_ELEMENTS(S, K, BODY)                                                           \
    [[unroll]] for (uint K = 0; K < ACC_ELEMENTS(where_acc, 0); K++)                            \
        if (slot_of(K) == (S)) {                                                                \
            BODY                                                                                \
        }
#endif

// The largest (MAX) or the sum of x over the lanes of this lane's row
// cluster (ROW_CLUSTER aligned neighbours).
float cluster_max(float x)
{
    for (uint offset = 1; offset < ROW_CLUSTER; offset *= 2)
        x = max(x, subgroupShuffleXor(x, offset));
    return x;
}
float cluster_sum(float x)
{
    for (uint offset = 1; offset < ROW_CLUSTER; offset *= 2)
        x += subgroupShuffleXor(x, offset);
    return x;
}
