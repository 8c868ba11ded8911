/* vkattn-bench: shared declarations. Uses only the public API (vkattn.h).
 *
 * Files: bench_main.c (the run: contexts, loop, exit status), bench_args.c
 * (options), bench_sweep.c (the --quick/--full case lists), bench_device.c
 * (device header, peak estimate), bench_report.c (table, JSON lines, CSV),
 * bench_util.c (data, tensors, timing, comparison), and one file per op:
 * bench_attention.c, bench_mha.c, bench_matmul.c, bench_softmax.c,
 * bench_transpose.c. */
#ifndef VKATTN_BENCH_H
#define VKATTN_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vkattn.h"

typedef enum bench_op {
    OP_ATTENTION,
    OP_MHA,
    OP_MATMUL,
    OP_SOFTMAX,
    OP_TRANSPOSE,
    OP_COUNT
} bench_op;

/* How an attention or mha case runs: a path of the main context, or the CPU
 * reference backend (a separate context). */
typedef enum bench_path {
    PATH_AUTO,
    PATH_FUSED,
    PATH_UNFUSED,
    PATH_REFERENCE,
    PATH_NONE,          /* ops without paths */
} bench_path;

/* One case. Every op maps its shape onto the attention names, so that the
 * JSON/CSV columns are the same for all ops:
 *   attention       Q (B,H,Tq,D), K (B,Hkv,Tk,D), V (B,Hkv,Tk,Dv), O (B,H,Tq,Dv)
 *   mha             X (B,T,C) with T = Tq = Tk, H heads of size Dh = D = Dv,
 *                   C = C_out = H*Dh, Hkv = H
 *   matmul          C (B,M,N) = A (B,M,K) @ W (K,N): Tq = M, Tk = N, D = K,
 *                   H = Hkv = 1, Dv = 0
 *   softmax         X (B,H,Tq,Tk), softmax over Tk; D = Dv = 0, Hkv = H
 *   head_transpose  X (B,T,H,D) -> Y (B,H,T,D): Tq = T, Tk = 0, Hkv = H, Dv = D */
/* An attention variant a case runs with (bench_variants.c); `param` is the
 * window's left size or the paged cache's block size. AV_TOKEN_MAJOR is no
 * variant but the layout BSHD: a contiguous cache laid out as a paged one is,
 * every kv head of a key in one row. AV_KV_DTYPE is no variant either: K and V
 * of dtype `param` (a 16-bit KV cache) with Q of the case's dtype. */
typedef enum bench_att_variant {
    AV_NONE, AV_WINDOW, AV_SOFTCAP, AV_SINKS, AV_ALIBI, AV_MASK, AV_VARLEN, AV_PAGED,
    AV_TOKEN_MAJOR, AV_KV_DTYPE,
} bench_att_variant;

typedef struct bench_case {
    bench_op op;
    bench_path path;
    int variant;            /* matmul: vkattn_matmul_variant; softmax: vkattn_softmax_variant */
    uint32_t kv_splits;     /* attention, fused path: 0 chosen, 1 no split, n ways */
    int64_t B, H, Hkv, Tq, Tk, D, Dv;
    bool causal;
    bool has_q_offset;      /* attention/softmax: else q_offset = Tk - Tq */
    int64_t q_offset;
    vkattn_dtype dtype;     /* of the inputs */
    vkattn_dtype out_dtype; /* attention: of O (default F32; 16-bit is rounded into) */
    vkattn_dtype compute_dtype; /* mha: the layer's q, k, v and heads' output (default F32) */
    bench_att_variant att_variant; /* attention: AV_NONE, or the variant it adds */
    int64_t param;
} bench_case;

typedef struct bench_options {
    int reps;               /* the most timed runs (exactly this many if reps_given) */
    bool reps_given;
    int warmup;             /* untimed runs first, at least 1 */
    double warmup_ms;       /* and untimed runs until this much wall time has passed */
    double budget_ms;       /* timed runs of a case stop near this total */
    bool verify;
    bool profile;           /* per-kernel GPU times of the timed runs (kernels below) */
} bench_options;

typedef struct bench_result {
    double ms_median, ms_min;
    int reps;
    double flops, bytes;    /* per run: useful arithmetic, compulsory traffic */
    bool flops_nominal;     /* a nominal count (softmax): no %peak */
    double max_abs_err;
    double tolerance;       /* the largest allowed error, for display */
    bool verified;          /* compared with the CPU reference */
    bool ok;                /* ran, and verified within tolerance (or not verified) */
    char note[96];          /* the kernel that ran and how it was verified:
                               "ran tiled x4; rows 0-15,..." */
    char error[320];        /* why the case could not run */
    double base_ms_median;  /* paired with a baseline (bench_time_paired): its median, */
    double base_ratio;      /* and the median of the pairs' ratios; else 0 */
    const char *base_name;  /* the baseline: "plain" */
    char kernels[192];      /* with --profile: each kernel's GPU time per timed run,
                               "attention_decode 21.3 us, attention_combine 4.1 us" */
} bench_result;

