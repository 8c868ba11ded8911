// The attention variants (DESIGN.md section 1) for every fused attention kernel:
// where a batch entry's queries and keys are (dense, packed by cu_seqlens, or in
// a paged cache), which keys a query row may see (causality, kv_len, a sliding
// window), how a score is adjusted (soft-capping, ALiBi, an additive mask), and
// the sink logit in the final normalisation. Include after attention_push.glsl.
//
// VARIANTS is one bit set, specialization constant 15 of every attention kernel
// (keep in sync with the VAR_* bits and ATTENTION_VARIANTS_SPEC_ID in
// src/ops/attention_fused.h), so each unused variant compiles away.
// Scores live in the exp2 domain (scale * log2(e) already applied).
//
// The sequence tables are clamped where they are read (offsets to the packed
// rows, block indices to the cache): the host checks their values before
// recording, except while recording into an application's command buffer, and
// then nothing is read outside a tensor.
layout(constant_id = 15) const uint VARIANTS = 0u;
const uint VAR_WINDOW = 1u, VAR_SOFTCAP = 2u, VAR_ALIBI = 4u, VAR_MASK = 8u, VAR_SINKS = 16u,
           VAR_PACKED_Q = 32u, VAR_PACKED_K = 64u, VAR_PAGED = 128u, VAR_SEQ_Q_OFFSET = 256u,
           VAR_MASK_F16 = 512u, VAR_MASK_BF16 = 1024u, VAR_KV_LEN = 2048u;
const bool HAS_WINDOW = (VARIANTS & VAR_WINDOW) != 0u;
const bool HAS_SOFTCAP = (VARIANTS & VAR_SOFTCAP) != 0u;
const bool HAS_ALIBI = (VARIANTS & VAR_ALIBI) != 0u;
const bool HAS_MASK = (VARIANTS & VAR_MASK) != 0u;
const bool HAS_SINKS = (VARIANTS & VAR_SINKS) != 0u;
const bool PACKED_Q = (VARIANTS & VAR_PACKED_Q) != 0u;
const bool PACKED_K = (VARIANTS & VAR_PACKED_K) != 0u;
const bool PAGED = (VARIANTS & VAR_PAGED) != 0u;
const bool SEQ_Q_OFFSET = (VARIANTS & VAR_SEQ_Q_OFFSET) != 0u;
const bool SEQ_KV_LEN = (VARIANTS & VAR_KV_LEN) != 0u;
const uint MASK_DTYPE = (VARIANTS & VAR_MASK_F16) != 0u ? DTYPE_F16
                        : (VARIANTS & VAR_MASK_BF16) != 0u ? DTYPE_BF16 : DTYPE_F32;
// Scores whose weight may be 0 inside a row's key range (a -inf mask entry):
// such keys must be skipped, not weighted by 0, so a NaN in V cannot reach the row.
const bool KEYWISE_MASK = HAS_MASK;

const float LOG2E = 1.4426950408889634;

layout(set = 0, binding = 4) readonly buffer KvLen { int kv_len[]; };
layout(set = 0, binding = 5) readonly buffer CuQ { int cu_q[]; };
layout(set = 0, binding = 6) readonly buffer CuK { int cu_k[]; };
layout(set = 0, binding = 7) readonly buffer BlockTable { int block_table[]; };
layout(set = 0, binding = 8) readonly buffer Mask32 { float mask32[]; };
layout(set = 0, binding = 8) readonly buffer Mask16 { uint mask16[]; };
layout(set = 0, binding = 9) readonly buffer Sinks { float sinks[]; };
layout(set = 0, binding = 10) readonly buffer Alibi { float alibi[]; };

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

// The cache or packed row holding key j of batch entry b.
uint key_row(uint b, Sequence s, uint j)
{
    if (PAGED) {
        int block = block_table[b * p.max_blocks + j / p.block_size];
        return uint(clamp(block, 0, int(p.k_rows) - 1)) * p.block_size + j % p.block_size;
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
    if (HAS_WINDOW && p.window_left >= 0)
        lo = max(lo, pos - p.window_left);
    if (HAS_WINDOW && p.window_right >= 0)
        hi = min(hi, pos + p.window_right + 1);
    hi = max(hi, lo);
    return uvec2(max(lo, 0), max(hi, 0));
}

// tanh that stays finite for large arguments (the GLSL builtin may overflow).
float stable_tanh(float x)
{
    float e = exp2(-2.0 * LOG2E * abs(x));
    return sign(x) * (1.0 - e) / (1.0 + e);
}

// Soft-capping, ALiBi and the mask on a score s2 (exp2 domain) of key j for
// the row at position i (key position pos) of head h of batch entry b.
float adjust_score(float s2, uint b, uint h, uint i, uint j, int pos)
{
    if (HAS_SOFTCAP)
        s2 = p.softcap_log2e * stable_tanh(s2 / p.softcap_log2e);
    if (HAS_ALIBI)
        s2 += alibi[h] * LOG2E * float(int(j) - pos);
    if (HAS_MASK)
        s2 += LOG2E * LOAD_ELEMENT(MASK_DTYPE, mask32, mask16,
                                   b * p.mask_sb + h * p.mask_sh + i * p.mask_si + j);
    return s2;
}

// The factor that turns a row's unnormalised O (running maximum m, sum l) into
// the output: 1 / l, with the sink logit of head h joining the denominator;
// 0 for a row that saw no allowed key, sink or no sink.
float output_scale(float m, float l, uint h)
{
    if (l == 0.0)
        return 0.0;
    if (!HAS_SINKS)
        return 1.0 / l;
    float sink = sinks[h] * LOG2E;
    float top = max(m, sink);
    float rescale = exp2(m - top);
    return rescale / (l * rescale + exp2(sink - top));
}
