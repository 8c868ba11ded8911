/* Reads a cooperative-matrix accumulator's element layout off the device
 * (shaders/coopmat_layout.comp; coopmat_layout.h says why a kernel needs it),
 * once, as a context starts: for the coopmat attention kernel's softmax in
 * registers where the context's tuning asks for it (coopmat.softmax=2), so that
 * no attention call submits work of its own (nor vkattn_attention_choose
 * records any, nor a recording into an application's command buffer meets a
 * layout not yet read), and as a diagnostic with VKATTN_COOPMAT_LAYOUT=1 in the
 * environment: the context logs (INFO, "coopmat layout: ...") its device's
 * layout, or where it has no matrix units the emulated build's (the library's
 * own: that run tests the probe). */
#include "attention_fused.h"

#include "../coopmat_layout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum layout_spec { /* constant_id values in coopmat_layout.comp */
    LAYOUT_SPEC_WORKGROUP = 0, LAYOUT_SPEC_MM, LAYOUT_SPEC_MN, LAYOUT_SPEC_CLUSTER, LAYOUT_SPEC_MK,
    LAYOUT_SPEC_COUNT
};

/* Whether the probe also checks products and the f16 conversion (its
 * LAYOUT_PRODUCT build): where a product block can become an operand (N == K,
 * packed: a multiple of 8) and every cell index is an integer f16 holds
 * exactly. The softmax in registers takes only a layout so checked. */
static bool probes_products(coopmat_shape s)
{
    return s.n == s.k && s.k % 8 == 0 && s.m * s.n <= 2048;
}

/* The product's table must be the loaded one, and the converted operand's
 * product must hold each cell's own index: what the softmax in registers
 * assumes of the matrix units (coopmat_layout.comp). */
static vkattn_status check_products(vkattn_context *ctx, const float *cells,
                                    const coopmat_layout *out)
{
    uint32_t count = out->rows * out->cols;
    const float *product = cells + 1 + count, *converted = cells + 1 + 2 * count;
    for (uint32_t i = 0; i < count; i++)
        if (product[i] != (float)out->cell[i])
            return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "coopmat layout: a product's "
                            "accumulator is laid out unlike a loaded one (invocation %u's "
                            "element %u: cell %g, loaded %u)", i / out->elements,
                            i % out->elements, product[i], out->cell[i]);
    for (uint32_t e = 0; e < count; e++)
        if (converted[e] != (float)e)
            return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "coopmat layout: an accumulator "
                            "converted to an f16 operand moves its elements (row %u column "
                            "%u holds %g)", e / out->cols, e % out->cols, converted[e]);
    return VKATTN_OK;
}

/* Fills `out` from the cells the kernel wrote (cells[0]: elements an
 * invocation; then each invocation's elements' row * cols + column). */
static vkattn_status read_cells(vkattn_context *ctx, const float *cells, coopmat_shape s,
                                uint32_t lanes, coopmat_layout *out)
{
    uint32_t count = s.m * s.n;
    out->rows = s.m;
    out->cols = s.n;
    out->lanes = lanes;
    float elements = cells[0];
    if (!(elements >= 1.0f && elements <= (float)count && elements == floorf(elements)) ||
        (uint64_t)elements * lanes != count)
        return ctx_fail(ctx, VKATTN_ERROR_DEVICE_LOST, "coopmat layout: the probe reports "
                        "%g elements an invocation; %u x %u over %u invocations is %u",
                        elements, s.m, s.n, lanes, count / lanes);
    out->elements = (uint32_t)elements;
    for (uint32_t i = 0; i < count; i++) {
        float v = cells[1 + i];
        if (!(v >= 0.0f && v < (float)count && v == floorf(v)))
            return ctx_fail(ctx, VKATTN_ERROR_DEVICE_LOST, "coopmat layout: the probe read "
                            "%g at invocation %u's element %u, not a cell of the matrix", v,
                            i / out->elements, i % out->elements);
        out->cell[i] = (uint32_t)v;
    }
    return VKATTN_OK;
}

