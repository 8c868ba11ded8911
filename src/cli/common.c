/* Option parsing, context creation and .npy <-> tensor plumbing for the CLI. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
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
    fprintf(stderr, "vkattn %s\n", vkattn_last_error(ctx));
    return EXIT_RUNTIME;
}

int take_value(args *a, const char *name, const char *alias, const char **value)
{
    const char *word = a->argv[a->i];
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
    if (errno || end == text || *end || !isfinite(v) || v <= 0.0) {
        cli_error(a->command, EXIT_USAGE, "%s %s: expected a positive number", option, text);
        return -1;
    }
    *out = (float)v;
    return 0;
}

int take_common(args *a, common_options *o, const char *usage)
{
    const char *value;
    int r;
    if (!strcmp(a->argv[a->i], "--help") || !strcmp(a->argv[a->i], "-h")) {
        fputs(usage, stdout);
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
        if (r < 0)
            return -1;
        o->dtype_given = true;
        if (!strcmp(value, "f32"))
            o->dtype = VKATTN_DTYPE_F32;
        else if (!strcmp(value, "f16"))
            o->dtype = VKATTN_DTYPE_F16;
        else if (!strcmp(value, "bf16"))
            o->dtype = VKATTN_DTYPE_BF16;
        else
            return cli_error(a->command, EXIT_USAGE, "--dtype %s: expected f32, f16 or bf16",
                             value), -1;
        return 1;
    }
    if (!strcmp(a->argv[a->i], "--verbose")) {
        o->verbose = true;
        return 1;
    }
    return 0;
}

/* Warnings (and with --verbose, information) go to stderr as they come; an
 * error-level line is kept for the one-line message of the failed call. */
static void log_to_stderr(void *user, vkattn_log_level level, vkattn_log_source source,
                          const char *message)
{
    common_options *o = user;
    (void)source;
    if (level >= VKATTN_LOG_ERROR)
        snprintf(o->log_error, sizeof o->log_error, "%s", message);
    else if (level >= VKATTN_LOG_WARNING || (o->verbose && level >= VKATTN_LOG_INFO))
        fprintf(stderr, "vkattn: %s\n", message);
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
    vkattn_status s = vkattn_context_create(&desc, out);
    if (s != VKATTN_OK)
        return cli_error(command, EXIT_RUNTIME, "cannot open %s%s: %s",
                         o->device ? "device " : "a device", o->device ? o->device : "",
                         o->log_error[0] ? o->log_error : vkattn_status_string(s));
    return 0;
}

int load_npy(const char *command, const char *path, const char *name, loaded *out)
{
    char err[256];
    memset(out, 0, sizeof *out);
    if (npy_read(path, &out->array, err, sizeof err))
        return cli_error(command, EXIT_RUNTIME, "%s (%s): %s", path, name, err);
    if (out->array.count == 0)
        return cli_error(command, EXIT_RUNTIME, "%s (%s): the array is empty", path, name);
    return 0;
}

int make_tensor(const char *command, vkattn_context *ctx, const common_options *common,
                const char *path, const char *name, loaded *l, int ndim, const int64_t *shape)
{
    vkattn_dtype file_dtype = l->array.dtype == NPY_F16 ? VKATTN_DTYPE_F16 : VKATTN_DTYPE_F32;
    /* The upload converts the file's data to the tensor's dtype, rounding to
     * nearest even: float32 files can feed the 16-bit kernels. */
    vkattn_tensor_desc desc = {.dtype = common->dtype_given ? common->dtype : file_dtype,
                               .ndim = ndim};
    memcpy(desc.shape, shape, (size_t)ndim * sizeof shape[0]);
    vkattn_status s = vkattn_tensor_create(ctx, &desc, &l->tensor);
    if (s == VKATTN_OK)
        s = vkattn_tensor_upload(l->tensor, l->array.data, file_dtype);
    if (s != VKATTN_OK)
        return cli_error(command, EXIT_RUNTIME, "%s (%s): %s", path, name, vkattn_last_error(ctx));
    return 0;
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
    float *data = malloc(count * sizeof *data);
    if (!data)
        return cli_error(command, EXIT_RUNTIME, "out of memory for the output");
    vkattn_status s = vkattn_tensor_download(tensor, data, VKATTN_DTYPE_F32);
    if (s != VKATTN_OK) {
        free(data);
        return cli_error(command, EXIT_RUNTIME, "%s", vkattn_last_error(ctx));
    }
    char err[256];
    int rc = npy_write_f32(path, data, ndim, shape, err, sizeof err);
    free(data);
    if (rc)
        return cli_error(command, EXIT_RUNTIME, "%s: %s", path, err);
    return 0;
}
