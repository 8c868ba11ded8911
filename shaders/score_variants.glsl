// The attention variants that change scores (DESIGN.md section 1), shared by
// the fused kernels (through attention_variants.glsl) and the unfused path's
// score pass (attention_scores.comp): the variant bit set, the sliding window's
// key range, soft-capping, ALiBi and the additive mask. Scores live in the exp2
// domain (scale * log2(e) already applied).
//
// VARIANTS is one bit set, specialization constant 15 of every attention kernel
// (keep in sync with the VAR_* bits and ATTENTION_VARIANTS_SPEC_ID in
// src/ops/attention_fused.h), so each unused variant compiles away. The mask,
// sinks and ALiBi slopes are bindings 8, 9 and 10 of every such kernel.
layout(constant_id = 15) const uint VARIANTS = 0u;
const uint VAR_WINDOW = 1u, VAR_SOFTCAP = 2u, VAR_ALIBI = 4u, VAR_MASK = 8u, VAR_SINKS = 16u,
           VAR_PACKED_Q = 32u, VAR_PACKED_K = 64u, VAR_PAGED = 128u, VAR_SEQ_Q_OFFSET = 256u,
           VAR_MASK_F16 = 512u, VAR_MASK_BF16 = 1024u, VAR_KV_LEN = 2048u,
           VAR_MASK_TEXELS = 4096u, VAR_MASK_TEXELS4 = 8192u, VAR_MASK_PER_ROW = 16384u;
const bool HAS_WINDOW = (VARIANTS & VAR_WINDOW) != 0u;
const bool HAS_SOFTCAP = (VARIANTS & VAR_SOFTCAP) != 0u;
const bool HAS_ALIBI = (VARIANTS & VAR_ALIBI) != 0u;
const bool HAS_MASK = (VARIANTS & VAR_MASK) != 0u;
const bool HAS_SINKS = (VARIANTS & VAR_SINKS) != 0u;
const bool PACKED_Q = (VARIANTS & VAR_PACKED_Q) != 0u;
const bool PACKED_K = (VARIANTS & VAR_PACKED_K) != 0u;
const bool PAGED = (VARIANTS & VAR_PAGED) != 0u;
const bool SEQ_Q_OFFSET = (VARIANTS & VAR_SEQ_Q_OFFSET) != 0u;
const bool SEQ_KV_LEN = (VARIANTS & VAR_KV_LEN) != 0u;
// The mask read through its texel view (the rows kernel on CPU devices, where a
// texel fetch is one gather and a storage load a loop over the lanes).
const bool MASK_TEXELS = (VARIANTS & VAR_MASK_TEXELS) != 0u;
// That texel view has four components (the rows kernel with four keys per
// step, Tk % 4 == 0): one fetch reads four keys' entries (mask_values4).
const bool MASK_TEXELS4 = (VARIANTS & VAR_MASK_TEXELS4) != 0u;
// The mask's last dimension is 1: one entry a row, for every key.
const bool MASK_PER_ROW = (VARIANTS & VAR_MASK_PER_ROW) != 0u;

// The mask element of key j for the row at position i of head h of batch
// entry b, from the mask's strides over (b, h, i).
uint mask_element(uint sb, uint sh, uint si, uint b, uint h, uint i, uint j)
{
    return b * sb + h * sh + i * si + (MASK_PER_ROW ? 0u : j);
}
const uint MASK_DTYPE = (VARIANTS & VAR_MASK_F16) != 0u ? DTYPE_F16
                        : (VARIANTS & VAR_MASK_BF16) != 0u ? DTYPE_BF16 : DTYPE_F32;
// Scores that may be -inf inside a row's key range (a -inf mask entry): such
// keys must be skipped, not weighted by 0, so a NaN in V cannot reach the row.
const bool KEYWISE_MASK = HAS_MASK;

// A key's weight exp2(s2 - shift) for the fused kernels' V loops. A key whose
// score is -inf (masked) must not touch the row, not even as 0 * NaN; a weight
// that merely underflowed to 0 is a key the row sees, and multiplies V as IEEE
// arithmetic has it (0 * NaN = NaN, as the CPU reference and float64 give).
// With KEYWISE_MASK the former weigh MASKED_WEIGHT (common.glsl), which
// weight_sum leaves out of the row's sum and weight_used out of O (with no mask,
// keys outside the row's range are the only masked ones, and the range checks
// skip them).
float key_weight(float s2, float shift)
{
    return KEYWISE_MASK && s2 == NEG_INF ? MASKED_WEIGHT : exp2(s2 - shift);
}
float weight_sum(float w) { return KEYWISE_MASK && w == MASKED_WEIGHT ? 0.0 : w; }
bool weight_used(float w) { return !KEYWISE_MASK || w != MASKED_WEIGHT; }

const float LOG2E = 1.4426950408889634;
layout(set = 0, binding = 8) readonly buffer Mask32 { float mask32[]; };
layout(set = 0, binding = 8) readonly buffer Mask16 { uint mask16[]; };
layout(set = 0, binding = 9) readonly buffer Sinks { float sinks[]; };
layout(set = 0, binding = 10) readonly buffer Alibi { float alibi[]; };
layout(set = 0, binding = TEXEL_BINDING(8)) uniform samplerBuffer mask_tex;

