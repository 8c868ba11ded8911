#version 450
// Fused attention on workgroup-scope matrices (coopmat_workgroup.glsl:
// VK_NV_cooperative_matrix2's workgroup scope and flexible dimensions, through
// VK_KHR_cooperative_matrix): S = Q K^T and O += P V each as one product that
// spans the workgroup, which the driver maps onto its matrix units and
// stages as it likes (Hopper's warpgroup products take operands from shared
// memory the driver lays out itself), the online softmax in f32 between them.
//
// A workgroup owns BR packed query rows of one (batch, kv head) problem and one
// key range (split), as the other fused kernels do (packing, key ranges, split
// records and push constants are theirs). Q (BR x DP, f16) and O (BR x DV f32,
// in PIECES accumulators of ON columns) stay in workgroup matrices for the
// whole key loop. Per tile of BC keys:
//   1. K^T (DP x BC) is loaded straight from the K buffer, column-major,
//      where the tile lies whole inside the tensor and its rows are 8-element
//      aligned (DIRECT and the tile's checks), else staged by the workgroup in
//      `scratch` (zeros past the block's last key; paged keys) and loaded from
//      there; S = Q K^T;
//   2. S is stored to `scratch`, and LPR neighbouring invocations a row run
//      the online softmax on it (scale, mask and adjust, the running maximum
//      m and sum l in the exp2 domain, raised lazily as in
//      attention_coopmat.comp), writing P = exp2(S - m) as f16 into p_tile
//      and the row's rescaling into row_factor;
//   3. where some row's maximum rose, each O piece is rescaled through
//      `scratch` (the matrices' layout across the workgroup is the driver's);
//   4. P is loaded from p_tile, and for each O piece its V columns (straight
//      from the buffer, or staged), O += P V; a piece of a tile whose V holds
//      an Inf or NaN where some weight is 0 for a key a row may not see is
//      summed in plain code over the keys each row sees instead (0 * Inf is
//      NaN: DESIGN.md section 2), as attention_coopmat.comp does.
// The output is written through `scratch`, a piece at a time.
//
// Q, K and V are f16 or bf16 (BF16_INPUTS), each bf16 one converted to f16 as
// it is staged exactly as attention_coopmat.comp converts it (a power of 2 a
// Q row, a key of K and a tile of V, undone in f32 on the scores and on O;
// coopmat_bf16.glsl), so bf16 K and V are always staged. Shared memory, in
// bytes: 16 max(BR SS / 4, max(BR, BC) KS / 8, BC VS / 8, BR OS / 4)
// (scratch) + 2 BR PS + 4 BR + 64, plus with bf16 Q 4 BR and with bf16 K 8 BC
// (else 16 and 32), plus the driver's reserve for workgroup scope; in the
// emulated build also its matrices: 2 BR DP + 2 DP BC + 4 BR BC + 2 BR BC +
// 2 BC ON + 4 BR ON PIECES + 4 ON (4 - PIECES).
//
// With COOPMAT_EMULATED the same kernel runs with the matrix operations in
// plain code over shared memory (lavapipe in CI). The softmax's lanes of a row
// reduce by subgroup shuffles: LPR divides the subgroup size, and both builds
// run with whole subgroups of SG_SIZE.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifndef COOPMAT_EMULATED
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;
#include "invocation_order.glsl"  // after the workgroup size it reads
// Matrix sides each from a constant of its own: the KHR rewrite gives every
// matrix type one use, and types are alike when their sizes are the same
// constants (coopmat_workgroup.glsl).
layout(constant_id = 1) const uint BR = 64;     // query rows per workgroup
layout(constant_id = 2) const uint BC = 64;     // keys per tile
layout(constant_id = 3) const uint D = 128;
layout(constant_id = 4) const uint DV = 128;
layout(constant_id = 5) const bool CAUSAL = false;
layout(constant_id = 6) const bool SPLIT = false;
layout(constant_id = 7) const uint DP = 128;    // D padded to the granularity and PACK
layout(constant_id = 8) const uint ON = 64;     // columns of an O piece
layout(constant_id = 9) const uint PIECES = 2;  // O pieces, 1 to 4: ON PIECES >= DV
layout(constant_id = 10) const uint SG_SIZE = 32;
// Row blocks in reverse grid order (fused_heavy_first).
layout(constant_id = 11) const bool HEAVY_FIRST = false;
// K and V may be loaded straight from their buffers: not paged, f16, D == DP
// and DV == ON PIECES (no padding columns to read), and every tile's rows are
// checked for alignment and bounds as well.
layout(constant_id = 12) const bool DIRECT = false;
// A timing diagnostic, never a result (attention_coopmat.comp's ABLATE, the
// same bits; the host takes it only with VKATTN_DIAGNOSTICS=1): bit 0 the
// softmax's arithmetic (S and P still move through shared memory, P the raw
// scores), bit 1 the S = Q K^T products, bit 2 the O += P V products, bit 3
// the K and V loads from global memory (every tile read from the first
// tile's rows, which stay in cache; staged tiles are zeros).
layout(constant_id = 13) const uint ABLATE = 0;
const bool ABLATE_SOFTMAX = (ABLATE & 1u) != 0u;
const bool ABLATE_SCORES = (ABLATE & 2u) != 0u;
const bool ABLATE_PV = (ABLATE & 4u) != 0u;
const bool ABLATE_LOADS = (ABLATE & 8u) != 0u;
// Bits 0, 1, 2: Q, K, V are bf16 (else f16), as attention_coopmat.comp's.
layout(constant_id = 14) const uint BF16_INPUTS = 0;
const bool Q_BF16 = (BF16_INPUTS & 1u) != 0u;
const bool K_BF16 = (BF16_INPUTS & 2u) != 0u;
const bool V_BF16 = (BF16_INPUTS & 4u) != 0u;
// constant_id 15: VARIANTS (attention_variants.glsl)

