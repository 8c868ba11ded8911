#version 450
// Matmul on the matrix units: C[b] = alpha * A[b] @ op(B[b / b_group]) + bias
// with f16 A and B, f32 accumulation (VK_NV_cooperative_matrix), for the
// layer's projections with f16 weights.
//
// A workgroup computes a BM x BN block of C with SUBGROUPS subgroups, each
// owning MM rows of it: BN / MN accumulators it keeps in matrix registers for
// the whole K loop (coopmat.glsl's MATRIX_ACC), so that C goes to memory once,
// at the end. Revision 1 kept C in shared memory and loaded and stored it
// around every product, and staged A and B a half at a time: on the H200 it
// ran a 4096^3 f16 matmul in 16.4 ms, twice the scalar f32 kernel's 7.5.
//
// K is walked in BK-wide slabs. The A slab (BM x BK) and the B slab (BK x BN,
// or BN x BK with TRANSPOSE_B: nn.Linear weights (N, K) staged as stored and
// read column-major) are staged as packed f16, 16 bytes a load where every row
// starts 8-element aligned (A_ALIGNED8, B_ALIGNED8; the host knows), gathered
// otherwise; zeros past M, N and K. Shared rows are padded by 16 bytes, so
// that a matrix load's rows fall in different banks. Any M, N, K; stores past
// the edge are skipped. One batch per gl_WorkGroupID.z; push constants as
// every matmul kernel. COOPMAT_EMULATED builds the same kernel without matrix
// instructions (see coopmat.glsl), for tests on devices without them.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifndef COOPMAT_EMULATED
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 64;     // SUBGROUPS * MM
layout(constant_id = 2) const uint BN = 64;     // a multiple of MN and of 8
layout(constant_id = 3) const uint BK = 32;     // a multiple of MK and of 8
layout(constant_id = 4) const bool TRANSPOSE_B = false;  // B stored (N, K)
layout(constant_id = 5) const bool HAS_BIAS = false;
layout(constant_id = 6) const uint BIAS_DTYPE = DTYPE_F32;
layout(constant_id = 7) const uint MM = 16;
layout(constant_id = 8) const uint MN = 16;
layout(constant_id = 9) const uint MK = 16;
layout(constant_id = 10) const bool A_ALIGNED8 = false;
layout(constant_id = 11) const bool B_ALIGNED8 = false;
layout(constant_id = 12) const uint SUBGROUPS = 4;

const uint WG = gl_WorkGroupSize.x;
const uint COLUMN_BLOCKS = BN / MN;

layout(set = 0, binding = 0) readonly buffer A16 { uint a16[]; };
layout(set = 0, binding = 0) readonly buffer A16x8 { uvec4 a16x8[]; };
layout(set = 0, binding = 1) readonly buffer B16 { uint b16[]; };
layout(set = 0, binding = 1) readonly buffer B16x8 { uvec4 b16x8[]; };
layout(set = 0, binding = 2) readonly buffer Bias32 { float bias32[]; };
layout(set = 0, binding = 2) readonly buffer Bias16 { uint bias16[]; };
layout(set = 0, binding = 3) writeonly buffer C { float c[]; };

#include "matmul_push.glsl"
#include "coopmat.glsl"

// Packed slabs (row strides in halves, multiples of PACK).
const uint A_STRIDE = BK + PACK;                          // [m][k]
const uint B_ROWS = TRANSPOSE_B ? BN : BK;
const uint B_WIDTH = TRANSPOSE_B ? BK : BN;
const uint B_STRIDE = B_WIDTH + PACK;                     // [k][n], or [n][k]
shared uvec4 a_tile[BM * A_STRIDE / PACK];
shared uvec4 b_tile[B_ROWS * B_STRIDE / PACK];
shared float c_block[SUBGROUPS * MM * MN];  // one accumulator on its way out, per subgroup

MATRIX_A(a_op, 1, SUBGROUPS)
MATRIX_ACC(acc, COLUMN_BLOCKS, SUBGROUPS)

