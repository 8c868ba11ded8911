// Packed f16 arrays: uvec4 elements of PACK halves each, so that tiles are
// staged and matrix units load them 16 bytes at a time (the cooperative-matrix
// extensions let an array's type differ from its matrix's and count offsets
// and strides in the array's elements). PACKED_HALF(T, I) reads half I.
#ifndef PACKED_F16_GLSL
#define PACKED_F16_GLSL
const uint PACK = 8;    // halves per element of a packed f16 array (uvec4)
#define PACKED_HALF(T, I) float16_t(unpackHalf2x16((T)[(I) / PACK][(I) / 2u % 4u] >> 16u * ((I) % 2u)).x)

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
