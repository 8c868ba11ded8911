/* Option parsing, context creation and .npy <-> tensor plumbing for the CLI. */
#include "cli.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_error(const char *command, int status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    fprintf(stderr, "vkattn %s: ", command);
    vfprintf(stderr, fmt, args);
    fputc('\n', stderr);
    va_end(args);
    return status;
}

int library_error(const vkattn_context *ctx)
{
    return library_error_in(ctx, NULL, 0);
}

int library_error_in(const vkattn_context *ctx, const tensor_file *files, size_t count)
{
    /* The library's messages read "<op>: <tensor> ...": the tensor they are
     * about comes first. Where it came from a file, the line names the file. */
    const char *message = vkattn_last_error(ctx);
    const char *body = strstr(message, ": ");
    body = body ? body + 2 : message;
    size_t len = strspn(body, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
    for (size_t i = 0; i < count; i++)
        if (files[i].path && strlen(files[i].name) == len && !strncmp(body, files[i].name, len)) {
            fprintf(stderr, "vkattn %.*s%s (%s): %s\n", (int)(body - message), message,
                    files[i].path, files[i].name, body);
            return EXIT_RUNTIME;
        }
    fprintf(stderr, "vkattn %s\n", message);
    return EXIT_RUNTIME;
}

/* The value of `word` given as "--name=value" (long options only, as getopt_long
 * takes them), else NULL. */
static const char *joined_value(const char *word, const char *name)
{
    if (strncmp(name, "--", 2) != 0)
        return NULL;
    size_t n = strlen(name);
    return strncmp(word, name, n) == 0 && word[n] == '=' ? word + n + 1 : NULL;
}

int take_value(args *a, const char *name, const char *alias, const char **value)
{
    const char *word = a->argv[a->i];
    const char *joined = joined_value(word, name);
    if (!joined && alias)
        joined = joined_value(word, alias);
    if (joined) {
        *value = joined;
        return 1;
    }
    if (strcmp(word, name) != 0 && !(alias && strcmp(word, alias) == 0))
        return 0;
    if (a->i + 1 >= a->argc) {
        cli_error(a->command, EXIT_USAGE, "%s needs a value (see --help)", word);
        return -1;
    }
    *value = a->argv[++a->i];
    return 1;
}

int parse_int(const args *a, const char *option, const char *text, int64_t lo, int64_t hi,
              int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) {
        cli_error(a->command, EXIT_USAGE, "%s %s: expected an integer from %lld to %lld", option,
                  text, (long long)lo, (long long)hi);
        return -1;
    }
    *out = v;
    return 0;
}

int parse_float(const args *a, const char *option, const char *text, float *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    /* As float32, which the library takes: 1e-50 would become 0 (the default,
     * or off) and 1e39 infinity. */
    float f = (float)v;
    if (errno || end == text || *end || !isfinite(v) || v <= 0.0 || !(f > 0.0f) ||
        !isfinite(f)) {
        cli_error(a->command, EXIT_USAGE,
                  "%s %s: expected a positive number that float32 holds (%g to %g)", option,
                  text, (double)FLT_TRUE_MIN, (double)FLT_MAX);
        return -1;
    }
    *out = f;
    return 0;
}

/* A float dtype as the command line names it; -1 (reported) for anything else. */
int parse_float_dtype(const args *a, const char *option, const char *value, vkattn_dtype *out)
{
    static const struct {
        const char *name;
        vkattn_dtype dtype;
    } names[] = {{"f32", VKATTN_DTYPE_F32}, {"f16", VKATTN_DTYPE_F16}, {"bf16", VKATTN_DTYPE_BF16}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(value, names[i].name)) {
            *out = names[i].dtype;
            return 0;
        }
    return cli_error(a->command, EXIT_USAGE, "%s %s: expected f32, f16 or bf16", option, value),
           -1;
}

/* --window L,R: two integers, each >= 0, or -1 to leave that side unbounded;
 * any other negative is refused, as issue 11 has it and the library does. */
static int parse_window(const args *a, const char *text, variant_options *o)
{
    char *end;
    errno = 0;
    long long left = strtoll(text, &end, 10), right = 0;
    bool ok = !errno && end != text && *end == ',';
    if (ok) {
        const char *rest = end + 1;
        right = strtoll(rest, &end, 10);
        ok = !errno && end != rest && !*end;
    }
    if (!ok || left < -1 || right < -1 || left > INT32_MAX || right > INT32_MAX) {
        cli_error(a->command, EXIT_USAGE,
                  "--window %s: expected L,R: two integers, each >= 0 (up to %d), or -1 for "
                  "unbounded", text, INT32_MAX);
        return -1;
    }
    o->has_window = true;
    o->window_left = (int32_t)left;
    o->window_right = (int32_t)right;
    return 0;
}

