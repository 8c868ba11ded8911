/* Fused variants "coopmat_workgroup" and "coopmat_workgroup_emulated"
 * (attention_coopmat_workgroup.comp): S = Q K^T and O += P V each one product
 * spanning the workgroup (VK_NV_cooperative_matrix2's workgroup scope and
 * flexible dimensions, through VK_KHR_cooperative_matrix), the online softmax
 * in f32 between them, K and V loaded straight from their buffers where a tile
 * allows (the driver stages them) and staged by the kernel elsewhere.
 *
 * Good at (the hope it was built on, untimed until a GPU check runs it): f16
 * and bf16 prefill on devices whose workgroup-scope products outrun the
 * 16x16x16 subgroup products of the coopmat kernel (Hopper's warpgroup
 * products). Needs: f16 or bf16 Q, K and V (bf16 converted to f16 as it is
 * staged, as the coopmat kernel converts it: bf16 K and V are then always
 * staged); head sizes up to 256; workgroup-scope matrices, which a context has
 * only on a device vkattn creates with VKATTN_COOPMAT_KHR=1 and
 * VKATTN_COOPMAT_WORKGROUP=1 (or a probe's variable), at the workgroup size
 * the device lists for f16 products; whole subgroups of a required size;
 * shared memory for its scratch block, P and the driver's reserve. Every
 * variant, splits included.
 *
 * AUTO takes it only with VKATTN_COOPMAT_WORKGROUP=1 (ahead of the coopmat
 * kernel) until it has passed the GPU check. The emulated build runs the same
 * kernel with the matrices in shared memory and is never chosen by AUTO:
 * tests force it on lavapipe. Its tiles are small there (16 rows, 16 keys,
 * workgroups of two subgroups) unless tuned: coopmat_workgroup_emulated.rows
 * (rows in blocks of 16), .keys (the largest key tile) and .subgroups (the
 * workgroup), so that tests reach several lanes a row and several rows a
 * lane. */
#include "attention_fused.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum workgroup_attention_spec { /* constant_id values in attention_coopmat_workgroup.comp */
    AW_SPEC_WORKGROUP = 0, AW_SPEC_BR, AW_SPEC_BC, AW_SPEC_D, AW_SPEC_DV, AW_SPEC_CAUSAL,
    AW_SPEC_SPLIT, AW_SPEC_DP, AW_SPEC_ON, AW_SPEC_PIECES, AW_SPEC_SUBGROUP_SIZE,
    AW_SPEC_HEAVY_FIRST, AW_SPEC_DIRECT, AW_SPEC_ABLATE, AW_SPEC_BF16_INPUTS
};
_Static_assert(AW_SPEC_BF16_INPUTS < ATTENTION_VARIANTS_SPEC_ID, "spec ids collide with the variants");

#define WORKGROUP_PACK 8        /* the kernel's PACK: halves of a packed element */
#define WORKGROUP_ROW_BLOCK 16  /* the rows knob counts blocks of this many rows */
#define WORKGROUP_ROWS 64       /* query rows a workgroup, at most */
#define WORKGROUP_MAX_TILE 64   /* keys a tile, at most */
#define WORKGROUP_MAX_TILE_CPU 16
#define WORKGROUP_PIECE 64      /* O's columns an accumulator, about */
#define WORKGROUP_MAX_PIECES 4  /* the kernel's o0 .. o3 */
#define WORKGROUP_TARGET_WORKGROUPS 512

/* The kernel's sizes for one call: rows, keys, padded head sizes, the O
 * pieces, the workgroup. */
typedef struct workgroup_tiles {
    uint32_t br, bc, dp, on, pieces, wg;
    uint32_t bf16; /* attention_bf16_inputs */
    bool emulated;
} workgroup_tiles;

