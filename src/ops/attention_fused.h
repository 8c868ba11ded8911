/* The fused attention variants. attention_fused.c holds their table and the one
 * function that chooses from it; each variant's file says what it needs from
 * the device and the problem (its planner fails with the reason) and how its
 * kernel is specialized. A new kernel is a new row. */
#ifndef VKATTN_ATTENTION_FUSED_H
#define VKATTN_ATTENTION_FUSED_H

#include "ops_common.h"
#include "tuning.h"

/* Head sizes the rows and coopmat kernels keep in registers; the tiled kernel
 * splits a row over several invocations and takes up to TILED_MAX_HEAD_SIZE
 * (DeepSeek's MLA: D = 576, Dv = 512). */
#define FUSED_MAX_HEAD_SIZE 256
#define TILED_MAX_HEAD_SIZE 576

/* Every fused attention kernel and the combine pass take the call's variants as
 * one bit set in specialization constant 15 (shaders/attention_variants.glsl);
 * their own constants come first (the coopmat kernel's also after it). */
#define ATTENTION_VARIANTS_SPEC_ID 15
#define ATTENTION_SPEC_COUNT 24
enum attention_variant_bit { /* keep in sync with VAR_* in attention_variants.glsl */
    VAR_WINDOW = 1u << 0, VAR_SOFTCAP = 1u << 1, VAR_ALIBI = 1u << 2, VAR_MASK = 1u << 3,
    VAR_SINKS = 1u << 4, VAR_PACKED_Q = 1u << 5, VAR_PACKED_K = 1u << 6, VAR_PAGED = 1u << 7,
    VAR_SEQ_Q_OFFSET = 1u << 8, VAR_MASK_F16 = 1u << 9, VAR_MASK_BF16 = 1u << 10,
    VAR_KV_LEN = 1u << 11, VAR_MASK_TEXELS = 1u << 12, VAR_MASK_TEXELS4 = 1u << 13,
    VAR_MASK_PER_ROW = 1u << 14,
};
uint32_t attention_variant_bits(const attention_call *c);
/* Bit i set: input i of Q, K, V is bf16 (the rows and coopmat kernels'
 * BF16_INPUTS). */
uint32_t attention_bf16_inputs(const attention_call *c);
/* Whether Q, K and V are each f16 or bf16 (the coopmat kernels' inputs); if not,
 * `why` says that kernel `name` takes only those, naming the dtypes it got. */
bool attention_16bit_inputs(const attention_call *c, const char *name, char *why,
                            size_t why_size);
/* The variants' bindings of every fused attention kernel (after Q, K, V and O). */
enum attention_variant_binding {
    ATTENTION_KV_LEN_BINDING = 4, ATTENTION_CU_Q_BINDING, ATTENTION_CU_K_BINDING,
    ATTENTION_BLOCK_TABLE_BINDING, ATTENTION_MASK_BINDING, ATTENTION_SINKS_BINDING,
    ATTENTION_ALIBI_BINDING,
};
/* Where a kernel reads bf16 Q, K and V through views of their bits (usamplerBuffer;
 * no texel format reads bf16 as a float): the texel slots of bindings 4-6, which
 * kv_len and cu_seqlens, int32 tensors read as storage buffers, leave free. */
#define ATTENTION_QKV_BITS_TEXELS ATTENTION_KV_LEN_BINDING
/* A window side for the kernels: -1 when unbounded or when it excludes no key
 * of any row (which keeps their int arithmetic from overflowing). */
int32_t attention_window_side(int32_t side, const attention_dims *d);

