#version 450
// Where the elements of an MM x MN f32 accumulator matrix live: the row and
// column of each invocation's element k. A matrix's layout in registers is
// opaque (VK_NV_cooperative_matrix leaves it to the implementation, and
// vendors differ), yet a kernel that works on a matrix's elements where they
// are (a softmax on the scores without their trip through shared memory)
// needs it; the host learns it once from this kernel (coopmat_layout.c).
//
// One subgroup: it loads the matrix whose element (r, c) holds r * MN + c and
// writes element k of invocation i to cells[1 + i * n + k], n (the elements an
// invocation holds) to cells[0]. Built also with COOPMAT_EMULATED, whose
// matrices live in shared memory (coopmat.glsl): the host's analysis is tested
// on that build's layout where no device has matrix units.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifndef COOPMAT_EMULATED
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#endif

layout(local_size_x_id = 0) in;             // one subgroup
layout(constant_id = 1) const uint MM = 16;
layout(constant_id = 2) const uint MN = 16;
// The emulated build's accumulators in clusters of this many lanes (0: its
// plain layout; coopmat.glsl's ACC_CLUSTER); the matrix units' ignore it.
layout(constant_id = 3) const uint CLUSTER = 0;
#define ACC_CLUSTER CLUSTER
const uint MK = 16;                         // coopmat.glsl's third side: unused here

#include "coopmat.glsl"

layout(set = 0, binding = 0) writeonly buffer Cells { float cells[]; };

shared float indices[MM * MN];
MATRIX_ACC(probe, 1, 1)

void main()
{
    uint lane = gl_SubgroupInvocationID;
    for (uint e = lane; e < MM * MN; e += gl_SubgroupSize)
        indices[e] = float(e);     // exact: MM * MN <= 2^24
    subgroup_shared_sync();
    ACC_LOAD(probe, 0, indices, 0, MN);
    uint n = ACC_ELEMENTS(probe, 0);
    if (lane == 0)
        cells[0] = float(n);
    for (uint k = 0; k < n; k++)
        cells[1 + lane * n + k] = ACC_ELEMENT(probe, 0, k);
}
