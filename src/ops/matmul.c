/* vkattn_matmul: argument checks, tile choice, dispatch; CPU reference otherwise.
 * The tiled, naive and texel kernels use no subgroup operations (any subgroup
 * size is correct); the coopmat kernel (matmul_coopmat.c) requires its size. */
#include "ops_common.h"

#include <math.h>

/* Keep in sync with shaders/matmul_push.glsl. */
typedef struct matmul_push {
    uint32_t M, N, K;
    uint32_t a_batch_stride, b_batch_stride, c_batch_stride;
    uint32_t b_group;
    uint32_t batch_base;
    uint32_t a_offset, b_offset, bias_offset, c_offset;
    float alpha;
} matmul_push;
_Static_assert(sizeof(matmul_push) <= VKATTN_PUSH_CONSTANT_BYTES, "push constants too large");

enum matmul_spec { /* constant_id values in matmul.comp */
    MM_SPEC_WORKGROUP = 0,
    MM_SPEC_BM, MM_SPEC_BN, MM_SPEC_BK, MM_SPEC_TM, MM_SPEC_TN,
    MM_SPEC_TRANSPOSE_B, MM_SPEC_HAS_BIAS, MM_SPEC_A_DTYPE, MM_SPEC_B_DTYPE, MM_SPEC_BIAS_DTYPE,
    MM_SPEC_MASKED_A_SKIPS, MM_SPEC_COUNT
};

#define NAIVE_WORKGROUP 64

typedef struct matmul_shape {
    int64_t M, N, K;
    int64_t batch, b_batches;
} matmul_shape;

/* Block and micro-tile sizes from the device's limits: a 64x64 block with 4x4
 * micro-tiles (256 invocations, 8 KiB of shared memory) where the device allows,
 * halving the invocation count with 8x4 micro-tiles where it does not. */
static void choose_tiles(const vkattn_device_info *info, uint32_t tiles[5])
{
    uint32_t bm = 64, bn = 64, bk = 16, tm = 4, tn = 4;
    if (info->max_workgroup_invocations < (bm / tm) * (bn / tn))
        tm = 8;
    if (info->shared_memory_bytes < bk * (bm + bn) * 4)
        bk = 8;
    tiles[0] = bm, tiles[1] = bn, tiles[2] = bk, tiles[3] = tm, tiles[4] = tn;
}

static vkattn_status mismatch(vkattn_context *ctx, const char *what, const vkattn_tensor *x,
                              const char *xname, const vkattn_tensor *y, const char *yname)
{
    char xs[96], ys[96];
    return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH, "matmul: %s is %s but %s is %s (%s)", xname,
                    shape_string(x, xs, sizeof xs), yname, shape_string(y, ys, sizeof ys), what);
}

