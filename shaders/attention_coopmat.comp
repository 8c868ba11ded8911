#version 450
// Fused attention on the matrix units (FlashAttention-2's shape): S = Q K^T and
// O += P V as f16 x f16 -> f32 cooperative-matrix products
// (VK_NV_cooperative_matrix), the online softmax in f32 between them, with every
// variant of attention_variants.glsl.
//
// A workgroup owns BR packed query rows of one (batch, kv head) problem and one
// key range (split), as in attention_tiled.comp (packing, key ranges, split
// records and push constants are the same). Each subgroup owns RS = MM x
// ROW_TILES of the rows for the whole key loop: their Q (as f16 operands; with
// Q_SHARED in a shared tile instead) and O (f32 accumulators) stay in its
// matrix registers. Per tile of BC keys:
//   1. the workgroup stages K and V as f16 in shared memory (zeros past the
//      block's last key and in the padding of the head dimensions to the matrix
//      shape): the step's workgroup barriers (two; three with bf16 inputs,
//      whose exponents come first); with STAGES = 2 from registers loaded
//      while the previous tile computed; with BUFFERS = 2 into one of two
//      buffers, while the other computes, behind the step's one barrier;
//   2. each subgroup whose rows may see a key of the tile computes its RS x BC
//      scores S = Q K^T (K read column-major; each block of K loaded once for
//      its ROW_TILES row blocks) and stores them to its slice of s_tile;
//   3. its lanes run the online softmax on the slice (LPR lanes per row): scale,
//      mask and adjust, the running maximum m and sum l (exp2 domain), and
//      P = exp2(S - m) as f16 into p_tile. The maximum is raised lazily: only
//      when a row's grows by more than 2^LAZY_RESCALE (FlashAttention-3's
//      trick), so P stays below 2^LAZY_RESCALE and O is rescaled (through
//      shared memory: the matrix layout in registers is opaque) only then.
//      With ROW_CLUSTER (a layout the host read off the device) the softmax
//      runs on the score accumulators' own elements instead, rows reduced
//      over clusters of lanes, O rescaled in its registers, and P converted
//      to f16 operands in registers: no trip through shared memory;
//   4. O += P V from the subgroup's P and the shared V tile.
// The output is written through the subgroup's s_tile slice, a block at a time.
// MM, MN, MK are a shape from the device's cooperative-matrix properties.
// Q, K and V are f16 or bf16 (bound as 32-bit words, or as uvec4 where rows are
// 8-element aligned). bf16 has no matrix type in VK_NV_cooperative_matrix: it
// is converted to f16 while staged, exactly (see BF16_INPUTS). Shared memory,
// in bytes: 2 BUFFERS BC (KS + VS) + 4 BR SS + 2 BR PS + 4 BR + 16 BUFFERS (the strides
// below; with the softmax in registers, 4 S_SLICE + 2 P_SLICE a subgroup in
// place of the S and P tiles), 2 BR KS for Q_SHARED's tile (else 16), the
// exponents of bf16 inputs (4 (BUFFERS == 2 ? 3 : 1) BC + 4 BUFFERS BC or 32
// for K, 4 BR or 16 for Q, and 16), and
// in the emulated build, which keeps its matrices there, 2 BR (DP + BC) (MK
// for DP with Q_SHARED) + 4 BR (BC + DVP) more.
//
// With COOPMAT_EMULATED the same kernel is built with the matrix operations in
// plain code (coopmat.glsl), so that everything else is exercised on devices
// without matrix units (lavapipe in CI). Both builds run with full subgroups of
// SG_SIZE invocations, one per RS rows (the real one's matrices are
// subgroup-scoped and the driver's shapes are defined for that size); the
// softmax's lanes per row are specialized for it.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifndef COOPMAT_EMULATED
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;                 // (BR / RS) * SG_SIZE
#include "invocation_order.glsl"  // after the workgroup size it reads
layout(constant_id = 1) const uint BR = 64;     // query rows per workgroup, a multiple of RS
layout(constant_id = 2) const uint BC = 32;     // keys per tile, a multiple of MM, MN and MK
layout(constant_id = 3) const uint D = 64;
layout(constant_id = 4) const uint DV = 64;
layout(constant_id = 5) const bool CAUSAL = false;
layout(constant_id = 6) const bool SPLIT = false;
layout(constant_id = 7) const uint MM = 16;
layout(constant_id = 8) const uint MN = 16;
layout(constant_id = 9) const uint MK = 16;
layout(constant_id = 10) const uint SG_SIZE = 32;
// 1: each tile's K and V are loaded and staged, then used; 2: the next tile's
// loads are issued into registers before this tile's products, so that their
// latency hides behind them (more registers: the planner counts them).
layout(constant_id = 11) const uint STAGES = 1;
// Bits 0, 1, 2: Q, K, V are bf16 (else f16). Each is converted to f16 as it is
// staged (K and V tiles with one stage: staged as they are, then converted in
// place once the tile's exponents are known), divided by a power of 2 that puts
// the largest finite element of its group in [2^15, 2^16) (below f16's 65504):
// a Q row, a key's row of K, a tile of V. Every element within 2^32 of its
// group's largest is then exact in f16 (bf16's 8 significant bits fit f16's
// normal and upper subnormal range), and the powers are undone in f32: on the
// scores (Q's and K's, which do not mix within a product's sum), and on O (V's:
// the keys are summed, so O keeps one unit: raised to any tile's that needs it,
// lowered to a tile's far below it, so that small values after large ones keep
// their bits for the rows that do not see the large ones). bf16 subnormals are
// read as f32 subnormals: zero on devices that flush those.
layout(constant_id = 12) const uint BF16_INPUTS = 0;
// Row blocks in reverse grid order: with CAUSAL the last see the most keys, and
// a GPU starts workgroups about in grid order (fused_heavy_first).
layout(constant_id = 13) const bool HEAVY_FIRST = false;
// Row blocks of MM rows per subgroup: with 2, each K and V block a subgroup
// loads from shared memory feeds two products instead of one (FlashAttention-2
// gives a warp 32 rows so), for twice the registers of Q, S, P and O.
layout(constant_id = 14) const uint ROW_TILES = 1;
// constant_id 15: VARIANTS (attention_variants.glsl), kv_len among them
// The softmax on the score accumulators' elements where they are (0: through
// s_tile and p_tile). The host reads the accumulator layout off the device
// (coopmat_layout.comp) and specializes this only where each row's elements
// lie in ROW_CLUSTER aligned neighbouring lanes, each lane holding LANE_ROWS
// rows (its row slots), element k of every lane in slot SLOT_TABLE bits
// 2k..2k+1 (the emulated build lays its accumulators out so: coopmat.glsl's
// ACC_CLUSTER, slot k % LANE_ROWS). Which row and column an element is each
// lane reads at the start from a matrix of cell indices (where_acc). Needs
// MN == MK: a score block becomes a P operand as it is.
layout(constant_id = 16) const uint ROW_CLUSTER = 0;
layout(constant_id = 17) const uint LANE_ROWS = 1;
layout(constant_id = 18) const uint SLOT_TABLE = 0;
#define ACC_CLUSTER ROW_CLUSTER
// A timing diagnostic, never a result (the host takes it only with
// VKATTN_DIAGNOSTICS=1): parts of the tile step left out, so that the time
// each takes on a GPU is the difference to the whole kernel's, where no
// profiler reads Vulkan kernels. Bit 0: the softmax's arithmetic (scores,
// maxima, exp2, sums, rescaling; S and P still move as in the whole kernel);
// bit 1: the S = Q K^T products; bit 2: the O += P V products; bit 3: the K
// and V loads from global memory (the tiles are staged as zeros).
layout(constant_id = 19) const uint ABLATE = 0;
const bool ABLATE_SOFTMAX = (ABLATE & 1u) != 0u;
const bool ABLATE_SCORES = (ABLATE & 2u) != 0u;
const bool ABLATE_PV = (ABLATE & 4u) != 0u;
const bool ABLATE_LOADS = (ABLATE & 8u) != 0u;
// Q read by each S product from a shared tile of the block's rows (q_tile)
// instead of kept in the subgroup's registers: RS x DP halves of operands
// fewer (28 registers an invocation at D = 128 with 16 rows a subgroup), so
// that more workgroups share a multiprocessor and their barriers and loads
// overlap, for ROW_TILES operand loads more per MK columns of Q.
layout(constant_id = 20) const bool Q_SHARED = false;
// The shared-memory softmax keeps a lane's scores between their maximum and
// their weights in registers (lane_scores: one shared-memory read a score),
// else in s_tile, stored back and read again. The host holds them wherever
// the tiles are GPU-sized (the real kernel; the emulated build tiled as on a
// GPU): lavapipe compiles the unrolled copies of the scores' code 30-50 %
// slower, which its small tiles need not pay.
layout(constant_id = 21) const bool SCORES_HELD = true;
// 2: the K and V tiles double-buffered, so that a step needs one workgroup
// barrier, not two: after it, the next tile is stored into the buffer the
// previous step read (from the registers its loads landed in, STAGES = 2; or
// straight from memory, STAGES = 1, f16 only) while this one computes from
// the other. Twice the K and V tiles' shared memory. bf16 inputs need two
// stages: the next tile's exponents are reduced from its registers before the
// barrier, into one of three slots: a slot is filled before a step's
// barrier, read right after it (as that tile is stored), cleared after the
// next step's barrier and filled again after the one after that, so each use
// is a barrier apart from the next, which two slots would not be.
layout(constant_id = 22) const uint BUFFERS = 1;
// bf16 Q, K and V (BF16_INPUTS 7) on bf16 matrices (VK_KHR_shader_bfloat16;
// the KHR build made with bf16 operand types, or the emulated build): staged
// as they are, no powers of 2, and P rounded to bf16 (to nearest even) as
// the P V products take it, as f16 inputs' P is rounded to f16. The scores
// are each product's f32 sum, as with f16 inputs. Packed tiles and operands
// then hold bf16 bits throughout (packed_f16.glsl's OPERANDS_BF16). Not with
// the softmax in registers (the NV build, the only one converting
// accumulators to operands, has no bf16).
layout(constant_id = 23) const bool BF16_MATRICES = false;
#define OPERANDS_BF16 BF16_MATRICES

