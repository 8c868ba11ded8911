/* 16-bit outputs (F16, BF16) for every op, by one mechanism: the kernels and the
 * CPU reference write f32 only; where the caller's output is 16-bit, the op
 * writes an f32 scratch tensor shaped like it, and a narrowing pass
 * (shaders/narrow.comp on Vulkan, the host conversion on the CPU backend)
 * rounds that into the output, to nearest even, after the op has succeeded.
 * So no kernel grows an output format per dtype, and an op that fails leaves
 * the output as it was. The cost is one pass over the output, small beside the
 * work of attention or a matmul (the output is the smallest tensor of both). */
#include "ops_common.h"

/* Keep in sync with the Push blocks in shaders/narrow.comp (groups only) and
 * shaders/fill.comp. */
typedef struct fours_push {
    uint32_t groups;
    uint32_t bits; /* fill.comp's pattern */
} fours_push;

enum narrow_spec {
    NARROW_SPEC_WORKGROUP = 0, NARROW_SPEC_Y_DTYPE, NARROW_SPEC_X_TEXELS, NARROW_SPEC_COUNT
};
#define NARROW_WORKGROUP 256

vkattn_status check_float_output(vkattn_context *ctx, const vkattn_tensor *t, const char *op,
                                 const char *name)
{
    if (t->dtype != VKATTN_DTYPE_F32 && t->dtype != VKATTN_DTYPE_F16 &&
        t->dtype != VKATTN_DTYPE_BF16)
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "%s: %s is %s, outputs must be f32, f16 or bf16",
                        op, name, dtype_name(t->dtype));
    return VKATTN_OK;
}

/* Records `d` (key and bindings set) over `count` elements, four an invocation:
 * the push constants and the grid both kernels here take. */
static vkattn_status dispatch_fours(vkattn_context *ctx, vk_dispatch *d, size_t count,
                                    uint32_t bits, const char *op)
{
    uint64_t groups = ((uint64_t)count + 3) / 4;
    fours_push push = {.groups = (uint32_t)groups, .bits = bits};
    d->push = &push;
    d->push_bytes = sizeof push;
    vkattn_status s = grid_for(ctx, div_up(groups, NARROW_WORKGROUP), op, d->groups);
    if (s != VKATTN_OK)
        return s;
    return vk_cmd_dispatch(ctx, d);
}

/* narrow.comp and fill.comp work four elements an invocation, each on its own,
 * with no subgroup or shared-memory operation: any subgroup size is correct
 * (key.subgroup_size 0). */
vkattn_status narrow_record(vkattn_context *ctx, const vkattn_tensor *x, vkattn_tensor *y)
{
    /* x is f32 scratch (a multiple of 4 elements): its four-component view exists
     * wherever texel buffers do. */
    bool texels = vk_prefers_texels(ctx) && x->texels4 != VK_NULL_HANDLE;
    vk_dispatch dispatch = {
        .key = {.shader = SHADER_NARROW,
                .spec_count = NARROW_SPEC_COUNT,
                .spec = {[NARROW_SPEC_WORKGROUP] = NARROW_WORKGROUP,
                         [NARROW_SPEC_Y_DTYPE] = shader_dtype(y),
                         [NARROW_SPEC_X_TEXELS] = texels}},
        .bindings = {vk_bind4(x), vk_bind(y, true)},
        .binding_count = 2,
    };
    return dispatch_fours(ctx, &dispatch, y->count, 0, "narrow");
}

vkattn_status vk_tensor_fill(vkattn_context *ctx, vkattn_tensor *t, uint64_t count,
                             uint32_t bits)
{
    vk_dispatch dispatch = {
        .key = {.shader = SHADER_FILL, .spec_count = 1, .spec = {NARROW_WORKGROUP}},
        .bindings = {vk_bind(t, true)},
        .binding_count = 1,
    };
    return dispatch_fours(ctx, &dispatch, (size_t)count, bits, "fill");
}

vkattn_status vk_output_zero(vkattn_context *ctx, vkattn_tensor *t)
{
    return vk_tensor_fill(ctx, t, t->count, 0);
}

vkattn_status wide_output_begin(vkattn_context *ctx, vkattn_tensor *target, wide_output *w)
{
    w->target = target;
    w->write = target;
    if (target->dtype == VKATTN_DTYPE_F32)
        return VKATTN_OK;
    vkattn_tensor *scratch;
    vkattn_status s = scratch_get(ctx, SCRATCH_OUTPUT, VKATTN_DTYPE_F32, target->count, &scratch);
    if (s != VKATTN_OK)
        return s;
    /* The scratch tensor's memory under the target's shape: ops and CPU
     * functions that read the output's shape see the caller's. */
    w->view = scratch_view(scratch, target->ndim, target->shape, target->count);
    w->write = &w->view;
    return VKATTN_OK;
}

vkattn_status wide_output_end(vkattn_context *ctx, wide_output *w, vkattn_status op_status)
{
    if (op_status != VKATTN_OK || w->write == w->target)
        return op_status;
    if (ctx->backend == VKATTN_BACKEND_CPU) {
        host_convert(w->target->host, w->target->dtype, w->view.host, VKATTN_DTYPE_F32,
                     w->target->count);
        return VKATTN_OK;
    }
    return narrow_record(ctx, &w->view, w->target);
}
