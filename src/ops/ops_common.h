/* Helpers shared by the op files: dtype checks, workgroup grids, and the
 * recording entry points that ops use to build on each other (attention on
 * matmul and softmax, mha on attention), with explicit sizes and offsets so
 * they can run over scratch buffers and sub-blocks of tensors. */
#ifndef VKATTN_OPS_COMMON_H
#define VKATTN_OPS_COMMON_H

#include "internal.h"

#include <float.h>

#define LOG2_E 1.4426950408889634
#define LN_2 0.6931471805599453

/* An input an op reads: F32, F16 or BF16. */
vkattn_status check_float_input(vkattn_context *ctx, const vkattn_tensor *t, const char *op,
                                const char *name);
/* An op's output: F32, F16 or BF16 (16-bit ones through wide_output). */
vkattn_status check_float_output(vkattn_context *ctx, const vkattn_tensor *t, const char *op,
                                 const char *name);

/* An op's output as the op writes it (wide_output.c): the caller's tensor where
 * it is F32; else f32 scratch shaped like it, rounded into it by
 * wide_output_end once the op has succeeded (round to nearest even). */
typedef struct wide_output {
    vkattn_tensor *target; /* the caller's output */
    vkattn_tensor *write;  /* what the op writes: target, or &view */
    vkattn_tensor view;    /* the scratch tensor's memory under the target's shape */
} wide_output;

vkattn_status wide_output_begin(vkattn_context *ctx, vkattn_tensor *target, wide_output *w);
/* Records (Vulkan) or does (CPU) the narrowing where the op succeeded; returns
 * the op's status where it did not. */
vkattn_status wide_output_end(vkattn_context *ctx, wide_output *w, vkattn_status op_status);
/* Records y (F16 or BF16) = x (f32 scratch of at least y's element count
 * rounded up to 4), rounded to nearest even: wide_output_end's pass, for ops
 * that keep 16-bit intermediates of their own (mha's compute dtype). */
vkattn_status narrow_record(vkattn_context *ctx, const vkattn_tensor *x, vkattn_tensor *y);
/* Records zeros over an F32 output (vk_tensor_fill: in the compute-shader
 * stage, where the recording contract says outputs are written). */
vkattn_status vk_output_zero(vkattn_context *ctx, vkattn_tensor *t);

/* Spreads `count` workgroups over x then y (both within the device's limits).
 * Kernels recover the linear index with linear_workgroup_index(); the grid may
 * hold up to x-1 more workgroups than asked, which kernels must bounds-check. */
vkattn_status grid_for(vkattn_context *ctx, uint64_t count, const char *op, uint32_t groups[3]);

/* The code a kernel's dtype specialization constant takes for a tensor read by
 * LOAD_ELEMENT (DTYPE_* in shaders/common.glsl); F32 for an absent tensor. */
uint32_t shader_dtype(const vkattn_tensor *t);

static inline uint32_t div_up(uint64_t a, uint64_t b) { return (uint32_t)((a + b - 1) / b); }
static inline uint32_t round_up(uint32_t v, uint32_t m) { return (v + m - 1) / m * m; }
static inline uint32_t gcd(uint32_t a, uint32_t b)
{
    while (b) {
        uint32_t t = a % b;
        a = b, b = t;
    }
    return a;
}
static inline uint32_t lcm(uint32_t a, uint32_t b) { return a / gcd(a, b) * b; }

/* The coopmat kernels' f16 tiles in shared memory are packed, 8 halves (16
 * bytes) to an element (coopmat.glsl's PACK), so matrix shapes and tiles are
 * counted in whole elements. */
#define COOPMAT_PACK 8

/* A soft-capping value in the kernels' exp2 domain (softcap * log2 e), held at
 * FLT_MAX where that overflows: the kernels' soft_cap then leaves scores as
 * they are, as a cap that large does. */
static inline float softcap_log2e(float softcap)
{
    double c = (double)softcap * LOG2_E;
    return c > FLT_MAX ? FLT_MAX : (float)c;
}

/* Whether kernels should read through texel views: on devices whose invocations
 * are the SIMD lanes of a CPU (lavapipe) a texel fetch is one vector gather while
 * a storage-buffer load is a loop over the lanes. */
bool vk_prefers_texels(const vkattn_context *ctx);

/* The subgroup size a kernel whose tiling depends on it is specialized for;
 * `*required` says whether its pipeline can require that size (pipeline_key). */
uint32_t kernel_subgroup_size(const vkattn_context *ctx, bool *required);

/* ---------------------------------------------------------------- matmul -- */