#include "coopmat.glsl"

const uint WG = gl_WorkGroupSize.x;
const uint RS = MM * ROW_TILES;     // a subgroup's rows
const uint SUBGROUPS = BR / RS;
// Head sizes padded to the matrix shape and to whole elements of the packed
// tiles (PACK halves; the lcm, as the shapes need not be powers of 2).
const uint DPU = MK * PACK / (MK % 8 == 0 ? 8 : MK % 4 == 0 ? 4 : MK % 2 == 0 ? 2 : 1);
const uint DVPU = MN * PACK / (MN % 8 == 0 ? 8 : MN % 4 == 0 ? 4 : MN % 2 == 0 ? 2 : 1);
const uint DP = (D + DPU - 1) / DPU * DPU;
const uint DVP = (DV + DVPU - 1) / DVPU * DVPU;
const uint DV4 = (DV + 3) / 4;              // partial records are padded to vec4
// The softmax through shared memory: LPR lanes per row, each row's columns
// dealt out to them in chunks; with fewer lanes than rows, a lane takes
// ROW_PASSES rows. Lane l runs row l % ROW_LANES (of each pass) and part
// l / ROW_LANES of its chunks (row_part), so that the 8 lanes that one
// 16-byte shared access serves at a time read 8 neighbouring rows, which the
// strides below spread over all the banks; two chunks of one row, 32 bytes
// apart, would share banks with another row's whatever the stride.
const uint LPR = SG_SIZE >= RS ? SG_SIZE / RS : 1;
const uint ROW_PASSES = SG_SIZE >= RS ? 1 : RS / SG_SIZE;
const uint ROW_LANES = SG_SIZE / LPR;
const uint LANE_CHUNKS = (BC / PACK + LPR - 1) / LPR;  // chunks of a row a lane takes at most
// Row strides of the shared tiles (in halves or floats): 16 bytes past the
// row's length, which keeps
// the matrix loads' 16-byte alignment and spreads the rows that one matrix load
// (8 rows of 16 bytes) or one softmax step (8 lanes on 8 rows) touches over the
// banks, where rows of 128 bytes or a multiple would all start in the same one
// (with BC a multiple of 16, a row of s_tile or p_tile is an odd number of 16
// bytes: 8 neighbouring rows start in 8 different groups of banks).
const uint KS = DP + 8;     // k_tile (halves)
const uint VS = DVP + 8;    // v_tile (halves)
const uint SS = BC + 4;     // s_tile (floats)
const uint PS = BC + 8;     // p_tile (halves)
// With two stages, a thread's packed elements of a K and of a V tile.
const uint K_LOADS = (BC * DP / PACK + WG - 1) / WG;
const uint V_LOADS = (BC * DVP / PACK + WG - 1) / WG;
// Q is staged through k_tile, QCH rows at a time (whole row blocks).
const uint QCH = BC / MM * MM;
// Matrices per row block: Q's operands, S's and O's accumulators, P's operands.
const uint QA = DP / MK, SA = BC / MN, OA = DVP / MN, PA = BC / MK;
#ifdef COOPMAT_KHR
const bool REG_SOFTMAX = false; // KHR matrices convert no scores into P operands
#else
const bool REG_SOFTMAX = ROW_CLUSTER > 0u;
#endif
// Rows a lane keeps the softmax state of: its row slots of each row block, or
// the rows it runs the shared-memory softmax for.
const uint HELD = REG_SOFTMAX ? ROW_TILES * LANE_ROWS : ROW_PASSES;
// With the softmax in registers: a lane's elements of an accumulator (the
// host takes a layout that holds each element once).
const uint LANE_ELEMENTS = MM * MN / SG_SIZE;
// bf16 inputs converted to f16 as they are staged (not with bf16 matrices).
const bool Q_BF16 = (BF16_INPUTS & 1u) != 0u && !BF16_MATRICES;
const bool K_BF16 = (BF16_INPUTS & 2u) != 0u && !BF16_MATRICES;
const bool V_BF16 = (BF16_INPUTS & 4u) != 0u && !BF16_MATRICES;
const bool ANY_BF16 = Q_BF16 || K_BF16 || V_BF16;
// Loads of K and V land in registers before a tile is written: two stages.
// With one, bf16 tiles are staged as they are and converted in place once
// their exponents are known (CONVERT_TILE): no registers held across the
// barrier between, and no unrolled copy per packed element a lane stages
// (on lavapipe's 8 lanes, 32 of them at D = 128: 20 s of compile a pipeline).
const bool REGISTER_STAGING = STAGES == 2;

