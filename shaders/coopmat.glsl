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

// Matrices one subgroup keeps across a loop (in registers on the matrix units),
// declared as arrays at global scope, SUBGROUPS being the workgroup's count:
//
//   MATRIX_A(NAME, COUNT, SUBGROUPS)   COUNT f16 MM x MK operands
//   A_LOAD(NAME, I, SRC, OFF, STRIDE)  operand I = the block of the packed f16
//                                      shared array SRC at OFF (row-major, row
//                                      stride STRIDE)
//   MATRIX_ACC(NAME, COUNT, SUBGROUPS) COUNT f32 MM x MN accumulators
//   ACC_ZERO(NAME, I), ACC_FILL(NAME, I, VALUE)  every element 0, or VALUE
//   ACC_ELEMENTS(NAME, I)              how many of accumulator I's elements this
//                                      invocation holds (the same for every one
//                                      where MM x MN is a multiple of the subgroup;
//                                      0 in the KHR build, which has no use for it)
//   ACC_ELEMENT(NAME, I, K)            its element K: which row and column that is
//                                      is the implementation's (coopmat_layout.comp)
//   ACC_COPY(NAME, I) ... ACC_PUT(NAME, I)
//                                      a copy of accumulator I, taken and put back
//                                      whole, whose element K is COPY_ELEMENT(NAME, K)
//                                      between them (one copy a block): on the matrix
//                                      units a local value, so that no element is
//                                      addressed in the array (in the emulated build,
//                                      whose matrices are in shared memory, the
//                                      accumulator itself)
//   A_FROM_ACC(A, AI, ACC, I)          operand AI = accumulator I in f16 (MK == MN)
//   A_STORE(NAME, I, DST, OFF, STRIDE) operand I to the packed f16 shared array
//                                      DST at OFF (row-major, row stride STRIDE;
//                                      with an odd MK, its rows' next half too)
//   ACC_LOAD(NAME, I, SRC, OFF, STRIDE), ACC_STORE(NAME, I, DST, OFF, STRIDE)
//                                      from / to f32 shared arrays, row-major
//   ACC_MMA(NAME, I, A, AI, B, B_OFF, B_STRIDE, B_COLUMNS)
//                                      NAME[I] += A[AI] * (the MK x MN block of the
//                                      packed f16 shared array B, as in COOPMAT_MMA)
//   ACC_MMA_ROWS(NAME, I, I_STEP, A, AI, A_STEP, COUNT, B, B_OFF, B_STRIDE, B_COLUMNS)
//                                      the same for COUNT row blocks m: NAME[I + m I_STEP]
//                                      += A[AI + m A_STEP] * that block, which is loaded
//                                      once for all of them
//   MATRIX_POISON(NAME)                in poison_shared(): the emulated build's
//                                      matrices filled with NaN (nothing on the
//                                      matrix units)
//
// Their f16 sources are packed: uvec4 arrays, PACK halves an element, so that
// the kernel stages and the matrix units load them 16 bytes at a time
// (VK_NV_cooperative_matrix lets the array's type differ from the matrix's and
// counts offsets and strides in the array's elements). Offsets and strides are
// given in halves and are multiples of PACK; PACKED_HALF(T, I) reads half I.
//
// Every invocation of the subgroup runs them alike. A store to shared memory is
// seen by the subgroup's other invocations after subgroup_shared_sync().
//
// The emulated build keeps both kinds in shared memory, a set per subgroup.
// Accumulator element e belongs to one lane (acc_cell) in every operation,
// so accumulators need no synchronisation among themselves; an A operand's
// rows are read by every lane, so A_LOAD begins and ends with
// subgroup_shared_sync(). Not
// in private arrays: lavapipe keeps those in the coroutine frame of every
// barrier, and building such frames took it minutes per pipeline.
// Loops over a matrix array: unrolled on the matrix units, so that the
// driver can keep the matrices in registers (indexing them dynamically would
// spill them); left as loops in the emulated build, where code size costs
// compile time.
#ifdef COOPMAT_EMULATED
#define MATRIX_UNROLL
#else
#define MATRIX_UNROLL [[unroll]]
#endif

