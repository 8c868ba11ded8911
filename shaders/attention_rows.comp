#version 450
// Fused attention (flash attention) for devices whose invocations are the SIMD
// lanes of a CPU, such as lavapipe: no shared memory, no barriers, every input
// read through texel fetches (one vector gather each; storage-buffer loads there
// are a loop over the lanes).
//
// Each invocation owns TM packed query rows of one problem (b, kv head g; see
// attention_push.glsl) and one range of keys (split); the lanes of a SIMD vector
// hold neighbouring rows (or, decoding from token-major K and V, neighbouring
// kv heads: HEADS_IN_LANES) and fetch the same K and V texels, so the gathers, not
// the arithmetic, bound the kernel, and TM rows per invocation divide them by
// TM. An invocation keeps its rows of Q (pre-scaled into the exp2 domain) and O
// in registers and walks its keys KB at a time: KB scores per row, the online
// softmax update (running maximum m and sum l, O rescaled as m grows), then
// O += P V. Keys outside a row's range (causality, kv_len, a window) are never
// used: steps outside every row's range are not visited, so causal attention
// does about half the work and a window of W keys costs O(W) per row. With SPLIT the unnormalised O, m and l go to the partial
// buffer for attention_combine.comp; otherwise O / l is written (zeros for a
// row with no allowed key).
//
// Q and O stay in registers only if every index into them is a constant:
// lavapipe turns a dynamically indexed local array into a ladder of selects,
// and its loop unroller gives up on the loops over the head dimension once a
// kernel holds more than a row or two. So with UNROLL those loops are unrolled
// here, by REPEAT32 over every possible d4 with the unused ones folded away at
// specialisation. Without UNROLL (head sizes past 128, where the unrolled kernel
// takes seconds to compile) they stay loops.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint KB = 4;        // keys per step
layout(constant_id = 2) const uint D = 64;        // head size of Q and K, at most 256
layout(constant_id = 3) const uint DV = 64;       // head size of V and O, at most 256
layout(constant_id = 4) const bool VEC4 = true;   // D, DV % 4 == 0: RGBA views, vec4 stores
layout(constant_id = 5) const bool CAUSAL = false;
layout(constant_id = 6) const bool SPLIT = false;
layout(constant_id = 7) const uint TM = 1;        // query rows per invocation
layout(constant_id = 8) const bool UNROLL = true;   // only with D, DV <= 128
// Neighbouring invocations take neighbouring kv heads (the grid's y is 1):
// for K and V stored token-major (BSHD, packed, paged), where a key's heads
// share one row, a gather then reads one stretch of that row and the lanes walk
// it key after key; with a split per lane they would each jump a row per key.
layout(constant_id = 9) const bool HEADS_IN_LANES = false;
// Which of Q, K and V (bits 0, 1, 2) are bf16, read through the views of their
// bits (q_bits, ...) instead of their float views.
layout(constant_id = 10) const uint BF16_INPUTS = 0;
// constant_id 15: VARIANTS (attention_variants.glsl), kv_len among them

const uint D4 = (D + 3) / 4;
const uint DV4 = (DV + 3) / 4;

// STEP(d4) for d4 = 0 .. D4-1 (or DV4-1): unrolled (head sizes up to 128), or a loop.
#define REPEAT8(X, b) X((b + 0u)) X((b + 1u)) X((b + 2u)) X((b + 3u)) X((b + 4u)) X((b + 5u)) X((b + 6u)) X((b + 7u))
#define REPEAT32(X) REPEAT8(X, 0u) REPEAT8(X, 8u) REPEAT8(X, 16u) REPEAT8(X, 24u)
#define FOR_EACH_D4(STEP, COUNT)                        \
    if (UNROLL) {                                       \
        REPEAT32(STEP)                                  \
    } else {                                            \
        for (uint d4_ = 0; d4_ < COUNT; d4_++)          \
            STEP(d4_)                                   \
    }

