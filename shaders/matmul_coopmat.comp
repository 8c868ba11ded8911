#version 450
// Matmul on the matrix units: C[b] = alpha * A[b] @ op(B[b / b_group]) + bias
// with f16 A and B, f32 accumulation (VK_NV_cooperative_matrix), for the
// layer's projections with f16 weights.
//
// A workgroup computes a BM x BN block of C with SUBGROUPS subgroups laid out
// as a grid: GRID_COLUMNS side by side along N, the rest stacked along M. Each
// owns ROW_BLOCKS x COLUMN_BLOCKS matrices of that block, accumulators it keeps
// in matrix registers for the whole K loop (coopmat.glsl's MATRIX_ACC), so
// that C goes to memory once, at the end. Per step of MK, a subgroup loads its
// ROW_BLOCKS A operands and each of its COLUMN_BLOCKS B blocks once, for
// ROW_BLOCKS x COLUMN_BLOCKS products: a square-ish subgroup tile loads the
// fewest bytes of shared memory per product. Revision 2 gave each subgroup one
// row block by eight column blocks, a load of B from shared memory for every
// product, and stalled on each slab's global loads: on the H200 it ran a
// 4096^3 f16 matmul in 4.5 ms (30 TFLOP/s), and the driver reported 256 bytes
// of local memory for it (bench/results/nvidia-h200/profile.txt).
//
// K is walked in BK-wide slabs. The A slab (BM x BK) and the B slab (BK x BN,
// or BN x BK with TRANSPOSE_B: nn.Linear weights (N, K) staged as stored and
// read column-major) are staged as packed f16, 16 bytes a load where every row
// starts 8-element aligned (A_ALIGNED8, B_ALIGNED8; the host knows), gathered
// otherwise; zeros past M, N and K. With STAGES = 2 the next slab's loads are
// issued into registers right after this one is staged, so that their latency
// hides behind this slab's products. Shared rows are padded by 16 bytes, so
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
#include "invocation_order.glsl"  // after the workgroup size it reads
layout(constant_id = 1) const uint BM = 64;     // (SUBGROUPS / GRID_COLUMNS) * ROW_BLOCKS * MM
layout(constant_id = 2) const uint BN = 64;     // GRID_COLUMNS * COLUMN_BLOCKS * MN, a multiple of 8
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
layout(constant_id = 13) const uint GRID_COLUMNS = 1;
layout(constant_id = 14) const uint STAGES = 1;

const uint WG = gl_WorkGroupSize.x;
const uint GRID_ROWS = SUBGROUPS / GRID_COLUMNS;
const uint ROW_BLOCKS = BM / GRID_ROWS / MM;            // a subgroup's matrices along M
const uint COLUMN_BLOCKS = BN / GRID_COLUMNS / MN;      // and along N

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
// With two stages, a thread's packed elements of the next A and B slabs.
const uint A_LOADS = (BM * BK / PACK + WG - 1) / WG;
const uint B_LOADS = (B_ROWS * B_WIDTH / PACK + WG - 1) / WG;

// Row block m's matrices: A operand m, accumulators m * COLUMN_BLOCKS + j.
MATRIX_A(a_op, ROW_BLOCKS, SUBGROUPS)
MATRIX_ACC(acc, ROW_BLOCKS * COLUMN_BLOCKS, SUBGROUPS)

// Packed element E of a ROWS x WIDTH slab of the matrix in BUF (BUF8: its
// 16-byte view) whose row `row` starts at BASE + row * LD, columns from COL0,
// into WORDS: zeros past ROW_LIMIT rows and COL_LIMIT columns.
#define SLAB_WORDS(WORDS, E, WIDTH, BUF, BUF8, ALIGNED8, BASE, LD, ROW0, ROW_LIMIT, COL0,      \
                   COL_LIMIT)                                                                   \
    {                                                                                           \
        uint row_ = (ROW0) + (E) / ((WIDTH) / PACK), col_ = (COL0) + (E) % ((WIDTH) / PACK) * PACK; \
        WORDS = uvec4(0);                                                                       \
        if (row_ < (ROW_LIMIT) && col_ < (COL_LIMIT)) {                                         \
            uint first_ = (BASE) + row_ * (LD) + col_;                                          \
            if ((ALIGNED8) && col_ + PACK <= (COL_LIMIT))                                       \
                WORDS = BUF8[first_ >> 3];                                                      \
            else                                                                                \
                GATHER_HALVES(WORDS, BUF, first_, min(PACK, (COL_LIMIT) - col_));               \
        }                                                                                       \
    }