int take_variant(args *a, variant_options *o)
{
    const char *value;
    int r;
    if ((r = take_value(a, "--window", NULL, &value)) != 0)
        return r < 0 || parse_window(a, value, o) ? -1 : 1;
    if ((r = take_value(a, "--softcap", NULL, &value)) != 0) {
        /* 0 is off, as in the library (DESIGN.md: every variant's zero). */
        char *end;
        if (r > 0 && strtod(value, &end) == 0.0 && end != value && !*end) {
            o->softcap = 0.0f;
            return 1;
        }
        return r < 0 || parse_float(a, "--softcap", value, &o->softcap) ? -1 : 1;
    }
    if ((r = take_value(a, "--sinks", NULL, &o->sinks)) != 0)
        return r;
    if ((r = take_value(a, "--mask", NULL, &o->mask)) != 0)
        return r;
    return take_value(a, "--alibi", NULL, &o->alibi);
}

int take_common(args *a, common_options *o, const char *const *usage)
{
    const char *value;
    int r;
    if (!strcmp(a->argv[a->i], "--help") || !strcmp(a->argv[a->i], "-h")) {
        for (; *usage; usage++)
            fputs(*usage, stdout);
        return -2;
    }
    if ((r = take_value(a, "--backend", NULL, &value)) != 0) {
        if (r < 0)
            return -1;
        if (!strcmp(value, "auto"))
            o->backend = VKATTN_BACKEND_AUTO;
        else if (!strcmp(value, "vulkan"))
            o->backend = VKATTN_BACKEND_VULKAN;
        else if (!strcmp(value, "cpu"))
            o->backend = VKATTN_BACKEND_CPU;
        else
            return cli_error(a->command, EXIT_USAGE, "--backend %s: expected auto, vulkan or cpu",
                             value), -1;
        return 1;
    }
    if ((r = take_value(a, "--device", NULL, &value)) != 0) {
        if (r < 0)
            return -1;
        o->device = value;
        return 1;
    }
    if ((r = take_value(a, "--path", NULL, &value)) != 0) {
        if (r < 0)
            return -1;
        if (!strcmp(value, "auto"))
            o->path = VKATTN_PATH_AUTO;
        else if (!strcmp(value, "fused"))
            o->path = VKATTN_PATH_FUSED;
        else if (!strcmp(value, "unfused"))
            o->path = VKATTN_PATH_UNFUSED;
        else
            return cli_error(a->command, EXIT_USAGE, "--path %s: expected auto, fused or unfused",
                             value), -1;
        return 1;
    }
    if ((r = take_value(a, "--dtype", NULL, &value)) != 0) {
        o->dtype_given = true;
        return r < 0 || parse_float_dtype(a, "--dtype", value, &o->dtype) ? -1 : 1;
    }
    if ((r = take_value(a, "--out-dtype", NULL, &value)) != 0)
        return r < 0 || parse_float_dtype(a, "--out-dtype", value, &o->out_dtype) ? -1 : 1;
    if (!strcmp(a->argv[a->i], "--verbose")) {
        o->verbose = true;
        return 1;
    }
    return 0;
}

/* Warnings (and with --verbose, information) go to stderr as they come. An
 * error-level line while the context opens is kept for the one-line message
 * of a failed open (and printed if the open succeeds); once it is open, error
 * lines (the validation layer's, with VKATTN_VALIDATION=1) go to stderr too,
 * so that a run with a validation error never looks clean. */
static void log_to_stderr(void *user, vkattn_log_level level, vkattn_log_source source,
                          const char *message)
{
    common_options *o = user;
    (void)source;
    if (level >= VKATTN_LOG_ERROR && !o->context_open)
        snprintf(o->log_error, sizeof o->log_error, "%s", message);
    else if (level >= VKATTN_LOG_WARNING || (o->verbose && level >= VKATTN_LOG_INFO))
        fprintf(stderr, "vkattn: %s\n", message);
}

