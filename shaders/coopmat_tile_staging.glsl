// K and V tiles of attention_coopmat.comp into shared memory: staged as they
// are loaded (one stage), or loaded into registers and stored once the
// previous tile is done with (two stages), bf16 converted to f16 on the way
// (coopmat_bf16.glsl). Macros over the kernel's own names (t0, block_limit,
// b, seq, tid, key_row, v_nonfinite_tile), expanded in its staging functions.
// A kernel that double-buffers its tiles (attention_coopmat.comp's BUFFERS)
// names the BUFFER to stage into: BUFFER tiles of BC keys into TILE, and four
// words of v_nonfinite_tile a buffer; others pass 0.

// Nonzero where any of the eight halves (f16, or bf16 with OPERANDS_BF16) is
// an Inf or a NaN (exponent all ones): a half's exponent plus one carries into
// its top bit only then, and the low half's sum stays below the high half.
// One add and two logic operations a word, ORed over the loads of a tile
// before the one branch.
uint nonfinite_bits(uvec4 words)
{
    uint exponent = OPERANDS_BF16 ? 0x7f807f80u : 0x7c007c00u;
    uint lowest = OPERANDS_BF16 ? 0x00800080u : 0x04000400u;
    uvec4 carried = (words & exponent) + lowest;
    return (carried.x | carried.y | carried.z | carried.w) & 0x80008000u;
}

// Stages WIDTH (padded to WIDTH_P, a multiple of PACK) elements of each key of
// the tile into the packed TILE's BUFFER, rows TILE_STRIDE halves apart, PACK at a time:
// one 16-byte load where every row starts 8-element aligned (ALIGNED8) and
// WIDTH is a multiple of 8, else gathered; zeros past `limit` and past WIDTH.
// With NONFINITE, a key of the tile holding an Inf or NaN is flagged in
// the buffer's words of v_nonfinite_tile.
#define STAGE_TILE(TILE, TILE_STRIDE, BUFFER, BUF, BUF8, BASE, STRIDE, WIDTH, WIDTH_P, ALIGNED8,  \
                   NONFINITE)                                                                    \
    for (uint e = tid; e < BC * (WIDTH_P) / PACK; e += WG) {                                     \
        uint c = e / ((WIDTH_P) / PACK), d = e % ((WIDTH_P) / PACK) * PACK, key = t0 + c;        \
        uvec4 words = uvec4(0);                                                                  \
        if (!ABLATE_LOADS && key < block_limit && d < (WIDTH)) {                                 \
            uint first_ = (BASE) + key_row(b, seq, key) * (STRIDE) + d;                          \
            if ((WIDTH) % PACK == 0 && (ALIGNED8))                                               \
                words = BUF8[first_ >> 3];                                                       \
            else                                                                                 \
                GATHER_HALVES(words, BUF, first_, min(PACK, (WIDTH) - d));                       \
        }                                                                                        \
        TILE[(((BUFFER) * BC + c) * (TILE_STRIDE) + d) / PACK] = words;                          \
        if (NONFINITE && nonfinite_bits(words) != 0u)                                            \
            atomicMax(v_nonfinite_tile[4u * (BUFFER) + (tid & 3u)], t0 + 1);                     \
    }

