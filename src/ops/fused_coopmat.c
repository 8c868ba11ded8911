/* Fused variants "coopmat" and "coopmat_emulated" (attention_coopmat.comp):
 * Q K^T and P V as f16 x f16 -> f32 products on the matrix units, the online
 * softmax in f32 between them; each subgroup keeps the Q and O of its MM rows
 * (or ROW_TILES times MM: the tuning coopmat.rows) in matrix registers for the
 * whole key loop. Good at: f16 and bf16 attention
 * on GPUs with cooperative matrices, every variant. Needs: f16 or bf16 Q, K
 * and V (each its own; bf16 converted to f16 exactly as it is staged, each
 * group scaled by a power of 2: attention_coopmat.comp's BF16_INPUTS; or with
 * the tuning coopmat.bf16=2, bf16 Q, K and V on bf16 matrices, P rounded to
 * bf16: VK_KHR_shader_bfloat16's, the KHR build with bf16 operands);
 * VK_NV_cooperative_matrix with an f16 shape (the real kernel) or shaderFloat16
 * (the emulated build); full subgroups of a size the pipeline can require (the
 * real kernel: a matrix operation needs every lane of its subgroup) or one the
 * device always gives (the emulated build), whose size a subgroup's rows
 * divide or are divided by; shared memory for the K, V, S and P tiles;
 * registers for Q and O.
 *
 * AUTO takes the real kernel on the vendors where its current revision passed
 * the GPU check, for the inputs it passed with (coopmat_verified.c: NVIDIA,
 * f16 and bf16),
 * elsewhere with VKATTN_COOPMAT=1;
 * VKATTN_COOPMAT=0 turns it off. The emulated build runs the same kernel
 * with the matrix operations in plain code and is never chosen by AUTO: tests
 * force it on devices without matrix units. Its matrix shape is 16x16x16, or
 * VKATTN_COOPMAT_EMULATED_SHAPE=MxNxK (tests use the shapes GPUs report). On
 * CPU devices it tiles small (one subgroup, 16 keys) unless
 * VKATTN_COOPMAT_EMULATED_TILING=gpu, with which tests reach the paths only a
 * GPU's tiling takes: barriers between subgroups, Q staged in several chunks,
 * tiles of 32 to 64 keys. */
#include "attention_fused.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum coopmat_spec { /* constant_id values in attention_coopmat.comp */
    AM_SPEC_WORKGROUP = 0, AM_SPEC_BR, AM_SPEC_BC, AM_SPEC_D, AM_SPEC_DV, AM_SPEC_CAUSAL,
    AM_SPEC_SPLIT, AM_SPEC_MM, AM_SPEC_MN, AM_SPEC_MK, AM_SPEC_SUBGROUP_SIZE, AM_SPEC_STAGES,
    AM_SPEC_BF16_INPUTS, AM_SPEC_HEAVY_FIRST, AM_SPEC_ROW_TILES,
    /* 15: ATTENTION_VARIANTS_SPEC_ID */
    AM_SPEC_ROW_CLUSTER = 16, AM_SPEC_LANE_ROWS, AM_SPEC_SLOT_TABLE, AM_SPEC_ABLATE,
    AM_SPEC_Q_SHARED, AM_SPEC_SCORES_HELD, AM_SPEC_BUFFERS, AM_SPEC_BF16_MATRICES
};
_Static_assert(AM_SPEC_BF16_MATRICES < ATTENTION_SPEC_COUNT, "ATTENTION_SPEC_COUNT too small");

/* Subgroups per workgroup (each owns MM query rows, or MM times the tuning
 * coopmat.rows: the kernel's ROW_TILES) and the most keys per tile:
 * the most of each that fit, in that order. On CPU devices (where only the
 * emulated build runs, in tests) one subgroup and small tiles: lavapipe turns
 * each barrier into a coroutine switch. */
#define COOPMAT_SUBGROUPS 4
#define COOPMAT_MAX_TILE 64
#define COOPMAT_MAX_TILE_CPU 16
#define COOPMAT_TARGET_WORKGROUPS 512
/* 32-bit registers per invocation the real kernel's matrices (Q, O, S, P) may
 * take: NVIDIA's limit is 255, and the softmax and addressing need the rest.
 * On the H200 the kernel took about 50 beyond matrix_registers' count (f16
 * causal prefill with two stages: D=128, 48 keys, 180 counted, 230 taken;
 * D=64, 64 keys, 128 counted, 178 taken; bench/results/nvidia-h200), so this
 * keeps it just under the limit. */
