/* .npy reading and writing; see npy.h. The format: the magic "\x93NUMPY", a
 * major and minor version byte, the header length (2 bytes little-endian in
 * version 1, 4 bytes in versions 2 and 3), then an ASCII (version 3: UTF-8)
 * Python dict literal with 'descr', 'fortran_order' and 'shape', padded with
 * spaces and ending in a newline, then the raw data. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fdopen */
#include "npy.h"

#include <ctype.h>
#include <sys/stat.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A header longer than this is not a header numpy would write. */
#define MAX_HEADER_BYTES (1u << 20)

static int fail(char *err, size_t size, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(err, size, fmt, args);
    va_end(args);
    return -1;
}

/* ------------------------------------------------------------ header --- */

typedef struct cursor {
    const char *p, *end;
} cursor;

static void skip_space(cursor *c)
{
    while (c->p < c->end && isspace((unsigned char)*c->p))
        c->p++;
}

static bool accept(cursor *c, char ch)
{
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A quoted Python string ('...' or "...") without escapes, into buf. */
static bool parse_string(cursor *c, char *buf, size_t size)
{
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return false;
    char quote = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != quote) {
        if (*c->p == '\\' || n + 1 >= size)
            return false;
        buf[n++] = *c->p++;
    }
    if (c->p >= c->end)
        return false;
    c->p++;
    buf[n] = '\0';
    return true;
}

static bool parse_word(cursor *c, const char *word)
{
    skip_space(c);
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || strncmp(c->p, word, n) != 0)
        return false;
    c->p += n;
    return true;
}

/* A shape tuple: (), (n,), (a, b), (a, b,) of non-negative integers. */
static bool parse_shape(cursor *c, npy_array *a, char *err, size_t err_size)
{
    if (!accept(c, '(')) {
        fail(err, err_size, "header: 'shape' is not a tuple");
        return false;
    }
    a->ndim = 0;
    for (;;) {
        if (accept(c, ')'))
            return true;
        if (a->ndim == NPY_MAX_DIMS) {
            fail(err, err_size, "header: more than %d dimensions", NPY_MAX_DIMS);
            return false;
        }
        skip_space(c);
        if (c->p >= c->end || !isdigit((unsigned char)*c->p)) {
            fail(err, err_size, "header: 'shape' holds something other than non-negative integers");
            return false;
        }
        int64_t v = 0;
        while (c->p < c->end && isdigit((unsigned char)*c->p)) {
            if (v > (INT64_MAX - 9) / 10) {
                fail(err, err_size, "header: a dimension of 'shape' is too large");
                return false;
            }
            v = v * 10 + (*c->p++ - '0');
        }
        if (c->p < c->end && *c->p == 'L') /* Python 2 long suffix */
            c->p++;
        a->shape[a->ndim++] = v;
        if (!accept(c, ',')) {
            if (accept(c, ')'))
                return true;
            fail(err, err_size, "header: 'shape' tuple is malformed");
            return false;
        }
    }
}

typedef struct header {
    char descr[16];
    bool fortran_order;
    bool has_descr, has_order, has_shape;
} header;

static int parse_header(const char *text, size_t len, header *h, npy_array *a, char *err,
                        size_t err_size)
{
    cursor c = {text, text + len};
    memset(h, 0, sizeof *h);
    if (!accept(&c, '{'))
        return fail(err, err_size, "header: not a dict");
    for (;;) {
        if (accept(&c, '}'))
            break;
        char key[32];
        if (!parse_string(&c, key, sizeof key) || !accept(&c, ':'))
            return fail(err, err_size, "header: malformed dict entry");
        if (!strcmp(key, "descr")) {
            skip_space(&c);
            if (c.p < c.end && (*c.p == '[' || *c.p == '{'))
                return fail(err, err_size, "header: 'descr' is a structured dtype (not supported)");
            if (!parse_string(&c, h->descr, sizeof h->descr))
                return fail(err, err_size, "header: 'descr' is malformed");
            h->has_descr = true;
        } else if (!strcmp(key, "fortran_order")) {
            if (parse_word(&c, "True"))
                h->fortran_order = true;
            else if (!parse_word(&c, "False"))
                return fail(err, err_size, "header: 'fortran_order' is not True or False");
            h->has_order = true;
        } else if (!strcmp(key, "shape")) {
            if (!parse_shape(&c, a, err, err_size))
                return -1;
            h->has_shape = true;
        } else {
            return fail(err, err_size, "header: unknown key '%s'", key);
        }
        if (!accept(&c, ',')) {
            if (accept(&c, '}'))
                break;
            return fail(err, err_size, "header: malformed dict");
        }
    }
    skip_space(&c);
    if (c.p != c.end)
        return fail(err, err_size, "header: text after the dict");
    if (!h->has_descr || !h->has_order || !h->has_shape)
        return fail(err, err_size, "header: 'descr', 'fortran_order' and 'shape' are required");
    return 0;
}