void log_attention_choice(const char *what, const vkattn_attention_choice *ch)
{
    static const char *const rounded[] = {[VKATTN_DTYPE_F16] = ", P rounded to f16",
                                          [VKATTN_DTYPE_BF16] = ", P rounded to bf16"};
    if (ch->path == VKATTN_PATH_FUSED)
        fprintf(stderr, "vkattn: %s ran fused, variant %s, %u key split(s)%s\n", what,
                vkattn_fused_variant_name(ch->fused_variant), ch->kv_splits,
                ch->weights_dtype == VKATTN_DTYPE_F16 || ch->weights_dtype == VKATTN_DTYPE_BF16
                    ? rounded[ch->weights_dtype]
                    : "");
    else if (ch->path == VKATTN_PATH_UNFUSED)
        fprintf(stderr, "vkattn: %s ran unfused\n", what);
}

int open_context(const char *command, common_options *o, vkattn_context **out)
{
    vkattn_context_desc desc = {
        .backend = o->backend,
        .device = o->device,
        .log_fn = log_to_stderr,
        .log_user_data = o,
    };
    o->log_error[0] = '\0';
    o->context_open = false;
    vkattn_status s = vkattn_context_create(&desc, out);
    if (s != VKATTN_OK)
        return cli_error(command, EXIT_RUNTIME, "cannot open %s%s: %s",
                         o->device ? "device " : "a device", o->device ? o->device : "",
                         o->log_error[0] ? o->log_error : vkattn_status_string(s));
    if (o->log_error[0])
        fprintf(stderr, "vkattn: %s\n", o->log_error);
    o->context_open = true;
    return 0;
}

int load_npy_maybe_empty(const char *command, const char *path, const char *name, loaded *out)
{
    char err[256];
    memset(out, 0, sizeof *out);
    if (npy_read(path, &out->array, err, sizeof err))
        return cli_error(command, EXIT_RUNTIME, "%s (%s): %s", path, name, err);
    return 0;
}

int load_npy(const char *command, const char *path, const char *name, loaded *out)
{
    int rc = load_npy_maybe_empty(command, path, name, out);
    if (!rc && out->array.count == 0)
        return cli_error(command, EXIT_RUNTIME, "%s (%s): the array is empty", path, name);
    return rc;
}

/* The dtype the file's data is in, as vkattn names it. */
static vkattn_dtype file_dtype(const npy_array *a)
{
    return a->dtype == NPY_F16 ? VKATTN_DTYPE_F16
           : a->dtype == NPY_I32 ? VKATTN_DTYPE_I32
                                 : VKATTN_DTYPE_F32;
}

/* v rounded to nearest, ties to even, to `bits` significant bits with normal
 * exponents down to 2^min_exp (below it the subnormals' fixed quantum), and to
 * infinity past `max`: a float64 value rounded once to f16 (11, -14, 65504) or
 * bf16 (8, -126, its largest), exactly representable in float32 after. */
static double round_significand(double v, int bits, int min_exp, double max)
{
    if (!isfinite(v) || v == 0.0)
        return v;
    int e;
    frexp(v, &e); /* |v| in [2^(e-1), 2^e) */
    int lead = e - 1 < min_exp ? min_exp : e - 1;
    double quantum = ldexp(1.0, lead - (bits - 1));
    double r = nearbyint(v / quantum) * quantum; /* a power-of-2 scaling: exact */
    return fabs(r) > max ? copysign(INFINITY, v) : r;
}

#define BF16_MAX 3.3895313892515355e38 /* (2 - 2^-7) * 2^127 */

/* Where the file was float64: its float data made again from the float64
 * values, rounded once to the tensor's dtype (float32 first, then f16 or
 * bf16, would round twice, and a value halfway between two bf16 after the
 * first rounding but not before goes the wrong way). With `finite_stays`
 * (the mask, sinks and slopes: logits and biases, not inputs --dtype
 * rounds), finite values past float32's range become its largest, so that a
 * finite mask value such as numpy's float64 min stays a finite bias and never
 * becomes -inf, which would make its key not allowed (DESIGN.md section 1). */
static void refill_from_float64(loaded *l, vkattn_dtype dtype, bool finite_stays)
{
    const double *wide = l->array.f64;
    float *data = l->array.data;
    if (!wide)
        return;
    for (size_t i = 0; i < l->array.count; i++) {
        double v = wide[i];
        if (dtype == VKATTN_DTYPE_F16)
            v = round_significand(v, 11, -14, 65504.0);
        else if (dtype == VKATTN_DTYPE_BF16)
            v = round_significand(v, 8, -126, BF16_MAX);
        else if (finite_stays && isfinite(v))
            v = v > FLT_MAX ? FLT_MAX : v < -FLT_MAX ? -FLT_MAX : v;
        data[i] = (float)v;
    }
}