#include "packed_f16.glsl"
#include "invocation_order.glsl"

void subgroup_shared_sync()
{
    subgroupMemoryBarrierShared();
    subgroupBarrier();
}

#ifdef COOPMAT_EMULATED
// An emulated A operand's element holds the operand's bits (f16, or bf16 with
// OPERANDS_BF16), as A_LOAD copies them: its value.
float emulated_operand(float16_t x)
{
    return OPERANDS_BF16 ? operand_value(packFloat2x16(f16vec2(x, float16_t(0.0)))) : float(x);
}
#define MATRIX_A(NAME, COUNT, SUBGROUPS)                                                        \
    const uint NAME##_count = (COUNT);                                                          \
    shared float16_t NAME[(SUBGROUPS) * (COUNT) * MM * MK];
#define MATRIX_ACC(NAME, COUNT, SUBGROUPS)                                                      \
    const uint NAME##_count = (COUNT);                                                          \
    shared float NAME[(SUBGROUPS) * (COUNT) * MM * MN];
// In a kernel's poison_shared() (poison_shared.glsl): NaN in each element.
#define MATRIX_POISON(NAME) POISON_HALVES(NAME)
#define A_BASE_(NAME, I) ((subgroup_index() * NAME##_count + (I)) * MM * MK)
#define ACC_BASE_(NAME, I) ((subgroup_index() * NAME##_count + (I)) * MM * MN)
#define A_LOAD(NAME, I, SRC, OFF, STRIDE)                                                       \
    {                                                                                           \
        subgroup_shared_sync(); /* lanes may still be reading the operand it replaces */        \
        for (uint e_ = gl_SubgroupInvocationID; e_ < MM * MK; e_ += gl_SubgroupSize)            \
            NAME[A_BASE_(NAME, I) + e_] =                                                       \
                unpackFloat2x16(PACKED_BITS(SRC, (OFF) + e_ / MK * (STRIDE) + e_ % MK)).x;      \
        subgroup_shared_sync();                                                                 \
    }
// Which cell (row-major) of an emulated accumulator is this invocation's
// element k. ACC_CLUSTER 0: cell lane + k * lanes (neighbouring lanes,
// neighbouring cells: the cheapest on a CPU). ACC_CLUSTER = C: each row's
// cells in C aligned neighbouring invocations, MM * C / lanes rows a lane,
// element k = t * (rows a lane) + s in the lane's row slot s (row lane / C +
// lanes / C * s, column lane % C + C * t): the shape of NVIDIA's mma
// fragments, which a softmax in registers needs (attention_coopmat.comp's
// ROW_CLUSTER; the includer defines ACC_CLUSTER before this file).
#ifndef ACC_CLUSTER
#define ACC_CLUSTER 0u
#endif
uint acc_cell(uint k)
{
    uint lane = gl_SubgroupInvocationID, lanes = gl_SubgroupSize;
    if (ACC_CLUSTER == 0u)
        return lane + k * lanes;
    uint rows = MM * ACC_CLUSTER / lanes, s = k % rows, t = k / rows;
    return (lane / ACC_CLUSTER + lanes / ACC_CLUSTER * s) * MN + lane % ACC_CLUSTER + ACC_CLUSTER * t;
}
uint acc_elements()
{
    return (MM * MN - gl_SubgroupInvocationID + gl_SubgroupSize - 1) / gl_SubgroupSize;
}
#define ACC_EACH_(BODY)                                                                         \
    for (uint k_ = 0; k_ < acc_elements(); k_++) {                                              \
        uint e_ = acc_cell(k_), r_ = e_ / MN, n_ = e_ % MN;                                     \
        BODY                                                                                    \
    }
