#version 450
// Masked softmax, one row per subgroup: the lanes of a subgroup stride along the
// row and reduce with subgroupMax/subgroupAdd, so no barrier and no shared memory
// (on lavapipe a workgroup of 8 is one SIMD vector that never waits). Any
// subgroup size, but whole subgroups: a row's lanes are gl_SubgroupSize of them
// (the host runs it only where subgroups are whole, src/ops/softmax.c).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

#define ROW_LANE gl_SubgroupInvocationID
#define ROW_LANES gl_SubgroupSize
float row_max(float v) { return subgroupMax(v); }
float row_sum(float v) { return subgroupAdd(v); }

#include "softmax_body.glsl"

void main()
{
    // The host does not know how many subgroups the device really uses (it may
    // vary), so subgroups stride over the workgroup's rows. Each row is owned by
    // one whole subgroup, so the reductions stay in uniform control flow.
    uint first = linear_workgroup_index() * p.rows_per_workgroup;
    for (uint r = gl_SubgroupID; r < p.rows_per_workgroup; r += gl_NumSubgroups) {
        if (first + r < p.rows)
            softmax_row(first + r, true);
    }
}
