// What the cooperative-matrix attention kernels (attention_coopmat.comp,
// attention_coopmat_workgroup.comp) share about query rows: the softmax state
// of one, the keys it and a block of them may see, its Q, and the running
// maximum. Include after attention_variants.glsl, with CAUSAL, D, PACK and the
// Q bindings q16 and q16x8 declared.

// A row's maximum is raised only when it grows by more than this (log2).
const float LAZY_RESCALE = 8.0;

// One query row of a subgroup, as the lanes running its softmax hold it.
struct Row {
    uint h, i;          // query head and position
    uint lo, limit;     // keys [lo, limit) of this split the row may see
    int origin;         // the key position its ALiBi distances are measured from
    float slope;        // ALiBi (exp2 domain)
    float q_factor;     // the power of 2 its bf16 Q row was divided by (else 1)
    float m, l;         // running maximum and sum (exp2 domain)
};

// Keys [lo, limit) of this split that packed row `row` may see (none past the rows).
uvec2 row_keys(Sequence seq, uint row, uint rows, uint key_begin, uint key_end)
{
    if (row >= rows)
        return uvec2(0);
    return split_keys(key_range(seq, CAUSAL, row % seq.Tq), key_begin, key_end);
}

// Keys [lo, limit) that some row of first..last may see: rows spanning two
// query heads hold positions 0 and Tq - 1.
uvec2 rows_keys(Sequence seq, uint first, uint last, uint key_begin, uint key_end)
{
    bool spans = first / seq.Tq != last / seq.Tq;
    uvec2 range = uvec2(key_range(seq, CAUSAL, spans ? 0 : first % seq.Tq).x,
                        key_range(seq, CAUSAL, spans ? seq.Tq - 1 : last % seq.Tq).y);
    return split_keys(range, key_begin, key_end);
}

// Packed element d / PACK of block row `row` of Q (zeros past the rows and D).
uvec4 q_words(Sequence seq, uint b, uint g, uint row, uint rows, uint d)
{
    uvec4 words = uvec4(0);
    if (row < rows && d < D) {
        uint h = g * p.group + row / seq.Tq;
        uint index = b * p.q_sb + h * p.q_sh + (seq.q_first + row % seq.Tq) * p.q_ss + d;
        if (D % PACK == 0 && (index & 7u) == 0u)
            words = q16x8[index >> 3];
        else
            GATHER_HALVES(words, q16, index, min(PACK, D - d));
    }
    return words;
}

// Row w's running maximum after a tile whose largest score is step_max,
// raised lazily: only when it grows by more than 2^LAZY_RESCALE (O is still 0
// while it is -inf: no rescaling then). Returns the shift the tile's weights
// are taken at; alpha rescales the row's O and sum.
float next_max(Row w, float step_max, out float alpha, out float m)
{
    float m_new = max(w.m, step_max);
    bool raise = w.m == NEG_INF || m_new > w.m + LAZY_RESCALE;
    alpha = w.m != NEG_INF && raise ? exp2(w.m - m_new) : 1.0;
    m = raise ? m_new : w.m;
    return m == NEG_INF ? 0.0 : m;
}
