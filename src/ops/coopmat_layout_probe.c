/* Reads a cooperative-matrix accumulator's element layout off the device
 * (shaders/coopmat_layout.comp; coopmat_layout.h says why a kernel needs it).
 * For now a diagnostic: with VKATTN_COOPMAT_LAYOUT=1 in the environment a new
 * context logs (INFO, "coopmat layout: ...") the layout of its device's first
 * matrix shape, or on devices without matrix units that of the emulated
 * build (whose layout is the library's own: that run tests the probe), so
 * that a GPU check records the layout a register-resident softmax would have
 * to work with before anyone writes one. */
#include "ops_common.h"

#include "../coopmat_layout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum layout_spec { /* constant_id values in coopmat_layout.comp */
    LAYOUT_SPEC_WORKGROUP = 0, LAYOUT_SPEC_MM, LAYOUT_SPEC_MN, LAYOUT_SPEC_CLUSTER,
    LAYOUT_SPEC_COUNT
};

/* Fills `out` from the cells the kernel wrote (cells[0]: elements an
 * invocation; then each invocation's elements' row * cols + column). */
static vkattn_status read_cells(vkattn_context *ctx, const float *cells, coopmat_shape s,
                                uint32_t lanes, coopmat_layout *out)
{
    uint32_t count = s.m * s.n;
    out->rows = s.m;
    out->cols = s.n;
    out->lanes = lanes;
    out->elements = (uint32_t)cells[0];
    if (cells[0] != (float)out->elements || (uint64_t)out->elements * lanes != count)
        return ctx_fail(ctx, VKATTN_ERROR_DEVICE_LOST, "coopmat layout: the probe reports "
                        "%g elements an invocation; %u x %u over %u invocations is %u",
                        cells[0], s.m, s.n, lanes, count / lanes);
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
    uint32_t sg = kernel_subgroup_size(ctx, &required);
    if (!emulated && (!ctx->vk.enabled.coopmat || !required))
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "coopmat layout: %s has no cooperative "
                        "matrices with a required subgroup size", ctx->info.name);
    uint32_t count = s.m * s.n;
    if (!sg || !count || count > COOPMAT_LAYOUT_MAX_CELLS || count % sg)
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "coopmat layout: %ux%u matrices over "
                        "subgroups of %u: not a whole number of elements an invocation",
                        s.m, s.n, sg);
    vkattn_tensor *t;
    vkattn_tensor_desc desc = {.dtype = VKATTN_DTYPE_F32, .ndim = 1, .shape = {1 + count}};
    vkattn_status status = vkattn_tensor_create(ctx, &desc, &t);
    if (status != VKATTN_OK)
        return status;
    float *cells = malloc((1 + (size_t)count) * sizeof *cells);
    vk_dispatch d = {
        .key = {.shader = emulated ? SHADER_COOPMAT_LAYOUT_EMULATED : SHADER_COOPMAT_LAYOUT,
                .subgroup_size = required ? sg : 0,
                .spec_count = LAYOUT_SPEC_COUNT,
                .spec = {[LAYOUT_SPEC_WORKGROUP] = sg, [LAYOUT_SPEC_MM] = s.m,
                         [LAYOUT_SPEC_MN] = s.n, [LAYOUT_SPEC_CLUSTER] = cluster}},
        .bindings = {vk_bind(t, true)},
        .binding_count = 1,
        .groups = {1, 1, 1},
    };
    if (!cells)
        status = VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    else if ((status = vk_cmd_dispatch(ctx, &d)) == VKATTN_OK &&
             (status = vkattn_tensor_download(t, cells, VKATTN_DTYPE_F32)) == VKATTN_OK)
        status = read_cells(ctx, cells, s, sg, out);
    free(cells);
    vkattn_tensor_destroy(t);
    return status;
}

void coopmat_layout_report(vkattn_context *ctx)
{
    const char *flag = getenv("VKATTN_COOPMAT_LAYOUT");
    if (!flag || *flag != '1' || ctx->vk.external)
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
}

/* Reads the layout into `state`: the matrix units' or the emulated build's
 * laid out in clusters of `cluster` lanes. */
static void read_layout(vkattn_context *ctx, bool emulated, coopmat_shape s, uint32_t cluster,
                        coopmat_register_layout_state *state)
{
    coopmat_layout *layout = malloc(sizeof *layout);
    vkattn_status status = layout ? coopmat_layout_probe(ctx, emulated, s, cluster, layout)
                                  : VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    state->read = -1;
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
    else if (emulated && (t.row_lanes != cluster || t.lane_rows != s.m * cluster / layout->lanes))
        snprintf(state->why, sizeof state->why, "the emulated build's %ux%u accumulators in "
                 "clusters of %u lanes read as clusters of %u, %u rows a lane", s.m, s.n, cluster,
                 t.row_lanes, t.lane_rows);
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

bool coopmat_register_layout(vkattn_context *ctx, bool emulated, coopmat_shape s, uint32_t sg,
                             uint32_t *row_cluster, uint32_t *lane_rows, uint32_t *slot_table_out,
                             char *why, size_t why_size)
{
    if (s.n != s.k) {
        snprintf(why, why_size, "%ux%ux%u matrices: a score block becomes a P operand as it is "
                 "only where N == K", s.m, s.n, s.k);
        return false;
    }
    /* The emulated build lays its accumulators out as asked (coopmat.glsl's
     * ACC_CLUSTER): the smallest cluster of at least 2 lanes (so that the
     * clustered reductions run) giving each lane 1 to 4 rows. It is read back
     * like the device's, so that the probe and this path run where no device
     * has matrix units. */
    uint32_t cluster = 0;
    for (uint32_t c = 2; emulated && !cluster && c <= sg; c *= 2)
        if (s.m * c % sg == 0 && s.n % c == 0 && s.m * c / sg >= 1 && s.m * c / sg <= 4)
            cluster = c;
    if (emulated && !cluster) {
        snprintf(why, why_size, "%ux%u accumulators on %u lanes: no cluster gives a lane 1 to 4 "
                 "rows", s.m, s.n, sg);
        return false;
    }
    /* Kept for the shape and subgroup size it was read for (the emulated
     * build's shape may change between calls: VKATTN_COOPMAT_EMULATED_SHAPE). */
    coopmat_register_layout_state *state = &ctx->vk.coopmat_layouts[emulated];
    if (state->read && (state->shape.m != s.m || state->shape.n != s.n || state->sg != sg))
        state->read = 0;
    if (!state->read) {
        if (ctx->vk.external) {
            snprintf(why, why_size, "the accumulator layout is read by a submission of its own, "
                     "not while recording into an application's command buffer (run one call "
                     "outside a recording first)");
            return false;
        }
        read_layout(ctx, emulated, s, cluster, state);
        state->shape = s;
        state->sg = sg;
    }
    if (state->read < 0) {
        snprintf(why, why_size, "%s", state->why);
        return false;
    }
    *row_cluster = state->row_cluster;
    *lane_rows = state->lane_rows;
    *slot_table_out = state->slot_table;
    return true;
}