/* C[z] = alpha * A[z] @ op(B[z / b_group]) + bias for z in [0, batch), every
 * matrix dense and row-major, at the given element offsets into its tensor. */
typedef struct matmul_call {
    const vkattn_tensor *a, *b, *bias; /* bias may be NULL */
    vkattn_tensor *c;
    uint32_t M, N, K;
    uint64_t batch;
    uint32_t b_group;       /* consecutive A batches sharing one B batch */
    bool b_batched;         /* false: one B for every batch (weights) */
    bool transpose_b;       /* B stored (N, K) */
    uint32_t a_offset, b_offset, bias_offset, c_offset;
    float alpha;
    vkattn_matmul_variant variant;
    /* An element of A that is MASKED_WEIGHT contributes nothing, even against
     * Inf or NaN in B (P V: keys a row may not see, softmax_call.mark_masked).
     * The coopmat kernels refuse it. */
    bool masked_a_skips;
} matmul_call;

vkattn_status vk_matmul_record(vkattn_context *ctx, const matmul_call *c);
/* Records `dispatch` (its key and bindings) over all batches of the call, with
 * the matmul push constants; several dispatches past the z limit. */
vkattn_status matmul_record_batches(vkattn_context *ctx, const vk_dispatch *dispatch,
                                    const matmul_call *c, uint64_t gx, uint64_t gy);
/* The cooperative-matrix kernel (matmul_coopmat.c), real or emulated, and
 * whether AUTO takes it for this call (coopmat_default). */
vkattn_status vk_matmul_coopmat(vkattn_context *ctx, const matmul_call *c, bool emulated);
bool matmul_coopmat_wanted(const vkattn_context *ctx, const matmul_call *c);

/* ------------------------------------------------------- cooperative matrices -- */

/* The f16 shape with the most work per instruction among the device's (false:
 * none), and the shape the emulated builds use: 16x16x16, or
 * VKATTN_COOPMAT_EMULATED_SHAPE=MxNxK (false: malformed, or a size over 64). */
bool coopmat_device_shape(const device_caps *caps, coopmat_shape *out);
bool coopmat_emulated_shape(coopmat_shape *out);
/* Whether the device's bf16 x bf16 + f32 shapes (VK_KHR_shader_bfloat16's, in
 * `caps` where they are enabled) include s. */
bool coopmat_bf16_shape(const device_caps *caps, coopmat_shape s);
/* The f32 accumulator layout of an s.m x s.n matrix on the device's matrix
 * units or in the emulated build (its accumulators in clusters of `cluster`
 * lanes, 0: its plain layout; coopmat.glsl's ACC_CLUSTER), read by a kernel
 * (coopmat_layout_probe.c). Needs no recording in progress: it submits and
 * waits. */
struct coopmat_layout;
vkattn_status coopmat_layout_probe(vkattn_context *ctx, bool emulated, coopmat_shape s,
                                   uint32_t cluster, struct coopmat_layout *out);
/* How a softmax in registers finds its rows in s.m x s.n f32 accumulators on
 * subgroups of sg (attention_coopmat.comp's ROW_CLUSTER, LANE_ROWS,
 * SLOT_TABLE): the emulated build's by construction, the device's as the
 * context read it when it started (coopmat_register_layout_init). False, with
 * the reason, where the layout is not one it can use or was not read. */
bool coopmat_register_layout(const vkattn_context *ctx, bool emulated, coopmat_shape s,
                             uint32_t sg, uint32_t *row_cluster, uint32_t *lane_rows,
                             uint32_t *slot_table, char *why, size_t why_size);
/* Whether AUTO takes a coopmat kernel where it runs, for f16 inputs or with
 * some bf16 among them: on vendors its current revision was verified on
 * (coopmat_verified.c's table), unless VKATTN_COOPMAT=0; anywhere with
 * VKATTN_COOPMAT=1. */
typedef enum { COOPMAT_KERNEL_ATTENTION, COOPMAT_KERNEL_MATMUL } coopmat_kernel;
bool coopmat_default(const vkattn_context *ctx, coopmat_kernel kernel, bool bf16_inputs);
/* The build of a real cooperative-matrix kernel (its NV shader id) for the
 * extension the context's device enabled: NV's, or VK_KHR_cooperative_matrix's. */
shader_id coopmat_shader(const vkattn_context *ctx, shader_id nv);
/* The subgroup size a coopmat kernel is specialized for and, where *required,
 * runs with: kernel_subgroup_size, except that the KHR builds take the
 * device's smallest size (coopmat_shapes.c says why). */