/* attention_coopmat_workgroup.comp's shared memory (its header's count). */
static uint64_t shared_bytes(const workgroup_tiles *t, uint32_t reserved)
{
    uint64_t br = t->br, bc = t->bc, dp = t->dp, on = t->on;
    uint64_t ss = bc + 4, ks = dp + 8, vs = on + 8, os = on + 4, ps = bc + 8;
    uint64_t scratch = br * ss / 4;
    uint64_t rows = br > bc ? br : bc;
    if (rows * ks / 8 > scratch)
        scratch = rows * ks / 8;
    if (bc * vs / 8 > scratch)
        scratch = bc * vs / 8;
    if (br * os / 4 > scratch)
        scratch = br * os / 4;
    uint64_t bytes = 16 * scratch + 2 * br * ps + 4 * br + 64;
    bytes += t->bf16 & 1 ? 4 * br : 16;     /* bf16 Q: each row's exponent */
    bytes += t->bf16 & 2 ? 8 * bc : 32;     /* bf16 K: each key's exponent and factor */
    if (!t->emulated)
        return bytes + reserved;
    return bytes + 2 * br * dp + 2 * dp * bc + 4 * br * bc + 2 * br * bc + 2 * bc * on +
           4 * br * on * t->pieces + 4 * on * (WORKGROUP_MAX_PIECES - t->pieces);
}

/* Whether rows br suit the softmax on workgroups of t->wg: LPR = wg / br
 * neighbouring invocations a row, a power of 2 within a subgroup of sg (they
 * reduce by shuffles), or each invocation whole rows in turn (br a multiple
 * of wg). */
static bool rows_fit_lanes(const workgroup_tiles *t, uint32_t br, uint32_t sg)
{
    if (t->wg < br)
        return br % t->wg == 0;
    uint32_t lpr = t->wg / br;
    return t->wg % br == 0 && !(lpr & (lpr - 1)) && lpr <= sg;
}

/* t's rows and keys: from `first` rows (halved down to the granularity gm,
 * unless `fixed`), the first whose largest key tile that fits shared memory
 * has at least 32 keys (or max_tile if less), else the one with the largest
 * tile; rows fitting the softmax's lanes and sides within `largest`. */
static bool choose_tiles(workgroup_tiles *t, uint32_t first, bool fixed, uint32_t gm,
                         uint32_t key_unit, uint32_t max_tile, uint32_t sg, uint32_t largest,
                         uint32_t reserved, const vkattn_device_info *info)
{
    uint32_t want = max_tile < 32 ? max_tile : 32, best_br = 0, best_bc = 0;
    for (uint32_t br = first; br >= gm && br >= 4; br = fixed || br / 2 % gm ? 0 : br / 2) {
        if (!rows_fit_lanes(t, br, sg) || br > largest)
            continue;
        t->br = br;
        for (t->bc = max_tile / key_unit * key_unit; t->bc >= key_unit; t->bc -= key_unit)
            if (t->bc <= largest && shared_bytes(t, reserved) <= info->shared_memory_bytes)
                break;
        if (t->bc >= key_unit && t->bc >= want)
            return true;
        if (t->bc >= key_unit && t->bc > best_bc)
            best_br = br, best_bc = t->bc;
    }
    t->br = best_br, t->bc = best_bc;
    return best_bc != 0;
}

/* Why the real kernel cannot run on this context ("" where it can). */
static bool real_build_ready(vkattn_context *ctx, const char *name, char *why, size_t why_size)
{
    bool emulated;
    char missing[400];
    if (!coopmat_workgroup_build(ctx, false, &emulated, missing, sizeof missing)) {
        snprintf(why, why_size, "%s needs workgroup-scope matrices: %s", name, missing);
        return false;
    }
    return true;
}

/* The granularity of the f16 workgroup-scope products the device lists for
 * workgroups of `invocations`, or NULL. */
static const uint32_t *workgroup_granularity(const device_caps *caps, uint32_t invocations)
{
    for (uint32_t i = 0; i < caps->coopmat2_shape_count; i++)
        if (caps->coopmat2_shapes[i].invocations == invocations)
            return caps->coopmat2_shapes[i].granularity;
    return NULL;
}

/* What bounds the tiles besides the workgroup: the tuned rows (0: none) and
 * keys, the untuned first rows, the subgroup size. */
typedef struct tile_limits {
    uint32_t rows, max_tile, untuned_rows, sg;
    uint32_t first; /* out: the rows the choice started from */
} tile_limits;

/* t's sides and tiles on workgroups of `wg` whose products have granularity
 * g (M, N, K; NULL for the emulated build, which has none); false where none
 * fit the device: shared memory, its matrix sides and workgroup limits, and a
 * power of 2 of subgroups (VUID-RuntimeSpirv-cooperativeMatrixWorkgroupScope-10169). */