#include "coopmat_workgroup.glsl"
#include "subgroup_lanes.glsl"

const uint WG = gl_WorkGroupSize.x;
// The softmax: LPR neighbouring invocations a row (a power of 2 dividing
// SG_SIZE), each taking every LPR-th chunk of PACK columns; with fewer
// invocations than rows, each runs HELD rows in turn.
const uint LPR = WG >= BR ? WG / BR : 1;
const uint ROWS_AT_ONCE = WG / LPR;
const uint HELD = (BR + ROWS_AT_ONCE - 1) / ROWS_AT_ONCE;
const uint LANE_CHUNKS = (BC / PACK + LPR - 1) / LPR;
const uint DV4 = (DV + 3) / 4;              // partial records are padded to vec4
// Row strides in scratch and p_tile (halves or floats), 16 bytes past a row
// so that neighbouring rows start in different banks and stay 16-byte aligned.
const uint SS = BC + 4;     // S (floats)
const uint KS = DP + 8;     // Q and K tiles (halves)
const uint VS = ON + 8;     // a V piece's tile (halves)
const uint OS = ON + 4;     // an O piece (floats)
const uint PS = BC + 8;     // P (halves)
#define LARGER(A, B) ((A) > (B) ? (A) : (B))  // max() is no specialization-constant operation
const uint SCRATCH = LARGER(LARGER(BR * SS / 4, LARGER(BR, BC) * KS / 8),
                            LARGER(BC * VS / 8, BR * OS / 4));

layout(set = 0, binding = 0) readonly buffer Q16 { uint q16[]; };
layout(set = 0, binding = 0) readonly buffer Q16x8 { uvec4 q16x8[]; };
layout(set = 0, binding = 1) readonly buffer K16 { uint k16[]; };
layout(set = 0, binding = 1) readonly buffer K16x8 { uvec4 k16x8[]; };
layout(set = 0, binding = 2) readonly buffer V16 { uint v16[]; };
layout(set = 0, binding = 2) readonly buffer V16x8 { uvec4 v16x8[]; };
layout(set = 0, binding = 3) writeonly buffer O32 { float o32[]; };   // O, or the partials

#include "attention_push.glsl"
#include "attention_variants.glsl"

