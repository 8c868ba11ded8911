// One MM x MN block product on the matrix units, or emulated in plain code: the
// one place the cooperative-matrix kernels touch matrix instructions, so that
// the same kernel source builds both ways (COOPMAT_EMULATED).
//
//   COOPMAT_MMA(C, c_off, c_stride, A, a_off, a_stride, B, b_off, b_stride, B_COLUMNS, KD, FROM_ZERO)
//
// C[MM x MN] (f32, shared, row-major, row stride c_stride, from element c_off)
//   = (FROM_ZERO ? 0 : C) + A[MM x KD] * B[KD x MN]
// with A f16 row-major (a_stride) and B f16 row-major (b_stride), or, with
// B_COLUMNS, column-major (element (k, n) at b_off + n * b_stride + k: a K tile
// stored by rows read as K^T). KD is a multiple of MK. Every invocation of the
// subgroup calls it alike (subgroup-uniform control flow); MM, MN, MK are the
// kernel's specialization constants.
//
// The emulated build spreads the block's elements over the subgroup's
// invocations, so it is correct for any subgroup size. Its loop over KD is
// unrolled: lavapipe (gallivm, Mesa 22.3) silently ends every loop at one
// nesting depth of an invocation once that depth has run 65535 iterations in
// all (found as outputs never written after ~15 tiles of D = 128 keys).
#ifdef COOPMAT_EMULATED
#define COOPMAT_MMA(C, c_off, c_stride, A, a_off, a_stride, B, b_off, b_stride, B_COLUMNS, KD,  \
                    FROM_ZERO)                                                                  \
    for (uint e_ = gl_SubgroupInvocationID; e_ < MM * MN; e_ += gl_SubgroupSize) {             \
        uint r_ = e_ / MN, n_ = e_ % MN;                                                        \
        float acc_ = (FROM_ZERO) ? 0.0 : C[(c_off) + r_ * (c_stride) + n_];                     \
        [[unroll]] for (uint k_ = 0; k_ < (KD); k_++)                                           \
            acc_ = fma(float(A[(a_off) + r_ * (a_stride) + k_]),                                \
                       float(B[(B_COLUMNS) ? (b_off) + n_ * (b_stride) + k_                     \
                                           : (b_off) + k_ * (b_stride) + n_]),                  \
                       acc_);                                                                   \
        C[(c_off) + r_ * (c_stride) + n_] = acc_;                                               \
    }
#else
#define COOPMAT_MMA(C, c_off, c_stride, A, a_off, a_stride, B, b_off, b_stride, B_COLUMNS, KD,  \
                    FROM_ZERO)                                                                  \
    {                                                                                           \
        fcoopmatNV<32, gl_ScopeSubgroup, MM, MN> acc_ =                                         \
            fcoopmatNV<32, gl_ScopeSubgroup, MM, MN>(0.0);                                      \
        if (!(FROM_ZERO))                                                                       \
            coopMatLoadNV(acc_, C, (c_off), (c_stride), false);                                 \
        for (uint k_ = 0; k_ < (KD); k_ += MK) {                                                \
            fcoopmatNV<16, gl_ScopeSubgroup, MM, MK> a_;                                        \
            fcoopmatNV<16, gl_ScopeSubgroup, MK, MN> b_;                                        \
            coopMatLoadNV(a_, A, (a_off) + k_, (a_stride), false);                              \
            coopMatLoadNV(b_, B, (B_COLUMNS) ? (b_off) + k_ : (b_off) + k_ * (b_stride),        \
                          (b_stride), (B_COLUMNS));                                             \
            acc_ = coopMatMulAddNV(a_, b_, acc_);                                               \
        }                                                                                       \
        coopMatStoreNV(acc_, C, (c_off), (c_stride), false);                                    \
    }
#endif