#define COOPMAT_MATRIX_REGISTERS 208

/* The kernel's f16 tiles are packed (COOPMAT_PACK, ops_common.h): head sizes
 * are padded to whole elements and tiles hold whole elements of keys. */

/* What a tile size must fit around: the device, its matrix shape, the
 * subgroup and its rows, the padded head sizes and the kernel's options. */
typedef struct tile_fit {
    const vkattn_device_info *info;
    coopmat_shape s;
    uint32_t sg, rs;       /* lanes and rows a subgroup */
    uint32_t dp, dvp;      /* head sizes padded to the matrices and the packing */
    uint32_t bf16;         /* attention_bf16_inputs converted to f16 (none on bf16 matrices) */
    bool emulated;
    uint32_t held_rows;    /* rows a lane keeps the softmax state of */
    bool register_softmax; /* ROW_CLUSTER: an index matrix beside the others */
    bool q_shared;         /* Q_SHARED: Q in a shared tile, one operand a row block */
    uint32_t buffers;      /* BUFFERS: K and V tiles (and bf16 K's factors) each */
} tile_fit;

/* attention_coopmat.comp's shared memory: K, V, S and P tiles whose rows are
 * padded by 16 bytes (its KS, VS, SS and PS; K and V once a buffer; with the
 * softmax in registers one block of S and of P a subgroup: its S_SLICE and
 * P_SLICE), Q's tile (Q_SHARED), the row factors, the flags (four words a
 * buffer), and the exponents and factors of bf16 inputs (16-byte stubs
 * without; K's exponents in three slots with two buffers, its factors a
 * buffer each). */
static uint64_t shared_bytes(const tile_fit *f, uint32_t br, uint32_t bc)
{
    uint32_t dp = f->dp, dvp = f->dvp;
    uint64_t s_and_p = f->register_softmax
                           ? (uint64_t)(br / f->rs) * (4ull * round_up(f->s.m * f->s.n, 4) +
                                                       2ull * f->s.m * round_up(f->s.k, COOPMAT_PACK))
                           : 4ull * br * (bc + 4) + 2ull * br * (bc + 8);
    uint32_t slots = f->buffers == 2 ? 3 : 1;
    uint64_t bytes = 2ull * f->buffers * bc * (dp + 8 + dvp + 8) + s_and_p + 4ull * br +
                     16ull * f->buffers + (f->q_shared ? 2ull * br * (dp + 8) : 16);
    bytes += (f->bf16 & 1 ? 4ull * br : 16) +
             (f->bf16 & 2 ? 4ull * bc * (slots + f->buffers) : 32) + 16;
    if (!f->emulated)
        return bytes;
    /* The emulated build keeps its matrices there: Q, P, S, O and a subgroup's
     * index matrix (allocated with or without a softmax in registers). */
    return bytes + 2ull * br * ((f->q_shared ? f->s.k : dp) + bc) + 4ull * br * (bc + dvp) +
           4ull * (br / f->rs) * f->s.m * f->s.n;
}

/* Registers per invocation of the real kernel's matrices for a subgroup's rs
 * rows (Q and P as f16 operands, two per register, Q's MK columns at a time
 * with Q_SHARED; O and S as f32 accumulators), with two stages of the K and V tiles it loads before
 * staging (16 bytes per packed element, the workgroup's wg
 * invocations sharing them), of the softmax's state of the rows a lane
 * holds beyond its first (about 10 registers a row) and, with the softmax in
 * registers, of the index matrix. */
static uint64_t matrix_registers(const tile_fit *f, uint32_t bc, uint32_t stages, uint32_t wg)
{
    uint32_t rs = f->rs, sg = f->sg, dp = f->dp, dvp = f->dvp;
    uint64_t staged = stages == 2
                          ? 4 * (div_up((uint64_t)bc * dp / COOPMAT_PACK, wg) +
                                 div_up((uint64_t)bc * dvp / COOPMAT_PACK, wg))
                          : 0;
    uint64_t index = f->register_softmax ? (uint64_t)f->s.m * f->s.n / sg : 0;
    uint32_t q_columns = f->q_shared ? f->s.k : dp;
    return ((uint64_t)rs * (q_columns + bc) / 2 + (uint64_t)rs * (dvp + bc)) / sg + staged +
           10 * (f->held_rows - 1) + index;
}

