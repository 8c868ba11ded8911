/* vkattn_mha: the multi-head attention layer as three projections of X (the
 * q, k and v row blocks of W_qkv), attention over their BSHD views, and the
 * output projection. No head transpose is needed on the fused path: attention
 * reads and writes BSHD through strides. */
#include "attention_args.h"

#include <math.h>

static vkattn_status check_args(vkattn_context *ctx, const vkattn_mha_desc *d,
                                const vkattn_tensor *x, const vkattn_tensor *w_qkv,
                                const vkattn_tensor *b_qkv, const vkattn_tensor *w_out,
                                const vkattn_tensor *b_out, const vkattn_tensor *y,
                                attention_dims *dims)
{
    if (!d)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "mha: desc is NULL (heads is required)");
    vkattn_status s;
    if ((s = check_tensor(ctx, x, "mha", "X")) || (s = check_tensor(ctx, w_qkv, "mha", "W_qkv")) ||
        (s = check_tensor(ctx, w_out, "mha", "W_out")) || (s = check_tensor(ctx, y, "mha", "Y")) ||
        (b_qkv && (s = check_tensor(ctx, b_qkv, "mha", "b_qkv"))) ||
        (b_out && (s = check_tensor(ctx, b_out, "mha", "b_out"))))
        return s;
    if (d->compute_dtype != VKATTN_DTYPE_F32 && d->compute_dtype != VKATTN_DTYPE_F16 &&
        d->compute_dtype != VKATTN_DTYPE_BF16)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "mha: compute_dtype is %s (%d), must be f32, f16 or bf16",
                        dtype_name(d->compute_dtype), (int)d->compute_dtype);
    if ((unsigned)d->path > VKATTN_PATH_UNFUSED)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "mha: path %d is not valid",
                        (int)d->path);
    if (d->heads < 1)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "mha: heads is %d, must be >= 1",
                        (int)d->heads);
    if (d->scale != 0.0f && !(isfinite(d->scale) && d->scale > 0.0f))
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "mha: scale is %g, must be positive and finite (0: 1/sqrt(Dh))",
                        (double)d->scale);
    if (y == x || y == w_qkv || y == b_qkv || y == w_out || y == b_out || y == d->sinks ||
        y == d->alibi_slopes || y == d->mask)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "mha: Y must not alias an input");
    if ((s = check_float_input(ctx, x, "mha", "X")) ||
        (s = check_float_input(ctx, w_qkv, "mha", "W_qkv")) ||
        (s = check_float_input(ctx, w_out, "mha", "W_out")) ||
        (b_qkv && (s = check_float_input(ctx, b_qkv, "mha", "b_qkv"))) ||
        (b_out && (s = check_float_input(ctx, b_out, "mha", "b_out"))) ||
        (s = check_float_output(ctx, y, "mha", "Y")))
        return s;

    char a[96], b[96];
    if (x->ndim != 3)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_SHAPE, "mha: X is %s, must be 3-D (B, T, C)",
                        shape_string(x, a, sizeof a));
    int64_t B = x->shape[0], T = x->shape[1], C = x->shape[2], H = d->heads;
    if (w_qkv->ndim != 2 || w_qkv->shape[1] != C || w_qkv->shape[0] % (3 * H) != 0)
        return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH,
                        "mha: W_qkv is %s but must be (3*H*Dh, C) = (a multiple of %lld, %lld) "
                        "for X %s and %lld heads",
                        shape_string(w_qkv, a, sizeof a), (long long)(3 * H), (long long)C,
                        shape_string(x, b, sizeof b), (long long)H);
    int64_t width = w_qkv->shape[0] / 3; /* H * Dh */
    if (b_qkv && (b_qkv->ndim != 1 || b_qkv->shape[0] != 3 * width))
        return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH, "mha: b_qkv is %s but must be (%lld)",
                        shape_string(b_qkv, a, sizeof a), (long long)(3 * width));
    if (w_out->ndim != 2 || w_out->shape[1] != width)
        return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH,
                        "mha: W_out is %s but must be (C_out, H*Dh) with H*Dh = %lld",
                        shape_string(w_out, a, sizeof a), (long long)width);
    int64_t C_out = w_out->shape[0];
    if (b_out && (b_out->ndim != 1 || b_out->shape[0] != C_out))
        return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH, "mha: b_out is %s but must be (%lld)",
                        shape_string(b_out, a, sizeof a), (long long)C_out);
    if (y->ndim != 3 || y->shape[0] != B || y->shape[1] != T || y->shape[2] != C_out)
        return ctx_fail(ctx, VKATTN_ERROR_SHAPE_MISMATCH, "mha: Y is %s but must be %lldx%lldx%lld",
                        shape_string(y, a, sizeof a), (long long)B, (long long)T,
                        (long long)C_out);
    int64_t Dh = width / H;
    *dims = (attention_dims){
        .B = B, .H = H, .Hkv = H, .Tq = T, .Tk = T, .D = Dh, .Dv = Dh,
        .layout = VKATTN_LAYOUT_BSHD,
        .causal = d->causal,
        .fixed_q_offset = true,
        .q_offset = 0,
        .scale = d->scale != 0.0f ? d->scale : (float)(1.0 / sqrt((double)Dh)),
    };
    vkattn_attention_desc variants = {
        .has_window = d->has_window, .window_left = d->window_left,
        .window_right = d->window_right, .softcap = d->softcap,
        .sinks = d->sinks, .alibi_slopes = d->alibi_slopes, .mask = d->mask,
    };
    return attention_check_variants(ctx, "mha", &variants, dims);
}

