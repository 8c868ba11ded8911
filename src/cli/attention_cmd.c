/* vkattn attention: scaled dot-product attention over .npy files. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: vkattn attention -q Q.npy -k K.npy -v V.npy -o O.npy [options]\n"
    "\n"
    "O = softmax(scale * Q K^T, masked) V. Inputs are float32, float16 or float64\n"
    "(read as float32) .npy files; O is written as float32, and only if the whole run\n"
    "succeeds. Q, K and V have the same rank:\n"
    "  2-D  Q (Tq, D), K (Tk, D), V (Tk, Dv)            one batch entry, one head\n"
    "  3-D  Q (H, Tq, D), K (Hkv, Tk, D), V (Hkv, Tk, Dv)  independent heads\n"
    "  4-D  (B, H, T, D) with --layout bhsd, (B, T, H, D) with --layout bshd\n"
    "H must be a multiple of Hkv (grouped-query attention). O has Q's rank.\n"
    "\n"
    "options:\n"
    "  --causal              mask key j for query row i when j > i + q_offset\n"
    "  --scale S             default 1/sqrt(D)\n"
    "  --q-offset N          position of query row 0 among the keys (default Tk - Tq,\n"
    "                        bottom-right; 0 is PyTorch's top-left is_causal)\n"
    "  --kv-len L[,L...]     valid keys per batch entry (padding masked)\n"
    "  --layout bhsd|bshd    layout of 4-D inputs (default bhsd)\n"
    "  --path auto|fused|unfused\n"
    "  --dtype f32|f16|bf16  round Q, K and V to this type on loading (to nearest\n"
    "                        even) and compute on it (accumulating in f32); default:\n"
    "                        each file's own (float32 for float64 files)\n"
    "  --backend auto|vulkan|cpu\n"
    "  --device N|NAME       device index or name substring (see vkattn devices)\n"
    "  --verbose             log the device and path choices\n"
    "exit status: 0 success, 1 runtime error, 2 usage error\n";

typedef struct attention_options {
    const char *q, *k, *v, *o, *kv_len;
    vkattn_attention_desc desc;
    common_options common;
} attention_options;

static int parse(int argc, char **argv, attention_options *o)
{
    args a = {argc, argv, 1, "attention"};
    memset(o, 0, sizeof *o);
    for (; a.i < argc; a.i++) {
        const char *value;
        int r;
        if ((r = take_common(&a, &o->common, usage)) != 0) {
            if (r < 0)
                return r;
        } else if ((r = take_value(&a, "-q", "--q", &o->q)) || (r = take_value(&a, "-k", "--k", &o->k)) ||
                   (r = take_value(&a, "-v", "--v", &o->v)) || (r = take_value(&a, "-o", "--out", &o->o)) ||
                   (r = take_value(&a, "--kv-len", NULL, &o->kv_len))) {
            if (r < 0)
                return -1;
        } else if (!strcmp(argv[a.i], "--causal")) {
            o->desc.causal = true;
        } else if ((r = take_value(&a, "--scale", NULL, &value)) != 0) {
            if (r < 0 || parse_float(&a, "--scale", value, &o->desc.scale))
                return -1;
        } else if ((r = take_value(&a, "--q-offset", NULL, &value)) != 0) {
            if (r < 0 || parse_int(&a, "--q-offset", value, -2147483647, 2147483647,
                                   &o->desc.q_offset))
                return -1;
            o->desc.has_q_offset = true;
        } else if ((r = take_value(&a, "--layout", NULL, &value)) != 0) {
            if (r < 0)
                return -1;
            if (!strcmp(value, "bhsd"))
                o->desc.layout = VKATTN_LAYOUT_BHSD;
            else if (!strcmp(value, "bshd"))
                o->desc.layout = VKATTN_LAYOUT_BSHD;
            else
                return cli_error("attention", EXIT_USAGE, "--layout %s: expected bhsd or bshd",
                                 value), -1;
        } else {
            return cli_error("attention", EXIT_USAGE, "unknown option %s (see --help)", argv[a.i]),
                   -1;
        }
    }
    if (!o->q || !o->k || !o->v || !o->o)
        return cli_error("attention", EXIT_USAGE, "-q, -k, -v and -o are required (see --help)"),
               -1;
    o->desc.path = o->common.path;
    return 0;
}

/* The 4-D shape a 2-, 3- or 4-D array stands for. */
static void as_4d(const npy_array *a, int64_t out[4])
{
    int pad = 4 - a->ndim;
    for (int i = 0; i < 4; i++)
        out[i] = i < pad ? 1 : a->shape[i - pad];
}