#define ACC_FILL(NAME, I, VALUE) { ACC_EACH_(NAME[ACC_BASE_(NAME, I) + e_] = (VALUE);) }
#define ACC_ELEMENTS(NAME, I) acc_elements()
#define ACC_ELEMENT(NAME, I, K) NAME[ACC_BASE_(NAME, I) + acc_cell(K)]
#define ACC_COPY(NAME, I) const uint copy_ = ACC_BASE_(NAME, I);
#define COPY_ELEMENT(NAME, K) NAME[copy_ + acc_cell(K)]
#define ACC_PUT(NAME, I)
// A's operand AI = accumulator I converted to f16 (MK == MN).
#define A_FROM_ACC(A, AI, ACC, I)                                                               \
    {                                                                                           \
        subgroup_shared_sync(); /* lanes may still be reading the operand it replaces */        \
        ACC_EACH_(A[A_BASE_(A, AI) + r_ * MK + n_] =                                           \
                      unpackFloat2x16(pack_operands(vec2(ACC[ACC_BASE_(ACC, I) + e_], 0.0))).x;) \
        subgroup_shared_sync();                                                                 \
    }
// Each lane writes whole words, two halves of a row, so that no two write the
// same one.
#define A_STORE(NAME, I, DST, OFF, STRIDE)                                                      \
    for (uint e_ = gl_SubgroupInvocationID; e_ < MM * ((MK + 1) / 2); e_ += gl_SubgroupSize) {  \
        uint r_ = e_ / ((MK + 1) / 2), k_ = 2u * (e_ % ((MK + 1) / 2));                         \
        uint at_ = A_BASE_(NAME, I) + r_ * MK + k_, word_ = ((OFF) + r_ * (STRIDE) + k_) / 2u;   \
        f16vec2 pair_ = f16vec2(NAME[at_], k_ + 1u < MK ? NAME[at_ + 1u] : float16_t(0.0));     \
        DST[word_ / 4u][word_ % 4u] = packFloat2x16(pair_);                                     \
    }
#define ACC_LOAD(NAME, I, SRC, OFF, STRIDE)                                                     \
    { ACC_EACH_(NAME[ACC_BASE_(NAME, I) + e_] = SRC[(OFF) + r_ * (STRIDE) + n_];) }
#define ACC_STORE(NAME, I, DST, OFF, STRIDE)                                                    \
    { ACC_EACH_(DST[(OFF) + r_ * (STRIDE) + n_] = NAME[ACC_BASE_(NAME, I) + e_];) }
#define ACC_MMA_ROWS(NAME, I, I_STEP, A, AI, A_STEP, COUNT, B, B_OFF, B_STRIDE, B_COLUMNS)     \
    [[unroll]] for (uint m_ = 0; m_ < (COUNT); m_++) {                                          \
        ACC_EACH_(float acc_ = NAME[ACC_BASE_(NAME, (I) + m_ * (I_STEP)) + e_];                 \
                  [[unroll]] for (uint k_ = 0; k_ < MK; k_++)                                   \
                      acc_ = fma(emulated_operand(A[A_BASE_(A, (AI) + m_ * (A_STEP)) + r_ * MK + k_]), \
                                 PACKED_OPERAND(B, (B_COLUMNS) ? (B_OFF) + n_ * (B_STRIDE) + k_ \
                                                               : (B_OFF) + k_ * (B_STRIDE) + n_), \
                                 acc_);                                                         \
                  NAME[ACC_BASE_(NAME, (I) + m_ * (I_STEP)) + e_] = acc_;)                      \
    }
#else
#define MATRIX_A(NAME, COUNT, SUBGROUPS) fcoopmatNV<16, gl_ScopeSubgroup, MM, MK> NAME[COUNT];
#define A_LOAD(NAME, I, SRC, OFF, STRIDE)                                                       \
    coopMatLoadNV(NAME[I], SRC, (OFF) / PACK, (STRIDE) / PACK, false)
