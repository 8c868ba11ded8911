// The attention variants (DESIGN.md section 1) for every fused attention kernel:
// where a batch entry's queries and keys are (dense, packed by cu_seqlens, or in
// a paged cache), which keys a query row may see (causality, kv_len, a sliding
// window), how a score is adjusted (soft-capping, ALiBi, an additive mask), and
// the sink logit in the final normalisation. Include after attention_push.glsl.
//
// The variant bits and the score adjustments are in score_variants.glsl, which
// the unfused path's score pass shares.
//
// The sequence tables are clamped where they are read (offsets to the packed
// rows, block indices to the cache): the host checks their values before
// recording, except while recording into an application's command buffer, and
// then nothing is read outside a tensor.
#include "score_variants.glsl"

layout(set = 0, binding = 4) readonly buffer KvLen { int kv_len[]; };
layout(set = 0, binding = 5) readonly buffer CuQ { int cu_q[]; };
layout(set = 0, binding = 6) readonly buffer CuK { int cu_k[]; };
layout(set = 0, binding = 7) readonly buffer BlockTable { int block_table[]; };

// Batch entry b: its query count, first query row, key count (kv_len applied)
// and the key position of its query row 0.
struct Sequence {
    uint Tq, q_first, keys, k_first;
    int q_offset;
};

// Offsets cu[b], cu[b + 1] clamped into [0, rows] and in order.
uvec2 packed_range(int first, int next, uint rows)
{
    uint a = uint(clamp(first, 0, int(rows)));
    return uvec2(a, uint(clamp(next, int(a), int(rows))));
}

Sequence sequence(uint b)
{
    Sequence s;
    s.Tq = p.Tq, s.q_first = 0u, s.keys = p.Tk, s.k_first = 0u;
    if (PACKED_Q) {
        uvec2 r = packed_range(cu_q[b], cu_q[b + 1u], p.q_rows);
        s.q_first = r.x, s.Tq = min(r.y - r.x, p.Tq);
    }
    if (PACKED_K) {
        uvec2 r = packed_range(cu_k[b], cu_k[b + 1u], p.k_rows);
        s.k_first = r.x, s.keys = min(r.y - r.x, p.Tk);
    }
    if (PAGED)
        s.keys = uint(clamp(kv_len[b], 0, int(p.Tk)));
    s.q_offset = SEQ_Q_OFFSET ? int(s.keys) - int(s.Tq) : p.q_offset;
    if (SEQ_KV_LEN)
        s.keys = min(s.keys, uint(max(kv_len[b], 0)));
    return s;
}

// The page (block-table column) of key j: a shift for power-of-two block sizes.
uint page_of(uint j)
{
    return p.block_shift < 32u ? j >> p.block_shift : j / p.block_size;
}

// The first cache row of page `page` of batch entry b.
uint page_base(uint b, uint page)
{
    int block = block_table[b * p.max_blocks + page];
    return uint(clamp(block, 0, int(p.k_rows) - 1)) * p.block_size;
}

// The cache or packed row holding key j of batch entry b.
uint key_row(uint b, Sequence s, uint j)
{
    if (PAGED) {
        uint page = page_of(j);
        return page_base(b, page) + (j - page * p.block_size);
    }
    return s.k_first + j;
}

// Keys [x, y) that the query row at position i may see before its scores are
// known: causality, kv_len and the window; x <= y.
uvec2 key_range(Sequence s, bool causal, uint i)
{
    int pos = int(i) + s.q_offset;
    int lo = 0, hi = int(s.keys);
    if (causal)
        hi = min(hi, pos + 1);
    ivec2 window = window_range(pos, p.window_left, p.window_right);
    lo = max(lo, window.x);
    hi = max(min(hi, window.y), lo);
    return uvec2(max(lo, 0), max(hi, 0));
}

// The part of a row's keys `range` inside a split's keys [key_begin, key_end),
// key_begin <= key_end: x <= y, both within the split, so a row whose keys all
// lie elsewhere gets an empty range there, never one past the split's end (or
// past its sequence's keys, which a loop up to it would read).
uvec2 split_keys(uvec2 range, uint key_begin, uint key_end)
{
    uint lo = clamp(range.x, key_begin, key_end);
    return uvec2(lo, clamp(range.y, lo, key_end));
}

// The mask element of key j for the row at position i of head h of batch entry b.
uint mask_index(uint b, uint h, uint i, uint j)
{
    return mask_element(p.mask_sb, p.mask_sh, p.mask_si, b, h, i, j);
}

// Soft-capping, ALiBi (the row's slope from alibi_slope_log2e) and the mask on
// a score s2 (exp2 domain) of key j for the row at position i of head h of
// batch entry b, whose ALiBi distances are measured from `origin`
// (alibi_origin).
float adjust_score(float s2, float slope, uint b, uint h, uint i, uint j, int origin)
{
    return adjusted_score(s2, p.softcap_log2e, slope, int(j) - origin, mask_index(b, h, i, j));
}

// The key position the ALiBi distances of the row at position i are measured
// from (its key position where that is one of its sequence's, else the
// nearest), with the sink logit moved to match (row_sink): alibi_origin_in.
int alibi_origin(Sequence seq, uint i)
{
    return alibi_origin_in(int(i) + seq.q_offset, seq.keys);
}

// The sink logit of head h (exp2 domain) for the row at position i, whose ALiBi
// (slope from alibi_slope_log2e) is measured from alibi_origin.
float row_sink(Sequence seq, uint h, uint i, float slope)
{
    int pos = int(i) + seq.q_offset;
    return HAS_SINKS ? sink_from_origin(sinks[h] * LOG2E, slope, pos, alibi_origin(seq, i)) : 0.0;
}

// The factor that turns a row's unnormalised O (running maximum m, sum l) into
// the output: 1 / l, with the row's sink logit `sink` (row_sink) joining the
// denominator; 0 for a row that saw no allowed key, sink or no sink.
float output_scale(float m, float l, float sink)
{
    if (l == 0.0)
        return 0.0;
    if (!HAS_SINKS)
        return 1.0 / l;
    float top = max(m, sink);
    float rescale = exp2(m - top);
    return rescale / (l * rescale + exp2(sink - top));
}