// Every shared variable a multiple of 16 bytes (matrix loads and stores need
// 16-byte aligned addresses; see attention_coopmat.comp).
shared uvec4 scratch[SCRATCH];      // Q, then per tile K, S, O pieces, V pieces
shared uvec4 p_tile[BR * PS / PACK];
shared float row_factor[BR];        // a row's O rescaling, then its output scale
// t0 + 1 of the last tile where some row's maximum rose (rescale_tile) and
// whose V piece held an Inf or NaN that a weight of 0 would meet
// (v_nonfinite_tile): monotone, so never reset; four words each (alignment),
// every invocation writing word tid & 3.
shared uint rescale_tile[4];
shared uint v_nonfinite_tile[4];
// The keys every row of the block may see: [keys_all[0], keys_all[1]).
shared uint keys_all[4];
// bf16 inputs: the largest exponent of each Q row of the block, of each key of
// the K tile, of the V tile (word 0); the K tile's powers of 2 (k_factor).
shared uint q_exponent[Q_BF16 ? BR : 4];
shared uint k_exponent[K_BF16 ? BC : 4];
shared float k_factor[K_BF16 ? BC : 4];
shared uint v_exponent[4];

WG_A(q_a, BR, DP)
WG_B(k_b, DP, BC)
WG_ACC(s_acc, BR, BC)
WG_A(p_a, BR, BC)
WG_B(v_b, BC, ON)
WG_ACC(o0, BR, ON)
#ifdef COOPMAT_EMULATED
// (shared memory: a piece past PIECES is declared, never used, one row long)
WG_ACC(o1, PIECES > 1 ? BR : 1, ON)
WG_ACC(o2, PIECES > 2 ? BR : 1, ON)
WG_ACC(o3, PIECES > 3 ? BR : 1, ON)
#else
WG_ACC(o1, BR, ON)
WG_ACC(o2, BR, ON)
WG_ACC(o3, BR, ON)
#endif

#include "coopmat_attention_rows.glsl"
#include "coopmat_tile_staging.glsl"
#include "coopmat_bf16.glsl"

uint tile_flag(uint words[4])
{
    return max(max(words[0], words[1]), max(words[2], words[3]));
}

// Score s of key t0 + c for row w (bf16 factors undone), scaled to the exp2
// domain and adjusted by the variants; -inf where the row may not see the key
// (`ranged`: checked).
float tile_score(float s, Row w, uint b, uint t0, uint c, bool ranged)
{
    uint j = t0 + c;
    if (Q_BF16 || K_BF16)
        s = unscaled_score(s, w.q_factor, K_BF16 ? k_factor[c] : 1.0);
    s *= p.scale_log2e;
    return !ranged || (j >= w.lo && j < w.limit)
               ? adjust_score(s, w.slope, b, w.h, w.i, j, w.origin)
               : NEG_INF;
}

float scratch_float(uint i)
{
    return uintBitsToFloat(scratch[i / 4u][i % 4u]);
}

void set_scratch_float(uint i, float x)
{
    scratch[i / 4u][i % 4u] = floatBitsToUint(x);
}

// What the workgroup works on (as attention_coopmat.comp's Job).
struct Job {
    Sequence seq;
    uint b, g;
    uint rows;                  // packed query rows of the problem (group x Tq)
    uint first;                 // the block's first packed row
    uint split, key_begin, key_end;
    uint k_base, v_base;        // K's and V's (b, g) in their buffers
    bool k_aligned8, v_aligned8;    // every key row starts 8-element aligned
};

// This invocation's rows of the softmax, and their state.
uint held_rows[HELD];
Row held[HELD];
float lane_scores[LANE_CHUNKS * PACK];

// Which of the LPR parts of its row's chunks this invocation takes.
uint row_part()
{
    return invocation_index() % LPR;
}