layout(set = 0, binding = 0) readonly buffer Q16 { uint q16[]; };
layout(set = 0, binding = 0) readonly buffer Q16x8 { uvec4 q16x8[]; };
layout(set = 0, binding = 1) readonly buffer K16 { uint k16[]; };
layout(set = 0, binding = 1) readonly buffer K16x8 { uvec4 k16x8[]; };
layout(set = 0, binding = 2) readonly buffer V16 { uint v16[]; };
layout(set = 0, binding = 2) readonly buffer V16x8 { uvec4 v16x8[]; };
layout(set = 0, binding = 3) writeonly buffer O32 { float o32[]; };   // O, or the partials

#include "attention_push.glsl"
#include "attention_variants.glsl"

// The matrix loads and stores need 16-byte aligned addresses, and the driver
// lays the shared variables out as it likes: every one is a multiple of 16
// bytes long (with a 4-byte scalar among them, NVIDIA's H100 read the tiles
// shifted and computed garbage).
// The f16 tiles are packed (coopmat.glsl), written 16 bytes at a time: one
// store where half-sized elements would take eight, four-way bank conflicted.
shared uvec4 k_tile[BUFFERS * BC * KS / PACK];
shared uvec4 v_tile[BUFFERS * BC * VS / PACK];
// A subgroup's slices of s_tile and p_tile: RS rows of S and of P, or with
// the softmax in registers, where S and P stay in registers, one block of
// each (the accumulators' cell map, O's blocks as they are written, and, for
// a V tile that holds an Inf or NaN, P a block at a time for the plain code):
// the shared memory the tiles of K and V can then take, as in
// FlashAttention-2, whose S and P never leave the registers.
const uint PBS = (MK + PACK - 1) / PACK * PACK;    // a P block's row stride (halves)
const uint S_SLICE = REG_SOFTMAX ? (MM * MN + 3) / 4 * 4 : RS * SS;
const uint P_SLICE = REG_SOFTMAX ? MM * PBS : RS * PS;
shared float s_tile[SUBGROUPS * S_SLICE];
shared uvec4 p_tile[SUBGROUPS * P_SLICE / PACK];
shared uvec4 q_tile[Q_SHARED ? BR * KS / PACK : 1];   // Q_SHARED: the block's Q rows
shared float row_factor[BR];        // a row's O rescaling, then its output scale
// t0 + 1 of the last tile of a buffer whose V held an Inf or NaN (grows with
// t0: never reset), kept in four words a buffer, each staging lane flagging
// into word tid & 3 and nonfinite_tile() taking their maximum: four words for
// the alignment above, all indexed at run time so that no compiler can shrink
// the array to the one word a constant index would leave.
shared uint v_nonfinite_tile[4 * BUFFERS];
// bf16 inputs: the largest exponent of each Q row of the block, of each key of
// the K tile, of the V tile (word 0; with two buffers a slot each, K's too);
// the K tile's powers of 2 (k_factor, a buffer each).
const uint EXPONENT_SLOTS = BUFFERS == 2 ? 3 : 1;
shared uint q_exponent[Q_BF16 ? BR : 4];
shared uint k_exponent[K_BF16 ? EXPONENT_SLOTS * BC : 4];
shared float k_factor[K_BF16 ? BUFFERS * BC : 4];
shared uint v_exponent[4];

// Row block m's matrix i of each is at m * (its count per block) + i.
MATRIX_A(q_a, Q_SHARED ? ROW_TILES : QA * ROW_TILES, SUBGROUPS)  // Q_SHARED: MK columns
MATRIX_A(p_a, PA * ROW_TILES, SUBGROUPS)
MATRIX_ACC(s_acc, SA * ROW_TILES, SUBGROUPS)
MATRIX_ACC(o_acc, OA * ROW_TILES, SUBGROUPS)
MATRIX_ACC(where_acc, 1, SUBGROUPS)  // ROW_CLUSTER: each element's cell index r * MN + c

#include "coopmat_attention_rows.glsl"
#include "coopmat_tile_staging.glsl"
#include "coopmat_bf16.glsl"

uint nonfinite_tile(uint kv_buffer)
{
    uint at = 4 * kv_buffer;
    return max(max(v_nonfinite_tile[at], v_nonfinite_tile[at + 1]),
               max(v_nonfinite_tile[at + 2], v_nonfinite_tile[at + 3]));
}

// Multiplies row r of each O accumulator by row_factor[r] (the subgroup's rows),
// through its s_tile slice.
void rescale_output(uint slice, uint row0)
{
    MATRIX_UNROLL for (uint m = 0; m < ROW_TILES; m++)
        MATRIX_UNROLL for (uint j = 0; j < OA; j++) {
            ACC_STORE(o_acc, m * OA + j, s_tile, slice, MN);
            subgroup_shared_sync();
            for (uint e = gl_SubgroupInvocationID; e < MM * MN; e += SG_SIZE)
                s_tile[slice + e] *= row_factor[row0 + m * MM + e / MN];
            subgroup_shared_sync();
            ACC_LOAD(o_acc, m * OA + j, s_tile, slice, MN);
            subgroup_shared_sync();
        }
}

// Score s of key t0 + c for held row w (bf16 factors undone, the K tile's
// from its buffer), scaled to the exp2 domain and adjusted by the variants;
// -inf where the row may not see the key (and for rows past the problem). Not
// `ranged`: the caller knows the row sees every key of the tile (every_key),
// and no key is checked.
float tile_score(float s, Row w, uint b, uint t0, uint kv_buffer, uint c, bool ranged)
{
    uint j = t0 + c;
    if (Q_BF16 || K_BF16)
        s = unscaled_score(s, w.q_factor, K_BF16 ? k_factor[kv_buffer * BC + c] : 1.0);
    s *= p.scale_log2e;
    return !ranged || (j >= w.lo && j < w.limit)
               ? adjust_score(s, w.slope, b, w.h, w.i, j, w.origin)
               : NEG_INF;
}

