/* The .npy reader and writer: valid files of every version, order and dtype, and
 * malformed ones refused with a message. Needs no GPU. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npy.h"

/* A .npy image: magic, version, header length, the header padded to 16 and
 * ending in a newline, then `data`. */
typedef struct image {
    uint8_t bytes[4096];
    size_t size;
} image;

static void build(image *im, int major, const char *dict, const void *data, size_t data_size)
{
    size_t prefix = major == 1 ? 10 : 12, len = strlen(dict);
    size_t header = (prefix + len + 1 + 15) / 16 * 16 - prefix;
    assert_true(prefix + header + data_size <= sizeof im->bytes);
    memcpy(im->bytes, "\x93NUMPY", 6);
    im->bytes[6] = (uint8_t)major;
    im->bytes[7] = 0;
    for (size_t i = 0; i < prefix - 8; i++)
        im->bytes[8 + i] = (uint8_t)(header >> (8 * i));
    memset(im->bytes + prefix, ' ', header);
    memcpy(im->bytes + prefix, dict, len);
    im->bytes[prefix + header - 1] = '\n';
    memcpy(im->bytes + prefix + header, data, data_size);
    im->size = prefix + header + data_size;
}

static const float six[6] = {1, 2, 3, 4, 5, 6};

static void test_valid_files(void **state)
{
    (void)state;
    image im;
    npy_array a;
    char err[256];
    for (int major = 1; major <= 3; major++) {
        build(&im, major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", six,
              sizeof six);
        assert_int_equal(npy_parse(im.bytes, im.size, &a, err, sizeof err), 0);
        assert_int_equal(a.ndim, 2);
        assert_int_equal(a.shape[0], 2);
        assert_int_equal(a.shape[1], 3);
        assert_int_equal(a.dtype, NPY_F32);
        assert_memory_equal(a.data, six, sizeof six);
        npy_free(&a);
    }
    /* Fortran order: the file holds columns; the array comes back in C order. */
    const float columns[6] = {1, 4, 2, 5, 3, 6};
    build(&im, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", columns,
          sizeof columns);
    assert_int_equal(npy_parse(im.bytes, im.size, &a, err, sizeof err), 0);
    assert_memory_equal(a.data, six, sizeof six);
    npy_free(&a);
    /* float64 becomes float32; float16 stays float16; a scalar has no dimensions. */
    const double wide[2] = {0.5, -3.25};
    build(&im, 1, "{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (2,)}", wide,
          sizeof wide);
    assert_int_equal(npy_parse(im.bytes, im.size, &a, err, sizeof err), 0);
    assert_true(((float *)a.data)[0] == 0.5f && ((float *)a.data)[1] == -3.25f);
    npy_free(&a);
    const uint16_t halves[2] = {0x3c00, 0xc000}; /* 1.0, -2.0 */
    build(&im, 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", halves,
          sizeof halves);
    assert_int_equal(npy_parse(im.bytes, im.size, &a, err, sizeof err), 0);
    assert_int_equal(a.dtype, NPY_F16);
    assert_memory_equal(a.data, halves, sizeof halves);
    npy_free(&a);
    build(&im, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", six, 4);
    assert_int_equal(npy_parse(im.bytes, im.size, &a, err, sizeof err), 0);
    assert_int_equal(a.ndim, 0);
    assert_int_equal(a.count, 1);
    npy_free(&a);
}

typedef struct bad_case {
    const char *name;
    const char *dict;
    size_t data_size;   /* bytes of data after the header */
    const char *message; /* a fragment the error must contain */
} bad_case;

static void test_malformed_headers(void **state)
{
    (void)state;
    static const bad_case cases[] = {
        {"big-endian", "{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }", 24, "big-endian"},
        {"uint32", "{'descr': '<u4', 'fortran_order': False, 'shape': (6,), }", 24,
         "neither a float nor a signed integer"},
        {"int16", "{'descr': '<i2', 'fortran_order': False, 'shape': (6,), }", 12, "not int32 or int64"},
        {"big-endian int", "{'descr': '>i4', 'fortran_order': False, 'shape': (6,), }", 24, "big-endian"},
        {"float128", "{'descr': '<f16', 'fortran_order': False, 'shape': (6,), }", 96, "not float16"},
        {"structured", "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }", 24,
         "structured"},
        {"no shape", "{'descr': '<f4', 'fortran_order': False, }", 24, "required"},
        {"unknown key", "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}", 24,
         "unknown key"},
        {"negative dim", "{'descr': '<f4', 'fortran_order': False, 'shape': (-6,), }", 24,
         "non-negative"},
        {"overflow", "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }",
         24, "overflows"},
        {"too many dims", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,6), }",
         24, "dimensions"},
        {"truncated data", "{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }", 24, "truncated"},
        {"trailing data", "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", 24, "after the data"},
        {"not a dict", "['descr', '<f4']", 24, "not a dict"},
        {"bad order", "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (6,), }", 24, "True or False"},
        {"unterminated", "{'descr': '<f4", 24, "malformed"},
    };
    float data[24] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        image im;
        npy_array a;
        char err[256] = "";
        build(&im, 1, cases[i].dict, data, cases[i].data_size);
        if (npy_parse(im.bytes, im.size, &a, err, sizeof err) == 0)
            fail_msg("%s: parsed", cases[i].name);
        if (!strstr(err, cases[i].message))
            fail_msg("%s: message \"%s\" lacks \"%s\"", cases[i].name, err, cases[i].message);
        assert_null(a.data);
    }
}

/* int32 files are read as they are and int64 ones narrowed (numpy's default
 * integer is int64, so np.save(np.array([0, 3, 5])) writes '<i8'); a value
 * past int32 is refused, not wrapped. */