// Fills held_rows and held, and narrows keys_all to the keys each of them may
// see (none where a row is past the problem).
void hold_rows(Job job)
{
    uint tid = invocation_index();
    [[unroll]] for (uint pass = 0; pass < HELD; pass++) {
        held_rows[pass] = min(pass * ROWS_AT_ONCE + tid / LPR, BR - 1);
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
        atomicMax(keys_all[0], keys.x);
        atomicMin(keys_all[1], keys.y);
    }
}

// Q of the block's rows into q_a, staged through scratch; bf16 rows divided
// by a power of 2 each (their largest exponents first), which their held
// rows' q_factor undoes.
void load_q(Job job)
{
    uint tid = invocation_index();
    if (Q_BF16) {
        for (uint r = tid; r < BR; r += WG)
            q_exponent[r] = 0;
        barrier();
        for (uint e = tid; e < BR * DP / PACK; e += WG) {
            uint r = e / (DP / PACK), d = e % (DP / PACK) * PACK;
            atomicMax(q_exponent[r], bf16_max_exponent(q_words(job.seq, job.b, job.g,
                                                                job.first + r, job.rows, d)));
        }
        barrier();
    }
    for (uint e = tid; e < BR * DP / PACK; e += WG) {
        uint r = e / (DP / PACK), d = e % (DP / PACK) * PACK;
        uvec4 words = q_words(job.seq, job.b, job.g, job.first + r, job.rows, d);
        if (Q_BF16)
            words = bf16_to_f16(words, bf16_shift(q_exponent[r]));
        scratch[(r * KS + d) / PACK] = words;
    }
    barrier();
    WG_LOAD(q_a, BR, DP, scratch, 0, KS, false);
    if (Q_BF16)
        [[unroll]] for (uint pass = 0; pass < HELD; pass++)
            held[pass].q_factor = pow2(bf16_shift(q_exponent[held_rows[pass]]));
}

// bf16 V: the largest exponent of the tile's V rows (keys before block_limit),
// raised in v_exponent[0].
void scan_v_exponent(Job job, uint t0, uint block_limit)
{
    uint tid = invocation_index(), top = 0u, src = ABLATE_LOADS ? 0u : t0;
    for (uint e = tid; e < BC * ((DV + PACK - 1) / PACK); e += WG) {
        uint c = e / ((DV + PACK - 1) / PACK), d = e % ((DV + PACK - 1) / PACK) * PACK;
        if (t0 + c < block_limit) {
            uint first = job.v_base + key_row(job.b, job.seq, src + c) * p.v_ss + d;
            uvec4 words = uvec4(0);
            if (DV % PACK == 0 && job.v_aligned8)
                words = v16x8[first >> 3];
            else
                GATHER_HALVES(words, v16, first, min(PACK, DV - d));
            top = max(top, bf16_max_exponent(words));
        }
    }
    raise_v_exponent(top, 0u);
}

// Whether the V rows of the tile's keys hold an Inf or a NaN, read straight
// from the buffer (the direct path's staging is the driver's): flagged in
// v_nonfinite_tile for the whole tile, as the staged path flags it while
// staging (DIRECT: DV is a multiple of PACK, rows 8-element aligned).
void scan_v_tile(Job job, uint t0)
{
    uint tid = invocation_index(), nonfinite = 0u, src = ABLATE_LOADS ? 0u : t0;
    for (uint e = tid; e < BC * DV / PACK; e += WG) {
        uint c = e / (DV / PACK), d = e % (DV / PACK) * PACK;
        uint first = job.v_base + key_row(job.b, job.seq, src + c) * p.v_ss + d;
        nonfinite |= nonfinite_bits(v16x8[first >> 3]);
    }
    if (nonfinite != 0u)
        atomicMax(v_nonfinite_tile[tid & 3u], t0 + 1);
}

// Whether the tile of keys from t0 can be loaded straight from the K and V
// buffers: whole inside the tensor's rows of this sequence, 8-element aligned,
// f16 (bf16 is converted as it is staged; the host never asks for both).
bool direct_tile(Job job, uint t0)
{
    uint rows_there = PACKED_K ? job.seq.keys : p.Tk;
    return DIRECT && !K_BF16 && !V_BF16 && t0 + BC <= rows_there && job.k_aligned8 &&
           job.v_aligned8;
}