// Stages ROWS x WIDTH halves of the matrix in BUF (BUF8: its 16-byte view)
// whose row `row` starts at BASE + row * LD, columns from COL0, into TILE
// (row stride STRIDE), zeros past ROW_LIMIT rows and COL_LIMIT columns.
#define STAGE_SLAB(TILE, STRIDE, ROWS, WIDTH, BUF, BUF8, ALIGNED8, BASE, LD, ROW0, ROW_LIMIT,     \
                   COL0, COL_LIMIT)                                                             \
    for (uint e = gl_LocalInvocationIndex; e < (ROWS) * (WIDTH) / PACK; e += WG) {              \
        uint r_ = e / ((WIDTH) / PACK), d_ = e % ((WIDTH) / PACK) * PACK;                       \
        uint row_ = (ROW0) + r_, col_ = (COL0) + d_;                                             \
        uvec4 words = uvec4(0);                                                                  \
        if (row_ < (ROW_LIMIT) && col_ < (COL_LIMIT)) {                                          \
            uint first_ = (BASE) + row_ * (LD) + col_;                                           \
            if ((ALIGNED8) && col_ + PACK <= (COL_LIMIT))                                        \
                words = BUF8[first_ >> 3];                                                       \
            else                                                                                 \
                GATHER_HALVES(words, BUF, first_, min(PACK, (COL_LIMIT) - col_));                \
        }                                                                                        \
        TILE[(r_ * (STRIDE) + d_) / PACK] = words;                                               \
    }

void main()
{
    uint batch = gl_WorkGroupID.z + p.batch_base;
    uint row0 = gl_WorkGroupID.y * BM;
    uint col0 = gl_WorkGroupID.x * BN;
    uint a_base = p.a_offset + batch * p.a_batch_stride;
    uint b_base = p.b_offset + (batch / p.b_group) * p.b_batch_stride;
    uint sg = gl_SubgroupID;

    MATRIX_UNROLL for (uint j = 0; j < COLUMN_BLOCKS; j++)
        ACC_ZERO(acc, j);

    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        barrier();  // the previous slab's products are done with a_tile and b_tile
        STAGE_SLAB(a_tile, A_STRIDE, BM, BK, a16, a16x8, A_ALIGNED8, a_base, p.K, row0, p.M,
                   k0, p.K)
        if (TRANSPOSE_B) {
            STAGE_SLAB(b_tile, B_STRIDE, BN, BK, b16, b16x8, B_ALIGNED8, b_base, p.K, col0, p.N,
                       k0, p.K)
        } else {
            STAGE_SLAB(b_tile, B_STRIDE, BK, BN, b16, b16x8, B_ALIGNED8, b_base, p.N, k0, p.K,
                       col0, p.N)
        }
        barrier();
        for (uint kk = 0; kk < BK; kk += MK) {
            A_LOAD(a_op, 0, a_tile, sg * MM * A_STRIDE + kk, A_STRIDE);
            MATRIX_UNROLL for (uint j = 0; j < COLUMN_BLOCKS; j++) {
                if (TRANSPOSE_B) {
                    ACC_MMA(acc, j, a_op, 0, b_tile, j * MN * B_STRIDE + kk, B_STRIDE, true)
                } else {
                    ACC_MMA(acc, j, a_op, 0, b_tile, kk * B_STRIDE + j * MN, B_STRIDE, false)
                }
            }
        }
    }

    // Each accumulator through this subgroup's c_block: alpha, the bias, and
    // the edges of C.
    uint c_base = p.c_offset + batch * p.c_batch_stride;
    MATRIX_UNROLL for (uint j = 0; j < COLUMN_BLOCKS; j++) {
        ACC_STORE(acc, j, c_block, sg * MM * MN, MN);
        subgroup_shared_sync();
        for (uint e = gl_SubgroupInvocationID; e < MM * MN; e += gl_SubgroupSize) {
            uint r = row0 + sg * MM + e / MN, n = col0 + j * MN + e % MN;
            if (r < p.M && n < p.N) {
                float bias = HAS_BIAS ? LOAD_ELEMENT(BIAS_DTYPE, bias32, bias16, p.bias_offset + n)
                                      : 0.0;
                c[c_base + r * p.N + n] = p.alpha * c_block[sg * MM * MN + e] + bias;
            }
        }
        subgroup_shared_sync();  // read before the next accumulator overwrites it
    }
}
