#version 450
// Where the elements of a ROWS x COLS f32 workgroup-scope accumulator live
// (coopmat_workgroup.glsl: VK_NV_cooperative_matrix2's workgroup scope through
// VK_KHR_cooperative_matrix): the row and column of each invocation's element
// k, as coopmat_layout.comp reads a subgroup-scope one's. A kernel that worked
// on such a matrix's elements where they are (a softmax on the scores without
// their trip through shared memory) would need to know which invocations share
// a row, and whether they are one subgroup's; the host logs what it reads
// (VKATTN_COOPMAT_LAYOUT=1), nothing uses it yet.
//
// The workgroup loads the matrix whose element (r, c) holds r * COLS + c and
// writes element k of invocation i to cells[1 + i * n + k], n to cells[0]. n is
// ROWS x COLS over the invocations, each holding as many, not the matrix's
// length(): glslang writes that as a specialization constant, which
// SPV_KHR_cooperative_matrix does not allow (tools/coopmat_khr.c refuses it).
// On a device that spread the elements otherwise, an invocation holding more
// would leave some unread, and one holding fewer would read past its own
// (undefined): the host reports a layout that does not hold each element once
// (read_cells, coopmat_layout_analyze), a line not to be trusted. Built also with
// COOPMAT_EMULATED, whose layout is the library's own (invocation i's element
// k is cell i + k * invocations): that run tests this code and the host's
// reading.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifndef COOPMAT_EMULATED
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#endif

layout(local_size_x_id = 0) in;
const uint ROWS = 64;   // coopmat_layout_probe.c's WORKGROUP_LAYOUT_SIDE
const uint COLS = 64;

#include "coopmat_workgroup.glsl"

layout(set = 0, binding = 0) writeonly buffer Cells { float cells[]; };

shared float indices[ROWS * COLS];
WG_ACC(probe, ROWS, COLS)

#include "poison_shared.glsl"

// NaN in every word of shared memory first, with VKATTN_POISON=1
// (poison_shared.glsl): a read before the kernel's own write shows.
void poison_shared()
{
    if (!POISON_SHARED)
        return;
    POISON_FLOATS(indices)
    WG_POISON(probe)
    poison_shared_done();
}

void main()
{
    poison_shared();
    uint invocation = invocation_index();
    for (uint e = invocation; e < ROWS * COLS; e += gl_WorkGroupSize.x)
        indices[e] = float(e);     // exact: ROWS * COLS <= 2^24
    barrier();
    WG_ACC_LOAD(probe, ROWS, COLS, indices, 0, COLS);
    uint n = ROWS * COLS / gl_WorkGroupSize.x;
    if (invocation == 0)
        cells[0] = float(n);
    for (uint k = 0; k < n; k++)
        cells[1 + invocation * n + k] = WG_ELEMENT(probe, ROWS, COLS, k);
}