/* What a case runs on. */
typedef struct bench_env {
    vkattn_context *main;   /* the chosen backend and device */
    vkattn_context *cpu;    /* the CPU reference (double accumulation) */
    bench_options opt;
} bench_env;

/* ---- bench_args.c -------------------------------------------------------- */

#define BENCH_MAX_SHAPES 32
#define BENCH_MAX_WITH 12

typedef struct bench_cli {
    bench_options opt;
    vkattn_backend backend;
    const char *device;
    unsigned op_mask;           /* bit per bench_op; 0 = all */
    bool path_given;
    bench_path path;
    bool full;
    bool gpu;                   /* --gpu: the GPU sweep instead of --quick/--full */
    bool warmup_ms_given;       /* --warmup-ms: not the device type's default */
    bool causal;
    bool has_q_offset;
    int64_t q_offset;
    bool dtype_given;
    vkattn_dtype dtype;
    vkattn_dtype out_dtype;     /* --out-dtype: O's, of --shape cases */
    int shape_count;
    int64_t shapes[BENCH_MAX_SHAPES][7];   /* B,H,Hkv,Tq,Tk,D,Dv */
    int matmul_count;                      /* --matmul cases: replace the sweep's matmuls */
    int64_t matmuls[BENCH_MAX_SHAPES][4];  /* M,N,K,batch */
    vkattn_matmul_variant matmul_variant;  /* --matmul-variant: of --matmul cases */
    bool matmul_variant_given;
    vkattn_fused_variant fused_variant;    /* --variant: forced on --shape cases */
    uint32_t kv_splits;                    /* --splits: of --shape cases (0: chosen) */
    int with_count;                        /* --with: each --shape case once per entry */
    bench_att_variant with[BENCH_MAX_WITH];
    int64_t with_param[BENCH_MAX_WITH];
    const char *tuning;                    /* --tune: vkattn_context_desc.tuning */
    const char *json_path, *csv_path;
    long soak;                  /* --soak N: N mixed calls instead of the sweep */
} bench_cli;

/* Parses argv; returns 0, or 2 on a usage error (reported on stderr), or -1
 * after printing --help. */
int bench_parse_args(int argc, char **argv, bench_cli *cli);

/* ---- bench_soak.c -------------------------------------------------------- */

/* --soak: `calls` mixed calls on ctx, results compared with the first of their
 * kind, memory before and after printed to `out`; 0 when all is well. */
int bench_soak(vkattn_context *ctx, long calls, FILE *out);

/* ---- bench_sweep.c ------------------------------------------------------- */

/* Fills `out` with the cases to run; returns their count. */
int bench_build_cases(const bench_cli *cli, bench_case *out, int capacity);

/* ---- bench_device.c ------------------------------------------------------ */

/* Estimated peak FP32 GFLOP/s of the device (0 if unknown) and how it was found. */
double bench_peak_gflops(const vkattn_device_info *info, char *how, size_t size);
void bench_print_device(FILE *f, const vkattn_device_info *info, double peak, const char *how,
                        const bench_options *opt);

/* ---- bench_report.c ------------------------------------------------------ */

const char *bench_op_name(bench_op op);
const char *bench_path_name(bench_path path);
const char *bench_variant_name(const bench_case *c);
const char *bench_dtype_name(vkattn_dtype dtype);
/* Bytes per element: 2 for f16 and bf16, 4 for f32 and i32. */
double bench_dtype_bytes(vkattn_dtype dtype);
/* A short shape string: attention "B,H,Hkv,Tq,Tk,D[,Dv]" (the --shape syntax),
 * mha "B1 T256 C256 H4 Dh64", matmul "BxMxNxK", softmax "BxHxTqxTk",
 * head_transpose "BxTxHxD". */
void bench_case_shape(const bench_case *c, char *buf, size_t size);

typedef struct bench_report {
    FILE *table, *json, *csv;
    const vkattn_device_info *main_info, *cpu_info;
    double peak_gflops;         /* of the main device */
} bench_report;

void bench_report_begin(const bench_report *rep);
void bench_report_case(const bench_report *rep, const bench_case *c, const bench_result *r);

/* ---- bench_util.c -------------------------------------------------------- */