static vkattn_status check_args(vkattn_context *ctx, const vkattn_matmul_desc *d,
                                const vkattn_tensor *a, const vkattn_tensor *b,
                                const vkattn_tensor *bias, const vkattn_tensor *c,
                                matmul_shape *shape)
{
    vkattn_status s;
    if ((s = check_tensor(ctx, a, "matmul", "A")) || (s = check_tensor(ctx, b, "matmul", "B")) ||
        (s = check_tensor(ctx, c, "matmul", "C")))
        return s;
    if (bias && (s = check_tensor(ctx, bias, "matmul", "bias")))
        return s;
    if ((unsigned)d->variant > VKATTN_MATMUL_COOPMAT_EMULATED)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "matmul: variant %d is not valid",
                        (int)d->variant);
    if (!isfinite(d->alpha))
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "matmul: alpha is not finite");
    if (c == a || c == b || (bias && c == bias))
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "matmul: C must not alias an input");
    if ((s = check_float_input(ctx, a, "matmul", "A")) ||
        (s = check_float_input(ctx, b, "matmul", "B")) ||
        (bias && (s = check_float_input(ctx, bias, "matmul", "bias"))) ||
        (s = check_float_output(ctx, c, "matmul", "C")))
        return s;
    if (a->ndim < 2 || b->ndim < 2 || c->ndim < 2) {
        char as[96];
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_SHAPE,
                        "matmul: A, B and C must have 2 to 4 dimensions (A is %s, B has %d, C %d)",
                        shape_string(a, as, sizeof as), (int)b->ndim, (int)c->ndim);
    }

    int32_t lead = a->ndim - 2;
    shape->M = a->shape[lead];
    shape->K = a->shape[lead + 1];
    int32_t b_lead = b->ndim - 2;
    int64_t b_k = d->transpose_b ? b->shape[b_lead + 1] : b->shape[b_lead];
    shape->N = d->transpose_b ? b->shape[b_lead] : b->shape[b_lead + 1];
    if (b_k != shape->K)
        return mismatch(ctx, d->transpose_b ? "K differs; B is transposed (N, K)" : "K differs",
                        a, "A", b, "B");
    shape->batch = product(a->shape, lead);
    shape->b_batches = product(b->shape, b_lead);
    if (b->ndim != 2) {
        if (b->ndim != a->ndim)
            return mismatch(ctx, "B must be 2-D or have A's dimension count", a, "A", b, "B");
        for (int32_t i = 0; i < lead; i++) {
            bool innermost = i == lead - 1;
            bool ok = innermost ? a->shape[i] % b->shape[i] == 0 : a->shape[i] == b->shape[i];
            if (!ok)
                return mismatch(ctx, innermost ? "A's batch dimension must be a multiple of B's"
                                               : "batch dimensions differ",
                                a, "A", b, "B");
        }
    }
    if (c->ndim != a->ndim || c->shape[lead] != shape->M || c->shape[lead + 1] != shape->N ||
        product(c->shape, lead) != shape->batch)
        return mismatch(ctx, "C must be (..., M, N) with A's batch dimensions", a, "A", c, "C");
    for (int32_t i = 0; i < lead; i++)
        if (c->shape[i] != a->shape[i])
            return mismatch(ctx, "batch dimensions differ", a, "A", c, "C");
    if (bias && (bias->ndim != 1 || bias->shape[0] != shape->N))
        return mismatch(ctx, "bias must be (N)", c, "C", bias, "bias");
    return VKATTN_OK;
}

vkattn_status matmul_record_batches(vkattn_context *ctx, const vk_dispatch *shape_only,
                                    const matmul_call *c, uint64_t gx, uint64_t gy)
{
    if (gx > ctx->vk.max_workgroup_count[0] || gy > ctx->vk.max_workgroup_count[1])
        return ctx_fail(ctx, VKATTN_ERROR_EXCEEDS_DEVICE_LIMIT,
                        "matmul: %ux%u output needs a %llux%llu grid, over the device's limit",
                        c->M, c->N, (unsigned long long)gx, (unsigned long long)gy);
    matmul_push push = {
        .M = c->M, .N = c->N, .K = c->K,
        .a_batch_stride = c->M * c->K,
        .b_batch_stride = c->b_batched ? c->N * c->K : 0,
        .c_batch_stride = c->M * c->N,
        .b_group = c->b_group,
        .a_offset = c->a_offset, .b_offset = c->b_offset,
        .bias_offset = c->bias_offset, .c_offset = c->c_offset,
        .alpha = c->alpha,
    };
    vk_dispatch dispatch = *shape_only;
    dispatch.push = &push;
    dispatch.push_bytes = sizeof push;
    uint32_t max_z = ctx->vk.max_workgroup_count[2];
    for (uint64_t done = 0; done < c->batch;) {
        uint64_t n = c->batch - done < max_z ? c->batch - done : max_z;
        push.batch_base = (uint32_t)done;
        dispatch.groups[0] = (uint32_t)gx;
        dispatch.groups[1] = (uint32_t)gy;
        dispatch.groups[2] = (uint32_t)n;
        vkattn_status s = vk_cmd_dispatch(ctx, &dispatch);
        if (s != VKATTN_OK)
            return s;
        done += n;
    }
    return VKATTN_OK;
}

