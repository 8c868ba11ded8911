// Workgroup-scope matrices: f16 operands and f32 accumulators spread over the
// whole workgroup, which the driver stages through shared memory of its own
// (VK_NV_cooperative_matrix2's workgroup scope, with flexible dimensions). No
// GL_NV_cooperative_matrix2 is needed for them: the source is compiled as
// GL_NV_cooperative_matrix with gl_ScopeWorkgroup, and tools/coopmat_khr.c
// carries the scope into the VK_KHR_cooperative_matrix module, which is the
// only build of it a device runs (the NV extension has no workgroup scope).
// With COOPMAT_EMULATED the matrices live in shared memory and every
// invocation computes its share of each operation in plain code, so that the
// same source runs on devices without matrix units (lavapipe in CI).
//
//   WG_A(NAME, R, C), WG_B(NAME, R, C)  an R x C f16 operand of a product, as A
//                                       or as B. One NV type must not be both
//                                       (the KHR rewrite gives each type one
//                                       use): types are alike when their sizes
//                                       are the same constants, not the same
//                                       values, so an A and a B of equal sizes
//                                       need sizes from different specialization
//                                       constants
//   WG_ACC(NAME, R, C)                  an R x C f32 accumulator
//   WG_LOAD(NAME, R, C, SRC, OFF, STRIDE, COLUMNS)
//                                       an operand from the packed f16 array SRC
//                                       (shared or a buffer), row-major, or with
//                                       COLUMNS column-major (element (r, c) at
//                                       OFF + c STRIDE + r: a K tile stored by
//                                       rows read as K^T); offset and stride in
//                                       halves (multiples of PACK)
//   WG_ACC_LOAD(NAME, R, C, SRC, OFF, STRIDE)
//                                       an accumulator from the f32 array SRC,
//                                       row-major, offset and stride in floats
//   WG_ACC_LOAD_PACKED(NAME, R, C, SRC, OFF, STRIDE)
//   WG_STORE_PACKED(NAME, R, C, DST, OFF, STRIDE)
//                                       the same from and to a uvec4 array (f32
//                                       bits, four an element: one shared
//                                       array holding f16 tiles and f32 blocks
//                                       in turn), offset and stride in floats
//                                       (multiples of 4)
//   WG_ELEMENT(NAME, R, C, K)           this invocation's element K of an
//                                       accumulator: which row and column that is
//                                       is the implementation's
//                                       (coopmat_layout_workgroup.comp); how many
//                                       an invocation holds no KHR module can ask
//                                       (glslang writes length() as a
//                                       specialization constant)
//   WG_FILL(NAME, R, C, VALUE)          every element of an accumulator
//   WG_MMA(D, A, B, M, N, K)            D (M x N) += A (M x K) B (K x N)
//   WG_STORE(NAME, R, C, DST, OFF, STRIDE)
//                                       an accumulator to the f32 array DST,
//                                       row-major, offset and stride in floats
//   WG_POISON(NAME)                     in poison_shared(): the emulated build's
//                                       matrices filled with NaN (nothing on the
//                                       matrix units)
//
// Declarations are global; every invocation of the workgroup runs each
// operation alike (workgroup-uniform control flow). The emulated build
// synchronizes around its operand loads (an operand is read by every
// invocation); an accumulator's element e belongs to invocation
// e % gl_WorkGroupSize.x in every operation, so accumulators need none.
#include "packed_f16.glsl"
#include "invocation_order.glsl"

#ifdef COOPMAT_EMULATED
#define WG_A(NAME, R, C) shared float16_t NAME[(R) * (C)];
#define WG_B(NAME, R, C) shared float16_t NAME[(R) * (C)];
#define WG_ACC(NAME, R, C) shared float NAME[(R) * (C)];
// In a kernel's poison_shared() (poison_shared.glsl): NaN in each element.
#define WG_POISON(NAME) POISON_HALVES(NAME)
#define WG_EACH_(COUNT, E, BODY)                                                                \
    for (uint E = invocation_index(); E < (COUNT); E += gl_WorkGroupSize.x) {                      \
        BODY                                                                                    \
    }
