/* vkattn attention without rows: Q, K or V with a dimension of 0, as numpy and
 * PyTorch take them. The library takes no empty tensor, so for such a run the
 * command makes the checks the library would have made and writes O itself:
 * with no query rows an O with none, with no keys zeros (every row sees no
 * key, DESIGN.md section 1). The index files' checks serve every run. */
#include "attention_cmd.h"

#include <stdio.h>
#include <stdlib.h>

/* Offsets of packed sequences: B + 1 int entries from 0, never decreasing, the
 * last at most the tensor's rows. */
static int check_offsets(const char *path, const char *name, const loaded *l, int64_t rows,
                         int64_t batch, const char *what)
{
    const npy_array *a = &l->array;
    int rc = check_index_file("attention", path, name, l, 1, what);
    if (rc)
        return rc;
    if (a->shape[0] != batch + 1)
        return cli_error("attention", EXIT_RUNTIME, "%s (%s): is (%lld), must be (%lld) (%s)",
                         path, name, (long long)a->shape[0], (long long)batch + 1, what);
    const int32_t *v = a->data;
    for (int64_t b = 0; b <= batch; b++)
        if (v[b] < (b ? v[b - 1] : 0) || v[b] > rows)
            return cli_error("attention", EXIT_RUNTIME,
                             "%s (%s): entry %lld = %d is outside %d..%lld (offsets into %lld rows)",
                             path, name, (long long)b, v[b], b ? v[b - 1] : 0, (long long)rows,
                             (long long)rows);
    return 0;
}

int check_index_files(const attention_options *o, const attention_files *f,
                      const attention_shapes *s)
{
    int rc = 0;
    if (o->cu_seqlens_q)
        rc = check_offsets(o->cu_seqlens_q, "cu_seqlens_q", &f->cu_q, f->q.array.shape[0],
                           s->batch, "B + 1 offsets into Q's rows");
    if (!rc && o->cu_seqlens_k)
        rc = check_offsets(o->cu_seqlens_k, "cu_seqlens_k", &f->cu_k, f->k.array.shape[0],
                           s->batch, "B + 1 offsets into K's rows");
    if (!rc && o->block_table)
        rc = check_index_file("attention", o->block_table, "block_table", &f->table, 2,
                              "(B, max_blocks) cache blocks");
    return rc;
}

/* The number of keys of batch entry b that --kv-len may not exceed. */
static int64_t keys_of(const attention_options *o, const attention_files *f, int64_t Tk,
                       int64_t b)
{
    const int32_t *cu = f->cu_k.array.data;
    return o->cu_seqlens_k ? cu[b + 1] - cu[b] : Tk;
}

/* The longest of the B sequences that packed offsets (checked) mark out. */
static int64_t longest_sequence(const loaded *offsets)
{
    const int32_t *cu = offsets->array.data;
    int64_t longest = 0;
    for (int64_t b = 0; b + 1 < offsets->array.shape[0]; b++)
        if (cu[b + 1] - cu[b] > longest)
            longest = cu[b + 1] - cu[b];
    return longest;
}

/* (B, heads, rows, width) of Q (which = 0), K (1) or V (2): packed ones
 * (total, heads, width) with the longest sequence for rows (0 where all are
 * empty: the library counts 1 there, which a mask of 1 broadcasts to as well,
 * and a mask of 0 is never read), paged caches (num_blocks, block_size, heads,
 * width) with max_blocks * block_size keys, dense ones as the layout has
 * them. */
static void problem_dims(const attention_options *o, const attention_files *f,
                         const attention_shapes *s, int which, int64_t out[4])
{
    const int64_t *shape = which == 0 ? s->q : which == 1 ? s->k : s->v;
    const char *packed = which == 0 ? o->cu_seqlens_q : o->cu_seqlens_k;
    bool bshd = o->desc.layout == VKATTN_LAYOUT_BSHD;
    out[0] = s->batch;
    if (packed) {
        int64_t longest = longest_sequence(which == 0 ? &f->cu_q : &f->cu_k);
        out[1] = shape[1], out[2] = longest, out[3] = shape[2];
    } else if (which > 0 && o->block_table) {
        out[1] = shape[2], out[2] = f->table.array.shape[1] * shape[1], out[3] = shape[3];
    } else {
        out[0] = shape[0], out[1] = shape[bshd ? 2 : 1], out[2] = shape[bshd ? 1 : 2];
        out[3] = shape[3];
    }
}

void attention_problem(const attention_options *o, const attention_files *f,
                       const attention_shapes *s, int64_t out[4])
{
    int64_t k4[4];
    problem_dims(o, f, s, 0, out);
    problem_dims(o, f, s, 1, k4);
    out[3] = k4[2];
}

/* --kv-len: B entries, each within its entry's keys; with a paged cache, every
 * block they use in it. */
