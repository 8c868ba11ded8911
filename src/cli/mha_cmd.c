/* vkattn mha: the multi-head attention layer over .npy files. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const char *const usage[] = {
    "usage: vkattn mha -x X.npy --w-qkv W.npy --w-out W.npy --heads H -o Y.npy [options]\n"
    "\n"
    "The multi-head attention layer with PyTorch nn.Linear weights:\n"
    "  qkv = X W_qkv^T + b_qkv; q, k, v = split(qkv, H*Dh); o = attention(q, k, v) per head;\n"
    "  Y = o W_out^T + b_out\n"
    "X is (B, T, C) or (T, C); W_qkv (3*H*Dh, C); b_qkv (3*H*Dh); W_out (C_out, H*Dh);\n"
    "b_out (C_out). Y (float32) has X's rank, and is written only if the run succeeds.\n"
    "\n"
    "options:\n"
    "  --b-qkv b.npy, --b-out b.npy   optional biases\n"
    "  --causal                       causal self-attention\n"
    "  --scale S                      default 1/sqrt(Dh)\n"
    "  --path auto|fused|unfused\n"
    "  --dtype f32|f16|bf16           round X, the weights and the biases to this type on\n"
    "                                 loading (to nearest even) and compute on it\n"
    "                                 (accumulating in f32); default: each file's own\n"
    "                                 (float32 for float64 files)\n"
    "  --out-dtype f32|f16|bf16       Y's type (default f32), as for vkattn attention\n"
    "  --backend auto|vulkan|cpu\n"
    "  --device N|NAME\n"
    "  --verbose\n"
    "\n"
    "attention variants, in any combination (pos = the query's position; a score\n"
    "s = scale * dot(q_i, k_j) is soft-capped, then gets ALiBi, then the mask):\n"
    "  --window L,R                   sliding window: key j only if\n"
    "                                 pos - L <= j <= pos + R; -1 (any negative)\n"
    "                                 leaves a side unbounded (FlashAttention's\n"
    "                                 window_size)\n"
    "  --softcap C                    s = C * tanh(s / C) (Gemma 2), C > 0; 0 is off\n"
    "  --sinks S.npy                  (H) floats: one raw logit per head, not scaled,\n"
    "                                 in the softmax denominator with no value row\n"
    "                                 (gpt-oss)\n"
    "  --alibi SLOPES.npy             (H) floats: s += slope[h] * (j - pos)\n"
    "  --mask M.npy                   float16/32/64, added to s; broadcasts like numpy\n"
    "                                 to (B, H, T, T): (T, T), (B, 1, T, T),\n"
    "                                 (B, H, T, T), (H, T, T), (B, 1, 1, T),\n"
    "                                 (B, 1, T, 1) ...;\n"
    "                                 -inf = key not allowed (as for vkattn attention)\n"
    "A query row with no allowed key gives zeros, sinks or not.\n"
    "exit status: 0 success, 1 runtime error, 2 usage error\n",
    NULL,
};

typedef struct mha_options {
    const char *x, *w_qkv, *b_qkv, *w_out, *b_out, *y;
    variant_options variants;
    vkattn_mha_desc desc;
    common_options common;
} mha_options;

static int parse(int argc, char **argv, mha_options *o)
{
    args a = {argc, argv, 1, "mha"};
    memset(o, 0, sizeof *o);
    for (; a.i < argc; a.i++) {
        const char *value;
        int r;
        if ((r = take_common(&a, &o->common, usage)) != 0 || (r = take_variant(&a, &o->variants))) {
            if (r < 0)
                return r;
        } else if ((r = take_value(&a, "-x", "--x", &o->x)) ||
                   (r = take_value(&a, "--w-qkv", NULL, &o->w_qkv)) ||
                   (r = take_value(&a, "--b-qkv", NULL, &o->b_qkv)) ||
                   (r = take_value(&a, "--w-out", NULL, &o->w_out)) ||
                   (r = take_value(&a, "--b-out", NULL, &o->b_out)) ||
                   (r = take_value(&a, "-o", "--out", &o->y))) {
            if (r < 0)
                return -1;
        } else if (!strcmp(argv[a.i], "--causal")) {
            o->desc.causal = true;
        } else if ((r = take_value(&a, "--heads", NULL, &value)) != 0) {
            int64_t heads;
            if (r < 0 || parse_int(&a, "--heads", value, 1, 1 << 20, &heads))
                return -1;
            o->desc.heads = (int32_t)heads;
        } else if ((r = take_value(&a, "--scale", NULL, &value)) != 0) {
            if (r < 0 || parse_float(&a, "--scale", value, &o->desc.scale))
                return -1;
        } else {
            return cli_error("mha", EXIT_USAGE, "unknown option %s (see --help)", argv[a.i]), -1;
        }
    }
    if (!o->x || !o->w_qkv || !o->w_out || !o->y || !o->desc.heads)
        return cli_error("mha", EXIT_USAGE, "-x, --w-qkv, --w-out, --heads and -o are required "
                                            "(see --help)"), -1;
    o->desc.path = o->common.path;
    o->desc.has_window = o->variants.has_window;
    o->desc.window_left = o->variants.window_left;
    o->desc.window_right = o->variants.window_right;
    o->desc.softcap = o->variants.softcap;
    return 0;
}

int run_mha(int argc, char **argv)
{
    mha_options o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == -2 ? 0 : EXIT_USAGE;

    loaded x = {0}, w_qkv = {0}, b_qkv = {0}, w_out = {0}, b_out = {0};
    loaded *all[5] = {&x, &w_qkv, &b_qkv, &w_out, &b_out};
    const char *paths[5] = {o.x, o.w_qkv, o.b_qkv, o.w_out, o.b_out};
    const char *names[5] = {"X", "W_qkv", "b_qkv", "W_out", "b_out"};
    const int ranks[5] = {3, 2, 1, 2, 1};
    variant_files variants = {0};
    vkattn_context *ctx = NULL;
    vkattn_tensor *y = NULL;
    for (int i = 0; i < 5 && !rc; i++) {
        if (!paths[i])
            continue;
        rc = load_npy("mha", paths[i], names[i], all[i]);
        int ndim = all[i]->array.ndim;
        bool ok = ndim == ranks[i] || (i == 0 && ndim == 2);
        if (!rc && !ok)
            rc = cli_error("mha", EXIT_RUNTIME, "%s (%s): is %d-D, must be %s", paths[i], names[i],
                           ndim, i == 0 ? "(B, T, C) or (T, C)" : ranks[i] == 2 ? "2-D" : "1-D");
    }
    /* the mask broadcasts to (B, H, T, T) */
    int64_t xs[3] = {1, 1, 1};
    for (int i = 0; !rc && i < x.array.ndim; i++)
        xs[3 - x.array.ndim + i] = x.array.shape[i];
    const int64_t problem[4] = {xs[0], o.desc.heads, xs[1], xs[1]};
    if (rc || (rc = load_variant_files("mha", &o.variants, problem, &variants)) ||
        (rc = open_context("mha", &o.common, &ctx)) ||
        (rc = make_variant_tensors("mha", ctx, &o.variants, &variants)))
        goto done;
    o.desc.sinks = variants.sinks.tensor;
    o.desc.alibi_slopes = variants.alibi.tensor;
    o.desc.mask = variants.mask.tensor;
    for (int i = 0; i < 5 && !rc; i++)
        if (paths[i])
            rc = make_tensor("mha", ctx, &o.common, paths[i], names[i], all[i],
                             i == 0 ? 3 : ranks[i], i == 0 ? xs : all[i]->array.shape);
    if (rc)
        goto done;
    int64_t ys[3] = {xs[0], xs[1], w_out.array.shape[0]};
    vkattn_tensor_desc yd = {.dtype = o.common.out_dtype, .ndim = 3, .shape = {ys[0], ys[1], ys[2]}};
    if (vkattn_tensor_create(ctx, &yd, &y) ||
        vkattn_mha(ctx, &o.desc, x.tensor, w_qkv.tensor, b_qkv.tensor, w_out.tensor, b_out.tensor,
                   y)) {
        const tensor_file files[] = {
            {"X", o.x}, {"W_qkv", o.w_qkv}, {"b_qkv", o.b_qkv}, {"W_out", o.w_out},
            {"b_out", o.b_out}, {"Y", o.y}, {"sinks", o.variants.sinks},
            {"alibi_slopes", o.variants.alibi}, {"mask", o.variants.mask},
        };
        rc = library_error_in(ctx, files, sizeof files / sizeof files[0]);
        goto done;
    }
    rc = save_npy("mha", ctx, y, o.y, x.array.ndim, ys + (3 - x.array.ndim));
done:
    vkattn_tensor_destroy(y);
    for (int i = 0; i < 5; i++)
        unload(all[i]);
    unload_variant_files(&variants);
    vkattn_context_destroy(ctx);
    return rc;
}
