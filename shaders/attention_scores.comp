#version 450
// The unfused path's score pass: over a chunk of materialised raw scores
// S = Q K^T (rows [r0, r0 + rows) of heads [z0, z0 + heads), Tk each, as
// attention_unfused.c lays them out), s = scale * S with the score variants
// applied (soft-capping, ALiBi, the mask; score_variants.glsl) and keys outside
// the sliding window set to -inf, written back in place in the exp2 domain. The
// softmax that follows (scale ln 2, so its exponent is exactly 2^s) masks
// causality and kv_len itself and adds the sinks. One invocation per score;
// the kernel uses no subgroup operations.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
// constant_id 15: VARIANTS (score_variants.glsl)

layout(set = 0, binding = 0) buffer Scores { float scores[]; };

// Keep in sync with struct scores_push in src/ops/attention_unfused.c.
layout(push_constant) uniform Push {
    uint count;            // scores in the chunk
    uint Tk, rows, heads;  // row length, query rows and heads in the chunk
    uint z0, r0;           // the chunk's first head (b * H + h) and query row
    uint H;
    int q_offset;
    float scale_log2e;
    float softcap_log2e;
    int window_left, window_right;
    uint mask_sb, mask_sh, mask_si;
} p;

#include "score_variants.glsl"

void main()
{
    uint e = linear_workgroup_index() * gl_WorkGroupSize.x + gl_LocalInvocationIndex;
    if (e >= p.count)
        return;
    uint x = e / p.Tk, j = e % p.Tk;
    uint z = p.z0 + x / p.rows, i = p.r0 + x % p.rows;
    uint b = z / p.H, h = z % p.H;
    int pos = int(i) + p.q_offset;
    ivec2 window = window_range(pos, p.window_left, p.window_right);
    float s2 = NEG_INF;
    if (int(j) >= window.x && int(j) < window.y)
        s2 = adjusted_score(scores[e] * p.scale_log2e, p.softcap_log2e, alibi_slope_log2e(h),
                            int(j) - alibi_origin_in(pos, p.Tk),
                            mask_element(p.mask_sb, p.mask_sh, p.mask_si, b, h, i, j));
    scores[e] = s2;
}
