/* vkattn_head_transpose: (A, B, C, D) -> (A, C, B, D). The kernel uses no
 * subgroup operations: any subgroup size is correct. */
#include "ops_common.h"

/* Keep in sync with the Push block in shaders/head_transpose.comp. */
typedef struct transpose_push {
    uint32_t total;
    uint32_t B, C, D;
} transpose_push;
_Static_assert(sizeof(transpose_push) <= VKATTN_PUSH_CONSTANT_BYTES, "push constants too large");

enum transpose_spec { /* constant_id values in head_transpose.comp */
    HT_SPEC_WORKGROUP = 0, HT_SPEC_X_DTYPE, HT_SPEC_VEC4, HT_SPEC_X_TEXELS, HT_SPEC_COUNT
};
#define TRANSPOSE_WORKGROUP 256

static vkattn_status check_args(vkattn_context *ctx, const vkattn_tensor *x, const vkattn_tensor *y)
{
    vkattn_status s;
    if ((s = check_tensor(ctx, x, "head_transpose", "X")) ||
        (s = check_tensor(ctx, y, "head_transpose", "Y")))
        return s;
    if (x == y)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "head_transpose: Y must not be X");
    if ((s = check_float_input(ctx, x, "head_transpose", "X")) ||
        (s = check_float_output(ctx, y, "head_transpose", "Y")))
        return s;
    char xs[96], ys[96];
    if (x->ndim != 4 || y->ndim != 4)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_SHAPE,
                        "head_transpose: X is %s and Y is %s, both must be 4-D",
                        shape_string(x, xs, sizeof xs), shape_string(y, ys, sizeof ys));
    if (y->shape[0] != x->shape[0] || y->shape[1] != x->shape[2] || y->shape[2] != x->shape[1] ||
        y->shape[3] != x->shape[3])
        return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH,
                        "head_transpose: X is %s, so Y must be %lldx%lldx%lldx%lld, not %s",
                        shape_string(x, xs, sizeof xs), (long long)x->shape[0],
                        (long long)x->shape[2], (long long)x->shape[1], (long long)x->shape[3],
                        shape_string(y, ys, sizeof ys));
    return VKATTN_OK;
}

vkattn_status vk_head_transpose_record(vkattn_context *ctx, const vkattn_tensor *x,
                                       vkattn_tensor *y, const int64_t dims[4])
{
    /* Rows a multiple of 4 long move as vec4 (1.0 -> 4.6 GB/s on lavapipe for
     * 4x1024x8x64, with texel reads where the device prefers them). */
    bool vec4 = dims[3] % 4 == 0;
    uint32_t unit = vec4 ? 4 : 1;
    bool texels = vk_prefers_texels(ctx) && vk_texel_input_view(x, vec4);
    uint64_t total = (uint64_t)dims[0] * dims[1] * dims[2] * dims[3] / unit;
    transpose_push push = {
        .total = (uint32_t)total,
        .B = (uint32_t)dims[1],
        .C = (uint32_t)dims[2],
        .D = (uint32_t)dims[3] / unit,
    };
    vk_dispatch dispatch = {
        .key = {.shader = SHADER_HEAD_TRANSPOSE,
                .spec_count = HT_SPEC_COUNT,
                .spec = {[HT_SPEC_WORKGROUP] = TRANSPOSE_WORKGROUP,
                         [HT_SPEC_X_DTYPE] = shader_dtype(x),
                         [HT_SPEC_VEC4] = vec4,
                         [HT_SPEC_X_TEXELS] = texels}},
        .bindings = {[1] = vk_bind(y, true)}, /* X at 0, its bits at 2's texel slot */
        .binding_count = 3,
        .push = &push,
        .push_bytes = sizeof push,
    };
    vk_bind_texel_input(&dispatch, 0, 2, x, vec4);
    vkattn_status s = grid_for(ctx, div_up(total, TRANSPOSE_WORKGROUP), "head_transpose",
                               dispatch.groups);
    if (s != VKATTN_OK)
        return s;
    return vk_cmd_dispatch(ctx, &dispatch);
}

vkattn_status vkattn_head_transpose(vkattn_context *ctx, const vkattn_tensor *x, vkattn_tensor *y)
{
    if (!ctx)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    vkattn_status s = check_args(ctx, x, y);
    if (s != VKATTN_OK)
        return s;
    wide_output out;
    if ((s = wide_output_begin(ctx, y, &out)) != VKATTN_OK)
        return s;
    if (ctx->backend == VKATTN_BACKEND_CPU) {
        cpu_head_transpose(x, out.write);
        return wide_output_end(ctx, &out, VKATTN_OK);
    }
    return wide_output_end(ctx, &out, vk_head_transpose_record(ctx, x, out.write, x->shape));
}
