#version 450
// Head transpose: Y[a, c, b, d] = X[a, b, c, d] for X (A, B, C, D), i.e.
// (batch, T, H, D) <-> (batch, H, T, D). One invocation per output element, or
// per four with VEC4 (D % 4 == 0); the innermost dimension D is contiguous in
// both, so reads and writes coalesce. With X_TEXELS, X is read through its
// texel view (a vector gather on CPU devices instead of a per-lane loop): a
// float view, or for bf16 (no texel format reads it as a float) a view of its
// bits, widened here.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint X_DTYPE = DTYPE_F32;
layout(constant_id = 2) const bool VEC4 = false;
layout(constant_id = 3) const bool X_TEXELS = false;

layout(set = 0, binding = 0) readonly buffer X32 { float x32[]; };
layout(set = 0, binding = 0) readonly buffer X16 { uint x16[]; };
layout(set = 0, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(set = 0, binding = 1) writeonly buffer Y4 { vec4 y4[]; };
layout(set = 0, binding = TEXEL_BINDING(0)) uniform samplerBuffer x_tex; // RGBA with VEC4
layout(set = 0, binding = TEXEL_BINDING(2)) uniform usamplerBuffer x_bits; // bf16 X

// Keep in sync with struct transpose_push in src/ops/head_transpose.c.
layout(push_constant) uniform Push {
    uint total;     // output units: elements, or vec4s with VEC4
    uint B, C, D;   // X's dimensions 1..3, D in units
} p;

vec4 x_texel(int i)
{
    if (X_DTYPE == DTYPE_BF16)
        return uintBitsToFloat(texelFetch(x_bits, i) << 16);
    return texelFetch(x_tex, i);
}

void main()
{
    uint out_index = linear_workgroup_index() * gl_WorkGroupSize.x + gl_LocalInvocationIndex;
    if (out_index >= p.total)
        return;
    uint d = out_index % p.D;
    uint row = out_index / p.D;      // over (a, c, b)
    uint b = row % p.B;
    uint ac = row / p.B;
    uint c = ac % p.C;
    uint a = ac / p.C;
    uint in_index = ((a * p.B + b) * p.C + c) * p.D + d;
    if (!VEC4) {
        y[out_index] = X_TEXELS ? x_texel(int(in_index)).x
                                : LOAD_ELEMENT(X_DTYPE, x32, x16, in_index);
    } else if (X_TEXELS) {
        y4[out_index] = x_texel(int(in_index));
    } else if (X_DTYPE != DTYPE_F32) {
        y4[out_index] = LOAD_PAIRS4(X_DTYPE, x16, 2 * in_index);
    } else {
        y4[out_index] = x4[in_index];
    }
}
