#version 450
// Fused attention (flash attention, FlashAttention-2 style) for GPUs: K and V
// tiles are staged in shared memory by the whole workgroup and reused by all its
// query rows.
//
// A workgroup owns BR * TM packed query rows of one problem (b, kv head g; see
// attention_push.glsl) and one range of keys (split). TPR consecutive
// invocations (within one subgroup) share TM consecutive rows and split their
// head dimension in groups of four, interleaved (invocation `lane` holds
// dimensions 4 lane .. 4 lane + 3, then 4 (lane + TPR) .., ...), so a row's Q
// and O take D / TPR and DV / TPR registers per invocation and the row's lanes
// read a shared K or V row as consecutive vec4s, without conflicts. Each shared
// load brings four elements, and each element serves the invocation's TM rows:
// with one row and one element a load, the kernel made one shared load per
// multiply-add, and shared memory, not arithmetic, bounded it (10 % of FP32
// peak on an H100). Per tile of BC keys: the workgroup loads
// K and V (zeros past the block's last allowed key), each invocation computes
// partial dot products over its dimensions, a butterfly of subgroup shuffles sums
// them across the row's TPR invocations, the online softmax update runs (running
// maximum m and sum l in the exp2 domain, O rescaled as m grows), and
// O += P V over the invocation's output dimensions. Only the tiles some row of
// the block may see (causality, kv_len, a window) are loaded, so a window of W
// keys costs O(W) per row, not O(Tk). With SPLIT, unnormalised O, m and l go to
// the partial buffer for attention_combine.comp; otherwise O / l is written.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"

layout(local_size_x_id = 0) in;                // BR * TPR
#include "invocation_order.glsl"  // after the workgroup size it reads
layout(constant_id = 1) const uint TPR = 4;     // invocations per row: a power of 2 <= subgroup
layout(constant_id = 2) const uint BC = 32;     // keys per tile
layout(constant_id = 3) const uint D = 64;
layout(constant_id = 4) const uint DV = 64;
layout(constant_id = 5) const bool CAUSAL = false;
layout(constant_id = 6) const bool SPLIT = false;
layout(constant_id = 7) const uint Q_DTYPE = DTYPE_F32;
layout(constant_id = 8) const uint K_DTYPE = DTYPE_F32;
layout(constant_id = 9) const uint V_DTYPE = DTYPE_F32;
layout(constant_id = 10) const uint TM = 1;     // query rows per invocation (its TPR lanes)
// Row blocks in reverse grid order: with CAUSAL the last see the most keys, and
// a GPU starts workgroups about in grid order (fused_heavy_first).
layout(constant_id = 11) const bool HEAVY_FIRST = false;
// constant_id 15: VARIANTS (attention_variants.glsl), kv_len among them

const uint WG = gl_WorkGroupSize.x;
const uint BR = WG / TPR;               // row groups: BR * TM rows per workgroup
const uint D4 = (D + 3) / 4;            // a K row in vec4s (zeros past D)
const uint DV4 = (DV + 3) / 4;          // a V row, and partial records, in vec4s
const uint DS = (D4 + TPR - 1) / TPR;   // Q vec4s per invocation
const uint DVS = (DV4 + TPR - 1) / TPR; // O vec4s per invocation

layout(set = 0, binding = 0) readonly buffer Q32 { float q32[]; };
layout(set = 0, binding = 0) readonly buffer Q16 { uint q16[]; };
layout(set = 0, binding = 1) readonly buffer K32 { float k32[]; };
layout(set = 0, binding = 1) readonly buffer K16 { uint k16[]; };
layout(set = 0, binding = 1) readonly buffer K32x4 { vec4 k32x4[]; };
layout(set = 0, binding = 1) readonly buffer K16x4 { uvec2 k16x4[]; };
layout(set = 0, binding = 2) readonly buffer V32 { float v32[]; };
layout(set = 0, binding = 2) readonly buffer V16 { uint v16[]; };
layout(set = 0, binding = 2) readonly buffer V32x4 { vec4 v32x4[]; };
layout(set = 0, binding = 2) readonly buffer V16x4 { uvec2 v16x4[]; };
layout(set = 0, binding = 3) writeonly buffer O32 { float o32[]; };   // O, or the partials

#include "attention_push.glsl"
#include "attention_variants.glsl"

shared vec4 k_tile[BC * D4];
shared vec4 v_tile[BC * DV4];