/* The most keys per tile (a multiple of every matrix side and of the packing)
 * that fit br rows' tiles in shared memory and, for the real kernel, the
 * matrices of a subgroup's rows in registers; 0 if none does. */
static uint32_t largest_tile(const tile_fit *f, uint32_t br, uint32_t max_tile, uint32_t stages)
{
    coopmat_shape s = f->s;
    uint32_t unit = lcm(lcm(lcm(s.m, s.n), s.k), COOPMAT_PACK), wg = br / f->rs * f->sg;
    for (uint32_t bc = max_tile / unit * unit; bc >= unit; bc -= unit)
        if (shared_bytes(f, br, bc) <= f->info->shared_memory_bytes &&
            (f->emulated || matrix_registers(f, bc, stages, wg) <= COOPMAT_MATRIX_REGISTERS))
            return bc;
    return 0;
}

/* Whether the tuning coopmat.bf16=2 (bf16 matrices) can take this call: bf16
 * Q, K and V (a product's operands share one type, and P V's P takes V's), the
 * softmax through shared memory (the NV build, the only one converting
 * accumulators to operands, has no bf16), and for the real kernel a context
 * with VK_KHR_shader_bfloat16's matrices of the plan's shape. */
static bool bf16_matrices_fit(const vkattn_context *ctx, const attention_call *c, bool emulated,
                              uint32_t softmax, coopmat_shape s, const char *name, char *why,
                              size_t why_size)
{
    vkattn_fused_variant self = emulated ? VKATTN_FUSED_COOPMAT_EMULATED : VKATTN_FUSED_COOPMAT;
    char setting[48];
    tuning_describe(self, KNOB_BF16, 2, setting, sizeof setting);
    if (attention_bf16_inputs(c) != 7) {
        snprintf(why, why_size, "%s: %s takes bf16 matrices for bf16 Q, K and V only (got %s, "
                 "%s, %s)", setting, name, dtype_name(c->q->dtype), dtype_name(c->k->dtype),
                 dtype_name(c->v->dtype));
        return false;
    }
    if (softmax == 2) {
        snprintf(why, why_size, "%s with the softmax in registers: %s converts no accumulators "
                 "to bf16 operands", setting, name);
        return false;
    }
    if (!emulated && !coopmat_bf16_shape(&ctx->vk.enabled, s)) {
        /* The device lists them, but this context's kernels take the NV
         * extension (NVIDIA's default), which has no bf16. */
        bool nv_path = ctx->vk.caps.bf16_shape_count > 0 && !ctx->vk.enabled.coopmat_khr &&
                       !ctx->info.adopted;
        snprintf(why, why_size, "%s: %s needs VK_KHR_shader_bfloat16's cooperative matrices "
                 "of its %ux%ux%u shape through VK_KHR_cooperative_matrix, which %s lacks or "
                 "this context did not enable%s", setting, name, s.m, s.n, s.k, ctx->info.name,
                 nv_path ? " (its kernels take VK_NV_cooperative_matrix here: "
                           "VKATTN_COOPMAT_KHR=1 takes the KHR one)" : "");
        return false;
    }
    return true;
}

