// Push constants of the fused attention kernels (attention_rows.comp,
// attention_tiled.comp, attention_coopmat.comp, attention_combine.comp). Keep in sync with struct attention_push in
// src/ops/attention_fused.c.
//
// One problem is one (batch b, kv head g): its group = H / Hkv query heads share
// K and V, so their Tq rows each are packed into rows r = h_local * Tq + i
// (query head h = g * group + h_local, position i). Element (b, h, s, d) of a
// tensor is at b * sb + h * sh + s * ss + d: the strides give either layout.
// Packed and paged tensors have sb = 0 and s is their packed or cache row
// (attention_variants.glsl); Tq and Tk are then the longest sequences.
layout(push_constant) uniform Push {
    uint Tq, Tk, Hkv, group;
    uint q_sb, q_sh, q_ss;
    uint k_sb, k_sh, k_ss;
    uint v_sb, v_sh, v_ss;
    uint o_sb, o_sh, o_ss;
    int q_offset;
    float scale_log2e;      // scale * log2(e): scores live in the exp2 domain
    uint splits;            // key ranges per problem (1: no split)
    uint keys_per_split;
    uint ml_offset;         // where the (m, l) pairs start in the partial buffer
    // The variants (attention_variants.glsl); unused ones are 0.
    int window_left, window_right;   // -1: unbounded
    float softcap_log2e;             // softcap * log2(e)
    uint mask_sb, mask_sh, mask_si;  // mask element strides over (b, h, i)
    uint block_size, max_blocks;     // paged keys
    uint q_rows, k_rows;             // packed rows of Q and K, or cache blocks of K
    uint block_shift;                // log2(block_size), or 32 if not a power of 2
} p;

// Split-key partial results, one record per (problem, split, packed row):
// o (unnormalised, padded to a multiple of 4 floats) at record * DV4 * 4, and
// the running maximum and sum at ml_offset + record * 2.
uint partial_record(uint problem, uint split, uint row)
{
    return (problem * p.splits + split) * (p.group * p.Tq) + row;
}
