#version 450
// Combines the split-key partial results of a fused attention kernel: for each
// packed row and four output columns, O = sum_s 2^(m_s - M) o_s / sum_s 2^(m_s - M) l_s
// with M the largest m_s (splits that saw no allowed key have m_s = -inf, l_s = 0
// and add nothing), the sink logit joining the denominator (attention_variants.glsl).
// A row with no allowed key at all gives zeros.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DV = 64;
layout(constant_id = 2) const bool VEC4 = true;  // DV % 4 == 0: vec4 stores
// constant_id 15: VARIANTS (attention_variants.glsl)

const uint DV4 = (DV + 3) / 4;
const uint SPLITS_PER_STEP = 8;

layout(set = 0, binding = 0) readonly buffer Partial32 { float partial32[]; };
layout(set = 0, binding = 0) readonly buffer Partial4 { vec4 partial4[]; };
layout(set = 0, binding = 3) writeonly buffer O32 { float o32[]; };
layout(set = 0, binding = 3) writeonly buffer O4 { vec4 o4[]; };

#include "attention_push.glsl"
#include "attention_variants.glsl"

void main()
{
    uint g = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    Sequence seq = sequence(b);
    uint rows = p.group * seq.Tq;
    uint r = gl_GlobalInvocationID.x / DV4, d4 = gl_GlobalInvocationID.x % DV4;
    if (r >= rows)
        return;
    uint problem = b * p.Hkv + g;

    // Splits are read SPLITS_PER_STEP at a time, each step's loads issued
    // before any is used: one invocation walks every split of its row, and a
    // loop that waited for each load in turn would pay a memory latency per
    // split on a GPU (a decode has about 128). Past the last split the last
    // record is read again (in range) and left out.
    float M = NEG_INF;
    for (uint s0 = 0; s0 < p.splits; s0 += SPLITS_PER_STEP) {
        float m[SPLITS_PER_STEP];
        for (uint u = 0; u < SPLITS_PER_STEP; u++)
            m[u] = partial32[p.ml_offset + 2 * partial_record(problem, min(s0 + u, p.splits - 1), r)];
        for (uint u = 0; u < SPLITS_PER_STEP; u++)
            M = max(M, m[u]);
    }
    float shift = M == NEG_INF ? 0.0 : M;
    float L = 0.0;
    vec4 acc = vec4(0.0);
    for (uint s0 = 0; s0 < p.splits; s0 += SPLITS_PER_STEP) {
        vec2 ml[SPLITS_PER_STEP];
        vec4 o[SPLITS_PER_STEP];
        for (uint u = 0; u < SPLITS_PER_STEP; u++) {
            uint record = partial_record(problem, min(s0 + u, p.splits - 1), r);
            ml[u] = vec2(partial32[p.ml_offset + 2 * record], partial32[p.ml_offset + 2 * record + 1]);
            o[u] = partial4[record * DV4 + d4];
        }
        for (uint u = 0; u < SPLITS_PER_STEP; u++) {
            if (s0 + u < p.splits) {
                float w = exp2(ml[u].x - shift);
                L += w * ml[u].y;
                acc += w * o[u];
            }
        }
    }
    uint h = g * p.group + r / seq.Tq, i = r % seq.Tq;
    vec4 v = acc * output_scale(M, L, h);
    uint base = b * p.o_sb + h * p.o_sh + (seq.q_first + i) * p.o_ss;
    if (VEC4) {
        o4[(base >> 2) + d4] = v;
    } else {
        for (uint c = 0; c < 4; c++)
            if (4 * d4 + c < DV)
                o32[base + 4 * d4 + c] = v[c];
    }
}
