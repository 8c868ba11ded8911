#version 450
// Fused attention on the matrix units: S = Q K^T and O += P V as f16 x f16 -> f32
// cooperative-matrix products (VK_NV_cooperative_matrix), the online softmax in
// f32 between them.
//
// A workgroup owns BR packed query rows of one (batch, kv head) problem and one
// key range (split), as in attention_tiled.comp (packing, causal block limit,
// kv_len, split records and push constants are the same). Q is staged once as
// f16 in shared memory; per tile of BC keys:
//   1. the workgroup stages K and V as f16 (zeros past the block's last allowed
//      key, and in the padding of the head dimensions to the matrix shape);
//   2. S = Q K^T: subgroups take turns over the MM x MN blocks of the BR x BC
//      scores, each a sum over DP / MK products of Q (MM x MK) and K^T (MK x MN,
//      K read column-major), stored to s_tile (f32);
//   3. one invocation per row scales and masks its scores, updates the running
//      maximum m and sum l (exp2 domain), and writes P = exp2(S - m) as f16 to
//      p_tile and the factor alpha by which its earlier output shrinks;
//   4. the workgroup multiplies each row of the O accumulator (o_tile, f32) by
//      its alpha;
//   5. O += P V: subgroups take turns over the MM x MN blocks of O, loading
//      each, adding P (MM x MK) V (MK x MN) over the tile's keys, storing it.
// MM, MN, MK are a shape from the device's cooperative-matrix properties. Q, K
// and V are f16 (bound as 32-bit words). Shared memory, in bytes:
// 2 (BR DP + BC DP + BC DVP + BR BC) + 4 (BR BC + BR DVP + 3 BR).
//
// With COOPMAT_EMULATED the same kernel is built with the matrix operations of
// steps 2 and 5 replaced by plain loops over the same shared-memory blocks (a
// block's elements spread over the subgroup's invocations), so that everything
// else is exercised on devices without matrix units (lavapipe in CI). The
// emulated build is correct for any subgroup size; the real one runs with full
// subgroups of the size the device's matrix shapes are defined for.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifndef COOPMAT_EMULATED
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#endif
#include "common.glsl"


layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BR = 32;     // query rows per workgroup, a multiple of MM
layout(constant_id = 2) const uint BC = 32;     // keys per tile, a multiple of MN and MK
layout(constant_id = 3) const uint D = 64;
layout(constant_id = 4) const uint DV = 64;
layout(constant_id = 5) const bool CAUSAL = false;
layout(constant_id = 6) const bool HAS_KV_LEN = false;
layout(constant_id = 7) const bool SPLIT = false;
layout(constant_id = 8) const uint MM = 16;
layout(constant_id = 9) const uint MN = 16;
layout(constant_id = 10) const uint MK = 16;

const uint WG = gl_WorkGroupSize.x;
const uint DP = (D + MK - 1) / MK * MK;     // head size padded to the matrix shape
const uint DVP = (DV + MN - 1) / MN * MN;
const uint DV4 = (DV + 3) / 4;              // partial records are padded to vec4

layout(set = 0, binding = 0) readonly buffer Q16 { uint q16[]; };
layout(set = 0, binding = 1) readonly buffer K16 { uint k16[]; };
layout(set = 0, binding = 2) readonly buffer V16 { uint v16[]; };
layout(set = 0, binding = 3) writeonly buffer O32 { float o32[]; };   // O, or the partials
layout(set = 0, binding = 4) readonly buffer KvLen { int kv_len[]; };

#include "attention_push.glsl"
#include "coopmat.glsl"

// The matrix loads and stores need 16-byte aligned addresses, and the driver
// lays the shared variables out as it likes: every one is a multiple of 16
// bytes long (with a 4-byte scalar among them, NVIDIA's H100 read the tiles
// shifted and computed garbage).
shared float16_t q_tile[BR * DP];
shared float16_t k_tile[BC * DP];
shared float16_t v_tile[BC * DVP];
shared float16_t p_tile[BR * BC];
shared float s_tile[BR * BC];
shared float o_tile[BR * DVP];
shared float row_m[BR], row_l[BR], row_alpha[BR];   // BR is a multiple of MM (16)
// [0]: t0 + 1 of the last tile whose V held an Inf or NaN (grows with t0: never
// reset); four words long for the alignment above.
shared uint v_nonfinite_tile[4];

float16_t load_half(uint word, uint index)
{
    return float16_t(unpackHalf2x16(word)[index & 1u]);
}

// s_tile block (rb, cb) = Q block row rb times K^T block column cb.
void scores_block(uint rb, uint cb)
{
    COOPMAT_MMA(s_tile, rb * MM * BC + cb * MN, BC, q_tile, rb * MM * DP, DP,
                k_tile, cb * MN * DP, DP, true, DP, true)
}

// o_tile block (rb, cb) += P block row rb times V block column cb.
void output_block(uint rb, uint cb)
{
    COOPMAT_MMA(o_tile, rb * MM * DVP + cb * MN, DVP, p_tile, rb * MM * BC, BC,
                v_tile, cb * MN, DVP, false, BC, false)
}

// The query position of packed row r.
uint position(uint r) { return r % p.Tq; }