static bool coopmat_plan_common(vkattn_context *ctx, const attention_call *c, bool emulated,
                                fused_plan *plan, char *why, size_t why_size)
{
    const attention_dims *d = &c->dims;
    const vkattn_device_info *info = &ctx->info;
    const char *name = emulated ? "the emulated coopmat kernel" : "the coopmat kernel";
    if (d->D > FUSED_MAX_HEAD_SIZE || d->Dv > FUSED_MAX_HEAD_SIZE) {
        snprintf(why, why_size, "head sizes %lld and %lld: %s takes up to %d", (long long)d->D,
                 (long long)d->Dv, name, FUSED_MAX_HEAD_SIZE);
        return false;
    }
    if (!attention_16bit_inputs(c, name, why, why_size))
        return false;
    uint32_t bf16 = attention_bf16_inputs(c);
    if (emulated) {
        if (!ctx->vk.enabled.float16) {
            snprintf(why, why_size, "%s needs shaderFloat16, which %s lacks or the "
                     "application did not enable", name, info->name);
            return false;
        }
        if (!coopmat_emulated_shape(&plan->shape)) {
            snprintf(why, why_size, "VKATTN_COOPMAT_EMULATED_SHAPE is not MxNxK with sizes 1..%d",
                     COOPMAT_MAX_TILE);
            return false;
        }
    } else if (!ctx->vk.enabled.coopmat || !coopmat_device_shape(&ctx->vk.enabled, &plan->shape)) {
        snprintf(why, why_size, "%s needs VK_NV_cooperative_matrix or VK_KHR_cooperative_matrix "
                 "with an f16 x f16 -> f32 subgroup shape, which %s lacks or the application "
                 "did not enable", name, info->name);
        return false;
    }
    plan->build = emulated ? SHADER_ATTENTION_COOPMAT_EMULATED
                           : coopmat_shader(ctx, SHADER_ATTENTION_COOPMAT);
    bool required;
    uint32_t sg = coopmat_subgroup_size(ctx, emulated, &required);
    const device_caps *caps = &ctx->vk.enabled;
    if (!ctx->vk.subgroup_shuffle || !ctx->vk.subgroup_vote || sg == 0 ||
        (!required && caps->subgroup_min != caps->subgroup_max)) {
        snprintf(why, why_size, "%s needs subgroup shuffles and votes and one subgroup size for "
                 "the pipeline, which %s cannot give", name, info->name);
        return false;
    }
    /* A matrix operation needs every lane of its subgroup active, which only
     * full subgroups promise (SPIR-V below 1.6 may launch partial ones). The
     * emulated build's plain code has no such need. */
    if (!emulated && !required) {
        snprintf(why, why_size, "%s needs full subgroups of a required size "
                 "(subgroupSizeControl and computeFullSubgroups), which %s lacks or the "
                 "application did not enable", name, info->name);
        return false;
    }
    plan->subgroup_size = required ? sg : 0;
    coopmat_shape s = plan->shape;
    vkattn_fused_variant self = emulated ? VKATTN_FUSED_COOPMAT_EMULATED : VKATTN_FUSED_COOPMAT;
    /* A subgroup's rows: row_tiles matrix heights. The softmax gives each row
     * sg / rs lanes, or each lane rs / sg rows. */
    uint32_t row_tiles = tuning_value(ctx, self, KNOB_ROWS, 1), rs = s.m * row_tiles;
    if (sg % rs != 0 && rs % sg != 0) {
        char rows[96];
        snprintf(rows, sizeof rows, "%u-row matrices", s.m);
        if (row_tiles > 1) {
            char setting[48];
            tuning_describe(self, KNOB_ROWS, row_tiles, setting, sizeof setting);
            snprintf(rows, sizeof rows, "%u rows a subgroup (%u-row matrices, %s)", rs, s.m,
                     setting);
        }
        snprintf(why, why_size, "%s: %s and subgroups of %u, neither dividing the other", name,
                 rows, sg);
        return false;
    }
    plan->row_tiles = row_tiles;
    plan->ablate = tuning_value(ctx, self, KNOB_ABLATE, 0);
    /* Q in registers unless tuned (untimed on a GPU). */
    plan->q_shared = tuning_value(ctx, self, KNOB_Q, 1) == 2;
    /* The softmax on the score accumulators' elements in registers, where
     * their layout allows (tuned for now: untimed on a GPU). */
    plan->row_cluster = 0;
    plan->lane_rows = 1;
    plan->slot_table = 0;
    uint32_t softmax = tuning_value(ctx, self, KNOB_SOFTMAX, 1);
    if (softmax == 2 && plan->build != SHADER_ATTENTION_COOPMAT &&
        plan->build != SHADER_ATTENTION_COOPMAT_EMULATED) {
        char setting[48];
        tuning_describe(self, KNOB_SOFTMAX, softmax, setting, sizeof setting);
        snprintf(why, why_size, "%s: %s: the VK_KHR_cooperative_matrix build converts no "
                 "accumulators to operands", setting, name);
        return false;
    }
    /* bf16 inputs on bf16 matrices (tuned for now: untimed on a GPU), with
     * nothing to convert. */
    plan->bf16_matrices = tuning_value(ctx, self, KNOB_BF16, 1) == 2;
    if (plan->bf16_matrices) {
        if (!bf16_matrices_fit(ctx, c, emulated, softmax, s, name, why, why_size))
            return false;
        bf16 = 0;
        if (!emulated)
            plan->build = SHADER_ATTENTION_COOPMAT_KHR_BF16;
    }
    if (softmax == 2) {
        char because[240];
        if (!coopmat_register_layout(ctx, emulated, s, sg, &plan->row_cluster, &plan->lane_rows,
                                     &plan->slot_table, because, sizeof because)) {
            char setting[48];
            tuning_describe(self, KNOB_SOFTMAX, softmax, setting, sizeof setting);
            snprintf(why, why_size, "%s: %s: %s", setting, name, because);
            return false;
        }
    }
    /* The real kernel's matrix loads start on a whole packed element. */
    if (!emulated && (s.k % COOPMAT_PACK || s.n % COOPMAT_PACK)) {
        snprintf(why, why_size, "%s: the device's %ux%ux%u matrices; the kernel loads tiles "
                 "%d halves at a time, so N and K must be multiples of %d", name, s.m, s.n, s.k,
                 COOPMAT_PACK, COOPMAT_PACK);
        return false;
    }
    uint32_t dp = round_up((uint32_t)d->D, lcm(s.k, COOPMAT_PACK));
    uint32_t dvp = round_up((uint32_t)d->Dv, lcm(s.n, COOPMAT_PACK));
    bool cpu = info->type == VKATTN_DEVICE_TYPE_CPU;
    const char *tiling = getenv("VKATTN_COOPMAT_EMULATED_TILING");
    bool small_tiles = cpu && !(emulated && tiling && strcmp(tiling, "gpu") == 0);
    uint32_t max_tile = tuning_value(ctx, self, KNOB_KEYS,
                                     small_tiles ? COOPMAT_MAX_TILE_CPU : COOPMAT_MAX_TILE);
    /* The shared-memory softmax's scores in registers with GPU-sized tiles
     * (one shared-memory read a score); lavapipe's small tiles keep them in
     * shared memory, where its compile of the unrolled code would take
     * 30-50 % longer (attention_coopmat.comp, SCORES_HELD). */
    plan->scores_held = !small_tiles;
    /* Decoding: no more subgroups than the problem has rows for. The
     * planner's own count shrinks until the tiles fit; a tuned count is kept
     * or refused (tuning.c). */
    uint64_t row_blocks = div_up(fused_rows(d), rs);
    uint32_t tuned_subgroups = tuning_value(ctx, self, KNOB_SUBGROUPS, 0);
    uint32_t subgroups = tuned_subgroups ? tuned_subgroups : small_tiles ? 1 : COOPMAT_SUBGROUPS;
    if (row_blocks < subgroups) {
        if (tuned_subgroups) {
            snprintf(why, why_size, "tuning %s.subgroups=%u: %s has %llu query rows per kv "
                     "head here, %llu subgroups' worth of %u", vkattn_fused_variant_name(self),
                     tuned_subgroups, name, (unsigned long long)fused_rows(d),
                     (unsigned long long)row_blocks, rs);
            return false;
        }
        subgroups = (uint32_t)row_blocks;
    }
    /* Two stages on GPUs where they keep the tile one stage gets (the H200's
     * f16 causal prefill at D=128, 48 keys either way: 5.22 ms with one,
     * 3.89 with two; bench/results/nvidia-h200): their registers must not
     * halve the tile instead (D=192 would drop from 32 keys to 16, untimed).
     * Either before fewer subgroups (two took 2.4x as long there). The
     * emulated build keeps one unless tuned: nothing to hide on lavapipe,
     * whose compile of GPU-sized tiles with two stages takes minutes
     * (test_coopmat_two_stages runs two on small tiles). */
    uint32_t tuned_stages = tuning_value(ctx, self, KNOB_STAGES, 0);
    /* Two buffers (untimed on a GPU; tuned for now): bf16 K or V tiles with
     * them take two stages, their exponents reduced from the registers the
     * next tile is loaded into before the step's one barrier. */
    uint32_t buffers = tuning_value(ctx, self, KNOB_BUFFERS, 1);
    bool bf16_tiles = (bf16 & 6u) != 0;
    if (buffers == 2 && bf16_tiles && tuned_stages == 1) {
        snprintf(why, why_size, "tuning %s.buffers=2 with %s.stages=1: %s takes bf16 K or V "
                 "with two buffers only in two stages", vkattn_fused_variant_name(self),
                 vkattn_fused_variant_name(self), name);
        return false;
    }
    uint32_t fixed_stages = tuned_stages ? tuned_stages : buffers == 2 && bf16_tiles ? 2 : 0;
    tile_fit fit = {
        .info = info, .s = s, .sg = sg, .rs = rs, .dp = dp, .dvp = dvp, .bf16 = bf16,
        .emulated = emulated,
        .held_rows = plan->row_cluster ? row_tiles * plan->lane_rows : rs > sg ? rs / sg : 1,
        .register_softmax = plan->row_cluster != 0,
        .q_shared = plan->q_shared,
        .buffers = buffers,
    };
    for (;;) {
        uint32_t br_try = subgroups * rs;
        if (fixed_stages) {
            plan->stages = fixed_stages;
            plan->bc = largest_tile(&fit, br_try, max_tile, fixed_stages);
        } else {
            uint32_t one = largest_tile(&fit, br_try, max_tile, 1);
            uint32_t two = emulated ? 0 : largest_tile(&fit, br_try, max_tile, 2);
            plan->stages = two && two >= one ? 2 : 1;
            plan->bc = plan->stages == 2 ? two : one;
        }
        if (plan->bc || subgroups == 1 || tuned_subgroups)
            break;
        subgroups--;
    }
    uint32_t br = subgroups * rs;
    if (!plan->bc) {
        char setting[128] = "";
        if (tuned_subgroups || tuning_value(ctx, self, KNOB_KEYS, 0) || tuned_stages > 1 ||
            row_tiles > 1 || plan->row_cluster || plan->q_shared || buffers > 1)
            snprintf(setting, sizeof setting, " (%u subgroups of %u rows, at most %u keys%s%s%s: "
                     "the tuning)", subgroups, rs, max_tile, plan->stages > 1 ? ", two stages" : "",
                     buffers > 1 ? ", two buffers" : "",
                     plan->q_shared ? ", Q in shared memory" : "");
        snprintf(why, why_size, "%s: tiles for head sizes %lld and %lld with %ux%ux%u matrices "
                 "do not fit in %u bytes of shared memory and %d registers%s", name,
                 (long long)d->D, (long long)d->Dv, s.m, s.n, s.k, info->shared_memory_bytes,
                 COOPMAT_MATRIX_REGISTERS, setting);
        return false;
    }
    uint32_t wg = subgroups * sg;
    if (wg > info->max_workgroup_invocations) {
        snprintf(why, why_size, "%s: a workgroup of %u invocations exceeds the device's %u",
                 name, wg, info->max_workgroup_invocations);
        return false;
    }
    plan->buffers = buffers;
    plan->rows_per_workgroup = br;
    plan->workgroup = wg;
    plan->step = plan->bc;
    if (emulated && cpu) {
        /* Per tile, each lane walks its share of the K and V tiles and of the
         * softmax, and its elements of every block operation (score and
         * output products, stores, operand loads, a rescaling) and, with
         * bf16 inputs, of the K tile's exponents and factors, the V tile's
         * reduction and the two passes over its share of the staged tiles
         * (their exponents, their conversion in place), and the check of
         * the subgroup's rows for a rescaling; all counted as one. The
         * block operations repeat for each of a subgroup's row_tiles row
         * blocks. With the softmax in registers, each
         * held row walks its elements of the score blocks twice and of the
         * output blocks once, and the score blocks become P operands. */
        uint32_t bc = plan->bc, lpr = sg >= rs ? sg / rs : 1, passes = sg >= rs ? 1 : rs / sg;
        uint64_t acc = div_up((uint64_t)s.m * s.n, sg), a = div_up((uint64_t)s.m * s.k, sg);
        uint64_t blocks = (uint64_t)(dp / s.k + 2) * (bc / s.n) * (acc + 1) +
                          (uint64_t)(bc / s.k) * (a + 1) +
                          (uint64_t)(dvp / s.n) * (bc / s.k + 3) * (acc + 1);
        uint64_t per_tile = div_up((uint64_t)bc * (dp + dvp), wg) + 2ull * passes * div_up(bc, lpr) +
                            row_tiles * blocks + rs + 8 +
                            (plan->q_shared ? (uint64_t)row_tiles * (dp / s.k) * (a + 1) : 0) +
                            (bf16 ? 2 * div_up(bc, wg) + 8 +
                                        2 * div_up((uint64_t)bc * (dp + dvp) / COOPMAT_PACK, wg)
                                  : 0);
        if (plan->row_cluster)
            per_tile += (uint64_t)row_tiles * plan->lane_rows * (2 * (bc / s.n) + dvp / s.n) *
                            (acc / plan->lane_rows + 1) +
                        (uint64_t)row_tiles * (bc / s.n) * (acc + 1);
        plan->max_keys_per_split = (uint32_t)(CPU_LOOP_BUDGET / per_tile * bc);
    }
    plan->vec4 = d->Dv % 4 == 0;
    plan->weights_dtype = plan->bf16_matrices ? VKATTN_DTYPE_BF16 : VKATTN_DTYPE_F16;
    plan->target_workgroups = COOPMAT_TARGET_WORKGROUPS;
    plan->heavy_first = fused_heavy_first(ctx, self, d);
    return true;
}

