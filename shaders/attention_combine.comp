#version 450
// Combines the split-key partial results of a fused attention kernel: for each
// packed row and four output columns, O = sum_s 2^(m_s - M) o_s / sum_s 2^(m_s - M) l_s
// with M the largest m_s (splits that saw no allowed key have m_s = -inf, l_s = 0
// and add nothing), the sink logit joining the denominator (attention_variants.glsl).
// A row with no allowed key at all gives zeros.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
#include "invocation_order.glsl"  // after the workgroup size it reads
layout(constant_id = 1) const uint DV = 64;
layout(constant_id = 2) const bool VEC4 = true;  // DV % 4 == 0: vec4 stores
// Invocations that share one column's splits (a column: a row's four output
// values), each walking every SPLIT_LANES-th split; their partial sums meet in
// shared memory. A decode has few rows and about 128 splits: one invocation
// walking them all waited for 16 rounds of loads (36 us of the H200's 71 us
// decode). The host picks it from the split count (attention_fused.c).
layout(constant_id = 3) const uint SPLIT_LANES = 1;
// constant_id 15: VARIANTS (attention_variants.glsl)

const uint DV4 = (DV + 3) / 4;
const uint SPLITS_PER_STEP = 8;
const uint COLUMNS = gl_WorkGroupSize.x / SPLIT_LANES;

layout(set = 0, binding = 0) readonly buffer Partial32 { float partial32[]; };
layout(set = 0, binding = 0) readonly buffer Partial4 { vec4 partial4[]; };
layout(set = 0, binding = 3) writeonly buffer O32 { float o32[]; };
layout(set = 0, binding = 3) writeonly buffer O4 { vec4 o4[]; };

shared float lane_m[gl_WorkGroupSize.x];
shared float lane_l[gl_WorkGroupSize.x];
shared vec4 lane_o[gl_WorkGroupSize.x];

#include "attention_push.glsl"
#include "attention_variants.glsl"

// (M, L, acc) += (m, l, o): both relative to their own maxima, -inf where no
// key was allowed (then l and o are 0). Nothing is skipped: a NaN from the
// inputs, which max() may not pass on, still reaches acc through its weight.
void merge(inout float M, inout float L, inout vec4 acc, float m, float l, vec4 o)
{
    float top = max(M, m), shift = top == NEG_INF ? 0.0 : top;
    float a = exp2(M - shift), w = exp2(m - shift);
    L = L * a + l * w;
    acc = acc * a + o * w;
    M = top;
}

#include "poison_shared.glsl"

// NaN in every word of shared memory first, with VKATTN_POISON=1
// (poison_shared.glsl): a read before the kernel's own write shows.
void poison_shared()
{
    if (!POISON_SHARED)
        return;
    POISON_FLOATS(lane_m)
    POISON_FLOATS(lane_l)
    POISON_VEC4S(lane_o)
    poison_shared_done();
}

void main()
{
    poison_shared();
    uint g = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    Sequence seq = sequence(b);
    uint rows = p.group * seq.Tq;
    uint lane = invocation_index() / COLUMNS;
    uint column = gl_WorkGroupID.x * COLUMNS + invocation_index() % COLUMNS;
    uint r = column / DV4, d4 = column % DV4;
    if (gl_WorkGroupID.x * COLUMNS >= rows * DV4)
        return; // the whole workgroup: no barrier is left waiting
    bool stores = r < rows;
    uint row = min(r, rows - 1); // lanes past the last row read it and store nothing
    uint problem = b * p.Hkv + g;

    // This lane's splits, SPLITS_PER_STEP at a time, each step's loads issued
    // before any is used, so that a lane waits for one memory latency a step,
    // not one a split. Past the last split the last record is read again (in
    // range) and left out.
    float M = NEG_INF, L = 0.0;
    vec4 acc = vec4(0.0);
    for (uint s0 = lane; s0 < p.splits; s0 += SPLITS_PER_STEP * SPLIT_LANES) {
        vec2 ml[SPLITS_PER_STEP];
        vec4 o[SPLITS_PER_STEP];
        for (uint u = 0; u < SPLITS_PER_STEP; u++) {
            uint record = partial_record(problem, min(s0 + u * SPLIT_LANES, p.splits - 1), row);
            ml[u] = vec2(partial32[p.ml_offset + 2 * record], partial32[p.ml_offset + 2 * record + 1]);
            o[u] = partial4[record * DV4 + d4];
        }
        float top = M;
        for (uint u = 0; u < SPLITS_PER_STEP; u++)
            if (s0 + u * SPLIT_LANES < p.splits)
                top = max(top, ml[u].x);
        float shift = top == NEG_INF ? 0.0 : top;
        float a = exp2(M - shift);
        L *= a;
        acc *= a;
        M = top;
        for (uint u = 0; u < SPLITS_PER_STEP; u++) {
            if (s0 + u * SPLIT_LANES < p.splits) {
                float w = exp2(ml[u].x - shift);
                L += w * ml[u].y;
                acc += w * o[u];
            }
        }
    }
    if (SPLIT_LANES > 1) {
        lane_m[invocation_index()] = M;
        lane_l[invocation_index()] = L;
        lane_o[invocation_index()] = acc;
        memoryBarrierShared();
        barrier();
        if (lane != 0)
            return;
        for (uint k = 1; k < SPLIT_LANES; k++) {
            uint j = k * COLUMNS + invocation_index();
            merge(M, L, acc, lane_m[j], lane_l[j], lane_o[j]);
        }
    }
    if (!stores)
        return;
    uint h = g * p.group + r / seq.Tq, i = r % seq.Tq;
    vec4 v = acc * output_scale(M, L, row_sink(seq, h, i, alibi_slope_log2e(h)));
    uint base = b * p.o_sb + h * p.o_sh + (seq.q_first + i) * p.o_ss;
    if (VEC4) {
        o4[(base >> 2) + d4] = v;
    } else {
        for (uint c = 0; c < 4; c++)
            if (4 * d4 + c < DV)
                o32[base + 4 * d4 + c] = v[c];
    }
}