/* A tensor of `dtype` and `shape` holding the file's data. The upload converts
 * between float dtypes, rounding to nearest even: float32 files can feed the
 * 16-bit kernels. */
static int create_from(const char *command, vkattn_context *ctx, const char *path,
                       const char *name, loaded *l, vkattn_dtype dtype, int ndim,
                       const int64_t *shape)
{
    vkattn_tensor_desc desc = {.dtype = dtype, .ndim = ndim};
    memcpy(desc.shape, shape, (size_t)ndim * sizeof shape[0]);
    vkattn_status s = vkattn_tensor_create(ctx, &desc, &l->tensor);
    if (s == VKATTN_OK)
        s = vkattn_tensor_upload(l->tensor, l->array.data, file_dtype(&l->array));
    if (s != VKATTN_OK)
        return cli_error(command, EXIT_RUNTIME, "%s (%s): %s", path, name, vkattn_last_error(ctx));
    return 0;
}

int check_float_file(const char *command, const char *path, const char *name, const loaded *l)
{
    if (l->array.dtype == NPY_I32)
        return cli_error(command, EXIT_RUNTIME,
                         "%s (%s): is an integer array, must be float16, float32 or float64",
                         path, name);
    return 0;
}

int make_tensor(const char *command, vkattn_context *ctx, const common_options *common,
                const char *path, const char *name, loaded *l, int ndim, const int64_t *shape)
{
    int rc = check_float_file(command, path, name, l);
    if (rc)
        return rc;
    vkattn_dtype dtype = common->dtype_given ? common->dtype : file_dtype(&l->array);
    refill_from_float64(l, dtype, false);
    return create_from(command, ctx, path, name, l, dtype, ndim, shape);
}

const char *shape_text(const npy_array *a, char *buf, size_t size)
{
    int n = snprintf(buf, size, "(");
    for (int i = 0; i < a->ndim && n > 0 && (size_t)n < size; i++)
        n += snprintf(buf + n, size - (size_t)n, "%s%lld", i ? ", " : "", (long long)a->shape[i]);
    if (n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, ")");
    return buf;
}

int check_index_file(const char *command, const char *path, const char *name, const loaded *l,
                     int ndim, const char *what)
{
    char shape[96];
    if (l->array.dtype != NPY_I32)
        return cli_error(command, EXIT_RUNTIME, "%s (%s): is %s, must be int32 or int64 (%s)",
                         path, name, l->array.f64 ? "float64" : npy_dtype_name(l->array.dtype),
                         what);
    if (l->array.ndim != ndim)
        return cli_error(command, EXIT_RUNTIME, "%s (%s): is %s, must be %d-D (%s)", path, name,
                         shape_text(&l->array, shape, sizeof shape), ndim, what);
    return 0;
}

int make_index_tensor(const char *command, vkattn_context *ctx, const char *path,
                      const char *name, loaded *l, int ndim, const char *what)
{
    int rc = check_index_file(command, path, name, l, ndim, what);
    return rc ? rc : create_from(command, ctx, path, name, l, VKATTN_DTYPE_I32, ndim, l->array.shape);
}

int make_float_tensor(const char *command, vkattn_context *ctx, const char *path,
                      const char *name, loaded *l, bool keep_f16)
{
    int rc = check_float_file(command, path, name, l);
    if (rc)
        return rc;
    if (l->array.ndim < 1 || l->array.ndim > VKATTN_MAX_DIMS)
        return cli_error(command, EXIT_RUNTIME, "%s (%s): is %d-D, must be 1- to %d-D", path, name,
                         l->array.ndim, VKATTN_MAX_DIMS);
    vkattn_dtype dtype = keep_f16 && l->array.dtype == NPY_F16 ? VKATTN_DTYPE_F16
                                                                : VKATTN_DTYPE_F32;
    refill_from_float64(l, dtype, true);
    return create_from(command, ctx, path, name, l, dtype, l->array.ndim, l->array.shape);
}

/* The mask broadcasts like a numpy array to `problem` (B, H, Tq, Tk): 2 to 4
 * dimensions aligned to the right, each equal or 1 (so an empty one only where
 * the problem has no rows). */