static bool tiles_for_workgroup(const vkattn_context *ctx, const attention_dims *d, uint32_t wg,
                                const uint32_t *g, tile_limits *limits, workgroup_tiles *t)
{
    const vkattn_device_info *info = &ctx->info;
    const device_caps *caps = &ctx->vk.caps;
    uint32_t gm = g ? g[0] : 1, gn = g ? g[1] : 1, gk = g ? g[2] : 1, sg = limits->sg;
    uint32_t key_unit = lcm(lcm(gn, gk), WORKGROUP_PACK);
    uint32_t column_unit = lcm(gn, WORKGROUP_PACK);
    t->dp = round_up((uint32_t)d->D, lcm(gk, WORKGROUP_PACK));
    uint32_t dvp = round_up((uint32_t)d->Dv, column_unit);
    t->pieces = div_up(dvp, WORKGROUP_PIECE);
    t->on = round_up(div_up(dvp, t->pieces), column_unit);
    t->wg = wg;
    uint32_t largest = g ? caps->coopmat2_flexible_max : UINT32_MAX;
    limits->first = round_up(limits->rows ? limits->rows : limits->untuned_rows, gm);
    uint32_t subgroups = wg / sg;
    return (!g || wg <= caps->coopmat2_workgroup_max) && wg % sg == 0 &&
           !(subgroups & (subgroups - 1)) && wg <= info->max_workgroup_invocations &&
           t->dp <= largest && t->on <= largest &&
           choose_tiles(t, limits->first, limits->rows != 0, gm, key_unit, limits->max_tile, sg,
                        largest, caps->coopmat2_reserved_shared, info);
}