typedef struct fused_plan {
    uint32_t workgroup;
    uint32_t rows_per_workgroup;  /* packed query rows one workgroup owns */
    uint32_t step;                /* keys per step: split ranges are whole steps */
    uint32_t target_workgroups;   /* keys are split until about this many run */
    uint32_t subgroup_size;       /* required of the pipeline; 0: any */
    /* The most keys one invocation may walk (0: no limit); more are split. See
     * CPU_LOOP_BUDGET. */
    uint32_t max_keys_per_split;
    bool vec4;                    /* the combine pass moves vec4s (Dv % 4 == 0) */
    /* What the softmax weights are rounded to before P V (vkattn_attention_choice's
     * weights_dtype): F32 (zero, as planned) or the matrix kernels' operands. */
    vkattn_dtype weights_dtype;
    uint32_t tm;                  /* query rows per invocation (rows, tiled; decode: per problem) */
    /* rows */
    uint32_t kb;                  /* keys per step */
    bool unroll;                  /* head-dimension loops unrolled */
    bool heads_in_lanes;          /* kv heads across neighbouring invocations (grid y = 1) */
    /* tiled */
    uint32_t tpr;                 /* invocations per row */
    /* tiled and coopmat */
    bool heavy_first;             /* causal: the last row blocks (the most keys) launched first */
    /* decode */
    uint32_t specialized_subgroup; /* the subgroup size its arrays are sized for */
    /* tiled and coopmat */
    uint32_t bc;                  /* keys per shared-memory tile */
    /* coopmat */
    coopmat_shape shape;          /* the matrix-unit shape the kernel is built on */
    shader_id build;              /* the kernel's build: emulated, NV or KHR extension */
    uint32_t stages;              /* 2: the next K and V tiles' loads in flight during a tile */
    uint32_t buffers;             /* 2: K and V tiles double-buffered, one barrier a tile */
    bool bf16_matrices;           /* bf16 Q, K, V on bf16 matrices, P rounded to bf16 */
    uint32_t row_tiles;           /* matrix-height row blocks per subgroup */
    /* softmax in registers (0: through shared memory): the lanes that share
     * a row, the rows a lane holds, each element's row slot (2 bits each) */
    uint32_t row_cluster, lane_rows, slot_table;
    uint32_t ablate;              /* the timing diagnostic's bits (0: the whole kernel) */
    bool q_shared;                /* Q read from a shared tile by each product */
    bool scores_held;             /* the shared softmax's scores kept in registers */
    /* coopmat_workgroup: D padded, O's columns an accumulator and their
     * count, K and V loadable straight from their buffers, the subgroup size */
    uint32_t workgroup_dp, workgroup_on, workgroup_pieces, workgroup_subgroup;
    bool workgroup_direct;
    /* set by the chooser */
    uint32_t blocks;              /* workgroups per split */
    uint32_t splits, keys_per_split;
} fused_plan;

/* lavapipe (gallivm, Mesa 22.3) silently ends the loops of an invocation once
 * they have run 65535 iterations (loops the compiler does not unroll; the
 * count is kept per nesting depth across the whole invocation), leaving the
 * rest of the kernel to run on garbage. Found as wrong results from the rows
 * kernel at D = 160 with 1024 keys (error 1e34) and D = 256 with 500 keys, and
 * as unwritten outputs of the emulated coopmat kernel after ~15 tiles. On CPU
 * devices variants whose loops are not unrolled estimate their iterations per
 * key and cap the keys per split to half this budget. */
#define CPU_LOOP_BUDGET 32768

typedef struct fused_variant_row {
    vkattn_fused_variant variant;
    const char *name;
    /* What it is good at: how much AUTO wants it for this call on this device,
     * 0 never (forced only); the highest rank whose planner succeeds runs. */
    int (*auto_rank)(const vkattn_context *ctx, const attention_call *c);
    /* What it needs: fills the plan, or says in `why` what is missing. */
    bool (*plan)(vkattn_context *ctx, const attention_call *c, fused_plan *plan, char *why,
                 size_t why_size);
    /* Its pipeline key and workgroup grid (x; y = Hkv and z = B for all). */
    void (*specialize)(const attention_call *c, const fused_plan *plan, bool split,
                       vk_dispatch *d);
} fused_variant_row;

/* The auto_rank of a variant only ever forced (the emulated builds: tests). */
int fused_rank_never(const vkattn_context *ctx, const attention_call *c);

extern const fused_variant_row fused_rows_variant, fused_tiled_variant, fused_decode_variant,
    fused_coopmat_variant, fused_coopmat_emulated_variant, fused_coopmat_workgroup_variant,
    fused_coopmat_workgroup_emulated_variant;

/* Packed query rows of one (batch, kv head) problem: group * Tq. */
static inline uint64_t fused_rows(const attention_dims *d)
{
    return (uint64_t)(d->H / d->Hkv) * (uint64_t)d->Tq;
}

/* Whether a causal call launches its last row blocks (those that see the most
 * keys) first: a GPU starts workgroups about in grid order, and the longest
 * ones last would leave it running a few of them alone at the end
 * (FlashAttention launches causal blocks so too). Tiled and coopmat kernels;
 * KNOB_ORDER=2 keeps grid order. */
bool fused_heavy_first(const vkattn_context *ctx, vkattn_fused_variant variant,
                       const attention_dims *d);

static inline uint32_t pow2_floor(uint64_t v) { uint32_t p = 1; while ((uint64_t)p * 2 <= v) p *= 2; return p; }
static inline uint32_t pow2_ceil(uint64_t v) { uint32_t p = 1; while (p < v) p *= 2; return p; }

#endif