layout(set = 0, binding = 3) writeonly buffer O32 { float o32[]; };   // O, or the partials
layout(set = 0, binding = 3) writeonly buffer O4 { vec4 o4[]; };
// Q, K and V through float views (f32, f16), or where bf16 (no texel format
// reads bf16 as a float) through R16_UINT views of their bits, widened here: a
// bf16 value is the top half of the f32 with the same bits. The bits views sit
// in the texel slots of bindings 4-6 (ATTENTION_QKV_BITS_TEXELS), which kv_len
// and cu_seqlens, read as storage buffers, leave free. Only the view that
// BF16_INPUTS picks is read.
layout(set = 0, binding = TEXEL_BINDING(0)) uniform samplerBuffer q_tex;
layout(set = 0, binding = TEXEL_BINDING(1)) uniform samplerBuffer k_tex;
layout(set = 0, binding = TEXEL_BINDING(2)) uniform samplerBuffer v_tex;
layout(set = 0, binding = TEXEL_BINDING(4)) uniform usamplerBuffer q_bits;
layout(set = 0, binding = TEXEL_BINDING(5)) uniform usamplerBuffer k_bits;
layout(set = 0, binding = TEXEL_BINDING(6)) uniform usamplerBuffer v_bits;

#include "attention_push.glsl"
#include "attention_variants.glsl"

#define INPUT_Q 0u
#define INPUT_K 1u
#define INPUT_V 2u

vec4 widen_bf16(uvec4 bits) { return uintBitsToFloat(bits << 16); }

// Texel `i` of Q, K or V (1 or 4 elements, as the plan's views have).
vec4 texel(uint which, int i)
{
    if ((BF16_INPUTS & (1u << which)) != 0u) {
        if (which == INPUT_Q)
            return widen_bf16(texelFetch(q_bits, i));
        if (which == INPUT_K)
            return widen_bf16(texelFetch(k_bits, i));
        return widen_bf16(texelFetch(v_bits, i));
    }
    if (which == INPUT_Q)
        return texelFetch(q_tex, i);
    if (which == INPUT_K)
        return texelFetch(k_tex, i);
    return texelFetch(v_tex, i);
}

// Four elements of a head vector from `base` (an element index), zero past `width`.
vec4 fetch4(uint which, uint base, uint d4, uint width)
{
    if (VEC4)
        return texel(which, int((base >> 2) + d4));
    vec4 v = vec4(0.0);
    for (uint c = 0; c < 4; c++)
        if (4 * d4 + c < width)
            v[c] = texel(which, int(base + 4 * d4 + c)).x;
    return v;
}