/* Deterministic uniform values in [lo, hi]. */
void bench_fill(float *v, size_t n, uint64_t seed, float lo, float hi);
double bench_now_s(void);

/* Tensors created for a case, destroyed together. */
#define BENCH_MAX_TENSORS 16
typedef struct bench_tensors {
    vkattn_tensor *t[BENCH_MAX_TENSORS];
    int n;
} bench_tensors;

/* Creates a tensor of `dtype` and, when `data` is given, uploads it (f32 host data). */
vkattn_status bench_tensor(vkattn_context *ctx, bench_tensors *ts, vkattn_dtype dtype, int ndim,
                           const int64_t *shape, const float *data, vkattn_tensor **out);
void bench_tensors_release(bench_tensors *ts);

/* Records the op once on `ctx`. */
typedef vkattn_status (*bench_record_fn)(vkattn_context *ctx, void *user);

/* Warm-up runs, then timed runs (each synchronised, between timer_begin and
 * timer_end); fills ms_median, ms_min and reps. */
vkattn_status bench_time(vkattn_context *ctx, const bench_options *opt, bench_record_fn record,
                         void *user, bench_result *r);

/* As bench_time, but each timed run of `record` is paired with one of
 * `base_record` (A B, then B A, alternately) within the same budget: fills
 * ms_median, ms_min and reps (pairs) of the case, base_ms_median, and
 * base_ratio, the median of the pairs' time ratios. A ratio of runs taken
 * side by side stays put where the host's speed drifts (a shared machine's
 * memory bandwidth) and two medians timed seconds apart do not. */
vkattn_status bench_time_paired(vkattn_context *ctx, const bench_options *opt,
                                bench_record_fn record, void *user, bench_record_fn base_record,
                                void *base_user, bench_result *r);

/* Up to three blocks of at most BENCH_BLOCK_ROWS contiguous rows out of `rows`
 * (start, middle, end), or one block of all rows when that is no more. */
#define BENCH_BLOCK_ROWS 16
/* Untimed runs of a case on a GPU, in wall time, before its timed runs, in
 * submissions of about BENCH_WARMUP_BATCH_MS of GPU work (at most
 * BENCH_WARMUP_MAX_BATCH runs each). */
#define BENCH_GPU_WARMUP_MS 500.0
#define BENCH_WARMUP_BATCH_MS 10.0
#define BENCH_WARMUP_MAX_BATCH 64
typedef struct bench_blocks {
    int64_t first[3], count[3];
    int n;
} bench_blocks;
void bench_row_blocks(int64_t rows, bench_blocks *out);
/* "rows 0-15, 1016-1031, 2032-2047 of 2048", or "all rows". */
/* "ran tiled x4; " (the kernel and key splits the call took), into buf. */
void bench_kernel_note(const vkattn_attention_choice *ran, char *buf, size_t size);
void bench_blocks_note(const bench_blocks *b, int64_t rows, char *buf, size_t size);

/* Compares n outputs with the reference and folds the result into r: sets
 * verified, raises max_abs_err and tolerance (the largest bound), clears ok on
 * any |got - want| > atol + rtol * |scale[i]| (scale NULL: atol alone). A NaN
 * or Inf must match the reference's; otherwise it counts as infinitely wrong. */
void bench_compare(const float *got, const float *want, size_t n, double atol, double rtol,
                   const float *scale, bench_result *r);

/* The library's path for a case's (PATH_REFERENCE and PATH_NONE: AUTO). */
vkattn_attention_path bench_api_path(bench_path path);

/* Records a failed status in r->error with the context's message. */
void bench_fail(bench_result *r, vkattn_context *ctx, vkattn_status s, const char *what);

/* Unmasked (query, key) pairs of one attention head: Tq*Tk, or causal with the
 * given offset (key j allowed for query i when j <= i + q_offset). */
double bench_unmasked_pairs(int64_t Tq, int64_t Tk, bool causal, int64_t q_offset);

/* ---- one file per op ----------------------------------------------------- */

void bench_run_attention(const bench_env *env, const bench_case *c, bench_result *r);
/* Attention with c->att_variant, verified against the CPU reference on the whole problem. */
void bench_run_attention_variant(const bench_env *env, const bench_case *c, bench_result *r);
const char *bench_att_variant_name(const bench_case *c);
void bench_run_mha(const bench_env *env, const bench_case *c, bench_result *r);
void bench_run_matmul(const bench_env *env, const bench_case *c, bench_result *r);
void bench_run_softmax(const bench_env *env, const bench_case *c, bench_result *r);
void bench_run_transpose(const bench_env *env, const bench_case *c, bench_result *r);

#endif
