/* vkattn attention: scaled dot-product attention over .npy files. */
#include "attention_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const usage[] = {
    "usage: vkattn attention -q Q.npy -k K.npy -v V.npy -o O.npy [options]\n"
    "\n"
    "O = softmax(scale * Q K^T, masked) V. Inputs are float32, float16 or float64\n"
    ".npy files (float64 rounded once to float32, or to --dtype); O is written as\n"
    "float32, and only if the whole run succeeds. Dense Q, K and V have one rank:\n"
    "  2-D  Q (Tq, D), K (Tk, D), V (Tk, Dv)            one batch entry, one head\n"
    "  3-D  Q (H, Tq, D), K (Hkv, Tk, D), V (Hkv, Tk, Dv)  independent heads\n"
    "  4-D  (B, H, T, D) with --layout bhsd, (B, T, H, D) with --layout bshd\n"
    "(packed and paged ones are below).\n"
    "H must be a multiple of Hkv (grouped-query attention). O has Q's rank and\n"
    "layout: (B, H, Tq, Dv), or (B, Tq, H, Dv) with --layout bshd.\n"
    "Any of them may have no rows (B, H, Tq or Tk of 0): O then has none, or is\n"
    "zeros where there are no keys (every row sees none).\n"
    "\n"
    "options:\n"
    "  --causal              mask key j for query row i when j > i + q_offset\n"
    "  --scale S             default 1/sqrt(D)\n"
    "  --q-offset N          position of query row 0 among the keys (default Tk - Tq,\n"
    "                        bottom-right; 0 is PyTorch's top-left is_causal);\n"
    "                        |N| <= 268435456 (2^28)\n"
    "  --kv-len L[,L...]     valid keys per batch entry (padding masked); with\n"
    "                        packed keys, the first L of each sequence\n"
    "  --layout bhsd|bshd    layout of 4-D inputs (default bhsd)\n"
    "  --path auto|fused|unfused\n"
    "  --kernel NAME         the fused kernel, by name: auto (default), rows,\n"
    "                        tiled, coopmat, coopmat_emulated, decode,\n"
    "                        coopmat_workgroup or coopmat_workgroup_emulated;\n"
    "                        implies --path fused (an error where it cannot run)\n"
    "  --dtype f32|f16|bf16  round Q, K and V to this type on loading (to nearest\n"
    "                        even) and compute on it (accumulating in f32); default:\n"
    "                        each file's own (float32 for float64 files)\n"
    "  --out-dtype f32|f16|bf16\n"
    "                        O's type (default f32): computed in f32 and rounded to\n"
    "                        it (nearest even); the file is float16 for f16, else\n"
    "                        float32 (numpy has no bf16; widening it is exact)\n"
    "  --backend auto|vulkan|cpu\n"
    "  --device N|NAME       device index or name substring (see vkattn devices)\n"
    "  --verbose             log the device and path choices\n"
    "\n"
    "variants, in any combination (pos = i + q_offset is query row i's key\n"
    "position; a score s = scale * dot(q_i, k_j) is soft-capped, then gets ALiBi,\n"
    "then the mask):\n"
    "  --window L,R          sliding window: key j only if pos - L <= j <= pos + R;\n"
    "                        -1 leaves a side unbounded (FlashAttention's\n"
    "                        window_size); other negatives are refused\n"
    "  --softcap C           s = C * tanh(s / C) (Gemma 2 logit soft-capping), C > 0;\n"
    "                        0 is off\n"
    "  --sinks S.npy         (H) floats: one raw logit per query head, not scaled, in\n"
    "                        the softmax denominator with no value row (gpt-oss)\n"
    "  --alibi SLOPES.npy    (H) floats: s += slope[h] * (j - pos)\n"
    "  --mask M.npy          float16/32/64, added to s; broadcasts like numpy to\n"
    "                        (B, H, Tq, Tk): (Tq, Tk), (B, 1, Tq, Tk), (B, H, Tq, Tk),\n"
    "                        (H, Tq, Tk), (B, 1, 1, Tk), (B, 1, Tq, 1) ... (2 to 4\n"
    "                        dimensions, each equal or 1); -inf = key not allowed;\n"
    "                        a finite float64 value past float32's range (numpy's\n"
    "                        float64 min) becomes float32's largest of its sign:\n"
    "                        still finite. Packed: Tq and Tk are the longest\n"
    "                        sequences, 0 where all are empty (row i and\n"
    "                        key j of sequence b read mask[b, h, i, j]); paged: Tk\n"
    "                        is max_blocks * block_size\n"
    "A query row with no allowed key gives zeros, sinks or not.\n"
    "\n",
    "packed sequences and paged KV cache (int32 or int64 .npy index files; fused\n"
    "path only):\n"
    "  --cu-seqlens-q CQ.npy, --cu-seqlens-k CK.npy\n"
    "                        B+1 offsets: Q (total_q, H, D), K (total_k, Hkv, D) and\n"
    "                        V (total_k, Hkv, Dv) hold B sequences packed, sequence b\n"
    "                        being rows cu[b]..cu[b+1]-1; O is (total_q, H, Dv);\n"
    "                        q_offset defaults to Tk_b - Tq_b per sequence; all\n"
    "                        may be empty (total 0: O has no rows, or is zeros),\n"
    "                        as dense ones may; rows of O in no sequence (before\n"
    "                        cu_q[0], from cu_q[B] on) are zeros\n"
    "  --block-table T.npy   (B, max_blocks): K (num_blocks, block_size, Hkv, D) and\n"
    "                        V (num_blocks, block_size, Hkv, Dv) are caches; key j of\n"
    "                        entry b is row j % block_size of block\n"
    "                        T[b][j / block_size].\n"
    "                        Needs --kv-len (each entry's key count, Tk_b: q_offset\n"
    "                        defaults to Tk_b - Tq); entries past the blocks an\n"
    "                        entry uses are never read (-1 padding is fine). Q is\n"
    "                        (B, H, Tq, D) ((B, Tq, H, D) with --layout bshd), or\n"
    "                        packed with --cu-seqlens-q (not with --cu-seqlens-k:\n"
    "                        the table says where the keys are)\n"
    "A long option's value may also follow it after '=' (--window=-1,0); -q, -k, -v\n"
    "and -o have the long names --q, --k, --v and --out.\n"
    "exit status: 0 success, 1 runtime error, 2 usage error\n",
    NULL,
};

