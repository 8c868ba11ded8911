#version 450
// One 32-bit pattern over an f32 tensor, four elements an invocation: zeros
// over the rows of a packed O that belong to no sequence (src/ops/attention.c),
// or NaN over a scratch tensor as it is handed out, where the tests poison it
// (VKATTN_POISON=1, src/scratch.c). A dispatch rather than vkCmdFillBuffer, so
// that outputs are written in the compute-shader stage, as the recording
// contract (vkattn_recording_begin) promises applications. The last group of
// four may reach into the buffer's padding (tensor.c pads to 16 bytes), which
// nothing reads.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) writeonly buffer Y { uvec4 y4[]; };

// Keep in sync with struct fours_push in src/ops/wide_output.c.
layout(push_constant) uniform Push {
    uint groups;    // groups of four elements: ceil(count / 4)
    uint bits;      // the pattern
} p;

void main()
{
    uint i = linear_workgroup_index() * gl_WorkGroupSize.x + gl_LocalInvocationIndex;
    if (i < p.groups)
        y4[i] = uvec4(p.bits);
}
