#version 450
// Naive matmul: one output element per invocation, a dot product straight from
// global memory. The baseline that the tiled kernel is measured against; same
// bindings, push constants and specialization ids 6..10 as matmul.comp.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;   // along N
layout(constant_id = 6) const bool TRANSPOSE_B = false;
layout(constant_id = 7) const bool HAS_BIAS = false;
layout(constant_id = 8) const uint A_DTYPE = DTYPE_F32;
layout(constant_id = 9) const uint B_DTYPE = DTYPE_F32;
layout(constant_id = 10) const uint BIAS_DTYPE = DTYPE_F32;
layout(constant_id = 11) const bool MASKED_A_SKIPS = false;  // as in matmul.comp

layout(set = 0, binding = 0) readonly buffer A32 { float a32[]; };
layout(set = 0, binding = 0) readonly buffer A16 { uint a16[]; };
layout(set = 0, binding = 1) readonly buffer B32 { float b32[]; };
layout(set = 0, binding = 1) readonly buffer B16 { uint b16[]; };
layout(set = 0, binding = 2) readonly buffer Bias32 { float bias32[]; };
layout(set = 0, binding = 2) readonly buffer Bias16 { uint bias16[]; };
layout(set = 0, binding = 3) writeonly buffer C { float c[]; };

#include "matmul_push.glsl"

void main()
{
    uint n = gl_GlobalInvocationID.x;
    uint m = gl_WorkGroupID.y;
    uint batch = gl_WorkGroupID.z + p.batch_base;
    if (n >= p.N)
        return;
    uint a_base = p.a_offset + batch * p.a_batch_stride + m * p.K;
    uint b_base = p.b_offset + (batch / p.b_group) * p.b_batch_stride;
    float acc = 0.0;
    for (uint k = 0; k < p.K; k++) {
        uint index = TRANSPOSE_B ? b_base + n * p.K + k : b_base + k * p.N + n;
        float a = LOAD_ELEMENT(A_DTYPE, a32, a16, a_base + k);
        if (!MASKED_A_SKIPS || a != MASKED_WEIGHT)
            acc = fma(a, LOAD_ELEMENT(B_DTYPE, b32, b16, index), acc);
    }
    float v = p.alpha * acc;
    if (HAS_BIAS)
        v += LOAD_ELEMENT(BIAS_DTYPE, bias32, bias16, p.bias_offset + n);
    c[p.c_offset + batch * p.c_batch_stride + m * p.N + n] = v;
}