/* ------------------------------------------------------------- data ---- */

/* Index in C order of the element at Fortran-order position `f`. */
static size_t fortran_to_c(size_t f, const npy_array *a)
{
    size_t c = 0, stride = 1;
    size_t strides[NPY_MAX_DIMS];
    for (int i = a->ndim - 1; i >= 0; i--) {
        strides[i] = stride;
        stride *= (size_t)a->shape[i];
    }
    for (int i = 0; i < a->ndim; i++) {
        size_t n = (size_t)a->shape[i];
        c += (f % n) * strides[i];
        f /= n;
    }
    return c;
}

/* The element size of a 'descr' such as '<f4' and the dtype it is read as
 * (float64 as float32, int64 as int32); -1 with a message for the others. */
static int parse_descr(const char *descr, size_t *element, npy_dtype *dtype, char *err,
                       size_t err_size)
{
    char order = descr[0], kind = descr[1];
    const char *size = descr[0] && descr[1] ? descr + 2 : "";
    if (order == '>')
        return fail(err, err_size, "dtype '%s' is big-endian; save it little-endian ('<')", descr);
    if ((order != '<' && order != '=' && order != '|') || (kind != 'f' && kind != 'i'))
        return fail(err, err_size,
                    "dtype '%s' is neither a float nor a signed integer (float16, float32, "
                    "float64, int32 and int64 are read)", descr);
    if (kind == 'i') {
        if (strcmp(size, "4") && strcmp(size, "8"))
            return fail(err, err_size, "dtype '%s' is not int32 or int64", descr);
        *element = (size_t)(size[0] - '0');
        *dtype = NPY_I32;
        return 0;
    }
    if (strcmp(size, "2") && strcmp(size, "4") && strcmp(size, "8"))
        return fail(err, err_size, "dtype '%s' is not float16, float32 or float64", descr);
    *element = (size_t)(size[0] - '0');
    *dtype = *element == 2 ? NPY_F16 : NPY_F32;
    return 0;
}

int npy_parse(const uint8_t *bytes, size_t size, npy_array *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    if (size < 10 || memcmp(bytes, "\x93NUMPY", 6) != 0)
        return fail(err, err_size, "not a .npy file (no \\x93NUMPY magic)");
    unsigned major = bytes[6], minor = bytes[7];
    size_t prefix, header_len;
    if (major == 1) {
        prefix = 10;
        header_len = (size_t)bytes[8] | (size_t)bytes[9] << 8;
    } else if (major == 2 || major == 3) {
        if (size < 12)
            return fail(err, err_size, "truncated before the header length");
        prefix = 12;
        header_len = (size_t)bytes[8] | (size_t)bytes[9] << 8 | (size_t)bytes[10] << 16 |
                     (size_t)bytes[11] << 24;
    } else {
        return fail(err, err_size, "format version %u.%u is not supported (1.0 to 3.0 are)",
                    major, minor);
    }
    if (header_len > MAX_HEADER_BYTES)
        return fail(err, err_size, "header length %zu is absurd", header_len);
    if (header_len > size - prefix)
        return fail(err, err_size, "truncated: the header says %zu bytes, the file has %zu",
                    header_len, size - prefix);
    const char *text = (const char *)bytes + prefix;
    for (size_t i = 0; i < header_len; i++)
        if (text[i] == '\0')
            return fail(err, err_size, "header: contains a NUL byte");

    header h;
    if (parse_header(text, header_len, &h, out, err, err_size))
        return -1;
    size_t element = 0;
    if (parse_descr(h.descr, &element, &out->dtype, err, err_size))
        return -1;

    size_t count = 1;
    for (int i = 0; i < out->ndim; i++) {
        if (count != 0 && (uint64_t)out->shape[i] > SIZE_MAX / element / count)
            return fail(err, err_size, "shape's byte size overflows");
        count *= (size_t)out->shape[i];
    }
    size_t data_bytes = count * element, available = size - prefix - header_len;
    if (data_bytes > available)
        return fail(err, err_size, "truncated: the shape needs %zu bytes of data, the file has %zu",
                    data_bytes, available);
    if (data_bytes < available)
        return fail(err, err_size, "%zu bytes after the data the shape describes",
                    available - data_bytes);

    out->count = count;
    size_t stored = out->dtype == NPY_F16 ? 2 : 4;
    out->data = malloc(count ? count * stored : 1);
    bool wide = element == 8 && out->dtype == NPY_F32;
    if (wide)
        out->f64 = malloc(count ? count * sizeof(double) : 1);
    if (!out->data || (wide && !out->f64)) {
        npy_free(out);
        return fail(err, err_size, "out of memory for %zu elements", count);
    }
    const uint8_t *src = bytes + prefix + header_len;
    for (size_t i = 0; i < count; i++) {
        size_t at = h.fortran_order ? fortran_to_c(i, out) : i;
        if (wide) {
            double v;
            memcpy(&v, src + 8 * i, 8);
            ((float *)out->data)[at] = (float)v;
            out->f64[at] = v;
        } else if (element == 8) {
            int64_t v;
            memcpy(&v, src + 8 * i, 8);
            if (v < INT32_MIN || v > INT32_MAX) {
                npy_free(out);
                return fail(err, err_size, "int64 element %zu is %lld, outside int32's range", i,
                            (long long)v);
            }
            ((int32_t *)out->data)[at] = (int32_t)v;
        } else {
            memcpy((uint8_t *)out->data + at * stored, src + element * i, element);
        }
    }
    return 0;
}

