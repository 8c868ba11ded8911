/* Matmul variants "coopmat" and "coopmat_emulated" (matmul_coopmat.comp): f16 A
 * and B on the matrix units, f32 accumulation, for the layer's projections with
 * f16 weights. Needs: f16 A and B; VK_NV_cooperative_matrix with an f16 shape
 * (real) or shaderFloat16 (emulated). The real one is AUTO's choice for f16
 * where its revision passed the GPU check (coopmat_default: revision 3, a grid
 * of subgroups each owning several matrices both ways, the next slab loaded
 * while this one computes, on NVIDIA since the H200 of 2026-11-27: 1.38 ms at
 * 4096^3 f16, 99.6 TFLOP/s, beside revision 2's blocks' 1.85); elsewhere
 * VKATTN_COOPMAT=1 or forced. The emulated build
 * (VKATTN_COOPMAT_EMULATED_SHAPE) is for tests only. */
#include "ops_common.h"
#include "tuning.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum matmul_coopmat_spec { /* constant_id values in matmul_coopmat.comp */
    MC_SPEC_WORKGROUP = 0, MC_SPEC_BM, MC_SPEC_BN, MC_SPEC_BK, MC_SPEC_TRANSPOSE_B,
    MC_SPEC_HAS_BIAS, MC_SPEC_BIAS_DTYPE, MC_SPEC_MM, MC_SPEC_MN, MC_SPEC_MK,
    MC_SPEC_A_ALIGNED8, MC_SPEC_B_ALIGNED8, MC_SPEC_SUBGROUPS, MC_SPEC_GRID_COLUMNS,
    MC_SPEC_STAGES, MC_SPEC_COUNT
};

/* How a workgroup covers its block of C: a grid of subgroups (grid_columns of
 * them along N, the rest along M), each owning sub_m x sub_n elements of C as
 * matrices of the device's shape, K staged `depth` at a time, in one or two
 * stages (two: the next slab's loads in registers while this one computes). */
typedef struct mc_plan {
    uint32_t subgroups, grid_columns;
    uint32_t sub_m, sub_n;      /* elements; matrices of the shape, at least one */
    uint32_t depth;
    uint32_t stages;
} mc_plan;

/* The first row for the device's class whose min_rows M reaches. */
static const struct {
    bool gpu;
    uint32_t min_rows;
    mc_plan plan;
} plans[] = {
    /* GPUs: 128 x 128 blocks of C, 8 subgroups of 64 x 32 (four row blocks by
     * two column blocks at 16x16: each B block loaded from shared memory feeds
     * four products and each A operand two, where revision 2's one row block
     * by eight loaded a B block for every product), two stages. About 100
     * registers a lane, 27 KiB of shared memory. */
    {true, 65, {8, 4, 64, 32, 32, 2}},
    /* GPUs, 17 to 64 rows (projections of a few tokens): 64 x 128 blocks, the
     * four subgroups side by side, so that a short A wastes fewer rows. */
    {true, 17, {4, 4, 64, 32, 32, 2}},
    /* GPUs, up to 16 rows (decoding): one row block a subgroup. */
    {true, 0, {4, 4, 16, 32, 32, 2}},
    /* CPU devices (the emulated build, in tests): 32 x 32 blocks, 16-deep
     * slabs, one stage: small enough for lavapipe to compile fast. */
    {false, 0, {2, 1, 16, 32, 16, 1}},
};

/* A workgroup's blocks, as the kernel is specialized. */
typedef struct mc_blocks {
    uint32_t bm, bn, bk;
    uint32_t subgroups, grid_columns, stages;
} mc_blocks;

/* Bytes of shared memory the kernel takes: packed slabs with rows padded by
 * one element, one accumulator per subgroup on its way out; the emulated
 * build's matrices besides (each subgroup's A operands, every accumulator). */
static uint64_t shared_bytes(const mc_blocks *b, bool transpose_b, coopmat_shape s,
                             uint32_t row_blocks, bool emulated)
{
    uint64_t b_rows = transpose_b ? b->bn : b->bk, b_width = transpose_b ? b->bk : b->bn;
    return 2ull * ((uint64_t)b->bm * (b->bk + COOPMAT_PACK) + b_rows * (b_width + COOPMAT_PACK)) +
           4ull * b->subgroups * s.m * s.n +
           (emulated ? 2ull * b->subgroups * row_blocks * s.m * s.k + 4ull * b->bm * b->bn : 0);
}