void main()
{
    uint x = gl_GlobalInvocationID.x, g = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    if (HEADS_IN_LANES) {
        g = x % p.Hkv;
        x /= p.Hkv;
    }
    Sequence seq = sequence(b);
    uint rows = p.group * seq.Tq;
    uint blocks = (p.group * p.Tq + TM - 1) / TM;
    uint block = x % blocks;
    uint split = x / blocks;
    if (split >= p.splits || block * TM >= rows)
        return;
    uint key_begin = split * p.keys_per_split;
    uint key_end = min(p.Tk, key_begin + p.keys_per_split);

    // This invocation's rows (past the last row: the last row again, not
    // stored): where they read and write, and which keys each may see.
    uint q_base[TM], out_base[TM], lo[TM], limit[TM], head[TM], position[TM];
    float slope[TM];
    uint min_lo = key_end, max_lo = key_begin, max_limit = key_begin, min_limit = key_end;
    for (uint t = 0; t < TM; t++) {
        uint r = min(block * TM + t, rows - 1);
        uint h = g * p.group + r / seq.Tq, i = r % seq.Tq;
        q_base[t] = b * p.q_sb + h * p.q_sh + (seq.q_first + i) * p.q_ss;
        out_base[t] = b * p.o_sb + h * p.o_sh + (seq.q_first + i) * p.o_ss;
        head[t] = h, position[t] = i;
        slope[t] = alibi_slope_log2e(h);
        uvec2 keys = split_keys(key_range(seq, CAUSAL, i), key_begin, key_end);
        lo[t] = keys.x, limit[t] = keys.y;
        if (keys.x < keys.y) { // the steps to visit: those some row uses
            min_lo = min(min_lo, keys.x);
            max_limit = max(max_limit, keys.y);
        }
        max_lo = max(max_lo, keys.x); // whole steps: those every row uses
        min_limit = min(min_limit, keys.y);
    }
    uint k_base = b * p.k_sb + g * p.k_sh;
    uint v_base = b * p.v_sb + g * p.v_sh;

    vec4 q[TM * D4];
    vec4 o[TM * DV4];
    float m[TM], l[TM];
#define LOAD_Q(d4)                                                              \
    if (d4 < D4)                                                                \
        for (uint t = 0; t < TM; t++)                                           \
            q[t * D4 + d4] = fetch4(INPUT_Q, q_base[t], d4, D) * p.scale_log2e;
#define CLEAR_O(d4)                                                             \
    if (d4 < DV4)                                                               \
        for (uint t = 0; t < TM; t++)                                           \
            o[t * DV4 + d4] = vec4(0.0);
    FOR_EACH_D4(LOAD_Q, D4)
    FOR_EACH_D4(CLEAR_O, DV4)
    for (uint t = 0; t < TM; t++) {
        m[t] = NEG_INF;
        l[t] = 0.0;
    }

    // A paged cache's block-table entry is read once per page, not per key:
    // the steps walk the keys in order.
    uint cached_page = ~0u, cached_base = 0u;
    // With MASK_TEXELS4 (KB = 4) the steps start at a multiple of 4, so that a
    // step's mask entries are one aligned texel; the keys before min_lo that
    // this adds are outside every row's range, so never used.
    uint first_step = MASK_TEXELS4 && min_lo < max_limit ? min_lo & ~3u : min_lo;
    for (uint j0 = first_step; j0 < max_limit; j0 += KB) {
        // Keys past the limit in the last step re-read the last allowed key and
        // are masked below.
        float s[TM * KB];
        for (uint x = 0; x < TM * KB; x++)
            s[x] = 0.0;
        // Where the step's keys are, found once for every dimension.
        uint key_at[KB];
        if (PAGED) {
            for (uint c = 0; c < KB; c++) {
                uint j = min(j0 + c, max_limit - 1), page = page_of(j);
                if (page != cached_page) {
                    cached_page = page;
                    cached_base = page_base(b, page);
                }
                key_at[c] = cached_base + (j - page * p.block_size);
            }
        } else {
            for (uint c = 0; c < KB; c++)
                key_at[c] = key_row(b, seq, min(j0 + c, max_limit - 1));
        }
#define SCORE_STEP(d4)                                                          \
        if (d4 < D4)                                                            \
            for (uint c = 0; c < KB; c++) {                                     \
                vec4 k = fetch4(INPUT_K, k_base + key_at[c] * p.k_ss, d4, D); \
                for (uint t = 0; t < TM; t++)                                   \
                    s[t * KB + c] += dot(q[t * D4 + d4], k);                    \
            }
        FOR_EACH_D4(SCORE_STEP, D4)

        // Soft-capping for the whole step at once: its series alone unless a
        // score of the step needs the exp2 form (then soft_cap per score). The
        // common case is one branch a step rather than one a score, which on a
        // CPU device keeps the scores' arithmetic together.
        if (HAS_SOFTCAP) {
            bool small = true;
            for (uint x = 0; x < TM * KB; x++)
                small = small && soft_cap_small(s[x], p.softcap_log2e);
            if (small) {
                for (uint x = 0; x < TM * KB; x++)
                    s[x] = soft_cap_series(s[x], p.softcap_log2e);
            } else {
                for (uint x = 0; x < TM * KB; x++)
                    s[x] = soft_cap(s[x], p.softcap_log2e);
            }
        }

        // Online softmax. Masked scores become -inf and so weights of exactly 0;
        // while a row has seen nothing but -inf, shifting by 0 keeps exp2 finite.
        float alpha[TM];
        for (uint t = 0; t < TM; t++) {
            float step_max = NEG_INF;
            vec4 mask4 = MASK_TEXELS4 ? mask_values4(mask_index(b, head[t], position[t], j0))
                                      : vec4(0.0);
            for (uint c = 0; c < KB; c++) {
                uint j = j0 + c;
                bool seen = j >= lo[t] && j < limit[t];
                // Mask entries of keys the row sees only: past them (up to KB - 1
                // keys past the sequence's last) the index may pass the mask's end.
                float mask = !HAS_MASK || !seen ? 0.0
                             : MASK_TEXELS4 ? mask4[c & 3u]
                             : mask_value(mask_index(b, head[t], position[t], j));
                int rel = int(j) - alibi_origin(seq, position[t]);
                s[t * KB + c] = seen ? shifted_score(s[t * KB + c], slope[t], rel, mask) : NEG_INF;
                step_max = max(step_max, s[t * KB + c]);
            }
            float m_new = max(m[t], step_max);
            float shift = m_new == NEG_INF ? 0.0 : m_new;
            alpha[t] = exp2(m[t] - shift);
            float sum = 0.0;
            for (uint c = 0; c < KB; c++) {
                s[t * KB + c] = key_weight(s[t * KB + c], shift);
                sum += weight_sum(s[t * KB + c]);
            }
            l[t] = l[t] * alpha[t] + sum;
            m[t] = m_new;
        }

        // O = alpha O + P V. Keys outside a row's range (or masked to -inf) are
        // skipped rather than weighted by 0, so a NaN or Inf in V there cannot
        // reach the row (key_weight).
        bool whole_step = !KEYWISE_MASK && j0 >= max_lo && j0 + KB <= min_limit;
#define VALUE_STEP(d4)                                                          \
        if (d4 < DV4) {                                                         \
            vec4 v[KB];                                                         \
            for (uint c = 0; c < KB; c++)                                       \
                v[c] = fetch4(INPUT_V, v_base + key_at[c] * p.v_ss, d4, DV); \
            for (uint t = 0; t < TM; t++) {                                     \
                vec4 acc = o[t * DV4 + d4] * alpha[t];                          \
                for (uint c = 0; c < KB; c++) {                                 \
                    vec4 updated = fma(vec4(s[t * KB + c]), v[c], acc);         \
                    bool used = j0 + c >= lo[t] && j0 + c < limit[t] &&         \
                                weight_used(s[t * KB + c]);                         \
                    acc = whole_step || used ? updated : acc;                   \
                }                                                               \
                o[t * DV4 + d4] = acc;                                          \
            }                                                                   \
        }
        FOR_EACH_D4(VALUE_STEP, DV4)
    }

    // Unnormalised O with m and l for the combine pass, or O / l.
    float scale_out[TM];
    uint record_base = partial_record(b * p.Hkv + g, split, 0);
    for (uint t = 0; t < TM; t++) {
        uint row = block * TM + t;
        float sink = row_sink(seq, head[t], position[t], slope[t]);
        scale_out[t] = SPLIT ? 1.0 : output_scale(m[t], l[t], sink);
        if (SPLIT && row < rows) {
            o32[p.ml_offset + 2 * (record_base + row)] = m[t];
            o32[p.ml_offset + 2 * (record_base + row) + 1] = l[t];
        }
    }
#define STORE_O(d4)                                                             \
    if (d4 < DV4)                                                               \
        for (uint t = 0; t < TM; t++) {                                         \
            uint row = block * TM + t;                                          \
            vec4 v = o[t * DV4 + d4] * scale_out[t];                            \
            if (row >= rows)                                                    \
                continue;                                                       \
            if (SPLIT)                                                          \
                o4[(record_base + row) * DV4 + d4] = v;                         \
            else if (VEC4)                                                      \
                o4[(out_base[t] >> 2) + d4] = v;                                \
            else                                                                \
                for (uint c = 0; c < 4; c++)                                    \
                    if (4 * d4 + c < DV)                                        \
                        o32[out_base[t] + 4 * d4 + c] = v[c];                   \
        }
    FOR_EACH_D4(STORE_O, DV4)
}