enum matmul_texel_spec { /* constant_id values in matmul_texel.comp */
    MT_SPEC_WORKGROUP = 0, MT_SPEC_TM, MT_SPEC_TN, MT_SPEC_TRANSPOSE_B, MT_SPEC_HAS_BIAS,
    MT_SPEC_VEC4, MT_SPEC_MASKED_A_SKIPS, MT_SPEC_A_BITS, MT_SPEC_B_BITS, MT_SPEC_BIAS_BITS,
    MT_SPEC_COUNT
};

/* matmul_texel.comp's bindings: the inputs' float views at 0-2, C at 3, and at
 * 4-6 the views of the inputs' bits where they are bf16. */
enum { MT_BITS_BINDING = 4 };

/* Whether the texel kernel can read these tensors (views exist), and whether
 * through 4-component views: K, and N when B is not transposed, and the A and B
 * offsets multiples of 4, so that every fetch is one aligned texel. */
static bool texel_readable(const matmul_call *c, bool *vec4)
{
    *vec4 = c->K % 4 == 0 && (c->transpose_b || c->N % 4 == 0) && c->a_offset % 4 == 0 &&
            c->b_offset % 4 == 0 && vk_texel_input_view(c->a, true) && vk_texel_input_view(c->b, true);
    return (*vec4 || (vk_texel_input_view(c->a, false) && vk_texel_input_view(c->b, false))) &&
           (!c->bias || vk_texel_input_view(c->bias, false));
}

static vkattn_status record_texel(vkattn_context *ctx, const matmul_call *c, bool vec4)
{
    /* 8x8 outputs per invocation: 16 vec4 fetches feed 256 multiply-adds per
     * step of 4 in K. Measured on lavapipe at 1024^3 against 4x8, 8x16, 4x16 and
     * 16x8: within 10% of the best everywhere, and small enough that ragged
     * shapes waste little. */
    const uint32_t tm = 8, tn = 8, wg = 8;
    vk_dispatch dispatch = {
        .key = {.shader = SHADER_MATMUL_TEXEL,
                .spec_count = MT_SPEC_COUNT,
                .spec = {[MT_SPEC_WORKGROUP] = wg, [MT_SPEC_TM] = tm, [MT_SPEC_TN] = tn,
                         [MT_SPEC_TRANSPOSE_B] = c->transpose_b,
                         [MT_SPEC_HAS_BIAS] = c->bias != NULL, [MT_SPEC_VEC4] = vec4,
                         [MT_SPEC_MASKED_A_SKIPS] = c->masked_a_skips}},
        .bindings = {[3] = vk_bind(c->c, true)},
        .binding_count = MT_BITS_BINDING + 3,
    };
    const vkattn_tensor *inputs[3] = {c->a, c->b, c->bias};
    for (int i = 0; i < 3; i++) {
        vk_bind_texel_input(&dispatch, (uint32_t)i, MT_BITS_BINDING + (uint32_t)i, inputs[i],
                            vec4 && i < 2);
        dispatch.key.spec[MT_SPEC_A_BITS + i] = inputs[i] && inputs[i]->dtype == VKATTN_DTYPE_BF16;
    }
    uint64_t gx = div_up(div_up(c->N, tn), wg), gy = div_up(c->M, tm);
    return matmul_record_batches(ctx, &dispatch, c, gx, gy);
}