/* A refusal: its reason written into `why`, its status returned. The checks
 * below only describe; vk_matmul_coopmat reports (ctx_fail), AUTO asks quietly. */
static vkattn_status refuse(char *why, size_t size, vkattn_status status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(why, size, fmt, args);
    va_end(args);
    return status;
}

/* The blocks for this call: the plans table's row for the device's class
 * (the GPU's for the emulated build with VKATTN_COOPMAT_EMULATED_TILING=gpu,
 * so that tests reach its grid and two stages), with the knobs an experiment
 * set (tuning.h). Untuned matrices a subgroup are dropped until the blocks
 * fit in shared memory; a tuned setting that cannot be taken is refused,
 * naming it, rather than bent. */
static vkattn_status plan_blocks(const vkattn_context *ctx, const matmul_call *c, coopmat_shape s,
                                 bool emulated, uint32_t sg, const char *name, mc_blocks *out,
                                 char *why, size_t why_size)
{
    const vkattn_device_info *info = &ctx->info;
    const char *tiling = getenv("VKATTN_COOPMAT_EMULATED_TILING");
    bool gpu = emulated ? tiling && strcmp(tiling, "gpu") == 0
                        : info->type != VKATTN_DEVICE_TYPE_CPU;
    size_t row = 0;
    while (plans[row].gpu != gpu || (uint64_t)c->M < plans[row].min_rows)
        row++;  /* the last row of each class takes any M */
    const mc_plan *plan = &plans[row].plan;
    int kernel = emulated ? TUNING_MATMUL_COOPMAT_EMULATED : TUNING_MATMUL_COOPMAT;
    mc_blocks b = {.subgroups = tuning_value(ctx, kernel, KNOB_SUBGROUPS, plan->subgroups)};
    b.grid_columns = tuning_value(ctx, kernel, KNOB_GRID_COLUMNS,
                                  gcd(plan->grid_columns, b.subgroups));
    b.stages = tuning_value(ctx, kernel, KNOB_STAGES, plan->stages);
    /* Column blocks in units that keep BN a whole number of packed elements. */
    uint32_t column_unit = COOPMAT_PACK / gcd(s.n * b.grid_columns, COOPMAT_PACK);
    uint32_t depth_unit = lcm(s.k, COOPMAT_PACK);
    uint32_t rows = tuning_value(ctx, kernel, KNOB_ROWS, plan->sub_m > s.m ? plan->sub_m / s.m : 1);
    uint32_t columns = tuning_value(ctx, kernel, KNOB_COLUMNS,
                                    round_up(plan->sub_n > s.n ? plan->sub_n / s.n : 1, column_unit));
    b.bk = tuning_value(ctx, kernel, KNOB_DEPTH, round_up(plan->depth, depth_unit));
    char setting[64] = "";
    if (b.subgroups % b.grid_columns)
        tuning_describe(kernel, KNOB_GRID_COLUMNS, b.grid_columns, setting, sizeof setting);
    else if (columns % column_unit)
        tuning_describe(kernel, KNOB_COLUMNS, columns, setting, sizeof setting);
    else if (b.bk % depth_unit)
        tuning_describe(kernel, KNOB_DEPTH, b.bk, setting, sizeof setting);
    if (setting[0])
        return refuse(why, why_size, VKATTN_ERROR_UNSUPPORTED,
                      "matmul: %s: %s cannot be taken: with %u subgroups and %ux%ux%u "
                      "matrices, the subgroups must make whole rows of the grid, a block's "
                      "columns whole 16-byte elements (%u matrices a subgroup at a time) and "
                      "slabs a multiple of %u deep", name, setting, b.subgroups, s.m, s.n, s.k,
                      column_unit, depth_unit);
    bool rows_tuned = tuning_value(ctx, kernel, KNOB_ROWS, 0) != 0;
    bool columns_tuned = tuning_value(ctx, kernel, KNOB_COLUMNS, 0) != 0;
    uint64_t shared;
    for (;;) {
        b.bm = b.subgroups / b.grid_columns * rows * s.m;
        b.bn = b.grid_columns * columns * s.n;
        shared = shared_bytes(&b, c->transpose_b, s, rows, emulated);
        if (shared <= info->shared_memory_bytes)
            break;
        if (!columns_tuned && columns > column_unit)
            columns -= column_unit;
        else if (!rows_tuned && rows > 1)
            rows--;
        else
            break;
    }
    uint32_t wg = b.subgroups * sg;
    if (shared > info->shared_memory_bytes || wg > info->max_workgroup_invocations)
        return refuse(why, why_size, VKATTN_ERROR_UNSUPPORTED,
                      "matmul: %s: a %ux%u block of C (%u subgroups, %u along N, each %ux%u "
                      "%ux%ux%u matrices), slabs %u deep, needs %llu bytes of shared memory "
                      "and %u invocations; %s has %u and %u", name, b.bm, b.bn, b.subgroups,
                      b.grid_columns, rows, columns, s.m, s.n, s.k, b.bk,
                      (unsigned long long)shared, wg, info->name, info->shared_memory_bytes,
                      info->max_workgroup_invocations);
    *out = b;
    return VKATTN_OK;
}

