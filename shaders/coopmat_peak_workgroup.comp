#version 450
// The matrix units' rate through workgroup-scope products
// (coopmat_workgroup.glsl: VK_NV_cooperative_matrix2's workgroup scope and
// flexible dimensions, through VK_KHR_cooperative_matrix), beside
// coopmat_peak.comp's subgroup-scope ones: whether products that span a
// workgroup, fed as an attention kernel would feed them, run faster than the
// 16x16x16 subgroup products the coopmat kernels are built from
// (coopmat_peak.c and coopmat_peak_workgroup.c log both with
// VKATTN_COOPMAT_PEAK=1).
//
// Every workgroup runs ITERS rounds of CHAINS independent M x N x K products
// (chains of accumulators, so that no product waits on the one before), by
// LOADS:
//   0  A loaded once; B loaded from shared memory for each product (as K and V
//      tiles staged by the kernel itself would be);
//   1  A and B both loaded from shared memory for each product (as P and V
//      would be, P written by the kernel's softmax);
//   2  A loaded once; B loaded from a storage buffer for each product (the
//      driver staging it: cm2's way of loading K and V), from one of
//      BUFFER_SLOTS blocks (2 MiB at most, so that they stay in cache);
//   3  as 2, B column-major (a K tile read as K^T straight from the buffer,
//      as S = Q K^T would load it): a transposing load the driver may make
//      slower.
// Each product's block is a step further than the last by a step the host
// gives at run time (result[0], 1), so that no compiler can prove two loads
// the same and merge or hoist them. Every element of A and B is 1/16, so each
// product adds K / 256 to every accumulator element; chain c starts at c. Each
// workgroup stores its accumulators, which the host checks (c + ITERS K / 256,
// exact in f32), so that no product goes unused. Built also with
// COOPMAT_EMULATED, where it tests this code and the host's check, not a rate.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifndef COOPMAT_EMULATED
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint M = 64;
layout(constant_id = 2) const uint N = 64;
layout(constant_id = 3) const uint K = 32;
layout(constant_id = 4) const uint ITERS = 256;
layout(constant_id = 5) const uint LOADS = 0;
// Blocks of A and of B in shared memory: 2, or 1 for runs of LOADS 2 and 3
// only (larger products, whose two blocks would not fit; with one, a shared
// operand loaded for each product would be the same block every time).
layout(constant_id = 6) const uint SLOTS = 2;
const uint CHAINS = 2;         // coopmat_peak_workgroup.c's WORKGROUP_CHAINS
const uint BUFFER_SLOTS = 64;  // coopmat_peak_workgroup.c's WORKGROUP_BUFFER_SLOTS
const uint RESULTS = 4;        // its WORKGROUP_RESULTS

#include "coopmat_workgroup.glsl"

// result[0]: the step between blocks (1), from the host; from RESULTS on (16
// bytes in: a matrix store's address must be 16-byte aligned), each
// workgroup's CHAINS accumulators, row-major.
layout(set = 0, binding = 0) buffer Out { float result[]; };
// LOADS 2 and 3: BUFFER_SLOTS blocks of B (K x N, packed f16, every element 1/16).
layout(set = 0, binding = 1) readonly buffer Blocks { uvec4 b_blocks[]; };

const uint A_BLOCK = (M * K + PACK - 1) / PACK * PACK;     // halves a block of A
const uint B_BLOCK = (K * N + PACK - 1) / PACK * PACK;     // halves a block of B
shared uvec4 a_halves[SLOTS * A_BLOCK / PACK];
shared uvec4 b_halves[SLOTS * B_BLOCK / PACK];
WG_A(a, M, K)
WG_B(b, K, N)
WG_ACC(acc0, M, N)
WG_ACC(acc1, M, N)

#include "poison_shared.glsl"

// NaN in every word of shared memory first, with VKATTN_POISON=1
// (poison_shared.glsl): a read before the kernel's own write shows.
void poison_shared()
{
    if (!POISON_SHARED)
        return;
    POISON_UVEC4S(a_halves)
    POISON_UVEC4S(b_halves)
    WG_POISON(a)
    WG_POISON(b)
    WG_POISON(acc0)
    WG_POISON(acc1)
    poison_shared_done();
}

void main()
{
    poison_shared();
    uint sixteenth = packHalf2x16(vec2(0.0625));
    for (uint w = invocation_index(); w < a_halves.length() * 4u; w += gl_WorkGroupSize.x)
        a_halves[w / 4u][w % 4u] = sixteenth;
    for (uint w = invocation_index(); w < b_halves.length() * 4u; w += gl_WorkGroupSize.x)
        b_halves[w / 4u][w % 4u] = sixteenth;
    barrier();
    WG_LOAD(a, M, K, a_halves, 0, K, false);
    WG_FILL(acc0, M, N, 0.0);
    WG_FILL(acc1, M, N, 1.0);
    uint step = uint(result[0]);

    for (uint it = 0; it < ITERS; it++) {
        uint first = it * CHAINS * step;
        if (LOADS == 1)
            WG_LOAD(a, M, K, a_halves, first % SLOTS * A_BLOCK, K, false);
        if (LOADS == 3) {
            WG_LOAD(b, K, N, b_blocks, first % BUFFER_SLOTS * B_BLOCK, K, true);
        } else if (LOADS == 2) {
            WG_LOAD(b, K, N, b_blocks, first % BUFFER_SLOTS * B_BLOCK, N, false);
        } else {
            WG_LOAD(b, K, N, b_halves, first % SLOTS * B_BLOCK, N, false);
        }
        WG_MMA(acc0, a, b, M, N, K);
        if (LOADS == 1)
            WG_LOAD(a, M, K, a_halves, (first + step) % SLOTS * A_BLOCK, K, false);
        if (LOADS == 3) {
            WG_LOAD(b, K, N, b_blocks, (first + step) % BUFFER_SLOTS * B_BLOCK, K, true);
        } else if (LOADS == 2) {
            WG_LOAD(b, K, N, b_blocks, (first + step) % BUFFER_SLOTS * B_BLOCK, N, false);
        } else {
            WG_LOAD(b, K, N, b_halves, (first + step) % SLOTS * B_BLOCK, N, false);
        }
        WG_MMA(acc1, a, b, M, N, K);
    }

    uint base = RESULTS + gl_WorkGroupID.x * CHAINS * M * N;
    WG_STORE(acc0, M, N, result, base, N);
    WG_STORE(acc1, M, N, result, base + M * N, N);
}