// 1. S = Q K^T for the tile of keys from t0; with `scan`, the direct path's
// V tile checked for an Inf or NaN before the barrier that orders the flag
// before every O piece reads it (a scan between pieces would race with the
// reads of the piece before). bf16: K staged as it is, then converted in
// place by its keys' powers of 2 (k_factor), and the V tile's exponent moves
// v_unit (v_top) before any of its pieces is staged.
void compute_scores(Job job, uint t0, uint block_limit, bool direct, bool scan,
                    inout int v_unit, inout int v_top)
{
    uint tid = invocation_index(), b = job.b;
    Sequence seq = job.seq;
    WG_FILL(s_acc, BR, BC, 0.0);
    if (direct) {
        uint src = ABLATE_LOADS ? 0u : t0;
        WG_LOAD(k_b, DP, BC, k16x8, job.k_base + key_row(b, seq, src) * p.k_ss, p.k_ss, true);
    } else {
        barrier();  // scratch's last readers are done
        STAGE_TILE(scratch, KS, 0u, k16, k16x8, job.k_base, p.k_ss, D, DP, job.k_aligned8, false)
        if (K_BF16 || V_BF16) {
            if (K_BF16)
                TILE_KEY_EXPONENTS(k_exponent, scratch, KS, DP)
            if (V_BF16)
                scan_v_exponent(job, t0, block_limit);
            barrier();
            if (K_BF16) {
                CONVERT_TILE(scratch, KS, DP, false, bf16_shift(k_exponent[c]))
                for (uint c = tid; c < BC; c += WG)
                    k_factor[c] = pow2(bf16_shift(k_exponent[c]));
            }
            if (V_BF16)
                next_v_unit(v_exponent[0], v_unit, v_top);
        }
        barrier();
        // read above; raised again after the next tile's first barrier
        if (K_BF16)
            for (uint c = tid; c < BC; c += WG)
                k_exponent[c] = 0;
        if (V_BF16 && tid == 0)
            v_exponent[0] = 0;
        WG_LOAD(k_b, DP, BC, scratch, 0, KS, true);
    }
    if (!ABLATE_SCORES)
        WG_MMA(s_acc, q_a, k_b, BR, BC, DP);
    if (direct && scan)
        scan_v_tile(job, t0);
    barrier();  // the staged K tile's readers are done; the V tile's flag is set
    WG_STORE_PACKED(s_acc, BR, BC, scratch, 0, SS);
    barrier();
}

// This invocation's scores of row r of the tile, each kept in lane_scores:
// their largest.
float row_scores(uint r, Row w, uint b, uint t0, bool ranged)
{
    float step_max = NEG_INF;
    [[unroll]] for (uint i = 0; i < LANE_CHUNKS; i++) {
        uint q = row_part() + i * LPR;
        // The chunk's PACK scores as two 16-byte reads (SS and PACK are
        // multiples of 4 floats); a lane past the row's chunks keeps -inf.
        uint at = min(r * SS + q * PACK, SCRATCH * 4 - PACK) / 4;
        vec4 halves[2] = {uintBitsToFloat(scratch[at]), uintBitsToFloat(scratch[at + 1])};
        [[unroll]] for (uint e = 0; e < PACK; e++) {
            uint c = q * PACK + e;
            float s = q < BC / PACK ? tile_score(halves[e / 4][e % 4], w, b, t0, c, ranged)
                                    : NEG_INF;
            lane_scores[i * PACK + e] = s;
            step_max = max(step_max, s);
        }
    }
    return step_max;
}

