/* Helpers shared by the op files. */
#include "ops_common.h"

vkattn_status check_float_input(vkattn_context *ctx, const vkattn_tensor *t, const char *op,
                                const char *name)
{
    if (t->dtype != VKATTN_DTYPE_F32 && t->dtype != VKATTN_DTYPE_F16 &&
        t->dtype != VKATTN_DTYPE_BF16)
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "%s: %s is %s, must be f32, f16 or bf16", op,
                        name, dtype_name(t->dtype));
    return VKATTN_OK;
}

uint32_t shader_dtype(const vkattn_tensor *t)
{
    if (!t)
        return 0;
    switch (t->dtype) {
    case VKATTN_DTYPE_F16: return 1;
    case VKATTN_DTYPE_BF16: return 2;
    default: return 0;
    }
}

vkattn_status grid_for(vkattn_context *ctx, uint64_t count, const char *op, uint32_t groups[3])
{
    uint64_t max_x = ctx->vk.max_workgroup_count[0];
    uint64_t max_y = ctx->vk.max_workgroup_count[1];
    uint64_t x = count < max_x ? count : max_x;
    uint64_t y = (count + x - 1) / x;
    if (y > max_y)
        return ctx_fail(ctx, VKATTN_ERROR_EXCEEDS_DEVICE_LIMIT,
                        "%s: %llu workgroups exceed the device's %llux%llu grid", op,
                        (unsigned long long)count, (unsigned long long)max_x,
                        (unsigned long long)max_y);
    groups[0] = (uint32_t)(x ? x : 1);
    groups[1] = (uint32_t)(y ? y : 1);
    groups[2] = 1;
    return VKATTN_OK;
}

bool vk_prefers_texels(const vkattn_context *ctx)
{
    return ctx->vk.prefer_texels;
}

uint32_t kernel_subgroup_size(const vkattn_context *ctx, bool *required)
{
    const device_caps *caps = &ctx->vk.enabled;
    uint32_t preferred = ctx->info.subgroup_size;
    /* Where the size can be required, the device's default size (the one its
     * driver favours), brought into the allowed range: required wherever
     * device_caps_whole_subgroups says so, which kernels that need whole
     * subgroups rely on. Elsewhere the pipeline may get any size from min to
     * max: specialize for the smallest, which a kernel that only needs "at
     * least this many lanes" then always has. */
    *required = caps->subgroup_size_control && caps->subgroup_min > 0 &&
                caps->subgroup_min <= caps->subgroup_max;
    if (*required)
        return preferred < caps->subgroup_min   ? caps->subgroup_min
               : preferred > caps->subgroup_max ? caps->subgroup_max
                                                : preferred;
    return caps->subgroup_min ? caps->subgroup_min : preferred;
}