/* Which options go together: where the keys are is said once, and a paged
 * cache needs each entry's key count. */
static int check_combination(const attention_options *o)
{
    const char *problem =
        !o->q || !o->k || !o->v || !o->o ? "-q, -k, -v and -o are required"
        : o->cu_seqlens_k && !o->cu_seqlens_q
            ? "--cu-seqlens-k needs --cu-seqlens-q (packed queries)"
        : o->cu_seqlens_q && !o->cu_seqlens_k && !o->block_table
            ? "--cu-seqlens-q needs --cu-seqlens-k, or --block-table for paged keys"
        : o->cu_seqlens_k && o->block_table
            ? "--cu-seqlens-k and --block-table both say where the keys are: give one"
        : o->block_table && !o->kv_len ? "--block-table needs --kv-len (each entry's key count)"
                                       : NULL;
    if (problem)
        return cli_error("attention", EXIT_USAGE, "%s (see --help)", problem), -1;
    return 0;
}

/* --kernel NAME: the library's names of the fused variants
 * (vkattn_fused_variant_name), in the enum's order. */
static int parse_kernel(const char *name, vkattn_fused_variant *out)
{
    char names[128] = "";
    for (int v = VKATTN_FUSED_AUTO; strcmp(vkattn_fused_variant_name(v), "?"); v++) {
        if (!strcmp(name, vkattn_fused_variant_name(v))) {
            *out = (vkattn_fused_variant)v;
            return 0;
        }
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s", v ? ", " : "",
                 vkattn_fused_variant_name(v));
    }
    return cli_error("attention", EXIT_USAGE, "--kernel %s: expected one of %s", name, names), -1;
}