// 2. The online softmax of the tile for this invocation's rows: P into p_tile,
// each row's rescaling (times unit_factor, where bf16 V moved O's unit) into
// row_factor, rescale_tile raised where one is not 1.
void softmax(Job job, uint t0, bool every_key, float unit_factor)
{
    uint tid = invocation_index();
    [[unroll]] for (uint pass = 0; pass < (ABLATE_SOFTMAX ? 0 : HELD); pass++) {
        uint r = held_rows[pass];
        Row w = held[pass];
        float step_max = every_key ? row_scores(r, w, job.b, t0, false)
                                   : row_scores(r, w, job.b, t0, true);
        float alpha, m;
        float shift = next_max(w, lanes_max(step_max, 1, LPR), alpha, m);
        float sum = 0.0;
        [[unroll]] for (uint i = 0; i < LANE_CHUNKS; i++) {
            uint q = row_part() + i * LPR;
            if (q < BC / PACK) {
                uvec4 words;
                [[unroll]] for (uint w2 = 0; w2 < PACK / 2; w2++) {
                    vec2 weights = exp2(vec2(lane_scores[i * PACK + 2 * w2],
                                             lane_scores[i * PACK + 2 * w2 + 1]) - shift);
                    words[w2] = packHalf2x16(weights);
                    sum += weights.x + weights.y;
                }
                p_tile[r * PS / PACK + q] = words;
            }
        }
        held[pass].l = w.l * alpha + lanes_sum(sum, 1, LPR);
        held[pass].m = m;
        float factor = alpha * unit_factor;
        if (row_part() == 0)
            row_factor[r] = factor;
        if (factor != 1.0)
            atomicMax(rescale_tile[tid & 3u], t0 + 1);
    }
    // The timing diagnostic without the arithmetic: S still read, P written.
    [[unroll]] for (uint pass = 0; pass < (ABLATE_SOFTMAX ? HELD : 0); pass++)
        [[unroll]] for (uint i = 0; i < LANE_CHUNKS; i++) {
            uint r = held_rows[pass], q = row_part() + i * LPR;
            if (q < BC / PACK) {
                uint at = (r * SS + q * PACK) / 4;
                vec4 lo = uintBitsToFloat(scratch[at]), hi = uintBitsToFloat(scratch[at + 1]);
                p_tile[r * PS / PACK + q] = uvec4(packHalf2x16(lo.xy), packHalf2x16(lo.zw),
                                                  packHalf2x16(hi.xy), packHalf2x16(hi.zw));
            }
        }
    barrier();
}

// O piece OP (columns J ON ..) times row_factor, through scratch.
#define RESCALE_PIECE(OP, J)                                                                    \
    if ((J) < PIECES) {                                                                         \
        barrier();                                                                              \
        WG_STORE_PACKED(OP, BR, ON, scratch, 0, OS);                                            \
        barrier();                                                                              \
        for (uint e = tid; e < BR * ON; e += WG)                                                \
            set_scratch_float(e / ON * OS + e % ON,                                             \
                              scratch_float(e / ON * OS + e % ON) * row_factor[e / ON]);        \
        barrier();                                                                              \
        WG_ACC_LOAD_PACKED(OP, BR, ON, scratch, 0, OS);                                         \
    }

// The plain-code P V of piece J for a tile whose V piece holds an Inf or NaN:
// each row's weights over the keys it may see only (with a mask, a key whose
// weight is 0 is skipped too, as attention_coopmat.comp's plain_pv does);
// bf16 V in units of 2^v_unit.
float plain_pv(Job job, uint t0, uint r, uint d, float acc, int v_unit)
{
    uvec2 keys = row_keys(job.seq, job.first + r, job.rows, job.key_begin, job.key_end);
    for (uint c = 0; c < BC; c++) {
        uint key = t0 + c;
        float weight = float(PACKED_HALF(p_tile, r * PS + c));
        if (key >= keys.x && key < keys.y && (!KEYWISE_MASK || weight != 0.0)) {
            uint at = job.v_base + key_row(job.b, job.seq, key) * p.v_ss + d;
            uint bits = v16[at >> 1] >> (16u * (at & 1u)) & 0xffffu;
            acc += weight * (V_BF16 ? uintBitsToFloat(bits << 16) * pow2(-v_unit)
                                    : unpackHalf2x16(bits).x);
        }
    }
    return acc;
}