#define MATRIX_ACC(NAME, COUNT, SUBGROUPS) fcoopmatNV<32, gl_ScopeSubgroup, MM, MN> NAME[COUNT];
#define MATRIX_POISON(NAME) /* registers: no shared memory to fill */
#define ACC_FILL(NAME, I, VALUE) NAME[I] = fcoopmatNV<32, gl_ScopeSubgroup, MM, MN>(VALUE)
#ifdef COOPMAT_KHR
// An accumulator's length is a specialization constant where its dimensions
// are, and glslang writes it as OpSpecConstantOp CooperativeMatrixLengthNV,
// which SPV_NV_cooperative_matrix allows and SPV_KHR_cooperative_matrix does
// not (Mesa's SPIR-V reader cannot evaluate it, and evaluates every constant
// of a module, used or not): the KHR build takes no path that needs it, like
// A_FROM_ACC below, and tools/coopmat_khr.c refuses one.
#define ACC_ELEMENTS(NAME, I) 0u
#else
#define ACC_ELEMENTS(NAME, I) uint(NAME[I].length())
#endif
#define ACC_ELEMENT(NAME, I, K) NAME[I][K]
#define ACC_COPY(NAME, I) fcoopmatNV<32, gl_ScopeSubgroup, MM, MN> copy_ = NAME[I];
#define COPY_ELEMENT(NAME, K) copy_[K]
#define ACC_PUT(NAME, I) NAME[I] = copy_;
#ifdef COOPMAT_KHR
// The VK_KHR_cooperative_matrix build (made from this one's SPIR-V by
// tools/coopmat_khr.c) has no conversion from an accumulator to an A operand:
// includers built with COOPMAT_KHR take no path that needs one, nor
// A_STORE, which only such paths take (it stores P operands made so).
#define A_FROM_ACC(A, AI, ACC, I)
#define A_STORE(NAME, I, DST, OFF, STRIDE)
#else
#define A_FROM_ACC(A, AI, ACC, I) A[AI] = fcoopmatNV<16, gl_ScopeSubgroup, MM, MK>(ACC[I])
#define A_STORE(NAME, I, DST, OFF, STRIDE)                                                      \
    coopMatStoreNV(NAME[I], DST, (OFF) / PACK, (STRIDE) / PACK, false)
#endif
#define ACC_LOAD(NAME, I, SRC, OFF, STRIDE) coopMatLoadNV(NAME[I], SRC, (OFF), (STRIDE), false)
#define ACC_STORE(NAME, I, DST, OFF, STRIDE) coopMatStoreNV(NAME[I], DST, (OFF), (STRIDE), false)
#define ACC_MMA_ROWS(NAME, I, I_STEP, A, AI, A_STEP, COUNT, B, B_OFF, B_STRIDE, B_COLUMNS)     \
    {                                                                                           \
        fcoopmatNV<16, gl_ScopeSubgroup, MK, MN> b_;                                            \
        coopMatLoadNV(b_, B, (B_OFF) / PACK, (B_STRIDE) / PACK, (B_COLUMNS));                   \
        [[unroll]] for (uint m_ = 0; m_ < (COUNT); m_++)                                        \
            NAME[(I) + m_ * (I_STEP)] =                                                         \
                coopMatMulAddNV(A[(AI) + m_ * (A_STEP)], b_, NAME[(I) + m_ * (I_STEP)]);        \
    }
#endif
#define ACC_ZERO(NAME, I) ACC_FILL(NAME, I, 0.0)
#define ACC_MMA(NAME, I, A, AI, B, B_OFF, B_STRIDE, B_COLUMNS)                                  \
    ACC_MMA_ROWS(NAME, I, 0, A, AI, 0, 1, B, B_OFF, B_STRIDE, B_COLUMNS)