uint32_t coopmat_subgroup_size(const vkattn_context *ctx, bool emulated, bool *required);
/* Which build a workgroup-scope diagnostic runs: the real one where this
 * context has workgroup-scope matrices (VK_NV_cooperative_matrix2's workgroup
 * scope and flexible dimensions, enabled only on a device vkattn creates for
 * the diagnostics and the kernel that use them: VKATTN_COOPMAT_PEAK=1,
 * VKATTN_COOPMAT_LAYOUT=1 or VKATTN_COOPMAT_WORKGROUP=1 through the KHR
 * extension), whatever the
 * subgroup-scope diagnostics ran; else the emulated one where the device has
 * no matrix units (`no_matrix_units`: a test of the code); else none: false,
 * `why` saying why the real one cannot run. */
bool coopmat_workgroup_build(const vkattn_context *ctx, bool no_matrix_units, bool *emulated,
                             char *why, size_t size);

/* --------------------------------------------------------------- softmax -- */

/* Masked softmax over `rows` rows of Tk (rows of X and Y from element 0). Row r
 * is query position r % Tq; its kv_len entry is (r + kv_row_base) / rows_per_batch. */
typedef struct softmax_call {
    const vkattn_tensor *x;
    vkattn_tensor *y;
    const vkattn_tensor *kv_len; /* may be NULL */
    uint64_t rows;
    uint32_t Tq, Tk;
    uint32_t rows_per_batch, kv_row_base;
    float scale;
    bool causal;
    int32_t q_offset;
    vkattn_softmax_variant variant;
    /* Attention sinks (NULL: none): row r + kv_row_base is of head
     * ((r + kv_row_base) / rows_per_head) % heads. */
    const vkattn_tensor *sinks;
    uint32_t rows_per_head, heads;
    /* The ALiBi slopes (F32, per head as sinks; NULL: none) of scores whose
     * distances were measured from each row's origin, not its position
     * (score_variants.glsl, alibi_origin_in over Tk): the sink is moved to
     * match. Only with sinks. */
    const vkattn_tensor *alibi;
    /* Attention's sliding window: key j of a row at position pos (its query
     * row + q_offset) is allowed only if pos - window_left <= j <= pos +
     * window_right (a side of -1: unbounded). */
    bool has_window;
    int32_t window_left, window_right;
    /* Entries a row may not see (outside its limits) become MASKED_WEIGHT, not
     * 0, for a P V matmul with masked_a_skips: a weight that underflowed to 0
     * still multiplies V there (0 * NaN = NaN, IEEE). With neg_inf_masked
     * also -inf scores: where a mask wrote its not-allowed keys so (without, a
     * -inf is the data's and weighs 0, as in the fused kernels). */
    bool mark_masked, neg_inf_masked;
} softmax_call;

/* shaders/common.glsl's MASKED_WEIGHT. */
#define MASKED_WEIGHT (-1.0f)

vkattn_status vk_softmax_record(vkattn_context *ctx, const softmax_call *c);

/* -------------------------------------------------------- head transpose -- */

/* Y (A, C, B, D) = X (A, B, C, D) transposed, dims = {A, B, C, D}, from element 0. */
vkattn_status vk_head_transpose_record(vkattn_context *ctx, const vkattn_tensor *x,
                                       vkattn_tensor *y, const int64_t dims[4]);

/* ------------------------------------------------------------- attention -- */

typedef struct attention_call {
    attention_dims dims;
    const vkattn_tensor *q, *k, *v, *kv_len; /* read from element 0 in dims.layout */
    vkattn_tensor *o;
    vkattn_attention_path path;
    vkattn_fused_variant fused_variant;
    uint32_t kv_splits;
} attention_call;

/* The unfused path: scores matmul, masked softmax, P @ V, transposes for BSHD. */
vkattn_status vk_attention_unfused(vkattn_context *ctx, const attention_call *c);
/* The fused variant, key splits and weights' rounding the fused path would run
 * for this call (into `choice`, its path left as it is); false, with why,
 * where none can. */
bool vk_attention_fused_choice(vkattn_context *ctx, const attention_call *c,
                               vkattn_attention_choice *choice, char *why, size_t why_size);
/* The fused path; UNSUPPORTED (with the reason) where it does not apply. */
vkattn_status vk_attention_fused(vkattn_context *ctx, const attention_call *c);
/* Records attention by the path the call asks for (AUTO: fused where it applies). */
vkattn_status vk_attention_record(vkattn_context *ctx, const attention_call *c);
/* What vk_attention_record would run for c (vkattn_attention_choose's answer
 * on a Vulkan context); UNSUPPORTED where the fused path is asked and cannot. */
vkattn_status vk_attention_choice(vkattn_context *ctx, const attention_call *c,
                                  vkattn_attention_choice *out);

#endif
