#version 450
// Narrowing: Y = X rounded to f16 or bf16, X f32. Every op computes its output
// in f32; where the caller's output tensor is 16-bit, the op writes f32 scratch
// and this pass rounds it into the output (src/ops/wide_output.c). Round to
// nearest, ties to even, bit for bit as the host's conversions in src/half.c
// (float_to_half, float_to_bf16): past the largest finite value -> Inf, NaN ->
// quiet NaN, values under half the smallest f16 subnormal -> signed zero. No
// rounding mode is assumed of the device (packHalf2x16 leaves it open).
// One invocation per four elements: X is read as a vec4 (with X_TEXELS through
// its four-component texel view, one vector gather on CPU devices), Y written as
// two words.
// Both buffers are padded to 16 bytes (tensor.c), so the last group of four may
// run past `count` into padding, which nothing reads.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint Y_DTYPE = DTYPE_F16;
layout(constant_id = 2) const bool X_TEXELS = false;

layout(set = 0, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(set = 0, binding = TEXEL_BINDING(0)) uniform samplerBuffer x_tex;
layout(set = 0, binding = 1) writeonly buffer Y { uvec2 y2[]; };

// Keep in sync with struct fours_push in src/ops/wide_output.c.
layout(push_constant) uniform Push {
    uint groups;    // groups of four elements: ceil(count / 4)
} p;

uint to_f16(float f)
{
    uint bits = floatBitsToUint(f);
    uint sign = (bits >> 16) & 0x8000u;
    uint mag = bits & 0x7fffffffu;
    if (mag >= 0x7f800000u)                 // Inf, NaN (quiet)
        return sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u);
    if (mag >= 0x477ff000u)                 // rounds to >= 65520: Inf
        return sign | 0x7c00u;
    if (mag < 0x33000001u)                  // at most half the smallest subnormal
        return sign;
    uint exponent = mag >> 23;
    uint mantissa = (mag & 0x7fffffu) | 0x800000u;
    uint shift = exponent < 113u ? 126u - exponent : 13u;   // subnormal: 14..24
    uint kept = exponent < 113u ? mantissa >> shift
                                : ((exponent - 112u) << 10) | ((mantissa >> 13) & 0x3ffu);
    uint rest = mantissa & ((1u << shift) - 1u);
    uint halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (kept & 1u) != 0u))
        kept++;                             // may carry into the exponent: correct
    return sign | kept;
}

uint to_bf16(float f)
{
    uint bits = floatBitsToUint(f);
    if ((bits & 0x7fffffffu) > 0x7f800000u)  // NaN: sign and top payload kept, quiet
        return (bits >> 16) | 0x40u;
    return (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
}

uint narrow(float f)
{
    return Y_DTYPE == DTYPE_BF16 ? to_bf16(f) : to_f16(f);
}

void main()
{
    uint i = linear_workgroup_index() * gl_WorkGroupSize.x + gl_LocalInvocationIndex;
    if (i >= p.groups)
        return;
    vec4 v = X_TEXELS ? texelFetch(x_tex, int(i)) : x4[i];
    y2[i] = uvec2(narrow(v.x) | (narrow(v.y) << 16), narrow(v.z) | (narrow(v.w) << 16));
}