#define WG_LOAD(NAME, R, C, SRC, OFF, STRIDE, COLUMNS)                                          \
    {                                                                                           \
        barrier(); /* invocations may still be reading the operand it replaces */               \
        WG_EACH_((R) * (C), e_,                                                                 \
                 NAME[e_] = PACKED_HALF(SRC, (COLUMNS) ? (OFF) + e_ % (C) * (STRIDE) + e_ / (C) \
                                                       : (OFF) + e_ / (C) * (STRIDE) + e_ % (C));) \
        barrier();                                                                              \
    }
#define WG_ACC_LOAD(NAME, R, C, SRC, OFF, STRIDE)                                               \
    {                                                                                           \
        barrier(); /* SRC may have been written by other invocations */                         \
        WG_EACH_((R) * (C), e_, NAME[e_] = SRC[(OFF) + e_ / (C) * (STRIDE) + e_ % (C)];)        \
    }
#define WG_ACC_LOAD_PACKED(NAME, R, C, SRC, OFF, STRIDE)                                        \
    {                                                                                           \
        barrier();                                                                              \
        WG_EACH_((R) * (C), e_, uint at_ = (OFF) + e_ / (C) * (STRIDE) + e_ % (C);              \
                 NAME[e_] = uintBitsToFloat(SRC[at_ / 4u][at_ % 4u]);)                          \
    }
#define WG_STORE_PACKED(NAME, R, C, DST, OFF, STRIDE)                                           \
    {                                                                                           \
        WG_EACH_((R) * (C), e_, uint at_ = (OFF) + e_ / (C) * (STRIDE) + e_ % (C);              \
                 DST[at_ / 4u][at_ % 4u] = floatBitsToUint(NAME[e_]);)                          \
    }
#define WG_ELEMENT(NAME, R, C, K) NAME[invocation_index() + (K) * gl_WorkGroupSize.x]
#define WG_FILL(NAME, R, C, VALUE) { WG_EACH_((R) * (C), e_, NAME[e_] = (VALUE);) }
#define WG_MMA(D, A, B, M, N, K)                                                                \
    {                                                                                           \
        WG_EACH_((M) * (N), e_,                                                                 \
                 float acc_ = D[e_];                                                            \
                 for (uint k_ = 0; k_ < (K); k_++)                                              \
                     acc_ = fma(float(A[e_ / (N) * (K) + k_]), float(B[k_ * (N) + e_ % (N)]),   \
                                acc_);                                                          \
                 D[e_] = acc_;)                                                                 \
    }
#define WG_STORE(NAME, R, C, DST, OFF, STRIDE)                                                  \
    { WG_EACH_((R) * (C), e_, DST[(OFF) + e_ / (C) * (STRIDE) + e_ % (C)] = NAME[e_];) }
#else
#define WG_A(NAME, R, C) fcoopmatNV<16, gl_ScopeWorkgroup, R, C> NAME;
#define WG_B(NAME, R, C) fcoopmatNV<16, gl_ScopeWorkgroup, R, C> NAME;
#define WG_ACC(NAME, R, C) fcoopmatNV<32, gl_ScopeWorkgroup, R, C> NAME;
#define WG_POISON(NAME) /* the driver's: nothing of the kernel's to fill */
#define WG_LOAD(NAME, R, C, SRC, OFF, STRIDE, COLUMNS)                                          \
    coopMatLoadNV(NAME, SRC, (OFF) / PACK, (STRIDE) / PACK, (COLUMNS))
#define WG_ACC_LOAD(NAME, R, C, SRC, OFF, STRIDE) coopMatLoadNV(NAME, SRC, (OFF), (STRIDE), false)
#define WG_ACC_LOAD_PACKED(NAME, R, C, SRC, OFF, STRIDE)                                        \
    coopMatLoadNV(NAME, SRC, (OFF) / 4u, (STRIDE) / 4u, false)
#define WG_STORE_PACKED(NAME, R, C, DST, OFF, STRIDE)                                           \
    coopMatStoreNV(NAME, DST, (OFF) / 4u, (STRIDE) / 4u, false)
#define WG_ELEMENT(NAME, R, C, K) NAME[K]
#define WG_FILL(NAME, R, C, VALUE) NAME = fcoopmatNV<32, gl_ScopeWorkgroup, R, C>(VALUE)
#define WG_MMA(D, A, B, M, N, K) D = coopMatMulAddNV(A, B, D)
#define WG_STORE(NAME, R, C, DST, OFF, STRIDE) coopMatStoreNV(NAME, DST, (OFF), (STRIDE), false)
#endif
