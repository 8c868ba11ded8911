#version 450
// Masked softmax, one row per workgroup, tree reductions in shared memory: for
// devices without subgroup arithmetic. WORKGROUP_SIZE must be a power of two.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
#include "invocation_order.glsl"  // after the workgroup size it reads
#define WORKGROUP_SIZE gl_WorkGroupSize.x

shared float partial[WORKGROUP_SIZE];

#define ROW_LANE invocation_index()
#define ROW_LANES WORKGROUP_SIZE

float row_reduce(float v, bool is_max)
{
    partial[ROW_LANE] = v;
    barrier();
    for (uint stride = WORKGROUP_SIZE / 2; stride > 0; stride /= 2) {
        if (ROW_LANE < stride) {
            float other = partial[ROW_LANE + stride];
            partial[ROW_LANE] = is_max ? max(partial[ROW_LANE], other) : partial[ROW_LANE] + other;
        }
        barrier();
    }
    float result = partial[0];
    barrier();  // partial[] is reused by the next reduction
    return result;
}
float row_max(float v) { return row_reduce(v, true); }
float row_sum(float v) { return row_reduce(v, false); }

#include "softmax_body.glsl"

#include "poison_shared.glsl"

// NaN in every word of shared memory first, with VKATTN_POISON=1
// (poison_shared.glsl): a read before the kernel's own write shows.
void poison_shared()
{
    if (!POISON_SHARED)
        return;
    POISON_FLOATS(partial)
    poison_shared_done();
}

void main()
{
    poison_shared();
    uint row = linear_workgroup_index();
    softmax_row(row, row < p.rows);
}
