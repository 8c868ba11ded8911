#version 450
// Fused attention for decoding on GPUs: a few query rows (GQA's group of heads
// times a few positions) against many keys, FlashDecoding's way. The keys are
// split so finely that every subgroup owns one split of one problem (b, kv head
// g; see attention_push.glsl) and runs it alone: no barrier after Q is staged,
// no shared tiles. Every split's unnormalised O, m and l go to the partial
// buffer for attention_combine.comp (or, with one split, O / l to the output).
//
// Per chunk of keys, one per lane: each lane computes its key's scores against
// all the rows (Q broadcast from shared memory, K read from its own row), the
// subgroup's maximum per row updates the running maximum m (so m, the rescaling
// factor and the exp2 shift are uniform), each lane keeps its own part of the
// running sum l (summed once at the end). Then P V: key after key, the key's
// weights come from its lane by shuffles and the whole subgroup reads V's row,
// the lanes over its columns, so that read is coalesced. Keys outside a row's
// range (causality, kv_len, a window) are never weighted, as in the other fused
// kernels, so a NaN or Inf in V there cannot reach the row; steps outside every
// row's range are not visited.
//
// Subgroup size: correct for any size, specialized for the smallest the
// pipeline may get (SG; required where the device allows), given whole
// subgroups (the host refuses devices that may launch partial ones). A lane's share of
// the O columns is sized for SG and a larger size leaves part of it unused; the
// subgroups of a workgroup walk its WG / SG splits, however many there are.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"

layout(local_size_x_id = 0) in;                // SPLITS_PER_WORKGROUP * SG
#include "invocation_order.glsl"  // after the workgroup size it reads
layout(constant_id = 1) const uint SG = 32;     // the smallest subgroup size the pipeline may get
layout(constant_id = 2) const uint RM = 4;      // packed query rows per problem, at most
layout(constant_id = 3) const uint D = 128;
layout(constant_id = 4) const uint DV = 128;
layout(constant_id = 5) const bool CAUSAL = false;
layout(constant_id = 6) const bool SPLIT = true;
layout(constant_id = 7) const uint Q_DTYPE = DTYPE_F32;
layout(constant_id = 8) const uint K_DTYPE = DTYPE_F32;
layout(constant_id = 9) const uint V_DTYPE = DTYPE_F32;
// constant_id 15: VARIANTS (attention_variants.glsl), kv_len among them

const uint WG = gl_WorkGroupSize.x;
const uint SPLITS_PER_WORKGROUP = WG / SG;
const uint D4 = (D + 3) / 4;
const uint DV4 = (DV + 3) / 4;           // partial records are padded to vec4
const uint OV = (DV4 + SG - 1) / SG;     // O vec4s per lane and row

layout(set = 0, binding = 0) readonly buffer Q32 { float q32[]; };
layout(set = 0, binding = 0) readonly buffer Q16 { uint q16[]; };
layout(set = 0, binding = 1) readonly buffer K32 { float k32[]; };
layout(set = 0, binding = 1) readonly buffer K16 { uint k16[]; };
layout(set = 0, binding = 1) readonly buffer K32x4 { vec4 k32x4[]; };
layout(set = 0, binding = 1) readonly buffer K16x4 { uvec2 k16x4[]; };
layout(set = 0, binding = 1) readonly buffer K16x8 { uvec4 k16x8[]; };
layout(set = 0, binding = 2) readonly buffer V32 { float v32[]; };
layout(set = 0, binding = 2) readonly buffer V16 { uint v16[]; };
layout(set = 0, binding = 2) readonly buffer V32x4 { vec4 v32x4[]; };
layout(set = 0, binding = 2) readonly buffer V16x4 { uvec2 v16x4[]; };
layout(set = 0, binding = 3) writeonly buffer O32 { float o32[]; };   // O, or the partials
layout(set = 0, binding = 3) writeonly buffer O4 { vec4 o4[]; };

#include "attention_push.glsl"
#include "attention_variants.glsl"

// The problem's query rows, scaled into the exp2 domain, zeros past D.
shared vec4 q_tile[RM * D4];

// Four elements of a K row from element `base` (the row's first), zeros past D:
// one load where rows are 4-element aligned, else one per element.
vec4 load_k4(uint base, uint d4, bool aligned4)
{
    if (D % 4 == 0 && aligned4)
        return LOAD_VEC4(K_DTYPE, k32x4, k16x4, base + 4 * d4);
    vec4 x = vec4(0.0);
    for (uint c = 0; c < 4; c++)
        if (4 * d4 + c < D)
            x[c] = LOAD_ELEMENT(K_DTYPE, k32, k16, base + 4 * d4 + c);
    return x;
}

