// Packed f16 arrays: uvec4 elements of PACK halves each, so that tiles are
// staged and matrix units load them 16 bytes at a time (the cooperative-matrix
// extensions let an array's type differ from its matrix's and count offsets
// and strides in the array's elements). PACKED_HALF(T, I) reads half I.
#ifndef PACKED_F16_GLSL
#define PACKED_F16_GLSL
const uint PACK = 8;    // halves per element of a packed f16 array (uvec4)
#define PACKED_HALF(T, I) float16_t(unpackHalf2x16((T)[(I) / PACK][(I) / 2u % 4u] >> 16u * ((I) % 2u)).x)
// The bits of half I.
#define PACKED_BITS(T, I) ((T)[(I) / PACK][(I) / 2u % 4u] >> 16u * ((I) % 2u) & 0xffffu)

// A kernel whose matrices take bf16 operands (OPERANDS_BF16, which the
// includer may define first: a constant expression) keeps bf16 bits in its
// packed arrays instead of f16 ones. PACKED_OPERAND(T, I) reads half I as a
// float either way; pack_operands writes two, rounded to nearest even.
#ifndef OPERANDS_BF16
#define OPERANDS_BF16 false
#endif
float operand_value(uint bits)
{
    return OPERANDS_BF16 ? uintBitsToFloat(bits << 16u) : unpackHalf2x16(bits).x;
}
#define PACKED_OPERAND(T, I) operand_value(PACKED_BITS(T, I))

// x as bf16 bits, rounded to nearest even (NaN kept a NaN).
uint bf16_bits(float x)
{
    uint u = floatBitsToUint(x);
    return isnan(x) ? 0x7fc0u : (u + 0x7fffu + (u >> 16u & 1u)) >> 16u;
}
uint pack_operands(vec2 v)
{
    return OPERANDS_BF16 ? bf16_bits(v.x) | bf16_bits(v.y) << 16u : packHalf2x16(v);
}

// Gathers COUNT (at most PACK) halves of the 16-bit buffer BUF from element
// FIRST into the zeroed uvec4 WORDS, bits unchanged: rows that are not
// 8-element aligned, or shorter.
#define GATHER_HALVES(WORDS, BUF, FIRST, COUNT)                                                 \
    [[unroll]] for (uint h_ = 0; h_ < PACK; h_++)                                                \
        if (h_ < (COUNT)) {                                                                      \
            uint index_ = (FIRST) + h_;                                                          \
            uint bits_ = BUF[index_ >> 1] >> (16u * (index_ & 1u)) & 0xffffu;                    \
            WORDS[h_ / 2u] |= bits_ << (16u * (h_ & 1u));                                        \
        }
#endif