int npy_read(const char *path, npy_array *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(err, err_size, "cannot open: %s", strerror(errno));
    uint8_t *bytes = NULL;
    size_t size = 0, capacity = 0;
    for (;;) {
        if (size == capacity) {
            capacity = capacity ? capacity * 2 : 1 << 16;
            uint8_t *grown = realloc(bytes, capacity);
            if (!grown) {
                free(bytes);
                fclose(f);
                return fail(err, err_size, "out of memory reading the file");
            }
            bytes = grown;
        }
        size_t n = fread(bytes + size, 1, capacity - size, f);
        size += n;
        if (n == 0)
            break;
    }
    bool read_error = ferror(f);
    fclose(f);
    int rc = read_error ? fail(err, err_size, "read error") : npy_parse(bytes, size, out, err, err_size);
    free(bytes);
    return rc;
}

const char *npy_dtype_name(npy_dtype dtype)
{
    return dtype == NPY_F16 ? "float16" : dtype == NPY_I32 ? "int32" : "float32";
}

int npy_write(const char *path, const void *data, npy_dtype dtype, int ndim, const int64_t *shape,
              char *err, size_t err_size)
{
    const char *descr = dtype == NPY_F16 ? "<f2" : dtype == NPY_I32 ? "<i4" : "<f4";
    size_t element = dtype == NPY_F16 ? 2 : 4;
    char dict[256];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     descr);
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld,%s", (long long)shape[i],
                      i + 1 < ndim ? " " : "");
        count *= (size_t)shape[i];
    }
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    /* Pad so that the data starts on a 64-byte boundary, as numpy does. */
    size_t total = 10 + (size_t)n + 1;
    size_t padded = (total + 63) / 64 * 64;
    size_t header_len = padded - 10;

    size_t path_len = strlen(path);
    char *tmp = malloc(path_len + 16);
    if (!tmp)
        return fail(err, err_size, "out of memory");
    snprintf(tmp, path_len + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return fail(err, err_size, "cannot create a temporary file next to it: %s", strerror(e));
    }
    /* mkstemp makes the file 0600; give it the mode a new file gets (0666 less
     * the umask), as numpy's own files have, since it is renamed into place. A
     * file system that keeps no modes (vfat) refuses; the data still counts. */
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask);
    FILE *f = fdopen(fd, "wb");
    bool ok = f != NULL;
    if (ok) {
        uint8_t prefix[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)(header_len & 0xff),
                              (uint8_t)(header_len >> 8)};
        ok = fwrite(prefix, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)n, f) == (size_t)n;
        for (size_t i = 10 + (size_t)n; ok && i + 1 < padded; i++)
            ok = fputc(' ', f) != EOF;
        ok = ok && fputc('\n', f) != EOF && fwrite(data, element, count, f) == count;
        ok = (fclose(f) == 0) && ok;
    } else {
        close(fd);
    }
    if (ok && rename(tmp, path) != 0)
        ok = false;
    int e = errno;
    if (!ok)
        unlink(tmp);
    free(tmp);
    return ok ? 0 : fail(err, err_size, "cannot write: %s", strerror(e));
}

int npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape, char *err,
                  size_t err_size)
{
    return npy_write(path, data, NPY_F32, ndim, shape, err, err_size);
}

void npy_free(npy_array *a)
{
    free(a->data);
    free(a->f64);
    a->data = NULL;
    a->f64 = NULL;
}