// Where packed element E of a slab WIDTH wide lands in its tile (row stride STRIDE).
#define SLAB_AT(E, WIDTH, STRIDE) (((E) / ((WIDTH) / PACK) * (STRIDE) + (E) % ((WIDTH) / PACK) * PACK) / PACK)

// One stage: the slab straight into TILE.
#define STAGE_SLAB(TILE, STRIDE, ROWS, WIDTH, BUF, BUF8, ALIGNED8, BASE, LD, ROW0, ROW_LIMIT,     \
                   COL0, COL_LIMIT)                                                             \
    for (uint e = invocation_index(); e < (ROWS) * (WIDTH) / PACK; e += WG) {                      \
        uvec4 words;                                                                             \
        SLAB_WORDS(words, e, WIDTH, BUF, BUF8, ALIGNED8, BASE, LD, ROW0, ROW_LIMIT, COL0,       \
                   COL_LIMIT)                                                                   \
        TILE[SLAB_AT(e, WIDTH, STRIDE)] = words;                                                 \
    }
// Two stages: this thread's LOADS packed elements of the slab into the
// registers WORDS, and later from there into TILE.
#define LOAD_SLAB(WORDS, LOADS, ROWS, WIDTH, BUF, BUF8, ALIGNED8, BASE, LD, ROW0, ROW_LIMIT,     \
                  COL0, COL_LIMIT)                                                              \
    [[unroll]] for (uint i_ = 0; i_ < (LOADS); i_++) {                                          \
        uint e = invocation_index() + i_ * WG;                                                     \
        WORDS[i_] = uvec4(0);                                                                   \
        if (e < (ROWS) * (WIDTH) / PACK)                                                        \
            SLAB_WORDS(WORDS[i_], e, WIDTH, BUF, BUF8, ALIGNED8, BASE, LD, ROW0, ROW_LIMIT,     \
                       COL0, COL_LIMIT)                                                         \
    }
#define STORE_SLAB(TILE, STRIDE, WORDS, LOADS, ROWS, WIDTH)                                     \
    [[unroll]] for (uint i_ = 0; i_ < (LOADS); i_++) {                                          \
        uint e = invocation_index() + i_ * WG;                                                     \
        if (e < (ROWS) * (WIDTH) / PACK)                                                        \
            TILE[SLAB_AT(e, WIDTH, STRIDE)] = WORDS[i_];                                        \
    }

#include "poison_shared.glsl"

// NaN in every word of shared memory first, with VKATTN_POISON=1
// (poison_shared.glsl): a read before the kernel's own write shows.
void poison_shared()
{
    if (!POISON_SHARED)
        return;
    POISON_UVEC4S(a_tile)
    POISON_UVEC4S(b_tile)
    POISON_FLOATS(c_block)
    MATRIX_POISON(a_op)
    MATRIX_POISON(acc)
    poison_shared_done();
}