static bool coopmat_plan(vkattn_context *ctx, const attention_call *c, fused_plan *plan,
                         char *why, size_t why_size)
{
    return coopmat_plan_common(ctx, c, false, plan, why, why_size);
}

static bool coopmat_emulated_plan(vkattn_context *ctx, const attention_call *c, fused_plan *plan,
                                  char *why, size_t why_size)
{
    return coopmat_plan_common(ctx, c, true, plan, why, why_size);
}

static int coopmat_rank(const vkattn_context *ctx, const attention_call *c)
{
    return ctx->vk.enabled.coopmat && coopmat_default(ctx, COOPMAT_KERNEL_ATTENTION, attention_bf16_inputs(c) != 0) ? 4 : 0;
}

/* Both builds: the plan names the shader (plan->build). */
static void coopmat_specialize(const attention_call *c, const fused_plan *plan, bool split,
                               vk_dispatch *dispatch)
{
    const attention_dims *d = &c->dims;
    uint32_t *spec = dispatch->key.spec;
    dispatch->key.shader = plan->build;
    dispatch->key.subgroup_size = plan->subgroup_size;
    dispatch->key.spec_count = ATTENTION_SPEC_COUNT;
    spec[AM_SPEC_WORKGROUP] = plan->workgroup;
    spec[AM_SPEC_BR] = plan->rows_per_workgroup;
    spec[AM_SPEC_BC] = plan->bc;
    spec[AM_SPEC_D] = (uint32_t)d->D;
    spec[AM_SPEC_DV] = (uint32_t)d->Dv;
    spec[AM_SPEC_CAUSAL] = d->causal;
    spec[AM_SPEC_SPLIT] = split;
    spec[AM_SPEC_MM] = plan->shape.m;
    spec[AM_SPEC_MN] = plan->shape.n;
    spec[AM_SPEC_MK] = plan->shape.k;
    spec[AM_SPEC_SUBGROUP_SIZE] =
        plan->workgroup / (plan->rows_per_workgroup / (plan->shape.m * plan->row_tiles));
    spec[AM_SPEC_STAGES] = plan->stages;
    spec[AM_SPEC_BF16_INPUTS] = attention_bf16_inputs(c);
    spec[AM_SPEC_HEAVY_FIRST] = plan->heavy_first;
    spec[AM_SPEC_ROW_TILES] = plan->row_tiles;
    spec[AM_SPEC_ROW_CLUSTER] = plan->row_cluster;
    spec[AM_SPEC_LANE_ROWS] = plan->lane_rows;
    spec[AM_SPEC_SLOT_TABLE] = plan->slot_table;
    spec[AM_SPEC_ABLATE] = plan->ablate;
    spec[AM_SPEC_Q_SHARED] = plan->q_shared;
    spec[AM_SPEC_SCORES_HELD] = plan->scores_held;
    spec[AM_SPEC_BUFFERS] = plan->buffers;
    spec[AM_SPEC_BF16_MATRICES] = plan->bf16_matrices;
    spec[ATTENTION_VARIANTS_SPEC_ID] = attention_variant_bits(c);
    dispatch->groups[0] = plan->blocks * plan->splits;
}

const fused_variant_row fused_coopmat_variant = {
    VKATTN_FUSED_COOPMAT, "coopmat", coopmat_rank, coopmat_plan, coopmat_specialize,
};

const fused_variant_row fused_coopmat_emulated_variant = {
    VKATTN_FUSED_COOPMAT_EMULATED, "coopmat_emulated", fused_rank_never, coopmat_emulated_plan,
    coopmat_specialize,
};