// 4. O piece OP += P V over the piece's columns (the tile's keys from t0).
#define ADD_PV_PIECE(OP, J)                                                                     \
    if ((J) < PIECES) {                                                                         \
        uint d0 = (J) * ON;                                                                     \
        if (direct) {                                                                           \
            WG_LOAD(v_b, BC, ON, v16x8,                                                         \
                    job.v_base + key_row(b, seq, ABLATE_LOADS ? 0u : t0) * p.v_ss + d0, p.v_ss, \
                    false);                                                                     \
        } else {                                                                                \
            barrier();                                                                          \
            STAGE_TILE(scratch, VS, 0u, v16, v16x8, job.v_base + d0, p.v_ss, DV - min(DV, d0),  \
                       ON, job.v_aligned8, !V_BF16)                                             \
            if (V_BF16)                                                                         \
                CONVERT_TILE(scratch, VS, ON, true, v_unit)                                     \
            barrier();                                                                          \
            WG_LOAD(v_b, BC, ON, scratch, 0, VS, false);                                        \
        }                                                                                       \
        if (tile_flag(v_nonfinite_tile) != t0 + 1) {                                            \
            if (!ABLATE_PV)                                                                     \
                WG_MMA(OP, p_a, v_b, BR, ON, BC);                                               \
        } else {                                                                                \
            barrier();                                                                          \
            WG_STORE_PACKED(OP, BR, ON, scratch, 0, OS);                                        \
            barrier();                                                                          \
            for (uint e = tid; e < BR * ON; e += WG)                                            \
                if (d0 + e % ON < DV)                                                           \
                    set_scratch_float(e / ON * OS + e % ON,                                     \
                                      plain_pv(job, t0, e / ON, d0 + e % ON,                    \
                                               scratch_float(e / ON * OS + e % ON), v_unit));   \
            barrier();                                                                          \
            WG_ACC_LOAD_PACKED(OP, BR, ON, scratch, 0, OS);                                     \
        }                                                                                       \
    }

// O piece OP written out (or with a split, as partials) through scratch,
// each row scaled by row_factor, then bf16 V's unit applied (o_scale: their
// product could underflow).
#define WRITE_PIECE(OP, J)                                                                      \
    if ((J) < PIECES) {                                                                         \
        barrier();                                                                              \
        WG_STORE_PACKED(OP, BR, ON, scratch, 0, OS);                                            \
        barrier();                                                                              \
        for (uint e = tid; e < BR * ON; e += WG) {                                              \
            uint r = e / ON, d = (J) * ON + e % ON, row = job.first + r;                        \
            if (row >= job.rows || d >= DV)                                                     \
                continue;                                                                       \
            float x = scratch_float(r * OS + e % ON) * row_factor[r] * o_scale;                 \
            if (SPLIT) {                                                                        \
                uint record = partial_record(job.b * p.Hkv + job.g, job.split, row);            \
                o32[record * DV4 * 4 + d] = x;                                                  \
            } else {                                                                            \
                uint h = job.g * p.group + row / job.seq.Tq;                                    \
                uint i = job.seq.q_first + row % job.seq.Tq;                                    \
                o32[job.b * p.o_sb + h * p.o_sh + i * p.o_ss + d] = x;                          \
            }                                                                                   \
        }                                                                                       \
    }

#include "poison_shared.glsl"