vkattn_status coopmat_layout_probe(vkattn_context *ctx, bool emulated, coopmat_shape s,
                                   uint32_t cluster, coopmat_layout *out)
{
    bool required;
    uint32_t sg = coopmat_subgroup_size(ctx, emulated, &required);
    if (!emulated && (!ctx->vk.enabled.coopmat || !required))
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "coopmat layout: %s has no cooperative "
                        "matrices with a required subgroup size", ctx->info.name);
    /* Its lanes walk the matrix by gl_SubgroupSize (as the peak probe's). */
    if (emulated && !device_caps_whole_subgroups(&ctx->vk.enabled)) {
        char why[256];
        device_caps_whole_subgroups_why(&ctx->vk.enabled, ctx->info.name, why, sizeof why);
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "coopmat layout: %s", why);
    }
    if (!emulated && ctx->vk.enabled.coopmat_khr)
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "coopmat layout: the probe is built for "
                        "VK_NV_cooperative_matrix only (it serves the softmax in registers, which "
                        "converts accumulators into operands: VK_KHR_cooperative_matrix cannot)");
    uint32_t count = s.m * s.n;
    if (!sg || !count || count > COOPMAT_LAYOUT_MAX_CELLS || count % sg)
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "coopmat layout: %ux%u matrices over "
                        "subgroups of %u: not a whole number of elements an invocation",
                        s.m, s.n, sg);
    bool product = probes_products(s);
    uint32_t written = 1 + (product ? 3 : 1) * count;
    vkattn_tensor *t;
    vkattn_tensor_desc desc = {.dtype = VKATTN_DTYPE_F32, .ndim = 1, .shape = {written}};
    vkattn_status status = vkattn_tensor_create(ctx, &desc, &t);
    if (status != VKATTN_OK)
        return status;
    float *cells = malloc((size_t)written * sizeof *cells);
    vk_dispatch d = {
        .key = {.shader = product ? (emulated ? SHADER_COOPMAT_LAYOUT_PRODUCT_EMULATED
                                              : SHADER_COOPMAT_LAYOUT_PRODUCT)
                                  : emulated ? SHADER_COOPMAT_LAYOUT_EMULATED
                                             : SHADER_COOPMAT_LAYOUT,
                .subgroup_size = required ? sg : 0,
                .spec_count = LAYOUT_SPEC_COUNT,
                .spec = {[LAYOUT_SPEC_WORKGROUP] = sg, [LAYOUT_SPEC_MM] = s.m,
                         [LAYOUT_SPEC_MN] = s.n, [LAYOUT_SPEC_CLUSTER] = cluster,
                         [LAYOUT_SPEC_MK] = s.k}},
        .bindings = {vk_bind(t, true)},
        .binding_count = 1,
        .groups = {1, 1, 1},
    };
    if (!cells)
        status = ctx_fail(ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "coopmat layout: %u cells",
                          count);
    else if ((status = vk_cmd_dispatch(ctx, &d)) == VKATTN_OK &&
             (status = vkattn_tensor_download(t, cells, VKATTN_DTYPE_F32)) == VKATTN_OK &&
             (status = read_cells(ctx, cells, s, sg, out)) == VKATTN_OK && product)
        status = check_products(ctx, cells, out);
    free(cells);
    vkattn_tensor_destroy(t);
    return status;
}

/* coopmat_layout_workgroup.comp's matrix: ROWS x COLS. */
#define WORKGROUP_LAYOUT_SIDE 64

/* Which invocations hold row 0 of a layout: the first, the last, how many. */
static void row_holders(const coopmat_layout *l, uint32_t *first, uint32_t *last,
                        uint32_t *count)
{
    *first = l->lanes, *last = 0, *count = 0;
    for (uint32_t lane = 0; lane < l->lanes; lane++) {
        bool holds = false;
        for (uint32_t k = 0; k < l->elements; k++)
            holds = holds || l->cell[lane * l->elements + k] / l->cols == 0;
        if (holds) {
            *first = lane < *first ? lane : *first;
            *last = lane;
            ++*count;
        }
    }
}

