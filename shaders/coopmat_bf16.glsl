// bf16 inputs of attention_coopmat.comp and attention_coopmat_workgroup.comp,
// converted to f16 exactly as they are staged: each group (a Q row, a key of K,
// a tile of V) divided by a power of 2 that puts its largest element in
// [2^15, 2^16) (see BF16_INPUTS there), undone in f32 on the scores and on O
// (not with attention_coopmat.comp's BF16_MATRICES: staged as they are).
// Included after the kernel's SG_SIZE and shared v_exponent.

// The powers of 2 of bf16 groups stay within f32's normal range, and so do
// their products' two factors (bf16_shift).
const int SHIFT_LIMIT = 112;
// o_unit before any P V: O is 0.
const int O_UNIT_NONE = -1000;
// The V unit is lowered to a tile's only when that is more than V_UNIT_SLACK
// below it (so that tiles of one scale never rescale O), and never more than
// V_UNIT_RANGE below the largest tile's (so that O, below 2^24 per key in the
// largest tile's unit, stays far below f32's 2^128 in the lower one). It is
// raised to every larger tile's, which must fit f16: the rows of a workgroup
// (a subgroup in attention_coopmat.comp) share O's unit, so where one V tile
// lies more than about 2^140 above an earlier one, a row that sees only the
// earlier keys underflows to 0 in f32 (bf16 V spanning 1e-20 to 1e22).
const int V_UNIT_SLACK = 8;
const int V_UNIT_RANGE = 64;

// The largest biased exponent among a packed element's eight finite bf16
// halves (0 when all are zero or subnormal).
uint bf16_max_exponent(uvec4 words)
{
    uvec4 lo = (words >> 7u) & 0xffu, hi = (words >> 23u) & 0xffu;
    lo = mix(lo, uvec4(0u), equal(lo, uvec4(0xffu)));   // Inf and NaN
    hi = mix(hi, uvec4(0u), equal(hi, uvec4(0xffu)));
    uvec4 m = max(lo, hi);
    return max(max(m.x, m.y), max(m.z, m.w));
}

// The power of 2 a bf16 group whose largest biased exponent is `e` is divided
// by: its largest element lands in [2^15, 2^16) (bf16's largest significand,
// 1.9921875, keeps it below f16's 65504).
int bf16_shift(uint e)
{
    return clamp(int(e) - 127 - 15, -SHIFT_LIMIT, SHIFT_LIMIT);
}

// 2^n, exactly (ldexp is; exp2 need not be), 0 below f32's range.
float pow2(int n)
{
    return ldexp(1.0, n);
}

// A packed element's eight bf16 halves as f16, divided by 2^shift (Inf and
// NaN stay what they are).
uvec4 bf16_to_f16(uvec4 words, int shift)
{
    float factor = pow2(-shift);
    uvec4 halves;
    [[unroll]] for (uint i = 0; i < 4; i++)
        halves[i] = packHalf2x16(uintBitsToFloat(uvec2(words[i] << 16, words[i] & 0xffff0000u)) *
                                 factor);
    return halves;
}

// A score s of bf16 inputs divided by q_factor and k_factor, restored in f32:
// the smaller factor first, so that no product overflows that the whole would
// not (one that underflows is a score too small to move the softmax).
float unscaled_score(float s, float q_factor, float k_factor)
{
    return s * min(q_factor, k_factor) * max(q_factor, k_factor);
}

// Raises the V tile's largest exponent, v_exponent[slot] (the kernel's shared
// words: 0, or a double-buffered kernel's slot of the tile), to `top`, this
// invocation's part: its subgroup's largest, one atomic a subgroup.
void raise_v_exponent(uint top, uint slot)
{
    for (uint offset = 1; offset < SG_SIZE; offset *= 2)
        top = max(top, subgroupShuffleXor(top, offset));
    if (gl_SubgroupInvocationID == 0)
        atomicMax(v_exponent[slot], top);
}

// The unit V tiles are staged in (2^v_unit) once a tile whose largest biased
// exponent is `e` joins: raised to the tile's, or lowered to it where it lies
// far below (V_UNIT_SLACK, V_UNIT_RANGE); v_top follows the largest tile's.
void next_v_unit(uint e, inout int v_unit, inout int v_top)
{
    int tile_shift = bf16_shift(e);
    v_top = max(v_top, tile_shift);
    if (tile_shift > v_unit || tile_shift < v_unit - V_UNIT_SLACK)
        v_unit = max(tile_shift, v_top - V_UNIT_RANGE);
}

// The factor O (in units of 2^o_unit) is multiplied by before a P V of V
// staged in units of 2^v_unit; o_unit follows v_unit.
float o_unit_factor(inout int o_unit, int v_unit)
{
    float factor = o_unit == O_UNIT_NONE || o_unit == v_unit ? 1.0 : pow2(o_unit - v_unit);
    o_unit = v_unit;
    return factor;
}