// NaN in every word of shared memory first, with VKATTN_POISON=1
// (poison_shared.glsl): a read before the kernel's own write shows.
void poison_shared()
{
    if (!POISON_SHARED)
        return;
    POISON_UVEC4S(scratch)
    POISON_UVEC4S(p_tile)
    POISON_FLOATS(row_factor)
    POISON_UINTS(rescale_tile)
    POISON_UINTS(v_nonfinite_tile)
    POISON_UINTS(keys_all)
    POISON_UINTS(q_exponent)
    POISON_UINTS(k_exponent)
    POISON_FLOATS(k_factor)
    POISON_UINTS(v_exponent)
    WG_POISON(q_a)
    WG_POISON(k_b)
    WG_POISON(s_acc)
    WG_POISON(p_a)
    WG_POISON(v_b)
    WG_POISON(o0)
    WG_POISON(o1)
    WG_POISON(o2)
    WG_POISON(o3)
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
    job.k_base = job.b * p.k_sb + job.g * p.k_sh;
    job.v_base = job.b * p.v_sb + job.g * p.v_sh;
    job.k_aligned8 = ((job.k_base | p.k_ss) & 7u) == 0u;
    job.v_aligned8 = ((job.v_base | p.v_ss) & 7u) == 0u;
    // (names coopmat_tile_staging.glsl's macros expand with)
    uint tid = invocation_index(), b = job.b;
    Sequence seq = job.seq;

    if (tid < 4) {
        rescale_tile[tid] = 0;
        v_nonfinite_tile[tid] = 0;
        keys_all[tid] = tid == 1 ? 0xffffffffu : 0u;
        v_exponent[tid] = 0;
    }
    if (K_BF16)
        for (uint c = tid; c < BC; c += WG)
            k_exponent[c] = 0;
    WG_FILL(o0, BR, ON, 0.0);
    if (PIECES > 1)
        WG_FILL(o1, BR, ON, 0.0);
    if (PIECES > 2)
        WG_FILL(o2, BR, ON, 0.0);
    if (PIECES > 3)
        WG_FILL(o3, BR, ON, 0.0);
    barrier();
    hold_rows(job);
    load_q(job);
    barrier();  // keys_all is complete
    uvec2 all_keys = uvec2(keys_all[0], keys_all[1]);

    // bf16 V: the V tiles are staged in units of 2^v_unit (v_top: the largest
    // tile's), O is in units of 2^o_unit (moved to v_unit before each P V).
    int v_unit = -SHIFT_LIMIT, v_top = -SHIFT_LIMIT, o_unit = O_UNIT_NONE;
    for (uint t0 = block_keys.x; t0 < block_limit; t0 += BC) {
        bool every_key = t0 >= all_keys.x && t0 + BC <= all_keys.y;
        bool direct = direct_tile(job, t0);
        // A weight of 0 for a key some row may not see meets the tile's V
        // only off every_key or with a mask: the direct path scans V then
        // (the staged path flags it as it stages, each piece's staging
        // after a barrier that follows the last piece's read of the flag).
        bool scan = !every_key || KEYWISE_MASK;
        compute_scores(job, t0, block_limit, direct, scan, v_unit, v_top);
        softmax(job, t0, every_key, V_BF16 ? o_unit_factor(o_unit, v_unit) : 1.0);
        if (tile_flag(rescale_tile) == t0 + 1) {
            RESCALE_PIECE(o0, 0)
            RESCALE_PIECE(o1, 1)
            RESCALE_PIECE(o2, 2)
            RESCALE_PIECE(o3, 3)
        }
        WG_LOAD(p_a, BR, BC, p_tile, 0, PS, false);
        ADD_PV_PIECE(o0, 0)
        ADD_PV_PIECE(o1, 1)
        ADD_PV_PIECE(o2, 2)
        ADD_PV_PIECE(o3, 3)
    }

    // Each row's output scale (1 with a split, which writes m and l instead).
    barrier();  // the last tile's rescaling has read row_factor
    [[unroll]] for (uint pass = 0; pass < HELD; pass++) {
        uint r = held_rows[pass];
        uint row = job.first + r;
        Row w = held[pass];
        if (row_part() == 0)
            row_factor[r] = SPLIT ? 1.0
                                  : output_scale(w.m, w.l, row_sink(job.seq, w.h, w.i, w.slope));
        if (SPLIT && row_part() == 0 && row < job.rows) {
            uint record = partial_record(job.b * p.Hkv + job.g, job.split, row);
            o32[p.ml_offset + 2 * record] = w.m;
            o32[p.ml_offset + 2 * record + 1] = w.l;
        }
    }
    float o_scale = V_BF16 && o_unit != O_UNIT_NONE ? pow2(o_unit) : 1.0;
    WRITE_PIECE(o0, 0)
    WRITE_PIECE(o1, 1)
    WRITE_PIECE(o2, 2)
    WRITE_PIECE(o3, 3)
}