// acc plus P V over the tile's keys c0 .. c0 + count - 1 that a row may see
// (`keys`) for output column d, in plain code, the row's weights of those
// keys from p_tile at half p_at on, V from its buffer. A tile whose V holds
// an Inf or NaN is summed so (see the caller).
float plain_pv(float acc, uint t0, uint kv_buffer, uvec2 keys, uint d, uint p_at, uint c0,
               uint count)
{
    for (uint c = c0; c < c0 + count; c++) {
        float weight = PACKED_OPERAND(p_tile, p_at + c - c0);
        bool used = t0 + c >= keys.x && t0 + c < keys.y && (!KEYWISE_MASK || weight != 0.0);
        if (used)
            acc += weight * PACKED_OPERAND(v_tile, (kv_buffer * BC + c) * VS + d);
    }
    return acc;
}

#include "coopmat_register_softmax.glsl"

// The shared-memory softmax: which of the LPR parts of its row's chunks a
// lane takes.
uint row_part()
{
    return gl_SubgroupInvocationID / ROW_LANES;
}

// The shared-memory softmax with SCORES_HELD: this lane's scores of the row
// it is on, read from s_tile once; the weights are taken from here.
float lane_scores[SCORES_HELD ? LANE_CHUNKS * PACK : 1];

// The same for row r of s_tile, this lane's columns of it (chunks of PACK,
// one packed element of P, every LPR-th from row_part), each kept in
// lane_scores (SCORES_HELD) or stored back.
float shared_scores(uint r, Row w, uint b, uint t0, uint kv_buffer, bool ranged)
{
    float step_max = NEG_INF;
    if (!SCORES_HELD) {
        for (uint q = row_part(); q < BC / PACK; q += LPR)
            for (uint c = q * PACK; c < q * PACK + PACK; c++) {
                float s = tile_score(s_tile[r * SS + c], w, b, t0, kv_buffer, c, ranged);
                s_tile[r * SS + c] = s;
                step_max = max(step_max, s);
            }
        return step_max;
    }
    [[unroll]] for (uint i = 0; i < LANE_CHUNKS; i++) {
        uint q = row_part() + i * LPR;
        [[unroll]] for (uint e = 0; e < PACK; e++) {
            uint c = q * PACK + e;
            // (a lane past the row's chunks keeps -inf: never read)
            float s = q < BC / PACK
                          ? tile_score(s_tile[r * SS + c], w, b, t0, kv_buffer, c, ranged)
                          : NEG_INF;
            lane_scores[min(i * PACK + e, lane_scores.length() - 1)] = s;
            step_max = max(step_max, s);
        }
    }
    return step_max;
}

// What a subgroup works on: one (batch entry, kv head) problem, the block of
// BR packed query rows from `first` (RS of them its own, from row0 within the
// block) and this split's keys, with its slices of s_tile and p_tile.
struct Job {
    Sequence seq;
    uint b, g;
    uint rows;                  // packed query rows of the problem (group x Tq)
    uint first;                 // the block's first packed row
    uint split, key_begin, key_end;     // this split and its keys
    uint row0, slice, p_slice;  // the subgroup's
    uint k_base, v_base;        // K's and V's (b, g) in their buffers
    bool k_aligned8, v_aligned8;    // every key row starts 8-element aligned
};

// This lane's rows: their place in the block, and the softmax state it keeps
// of each (its row slots of each row block, or its rows of the shared-memory
// softmax).
uint held_rows[HELD];
Row held[HELD];
// Two stages: this thread's packed elements of the next K and V tiles.
uvec4 k_next[K_LOADS], v_next[V_LOADS];

// The cell index r * MN + c of each element of where_acc, written through the
// subgroup's s_tile slice: which row and column each of this lane's
// accumulator elements is (element_cell).
void map_accumulator_cells(uint slice)
{
    for (uint e = gl_SubgroupInvocationID; e < MM * MN; e += SG_SIZE)
        s_tile[slice + e] = float(e);
    subgroup_shared_sync();
    ACC_LOAD(where_acc, 0, s_tile, slice, MN);
    subgroup_shared_sync();
    keep_element_cells();
}

// Fills held_rows and held (keys, ALiBi, the softmax state of no key yet;
// q_factor 1 until load_q has bf16 rows' powers of 2). Returns the
// keys every row of the subgroup may see (none where one of its rows is past
// the problem): a tile inside them checks no row's key range (every_key; in a
// causal prefill, every tile off the diagonal). The lanes hold every row of
// the subgroup between them.
uvec2 hold_rows(Job job)
{
    uint lane = gl_SubgroupInvocationID;
    [[unroll]] for (uint pass = 0; pass < HELD; pass++) {
        held_rows[pass] = REG_SOFTMAX
                              ? job.row0 + pass / LANE_ROWS * MM + slot_row(pass % LANE_ROWS)
                              : job.row0 + lane % ROW_LANES + pass * ROW_LANES;
        uint row = job.first + held_rows[pass];
        uint r = min(row, job.rows - 1);
        held[pass].h = job.g * p.group + r / job.seq.Tq;
        held[pass].i = r % job.seq.Tq;
        uvec2 keys = row_keys(job.seq, row, job.rows, job.key_begin, job.key_end);
        held[pass].lo = keys.x;
        held[pass].limit = keys.y;
        held[pass].origin = alibi_origin(job.seq, held[pass].i);
        held[pass].slope = alibi_slope_log2e(held[pass].h);
        held[pass].q_factor = 1.0;
        held[pass].m = NEG_INF;
        held[pass].l = 0.0;
    }
    uvec2 all_keys = uvec2(0u, 0xffffffffu);
    [[unroll]] for (uint pass = 0; pass < HELD; pass++)
        all_keys = uvec2(max(all_keys.x, held[pass].lo), min(all_keys.y, held[pass].limit));
    for (uint offset = 1; offset < SG_SIZE; offset *= 2)
        all_keys = uvec2(max(all_keys.x, subgroupShuffleXor(all_keys.x, offset)),
                         min(all_keys.y, subgroupShuffleXor(all_keys.y, offset)));
    return all_keys;
}

