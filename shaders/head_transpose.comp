#version 450
// Head transpose: Y[a, c, b, d] = X[a, b, c, d] for X (A, B, C, D), i.e.
// (batch, T, H, D) <-> (batch, H, T, D). One invocation per output element; the
// innermost dimension D is contiguous in both, so reads and writes coalesce.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool X_F16 = false;

layout(set = 0, binding = 0) readonly buffer X32 { float x32[]; };
layout(set = 0, binding = 0) readonly buffer X16 { uint x16[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };

// Keep in sync with struct transpose_push in src/ops/head_transpose.c.
layout(push_constant) uniform Push {
    uint total;
    uint B, C, D;   // X's dimensions 1..3
} p;

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
    y[out_index] = LOAD_ELEMENT(X_F16, x32, x16, in_index);
}
