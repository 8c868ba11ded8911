// Shared by every vkattn kernel.
//
// Element loads from tensors that may be f32, f16 or bf16. A 16-bit tensor is
// bound as an array of 32-bit words and each element unpacked from its half, so
// no 16-bit storage feature is needed (buffers are padded to 16 bytes on the
// host side): f16 through unpackHalf2x16, bf16 by putting its bits on top of an
// f32's (exact). The dtype is a specialization constant holding one of the
// DTYPE_* codes, so the unused branches are compiled away.
#define DTYPE_F32 0u   // keep in sync with shader_dtype() in src/ops/ops_common.c
#define DTYPE_F16 1u
#define DTYPE_BF16 2u

// The two 16-bit elements of a word, the one at the lower address first.
vec2 unpack_pair(uint dtype, uint word)
{
    return dtype == DTYPE_BF16 ? uintBitsToFloat(uvec2(word << 16, word & 0xffff0000u))
                               : unpackHalf2x16(word);
}

#define LOAD_ELEMENT(DTYPE, BUF_F32, BUF_U32, INDEX) \
    ((DTYPE) == DTYPE_F32 ? BUF_F32[INDEX] : unpack_pair(DTYPE, BUF_U32[(INDEX) >> 1])[(INDEX) & 1u])

// Four consecutive 16-bit elements from the two words at WORD, WORD + 1.
#define LOAD_PAIRS4(DTYPE, BUF_U32, WORD) \
    vec4(unpack_pair(DTYPE, BUF_U32[WORD]), unpack_pair(DTYPE, BUF_U32[(WORD) + 1]))

// Four consecutive elements from element INDEX, a multiple of 4, of a tensor
// also bound as vec4s (f32) and as uvec2s (16-bit): one 16- or 8-byte load.
#define LOAD_VEC4(DTYPE, BUF_F32X4, BUF_U32X2, INDEX)                                  \
    ((DTYPE) == DTYPE_F32 ? BUF_F32X4[(INDEX) >> 2]                                    \
                          : vec4(unpack_pair(DTYPE, BUF_U32X2[(INDEX) >> 2].x),        \
                                 unpack_pair(DTYPE, BUF_U32X2[(INDEX) >> 2].y)))

// Binding i as a uniform texel buffer (see VKATTN_TEXEL_BINDING_BASE in src/internal.h).
#define TEXEL_BINDING(i) (12 + (i))

#define NEG_INF uintBitsToFloat(0xff800000u)
#define FLT_MAX uintBitsToFloat(0x7f7fffffu)
// The weight of a key a row may not see (its score is -inf or it is out of the
// row's range), where kernels must tell it from a weight that underflowed to 0:
// the masked key contributes nothing, not even 0 * NaN, while the underflowed
// one multiplies V as IEEE arithmetic has it. A weight is never negative.
const float MASKED_WEIGHT = -1.0;

// Workgroups past maxComputeWorkGroupCount[0] spill into y: linear workgroup index.
uint linear_workgroup_index()
{
    return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
}

// Specialization constant 0 is always the workgroup size (local_size_x_id = 0);
// the C side sets it first in every pipeline_key.
