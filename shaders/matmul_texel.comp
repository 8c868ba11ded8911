#version 450
// Register-tiled matmul that reads A, B and bias only through texel fetches and
// uses no shared memory and no barriers: C[b] = alpha * A[b] @ op(B[b / b_group]) + bias.
//
// For devices that run invocations as the SIMD lanes of a CPU (lavapipe): there
// a storage-buffer or shared-memory load is a branchy loop over the lanes (about
// 200 cycles per vector of 8) while a texel fetch is one vector gather, and a
// barrier is a coroutine switch. Each invocation computes a TM x TN block of C
// (TN a multiple of 4) and walks K four at a time. With VEC4, A, B (and B^T)
// are bound as 4-component views, so each fetch brings 4 consecutive elements:
// TM + TN fetches feed 4 * TM * TN multiply-adds. Without VEC4 (K or N not a
// multiple of 4) the same loop fetches single elements.
//
// Each input is read through a float view (f32, f16) or, where it is bf16 (no
// texel format reads bf16 as a float), through a view of its bits at a binding
// of its own, widened here: a bf16 value is the top half of the f32 with the
// same bits. A specialization constant per input says which, so P (f32) times
// V (bf16) or an f32 activation times bf16 weights need no build of their own.
//
// Edges: rows, columns and k past the end are clamped to valid texels (never
// read out of bounds: texel buffers have no bounds guarantee without
// robustness), k past the end contributes zero, and stores past the end are
// skipped. One batch per gl_WorkGroupID.z.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;               // invocations along N
layout(constant_id = 1) const uint TM = 8;
layout(constant_id = 2) const uint TN = 8;    // multiple of 4
layout(constant_id = 3) const bool TRANSPOSE_B = false;
layout(constant_id = 4) const bool HAS_BIAS = false;
layout(constant_id = 5) const bool VEC4 = false;
layout(constant_id = 6) const bool MASKED_A_SKIPS = false;  // as in matmul.comp
layout(constant_id = 7) const bool A_BITS = false;     // A bf16: read a_bits, not a_tex
layout(constant_id = 8) const bool B_BITS = false;
layout(constant_id = 9) const bool BIAS_BITS = false;

layout(set = 0, binding = 3) writeonly buffer C { float c[]; };
layout(set = 0, binding = TEXEL_BINDING(0)) uniform samplerBuffer a_tex;
layout(set = 0, binding = TEXEL_BINDING(1)) uniform samplerBuffer b_tex;
layout(set = 0, binding = TEXEL_BINDING(2)) uniform samplerBuffer bias_tex;
layout(set = 0, binding = TEXEL_BINDING(4)) uniform usamplerBuffer a_bits;
layout(set = 0, binding = TEXEL_BINDING(5)) uniform usamplerBuffer b_bits;
layout(set = 0, binding = TEXEL_BINDING(6)) uniform usamplerBuffer bias_bits;

#include "matmul_push.glsl"

const uint TN4 = TN / 4;

#define INPUT_A 0u
#define INPUT_B 1u
#define INPUT_BIAS 2u

vec4 widen_bf16(uvec4 bits) { return uintBitsToFloat(bits << 16); }

// Texel `i` of input `which` (1 or 4 elements, as the input's view has). Only
// the view that the specialization picks is read: the other binding holds a
// placeholder of another format.
vec4 texel(uint which, int i)
{
    if (which == INPUT_A) {
        if (A_BITS)
            return widen_bf16(texelFetch(a_bits, i));
        return texelFetch(a_tex, i);
    }
    if (which == INPUT_B) {
        if (B_BITS)
            return widen_bf16(texelFetch(b_bits, i));
        return texelFetch(b_tex, i);
    }
    if (BIAS_BITS)
        return widen_bf16(texelFetch(bias_bits, i));
    return texelFetch(bias_tex, i);
}

// Four consecutive elements of a row-major matrix starting at `index` (a
// multiple of 4 when VEC4); elements at or past `limit` (the row's end) are 0.
vec4 fetch4(uint which, uint index, uint k, uint K)
{
    if (VEC4)
        return texel(which, int(index >> 2));
    vec4 v;
    for (uint i = 0; i < 4; i++) {
        bool inside = k + i < K;
        v[i] = inside ? texel(which, int(inside ? index + i : index)).x : 0.0;
    }
    return v;
}