// Stages the WIDTH elements (WIDTH4 vec4s, zeros past WIDTH) of each key of the
// tile into TILE (zeros past block_limit): four per load where every row
// starts 4-element aligned (ALIGNED4), else one; a GPU spends as much on these
// loads as on a tile's products when they come one element at a time.
#define STAGE_TILE(TILE, DTYPE, BUF, BUF16, BUF4, BUF16X4, BASE, STRIDE, WIDTH, WIDTH4, ALIGNED4) \
    for (uint e = tid; e < BC * (WIDTH4); e += WG) {                                            \
        uint key = t0 + e / (WIDTH4), d = e % (WIDTH4) * 4;                                     \
        vec4 x = vec4(0.0);                                                                     \
        if (key < block_limit) {                                                                \
            uint row_ = (BASE) + key_row(b, seq, key) * (STRIDE);                               \
            if ((WIDTH) % 4 == 0 && (ALIGNED4))                                                 \
                x = LOAD_VEC4(DTYPE, BUF4, BUF16X4, row_ + d);                                  \
            else                                                                                \
                for (uint c_ = 0; c_ < 4; c_++)                                                 \
                    if (d + c_ < (WIDTH))                                                       \
                        x[c_] = LOAD_ELEMENT(DTYPE, BUF, BUF16, row_ + d + c_);                 \
        }                                                                                       \
        TILE[e] = x;                                                                            \
    }

#include "poison_shared.glsl"

// NaN in every word of shared memory first, with VKATTN_POISON=1
// (poison_shared.glsl): a read before the kernel's own write shows.
void poison_shared()
{
    if (!POISON_SHARED)
        return;
    POISON_VEC4S(k_tile)
    POISON_VEC4S(v_tile)
    poison_shared_done();
}