// The block's Q: into q_tile (Q_SHARED; the first tile's barrier orders it
// before the products), or QCH rows at a time through k_tile into the
// subgroups' operands. bf16 rows are divided by a power of 2 each (their
// largest exponents first), which their held rows' q_factor undoes.
void load_q(Job job)
{
    uint tid = invocation_index();
    if (Q_BF16) {
        for (uint r = tid; r < BR; r += WG)
            q_exponent[r] = 0;
        barrier();
        for (uint e = tid; e < BR * DP / PACK; e += WG) {
            uint r = e / (DP / PACK);
            atomicMax(q_exponent[r], bf16_max_exponent(q_words(job.seq, job.b, job.g, job.first + r,
                                                                job.rows, e % (DP / PACK) * PACK)));
        }
    }
    if (Q_SHARED) {
        barrier();  // the rows' bf16 exponents are complete
        for (uint e = tid; e < BR * DP / PACK; e += WG) {
            uint r = e / (DP / PACK), d = e % (DP / PACK) * PACK;
            uvec4 words = q_words(job.seq, job.b, job.g, job.first + r, job.rows, d);
            if (Q_BF16)
                words = bf16_to_f16(words, bf16_shift(q_exponent[r]));
            q_tile[(r * KS + d) / PACK] = words;
        }
    }
    for (uint c0 = 0; c0 < (Q_SHARED ? 0 : BR); c0 += QCH) {
        barrier();
        for (uint e = tid; e < QCH * DP / PACK; e += WG) {
            uint r = c0 + e / (DP / PACK), d = e % (DP / PACK) * PACK;
            uvec4 words = q_words(job.seq, job.b, job.g, job.first + r, job.rows, d);
            if (Q_BF16)     // rows past the block (a last chunk's) go unused
                words = bf16_to_f16(words, bf16_shift(q_exponent[min(r, BR - 1)]));
            k_tile[(e / (DP / PACK) * KS + d) / PACK] = words;
        }
        barrier();
        MATRIX_UNROLL for (uint m = 0; m < ROW_TILES; m++) {
            uint r0 = job.row0 + m * MM;    // a row block lies in one chunk or none
            if (r0 >= c0 && r0 < c0 + QCH)
                MATRIX_UNROLL for (uint k = 0; k < QA; k++)
                    A_LOAD(q_a, m * QA + k, k_tile, (r0 - c0) * KS + k * MK, KS);
        }
    }
    if (Q_BF16)
        [[unroll]] for (uint pass = 0; pass < HELD; pass++)
            held[pass].q_factor = pow2(bf16_shift(q_exponent[held_rows[pass]]));
}

// Two stages, bf16 V: the largest exponent among this thread's elements of the
// next V tile, loaded into v_next.
uint v_next_exponent()
{
    uint top = 0;
    [[unroll]] for (uint i = 0; i < V_LOADS; i++)
        top = max(top, bf16_max_exponent(v_next[i]));
    return top;
}

// Two stages: the tile of keys from t into k_next and v_next.
void load_next_tile(Job job, uint t, uint block_limit)
{
    uint tid = invocation_index(), b = job.b;
    Sequence seq = job.seq;
    LOAD_TILE(k_next, K_LOADS, t, k16, k16x8, job.k_base, p.k_ss, D, DP, job.k_aligned8)
    LOAD_TILE(v_next, V_LOADS, t, v16, v16x8, job.v_base, p.v_ss, DV, DVP, job.v_aligned8)
}

// 1. The tile of keys from t0 into k_tile and v_tile as f16, from the step's
// first workgroup barrier to its last (bf16: the tile's exponents, a barrier,
// then its powers of 2; v_unit and v_top follow its V), then, with two
// stages, the next tile into registers.
void stage_tile(Job job, uint t0, uint block_limit, inout int v_unit, inout int v_top)
{
    uint tid = invocation_index(), b = job.b;
    Sequence seq = job.seq;
    barrier();  // every subgroup is done with the previous tile (and with Q)
    if (!REGISTER_STAGING && ANY_BF16) {   // as they are; bf16 converted below
        STAGE_TILE(k_tile, KS, 0u, k16, k16x8, job.k_base, p.k_ss, D, DP, job.k_aligned8, false)
        STAGE_TILE(v_tile, VS, 0u, v16, v16x8, job.v_base, p.v_ss, DV, DVP, job.v_aligned8, !V_BF16)
    }
    if (ANY_BF16) {     // the tile's exponents, then its powers of 2
        if (K_BF16 && REGISTER_STAGING)
            KEY_EXPONENTS(k_exponent, 0u, k_next, K_LOADS, DP)
        else if (K_BF16)
            TILE_KEY_EXPONENTS(k_exponent, k_tile, KS, DP)
        if (V_BF16) {
            uint top = REGISTER_STAGING ? v_next_exponent() : 0u;
            if (!REGISTER_STAGING)
                for (uint e = tid; e < BC * DVP / PACK; e += WG) {
                    uint c = e / (DVP / PACK), d = e % (DVP / PACK) * PACK;
                    top = max(top, bf16_max_exponent(v_tile[(c * VS + d) / PACK]));
                }
            raise_v_exponent(top, 0u);
        }
        barrier();
        if (V_BF16) {
            next_v_unit(v_exponent[0], v_unit, v_top);
        }
        if (K_BF16)
            for (uint c = tid; c < BC; c += WG)
                k_factor[c] = pow2(bf16_shift(k_exponent[c]));
    }
    if (REGISTER_STAGING) {
        STORE_TILE(k_tile, KS, 0u, k_next, K_LOADS, DP, false, K_BF16, bf16_shift(k_exponent[c]))
        STORE_TILE(v_tile, VS, 0u, v_next, V_LOADS, DVP, true, V_BF16, v_unit)
    } else if (ANY_BF16) {
        if (K_BF16)
            CONVERT_TILE(k_tile, KS, DP, false, bf16_shift(k_exponent[c]))
        if (V_BF16)
            CONVERT_TILE(v_tile, VS, DVP, true, v_unit)
    } else {
        STAGE_TILE(k_tile, KS, 0u, k16, k16x8, job.k_base, p.k_ss, D, DP, job.k_aligned8, false)
        STAGE_TILE(v_tile, VS, 0u, v16, v16x8, job.v_base, p.v_ss, DV, DVP, job.v_aligned8, true)
    }
    barrier();
    if (K_BF16)     // read above; raised again after the next tile's first barrier
        for (uint c = tid; c < BC; c += WG)
            k_exponent[c] = 0;
    if (V_BF16 && tid == 0)
        v_exponent[0] = 0;
    if (STAGES == 2 && t0 + BC < block_limit)
        load_next_tile(job, t0 + BC, block_limit);
}

// 1. With two buffers, the step of the n-th tile (the first was staged into
// buffer 0 by stage_tile): the step's one workgroup barrier, after which
// every subgroup is done with the previous tile's buffer and tile n lies
// whole in the other; then tile n + 1 (from t0), if there is one, into
// buffer (n + 1) & 1: stored from the registers its loads landed in (bf16
// converted by its exponents, reduced from those registers before the
// barrier; v_unit and v_top move on to its V) and tile n + 2's loads issued,
// or with one stage staged straight from memory.
void stage_ahead(Job job, uint n, uint t0, uint block_limit, inout int v_unit, inout int v_top)
{
    uint tid = invocation_index(), b = job.b;
    Sequence seq = job.seq;
    bool ahead = t0 < block_limit;  // alike in the workgroup
    uint kv_buffer = (n + 1) & 1u, slot = (n + 1) % EXPONENT_SLOTS;
    if (ANY_BF16 && ahead) {    // (two stages: the planner sees to it)
        if (K_BF16)
            KEY_EXPONENTS(k_exponent, slot * BC, k_next, K_LOADS, DP)
        if (V_BF16)
            raise_v_exponent(v_next_exponent(), slot);
    }
    barrier();
    if (!ahead)
        return;
    if (ANY_BF16) {
        uint spent = n % EXPONENT_SLOTS;    // tile n's: read in the step before
        if (K_BF16)
            for (uint c = tid; c < BC; c += WG) {
                k_factor[kv_buffer * BC + c] = pow2(bf16_shift(k_exponent[slot * BC + c]));
                k_exponent[spent * BC + c] = 0;
            }
        if (V_BF16) {
            next_v_unit(v_exponent[slot], v_unit, v_top);
            if (tid == 0)
                v_exponent[spent] = 0;
        }
    }
    if (REGISTER_STAGING) {
        STORE_TILE(k_tile, KS, kv_buffer, k_next, K_LOADS, DP, false, K_BF16,
                   bf16_shift(k_exponent[slot * BC + c]))
        STORE_TILE(v_tile, VS, kv_buffer, v_next, V_LOADS, DVP, true, V_BF16, v_unit)
        if (t0 + BC < block_limit)
            load_next_tile(job, t0 + BC, block_limit);
    } else {
        STAGE_TILE(k_tile, KS, kv_buffer, k16, k16x8, job.k_base, p.k_ss, D, DP, job.k_aligned8,
                   false)
        STAGE_TILE(v_tile, VS, kv_buffer, v16, v16x8, job.v_base, p.v_ss, DV, DVP, job.v_aligned8,
                   true)
    }
}