vec4 load_v4(uint base, uint d4, bool aligned4)
{
    if (DV % 4 == 0 && aligned4)
        return LOAD_VEC4(V_DTYPE, v32x4, v16x4, base + 4 * d4);
    vec4 x = vec4(0.0);
    for (uint c = 0; c < 4; c++)
        if (4 * d4 + c < DV)
            x[c] = LOAD_ELEMENT(V_DTYPE, v32, v16, base + 4 * d4 + c);
    return x;
}

// One split: its keys [key_begin, key_end) against the problem's rows.
void attend_split(uint b, uint g, Sequence seq, uint rows, uint split)
{
    uint lane = gl_SubgroupInvocationID, width = gl_SubgroupSize;
    uint key_begin = split * p.keys_per_split;
    uint key_end = min(p.Tk, key_begin + p.keys_per_split);

    // The rows (past the last row: the last row again, not stored), and the
    // keys of this split each may see.
    uint lo[RM], limit[RM], head[RM], position[RM];
    float slope[RM];
    uint min_lo = key_end, max_limit = key_begin, max_lo = key_begin, min_limit = key_end;
    for (uint r = 0; r < RM; r++) {
        uint row = min(r, rows - 1);
        uint h = g * p.group + row / seq.Tq, i = row % seq.Tq;
        head[r] = h, position[r] = i;
        slope[r] = alibi_slope_log2e(h);
        uvec2 keys = split_keys(key_range(seq, CAUSAL, i), key_begin, key_end);
        lo[r] = keys.x, limit[r] = keys.y;
        if (keys.x < keys.y) { // the chunks to visit: those some row uses
            min_lo = min(min_lo, keys.x);
            max_limit = max(max_limit, keys.y);
        }
        max_lo = max(max_lo, keys.x); // whole chunks: those every row uses
        min_limit = min(min_limit, keys.y);
    }
    uint k_base = b * p.k_sb + g * p.k_sh;
    uint v_base = b * p.v_sb + g * p.v_sh;
    bool k_aligned4 = ((k_base | p.k_ss) & 3u) == 0u;
    // 16-bit K rows eight elements (16 bytes) per load where they are aligned.
    bool k_by8 = K_DTYPE != DTYPE_F32 && D % 8 == 0 && ((k_base | p.k_ss) & 7u) == 0u;
    bool v_aligned4 = ((v_base | p.v_ss) & 3u) == 0u;

    float m[RM], l[RM];
    vec4 o[RM * OV];
    for (uint r = 0; r < RM; r++) {
        m[r] = NEG_INF;
        l[r] = 0.0;
        for (uint v = 0; v < OV; v++)
            o[r * OV + v] = vec4(0.0);
    }

    for (uint j0 = min_lo; j0 < max_limit; j0 += width) {
        // This lane's key (past the limit: the last key again, masked below).
        uint j = j0 + lane;
        uint key_at = key_row(b, seq, min(j, max_limit - 1));
        uint k_row = k_base + key_at * p.k_ss;
        float s[RM];
        for (uint r = 0; r < RM; r++)
            s[r] = 0.0;
        if (k_by8) {
            for (uint d8 = 0; d8 < D / 8; d8++) {
                uvec4 w = k16x8[(k_row >> 3) + d8];
                vec4 k_lo = vec4(unpack_pair(K_DTYPE, w.x), unpack_pair(K_DTYPE, w.y));
                vec4 k_hi = vec4(unpack_pair(K_DTYPE, w.z), unpack_pair(K_DTYPE, w.w));
                for (uint r = 0; r < RM; r++)
                    s[r] += dot(q_tile[r * D4 + 2 * d8], k_lo) +
                            dot(q_tile[r * D4 + 2 * d8 + 1], k_hi);
            }
        } else {
            for (uint d4 = 0; d4 < D4; d4++) {
                vec4 k = load_k4(k_row, d4, k_aligned4);
                for (uint r = 0; r < RM; r++)
                    s[r] += dot(q_tile[r * D4 + d4], k);
            }
        }

        // Online softmax. Masked scores become -inf and so weights of exactly 0;
        // while a row has seen nothing but -inf, shifting by 0 keeps exp2 finite.
        float weight[RM];
        for (uint r = 0; r < RM; r++) {
            float x = j >= lo[r] && j < limit[r]
                ? adjust_score(s[r], slope[r], b, head[r], position[r], j,
                               alibi_origin(seq, position[r]))
                : NEG_INF;
            float m_new = max(m[r], subgroupMax(x));
            float shift = m_new == NEG_INF ? 0.0 : m_new;
            float alpha = exp2(m[r] - shift);
            weight[r] = key_weight(x, shift);
            l[r] = l[r] * alpha + weight_sum(weight[r]);
            m[r] = m_new;
            for (uint v = 0; v < OV; v++)
                o[r * OV + v] *= alpha;
        }

        // O += P V, one key of the chunk at a time: its row (a page lookup
        // only in a paged cache, done once by the key's lane), its weights.
        // A full chunk is a loop of constant length, which the compiler can
        // unroll so that several keys' V loads are in flight at once; a chunk
        // every row uses whole needs no per-key range checks.
        bool whole_chunk = !KEYWISE_MASK && j0 >= max_lo && j0 + width <= min_limit;
#define VALUE_STEP(c)                                                                   \
        {                                                                               \
            uint key = j0 + (c);                                                        \
            uint v_row = v_base + (PAGED ? subgroupShuffle(key_at, c) : key_row(b, seq, key)) * p.v_ss; \
            float w[RM];                                                                \
            for (uint r = 0; r < RM; r++)                                               \
                w[r] = subgroupShuffle(weight[r], c);                                   \
            for (uint v = 0; v < OV; v++) {                                             \
                uint d4 = lane + v * width;                                             \
                if (d4 < DV4) {                                                         \
                    vec4 x = load_v4(v_row, d4, v_aligned4);                            \
                    for (uint r = 0; r < RM; r++) {                                     \
                        bool used = key >= lo[r] && key < limit[r] &&                   \
                                    weight_used(w[r]);                                  \
                        if (whole_chunk || used)                                        \
                            o[r * OV + v] = fma(vec4(w[r]), x, o[r * OV + v]);          \
                    }                                                                   \
                }                                                                       \
            }                                                                           \
        }
        uint count = min(width, max_limit - j0);
        if (width == SG && count == SG) {
            for (uint c = 0; c < SG; c++)
                VALUE_STEP(c)
        } else {
            for (uint c = 0; c < count; c++)
                VALUE_STEP(c)
        }
    }

    // Unnormalised O with m and l for the combine pass, or O / l.
    uint record_base = partial_record(b * p.Hkv + g, split, 0);
    for (uint r = 0; r < RM; r++) {
        float sum = subgroupAdd(l[r]);
        if (r >= rows)
            continue;
        if (SPLIT && lane == 0) {
            o32[p.ml_offset + 2 * (record_base + r)] = m[r];
            o32[p.ml_offset + 2 * (record_base + r) + 1] = sum;
        }
        float sink = row_sink(seq, head[r], position[r], slope[r]);
        float scale = SPLIT ? 1.0 : output_scale(m[r], sum, sink);
        uint out_base = b * p.o_sb + head[r] * p.o_sh + (seq.q_first + position[r]) * p.o_ss;
        for (uint v = 0; v < OV; v++) {
            uint d4 = lane + v * width;
            if (d4 >= DV4)
                continue;
            vec4 x = o[r * OV + v] * scale;
            if (SPLIT) {
                o4[(record_base + r) * DV4 + d4] = x;
            } else if (DV % 4 == 0) {
                o4[(out_base >> 2) + d4] = x;
            } else {
                for (uint c = 0; c < 4; c++)
                    if (4 * d4 + c < DV)
                        o32[out_base + 4 * d4 + c] = x[c];
            }
        }
    }
}

