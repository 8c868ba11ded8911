/* Where each batch entry's queries and keys are: the checks on cu_seqlens, block
 * tables and kv_len values (as last uploaded, before any work is recorded), and
 * the longest sequences, which size the kernels' grids. */
#include "attention_args.h"

#include <stdlib.h>
#include <string.h>

/* The values of an I32 tensor as last uploaded (the CPU backend's own memory,
 * or the copy a Vulkan tensor keeps of its last upload), read without touching
 * the device; NULL with `*unknown` set when there is none (never uploaded, or
 * written by the application's own commands): then nothing is checked and the
 * kernels clamp instead (see vkattn.h). */
static vkattn_status read_i32(vkattn_context *ctx, const vkattn_tensor *t, int32_t **out,
                              bool *unknown)
{
    const int32_t *values = ctx->backend == VKATTN_BACKEND_CPU ? t->host : t->i32_shadow;
    *out = NULL;
    if (!values) {
        *unknown = true;
        return VKATTN_OK;
    }
    if (!(*out = malloc(t->bytes)))
        return ctx_fail(ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "attention: out of host memory");
    memcpy(*out, values, t->bytes);
    return VKATTN_OK;
}

/* Offsets that start at 0 or more, never decrease and end within `rows`; the
 * longest sequence. */
static vkattn_status check_offsets(vkattn_context *ctx, const char *name, const int32_t *cu,
                                   int64_t B, int64_t rows, const char *tensor, int64_t *longest)
{
    *longest = 0;
    if (cu[0] < 0)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "attention: %s[0] is %d, must be >= 0",
                        name, cu[0]);
    for (int64_t b = 0; b < B; b++) {
        if (cu[b + 1] < cu[b])
            return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                            "attention: %s[%lld] = %d is less than %s[%lld] = %d (offsets must "
                            "not decrease)", name, (long long)(b + 1), cu[b + 1], name,
                            (long long)b, cu[b]);
        if (cu[b + 1] - cu[b] > *longest)
            *longest = cu[b + 1] - cu[b];
    }
    if (cu[B] > rows)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "attention: %s[%lld] = %d is past %s's %lld rows", name, (long long)B,
                        cu[B], tensor, (long long)rows);
    return VKATTN_OK;
}

/* kv_len entries between 0 and each entry's key count; the longest for paged keys. */
static vkattn_status check_kv_len(vkattn_context *ctx, const attention_dims *d,
                                  const int32_t *kv_len, const int32_t *cu_k)
{
    for (int64_t b = 0; b < d->B; b++) {
        int64_t keys = cu_k ? cu_k[b + 1] - cu_k[b] : d->Tk;
        if (kv_len[b] < 0 || kv_len[b] > keys)
            return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                            "attention: kv_len[%lld] = %d is outside 0..%lld (%s)", (long long)b,
                            kv_len[b], (long long)keys,
                            d->var.block_table ? "max_blocks * block_size of the block table"
                            : cu_k            ? "that sequence's keys in cu_seqlens_k"
                                              : "Tk of K");
    }
    return VKATTN_OK;
}

/* Every block a sequence uses (those holding keys below its kv_len) is in the cache. */
static vkattn_status check_blocks(vkattn_context *ctx, const attention_dims *d,
                                  const int32_t *table, const int32_t *kv_len)
{
    const attention_variants *v = &d->var;
    for (int64_t b = 0; b < d->B; b++) {
        int64_t used = (kv_len[b] + v->block_size - 1) / v->block_size;
        for (int64_t n = 0; n < used; n++) {
            int32_t block = table[b * v->max_blocks + n];
            if (block < 0 || block >= v->num_blocks)
                return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                                "attention: block_table[%lld][%lld] = %d is outside the cache's "
                                "%lld blocks (K is %lld blocks of %lld keys)", (long long)b,
                                (long long)n, block, (long long)v->num_blocks,
                                (long long)v->num_blocks, (long long)v->block_size);
        }
    }
    return VKATTN_OK;
}

vkattn_status attention_check_sequences(vkattn_context *ctx, const vkattn_attention_desc *desc,
                                        attention_dims *d)
{
    attention_variants *v = &d->var;
    int32_t *cu_q = NULL, *cu_k = NULL, *table = NULL, *kv_len = NULL;
    bool unknown_q = false, unknown_k = false, unknown_table = false, unknown_len = false;
    vkattn_status s = VKATTN_OK;
    if (v->cu_q)
        s = read_i32(ctx, v->cu_q, &cu_q, &unknown_q);
    if (!s && v->cu_k)
        s = read_i32(ctx, v->cu_k, &cu_k, &unknown_k);
    if (!s && v->block_table)
        s = read_i32(ctx, v->block_table, &table, &unknown_table);
    if (!s && desc->kv_len)
        s = read_i32(ctx, desc->kv_len, &kv_len, &unknown_len);
    /* Each check runs where the values it needs are known. */
    int64_t longest;
    if (!s && cu_q &&
        !(s = check_offsets(ctx, "cu_seqlens_q", cu_q, d->B, v->total_q, "Q", &longest)))
        d->Tq = longest;
    v->o_gaps = v->cu_q && (unknown_q || (cu_q && (cu_q[0] > 0 || cu_q[d->B] < v->total_q)));
    if (!s && cu_k &&
        !(s = check_offsets(ctx, "cu_seqlens_k", cu_k, d->B, v->total_k, "K", &longest)))
        d->Tk = longest;
    if (!s && kv_len && !unknown_k)
        s = check_kv_len(ctx, d, kv_len, cu_k);
    if (!s && table && kv_len)
        s = check_blocks(ctx, d, table, kv_len);
    /* Grids are sized for at least one row and one key; the kernels skip rows
     * and keys past each sequence's own. */
    d->Tq = d->Tq > 0 ? d->Tq : 1;
    d->Tk = d->Tk > 0 ? d->Tk : 1;
    free(cu_q);
    free(cu_k);
    free(table);
    free(kv_len);
    return s;
}