// 2. S = Q K^T for the subgroup's rows, in the score accumulators (K from
// its buffer).
void compute_scores(uint row0, uint kv_buffer)
{
    MATRIX_UNROLL for (uint c = 0; c < SA * ROW_TILES; c++)
        ACC_ZERO(s_acc, c);
    if (!ABLATE_SCORES)
        MATRIX_UNROLL for (uint k = 0; k < QA; k++) {
            if (Q_SHARED)   // the row blocks' MK columns k of Q
                MATRIX_UNROLL for (uint m = 0; m < ROW_TILES; m++)
                    A_LOAD(q_a, m, q_tile, (row0 + m * MM) * KS + k * MK, KS);
            MATRIX_UNROLL for (uint c = 0; c < SA; c++)
                ACC_MMA_ROWS(s_acc, c, SA, q_a, Q_SHARED ? 0 : k, Q_SHARED ? 1 : QA, ROW_TILES,
                             k_tile, (kv_buffer * BC + c * MN) * KS + k * MK, KS, true)
        }
}

// Which of this lane's held rows element k of row block m's accumulators is on.
uint held_of(uint m, uint k)
{
    return m * LANE_ROWS + slot_of(k);
}

// The scores (tile_score) in this lane's elements of the score accumulators,
// each left in its element, and each held row's largest (step_max). Called
// with a constant `ranged` (each call inlined with it), so that a tile inside
// every row's keys runs no key checks.
void register_scores(uint b, uint t0, uint kv_buffer, bool ranged, inout float step_max[HELD])
{
    MATRIX_UNROLL for (uint m = 0; m < ROW_TILES; m++)
        MATRIX_UNROLL for (uint c = 0; c < SA; c++)
            EDIT_ELEMENTS(s_acc, m * SA + c, k,
                uint pass = held_of(m, k);
                float x = tile_score(COPY_ELEMENT(s_acc, k), held[pass], b, t0, kv_buffer,
                                     c * MN + element_cell(k).y, ranged);
                COPY_ELEMENT(s_acc, k) = x;
                step_max[pass] = max(step_max[pass], x);)
}

// 3. The online softmax on the score accumulators' own elements (ROW_CLUSTER):
// each held row's weights of the tile left in its elements, O rescaled in its
// registers, P converted to f16 operands there. Keys a row may not see (and
// rows past the problem) get weight exactly 0; every_key: none to check.
// Every pass over elements runs over the matrices and their elements
// (EDIT_ELEMENTS: a copy of each matrix, LANE_ELEMENTS elements), each
// element's row picked per element (held_of), never a matrix by a loop over
// the held rows. The H200 kept 352-464 bytes in local memory (2026-11-28),
// about O's, S's and P's matrices, even at 186 registers, while the code did
// those three things otherwise; which of them cost it, the next check's
// local-memory column says.
void softmax_in_registers(uint b, uint t0, uint kv_buffer, bool every_key, float unit_factor)
{
    if (!ABLATE_SOFTMAX) {
        float step_max[HELD], shift[HELD], alpha[HELD], new_max[HELD], sum[HELD];
        [[unroll]] for (uint pass = 0; pass < HELD; pass++) {
            step_max[pass] = NEG_INF;
            sum[pass] = 0.0;
        }
        if (every_key)
            register_scores(b, t0, kv_buffer, false, step_max);
        else
            register_scores(b, t0, kv_buffer, true, step_max);
        [[unroll]] for (uint pass = 0; pass < HELD; pass++)
            shift[pass] = next_max(held[pass], lanes_max(step_max[pass], 1, ROW_CLUSTER),
                                   alpha[pass], new_max[pass]);
        MATRIX_UNROLL for (uint m = 0; m < ROW_TILES; m++)
            MATRIX_UNROLL for (uint c = 0; c < SA; c++)
                EDIT_ELEMENTS(s_acc, m * SA + c, k,
                    uint pass = held_of(m, k);
                    float weight = exp2(COPY_ELEMENT(s_acc, k) - shift[pass]);
                    COPY_ELEMENT(s_acc, k) = weight;
                    sum[pass] += weight;)
        float factor[HELD];
        bool any_factor = false;
        [[unroll]] for (uint pass = 0; pass < HELD; pass++) {
            held[pass].l = held[pass].l * alpha[pass] + lanes_sum(sum[pass], 1, ROW_CLUSTER);
            held[pass].m = new_max[pass];
            factor[pass] = alpha[pass] * unit_factor;
            any_factor = any_factor || factor[pass] != 1.0;
        }
        if (subgroup_any_true(any_factor))  // O rescaled in its registers
            MATRIX_UNROLL for (uint m = 0; m < ROW_TILES; m++)
                MATRIX_UNROLL for (uint j = 0; j < OA; j++)
                    EDIT_ELEMENTS(o_acc, m * OA + j, k,
                                  COPY_ELEMENT(o_acc, k) *= factor[held_of(m, k)];)
    }
    MATRIX_UNROLL for (uint m = 0; m < ROW_TILES; m++)
        MATRIX_UNROLL for (uint c = 0; c < SA; c++)
            A_FROM_ACC(p_a, m * PA + c, s_acc, m * SA + c);
}

// Chunk q of row r of P from its PACK scores, at `shift`: their sum.
float chunk_weights(uint r, uint q, float scores[PACK], float shift)
{
    uvec4 words;
    float sum = 0.0;
    [[unroll]] for (uint w2 = 0; w2 < PACK / 2; w2++) {
        vec2 weights = exp2(vec2(scores[2 * w2], scores[2 * w2 + 1]) - shift);
        words[w2] = pack_operands(weights);
        sum += weights.x + weights.y;
    }
    p_tile[r * PS / PACK + q] = words;
    return sum;
}