static vkattn_status record_storage(vkattn_context *ctx, const matmul_call *c, bool naive)
{
    vk_dispatch dispatch = {
        .key = {.shader = naive ? SHADER_MATMUL_NAIVE : SHADER_MATMUL, .spec_count = MM_SPEC_COUNT},
        .bindings = {vk_bind(c->a, false), vk_bind(c->b, false), vk_bind(c->bias, false),
                     vk_bind(c->c, true)},
        .binding_count = 4,
    };
    uint32_t *spec = dispatch.key.spec;
    uint32_t tiles[5] = {1, 1, 1, 1, 1}; /* unused by the naive kernel: keep its key stable */
    if (!naive)
        choose_tiles(&ctx->info, tiles);
    for (int i = 0; i < 5; i++)
        spec[MM_SPEC_BM + i] = tiles[i];
    spec[MM_SPEC_WORKGROUP] = naive ? NAIVE_WORKGROUP : (tiles[0] / tiles[3]) * (tiles[1] / tiles[4]);
    spec[MM_SPEC_TRANSPOSE_B] = c->transpose_b;
    spec[MM_SPEC_HAS_BIAS] = c->bias != NULL;
    spec[MM_SPEC_A_DTYPE] = shader_dtype(c->a);
    spec[MM_SPEC_B_DTYPE] = shader_dtype(c->b);
    spec[MM_SPEC_BIAS_DTYPE] = shader_dtype(c->bias);
    spec[MM_SPEC_MASKED_A_SKIPS] = c->masked_a_skips;

    uint64_t gx = naive ? div_up(c->N, NAIVE_WORKGROUP) : div_up(c->N, tiles[1]);
    uint64_t gy = naive ? c->M : div_up(c->M, tiles[0]);
    return matmul_record_batches(ctx, &dispatch, c, gx, gy);
}

vkattn_status vk_matmul_record(vkattn_context *ctx, const matmul_call *c)
{
    bool vec4 = false;
    bool texel_ok = texel_readable(c, &vec4);
    vkattn_matmul_variant variant = c->variant;
    if (variant == VKATTN_MATMUL_AUTO)
        variant = matmul_coopmat_wanted(ctx, c)                ? VKATTN_MATMUL_COOPMAT
                  : texel_ok && vk_prefers_texels(ctx) ? VKATTN_MATMUL_TEXEL
                                                       : VKATTN_MATMUL_TILED;
    if (variant == VKATTN_MATMUL_COOPMAT || variant == VKATTN_MATMUL_COOPMAT_EMULATED)
        return vk_matmul_coopmat(ctx, c, variant == VKATTN_MATMUL_COOPMAT_EMULATED);
    if (variant != VKATTN_MATMUL_TEXEL)
        return record_storage(ctx, c, variant == VKATTN_MATMUL_NAIVE);
    if (!texel_ok)
        return ctx_fail(ctx, VKATTN_ERROR_UNSUPPORTED,
                        "matmul: the texel variant needs uniform texel buffers of these tensors "
                        "(of a bf16 tensor's bits), which this device does not offer (or a "
                        "tensor exceeds maxTexelBufferElements)");
    return record_texel(ctx, c, vec4);
}

vkattn_status vkattn_matmul(vkattn_context *ctx, const vkattn_matmul_desc *desc,
                            const vkattn_tensor *a, const vkattn_tensor *b,
                            const vkattn_tensor *bias, vkattn_tensor *c)
{
    static const vkattn_matmul_desc defaults;
    if (!ctx)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    const vkattn_matmul_desc *d = desc ? desc : &defaults;
    matmul_shape shape = {0};
    vkattn_status s = check_args(ctx, d, a, b, bias, c, &shape);
    if (s != VKATTN_OK)
        return s;
    float alpha = d->alpha == 0.0f ? 1.0f : d->alpha;
    wide_output out;
    if ((s = wide_output_begin(ctx, c, &out)) != VKATTN_OK)
        return s;
    if (ctx->backend == VKATTN_BACKEND_CPU) {
        vkattn_matmul_desc resolved = *d;
        resolved.alpha = alpha;
        cpu_matmul(&resolved, a, b, bias, out.write);
        return wide_output_end(ctx, &out, VKATTN_OK);
    }
    matmul_call call = {
        .a = a, .b = b, .bias = bias, .c = out.write,
        .M = (uint32_t)shape.M, .N = (uint32_t)shape.N, .K = (uint32_t)shape.K,
        .batch = (uint64_t)shape.batch,
        .b_group = b->ndim == 2 ? 1 : (uint32_t)(shape.batch / shape.b_batches),
        .b_batched = b->ndim != 2,
        .transpose_b = d->transpose_b,
        .alpha = alpha,
        .variant = d->variant,
    };
    return wide_output_end(ctx, &out, vk_matmul_record(ctx, &call));
}