/* The layout of a workgroup-scope accumulator (coopmat_layout_workgroup.comp),
 * logged: on the device where VK_NV_cooperative_matrix2 gives such matrices,
 * else (no matrix units at all) the emulated build's, else why not. What a
 * softmax on such a matrix's elements would need to know: which invocations
 * share a row, and whether one subgroup holds it. */
static void report_workgroup_layout(vkattn_context *ctx, bool emulated)
{
    char why[512];
    if (!coopmat_workgroup_build(ctx, emulated, &emulated, why, sizeof why)) {
        ctx_log(ctx, VKATTN_LOG_INFO, "coopmat layout, workgroup scope: not read: %s", why);
        return;
    }
    const device_caps *caps = &ctx->vk.caps;
    const uint32_t side = WORKGROUP_LAYOUT_SIDE, count = side * side;
    uint32_t invocations = emulated ? 16 : caps->coopmat2_invocations;
    bool required;
    uint32_t sg = coopmat_subgroup_size(ctx, emulated, &required);
    const char *build = emulated ? " (emulated build)" : "";
    vkattn_status s = VKATTN_OK;
    coopmat_layout *layout = malloc(sizeof *layout);
    float *cells = malloc((1 + (size_t)count) * sizeof *cells);
    vkattn_tensor *t = NULL;
    vkattn_tensor_desc desc = {.dtype = VKATTN_DTYPE_F32, .ndim = 1, .shape = {1 + count}};
    if (!layout || !cells)
        s = ctx_fail(ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "%u cells", count);
    else if (!invocations || count % invocations ||
             invocations > ctx->info.max_workgroup_invocations ||
             (emulated ? 8ull * count : 4ull * count + caps->coopmat2_reserved_shared) >
                 ctx->info.shared_memory_bytes ||
             (!emulated && (side % caps->coopmat2_granularity[0] ||
                            side % caps->coopmat2_granularity[1] ||
                            side > caps->coopmat2_flexible_max)))
        s = ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "a %ux%u matrix on workgroups of %u "
                     "(granularity %ux%u, sides up to %u, %u bytes of shared memory, %u of "
                     "them reserved) cannot be read", side, side, invocations,
                     caps->coopmat2_granularity[0], caps->coopmat2_granularity[1],
                     caps->coopmat2_flexible_max, ctx->info.shared_memory_bytes,
                     caps->coopmat2_reserved_shared);
    else
        s = vkattn_tensor_create(ctx, &desc, &t);
    if (s == VKATTN_OK) {
        vk_dispatch d = {
            .key = {.shader = emulated ? SHADER_COOPMAT_LAYOUT_WORKGROUP_EMULATED
                                       : SHADER_COOPMAT_LAYOUT_WORKGROUP_KHR,
                    .subgroup_size = !emulated && required ? sg : 0,
                    .spec_count = 1,
                    .spec = {invocations}},
            .bindings = {vk_bind(t, true)},
            .binding_count = 1,
            .groups = {1, 1, 1},
        };
        if ((s = vk_cmd_dispatch(ctx, &d)) == VKATTN_OK &&
            (s = vkattn_tensor_download(t, cells, VKATTN_DTYPE_F32)) == VKATTN_OK)
            s = read_cells(ctx, cells, (coopmat_shape){side, side, side}, invocations, layout);
    }
    if (s == VKATTN_OK) {
        char line[700]; /* cut short of the log's 1024, so that the row's holders follow */
        uint32_t first, last, holders;
        coopmat_layout_describe(layout, line, sizeof line);
        row_holders(layout, &first, &last, &holders);
        ctx_log(ctx, VKATTN_LOG_INFO, "coopmat layout, workgroup scope%s: %s; row 0 in %u "
                "invocations from %u to %u, subgroups of %u", build, line, holders, first,
                last, sg);
    } else {
        ctx_log(ctx, VKATTN_LOG_WARNING, "coopmat layout, workgroup scope%s: not read: %s",
                build, ctx->last_error);
        ctx->last_error[0] = '\0';
    }
    vkattn_tensor_destroy(t);
    free(cells);
    free(layout);
}