/* The layer's q, k, v and heads' output, (B*T, H*Dh) each: `wide` as the
 * matmuls and attention write them (f32), `kept` as the next steps read them:
 * the same tensors, or with a 16-bit compute dtype `narrow`, the wide ones
 * rounded into that dtype. Each projection has its own wide tensor, so the
 * three need no barrier between them, nor their roundings. All are views of
 * context scratch sized to this call: a slot an earlier, larger call grew is
 * not narrowed whole. Not to be copied (kept points into it). */
enum { LAYER_Q, LAYER_K, LAYER_V, LAYER_O, LAYER_TENSORS };
typedef struct layer_tensors {
    vkattn_tensor wide[LAYER_TENSORS], narrow[LAYER_TENSORS];
    vkattn_tensor *kept[LAYER_TENSORS];
} layer_tensors;

static vkattn_status layer_scratch(vkattn_context *ctx, const attention_dims *d,
                                   vkattn_dtype compute, layer_tensors *l)
{
    /* a multiple of 4, as scratch_get rounds it: the narrowing pass's grain */
    uint64_t elements = ((uint64_t)(d->B * d->Tq) * (uint64_t)(d->H * d->D) + 3) & ~(uint64_t)3;
    bool narrows = compute != VKATTN_DTYPE_F32;
    for (int i = 0; i < (narrows ? LAYER_O : LAYER_TENSORS); i++) {
        vkattn_tensor *t;
        vkattn_status s = scratch_get(ctx, (scratch_slot)(SCRATCH_MHA_Q + i), VKATTN_DTYPE_F32,
                                      elements, &t);
        if (s != VKATTN_OK)
            return s;
        const int64_t shape[1] = {(int64_t)elements};
        l->wide[i] = scratch_view(t, 1, shape, elements);
        l->kept[i] = &l->wide[i];
        if (!narrows)
            continue;
        if ((s = scratch_get(ctx, (scratch_slot)(SCRATCH_MHA_Q16 + i), compute, elements, &t)))
            return s;
        l->narrow[i] = scratch_view(t, 1, shape, elements);
        l->kept[i] = &l->narrow[i];
    }
    if (narrows) {
        /* The heads' output goes where f32 q was, and its rounding where the
         * rounded q was: both are spent by then (q is rounded before attention
         * runs, and attention has read the rounded q before o is rounded), so
         * a 16-bit layer takes 18 bytes an element of its width rather than
         * 24. The hazard tracker orders the reuse: attention waits for the
         * roundings it reads, o's rounding for attention. */
        l->wide[LAYER_O] = l->wide[LAYER_Q];
        l->narrow[LAYER_O] = l->narrow[LAYER_Q];
        l->kept[LAYER_O] = &l->narrow[LAYER_O];
    }
    return VKATTN_OK;
}

/* The attention step over the BSHD views of q, k and v as kept, into o (f32). */
static attention_call attention_step(const attention_dims *d, const layer_tensors *l,
                                     vkattn_attention_path path)
{
    return (attention_call){.dims = *d, .q = l->kept[LAYER_Q], .k = l->kept[LAYER_K],
                            .v = l->kept[LAYER_V], .o = (vkattn_tensor *)&l->wide[LAYER_O],
                            .path = path};
}