void main()
{
    poison_shared();
    uint batch = gl_WorkGroupID.z + p.batch_base;
    uint row0 = gl_WorkGroupID.y * BM;
    uint col0 = gl_WorkGroupID.x * BN;
    uint a_base = p.a_offset + batch * p.a_batch_stride;
    uint b_base = p.b_offset + (batch / p.b_group) * p.b_batch_stride;
    // This subgroup's first row and column within the block.
    uint sub_row = subgroup_index() / GRID_COLUMNS * ROW_BLOCKS * MM;
    uint sub_col = subgroup_index() % GRID_COLUMNS * COLUMN_BLOCKS * MN;

    MATRIX_UNROLL for (uint i = 0; i < ROW_BLOCKS * COLUMN_BLOCKS; i++)
        ACC_ZERO(acc, i);

    // The slabs: A rows row0.. of columns k0..; B rows k0.. of columns col0..
    // (or, transposed, rows col0.. of columns k0..).
    uint b_ld = TRANSPOSE_B ? p.K : p.N;
    uint b_row_limit = TRANSPOSE_B ? p.N : p.K, b_col_limit = TRANSPOSE_B ? p.K : p.N;
    uvec4 a_next[A_LOADS], b_next[B_LOADS];
    if (STAGES == 2) {
        LOAD_SLAB(a_next, A_LOADS, BM, BK, a16, a16x8, A_ALIGNED8, a_base, p.K, row0, p.M, 0, p.K)
        LOAD_SLAB(b_next, B_LOADS, B_ROWS, B_WIDTH, b16, b16x8, B_ALIGNED8, b_base, b_ld,
                  TRANSPOSE_B ? col0 : 0, b_row_limit, TRANSPOSE_B ? 0 : col0, b_col_limit)
    }
    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        barrier();  // the previous slab's products are done with a_tile and b_tile
        if (STAGES == 2) {
            STORE_SLAB(a_tile, A_STRIDE, a_next, A_LOADS, BM, BK)
            STORE_SLAB(b_tile, B_STRIDE, b_next, B_LOADS, B_ROWS, B_WIDTH)
        } else {
            STAGE_SLAB(a_tile, A_STRIDE, BM, BK, a16, a16x8, A_ALIGNED8, a_base, p.K, row0, p.M,
                       k0, p.K)
            STAGE_SLAB(b_tile, B_STRIDE, B_ROWS, B_WIDTH, b16, b16x8, B_ALIGNED8, b_base, b_ld,
                       TRANSPOSE_B ? col0 : k0, b_row_limit, TRANSPOSE_B ? k0 : col0, b_col_limit)
        }
        barrier();
        uint k1 = k0 + BK;  // the next slab
        if (STAGES == 2 && k1 < p.K) {
            LOAD_SLAB(a_next, A_LOADS, BM, BK, a16, a16x8, A_ALIGNED8, a_base, p.K, row0, p.M, k1,
                      p.K)
            LOAD_SLAB(b_next, B_LOADS, B_ROWS, B_WIDTH, b16, b16x8, B_ALIGNED8, b_base, b_ld,
                      TRANSPOSE_B ? col0 : k1, b_row_limit, TRANSPOSE_B ? k1 : col0, b_col_limit)
        }
        MATRIX_UNROLL for (uint kk = 0; kk < BK; kk += MK) {
            MATRIX_UNROLL for (uint m = 0; m < ROW_BLOCKS; m++)
                A_LOAD(a_op, m, a_tile, (sub_row + m * MM) * A_STRIDE + kk, A_STRIDE);
            // Each B block loaded once for the subgroup's ROW_BLOCKS products.
            MATRIX_UNROLL for (uint j = 0; j < COLUMN_BLOCKS; j++) {
                uint n = sub_col + j * MN;
                if (TRANSPOSE_B) {
                    ACC_MMA_ROWS(acc, j, COLUMN_BLOCKS, a_op, 0, 1, ROW_BLOCKS, b_tile,
                                 n * B_STRIDE + kk, B_STRIDE, true)
                } else {
                    ACC_MMA_ROWS(acc, j, COLUMN_BLOCKS, a_op, 0, 1, ROW_BLOCKS, b_tile,
                                 kk * B_STRIDE + n, B_STRIDE, false)
                }
            }
        }
    }

    // Each accumulator through this subgroup's c_block: alpha, the bias, and
    // the edges of C.
    uint c_base = p.c_offset + batch * p.c_batch_stride;
    uint slot = subgroup_index() * MM * MN;   // its c_block
    MATRIX_UNROLL for (uint i = 0; i < ROW_BLOCKS * COLUMN_BLOCKS; i++) {
        ACC_STORE(acc, i, c_block, slot, MN);
        subgroup_shared_sync();
        uint r0 = row0 + sub_row + i / COLUMN_BLOCKS * MM;
        uint n0 = col0 + sub_col + i % COLUMN_BLOCKS * MN;
        for (uint e = gl_SubgroupInvocationID; e < MM * MN; e += gl_SubgroupSize) {
            uint r = r0 + e / MN, n = n0 + e % MN;
            if (r < p.M && n < p.N) {
                float bias = HAS_BIAS ? LOAD_ELEMENT(BIAS_DTYPE, bias32, bias16, p.bias_offset + n)
                                      : 0.0;
                c[c_base + r * p.N + n] = p.alpha * c_block[slot + e] + bias;
            }
        }
        subgroup_shared_sync();  // read before the next accumulator overwrites it
    }
}