static void test_integers(void **state)
{
    (void)state;
    image im;
    npy_array a;
    char err[256];
    const int32_t narrow[3] = {0, -3, 2147483647};
    build(&im, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", narrow,
          sizeof narrow);
    assert_int_equal(npy_parse(im.bytes, im.size, &a, err, sizeof err), 0);
    assert_int_equal(a.dtype, NPY_I32);
    assert_int_equal(a.count, 3);
    assert_memory_equal(a.data, narrow, sizeof narrow);
    npy_free(&a);
    /* int64 in Fortran order: (2, 2) stored by columns. */
    const int64_t wide[4] = {1, -3, 2, 4}, rows[4] = {1, 2, -3, 4};
    build(&im, 1, "{'descr': '<i8', 'fortran_order': True, 'shape': (2, 2), }", wide, sizeof wide);
    assert_int_equal(npy_parse(im.bytes, im.size, &a, err, sizeof err), 0);
    assert_int_equal(a.dtype, NPY_I32);
    for (int i = 0; i < 4; i++)
        assert_int_equal(((int32_t *)a.data)[i], rows[i]);
    npy_free(&a);
    const int64_t too_wide[2] = {5, (int64_t)1 << 31};
    build(&im, 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", too_wide,
          sizeof too_wide);
    assert_int_not_equal(npy_parse(im.bytes, im.size, &a, err, sizeof err), 0);
    assert_non_null(strstr(err, "element 1 is 2147483648, outside int32"));
    assert_null(a.data);
}

static void test_malformed_prefix(void **state)
{
    (void)state;
    image im;
    npy_array a;
    char err[256];
    build(&im, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", six, sizeof six);
    assert_int_not_equal(npy_parse(im.bytes, 5, &a, err, sizeof err), 0);
    assert_non_null(strstr(err, "magic"));
    im.bytes[6] = 4;
    assert_int_not_equal(npy_parse(im.bytes, im.size, &a, err, sizeof err), 0);
    assert_non_null(strstr(err, "version 4.0"));
    /* A header length past the end, and an absurd one: refused before reading. */
    build(&im, 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", six, sizeof six);
    im.bytes[9] = 0x10;
    assert_int_not_equal(npy_parse(im.bytes, im.size, &a, err, sizeof err), 0);
    assert_non_null(strstr(err, "truncated"));
    im.bytes[11] = 0x7f;
    assert_int_not_equal(npy_parse(im.bytes, im.size, &a, err, sizeof err), 0);
    assert_non_null(strstr(err, "absurd"));
    build(&im, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", six, sizeof six);
    im.bytes[20] = '\0';
    assert_int_not_equal(npy_parse(im.bytes, im.size, &a, err, sizeof err), 0);
    assert_non_null(strstr(err, "NUL"));
}

static void test_write_read_round_trip(void **state)
{
    (void)state;
    char dir[] = "/tmp/vkattn-npy-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64], err[256];
    snprintf(path, sizeof path, "%s/a.npy", dir);
    const int64_t shape[3] = {1, 2, 3};
    assert_int_equal(npy_write_f32(path, six, 3, shape, err, sizeof err), 0);
    npy_array a;
    assert_int_equal(npy_read(path, &a, err, sizeof err), 0);
    assert_int_equal(a.ndim, 3);
    assert_int_equal(a.shape[2], 3);
    assert_memory_equal(a.data, six, sizeof six);
    npy_free(&a);
    /* The data starts on a 64-byte boundary, as numpy writes it. */
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    assert_int_equal((ftell(f) - (long)sizeof six) % 64, 0);
    fclose(f);
    /* The mode a new file gets (0666 less the umask), not the temporary
     * file's 0600: others can read results as they can numpy's files. */
    mode_t old_mask = umask(022);
    assert_int_equal(npy_write_f32(path, six, 3, shape, err, sizeof err), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    umask(old_mask);
    assert_int_equal(unlink(path), 0);
    /* int32 and float16 come back as written. */
    const int32_t offsets[3] = {0, 2, 7};
    const uint16_t halves[3] = {0x3c00, 0xfc00, 0x0001}; /* 1.0, -inf, the smallest subnormal */
    const int64_t three[1] = {3};
    assert_int_equal(npy_write(path, offsets, NPY_I32, 1, three, err, sizeof err), 0);
    assert_int_equal(npy_read(path, &a, err, sizeof err), 0);
    assert_int_equal(a.dtype, NPY_I32);
    assert_memory_equal(a.data, offsets, sizeof offsets);
    npy_free(&a);
    assert_int_equal(npy_write(path, halves, NPY_F16, 1, three, err, sizeof err), 0);
    assert_int_equal(npy_read(path, &a, err, sizeof err), 0);
    assert_int_equal(a.dtype, NPY_F16);
    assert_memory_equal(a.data, halves, sizeof halves);
    npy_free(&a);
    assert_int_equal(unlink(path), 0);
    /* Nothing is left behind when the write cannot happen. */
    char missing[96];
    snprintf(missing, sizeof missing, "%s/no/such/dir/b.npy", dir);
    assert_int_not_equal(npy_write_f32(missing, six, 3, shape, err, sizeof err), 0);
    assert_non_null(strstr(err, "cannot"));
    assert_int_not_equal(npy_read(missing, &a, err, sizeof err), 0);
    assert_int_equal(rmdir(dir), 0); /* empty: no temporary file remains */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_files),
        cmocka_unit_test(test_malformed_headers),
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_malformed_prefix),
        cmocka_unit_test(test_write_read_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
