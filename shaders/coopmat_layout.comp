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
//
// A kernel that reads the layout of a loaded matrix (its cell indices) and
// applies it to products, and that converts a product to an f16 operand
// element by element, assumes what the extension does not promise: that a
// product's accumulator is laid out as a loaded one, and that the conversion
// keeps each element in its cell. Built with LAYOUT_PRODUCT (a build of its
// own, used only where MK == MN and cells are exact in f16: a conversion
// between matrices of other sides would be invalid SPIR-V even where never
// run) the probe checks both on the device: it writes, after the loaded table, the
// same table of the product (index matrix in f16) x (identity), which must be
// the loaded one; then the loaded accumulator converted to an f16 operand
// times the identity, stored row-major, which must hold r * MN + c at (r, c).
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
layout(constant_id = 4) const uint MK = 16;  // the operands' inner side

#include "coopmat.glsl"

layout(set = 0, binding = 0) writeonly buffer Cells { float cells[]; };

shared float indices[MM * MN];
#ifdef LAYOUT_PRODUCT
shared float converted[MM * MN];
// The index matrix in f16 (MM x MK) and the identity (MK x MN), packed
shared uvec4 index_halves[(MM * MK + PACK - 1) / PACK];
shared uvec4 identity_halves[(MK * MN + PACK - 1) / PACK];
MATRIX_ACC(probe, 3, 1)    // loaded; the product; the converted operand's product
MATRIX_A(operand, 2, 1)    // the index matrix; the loaded accumulator in f16

// Half i of a packed array whose element e is value(e), two halves a word.
#define FILL_HALVES(ARRAY, COUNT, VALUE)                                                         \
    for (uint w_ = gl_SubgroupInvocationID; w_ < ARRAY.length() * 4u; w_ += gl_SubgroupSize) { \
        uint e0_ = 2u * w_, e1_ = e0_ + 1u;                                                      \
        float v0_ = e0_ < (COUNT) ? VALUE(e0_) : 0.0, v1_ = e1_ < (COUNT) ? VALUE(e1_) : 0.0;    \
        ARRAY[w_ / 4u][w_ % 4u] = packHalf2x16(vec2(v0_, v1_));                                   \
    }
#define INDEX_VALUE(E) float((E) / MK * MN + (E) % MK)
#define IDENTITY_VALUE(E) ((E) / MN == (E) % MN ? 1.0 : 0.0)
#else
MATRIX_ACC(probe, 1, 1)
#endif

// This invocation's elements of accumulator I at cells[first + lane * n + k].
#define WRITE_ELEMENTS(I, FIRST)                                                                \
    MATRIX_UNROLL for (uint k = 0; k < n; k++)                                                  \
        cells[(FIRST) + lane * n + k] = ACC_ELEMENT(probe, I, k);

#include "poison_shared.glsl"

// NaN in every word of shared memory first, with VKATTN_POISON=1
// (poison_shared.glsl): a read before the kernel's own write shows.
void poison_shared()
{
    if (!POISON_SHARED)
        return;
    POISON_FLOATS(indices)
#ifdef LAYOUT_PRODUCT
    POISON_FLOATS(converted)
    POISON_UVEC4S(index_halves)
    POISON_UVEC4S(identity_halves)
    MATRIX_POISON(operand)
#endif
    MATRIX_POISON(probe)
    poison_shared_done();
}

void main()
{
    poison_shared();
    uint lane = gl_SubgroupInvocationID, lanes = gl_SubgroupSize;
    for (uint e = lane; e < MM * MN; e += lanes)
        indices[e] = float(e);     // exact: MM * MN <= 2^24
    subgroup_shared_sync();
    ACC_LOAD(probe, 0, indices, 0, MN);
    uint n = ACC_ELEMENTS(probe, 0);
    if (lane == 0)
        cells[0] = float(n);
    WRITE_ELEMENTS(0, 1)
#ifdef LAYOUT_PRODUCT
    FILL_HALVES(index_halves, MM * MK, INDEX_VALUE)
    FILL_HALVES(identity_halves, MK * MN, IDENTITY_VALUE)
    subgroup_shared_sync();
    A_LOAD(operand, 0, index_halves, 0, MK);
    ACC_ZERO(probe, 1);
    ACC_MMA(probe, 1, operand, 0, identity_halves, 0, MN, false);
    WRITE_ELEMENTS(1, 1 + MM * MN)
    A_FROM_ACC(operand, 1, probe, 0);
    ACC_ZERO(probe, 2);
    ACC_MMA(probe, 2, operand, 1, identity_halves, 0, MN, false);
    ACC_STORE(probe, 2, converted, 0, MN);
    subgroup_shared_sync();
    for (uint e = lane; e < MM * MN; e += lanes)
        cells[1 + 2 * MM * MN + e] = converted[e];
#endif
}