bool coopmat_layout_wanted(void) { return env_is_one("VKATTN_COOPMAT_LAYOUT"); }

void coopmat_layout_report(vkattn_context *ctx)
{
    if (!coopmat_layout_wanted() || ctx->vk.external)
        return;
    coopmat_shape s;
    bool emulated = !(ctx->vk.enabled.coopmat && coopmat_device_shape(&ctx->vk.enabled, &s));
    if (emulated && !coopmat_emulated_shape(&s))
        return;
    coopmat_layout *layout = malloc(sizeof *layout);
    if (!layout)
        return;
    char line[900];
    vkattn_status status = coopmat_layout_probe(ctx, emulated, s, 0, layout);
    if (status == VKATTN_OK) {
        coopmat_layout_describe(layout, line, sizeof line);
        ctx_log(ctx, VKATTN_LOG_INFO, "coopmat layout%s: %s", emulated ? " (emulated build)" : "",
                line);
    } else {
        ctx_log(ctx, VKATTN_LOG_WARNING, "coopmat layout: not read: %s", ctx->last_error);
        ctx->last_error[0] = '\0';
    }
    free(layout);
    report_workgroup_layout(ctx, emulated);
}

/* Whether element k of every lane is in the row of its element k % rows (the
 * emulated build's slots, attention_coopmat.comp's slot_of). */
static bool slots_repeat(const coopmat_layout *l, uint32_t rows)
{
    for (uint32_t i = 0; i < l->lanes * l->elements; i++) {
        uint32_t lane = i / l->elements, k = i % l->elements;
        if (l->cell[i] / l->cols != l->cell[lane * l->elements + k % rows] / l->cols)
            return false;
    }
    return true;
}

/* Reads the layout into `state`: the matrix units' or the emulated build's
 * laid out in clusters of `cluster` lanes. */
static void read_layout(vkattn_context *ctx, bool emulated, coopmat_shape s, uint32_t cluster,
                        coopmat_register_layout_state *state)
{
    state->read = -1;
    state->shape = s;
    if (!probes_products(s)) {
        snprintf(state->why, sizeof state->why, "%ux%ux%u matrices: the probe checks products "
                 "and the f16 conversion only where N == K (a multiple of 8) and M x N <= 2048",
                 s.m, s.n, s.k);
        return;
    }
    coopmat_layout *layout = malloc(sizeof *layout);
    vkattn_status status =
        layout ? coopmat_layout_probe(ctx, emulated, s, cluster, layout)
               : ctx_fail(ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "coopmat layout: no memory");
    if (status != VKATTN_OK) {
        snprintf(state->why, sizeof state->why, "the accumulator layout could not be read: %.150s",
                 ctx->last_error);
        ctx->last_error[0] = '\0';
        free(layout);
        return;
    }
    coopmat_layout_traits t = coopmat_layout_analyze(layout);
    uint32_t table = 0;
    if (!t.bijective || !t.row_lanes)
        snprintf(state->why, sizeof state->why, "%ux%u accumulators do not keep each row in an "
                 "aligned group of lanes", s.m, s.n);
    else if (emulated && (t.row_lanes != cluster || t.lane_rows != s.m * cluster / layout->lanes ||
                          !slots_repeat(layout, t.lane_rows)))
        snprintf(state->why, sizeof state->why, "the emulated build's %ux%u accumulators in "
                 "clusters of %u lanes read as clusters of %u, %u rows a lane (or not in slot "
                 "k %% rows)", s.m, s.n, cluster, t.row_lanes, t.lane_rows);
    else if (!emulated && !coopmat_layout_slot_table(layout, t.lane_rows, &table))
        snprintf(state->why, sizeof state->why, "%ux%u accumulators hold %u elements and %u rows "
                 "a lane, not in the same places in every lane (the kernel takes at most 16 and "
                 "4)", s.m, s.n, layout->elements, t.lane_rows);
    else {
        state->read = 1;
        state->row_cluster = t.row_lanes;
        state->lane_rows = t.lane_rows;
        state->slot_table = table; /* the emulated build's slots: k % lane_rows */
        ctx_log(ctx, VKATTN_LOG_INFO, "coopmat layout%s for the softmax in registers: %ux%u "
                "accumulators, each row in %u lanes, %u row%s a lane, row slots 0x%08x",
                emulated ? " (emulated build)" : "", s.m, s.n, t.row_lanes, t.lane_rows,
                t.lane_rows > 1 ? "s" : "", table);
    }
    free(layout);
}