static int check_mask_shape(const char *command, const char *path, const npy_array *m,
                            const int64_t problem[4])
{
    bool ok = m->ndim >= 2 && m->ndim <= 4;
    for (int i = 0; ok && i < m->ndim; i++)
        ok = m->shape[i] == 1 || m->shape[i] == problem[4 - m->ndim + i];
    if (ok)
        return 0;
    char shape[96];
    return cli_error(command, EXIT_RUNTIME,
                     "%s (mask): is %s, must broadcast to (B, H, Tq, Tk) = (%lld, %lld, %lld, "
                     "%lld): 2 to 4 dimensions, aligned to the right, each equal or 1", path,
                     shape_text(m, shape, sizeof shape), (long long)problem[0],
                     (long long)problem[1], (long long)problem[2], (long long)problem[3]);
}

int load_variant_files(const char *command, const variant_options *o, const int64_t problem[4],
                       variant_files *out)
{
    const char *paths[3] = {o->sinks, o->alibi, o->mask};
    const char *names[3] = {"sinks", "alibi_slopes", "mask"};
    loaded *all[3] = {&out->sinks, &out->alibi, &out->mask};
    memset(out, 0, sizeof *out);
    for (int i = 0; i < 3; i++) {
        if (!paths[i])
            continue;
        int rc = load_npy_maybe_empty(command, paths[i], names[i], all[i]);
        if (rc || (rc = check_float_file(command, paths[i], names[i], all[i])))
            return rc;
        char shape[96];
        const npy_array *a = &all[i]->array;
        if (i == 2 && (rc = check_mask_shape(command, paths[i], a, problem)))
            return rc;
        if (i < 2 && (a->ndim != 1 || a->shape[0] != problem[1]))
            return cli_error(command, EXIT_RUNTIME,
                             "%s (%s): is %s, must be (%lld): one value per query head", paths[i],
                             names[i], shape_text(a, shape, sizeof shape), (long long)problem[1]);
    }
    return 0;
}

int make_variant_tensors(const char *command, vkattn_context *ctx, const variant_options *o,
                         variant_files *f)
{
    int rc = 0;
    if (o->sinks)
        rc = make_float_tensor(command, ctx, o->sinks, "sinks", &f->sinks, false);
    if (!rc && o->alibi)
        rc = make_float_tensor(command, ctx, o->alibi, "alibi_slopes", &f->alibi, false);
    /* float16 masks stay F16: a mask is not an input --dtype rounds. A mask
     * with no elements that passed load_variant_files' broadcast has a
     * dimension of 0 where the problem has no rows or keys (packed sequences
     * all empty): it is never read, and the library takes no empty tensor, so
     * the run goes on without it. */
    if (!rc && o->mask && f->mask.array.count)
        rc = make_float_tensor(command, ctx, o->mask, "mask", &f->mask, true);
    return rc;
}

void unload_variant_files(variant_files *f)
{
    unload(&f->sinks);
    unload(&f->alibi);
    unload(&f->mask);
}

void unload(loaded *l)
{
    vkattn_tensor_destroy(l->tensor);
    npy_free(&l->array);
    memset(l, 0, sizeof *l);
}

int save_npy(const char *command, vkattn_context *ctx, vkattn_tensor *tensor, const char *path,
             int ndim, const int64_t *shape)
{
    size_t count = 1;
    for (int i = 0; i < ndim; i++)
        count *= (size_t)shape[i];
    /* An F16 output is written as float16; BF16, which numpy has no type for,
     * as float32 (widening it is exact). */
    bool f16 = vkattn_tensor_get_desc(tensor).dtype == VKATTN_DTYPE_F16;
    void *data = malloc(count * (f16 ? sizeof(uint16_t) : sizeof(float)));
    if (!data)
        return cli_error(command, EXIT_RUNTIME, "out of memory for the output");
    vkattn_status s =
        vkattn_tensor_download(tensor, data, f16 ? VKATTN_DTYPE_F16 : VKATTN_DTYPE_F32);
    if (s != VKATTN_OK) {
        free(data);
        return cli_error(command, EXIT_RUNTIME, "%s", vkattn_last_error(ctx));
    }
    char err[256];
    int rc = npy_write(path, data, f16 ? NPY_F16 : NPY_F32, ndim, shape, err, sizeof err);
    free(data);
    if (rc)
        return cli_error(command, EXIT_RUNTIME, "%s: %s", path, err);
    return 0;
}