// 3. The same through the subgroup's slices of s_tile and p_tile (LPR lanes a
// row), O rescaled through shared memory, P loaded from p_tile as operands.
void softmax_in_shared(Job job, uint t0, uint kv_buffer, bool every_key, float unit_factor)
{
    uint lane = gl_SubgroupInvocationID;
    MATRIX_UNROLL for (uint m = 0; m < ROW_TILES; m++)
        MATRIX_UNROLL for (uint c = 0; c < SA; c++)
            ACC_STORE(s_acc, m * SA + c, s_tile, job.slice + m * MM * SS + c * MN, SS);
    subgroup_shared_sync();
    bool any_factor = false;
    [[unroll]] for (uint pass = 0; pass < (ABLATE_SOFTMAX ? 0 : ROW_PASSES); pass++) {
        uint r = job.row0 + lane % ROW_LANES + pass * ROW_LANES;
        Row w = held[pass];
        float step_max = every_key ? shared_scores(r, w, job.b, t0, kv_buffer, false)
                                   : shared_scores(r, w, job.b, t0, kv_buffer, true);
        float alpha, m;
        float shift = next_max(w, lanes_max(step_max, ROW_LANES, SG_SIZE), alpha, m);
        float sum = 0.0;
        if (SCORES_HELD)
            [[unroll]] for (uint i = 0; i < LANE_CHUNKS; i++) {
                uint q = row_part() + i * LPR;
                if (q >= BC / PACK)
                    break;
                float scores[PACK];
                [[unroll]] for (uint e = 0; e < PACK; e++)
                    scores[e] = lane_scores[min(i * PACK + e, lane_scores.length() - 1)];
                sum += chunk_weights(r, q, scores, shift);
            }
        else
            for (uint q = row_part(); q < BC / PACK; q += LPR) {
                float scores[PACK];
                [[unroll]] for (uint e = 0; e < PACK; e++)
                    scores[e] = s_tile[r * SS + q * PACK + e];
                sum += chunk_weights(r, q, scores, shift);
            }
        held[pass].l = w.l * alpha + lanes_sum(sum, ROW_LANES, SG_SIZE);
        held[pass].m = m;
        if (row_part() == 0)
            row_factor[r] = alpha * unit_factor;
        any_factor = any_factor || alpha * unit_factor != 1.0;
    }
    // The timing diagnostic without the arithmetic: S still read and P
    // written (the raw scores as operands), so that only the arithmetic is left out.
    [[unroll]] for (uint pass = 0; pass < (ABLATE_SOFTMAX ? ROW_PASSES : 0); pass++) {
        uint r = job.row0 + lane % ROW_LANES + pass * ROW_LANES;
        for (uint q = row_part(); q < BC / PACK; q += LPR) {
            uvec4 words;
            [[unroll]] for (uint w2 = 0; w2 < PACK / 2; w2++)
                words[w2] = pack_operands(vec2(s_tile[r * SS + q * PACK + 2 * w2],
                                               s_tile[r * SS + q * PACK + 2 * w2 + 1]));
            p_tile[r * PS / PACK + q] = words;
        }
    }
    subgroup_shared_sync();
    if (subgroup_any_true(any_factor))
        rescale_output(job.slice, job.row0);
    MATRIX_UNROLL for (uint m = 0; m < ROW_TILES; m++)
        MATRIX_UNROLL for (uint k = 0; k < PA; k++)
            A_LOAD(p_a, m * PA + k, p_tile, job.p_slice + m * MM * PS + k * MK, PS);
}

// 4. O += P V from the subgroup's P operands and the shared V tile (in its
// buffer).
void add_pv(Job job, uint t0, uint kv_buffer)
{
    if (ABLATE_PV) {
        // the timing diagnostic: no products
    } else if (nonfinite_tile(kv_buffer) != t0 + 1) {
        // Key blocks outer: consecutive products go to different O
        // accumulators, so that none waits for the one before it (each O
        // block still sums its key blocks in order).
        MATRIX_UNROLL for (uint k = 0; k < PA; k++)
            MATRIX_UNROLL for (uint j = 0; j < OA; j++)
                ACC_MMA_ROWS(o_acc, j, OA, p_a, k, PA, ROW_TILES, v_tile,
                             (kv_buffer * BC + k * MK) * VS + j * MN, VS, false)
    } else {
        // An Inf or NaN in this V tile: the block product would multiply it by
        // the zero weights of rows that may not see its key (0 * NaN = NaN).
        // Plain code over the keys each row sees instead (DESIGN.md section 2).
        // P is f16 and 0 for masked keys (the block product needs it so),
        // so with a mask a key whose weight rounded to 0 is skipped too,
        // unlike the f32 kernels (key_weight): this kernel's P is rounded.
        // With the softmax in registers, P leaves them a block at a
        // time for p_tile's block (A_STORE: f16, as the products take it).
        MATRIX_UNROLL for (uint oj = 0; oj < OA * ROW_TILES; oj++) {
            ACC_STORE(o_acc, oj, s_tile, job.slice, MN);
            subgroup_shared_sync();
            MATRIX_UNROLL for (uint k = 0; k < (REG_SOFTMAX ? PA : 1); k++) {
                if (REG_SOFTMAX) {
                    A_STORE(p_a, oj / OA * PA + k, p_tile, job.p_slice, PBS);
                    subgroup_shared_sync();
                }
                for (uint e = gl_SubgroupInvocationID; e < MM * MN; e += SG_SIZE) {
                    uint r = oj / OA * MM + e / MN, d = oj % OA * MN + e % MN;
                    uvec2 keys = row_keys(job.seq, job.first + job.row0 + r, job.rows,
                                          job.key_begin, job.key_end);
                    s_tile[job.slice + e] =
                        REG_SOFTMAX
                            ? plain_pv(s_tile[job.slice + e], t0, kv_buffer, keys, d,
                                       job.p_slice + e / MN * PBS, k * MK, MK)
                            : plain_pv(s_tile[job.slice + e], t0, kv_buffer, keys, d,
                                       job.p_slice + r * PS, 0, BC);
                }
                subgroup_shared_sync();
            }
            ACC_LOAD(o_acc, oj, s_tile, job.slice, MN);
            subgroup_shared_sync();
        }
    }
}