void main()
{
    poison_shared();
    uint g = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    Sequence seq = sequence(b);
    uint rows = p.group * seq.Tq;
    uint blocks = (p.group * p.Tq + BR * TM - 1) / (BR * TM);
    uint block = gl_WorkGroupID.x % blocks, split = gl_WorkGroupID.x / blocks;
    if (HEAVY_FIRST)
        block = blocks - 1 - block;
    if (block * BR * TM >= rows)
        return;  // past this sequence's rows (packed sequences): the whole workgroup
    uint tid = invocation_index(), lane = tid % TPR;
    uint first_row = block * BR * TM + tid / TPR * TM;  // this invocation's TM rows

    // The keys of this split that each row, and any row of the block, may see.
    // Rows of one block may span two query heads, and then it holds positions
    // 0 and Tq - 1.
    uint key_begin = split * p.keys_per_split;
    uint key_end = min(p.Tk, key_begin + p.keys_per_split);
    uint first = block * BR * TM, last = min(first + BR * TM, rows) - 1;
    bool spans = first / seq.Tq != last / seq.Tq;
    uvec2 block_range = uvec2(key_range(seq, CAUSAL, spans ? 0 : first % seq.Tq).x,
                              key_range(seq, CAUSAL, spans ? seq.Tq - 1 : last % seq.Tq).y);
    uvec2 block_keys = split_keys(block_range, key_begin, key_end);
    uint block_lo = block_keys.x, block_limit = block_keys.y;

    // Per row (past the last row: the last row again, not stored).
    uint head[TM], position[TM], lo[TM], limit[TM];
    float slope[TM];
    vec4 q[TM * DS];
    for (uint t = 0; t < TM; t++) {
        uint r = min(first_row + t, rows - 1);
        uint h = g * p.group + r / seq.Tq, i = r % seq.Tq;
        head[t] = h, position[t] = i;
        uvec2 keys = split_keys(key_range(seq, CAUSAL, i), key_begin, key_end);
        lo[t] = keys.x, limit[t] = keys.y;
        slope[t] = alibi_slope_log2e(h);
        uint q_base = b * p.q_sb + h * p.q_sh + (seq.q_first + i) * p.q_ss;
        for (uint s = 0; s < DS; s++) {
            uint d = 4 * (lane + TPR * s);
            vec4 x = vec4(0.0);
            for (uint c = 0; c < 4; c++)
                if (d + c < D)
                    x[c] = LOAD_ELEMENT(Q_DTYPE, q32, q16, q_base + d + c);
            q[t * DS + s] = x * p.scale_log2e;
        }
    }
    uint k_base = b * p.k_sb + g * p.k_sh;
    uint v_base = b * p.v_sb + g * p.v_sh;
    bool k_aligned4 = ((k_base | p.k_ss) & 3u) == 0u;
    bool v_aligned4 = ((v_base | p.v_ss) & 3u) == 0u;

    float m[TM], l[TM];
    vec4 o[TM * DVS];
    for (uint t = 0; t < TM; t++) {
        m[t] = NEG_INF;
        l[t] = 0.0;
        for (uint s = 0; s < DVS; s++)
            o[t * DVS + s] = vec4(0.0);
    }

    for (uint t0 = block_lo; t0 < block_limit; t0 += BC) {
        barrier();  // every invocation is done with the previous tile
        STAGE_TILE(k_tile, K_DTYPE, k32, k16, k32x4, k16x4, k_base, p.k_ss, D, D4, k_aligned4)
        STAGE_TILE(v_tile, V_DTYPE, v32, v16, v32x4, v16x4, v_base, p.v_ss, DV, DV4, v_aligned4)
        barrier();

        // Each K vec4 read from shared memory serves the invocation's TM rows.
        float sc[TM * BC];
        for (uint c = 0; c < BC; c++) {
            float acc[TM];
            for (uint t = 0; t < TM; t++)
                acc[t] = 0.0;
            for (uint s = 0; s < DS; s++) {
                uint d4 = lane + TPR * s;
                if (d4 < D4) {
                    vec4 k = k_tile[c * D4 + d4];
                    for (uint t = 0; t < TM; t++)
                        acc[t] += dot(q[t * DS + s], k);
                }
            }
            for (uint t = 0; t < TM; t++)
                sc[t * BC + c] = acc[t];
        }
        for (uint offset = 1; offset < TPR; offset *= 2)
            for (uint x = 0; x < TM * BC; x++)
                sc[x] += subgroupShuffleXor(sc[x], offset);

        // Online softmax; masked keys get weight exactly 0 (see attention_rows.comp).
        float alpha[TM];
        for (uint t = 0; t < TM; t++) {
            float step_max = NEG_INF;
            for (uint c = 0; c < BC; c++) {
                uint j = t0 + c;
                sc[t * BC + c] = j >= lo[t] && j < limit[t]
                    ? adjust_score(sc[t * BC + c], slope[t], b, head[t], position[t], j,
                                   alibi_origin(seq, position[t]))
                    : NEG_INF;
                step_max = max(step_max, sc[t * BC + c]);
            }
            float m_new = max(m[t], step_max);
            float shift = m_new == NEG_INF ? 0.0 : m_new;
            alpha[t] = exp2(m[t] - shift);
            float sum = 0.0;
            for (uint c = 0; c < BC; c++) {
                sc[t * BC + c] = key_weight(sc[t * BC + c], shift);
                sum += weight_sum(sc[t * BC + c]);
            }
            l[t] = l[t] * alpha[t] + sum;
            m[t] = m_new;
        }

        // Keys outside a row's range (or masked to -inf) are skipped, not
        // weighted by 0, so a NaN or Inf in V there cannot reach the row. Each
        // V element read serves the TM rows.
        bool whole_tile[TM];
        for (uint t = 0; t < TM; t++)
            whole_tile[t] = !KEYWISE_MASK && t0 >= lo[t] && t0 + BC <= limit[t];
        for (uint s = 0; s < DVS; s++) {
            uint d4 = min(lane + TPR * s, DV4 - 1);
            vec4 acc[TM];
            for (uint t = 0; t < TM; t++)
                acc[t] = o[t * DVS + s] * alpha[t];
            for (uint c = 0; c < BC; c++) {
                vec4 v = v_tile[c * DV4 + d4];
                for (uint t = 0; t < TM; t++) {
                    vec4 updated = fma(vec4(sc[t * BC + c]), v, acc[t]);
                    bool used = t0 + c >= lo[t] && t0 + c < limit[t] &&
                                weight_used(sc[t * BC + c]);
                    acc[t] = whole_tile[t] || used ? updated : acc[t];
                }
            }
            for (uint t = 0; t < TM; t++)
                o[t * DVS + s] = acc[t];
        }
    }

    for (uint t = 0; t < TM; t++) {
        uint row = first_row + t;
        if (row >= rows)
            break;
        if (SPLIT) {
            uint record = partial_record(b * p.Hkv + g, split, row);
            for (uint s = 0; s < DVS; s++) {
                uint d = 4 * (lane + TPR * s);
                for (uint c = 0; c < 4; c++)
                    if (d + c < DV)
                        o32[record * DV4 * 4 + d + c] = o[t * DVS + s][c];
            }
            if (lane == 0) {
                o32[p.ml_offset + 2 * record] = m[t];
                o32[p.ml_offset + 2 * record + 1] = l[t];
            }
            continue;
        }
        float inv = output_scale(m[t], l[t], row_sink(seq, head[t], position[t], slope[t]));
        uint out_base = b * p.o_sb + head[t] * p.o_sh + (seq.q_first + position[t]) * p.o_ss;
        for (uint s = 0; s < DVS; s++) {
            uint d = 4 * (lane + TPR * s);
            for (uint c = 0; c < 4; c++)
                if (d + c < DV)
                    o32[out_base + d + c] = o[t * DVS + s][c] * inv;
        }
    }
}