static int parse(int argc, char **argv, attention_options *o)
{
    args a = {argc, argv, 1, "attention"};
    memset(o, 0, sizeof *o);
    for (; a.i < argc; a.i++) {
        const char *value;
        int r;
        if ((r = take_common(&a, &o->common, usage)) != 0 || (r = take_variant(&a, &o->variants))) {
            if (r < 0)
                return r;
        } else if ((r = take_value(&a, "-q", "--q", &o->q)) || (r = take_value(&a, "-k", "--k", &o->k)) ||
                   (r = take_value(&a, "-v", "--v", &o->v)) || (r = take_value(&a, "-o", "--out", &o->o)) ||
                   (r = take_value(&a, "--kv-len", NULL, &o->kv_len)) ||
                   (r = take_value(&a, "--cu-seqlens-q", NULL, &o->cu_seqlens_q)) ||
                   (r = take_value(&a, "--cu-seqlens-k", NULL, &o->cu_seqlens_k)) ||
                   (r = take_value(&a, "--block-table", NULL, &o->block_table))) {
            if (r < 0)
                return -1;
        } else if ((r = take_value(&a, "--kernel", NULL, &value)) != 0) {
            if (r < 0 || parse_kernel(value, &o->desc.fused_variant))
                return -1;
        } else if (!strcmp(argv[a.i], "--causal")) {
            o->desc.causal = true;
        } else if ((r = take_value(&a, "--scale", NULL, &value)) != 0) {
            if (r < 0 || parse_float(&a, "--scale", value, &o->desc.scale))
                return -1;
        } else if ((r = take_value(&a, "--q-offset", NULL, &value)) != 0) {
            if (r < 0 || parse_int(&a, "--q-offset", value, -VKATTN_MAX_Q_OFFSET,
                                   VKATTN_MAX_Q_OFFSET, &o->desc.q_offset))
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
    if (check_combination(o))
        return -1;
    if (o->desc.fused_variant != VKATTN_FUSED_AUTO) {
        /* A kernel asked for by name runs or fails with the library's reason:
         * the AUTO path would quietly take the unfused one where it cannot. */
        const char *name = vkattn_fused_variant_name(o->desc.fused_variant);
        if (o->common.path == VKATTN_PATH_UNFUSED)
            return cli_error("attention", EXIT_USAGE, "--kernel %s is a fused kernel: not with "
                             "--path unfused", name), -1;
        if (o->common.backend == VKATTN_BACKEND_CPU)
            return cli_error("attention", EXIT_USAGE, "--kernel %s is a Vulkan kernel: not with "
                             "--backend cpu", name), -1;
        o->common.path = VKATTN_PATH_FUSED;
    }
    o->desc.path = o->common.path;
    o->desc.has_window = o->variants.has_window;
    o->desc.window_left = o->variants.window_left;
    o->desc.window_right = o->variants.window_right;
    o->desc.softcap = o->variants.softcap;
    return 0;
}

/* The 4-D shape a 2-, 3- or 4-D array stands for. */
static void as_4d(const npy_array *a, int64_t out[4])
{
    int pad = 4 - a->ndim;
    for (int i = 0; i < 4; i++)
        out[i] = i < pad ? 1 : a->shape[i - pad];
}

/* Where B, the number of --kv-len entries, comes from, for messages. */
static const char *batch_source(const attention_options *o)
{
    return o->cu_seqlens_q  ? "the sequences of --cu-seqlens-q"
           : o->block_table ? "the rows of the block table"
                            : "Q's batch size";
}

int parse_kv_len(const attention_options *o, int64_t B, int32_t *lens)
{
    int64_t n = 0;
    const char *p = o->kv_len;
    args a = {0, NULL, 0, "attention"};
    while (*p) {
        char item[32];
        size_t len = strcspn(p, ",");
        snprintf(item, sizeof item, "%.*s", (int)(len < 31 ? len : 31), p);
        int64_t v;
        if (n == B)
            return cli_error("attention", EXIT_USAGE, "--kv-len has more than B = %lld lengths "
                             "(%s)", (long long)B, batch_source(o));
        if (parse_int(&a, "--kv-len", item, 0, 2147483647, &v))
            return EXIT_USAGE;
        lens[n++] = (int32_t)v;
        p += len + (p[len] == ',');
    }
    if (n != B)
        return cli_error("attention", EXIT_USAGE, "--kv-len has %lld lengths, but B is %lld (%s)",
                         (long long)n, (long long)B, batch_source(o));
    return 0;
}

/* The lengths as an I32 tensor of B entries. */
static int make_kv_len(vkattn_context *ctx, const attention_options *o, int64_t B,
                       vkattn_tensor **out)
{
    int32_t *lens = calloc(B ? (size_t)B : 1, sizeof *lens);
    int rc = lens ? parse_kv_len(o, B, lens)
                  : cli_error("attention", EXIT_RUNTIME, "out of memory");
    vkattn_tensor_desc desc = {.dtype = VKATTN_DTYPE_I32, .ndim = 1, .shape = {B}};
    if (!rc && (vkattn_tensor_create(ctx, &desc, out) ||
                vkattn_tensor_upload(*out, lens, VKATTN_DTYPE_I32)))
        rc = cli_error("attention", EXIT_RUNTIME, "kv_len: %s", vkattn_last_error(ctx));
    free(lens);
    return rc;
}

static int load_files(const attention_options *o, attention_files *f)
{
    const char *paths[6] = {o->q, o->k, o->v, o->cu_seqlens_q, o->cu_seqlens_k, o->block_table};
    const char *names[6] = {"Q", "K", "V", "cu_seqlens_q", "cu_seqlens_k", "block_table"};
    loaded *all[6] = {&f->q, &f->k, &f->v, &f->cu_q, &f->cu_k, &f->table};
    int rc = 0;
    for (int i = 0; i < 6 && !rc; i++) {
        /* Q, K and V may have no rows at all, but for a paged cache's blocks. */
        bool rows = i < 3 && !(i > 0 && o->block_table);
        if (paths[i])
            rc = rows ? load_npy_maybe_empty("attention", paths[i], names[i], all[i])
                      : load_npy("attention", paths[i], names[i], all[i]);
    }
    return rc;
}

/* Packed Q, K and V are 3-D and paged caches 4-D as the library takes them;
 * dense ones are 2- to 4-D, all of one rank. */
static int check_ranks(const attention_options *o, const attention_files *f)
{
    const loaded *all[3] = {&f->q, &f->k, &f->v};
    const char *paths[3] = {o->q, o->k, o->v}, *names = "QKV";
    for (int i = 0; i < 3; i++) {
        bool packed = i == 0 ? o->cu_seqlens_q != NULL : o->cu_seqlens_k != NULL;
        bool paged = i > 0 && o->block_table;
        int ndim = all[i]->array.ndim;
        if (packed && ndim != 3)
            return cli_error("attention", EXIT_RUNTIME,
                             "%s (%c): is %d-D, must be 3-D (total, heads, D) with --cu-seqlens-%c",
                             paths[i], names[i], ndim, i == 0 ? 'q' : 'k');
        if (paged && ndim != 4)
            return cli_error("attention", EXIT_RUNTIME,
                             "%s (%c): is %d-D, must be 4-D (num_blocks, block_size, Hkv, D) with "
                             "--block-table", paths[i], names[i], ndim);
        if (!packed && !paged && (ndim < 2 || ndim > 4))
            return cli_error("attention", EXIT_RUNTIME, "%s (%c): is %d-D, must be 2-, 3- or 4-D",
                             paths[i], names[i], ndim);
    }
    bool dense = !o->cu_seqlens_q && !o->block_table;
    if (dense && (f->k.array.ndim != f->q.array.ndim || f->v.array.ndim != f->q.array.ndim))
        return cli_error("attention", EXIT_RUNTIME,
                         "%s (Q) is %d-D but %s (K) is %d-D and %s (V) %d-D: use one rank", o->q,
                         f->q.array.ndim, o->k, f->k.array.ndim, o->v, f->v.array.ndim);
    return 0;
}

static void plan_shapes(attention_options *o, const attention_files *f, attention_shapes *s)
{
    const npy_array *q = &f->q.array, *k = &f->k.array, *v = &f->v.array;
    int64_t dv = v->shape[v->ndim - 1];
    if (o->cu_seqlens_q) {
        s->q_ndim = s->o_ndim = s->file_ndim = 3;
        memcpy(s->q, q->shape, 3 * sizeof q->shape[0]);
        s->o[0] = q->shape[0], s->o[1] = q->shape[1], s->o[2] = dv;
        s->file_shape = s->o;
    } else {
        s->q_ndim = s->o_ndim = 4;
        as_4d(q, s->q);
        if (q->ndim < 4)
            o->desc.layout = VKATTN_LAYOUT_BHSD;
        /* O: Q's shape with V's head size (the last dimension in either layout). */
        s->o[0] = s->q[0], s->o[1] = s->q[1], s->o[2] = s->q[2], s->o[3] = dv;
        s->file_ndim = q->ndim;
        s->file_shape = s->o + (4 - q->ndim);
    }
    if (o->cu_seqlens_k || o->block_table) {
        s->k_ndim = k->ndim;
        memcpy(s->k, k->shape, (size_t)k->ndim * sizeof k->shape[0]);
        memcpy(s->v, v->shape, (size_t)v->ndim * sizeof v->shape[0]);
    } else {
        s->k_ndim = 4;
        as_4d(k, s->k);
        as_4d(v, s->v);
    }
    s->batch = o->cu_seqlens_q ? f->cu_q.array.shape[0] - 1
               : o->block_table ? f->table.array.shape[0]
                                : s->q[0];
}

static int make_tensors(vkattn_context *ctx, const attention_options *o, attention_files *f,
                        const attention_shapes *s)
{
    int rc;
    if ((rc = make_tensor("attention", ctx, &o->common, o->q, "Q", &f->q, s->q_ndim, s->q)) ||
        (rc = make_tensor("attention", ctx, &o->common, o->k, "K", &f->k, s->k_ndim, s->k)) ||
        (rc = make_tensor("attention", ctx, &o->common, o->v, "V", &f->v, s->k_ndim, s->v)))
        return rc;
    if (o->cu_seqlens_q &&
        (rc = make_index_tensor("attention", ctx, o->cu_seqlens_q, "cu_seqlens_q", &f->cu_q, 1,
                                "B + 1 offsets into Q's rows")))
        return rc;
    if (o->cu_seqlens_k &&
        (rc = make_index_tensor("attention", ctx, o->cu_seqlens_k, "cu_seqlens_k", &f->cu_k, 1,
                                "B + 1 offsets into K's rows")))
        return rc;
    if (o->block_table &&
        (rc = make_index_tensor("attention", ctx, o->block_table, "block_table", &f->table, 2,
                                "(B, max_blocks) cache blocks")))
        return rc;
    return make_variant_tensors("attention", ctx, &o->variants, &f->variants);
}

static void unload_files(attention_files *f)
{
    loaded *all[6] = {&f->q, &f->k, &f->v, &f->cu_q, &f->cu_k, &f->table};
    for (int i = 0; i < 6; i++)
        unload(all[i]);
    unload_variant_files(&f->variants);
}


/* A kernel asked for by name where AUTO's backend is the CPU reference (no
 * Vulkan device): an error, not the reference's result under its name. */
static int check_kernel_backend(vkattn_context *ctx, const attention_options *o)
{
    vkattn_device_info info;
    if (o->desc.fused_variant == VKATTN_FUSED_AUTO || vkattn_context_info(ctx, &info) != VKATTN_OK ||
        info.backend != VKATTN_BACKEND_CPU)
        return 0;
    return cli_error("attention", EXIT_RUNTIME, "--kernel %s: no Vulkan device, and the CPU "
                     "backend has no fused kernels", vkattn_fused_variant_name(o->desc.fused_variant));
}

/* --verbose: the path, fused variant, key splits and the weights' rounding
 * the call took. */
static void log_choice(vkattn_context *ctx, const vkattn_attention_desc *desc,
                       const attention_files *f, const vkattn_tensor *out)
{
    vkattn_attention_choice ch;
    if (!vkattn_attention_choose(ctx, desc, f->q.tensor, f->k.tensor, f->v.tensor, out, &ch))
        log_attention_choice("attention", &ch);
}

int run_attention(int argc, char **argv)
{
    attention_options o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == -2 ? 0 : EXIT_USAGE;

    attention_files f;
    attention_shapes s = {0};
    vkattn_context *ctx = NULL;
    vkattn_tensor *out = NULL, *kv_len = NULL;
    memset(&f, 0, sizeof f);
    if ((rc = load_files(&o, &f)) || (rc = check_ranks(&o, &f)))
        goto done;
    plan_shapes(&o, &f, &s);
    if ((rc = check_index_files(&o, &f, &s)))
        goto done;
    /* --sinks, --alibi and --mask checked before a run without rows too */
    int64_t problem[4];
    attention_problem(&o, &f, &s, problem);
    if ((rc = load_variant_files("attention", &o.variants, problem, &f.variants)))
        goto done;
    if ((rc = run_without_rows(&o, &f, &s)) >= 0)
        goto done;
    rc = 0;
    if ((rc = open_context("attention", &o.common, &ctx)) || (rc = check_kernel_backend(ctx, &o)) ||
        (rc = make_tensors(ctx, &o, &f, &s)))
        goto done;
    if (o.kv_len && (rc = make_kv_len(ctx, &o, s.batch, &kv_len)))
        goto done;
    o.desc.kv_len = kv_len;
    o.desc.cu_seqlens_q = f.cu_q.tensor;
    o.desc.cu_seqlens_k = f.cu_k.tensor;
    o.desc.block_table = f.table.tensor;
    o.desc.sinks = f.variants.sinks.tensor;
    o.desc.alibi_slopes = f.variants.alibi.tensor;
    o.desc.mask = f.variants.mask.tensor;
    vkattn_tensor_desc od = {.dtype = o.common.out_dtype, .ndim = s.o_ndim};
    memcpy(od.shape, s.o, sizeof s.o);
    if (vkattn_tensor_create(ctx, &od, &out) ||
        vkattn_attention(ctx, &o.desc, f.q.tensor, f.k.tensor, f.v.tensor, out)) {
        const tensor_file files[] = {
            {"Q", o.q}, {"K", o.k}, {"V", o.v}, {"O", o.o}, {"mask", o.variants.mask},
            {"sinks", o.variants.sinks}, {"alibi_slopes", o.variants.alibi},
            {"cu_seqlens_q", o.cu_seqlens_q}, {"cu_seqlens_k", o.cu_seqlens_k},
            {"block_table", o.block_table},
        };
        rc = library_error_in(ctx, files, sizeof files / sizeof files[0]);
        goto done;
    }
    if (o.common.verbose)
        log_choice(ctx, &o.desc, &f, out);
    rc = save_npy("attention", ctx, out, o.o, s.file_ndim, s.file_shape);
done:
    vkattn_tensor_destroy(out);
    vkattn_tensor_destroy(kv_len);
    unload_files(&f);
    vkattn_context_destroy(ctx);
    return rc;
}