/* What the kernel takes from the device and the call, settled before
 * recording: the matrix shape, the subgroup size and the blocks. */
typedef struct mc_setup {
    coopmat_shape shape;
    uint32_t sg;
    bool required;  /* the subgroup size is requested (full subgroups) */
    mc_blocks blocks;
} mc_setup;

/* The setup for this call, or the reason the kernel cannot take it (`why`). */
static vkattn_status setup_call(const vkattn_context *ctx, const matmul_call *c, bool emulated,
                                mc_setup *out, char *why, size_t why_size)
{
    const vkattn_device_info *info = &ctx->info;
    const char *name = emulated ? "the emulated coopmat variant" : "the coopmat variant";
    if (c->a->dtype != VKATTN_DTYPE_F16 || c->b->dtype != VKATTN_DTYPE_F16)
        return refuse(why, why_size, VKATTN_ERROR_UNSUPPORTED,
                      "matmul: %s takes f16 A and B (got %s, %s)", name,
                      dtype_name(c->a->dtype), dtype_name(c->b->dtype));
    if (c->masked_a_skips)
        return refuse(why, why_size, VKATTN_ERROR_UNSUPPORTED,
                      "matmul: %s cannot skip masked elements of A (the matrix units "
                      "multiply whole blocks)", name);
    coopmat_shape shape;
    if (emulated) {
        if (!ctx->vk.enabled.float16)
            return refuse(why, why_size, VKATTN_ERROR_UNSUPPORTED, "matmul: %s needs "
                          "shaderFloat16, which %s lacks or the application did not enable",
                          name, info->name);
        if (!coopmat_emulated_shape(&shape))
            return refuse(why, why_size, VKATTN_ERROR_INVALID_ARGUMENT,
                          "matmul: VKATTN_COOPMAT_EMULATED_SHAPE is not MxNxK with sizes 1..64");
    } else if (!ctx->vk.enabled.coopmat || !coopmat_device_shape(&ctx->vk.enabled, &shape)) {
        return refuse(why, why_size, VKATTN_ERROR_UNSUPPORTED, "matmul: %s needs "
                      "VK_NV_cooperative_matrix or VK_KHR_cooperative_matrix with an f16 x f16 "
                      "-> f32 subgroup shape, which %s lacks or the application did not enable",
                      name, info->name);
    }
    /* Each subgroup owns its part of the block by gl_SubgroupID, so the
     * pipeline's subgroup size must be the one counted here; and a matrix
     * operation needs every lane of its subgroup active, which only full
     * subgroups of a required size promise. */
    bool required;
    uint32_t sg = coopmat_subgroup_size(ctx, emulated, &required);
    const device_caps *caps = &ctx->vk.enabled;
    if (sg == 0 || (emulated ? !required && caps->subgroup_min != caps->subgroup_max : !required))
        return refuse(why, why_size, VKATTN_ERROR_UNSUPPORTED, "matmul: %s needs one subgroup "
                      "size for the pipeline (%s: full subgroups of a required size), which %s "
                      "cannot give", name, emulated ? "one the device always uses, or" : "with",
                      info->name);
    /* The real kernel's matrix loads start on a whole packed element. */
    if (!emulated && (shape.k % COOPMAT_PACK || shape.n % COOPMAT_PACK))
        return refuse(why, why_size, VKATTN_ERROR_UNSUPPORTED, "matmul: %s: the device's "
                      "%ux%ux%u matrices; the kernel loads tiles %d halves at a time, so N and K "
                      "must be multiples of %d", name, shape.m, shape.n, shape.k, COOPMAT_PACK,
                      COOPMAT_PACK);
    *out = (mc_setup){.shape = shape, .sg = sg, .required = required};
    return plan_blocks(ctx, c, shape, emulated, sg, name, &out->blocks, why, why_size);
}

