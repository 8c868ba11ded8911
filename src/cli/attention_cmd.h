/* vkattn attention: what the command's files share (the options, the files of
 * one run and their shapes), and its runs without rows, which never reach the
 * library (attention_no_rows.c). */
#ifndef VKATTN_CLI_ATTENTION_CMD_H
#define VKATTN_CLI_ATTENTION_CMD_H

#include "cli.h"

typedef struct attention_options {
    const char *q, *k, *v, *o, *kv_len;
    const char *cu_seqlens_q, *cu_seqlens_k, *block_table;
    variant_options variants;
    vkattn_attention_desc desc;
    common_options common;
} attention_options;

/* The files of one run. */
typedef struct attention_files {
    loaded q, k, v, cu_q, cu_k, table;
    variant_files variants;
} attention_files;

/* The shapes the tensors get: packed and paged files keep their own, dense
 * ones stand for 4-D tensors (leading dimensions of 1). */
typedef struct attention_shapes {
    int q_ndim, k_ndim, o_ndim;
    int64_t q[4], k[4], v[4], o[4];
    int file_ndim;              /* O as written: Q's rank */
    const int64_t *file_shape;
    int64_t batch;              /* B, the number of --kv-len entries */
} attention_shapes;

/* Reads --kv-len's comma-separated lengths (o->kv_len) into `lens`, B entries. */
int parse_kv_len(const attention_options *o, int64_t B, int32_t *lens);

/* The index files' shapes and the packed offsets (B + 1 entries from 0 or more,
 * never decreasing, within the tensor's rows), as the library checks them. */
int check_index_files(const attention_options *o, const attention_files *f,
                      const attention_shapes *s);

/* (B, H, Tq, Tk): the problem the mask broadcasts to (packed: the longest
 * sequences, 0 where all are empty; paged: max_blocks * block_size keys;
 * dense: as they are, 0 where there are no rows). After check_index_files. */
void attention_problem(const attention_options *o, const attention_files *f,
                       const attention_shapes *s, int64_t out[4]);

/* Q with no rows gives an O with none, K with none zeros: written here, in
 * --out-dtype, after the checks the library would have made. Returns -1 when
 * Q, K and V all have rows (the library's run), else the exit status. */
int run_without_rows(const attention_options *o, const attention_files *f,
                     const attention_shapes *s);

#endif
