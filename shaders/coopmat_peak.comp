#version 450
// The matrix units' rate through this extension, as the attention kernel feeds
// them: how fast MM x MN x MK products (f16 operands, f32 accumulators) can
// run on this device, so that a kernel's figure can be read against the
// ceiling it actually has rather than a datasheet's (coopmat_peak.c logs it
// with VKATTN_COOPMAT_PEAK=1).
//
// Every subgroup runs ITERS rounds of CHAINS independent products (chains of
// accumulators, so that no product waits on the one before it) with an A
// operand held in registers and, by LOADS:
//   0  a B operand held in registers too: the units alone;
//   1  B loaded from shared memory for each product (as the attention kernel's
//      K and V blocks are) from one of SLOTS blocks, each product's block a
//      step further than the last by a step the host gives at run time
//      (result[0], 1), so that no compiler can prove two loads the same and
//      merge or hoist them;
//   2  B loaded once for two products of different accumulators (the kernel's
//      two row blocks a subgroup, coopmat.rows=2);
//   3  as 1, B loaded column-major (as the attention kernel's K blocks are for
//      S = Q K^T, where 1 is as its V blocks are for P V): a transposing load
//      the driver may make slower than a plain one.
// A's and B's elements are all 1/16, so each product adds MK / 256 to every
// accumulator element; chain c starts at c (no two chains alike, so none can
// be merged): the host checks c + ITERS * MK / 256 (exact in f32) in the
// stored accumulators. Built also with COOPMAT_EMULATED (coopmat.glsl), whose
// B operands always come from shared memory: there it tests this code and the
// host's check, not a rate.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifndef COOPMAT_EMULATED
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MM = 16;
layout(constant_id = 2) const uint MN = 16;
layout(constant_id = 3) const uint MK = 16;
layout(constant_id = 4) const uint SUBGROUPS = 4;
layout(constant_id = 5) const uint ITERS = 256;
layout(constant_id = 6) const uint LOADS = 1;
const uint CHAINS = 8;     // coopmat_peak.c's PEAK_CHAINS
const uint SLOTS = 16;

#include "coopmat.glsl"

// result[0]: the step between B blocks (1), from the host; then the results
layout(set = 0, binding = 0) buffer Out { float result[]; };

// A (MM x MK) and SLOTS blocks of B (MK x MN), packed f16, every element 1/16.
shared uvec4 a_halves[(MM * MK + PACK - 1) / PACK];
shared uvec4 b_halves[SLOTS * ((MK * MN + PACK - 1) / PACK)];
shared float stored[SUBGROUPS * MM * MN];
MATRIX_A(a, 1, SUBGROUPS)
MATRIX_ACC(acc, CHAINS, SUBGROUPS)

const uint B_BLOCK = (MK * MN + PACK - 1) / PACK * PACK;   // halves a B slot

#include "poison_shared.glsl"

// NaN in every word of shared memory first, with VKATTN_POISON=1
// (poison_shared.glsl): a read before the kernel's own write shows.
void poison_shared()
{
    if (!POISON_SHARED)
        return;
    POISON_UVEC4S(a_halves)
    POISON_UVEC4S(b_halves)
    POISON_FLOATS(stored)
    MATRIX_POISON(a)
    MATRIX_POISON(acc)
    poison_shared_done();
}

void main()
{
    poison_shared();
    uint lane = gl_SubgroupInvocationID, sub = subgroup_index();
    uint sixteenth = packHalf2x16(vec2(0.0625));
    for (uint w = invocation_index(); w < a_halves.length() * 4u; w += gl_WorkGroupSize.x)
        a_halves[w / 4u][w % 4u] = sixteenth;
    for (uint w = invocation_index(); w < b_halves.length() * 4u; w += gl_WorkGroupSize.x)
        b_halves[w / 4u][w % 4u] = sixteenth;
    barrier();
    A_LOAD(a, 0, a_halves, 0, MK);
    MATRIX_UNROLL for (uint c = 0; c < CHAINS; c++)
        ACC_FILL(acc, c, float(c));
    uint step = uint(result[0]);

#ifndef COOPMAT_EMULATED
    if (LOADS == 0) {
        fcoopmatNV<16, gl_ScopeSubgroup, MK, MN> b;
        coopMatLoadNV(b, b_halves, 0, MN / PACK, false);
        for (uint it = 0; it < ITERS; it++)
            [[unroll]] for (uint c = 0; c < CHAINS; c++)
                acc[c] = coopMatMulAddNV(a[0], b, acc[c]);
    } else
#endif
    if (LOADS == 2) {
        for (uint it = 0; it < ITERS; it++)
            MATRIX_UNROLL for (uint c = 0; c < CHAINS / 2; c++)
                ACC_MMA_ROWS(acc, c, CHAINS / 2, a, 0, 0, 2, b_halves,
                             (it * CHAINS / 2 + c) * step % SLOTS * B_BLOCK, MN, false)
    } else if (LOADS == 3) {
        for (uint it = 0; it < ITERS; it++)
            MATRIX_UNROLL for (uint c = 0; c < CHAINS; c++)
                ACC_MMA(acc, c, a, 0, b_halves, (it * CHAINS + c) * step % SLOTS * B_BLOCK, MK,
                        true)
    } else {
        for (uint it = 0; it < ITERS; it++)
            MATRIX_UNROLL for (uint c = 0; c < CHAINS; c++)
                ACC_MMA(acc, c, a, 0, b_halves, (it * CHAINS + c) * step % SLOTS * B_BLOCK, MN,
                        false)
    }

    // Every accumulator of the first workgroup, stored for the host's check;
    // then from every invocation of every workgroup the sum of one element
    // of each of its subgroup's accumulators, so that no product goes unused.
    float total = 0.0;
    MATRIX_UNROLL for (uint c = 0; c < CHAINS; c++) {
        ACC_STORE(acc, c, stored, sub * MM * MN, MN);
        subgroup_shared_sync();
        if (gl_WorkGroupID.x == 0)
            for (uint e = lane; e < MM * MN; e += gl_SubgroupSize)
                result[1 + (sub * CHAINS + c) * MM * MN + e] = stored[sub * MM * MN + e];
        total += stored[sub * MM * MN + lane % (MM * MN)];
        subgroup_shared_sync();
    }
    result[1 + SUBGROUPS * CHAINS * MM * MN + gl_GlobalInvocationID.x] = total;
}