// Keys [x, y) inside the window of the row at key position pos (FlashAttention's
// window_size: a side of -1 is unbounded); all keys without a window.
ivec2 window_range(int pos, int left, int right)
{
    ivec2 r = ivec2(-0x7fffffff, 0x7fffffff);
    if (HAS_WINDOW && left >= 0)
        r.x = pos - left;
    if (HAS_WINDOW && right >= 0)
        r.y = pos + right + 1;
    return r;
}

// cap * tanh(s / cap) to float precision for any ratio. Small ratios take
// tanh(x) / x as its series (the terms left out are below 1e-8 at |x| < 1/4),
// not (1 - e) / (1 + e), which loses the digits of 1 - e as x shrinks and gives
// 0 once e rounds to 1 (a cap of 1e8 made every score 0); so a cap so large
// that s / cap underflows, or whose exp2-domain value overflowed to inf, leaves
// s as it is, as the definition does. Large ratios: e = exp(-2|x|), finite
// where the builtin tanh may overflow.
bool soft_cap_small(float s, float cap)
{
    return abs(s / cap) < 0.25;
}
float soft_cap_series(float s, float cap)
{
    float x = s / cap, x2 = x * x;
    return s * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0 +
                                                                x2 * (62.0 / 2835.0)))));
}
float soft_cap(float s, float cap)
{
    float r = soft_cap_series(s, cap); // computed anyway: cheaper than an else
    if (!soft_cap_small(s, cap)) {
        float e = exp2(-2.0 * LOG2E * abs(s / cap));
        r = cap * sign(s) * (1.0 - e) / (1.0 + e);
    }
    return r;
}

// Head h's ALiBi slope in the exp2 domain (0 without ALiBi): read once per row.
float alibi_slope_log2e(uint h)
{
    return HAS_ALIBI ? alibi[h] * LOG2E : 0.0;
}

// Mask element `mask_at` as a float.
float mask_value(uint mask_at)
{
    return MASK_TEXELS ? texelFetch(mask_tex, int(mask_at)).x
                       : LOAD_ELEMENT(MASK_DTYPE, mask32, mask16, mask_at);
}

// Mask elements mask_at .. mask_at + 3, mask_at % 4 == 0, in one fetch: only
// with MASK_TEXELS4.
vec4 mask_values4(uint mask_at)
{
    return texelFetch(mask_tex, int(mask_at >> 2));
}

// ALiBi's bias slope * (j - pos) is the same for every key of a row up to
// slope * (origin - pos), a constant of the row that the softmax cancels; so
// the kernels measure a row's distances from `origin`, the key position
// nearest pos among the sequence's `keys` (pos itself, where it is one), and
// move only the sink logit (sink_from_origin), the one term of the softmax
// the constant does not cancel in. In f32, j - pos itself would not do:
// with pos far from every key (|q_offset| up to 2^28 over a few keys) it
// rounds to a multiple of up to 16 (keys a few positions apart get one
// distance), and its bias, up to slope * 2^28, leaves no bits of the scores
// beside it. The distances from the origin stay below the sequence's length.
int alibi_origin_in(int pos, uint keys)
{
    return HAS_ALIBI ? clamp(pos, 0, max(int(keys) - 1, 0)) : pos;
}

// A sink logit (exp2 domain) moved for a row whose ALiBi distances are
// measured from `origin`: sink - slope * (origin - pos). A finite sink moved
// past f32's range stays the largest finite value: it takes all the weight,
// as it does against the keys' unmoved scores (an infinite one would give
// exp2(inf - inf) = NaN); an infinite sink stays what IEEE makes of it.
float sink_from_origin(float sink, float slope_log2e, int pos, int origin)
{
    if (!HAS_ALIBI)
        return sink;
    float moved = sink - slope_log2e * float(origin - pos);
    return isinf(moved) && !isinf(sink) ? sign(moved) * FLT_MAX : moved;
}

// ALiBi (slope from alibi_slope_log2e) and the mask entry m (0 without a mask)
// on a score s2 (exp2 domain, soft-capped already) whose key is `rel` = j -
// origin positions from the row's ALiBi origin (alibi_origin_in).
float shifted_score(float s2, float slope_log2e, int rel, float m)
{
    if (HAS_ALIBI)
        s2 += slope_log2e * float(rel);
    if (HAS_MASK) {
        // Only -inf masks a key: a finite entry stays finite in the exp2 domain,
        // where finfo(float32).min, HuggingFace's mask value, times log2 e would
        // overflow to -inf (a row masked so everywhere averages V, as in float64).
        float a = LOG2E * m;
        s2 += isinf(a) && !isinf(m) ? sign(m) * FLT_MAX : a;
    }
    return s2;
}

// Soft-capping, ALiBi (slope from alibi_slope_log2e) and the mask (element
// `mask_at`) on a score s2 (exp2 domain) whose key is `rel` = j - origin
// positions from the row's ALiBi origin.
float adjusted_score(float s2, float softcap_log2e, float slope_log2e, int rel, uint mask_at)
{
    if (HAS_SOFTCAP)
        s2 = soft_cap(s2, softcap_log2e);
    return shifted_score(s2, slope_log2e, rel, HAS_MASK ? mask_value(mask_at) : 0.0);
}