/* Rounds step i's result into the compute dtype, where that is 16-bit. */
static vkattn_status keep(vkattn_context *ctx, layer_tensors *l, int i)
{
    return l->kept[i] == &l->wide[i] ? VKATTN_OK : narrow_record(ctx, &l->wide[i], l->kept[i]);
}

vkattn_status vkattn_mha(vkattn_context *ctx, const vkattn_mha_desc *desc, const vkattn_tensor *x,
                         const vkattn_tensor *w_qkv, const vkattn_tensor *b_qkv,
                         const vkattn_tensor *w_out, const vkattn_tensor *b_out, vkattn_tensor *y)
{
    if (!ctx)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    attention_dims d;
    vkattn_status s = check_args(ctx, desc, x, w_qkv, b_qkv, w_out, b_out, y, &d);
    if (s != VKATTN_OK)
        return s;
    wide_output wide;
    if ((s = wide_output_begin(ctx, y, &wide)) != VKATTN_OK)
        return s;
    if (ctx->backend == VKATTN_BACKEND_CPU)
        return wide_output_end(ctx, &wide, cpu_mha(ctx, &d, desc->compute_dtype, x, w_qkv, b_qkv,
                                                   w_out, b_out, wide.write));

    uint64_t rows = (uint64_t)(d.B * d.Tq), width = (uint64_t)(d.H * d.D);
    uint32_t C = (uint32_t)x->shape[2];
    layer_tensors l;
    if ((s = layer_scratch(ctx, &d, desc->compute_dtype, &l)))
        return s;
    attention_call a = attention_step(&d, &l, desc->path);
    /* A fused path that cannot run is refused before the projections are
     * recorded (AUTO always finds a path: the unfused one at worst). */
    vkattn_attention_choice choice;
    if (desc->path == VKATTN_PATH_FUSED && (s = vk_attention_choice(ctx, &a, &choice)))
        return s;
    /* q, k and v: X (B*T, C) times row blocks i of W_qkv, transposed. */
    for (int i = LAYER_Q; i <= LAYER_V; i++) {
        matmul_call m = {
            .a = x, .b = w_qkv, .bias = b_qkv, .c = &l.wide[i],
            .M = (uint32_t)rows, .N = (uint32_t)width, .K = C,
            .batch = 1, .b_group = 1,
            .transpose_b = true,
            .b_offset = (uint32_t)(i * width * C),
            .bias_offset = (uint32_t)(i * width),
            .alpha = 1.0f,
        };
        if ((s = vk_matmul_record(ctx, &m)))
            return s;
    }
    /* then their roundings, so that the three products and the three passes
     * each run side by side, with one barrier between them */
    for (int i = LAYER_Q; i <= LAYER_V; i++)
        if ((s = keep(ctx, &l, i)))
            return s;
    if ((s = vk_attention_record(ctx, &a)) || (s = keep(ctx, &l, LAYER_O)))
        return s;
    matmul_call out = {
        .a = l.kept[LAYER_O], .b = w_out, .bias = b_out, .c = wide.write,
        .M = (uint32_t)rows, .N = (uint32_t)w_out->shape[0], .K = (uint32_t)width,
        .batch = 1, .b_group = 1,
        .transpose_b = true,
        .alpha = 1.0f,
    };
    return wide_output_end(ctx, &wide, vk_matmul_record(ctx, &out));
}

vkattn_status vkattn_mha_choose(vkattn_context *ctx, const vkattn_mha_desc *desc,
                                const vkattn_tensor *x, const vkattn_tensor *w_qkv,
                                const vkattn_tensor *b_qkv, const vkattn_tensor *w_out,
                                const vkattn_tensor *b_out, const vkattn_tensor *y,
                                vkattn_attention_choice *out)
{
    if (!ctx)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    if (!out)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "mha_choose: out is NULL");
    attention_dims d;
    vkattn_status s = check_args(ctx, desc, x, w_qkv, b_qkv, w_out, b_out, y, &d);
    if (s != VKATTN_OK)
        return s;
    *out = (vkattn_attention_choice){.path = VKATTN_PATH_AUTO};
    if (ctx->backend == VKATTN_BACKEND_CPU)
        return VKATTN_OK;
    /* The planners look at the step's own tensors (their texel views): the
     * scratch that vkattn_mha would run on, and then reuses. */
    layer_tensors l;
    if ((s = layer_scratch(ctx, &d, desc->compute_dtype, &l)))
        return s;
    attention_call a = attention_step(&d, &l, desc->path);
    return vk_attention_choice(ctx, &a, out);
}
