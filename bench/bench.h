/* vkattn-bench: shared declarations. Uses only the public API. */
#ifndef VKATTN_BENCH_H
#define VKATTN_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vkattn.h"

typedef enum bench_op {
    OP_MATMUL,
    OP_SOFTMAX,
    OP_TRANSPOSE,
    OP_COUNT
} bench_op;

/* One benchmark case: an op, its shape and options. */
typedef struct bench_case {
    bench_op op;
    const char *variant;   /* "tiled", "naive", "subgroup", "shared", "" */
    int64_t batch;         /* matmul/softmax: leading batch; transpose: B */
    int64_t M, N, K;       /* matmul; softmax rows (M) x cols (N); transpose T, H, D */
    bool causal;
    vkattn_dtype dtype;
} bench_case;

typedef struct bench_options {
    int reps, warmup;
    bool verify;
} bench_options;

typedef struct bench_result {
    double ms_median, ms_min;
    double flops, bytes;   /* per run: useful arithmetic and compulsory traffic */
    double max_abs_err;
    double tolerance;
    bool verified, ok;
    char error[256];       /* a status message when the case could not run */
} bench_result;

const char *bench_op_name(bench_op op);
/* Runs one case on `gpu` (timed) and, when asked, checks it against `cpu`. */
void bench_run_case(vkattn_context *gpu, vkattn_context *cpu, const bench_case *c,
                    const bench_options *opt, bench_result *out);
/* "1x1024x1024x1024" style description of the case's shape. */
void bench_case_shape(const bench_case *c, char *buf, size_t size);

#endif