void main()
{
    uint g = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    uint rows = p.group * p.Tq;
    uint blocks = (rows + BR - 1) / BR;
    uint block = gl_WorkGroupID.x % blocks, split = gl_WorkGroupID.x / blocks;
    uint tid = gl_LocalInvocationIndex;
    uint first = block * BR, last = min(first + BR, rows) - 1;

    uint key_begin = split * p.keys_per_split;
    uint key_end = min(p.Tk, key_begin + p.keys_per_split);
    if (HAS_KV_LEN)
        key_end = min(key_end, uint(max(kv_len[b], 0)));
    // The block's last key: rows of one block may span two query heads, and then
    // some row sits at position Tq - 1.
    uint block_limit = key_end;
    if (CAUSAL) {
        uint last_i = first / p.Tq != last / p.Tq ? p.Tq - 1 : position(last);
        block_limit = min(block_limit, uint(max(int(last_i) + p.q_offset + 1, 0)));
    }

    for (uint e = tid; e < BR * DP; e += WG) {
        uint row = first + e / DP, d = e % DP;
        float16_t x = float16_t(0.0);
        if (row < rows && d < D) {
            uint h = g * p.group + row / p.Tq;
            uint index = b * p.q_sb + h * p.q_sh + position(row) * p.q_ss + d;
            x = load_half(q16[index >> 1], index);
        }
        q_tile[e] = x;
    }
    for (uint e = tid; e < BR * DVP; e += WG)
        o_tile[e] = 0.0;
    for (uint r = tid; r < BR; r += WG) {
        row_m[r] = NEG_INF;
        row_l[r] = 0.0;
    }
    if (tid == 0)
        v_nonfinite_tile[0] = 0;
    uint k_base = b * p.k_sb + g * p.k_sh;
    uint v_base = b * p.v_sb + g * p.v_sh;

    for (uint t0 = key_begin; t0 < block_limit; t0 += BC) {
        barrier();  // the previous tile's products are done with k, v and p
        for (uint e = tid; e < BC * DP; e += WG) {
            uint key = t0 + e / DP, d = e % DP;
            uint index = k_base + key * p.k_ss + d;
            k_tile[e] = key < block_limit && d < D ? load_half(k16[index >> 1], index)
                                                   : float16_t(0.0);
        }
        for (uint e = tid; e < BC * DVP; e += WG) {
            uint key = t0 + e / DVP, d = e % DVP;
            uint index = v_base + key * p.v_ss + d;
            float16_t x = key < block_limit && d < DV ? load_half(v16[index >> 1], index)
                                                      : float16_t(0.0);
            v_tile[e] = x;
            if (isnan(x) || isinf(x))
                atomicMax(v_nonfinite_tile[0], t0 + 1);
        }
        barrier();

        for (uint blk = gl_SubgroupID; blk < (BR / MM) * (BC / MN); blk += gl_NumSubgroups)
            scores_block(blk / (BC / MN), blk % (BC / MN));
        barrier();

        // Online softmax; masked keys (and rows past the problem) get weight 0.
        for (uint r = tid; r < BR; r += WG) {
            uint row = first + r;
            uint limit = row < rows ? key_end : 0;
            if (CAUSAL)
                limit = min(limit, uint(max(int(position(row)) + p.q_offset + 1, 0)));
            float step_max = NEG_INF;
            for (uint c = 0; c < BC; c++) {
                float s = t0 + c < limit ? s_tile[r * BC + c] * p.scale_log2e : NEG_INF;
                s_tile[r * BC + c] = s;
                step_max = max(step_max, s);
            }
            float m_new = max(row_m[r], step_max);
            float shift = m_new == NEG_INF ? 0.0 : m_new;
            float alpha = exp2(row_m[r] - shift);
            float sum = 0.0;
            for (uint c = 0; c < BC; c++) {
                float weight = exp2(s_tile[r * BC + c] - shift);
                p_tile[r * BC + c] = float16_t(weight);
                sum += weight;
            }
            row_l[r] = row_l[r] * alpha + sum;
            row_m[r] = m_new;
            row_alpha[r] = alpha;
        }
        barrier();
        for (uint e = tid; e < BR * DVP; e += WG)
            o_tile[e] *= row_alpha[e / DVP];
        barrier();

        if (v_nonfinite_tile[0] != t0 + 1) {
            for (uint blk = gl_SubgroupID; blk < (BR / MM) * (DVP / MN); blk += gl_NumSubgroups)
                output_block(blk / (DVP / MN), blk % (DVP / MN));
        } else {
            // An Inf or NaN in this V tile: the block product would multiply it by
            // the zero weights of rows that may not see its key (0 * NaN = NaN).
            // Plain code over the keys each row sees instead (DESIGN.md section 2).
            for (uint e = tid; e < BR * DVP; e += WG) {
                uint r = e / DVP, d = e % DVP, row = first + r;
                uint limit = row < rows ? key_end : 0;
                if (CAUSAL)
                    limit = min(limit, uint(max(int(position(row)) + p.q_offset + 1, 0)));
                float acc = o_tile[e];
                for (uint c = 0; c < BC && t0 + c < limit; c++)
                    acc += float(p_tile[r * BC + c]) * float(v_tile[c * DVP + d]);
                o_tile[e] = acc;
            }
        }
    }
    barrier();

    for (uint e = tid; e < BR * DV; e += WG) {
        uint r = e / DV, d = e % DV, row = first + r;
        if (row < rows && SPLIT) {
            uint record = partial_record(b * p.Hkv + g, split, row);
            o32[record * DV4 * 4 + d] = o_tile[r * DVP + d];
            if (d == 0) {
                o32[p.ml_offset + 2 * record] = row_m[r];
                o32[p.ml_offset + 2 * record + 1] = row_l[r];
            }
        } else if (row < rows) {
            float l = row_l[r];
            uint h = g * p.group + row / p.Tq;
            uint out_index = b * p.o_sb + h * p.o_sh + position(row) * p.o_ss + d;
            o32[out_index] = l == 0.0 ? 0.0 : o_tile[r * DVP + d] / l;
        }
    }
}