/* The emulated build's cluster for s.m x s.n accumulators on sg lanes (its
 * layout is the library's: coopmat.glsl's ACC_CLUSTER): the smallest of at
 * least 2 lanes (so that the clustered reductions run) giving each lane 1 to 4
 * rows; 0 if none does. */
static uint32_t emulated_cluster(coopmat_shape s, uint32_t sg)
{
    for (uint32_t c = 2; c <= sg; c *= 2)
        if (s.m * c % sg == 0 && s.n % c == 0 && s.m * c / sg >= 1 && s.m * c / sg <= 4)
            return c;
    return 0;
}

void coopmat_register_layout_init(vkattn_context *ctx)
{
    bool required;
    uint32_t sg = kernel_subgroup_size(ctx, &required);
    coopmat_shape s;
    if (tuning_value(ctx, VKATTN_FUSED_COOPMAT, KNOB_SOFTMAX, 1) == 2 && ctx->vk.enabled.coopmat &&
        coopmat_device_shape(&ctx->vk.enabled, &s))
        read_layout(ctx, false, s, 0, &ctx->vk.coopmat_layouts[0]);
    /* The emulated build's layout is known by construction; read back here for
     * the shape of the moment, it tests the probe and this path. */
    if (tuning_value(ctx, VKATTN_FUSED_COOPMAT_EMULATED, KNOB_SOFTMAX, 1) == 2 &&
        coopmat_emulated_shape(&s) && s.n == s.k && emulated_cluster(s, sg))
        read_layout(ctx, true, s, emulated_cluster(s, sg), &ctx->vk.coopmat_layouts[1]);
    for (int i = 0; i < 2; i++)
        if (ctx->vk.coopmat_layouts[i].read < 0)
            ctx_log(ctx, VKATTN_LOG_WARNING, "coopmat layout%s: no softmax in registers: %s",
                    i ? " (emulated build)" : "", ctx->vk.coopmat_layouts[i].why);
}

bool coopmat_register_layout(const vkattn_context *ctx, bool emulated, coopmat_shape s,
                             uint32_t sg, uint32_t *row_cluster, uint32_t *lane_rows,
                             uint32_t *slot_table_out, char *why, size_t why_size)
{
    if (s.n != s.k) {
        snprintf(why, why_size, "%ux%ux%u matrices: a score block becomes a P operand as it is "
                 "only where N == K", s.m, s.n, s.k);
        return false;
    }
    if (emulated) {
        uint32_t cluster = emulated_cluster(s, sg);
        if (!cluster) {
            snprintf(why, why_size, "%ux%u accumulators on %u lanes: no cluster gives a lane 1 "
                     "to 4 rows", s.m, s.n, sg);
            return false;
        }
        *row_cluster = cluster;
        *lane_rows = s.m * cluster / sg;
        *slot_table_out = 0; /* slot k % lane_rows */
        return true;
    }
    const coopmat_register_layout_state *state = &ctx->vk.coopmat_layouts[0];
    if (state->read > 0 && state->shape.m == s.m && state->shape.n == s.n) {
        *row_cluster = state->row_cluster;
        *lane_rows = state->lane_rows;
        *slot_table_out = state->slot_table;
        return true;
    }
    snprintf(why, why_size, "%s", state->read < 0 ? state->why
                                                  : "the device's accumulator layout was not "
                                                    "read as the context started");
    return false;
}