#include "poison_shared.glsl"

// NaN in every word of shared memory first, with VKATTN_POISON=1
// (poison_shared.glsl): a read before the kernel's own write shows.
void poison_shared()
{
    if (!POISON_SHARED)
        return;
    POISON_VEC4S(q_tile)
    poison_shared_done();
}

void main()
{
    poison_shared();
    uint g = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    Sequence seq = sequence(b);
    uint rows = min(p.group * seq.Tq, RM);

    for (uint e = invocation_index(); e < RM * D4; e += WG) {
        uint r = e / D4, d4 = e % D4;
        vec4 x = vec4(0.0);
        if (r < rows) {
            uint h = g * p.group + r / seq.Tq, i = r % seq.Tq;
            uint base = b * p.q_sb + h * p.q_sh + (seq.q_first + i) * p.q_ss;
            for (uint c = 0; c < 4; c++)
                if (4 * d4 + c < D)
                    x[c] = LOAD_ELEMENT(Q_DTYPE, q32, q16, base + 4 * d4 + c);
        }
        q_tile[e] = x * p.scale_log2e;
    }
    barrier();
    if (rows == 0)
        return;  // an empty packed sequence: nothing to write

    uint first = gl_WorkGroupID.x * SPLITS_PER_WORKGROUP;
    uint end = min(p.splits, first + SPLITS_PER_WORKGROUP);
    for (uint split = first + subgroup_index(); split < end; split += gl_NumSubgroups)
        attend_split(b, g, seq, rows, split);
}
