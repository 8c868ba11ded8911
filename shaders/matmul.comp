#version 450
// Tiled matmul: C[b] = alpha * A[b] @ op(B[b / b_group]) + bias, f32 accumulate.
//
// Each workgroup computes a BM x BN block of C. K is walked in BK-wide slabs:
// the A slab (BM x BK) and the B slab (BK x BN) are staged in shared memory,
// then each invocation accumulates a TM x TN register micro-tile from them.
// An invocation's rows are tr, tr + BM/TM, ... and its columns tc, tc + BN/TN, ...
// (strided, not blocked), so neighbouring invocations read neighbouring shared
// words and write neighbouring outputs. Any M, N, K: loads past the edge read
// zero and stores past it are skipped. One batch per gl_WorkGroupID.z.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;   // (BM / TM) * (BN / TN)
#include "invocation_order.glsl"  // after the workgroup size it reads
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;
layout(constant_id = 6) const bool TRANSPOSE_B = false;  // B stored (N, K)
layout(constant_id = 7) const bool HAS_BIAS = false;
layout(constant_id = 8) const uint A_DTYPE = DTYPE_F32;
layout(constant_id = 9) const uint B_DTYPE = DTYPE_F32;
layout(constant_id = 10) const uint BIAS_DTYPE = DTYPE_F32;
// An element of A that is MASKED_WEIGHT contributes nothing, even against an
// Inf or NaN in B (attention's P V: a key a row may not see has that weight, and
// its value must not reach the row; a weight that underflowed to 0 multiplies).
layout(constant_id = 11) const bool MASKED_A_SKIPS = false;

layout(set = 0, binding = 0) readonly buffer A32 { float a32[]; };
layout(set = 0, binding = 0) readonly buffer A16 { uint a16[]; };
layout(set = 0, binding = 1) readonly buffer B32 { float b32[]; };
layout(set = 0, binding = 1) readonly buffer B16 { uint b16[]; };
layout(set = 0, binding = 2) readonly buffer Bias32 { float bias32[]; };
layout(set = 0, binding = 2) readonly buffer Bias16 { uint bias16[]; };
layout(set = 0, binding = 3) writeonly buffer C { float c[]; };

#include "matmul_push.glsl"

shared float a_tile[BK * BM];   // [k][m]: a row of TM reads is contiguous per k
shared float b_tile[BK * BN];   // [k][n]

#include "poison_shared.glsl"

// NaN in every word of shared memory first, with VKATTN_POISON=1
// (poison_shared.glsl): a read before the kernel's own write shows.
void poison_shared()
{
    if (!POISON_SHARED)
        return;
    POISON_FLOATS(a_tile)
    POISON_FLOATS(b_tile)
    poison_shared_done();
}

void main()
{
    poison_shared();
    const uint WG = (BM / TM) * (BN / TN);
    const uint threads_n = BN / TN;
    const uint threads_m = BM / TM;
    uint tid = invocation_index();
    uint tr = tid / threads_n;
    uint tc = tid % threads_n;
    uint batch = gl_WorkGroupID.z + p.batch_base;
    uint row0 = gl_WorkGroupID.y * BM;
    uint col0 = gl_WorkGroupID.x * BN;
    uint a_base = p.a_offset + batch * p.a_batch_stride;
    uint b_base = p.b_offset + (batch / p.b_group) * p.b_batch_stride;

    float acc[TM * TN];
    for (uint i = 0; i < TM * TN; i++)
        acc[i] = 0.0;

    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        // Stage A: consecutive invocations take consecutive k of one row (coalesced).
        for (uint i = tid; i < BM * BK; i += WG) {
            uint r = i / BK, kk = i % BK;
            uint gr = row0 + r, gk = k0 + kk;
            a_tile[kk * BM + r] = (gr < p.M && gk < p.K)
                ? LOAD_ELEMENT(A_DTYPE, a32, a16, a_base + gr * p.K + gk) : 0.0;
        }
        // Stage B: walk memory order, (k, n) or (n, k) when transposed.
        for (uint i = tid; i < BK * BN; i += WG) {
            uint kk, n;
            if (TRANSPOSE_B) { n = i / BK; kk = i % BK; }
            else             { kk = i / BN; n = i % BN; }
            uint gn = col0 + n, gk = k0 + kk;
            uint index = TRANSPOSE_B ? b_base + gn * p.K + gk : b_base + gk * p.N + gn;
            b_tile[kk * BN + n] = (gn < p.N && gk < p.K)
                ? LOAD_ELEMENT(B_DTYPE, b32, b16, index) : 0.0;
        }
        barrier();

        for (uint kk = 0; kk < BK; kk++) {
            float a_frag[TM], b_frag[TN];
            for (uint i = 0; i < TM; i++)
                a_frag[i] = a_tile[kk * BM + tr + i * threads_m];
            for (uint j = 0; j < TN; j++)
                b_frag[j] = b_tile[kk * BN + tc + j * threads_n];
            for (uint i = 0; i < TM; i++)
                for (uint j = 0; j < TN; j++)
                    acc[i * TN + j] = MASKED_A_SKIPS && a_frag[i] == MASKED_WEIGHT
                        ? acc[i * TN + j] : fma(a_frag[i], b_frag[j], acc[i * TN + j]);
        }
        barrier();
    }

    uint c_base = p.c_offset + batch * p.c_batch_stride;
    for (uint i = 0; i < TM; i++) {
        uint gr = row0 + tr + i * threads_m;
        if (gr >= p.M)
            break;
        for (uint j = 0; j < TN; j++) {
            uint gn = col0 + tc + j * threads_n;
            if (gn >= p.N)
                break;
            float v = p.alpha * acc[i * TN + j];
            if (HAS_BIAS)
                v += LOAD_ELEMENT(BIAS_DTYPE, bias32, bias16, p.bias_offset + gn);
            c[c_base + gr * p.N + gn] = v;
        }
    }
}
