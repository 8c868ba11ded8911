/* .npy files (numpy's format, versions 1.0 to 3.0): reading float32, float16 and
 * float64 (converted to float32), int32 and int64 (converted to int32, for index
 * tensors such as cu_seqlens and block tables), little-endian, C or Fortran
 * order; writing float32, float16 and int32. Used by the vkattn CLI, the tests
 * and the fuzz target; not part of libvkattn. Every error comes back as a message, never a crash: headers are
 * parsed with bounds checks, sizes with overflow checks, and nothing is
 * allocated before the data it is for is known to be there. */
#ifndef VKATTN_NPY_H
#define VKATTN_NPY_H

#include <stddef.h>
#include <stdint.h>

#define NPY_MAX_DIMS 8

typedef enum npy_dtype { NPY_F32, NPY_F16, NPY_I32 } npy_dtype;

typedef struct npy_array {
    npy_dtype dtype;          /* float64 files are converted to NPY_F32, int64 to NPY_I32 */
    int ndim;                 /* 0 (a scalar) to NPY_MAX_DIMS */
    int64_t shape[NPY_MAX_DIMS];
    size_t count;             /* elements */
    void *data;               /* count floats, halves or int32s, C order; malloc'd */
    double *f64;              /* a float64 file's own values, C order (data holds them
                                 rounded to float32); NULL for other files */
} npy_array;

/* "float32", "float16" or "int32", for messages. */
const char *npy_dtype_name(npy_dtype dtype);

/* Parses a whole .npy image. 0 on success; -1 with a message in err. */
int npy_parse(const uint8_t *bytes, size_t size, npy_array *out, char *err, size_t err_size);
/* Reads and parses a file (the message does not repeat the path). */
int npy_read(const char *path, npy_array *out, char *err, size_t err_size);
/* Writes `data` (count elements of `dtype`) as a version 1.0 file: to a
 * temporary next to `path`, renamed over it only when complete, so a failure
 * never leaves a partial file. */
int npy_write(const char *path, const void *data, npy_dtype dtype, int ndim, const int64_t *shape,
              char *err, size_t err_size);
/* npy_write of float32 data. */
int npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape, char *err,
                  size_t err_size);
void npy_free(npy_array *a);

#endif