// O of the subgroup's rows, or with a split their partials (O, m and l),
// written through its s_tile slice a block at a time. Each row's output scale
// (1 with a split) goes to row_factor, where the last tile's lanes may still
// be reading its factors; O's bf16 unit 2^o_unit is applied after it (their
// product could underflow).
void write_output(Job job, int o_unit)
{
    float o_scale = V_BF16 && o_unit != O_UNIT_NONE ? pow2(o_unit) : 1.0;
    // (max: both sides may be evaluated, and ROW_CLUSTER is 0 without REG_SOFTMAX)
    bool row_writer = REG_SOFTMAX ? gl_SubgroupInvocationID % max(ROW_CLUSTER, 1u) == 0
                                  : row_part() == 0;
    subgroup_shared_sync();
    [[unroll]] for (uint pass = 0; pass < HELD; pass++) {
        uint r = held_rows[pass];
        uint row = job.first + r;
        Row w = held[pass];
        if (row_writer)
            row_factor[r] = SPLIT ? 1.0
                                  : output_scale(w.m, w.l, row_sink(job.seq, w.h, w.i, w.slope));
        if (SPLIT && row_writer && row < job.rows) {
            uint record = partial_record(job.b * p.Hkv + job.g, job.split, row);
            o32[p.ml_offset + 2 * record] = w.m;
            o32[p.ml_offset + 2 * record + 1] = w.l;
        }
    }
    subgroup_shared_sync();
    MATRIX_UNROLL for (uint oj = 0; oj < OA * ROW_TILES; oj++) {
        ACC_STORE(o_acc, oj, s_tile, job.slice, MN);
        subgroup_shared_sync();
        for (uint e = gl_SubgroupInvocationID; e < MM * MN; e += SG_SIZE) {
            uint r = oj / OA * MM + e / MN, d = oj % OA * MN + e % MN;
            uint row = job.first + job.row0 + r;
            if (row >= job.rows || d >= DV)
                continue;
            float x = s_tile[job.slice + e] * row_factor[job.row0 + r];
            if (V_BF16)
                x *= o_scale;
            if (SPLIT) {
                uint record = partial_record(job.b * p.Hkv + job.g, job.split, row);
                o32[record * DV4 * 4 + d] = x;
            } else {
                uint h = job.g * p.group + row / job.seq.Tq;
                uint i = job.seq.q_first + row % job.seq.Tq;
                o32[job.b * p.o_sb + h * p.o_sh + i * p.o_ss + d] = x;
            }
        }
        subgroup_shared_sync();
    }
}

#include "poison_shared.glsl"

// NaN in every word of shared memory first, with VKATTN_POISON=1
// (poison_shared.glsl): a read before the kernel's own write shows.
void poison_shared()
{
    if (!POISON_SHARED)
        return;
    POISON_UVEC4S(k_tile)
    POISON_UVEC4S(v_tile)
    POISON_FLOATS(s_tile)
    POISON_UVEC4S(p_tile)
    POISON_UVEC4S(q_tile)
    POISON_FLOATS(row_factor)
    POISON_UINTS(v_nonfinite_tile)
    POISON_UINTS(q_exponent)
    POISON_UINTS(k_exponent)
    POISON_FLOATS(k_factor)
    POISON_UINTS(v_exponent)
    MATRIX_POISON(q_a)
    MATRIX_POISON(p_a)
    MATRIX_POISON(s_acc)
    MATRIX_POISON(o_acc)
    MATRIX_POISON(where_acc)
    poison_shared_done();
}

void main()
{
    poison_shared();
    Job job;
    job.g = gl_WorkGroupID.y, job.b = gl_WorkGroupID.z;
    job.seq = sequence(job.b);
    job.rows = p.group * job.seq.Tq;
    uint blocks = (p.group * p.Tq + BR - 1) / BR;
    uint block = gl_WorkGroupID.x % blocks;
    job.split = gl_WorkGroupID.x / blocks;
    if (HEAVY_FIRST)
        block = blocks - 1 - block;
    if (block * BR >= job.rows)
        return;  // past this sequence's rows (packed sequences): the whole workgroup
    job.first = block * BR;
    job.key_begin = job.split * p.keys_per_split;
    job.key_end = min(p.Tk, job.key_begin + p.keys_per_split);
    uvec2 block_keys = rows_keys(job.seq, job.first, min(job.first + BR, job.rows) - 1,
                                 job.key_begin, job.key_end);
    uint block_limit = block_keys.y;
    job.row0 = subgroup_index() * RS;
    job.slice = subgroup_index() * S_SLICE;
    job.p_slice = subgroup_index() * P_SLICE;
    job.k_base = job.b * p.k_sb + job.g * p.k_sh;
    job.v_base = job.b * p.v_sb + job.g * p.v_sh;
    job.k_aligned8 = ((job.k_base | p.k_ss) & 7u) == 0u;
    job.v_aligned8 = ((job.v_base | p.v_ss) & 7u) == 0u;

    // The keys some row of this subgroup may see, and those all of them may.
    bool has_rows = job.first + job.row0 < job.rows;
    uvec2 sub_keys = has_rows ? rows_keys(job.seq, job.first + job.row0,
                                          min(job.first + job.row0 + RS, job.rows) - 1,
                                          job.key_begin, job.key_end)
                              : uvec2(0);
    if (REG_SOFTMAX)
        map_accumulator_cells(job.slice);
    uvec2 all_keys = hold_rows(job);

    uint tid = invocation_index();
    MATRIX_UNROLL for (uint j = 0; j < OA * ROW_TILES; j++)
        ACC_ZERO(o_acc, j);
    for (uint w = tid; w < 4 * BUFFERS; w += WG)
        v_nonfinite_tile[w] = 0;
    if (tid < 4)
        v_exponent[tid] = 0;
    if (K_BF16)
        for (uint c = tid; c < EXPONENT_SLOTS * BC; c += WG)
            k_exponent[c] = 0;
    load_q(job);

    // bf16 V: the V tiles are staged in units of 2^v_unit (all subgroups
    // alike; v_top: the largest tile's), this subgroup's O is in units of
    // 2^o_unit (moved to the tile's before its next P V).
    int v_unit = -SHIFT_LIMIT, v_top = -SHIFT_LIMIT, o_unit = O_UNIT_NONE;
    if (STAGES == 2 && block_keys.x < block_limit)
        load_next_tile(job, block_keys.x, block_limit);
    if (BUFFERS == 2 && block_keys.x < block_limit)
        stage_tile(job, block_keys.x, block_limit, v_unit, v_top);  // into buffer 0
    uint n = 0;
    for (uint t0 = block_keys.x; t0 < block_limit; t0 += BC, n++) {
        // The unit this tile's V was staged in: with two buffers, the one
        // reached a step before (stage_ahead moves v_unit on to the next
        // tile's); with one, the one stage_tile reaches now.
        int tile_unit = v_unit;
        if (BUFFERS == 2) {
            stage_ahead(job, n, t0 + BC, block_limit, v_unit, v_top);
        } else {
            stage_tile(job, t0, block_limit, v_unit, v_top);
            tile_unit = v_unit;
        }
        if (t0 >= sub_keys.y || t0 + BC <= sub_keys.x)
            continue;   // no row of this subgroup sees a key of the tile
        uint kv_buffer = BUFFERS == 2 ? n & 1u : 0u;
        bool every_key = t0 >= all_keys.x && t0 + BC <= all_keys.y;  // the subgroup's alike
        float unit_factor = V_BF16 ? o_unit_factor(o_unit, tile_unit) : 1.0;
        compute_scores(job.row0, kv_buffer);
        if (REG_SOFTMAX)
            softmax_in_registers(job.b, t0, kv_buffer, every_key, unit_factor);
        else
            softmax_in_shared(job, t0, kv_buffer, every_key, unit_factor);
        add_pv(job, t0, kv_buffer);
    }
    if (has_rows)
        write_output(job, o_unit);
}
