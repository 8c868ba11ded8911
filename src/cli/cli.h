/* The vkattn command-line program: shared declarations. Built on the public API
 * (vkattn.h) and npy.h only. */
#ifndef VKATTN_CLI_H
#define VKATTN_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "npy.h"
#include "vkattn.h"

/* Exit statuses (DESIGN.md section 5). */
#define EXIT_USAGE 2
#define EXIT_RUNTIME 1

/* Options every subcommand takes. */
typedef struct common_options {
    vkattn_backend backend;
    const char *device;
    vkattn_attention_path path;
    bool dtype_given;      /* --dtype: inputs rounded to this type; else each file's own */
    vkattn_dtype dtype;
    vkattn_dtype out_dtype; /* --out-dtype: the output tensor's (default F32) */
    bool verbose;
    char log_error[512];   /* the library's last error-level log line */
    bool context_open;     /* error-level lines now go to stderr as they come */
} common_options;

/* Argument scanning: argv[*i] is the current word. */
typedef struct args {
    int argc;
    char **argv;
    int i;
    const char *command;   /* "attention", "mha", ... for messages */
} args;

/* A tensor the library knows by `name` ("Q", "mask", ...) and the file it came from
 * (NULL: not from a file). */
typedef struct tensor_file {
    const char *name, *path;
} tensor_file;

/* Prints the context's last error on stderr ("vkattn <op>: ..."), with the file of
 * the tensor it is about where that is one of `files`; returns EXIT_RUNTIME. */
int library_error_in(const vkattn_context *ctx, const tensor_file *files, size_t count);

/* Prints "vkattn <command>: <message>" on stderr; returns `status`. */
int cli_error(const char *command, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A failed library call: its message already names the op ("vkattn attention: K has
 * head size 12 but Q has 16"). Returns EXIT_RUNTIME. */
int library_error(const vkattn_context *ctx);

/* If argv[i] is `name` (or `alias`), stores the next word in *value and advances;
 * returns 1 when matched, 0 when not, -1 when the value is missing (reported). */
int take_value(args *a, const char *name, const char *alias, const char **value);
/* Parses the options every command takes at argv[i], --help (prints the parts
 * of `usage`, a NULL-terminated list: ISO C caps one string literal at 4095
 * characters) included: 1 matched, 0 not, -1 bad value (reported), -2 help
 * printed. */
int take_common(args *a, common_options *o, const char *const *usage);
int parse_int(const args *a, const char *option, const char *text, int64_t lo, int64_t hi,
              int64_t *out);
int parse_float(const args *a, const char *option, const char *text, float *out);
/* f32, f16 or bf16; -1 (reported) for anything else. */
int parse_float_dtype(const args *a, const char *option, const char *value, vkattn_dtype *out);

/* The attention variants both commands take (DESIGN.md section 1). */
typedef struct variant_options {
    bool has_window;              /* --window L,R */
    int32_t window_left, window_right;
    float softcap;                /* --softcap C; 0: off */
    const char *sinks, *alibi;    /* --sinks S.npy, --alibi SLOPES.npy; NULL: off */
    const char *mask;             /* --mask M.npy; NULL: off */
} variant_options;

/* Parses --window, --softcap, --sinks, --alibi or --mask at argv[i]: 1 matched,
 * 0 not, -1 bad value (reported). */
int take_variant(args *a, variant_options *o);

/* --verbose: "vkattn: <what> ran fused, variant ..., N key split(s)" (or
 * unfused) on stderr; nothing for the CPU backend's choice (AUTO). */
void log_attention_choice(const char *what, const vkattn_attention_choice *choice);

/* Creates the context the options ask for (logging warnings to stderr). */
int open_context(const char *command, common_options *o, vkattn_context **out);

/* Reads `path` and makes a tensor of `shape` (ndim entries) from it: of the
 * --dtype in `common` when given (the data rounded to it, to nearest even),
 * else of the file's own dtype (float32 for float64 files). */
typedef struct loaded {
    npy_array array;
    vkattn_tensor *tensor;
} loaded;
int load_npy(const char *command, const char *path, const char *name, loaded *out);
/* The same, taking an array with no elements (packed sequences that are all empty). */
int load_npy_maybe_empty(const char *command, const char *path, const char *name, loaded *out);
int make_tensor(const char *command, vkattn_context *ctx, const common_options *common,
                const char *path, const char *name, loaded *l, int ndim, const int64_t *shape);
void unload(loaded *l);
/* Q, K, V and the like hold floats; an integer file is a mistake worth naming. */
int check_float_file(const char *command, const char *path, const char *name, const loaded *l);
/* "(2, 3)": the array's shape, for messages. */
const char *shape_text(const npy_array *a, char *buf, size_t size);

/* Tensors that --dtype does not round, of the file's own shape (1- to 4-D):
 * make_index_tensor takes integer files (int32, or int64 narrowed on reading)
 * of `ndim` dimensions for an I32 tensor (cu_seqlens, block tables; `what`
 * says what the file holds); make_float_tensor takes float files for an F32
 * tensor, or F16 for float16 files when `keep_f16` (the additive mask). */
int make_index_tensor(const char *command, vkattn_context *ctx, const char *path,
                      const char *name, loaded *l, int ndim, const char *what);
/* make_index_tensor's checks of the file alone (its dtype and rank). */
int check_index_file(const char *command, const char *path, const char *name, const loaded *l,
                     int ndim, const char *what);
int make_float_tensor(const char *command, vkattn_context *ctx, const char *path,
                      const char *name, loaded *l, bool keep_f16);

/* The variants' files: --sinks and --alibi loaded and checked to be float
 * vectors of one value per query head (problem[1]), then made F32 tensors;
 * --mask checked to be a float array that broadcasts to `problem` (B, H, Tq,
 * Tk) as the library would check it, then made an F16 tensor from a float16
 * file, else F32. Empty files pass where the problem has no rows. */
typedef struct variant_files {
    loaded sinks, alibi, mask;
} variant_files;
int load_variant_files(const char *command, const variant_options *o, const int64_t problem[4],
                       variant_files *out);
int make_variant_tensors(const char *command, vkattn_context *ctx, const variant_options *o,
                         variant_files *f);
void unload_variant_files(variant_files *f);

/* Downloads `tensor` and writes it to `path` as float32 of the given shape. */
int save_npy(const char *command, vkattn_context *ctx, vkattn_tensor *tensor, const char *path,
             int ndim, const int64_t *shape);

int run_devices(int argc, char **argv);
int run_attention(int argc, char **argv);
int run_mha(int argc, char **argv);

#endif
