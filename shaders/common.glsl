// Shared by every vkattn kernel.
//
// Element loads from tensors that may be f32 or f16: an f16 tensor is bound as
// an array of 32-bit words and each element unpacked from its half, so no 16-bit
// storage feature is needed (buffers are padded to 16 bytes on the host side).
// IS_F16 is a specialization constant, so the unused branch is compiled away.
#define LOAD_ELEMENT(IS_F16, BUF_F32, BUF_U32, INDEX) \
    ((IS_F16) ? unpackHalf2x16(BUF_U32[(INDEX) >> 1])[(INDEX) & 1u] : BUF_F32[INDEX])

// Binding i as a uniform texel buffer (see VKATTN_TEXEL_BINDING_BASE in src/internal.h).
#define TEXEL_BINDING(i) (8 + (i))

#define NEG_INF uintBitsToFloat(0xff800000u)

// Workgroups past maxComputeWorkGroupCount[0] spill into y: linear workgroup index.
uint linear_workgroup_index()
{
    return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
}

// Specialization constant 0 is always the workgroup size (local_size_x_id = 0);
// the C side sets it first in every pipeline_key.