/* AUTO takes the real kernel for f16 where it is the default
 * (coopmat_default) and it can take the call; otherwise the scalar kernels,
 * so that a refusal (an adopted device without a required subgroup size, a
 * shape the kernel cannot load) never fails a call they would do. */
bool matmul_coopmat_wanted(const vkattn_context *ctx, const matmul_call *c)
{
    if (!ctx->vk.enabled.coopmat || c->masked_a_skips || c->a->dtype != VKATTN_DTYPE_F16 ||
        c->b->dtype != VKATTN_DTYPE_F16 || !coopmat_default(ctx, COOPMAT_KERNEL_MATMUL, false))
        return false;
    mc_setup setup;
    char why[8]; /* not reported */
    return setup_call(ctx, c, false, &setup, why, sizeof why) == VKATTN_OK;
}

vkattn_status vk_matmul_coopmat(vkattn_context *ctx, const matmul_call *c, bool emulated)
{
    mc_setup setup;
    char why[512];
    vkattn_status st = setup_call(ctx, c, emulated, &setup, why, sizeof why);
    if (st != VKATTN_OK)
        return ctx_fail(ctx, st, "%s", why);
    const mc_blocks *blk = &setup.blocks;
    /* 16-byte loads where every row of a slab starts on 8 halves. */
    bool a_aligned8 = c->K % 8 == 0 && c->a_offset % 8 == 0;
    bool b_aligned8 = (c->transpose_b ? c->K % 8 == 0 : c->N % 8 == 0) && c->b_offset % 8 == 0 &&
                      (uint64_t)c->N * c->K % 8 == 0;
    vk_dispatch dispatch = {
        .key = {.shader = emulated ? SHADER_MATMUL_COOPMAT_EMULATED
                                   : coopmat_shader(ctx, SHADER_MATMUL_COOPMAT),
                .subgroup_size = setup.required ? setup.sg : 0,
                .spec_count = MC_SPEC_COUNT,
                .spec = {[MC_SPEC_WORKGROUP] = blk->subgroups * setup.sg, [MC_SPEC_BM] = blk->bm,
                         [MC_SPEC_BN] = blk->bn, [MC_SPEC_BK] = blk->bk,
                         [MC_SPEC_TRANSPOSE_B] = c->transpose_b,
                         [MC_SPEC_HAS_BIAS] = c->bias != NULL,
                         [MC_SPEC_BIAS_DTYPE] = shader_dtype(c->bias),
                         [MC_SPEC_MM] = setup.shape.m, [MC_SPEC_MN] = setup.shape.n,
                         [MC_SPEC_MK] = setup.shape.k,
                         [MC_SPEC_A_ALIGNED8] = a_aligned8, [MC_SPEC_B_ALIGNED8] = b_aligned8,
                         [MC_SPEC_SUBGROUPS] = blk->subgroups,
                         [MC_SPEC_GRID_COLUMNS] = blk->grid_columns,
                         [MC_SPEC_STAGES] = blk->stages}},
        .bindings = {vk_bind(c->a, false), vk_bind(c->b, false), vk_bind(c->bias, false),
                     vk_bind(c->c, true)},
        .binding_count = 4,
    };
    return matmul_record_batches(ctx, &dispatch, c, div_up(c->N, blk->bn), div_up(c->M, blk->bm));
}