static bool plan_common(vkattn_context *ctx, const attention_call *c, bool emulated,
                        fused_plan *plan, char *why, size_t why_size)
{
    const attention_dims *d = &c->dims;
    const vkattn_device_info *info = &ctx->info;
    const device_caps *caps = &ctx->vk.enabled;
    vkattn_fused_variant self =
        emulated ? VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED : VKATTN_FUSED_COOPMAT_WORKGROUP;
    const char *name = emulated ? "the emulated workgroup-scope coopmat kernel"
                                : "the workgroup-scope coopmat kernel";
    if (d->D > FUSED_MAX_HEAD_SIZE || d->Dv > FUSED_MAX_HEAD_SIZE) {
        snprintf(why, why_size, "head sizes %lld and %lld: %s takes up to %d", (long long)d->D,
                 (long long)d->Dv, name, FUSED_MAX_HEAD_SIZE);
        return false;
    }
    if (!attention_16bit_inputs(c, name, why, why_size))
        return false;
    if (emulated && !caps->float16) {
        snprintf(why, why_size, "%s needs shaderFloat16, which %s lacks or the application did "
                 "not enable", name, info->name);
        return false;
    }
    if (!emulated && !real_build_ready(ctx, name, why, why_size))
        return false;
    bool required;
    uint32_t sg = coopmat_subgroup_size(ctx, emulated, &required);
    if (!ctx->vk.subgroup_shuffle || sg == 0 ||
        (!required && caps->subgroup_min != caps->subgroup_max) || (!emulated && !required)) {
        snprintf(why, why_size, "%s needs subgroup shuffles and %s, which %s cannot give", name,
                 emulated ? "one subgroup size for the pipeline"
                          : "full subgroups of a required size",
                 info->name);
        return false;
    }
    plan->subgroup_size = required ? sg : 0;
    plan->workgroup_subgroup = sg;

    /* The workgroup: the emulated build's subgroups (2 unless tuned); the
     * real one's, a size the device lists workgroup-scope products for, the
     * largest unless tuned (the next listed ones where its tiles do not fit:
     * tiles_for_workgroup). Matrix sides: multiples of that size's
     * granularity (M; N; K) and of the packing wherever a side is a row of a
     * packed tile. */
    uint32_t subgroups = tuning_value(ctx, self, KNOB_SUBGROUPS, 0);
    const uint32_t *g = ctx->vk.caps.coopmat2_granularity;
    uint32_t wg = emulated ? (subgroups ? subgroups : 2) * sg : ctx->vk.caps.coopmat2_invocations;
    if (!emulated && subgroups) {
        wg = subgroups * sg;
        g = workgroup_granularity(&ctx->vk.caps, wg);
        if (!g) {
            char setting[64], listed[64] = "";
            tuning_describe(self, KNOB_SUBGROUPS, subgroups, setting, sizeof setting);
            for (uint32_t i = 0, at = 0; i < ctx->vk.caps.coopmat2_shape_count &&
                                         at < sizeof listed; i++)
                at += (uint32_t)snprintf(listed + at, sizeof listed - at, "%s%u", i ? ", " : "",
                                         ctx->vk.caps.coopmat2_shapes[i].invocations);
            snprintf(why, why_size, "%s: %s asks for workgroups of %u invocations, for which %s "
                     "lists no f16 workgroup-scope products (it lists them for %s)", name,
                     setting, wg, info->name, listed[0] ? listed : "none");
            return false;
        }
    }
    bool cpu = info->type == VKATTN_DEVICE_TYPE_CPU;
    uint32_t rows = tuning_value(ctx, self, KNOB_ROWS, 0) * WORKGROUP_ROW_BLOCK;
    uint32_t max_tile = tuning_value(ctx, self, KNOB_KEYS,
                                     cpu ? WORKGROUP_MAX_TILE_CPU : WORKGROUP_MAX_TILE);
    workgroup_tiles t = {.emulated = emulated, .bf16 = attention_bf16_inputs(c)};
    tile_limits limits = {.rows = rows, .max_tile = max_tile,
                          .untuned_rows = cpu ? WORKGROUP_ROW_BLOCK : WORKGROUP_ROWS, .sg = sg};
    bool fits = tiles_for_workgroup(ctx, d, wg, emulated ? NULL : g, &limits, &t);
    uint32_t first_rows = limits.first, first_on = t.on, smaller = 0;
    /* Untuned, where the largest workgroup fits no tiles, the other sizes the
     * device lists, largest first: a finer granularity may fit. */
    for (uint32_t tried = wg, i = 0; !fits && !emulated && !subgroups && i < COOPMAT2_MAX_SHAPES;
         i++) {
        uint32_t next = 0;
        const device_caps *all = &ctx->vk.caps;
        for (uint32_t j = 0; j < all->coopmat2_shape_count; j++)
            if (all->coopmat2_shapes[j].invocations < tried &&
                all->coopmat2_shapes[j].invocations > next)
                next = all->coopmat2_shapes[j].invocations;
        if (!next)
            break;
        workgroup_tiles other = t;
        if (tiles_for_workgroup(ctx, d, next, workgroup_granularity(all, next), &limits, &other))
            t = other, fits = true;
        tried = next;
        smaller++;
    }
    if (!fits) {
        char sides[48] = "";
        if (!emulated)
            snprintf(sides, sizeof sides, " and matrix sides up to %u",
                     ctx->vk.caps.coopmat2_flexible_max);
        snprintf(why, why_size, "%s: no tiles for head sizes %lld and %lld fit %u bytes of "
                 "shared memory, workgroups of %u invocations (subgroups of %u, a power of 2 "
                 "of them, up to %u)%s (from %u rows and %u keys, %u O columns)%s", name,
                 (long long)d->D, (long long)d->Dv, info->shared_memory_bytes, wg, sg,
                 emulated ? info->max_workgroup_invocations : ctx->vk.caps.coopmat2_workgroup_max,
                 sides, first_rows, max_tile, first_on,
                 smaller ? "; nor the smaller workgroups the device lists" : "");
        return false;
    }
    plan->rows_per_workgroup = t.br;
    plan->workgroup = t.wg;
    plan->bc = plan->step = t.bc;
    plan->workgroup_dp = t.dp;
    plan->workgroup_on = t.on;
    plan->workgroup_pieces = t.pieces;
    /* K and V straight from their buffers where no padding column would be
     * read, keys are rows of one tensor and no bf16 needs converting (the
     * kernel checks each tile's bounds and alignment too). */
    plan->workgroup_direct = !d->var.block_table && t.dp == (uint32_t)d->D &&
                             t.on * t.pieces == (uint32_t)d->Dv && !(t.bf16 & 6);
    plan->ablate = tuning_value(ctx, self, KNOB_ABLATE, 0); /* the timing diagnostic */
    plan->build = emulated ? SHADER_ATTENTION_COOPMAT_WORKGROUP_EMULATED
                           : SHADER_ATTENTION_COOPMAT_WORKGROUP_KHR;
    if (emulated && cpu) {
        /* lavapipe's loop budget (CPU_LOOP_BUDGET): per tile, an invocation's
         * elements of each block operation (both products with their inner
         * loops, loads, stores, a rescaling and the plain code of an
         * Inf-holding tile) and its staging, all counted as one. */
        uint64_t wg = t.wg, br = t.br, bc = t.bc, on = t.on * t.pieces;
        uint64_t per_tile = div_up(br * bc * (t.dp + 2) + br * on * (bc + 6) + bc * (t.dp + on),
                                   wg) + 4 * bc + 16;
        if (t.bf16) /* bf16 K's and V's exponents and conversions: each element twice */
            per_tile += div_up(2 * bc * (t.dp + on), wg);
        plan->max_keys_per_split = (uint32_t)(CPU_LOOP_BUDGET / per_tile * bc);
    }
    plan->vec4 = d->Dv % 4 == 0;
    plan->weights_dtype = VKATTN_DTYPE_F16;
    plan->target_workgroups = WORKGROUP_TARGET_WORKGROUPS;
    plan->heavy_first = fused_heavy_first(ctx, self, d);
    return true;
}