static int check_kv_len(const attention_options *o, const attention_files *f, int64_t B,
                        int64_t Tk)
{
    int32_t *lens = calloc(B ? (size_t)B : 1, sizeof *lens);
    int rc = lens ? parse_kv_len(o, B, lens)
                  : cli_error("attention", EXIT_RUNTIME, "out of memory");
    const npy_array *table = &f->table.array, *k = &f->k.array;
    for (int64_t b = 0; !rc && b < B; b++) {
        int64_t keys = keys_of(o, f, Tk, b);
        if (lens[b] > keys)
            rc = cli_error("attention", EXIT_RUNTIME, "--kv-len: kv_len[%lld] = %d is outside "
                           "0..%lld (%s)", (long long)b, lens[b], (long long)keys,
                           o->block_table     ? "max_blocks * block_size of the block table"
                           : o->cu_seqlens_k ? "that sequence's keys in cu_seqlens_k"
                                             : "Tk of K");
        int64_t used = o->block_table ? (lens[b] + k->shape[1] - 1) / k->shape[1] : 0;
        for (int64_t n = 0; !rc && n < used; n++) {
            int32_t block = ((const int32_t *)table->data)[b * table->shape[1] + n];
            if (block < 0 || block >= k->shape[0])
                rc = cli_error("attention", EXIT_RUNTIME, "%s (block_table): entry [%lld][%lld] "
                               "= %d is outside the cache's %lld blocks", o->block_table,
                               (long long)b, (long long)n, block, (long long)k->shape[0]);
        }
    }
    free(lens);
    return rc;
}

/* What the library would check of a run with rows, for one without: head
 * sizes, batch sizes, kv heads and the grouping of query heads, --kv-len (the
 * mask and the per-head vectors are checked as they are loaded). */
static int check_shapes(const attention_options *o, const attention_files *f,
                        const attention_shapes *s)
{
    const npy_array *k = &f->k.array, *v = &f->v.array;
    int64_t q4[4], k4[4], v4[4];
    problem_dims(o, f, s, 0, q4);
    problem_dims(o, f, s, 1, k4);
    problem_dims(o, f, s, 2, v4);
    if (k4[3] != q4[3])
        return cli_error("attention", EXIT_RUNTIME, "%s (K): K has head size %lld but Q has %lld",
                         o->k, (long long)k4[3], (long long)q4[3]);
    for (int i = 0; i < k->ndim - 1; i++)
        if (v->shape[i] != k->shape[i])
            return cli_error("attention", EXIT_RUNTIME, "%s (V): V's dimension %d is %lld but "
                             "K's is %lld", o->v, i, (long long)v->shape[i],
                             (long long)k->shape[i]);
    if (!o->cu_seqlens_q && k4[0] != q4[0]) /* packed: both from the offsets */
        return o->block_table
                   ? cli_error("attention", EXIT_RUNTIME, "%s (block_table): has %lld rows but "
                               "Q has batch size %lld", o->block_table, (long long)k4[0],
                               (long long)q4[0])
                   : cli_error("attention", EXIT_RUNTIME, "%s (K): K has batch size %lld but "
                               "Q has %lld", o->k, (long long)k4[0], (long long)q4[0]);
    if (q4[3] < 1)
        return cli_error("attention", EXIT_RUNTIME, "%s (Q): Q has head size %lld, must be "
                         ">= 1", o->q, (long long)q4[3]);
    if (v4[3] < 1)
        return cli_error("attention", EXIT_RUNTIME, "%s (V): V has head size %lld, must be "
                         ">= 1", o->v, (long long)v4[3]);
    /* no query heads and no kv heads: nothing to group */
    if ((k4[1] < 1 && q4[1] > 0) || (k4[1] > 0 && q4[1] % k4[1]))
        return cli_error("attention", EXIT_RUNTIME, "%s (Q): Q has %lld heads but K and V %lld: "
                         "the query heads must be a multiple of the kv heads", o->q,
                         (long long)q4[1], (long long)k4[1]);
    return o->kv_len ? check_kv_len(o, f, s->batch, k4[2]) : 0;
}

int run_without_rows(const attention_options *o, const attention_files *f,
                     const attention_shapes *s)
{
    if (f->q.array.count && f->k.array.count && f->v.array.count)
        return -1;
    int rc = check_shapes(o, f, s);
    if (rc)
        return rc;
    size_t count = 1;
    for (int i = 0; i < s->file_ndim; i++)
        count *= (size_t)s->file_shape[i];
    /* zeros are zero bits in every dtype; F16 is written as float16, the others float32 */
    bool f16 = o->common.out_dtype == VKATTN_DTYPE_F16;
    void *zeros = calloc(count ? count : 1, f16 ? sizeof(uint16_t) : sizeof(float));
    if (!zeros)
        return cli_error("attention", EXIT_RUNTIME, "out of memory for the output");
    char err[256];
    if (npy_write(o->o, zeros, f16 ? NPY_F16 : NPY_F32, s->file_ndim, s->file_shape, err,
                  sizeof err))
        rc = cli_error("attention", EXIT_RUNTIME, "%s: %s", o->o, err);
    free(zeros);
    return rc;
}
