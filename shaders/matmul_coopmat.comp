#version 450
// Matmul on the matrix units: C[b] = alpha * A[b] @ op(B[b / b_group]) + bias
// with f16 A and B, f32 accumulation (VK_NV_cooperative_matrix), for the
// layer's projections with f16 weights.
//
// A workgroup computes a BM x BN block of C, kept in shared memory (c_tile,
// f32). K is walked in BK-wide slabs: the A slab (BM x BK) and the B slab are
// staged as f16, then the subgroups take turns over the MM x MN blocks of the C
// block, each adding A (MM x BK) times B (BK x MN) by coopmat.glsl's
// COOPMAT_MMA. B stored (N, K) (TRANSPOSE_B, nn.Linear weights) is staged as it
// is stored and read column-major. Any M, N, K: loads past the edge read zero,
// stores past it are skipped. One batch per gl_WorkGroupID.z; push constants as
// every matmul kernel. COOPMAT_EMULATED builds the same kernel without matrix
// instructions (see coopmat.glsl), for tests on devices without them.
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
layout(constant_id = 1) const uint BM = 64;     // a multiple of MM
layout(constant_id = 2) const uint BN = 64;     // a multiple of MN
layout(constant_id = 3) const uint BK = 32;     // a multiple of MK
layout(constant_id = 4) const bool TRANSPOSE_B = false;  // B stored (N, K)
layout(constant_id = 5) const bool HAS_BIAS = false;
layout(constant_id = 6) const uint BIAS_DTYPE = DTYPE_F32;
layout(constant_id = 7) const uint MM = 16;
layout(constant_id = 8) const uint MN = 16;
layout(constant_id = 9) const uint MK = 16;

const uint WG = gl_WorkGroupSize.x;

layout(set = 0, binding = 0) readonly buffer A16 { uint a16[]; };
layout(set = 0, binding = 1) readonly buffer B16 { uint b16[]; };
layout(set = 0, binding = 2) readonly buffer Bias32 { float bias32[]; };
layout(set = 0, binding = 2) readonly buffer Bias16 { uint bias16[]; };
layout(set = 0, binding = 3) writeonly buffer C { float c[]; };

#include "matmul_push.glsl"
#include "coopmat.glsl"

shared float16_t a_tile[BM * BK];   // [m][k]
shared float16_t b_tile[BK * BN];   // [k][n], or [n][k] with TRANSPOSE_B
shared float c_tile[BM * BN];       // [m][n]

float16_t load_half(uint word, uint index)
{
    return float16_t(unpackHalf2x16(word)[index & 1u]);
}

void main()
{
    uint tid = gl_LocalInvocationIndex;
    uint batch = gl_WorkGroupID.z + p.batch_base;
    uint row0 = gl_WorkGroupID.y * BM;
    uint col0 = gl_WorkGroupID.x * BN;
    uint a_base = p.a_offset + batch * p.a_batch_stride;
    uint b_base = p.b_offset + (batch / p.b_group) * p.b_batch_stride;

    for (uint e = tid; e < BM * BN; e += WG)
        c_tile[e] = 0.0;

    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        barrier();  // the previous slab's products are done with a_tile and b_tile
        for (uint e = tid; e < BM * BK; e += WG) {
            uint r = row0 + e / BK, k = k0 + e % BK, index = a_base + r * p.K + k;
            a_tile[e] = r < p.M && k < p.K ? load_half(a16[index >> 1], index) : float16_t(0.0);
        }
        for (uint e = tid; e < BK * BN; e += WG) {
            // Consecutive invocations take consecutive elements of a stored row.
            uint n = col0 + (TRANSPOSE_B ? e / BK : e % BN);
            uint k = k0 + (TRANSPOSE_B ? e % BK : e / BN);
            uint index = b_base + (TRANSPOSE_B ? n * p.K + k : k * p.N + n);
            b_tile[e] = n < p.N && k < p.K ? load_half(b16[index >> 1], index) : float16_t(0.0);
        }
        barrier();
        for (uint blk = gl_SubgroupID; blk < (BM / MM) * (BN / MN); blk += gl_NumSubgroups) {
            uint rb = blk / (BN / MN), cb = blk % (BN / MN);
            if (TRANSPOSE_B) {
                COOPMAT_MMA(c_tile, rb * MM * BN + cb * MN, BN, a_tile, rb * MM * BK, BK,
                            b_tile, cb * MN * BK, BK, true, BK, false)
            } else {
                COOPMAT_MMA(c_tile, rb * MM * BN + cb * MN, BN, a_tile, rb * MM * BK, BK,
                            b_tile, cb * MN, BN, false, BK, false)
            }
        }
    }
    barrier();

    uint c_base = p.c_offset + batch * p.c_batch_stride;
    for (uint e = tid; e < BM * BN; e += WG) {
        uint r = row0 + e / BN, n = col0 + e % BN;
        if (r >= p.M || n >= p.N)
            continue;
        float bias = HAS_BIAS ? LOAD_ELEMENT(BIAS_DTYPE, bias32, bias16, p.bias_offset + n) : 0.0;
        c[c_base + r * p.N + n] = p.alpha * c_tile[e] + bias;
    }
}