static bool workgroup_plan(vkattn_context *ctx, const attention_call *c, fused_plan *plan,
                           char *why, size_t why_size)
{
    return plan_common(ctx, c, false, plan, why, why_size);
}

static bool workgroup_emulated_plan(vkattn_context *ctx, const attention_call *c,
                                    fused_plan *plan, char *why, size_t why_size)
{
    return plan_common(ctx, c, true, plan, why, why_size);
}

/* Opt-in until it has passed a GPU check: ahead of the coopmat kernel with
 * VKATTN_COOPMAT_WORKGROUP=1, where the context has the matrices. */
static int workgroup_rank(const vkattn_context *ctx, const attention_call *c)
{
    (void)c;
    return ctx->vk.enabled.coopmat2_workgroup && env_is_one("VKATTN_COOPMAT_WORKGROUP") ? 5 : 0;
}

static void workgroup_specialize(const attention_call *c, const fused_plan *plan, bool split,
                                 vk_dispatch *dispatch)
{
    const attention_dims *d = &c->dims;
    uint32_t *spec = dispatch->key.spec;
    dispatch->key.shader = plan->build;
    dispatch->key.subgroup_size = plan->subgroup_size;
    dispatch->key.spec_count = ATTENTION_SPEC_COUNT;
    spec[AW_SPEC_WORKGROUP] = plan->workgroup;
    spec[AW_SPEC_BR] = plan->rows_per_workgroup;
    spec[AW_SPEC_BC] = plan->bc;
    spec[AW_SPEC_D] = (uint32_t)d->D;
    spec[AW_SPEC_DV] = (uint32_t)d->Dv;
    spec[AW_SPEC_CAUSAL] = d->causal;
    spec[AW_SPEC_SPLIT] = split;
    spec[AW_SPEC_DP] = plan->workgroup_dp;
    spec[AW_SPEC_ON] = plan->workgroup_on;
    spec[AW_SPEC_PIECES] = plan->workgroup_pieces;
    spec[AW_SPEC_SUBGROUP_SIZE] = plan->workgroup_subgroup;
    spec[AW_SPEC_HEAVY_FIRST] = plan->heavy_first;
    spec[AW_SPEC_DIRECT] = plan->workgroup_direct;
    spec[AW_SPEC_ABLATE] = plan->ablate;
    spec[AW_SPEC_BF16_INPUTS] = attention_bf16_inputs(c);
    spec[ATTENTION_VARIANTS_SPEC_ID] = attention_variant_bits(c);
    dispatch->groups[0] = plan->blocks * plan->splits;
}

const fused_variant_row fused_coopmat_workgroup_variant = {
    VKATTN_FUSED_COOPMAT_WORKGROUP, "coopmat_workgroup", workgroup_rank, workgroup_plan,
    workgroup_specialize,
};

const fused_variant_row fused_coopmat_workgroup_emulated_variant = {
    VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED, "coopmat_workgroup_emulated", fused_rank_never,
    workgroup_emulated_plan, workgroup_specialize,
};