// Two stages (or bf16 inputs): LOAD_TILE reads this thread's LOADS packed
// elements of the tile of keys from T into the registers WORDS (as STAGE_TILE
// would stage them), STORE_TILE writes them to the packed TILE once the
// previous tile is done with, converted from bf16 (BF16) divided by 2^SHIFT
// (an expression of the element's key c), into TILE's BUFFER. KEY_EXPONENTS
// raises each key's entry of EXPONENTS (from AT) to its elements' largest bf16
// exponent.
#define LOAD_TILE(WORDS, LOADS, T, BUF, BUF8, BASE, STRIDE, WIDTH, WIDTH_P, ALIGNED8)              \
    [[unroll]] for (uint i_ = 0; i_ < (LOADS); i_++) {                                           \
        uint e = tid + i_ * WG, c = e / ((WIDTH_P) / PACK), d = e % ((WIDTH_P) / PACK) * PACK;   \
        uint key = (T) + c;                                                                      \
        WORDS[i_] = uvec4(0);                                                                    \
        if (!ABLATE_LOADS && e < BC * (WIDTH_P) / PACK && key < block_limit && d < (WIDTH)) {    \
            uint first_ = (BASE) + key_row(b, seq, key) * (STRIDE) + d;                          \
            if ((WIDTH) % PACK == 0 && (ALIGNED8))                                               \
                WORDS[i_] = BUF8[first_ >> 3];                                                   \
            else                                                                                 \
                GATHER_HALVES(WORDS[i_], BUF, first_, min(PACK, (WIDTH) - d));                   \
        }                                                                                        \
    }
#define STORE_TILE(TILE, TILE_STRIDE, BUFFER, WORDS, LOADS, WIDTH_P, NONFINITE, BF16, SHIFT)    \
    {                                                                                            \
        uint nonfinite_ = 0u;                                                                    \
        [[unroll]] for (uint i_ = 0; i_ < (LOADS); i_++) {                                       \
            uint e = tid + i_ * WG, c = e / ((WIDTH_P) / PACK), d = e % ((WIDTH_P) / PACK) * PACK; \
            if (e < BC * (WIDTH_P) / PACK) {                                                     \
                uvec4 words = (BF16) ? bf16_to_f16(WORDS[i_], (SHIFT)) : WORDS[i_];              \
                TILE[(((BUFFER) * BC + c) * (TILE_STRIDE) + d) / PACK] = words;                  \
                if (NONFINITE)                                                                   \
                    nonfinite_ |= nonfinite_bits(words);                                         \
            }                                                                                    \
        }                                                                                        \
        if (nonfinite_ != 0u)                                                                    \
            atomicMax(v_nonfinite_tile[4u * (BUFFER) + (tid & 3u)], t0 + 1);                     \
    }
#define KEY_EXPONENTS(EXPONENTS, AT, WORDS, LOADS, WIDTH_P)                                      \
    [[unroll]] for (uint i_ = 0; i_ < (LOADS); i_++) {                                           \
        uint e = tid + i_ * WG;                                                                  \
        if (e < BC * (WIDTH_P) / PACK)                                                           \
            atomicMax(EXPONENTS[(AT) + e / ((WIDTH_P) / PACK)], bf16_max_exponent(WORDS[i_]));   \
    }

// One stage, bf16: the same over the packed elements this thread staged into
// TILE as they were (STAGE_TILE), read back by the thread that wrote them;
// then, once the exponents are known, each converted in place from bf16,
// divided by 2^SHIFT, as STORE_TILE converts them.
#define TILE_KEY_EXPONENTS(EXPONENTS, TILE, TILE_STRIDE, WIDTH_P)                                \
    for (uint e = tid; e < BC * (WIDTH_P) / PACK; e += WG) {                                     \
        uint c = e / ((WIDTH_P) / PACK), d = e % ((WIDTH_P) / PACK) * PACK;                      \
        atomicMax(EXPONENTS[c], bf16_max_exponent(TILE[(c * (TILE_STRIDE) + d) / PACK]));        \
    }
#define CONVERT_TILE(TILE, TILE_STRIDE, WIDTH_P, NONFINITE, SHIFT)                               \
    for (uint e = tid; e < BC * (WIDTH_P) / PACK; e += WG) {                                     \
        uint c = e / ((WIDTH_P) / PACK), d = e % ((WIDTH_P) / PACK) * PACK;                      \
        uint at_ = (c * (TILE_STRIDE) + d) / PACK;                                               \
        uvec4 words = bf16_to_f16(TILE[at_], (SHIFT));                                           \
        TILE[at_] = words;                                                                       \
        if (NONFINITE && nonfinite_bits(words) != 0u)                                            \
            atomicMax(v_nonfinite_tile[tid & 3u], t0 + 1);                                       \
    }