// dot(a, b) without the terms whose a is MASKED_WEIGHT (MASKED_A_SKIPS).
float masked_dot(vec4 a, vec4 b)
{
    bvec4 masked = equal(a, vec4(MASKED_WEIGHT));
    return dot(mix(a, vec4(0.0), masked), mix(b, vec4(0.0), masked));
}

void main()
{
    uint col0 = gl_GlobalInvocationID.x * TN;
    uint row0 = gl_WorkGroupID.y * TM;
    if (col0 >= p.N)
        return;
    uint batch = gl_WorkGroupID.z + p.batch_base;
    uint a_base = p.a_offset + batch * p.a_batch_stride;
    uint b_base = p.b_offset + (batch / p.b_group) * p.b_batch_stride;

    uint rows[TM];
    for (uint r = 0; r < TM; r++)
        rows[r] = a_base + min(row0 + r, p.M - 1) * p.K;

    vec4 acc[TM * TN4];
    for (uint i = 0; i < TM * TN4; i++)
        acc[i] = vec4(0.0);
    // With B transposed each output is a dot product: scalar accumulators. (Adding
    // into a component of acc[] instead was measured 6x slower on lavapipe.)
    float acc_t[TM * TN];
    for (uint i = 0; i < TM * TN; i++)
        acc_t[i] = 0.0;

    for (uint k = 0; k < p.K; k += 4) {
        vec4 a[TM];
        for (uint r = 0; r < TM; r++)
            a[r] = fetch4(INPUT_A, rows[r] + k, k, p.K);
        // Four k that every row of the block leaves masked add nothing: past a
        // causal P's diagonal (about half of it) the block skips them whole.
        // The rows are the workgroup's, so the branch is uniform.
        if (MASKED_A_SKIPS) {
            bool all_masked = true;
            for (uint r = 0; r < TM; r++)
                all_masked = all_masked && all(equal(a[r], vec4(MASKED_WEIGHT)));
            if (all_masked)
                continue;
        }
        if (TRANSPOSE_B) {
            // B is (N, K): four k of one column per fetch; a dot product each.
            for (uint j = 0; j < TN; j++) {
                vec4 b = fetch4(INPUT_B, b_base + min(col0 + j, p.N - 1) * p.K + k, k, p.K);
                for (uint r = 0; r < TM; r++)
                    acc_t[r * TN + j] += MASKED_A_SKIPS ? masked_dot(a[r], b) : dot(a[r], b);
            }
        } else {
            // B is (K, N): four n of one k per fetch; rank-1 updates.
            for (uint kk = 0; kk < 4; kk++) {
                uint kr = min(k + kk, p.K - 1);
                bool inside = k + kk < p.K;  // select, not multiply: 0 * Inf is NaN
                for (uint c4 = 0; c4 < TN4; c4++) {
                    vec4 b;
                    if (VEC4) {
                        b = texel(INPUT_B, int((b_base + kr * p.N + min(col0 + 4 * c4, p.N - 4)) >> 2));
                    } else {
                        for (uint i = 0; i < 4; i++)
                            b[i] = texel(INPUT_B, int(b_base + kr * p.N + min(col0 + 4 * c4 + i, p.N - 1))).x;
                    }
                    b = inside ? b : vec4(0.0);
                    for (uint r = 0; r < TM; r++)
                        acc[r * TN4 + c4] = MASKED_A_SKIPS && a[r][kk] == MASKED_WEIGHT
                            ? acc[r * TN4 + c4] : fma(vec4(a[r][kk]), b, acc[r * TN4 + c4]);
                }
            }
        }
    }

    uint c_base = p.c_offset + batch * p.c_batch_stride;
    for (uint r = 0; r < TM; r++) {
        uint row = row0 + r;
        if (row >= p.M)
            break;
        for (uint j = 0; j < TN; j++) {
            uint col = col0 + j;
            if (col >= p.N)
                break;
            float v = p.alpha * (TRANSPOSE_B ? acc_t[r * TN + j] : acc[r * TN4 + j / 4][j % 4]);
            if (HAS_BIAS)
                v += texel(INPUT_BIAS, int(p.bias_offset + col)).x;
            c[c_base + row * p.N + col] = v;
        }
    }
}