/* Reads the comma-separated lengths into an I32 tensor of B entries. */
static int make_kv_len(vkattn_context *ctx, const char *text, int64_t B, vkattn_tensor **out)
{
    int32_t *lens = calloc((size_t)B, sizeof *lens);
    int64_t n = 0;
    const char *p = text;
    args a = {0, NULL, 0, "attention"};
    int rc = lens ? 0 : cli_error("attention", EXIT_RUNTIME, "out of memory");
    while (!rc && *p) {
        char item[32];
        size_t len = strcspn(p, ",");
        snprintf(item, sizeof item, "%.*s", (int)(len < 31 ? len : 31), p);
        int64_t v;
        if (n == B)
            rc = cli_error("attention", EXIT_USAGE, "--kv-len has more than B = %lld lengths",
                           (long long)B);
        else if (parse_int(&a, "--kv-len", item, 0, 2147483647, &v))
            rc = EXIT_USAGE;
        else
            lens[n++] = (int32_t)v;
        p += len + (p[len] == ',');
    }
    if (!rc && n != B)
        rc = cli_error("attention", EXIT_USAGE, "--kv-len has %lld lengths, but B is %lld",
                       (long long)n, (long long)B);
    vkattn_tensor_desc desc = {.dtype = VKATTN_DTYPE_I32, .ndim = 1, .shape = {B}};
    if (!rc && (vkattn_tensor_create(ctx, &desc, out) ||
                vkattn_tensor_upload(*out, lens, VKATTN_DTYPE_I32)))
        rc = cli_error("attention", EXIT_RUNTIME, "kv_len: %s", vkattn_last_error(ctx));
    free(lens);
    return rc;
}

int run_attention(int argc, char **argv)
{
    attention_options o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == -2 ? 0 : EXIT_USAGE;

    loaded q = {0}, k = {0}, v = {0};
    vkattn_context *ctx = NULL;
    vkattn_tensor *out = NULL, *kv_len = NULL;
    if ((rc = load_npy("attention", o.q, "Q", &q)) || (rc = load_npy("attention", o.k, "K", &k)) ||
        (rc = load_npy("attention", o.v, "V", &v)))
        goto done;
    const loaded *all[3] = {&q, &k, &v};
    const char *paths[3] = {o.q, o.k, o.v}, *names = "QKV";
    for (int i = 0; i < 3 && !rc; i++)
        if (all[i]->array.ndim < 2 || all[i]->array.ndim > 4)
            rc = cli_error("attention", EXIT_RUNTIME, "%s (%c): is %d-D, must be 2-, 3- or 4-D",
                           paths[i], names[i], all[i]->array.ndim);
    if (!rc && (k.array.ndim != q.array.ndim || v.array.ndim != q.array.ndim))
        rc = cli_error("attention", EXIT_RUNTIME, "Q is %d-D but K is %d-D and V %d-D: use one rank",
                       q.array.ndim, k.array.ndim, v.array.ndim);
    if (rc)
        goto done;
    int64_t qs[4], ks[4], vs[4];
    as_4d(&q.array, qs);
    as_4d(&k.array, ks);
    as_4d(&v.array, vs);
    if (q.array.ndim < 4)
        o.desc.layout = VKATTN_LAYOUT_BHSD;
    /* O: Q's shape with V's head size (the last dimension in either layout). */
    int64_t os[4] = {qs[0], qs[1], qs[2], vs[3]};

    if ((rc = open_context("attention", &o.common, &ctx)) ||
        (rc = make_tensor("attention", ctx, &o.common, o.q, "Q", &q, 4, qs)) ||
        (rc = make_tensor("attention", ctx, &o.common, o.k, "K", &k, 4, ks)) ||
        (rc = make_tensor("attention", ctx, &o.common, o.v, "V", &v, 4, vs)))
        goto done;
    if (o.kv_len && (rc = make_kv_len(ctx, o.kv_len, qs[0], &kv_len)))
        goto done;
    o.desc.kv_len = kv_len;
    vkattn_tensor_desc od = {.dtype = VKATTN_DTYPE_F32, .ndim = 4, .shape = {os[0], os[1], os[2], os[3]}};
    if (vkattn_tensor_create(ctx, &od, &out) ||
        vkattn_attention(ctx, &o.desc, q.tensor, k.tensor, v.tensor, out)) {
        rc = library_error(ctx);
        goto done;
    }
    rc = save_npy("attention", ctx, out, o.o, q.array.ndim, os + (4 - q.array.ndim));
done:
    vkattn_tensor_destroy(out);
    vkattn_tensor_destroy(kv_len);
    unload(&q);
    unload(&k);
    unload(&v);
    vkattn_context_destroy(ctx);
    return rc;
}
