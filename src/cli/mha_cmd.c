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
    "X may have B or T of 0, as nn.Linear takes it: Y then has no rows either.\n"
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
    "  --compute-dtype f32|f16|bf16   the type q, k, v and the heads' output are kept\n"
    "                                 in between the steps (default f32): f16 or bf16\n"
    "                                 rounds each to it (to nearest even), as a\n"
    "                                 PyTorch module in that dtype does, so that\n"
    "                                 attention and the output projection can take\n"
    "                                 the 16-bit kernels\n"
    "  --out-dtype f32|f16|bf16       Y's type (default f32), as for vkattn attention\n"
    "  --backend auto|vulkan|cpu\n"
    "  --device N|NAME\n"
    "  --verbose                      log the device and the attention step's path\n"
    "\n"
    "attention variants, in any combination (pos = the query's position; a score\n"
    "s = scale * dot(q_i, k_j) is soft-capped, then gets ALiBi, then the mask):\n"
    "  --window L,R                   sliding window: key j only if\n"
    "                                 pos - L <= j <= pos + R; -1 leaves a side\n"
    "                                 unbounded (FlashAttention's window_size);\n"
    "                                 other negatives are refused\n"
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
    "A long option's value may also follow it after '=' (--heads=8); -x and -o\n"
    "have the long names --x and --out.\n"
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
        } else if ((r = take_value(&a, "--compute-dtype", NULL, &value)) != 0) {
            if (r < 0 || parse_float_dtype(&a, "--compute-dtype", value, &o->desc.compute_dtype))
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

/* X with no rows (B or T of 0), as numpy and PyTorch's nn.Linear take it: Y
 * has none either. The library takes no empty tensor, so the command makes the
 * checks the library would have made (the weights' and biases' shapes against
 * X and the heads; the variants' files were checked as they were loaded) and
 * writes the empty Y itself, in --out-dtype. Returns -1 when X has rows (the
 * library's run), else the exit status. */
static int run_without_rows(const mha_options *o, loaded *const all[5], const char *const paths[5],
                            const char *const names[5], const int64_t xs[3])
{
    const npy_array *x = &all[0]->array, *w_qkv = &all[1]->array, *b_qkv = &all[2]->array;
    const npy_array *w_out = &all[3]->array, *b_out = &all[4]->array;
    if (x->count)
        return -1;
    for (int i = 0; i < 5; i++) {
        int rc = paths[i] ? check_float_file("mha", paths[i], names[i], all[i]) : 0;
        if (rc)
            return rc;
    }
    char a[96], b[96];
    int64_t C = xs[2], H = o->desc.heads;
    if (C < 1)
        return cli_error("mha", EXIT_RUNTIME, "%s (X): is %s, its C must be positive", o->x,
                         shape_text(x, a, sizeof a));
    if (w_qkv->shape[1] != C || w_qkv->shape[0] % (3 * H))
        return cli_error("mha", EXIT_RUNTIME, "%s (W_qkv): is %s, must be (3*H*Dh, C) = (a "
                         "multiple of %lld, %lld) for X %s and %lld heads", o->w_qkv,
                         shape_text(w_qkv, a, sizeof a), (long long)(3 * H), (long long)C,
                         shape_text(x, b, sizeof b), (long long)H);
    int64_t width = w_qkv->shape[0] / 3; /* H * Dh */
    if (o->b_qkv && b_qkv->shape[0] != 3 * width)
        return cli_error("mha", EXIT_RUNTIME, "%s (b_qkv): is %s, must be (%lld)", o->b_qkv,
                         shape_text(b_qkv, a, sizeof a), (long long)(3 * width));
    if (w_out->shape[1] != width)
        return cli_error("mha", EXIT_RUNTIME, "%s (W_out): is %s, must be (C_out, H*Dh) with "
                         "H*Dh = %lld", o->w_out, shape_text(w_out, a, sizeof a),
                         (long long)width);
    if (o->b_out && b_out->shape[0] != w_out->shape[0])
        return cli_error("mha", EXIT_RUNTIME, "%s (b_out): is %s, must be (%lld)", o->b_out,
                         shape_text(b_out, a, sizeof a), (long long)w_out->shape[0]);
    const int64_t ys[3] = {xs[0], xs[1], w_out->shape[0]};
    /* Y has no elements, so only its header says float16 (--out-dtype f16) or float32 */
    static const float nothing;
    char err[256];
    if (npy_write(o->y, &nothing, o->common.out_dtype == VKATTN_DTYPE_F16 ? NPY_F16 : NPY_F32,
                  x->ndim, ys + (3 - x->ndim), err, sizeof err))
        return cli_error("mha", EXIT_RUNTIME, "%s: %s", o->y, err);
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
        /* X may have no rows (run_without_rows); the weights and biases must have elements */
        rc = i == 0 ? load_npy_maybe_empty("mha", paths[i], names[i], all[i])
                    : load_npy("mha", paths[i], names[i], all[i]);
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
    if (rc || (rc = load_variant_files("mha", &o.variants, problem, &variants)))
        goto done;
    if ((rc = run_without_rows(&o, all, paths, names, xs)) >= 0)
        goto done;
    rc = 0;
    if ((rc = open_context("mha", &o.common, &ctx)) ||
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
    vkattn_attention_choice ch;
    if (o.common.verbose && !vkattn_mha_choose(ctx, &o.desc, x.tensor, w_qkv.tensor, b_qkv.tensor,
                                               w_out.tensor, b_out.tensor, y, &ch))
        log_attention_choice("mha's attention", &ch);
    rc = save_npy("mha", ctx, y, o.y, x.array.ndim, ys + (3 - x.array.ndim));
done:
    vkattn_tensor_destroy(y);
    for (int i = 0; i < 5; i++)
        unload(all[i]);
    unload_variant_files(&variants);
    vkattn_context_destroy(ctx);
    return rc;
}
