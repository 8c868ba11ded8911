#version 450
// Fused attention (flash attention) for devices whose invocations are the SIMD
// lanes of a CPU, such as lavapipe: no shared memory, no barriers, every input
// read through texel fetches (one vector gather each; storage-buffer loads there
// are a loop over the lanes).
//
// Each invocation owns one packed query row of one problem (b, kv head g; see
// attention_push.glsl) and one range of keys (split). The lanes of a SIMD vector
// hold neighbouring rows, so they fetch the same K and V texels. An invocation
// keeps its row of Q (pre-scaled into the exp2 domain) and of O in registers and
// walks its keys KB at a time: KB scores, the online softmax update (running
// maximum m and sum l, O rescaled as m grows), then O += P V. Keys past the
// row's causal limit or kv_len are never used: steps wholly above the diagonal
// are not visited, so causal attention does about half the work. With SPLIT the
// unnormalised O, m and l go to the partial buffer for attention_combine.comp;
// otherwise O / l is written (zeros for a row with no allowed key).
//
// Every loop over the head dimension has a constant trip count and is unrolled,
// so Q and O stay in (spilled) registers: lavapipe turns a dynamically indexed
// local array into a ladder of selects, which costs more than the arithmetic.
// Several rows per invocation were measured slower on lavapipe (compile time
// grows steeply and the spills cost more than the shared fetches save).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint KB = 4;        // keys per step
layout(constant_id = 2) const uint D = 64;        // head size of Q and K
layout(constant_id = 3) const uint DV = 64;       // head size of V and O
layout(constant_id = 4) const bool VEC4 = true;   // D, DV % 4 == 0: RGBA views, vec4 stores
layout(constant_id = 5) const bool CAUSAL = false;
layout(constant_id = 6) const bool HAS_KV_LEN = false;
layout(constant_id = 7) const bool SPLIT = false;

const uint D4 = (D + 3) / 4;
const uint DV4 = (DV + 3) / 4;

layout(set = 0, binding = 3) writeonly buffer O32 { float o32[]; };   // O, or the partials
layout(set = 0, binding = 3) writeonly buffer O4 { vec4 o4[]; };
layout(set = 0, binding = 4) readonly buffer KvLen { int kv_len[]; };
layout(set = 0, binding = TEXEL_BINDING(0)) uniform samplerBuffer q_tex;
layout(set = 0, binding = TEXEL_BINDING(1)) uniform samplerBuffer k_tex;
layout(set = 0, binding = TEXEL_BINDING(2)) uniform samplerBuffer v_tex;

#include "attention_push.glsl"

// Four elements of a head vector from `base` (an element index), zero past `width`.
vec4 fetch4(samplerBuffer tex, uint base, uint d4, uint width)
{
    if (VEC4)
        return texelFetch(tex, int((base >> 2) + d4));
    vec4 v = vec4(0.0);
    for (uint c = 0; c < 4; c++)
        if (4 * d4 + c < width)
            v[c] = texelFetch(tex, int(base + 4 * d4 + c)).x;
    return v;
}

void main()
{
    uint g = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    uint rows = p.group * p.Tq;
    uint row = gl_GlobalInvocationID.x % rows;
    uint split = gl_GlobalInvocationID.x / rows;
    if (split >= p.splits)
        return;
    uint h = g * p.group + row / p.Tq, i = row % p.Tq;
    uint key_begin = split * p.keys_per_split;
    uint limit = min(p.Tk, key_begin + p.keys_per_split);
    if (HAS_KV_LEN)
        limit = min(limit, uint(max(kv_len[b], 0)));
    if (CAUSAL)
        limit = min(limit, uint(max(int(i) + p.q_offset + 1, 0)));

    vec4 q[D4];
    uint q_base = b * p.q_sb + h * p.q_sh + i * p.q_ss;
    for (uint d4 = 0; d4 < D4; d4++)
        q[d4] = fetch4(q_tex, q_base, d4, D) * p.scale_log2e;
    uint k_base = b * p.k_sb + g * p.k_sh;
    uint v_base = b * p.v_sb + g * p.v_sh;

    float m = NEG_INF, l = 0.0;
    vec4 o[DV4];
    for (uint d4 = 0; d4 < DV4; d4++)
        o[d4] = vec4(0.0);

    for (uint j0 = key_begin; j0 < limit; j0 += KB) {
        // Keys past the limit in the last step re-read the last allowed key and
        // are masked below.
        float s[KB];
        for (uint c = 0; c < KB; c++)
            s[c] = 0.0;
        for (uint d4 = 0; d4 < D4; d4++)
            for (uint c = 0; c < KB; c++)
                s[c] += dot(q[d4], fetch4(k_tex, k_base + min(j0 + c, limit - 1) * p.k_ss, d4, D));

        // Online softmax. Masked scores become -inf and so weights of exactly 0;
        // while the row has seen nothing but -inf, shifting by 0 keeps exp2 finite.
        float step_max = NEG_INF;
        for (uint c = 0; c < KB; c++) {
            s[c] = j0 + c < limit ? s[c] : NEG_INF;
            step_max = max(step_max, s[c]);
        }
        float m_new = max(m, step_max);
        float shift = m_new == NEG_INF ? 0.0 : m_new;
        float alpha = exp2(m - shift);
        float sum = 0.0;
        for (uint c = 0; c < KB; c++) {
            s[c] = exp2(s[c] - shift);
            sum += s[c];
        }
        l = l * alpha + sum;
        m = m_new;

        // O = alpha O + P V. Keys past the limit are skipped rather than weighted
        // by 0, so a NaN or Inf in V there cannot reach the row.
        bool whole_step = j0 + KB <= limit;
        for (uint d4 = 0; d4 < DV4; d4++) {
            vec4 acc = o[d4] * alpha;
            for (uint c = 0; c < KB; c++) {
                vec4 v = fetch4(v_tex, v_base + min(j0 + c, limit - 1) * p.v_ss, d4, DV);
                vec4 updated = fma(vec4(s[c]), v, acc);
                acc = whole_step || j0 + c < limit ? updated : acc;
            }
            o[d4] = acc;
        }
    }

    if (SPLIT) {
        uint record = partial_record(b * p.Hkv + g, split, row);
        for (uint d4 = 0; d4 < DV4; d4++)
            o4[record * DV4 + d4] = o[d4];
        o32[p.ml_offset + 2 * record] = m;
        o32[p.ml_offset + 2 * record + 1] = l;
        return;
    }
    float inv = l == 0.0 ? 0.0 : 1.0 / l;
    uint out_base = b * p.o_sb + h * p.o_sh + i * p.o_ss;
    for (uint d4 = 0; d4 < DV4; d4++) {
        vec4 v = o[d4] * inv;
        if (VEC4) {
            o4[(out_base >> 2) + d4] = v;
        } else {
            for (uint c = 0; c < 4; c++)
                if (4 * d4 + c < DV)
                    o32[out_base + 4 * d4 + c] = v[c];
        }
    }
}
