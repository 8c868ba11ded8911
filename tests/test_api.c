/* API tests that need no GPU: status strings, version, argument checks and
 * conversions on the CPU backend, device listing. Always run. Also the memory
 * modes on a Vulkan device, skipped where there is none. */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include <math.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_util.h"
#include "vkattn.h"

static void test_status_strings(void **state)
{
    (void)state;
    const vkattn_status all[] = {
#define STATUS_(name, value, text) VKATTN_##name,
        VKATTN_STATUS_LIST(STATUS_)
#undef STATUS_
    };
    size_t n = sizeof all / sizeof all[0];
    assert_int_equal(VKATTN_OK, 0);
    for (size_t i = 0; i < n; i++) {
        const char *s = vkattn_status_string(all[i]);
        assert_non_null(s);
        assert_string_not_equal(s, "unknown status");
        for (size_t j = 0; j < i; j++) {
            assert_int_not_equal(all[i], all[j]);
            assert_string_not_equal(s, vkattn_status_string(all[j]));
        }
    }
    assert_string_equal(vkattn_status_string((vkattn_status)9999), "unknown status");
}

static void test_version(void **state)
{
    (void)state;
    assert_int_equal(vkattn_version(), VKATTN_VERSION);
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", VKATTN_VERSION_MAJOR, VKATTN_VERSION_MINOR,
             VKATTN_VERSION_PATCH);
    assert_string_equal(vkattn_version_string(), expected);
}

static vkattn_context *cpu_context(void)
{
    vkattn_context_desc d = {.backend = VKATTN_BACKEND_CPU};
    vkattn_context *ctx = NULL;
    assert_int_equal(vkattn_context_create(&d, &ctx), VKATTN_OK);
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(ctx, &info), VKATTN_OK);
    assert_int_equal(info.backend, VKATTN_BACKEND_CPU);
    return ctx;
}

static void test_context_arguments(void **state)
{
    (void)state;
    assert_int_equal(vkattn_context_create(NULL, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_context *ctx = (vkattn_context *)1;
    vkattn_context_desc bad = {.backend = (vkattn_backend)42};
    assert_int_equal(vkattn_context_create(&bad, &ctx), VKATTN_ERROR_INVALID_ARGUMENT);
    assert_null(ctx);
    vkattn_context_desc bad_memory = {.memory = (vkattn_memory_mode)3};
    assert_int_equal(vkattn_context_create(&bad_memory, &ctx), VKATTN_ERROR_INVALID_ARGUMENT);
    assert_null(ctx);
    /* one past the last validation level (GPU_ASSISTED) */
    vkattn_context_desc bad_validation = {.validation = (vkattn_validation)4};
    assert_int_equal(vkattn_context_create(&bad_validation, &ctx), VKATTN_ERROR_INVALID_ARGUMENT);
    assert_null(ctx);
    vkattn_context_desc none = {.backend = VKATTN_BACKEND_VULKAN, .device = "no such device"};
    vkattn_status s = vkattn_context_create(&none, &ctx);
    assert_int_equal(s, VKATTN_ERROR_NO_DEVICE);
    assert_null(ctx);
    vkattn_context_destroy(NULL);
    assert_int_equal(vkattn_context_info(NULL, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    assert_int_equal(vkattn_synchronize(NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    assert_non_null(vkattn_last_error(NULL));
}

static void test_tensor_arguments(void **state)
{
    (void)state;
    vkattn_context *ctx = cpu_context();
    vkattn_tensor *t = (vkattn_tensor *)1;
    vkattn_tensor_desc d = {.ndim = 0};
    assert_int_equal(vkattn_tensor_create(ctx, &d, &t), VKATTN_ERROR_INVALID_SHAPE);
    assert_null(t);
    assert_non_null(strstr(vkattn_last_error(ctx), "ndim is 0"));
    d = (vkattn_tensor_desc){.ndim = 5, .shape = {1, 1, 1, 1}};
    assert_int_equal(vkattn_tensor_create(ctx, &d, &t), VKATTN_ERROR_INVALID_SHAPE);
    d = (vkattn_tensor_desc){.ndim = 2, .shape = {3, 0}};
    assert_int_equal(vkattn_tensor_create(ctx, &d, &t), VKATTN_ERROR_INVALID_SHAPE);
    assert_non_null(strstr(vkattn_last_error(ctx), "dimension 1 is 0"));
    d = (vkattn_tensor_desc){.ndim = 2, .shape = {-4, 2}};
    assert_int_equal(vkattn_tensor_create(ctx, &d, &t), VKATTN_ERROR_INVALID_SHAPE);
    d = (vkattn_tensor_desc){.ndim = 4, .shape = {INT64_MAX, INT64_MAX, 2, 2}};
    assert_int_equal(vkattn_tensor_create(ctx, &d, &t), VKATTN_ERROR_SIZE_OVERFLOW);
    d = (vkattn_tensor_desc){.ndim = 1, .shape = {INT64_MAX / 2}};
    assert_int_equal(vkattn_tensor_create(ctx, &d, &t), VKATTN_ERROR_SIZE_OVERFLOW);
    d = (vkattn_tensor_desc){.dtype = (vkattn_dtype)7, .ndim = 1, .shape = {2}};
    assert_int_equal(vkattn_tensor_create(ctx, &d, &t), VKATTN_ERROR_INVALID_ARGUMENT);
    assert_int_equal(vkattn_tensor_create(ctx, NULL, &t), VKATTN_ERROR_INVALID_ARGUMENT);
    assert_int_equal(vkattn_tensor_create(NULL, &d, &t), VKATTN_ERROR_INVALID_ARGUMENT);

    d = (vkattn_tensor_desc){.dtype = VKATTN_DTYPE_F32, .ndim = 3, .shape = {2, 3, 4}};
    assert_int_equal(vkattn_tensor_create(ctx, &d, &t), VKATTN_OK);
    vkattn_tensor_desc got = vkattn_tensor_get_desc(t);
    assert_int_equal(got.ndim, 3);
    assert_int_equal(got.shape[2], 4);
    assert_int_equal(got.shape[3], 0);
    float host[24] = {0};
    int32_t ints[24] = {0};
    assert_int_equal(vkattn_tensor_upload(t, NULL, VKATTN_DTYPE_F32), VKATTN_ERROR_INVALID_ARGUMENT);
    assert_int_equal(vkattn_tensor_upload(t, ints, VKATTN_DTYPE_I32), VKATTN_ERROR_UNSUPPORTED);
    assert_int_equal(vkattn_tensor_download(t, host, (vkattn_dtype)9), VKATTN_ERROR_INVALID_ARGUMENT);
    assert_int_equal(vkattn_tensor_upload(NULL, host, VKATTN_DTYPE_F32), VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_tensor_destroy(t);
    vkattn_tensor_destroy(NULL);
    vkattn_context_destroy(ctx);
}

/* f32 -> f16 -> f32 on upload/download: round to nearest even, subnormals,
 * overflow to Inf, NaN kept. */
static void test_f16_conversion(void **state)
{
    (void)state;
    vkattn_context *ctx = cpu_context();
    const float in[] = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 65520.0f, 1e-8f, 5.96e-8f,
                        6.1e-5f, 1.00048828125f /* tie: rounds to even 1.0 */,
                        1.00146484375f /* tie: rounds up to 1.001953125 */, INFINITY, NAN, 3.14159f};
    const float want[] = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, INFINITY, 0.0f, 5.9604645e-8f,
                          1023.0f / 16777216.0f /* subnormal */, 1.0f, 1.001953125f, INFINITY,
                          NAN, 3.140625f};
    size_t n = sizeof in / sizeof in[0];
    vkattn_tensor_desc d = {.dtype = VKATTN_DTYPE_F16, .ndim = 1, .shape = {(int64_t)n}};
    vkattn_tensor *t;
    assert_int_equal(vkattn_tensor_create(ctx, &d, &t), VKATTN_OK);
    assert_int_equal(vkattn_tensor_upload(t, in, VKATTN_DTYPE_F32), VKATTN_OK);
    float out[32];
    assert_int_equal(vkattn_tensor_download(t, out, VKATTN_DTYPE_F32), VKATTN_OK);
    for (size_t i = 0; i < n; i++) {
        if (isnan(want[i]))
            assert_true(isnan(out[i]));
        else if (out[i] != want[i] || signbit(out[i]) != signbit(want[i]))
            fail_msg("element %zu: %g -> %.9g, want %.9g", i, (double)in[i], (double)out[i],
                     (double)want[i]);
    }
    vkattn_tensor_destroy(t);
    vkattn_context_destroy(ctx);
}

static float f32_from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* A 1-D tensor of `n` elements: uploads `in` as `in_type`, downloads it as
 * `out_type` into `out`. */
static void round_trip(vkattn_context *ctx, vkattn_dtype tensor_type, const void *in,
                       vkattn_dtype in_type, void *out, vkattn_dtype out_type, size_t n)
{
    vkattn_tensor_desc d = {.dtype = tensor_type, .ndim = 1, .shape = {(int64_t)n}};
    vkattn_tensor *t;
    assert_int_equal(vkattn_tensor_create(ctx, &d, &t), VKATTN_OK);
    assert_int_equal(vkattn_tensor_upload(t, in, in_type), VKATTN_OK);
    assert_int_equal(vkattn_tensor_download(t, out, out_type), VKATTN_OK);
    vkattn_tensor_destroy(t);
}

/* f32 <-> bf16 and f16 <-> bf16 on upload and download: ties to even both ways,
 * the largest finite value and overflow past it, subnormals, signed zeros, Inf,
 * NaN (quiet, sign kept, never turned into Inf). Checked on the bf16 bits. */
static void test_bf16_conversion(void **state)
{
    (void)state;
    vkattn_context *ctx = cpu_context();
    static const struct { uint32_t in; uint16_t want; const char *what; } f32_cases[] = {
        {0x00000000u, 0x0000u, "+0"},
        {0x80000000u, 0x8000u, "-0"},
        {0x3f800000u, 0x3f80u, "1"},
        {0x3f808000u, 0x3f80u, "1 + 2^-8: tie, down to even 1"},
        {0x3f818000u, 0x3f82u, "1 + 3*2^-8: tie, up to even 1 + 2^-6"},
        {0xbf808000u, 0xbf80u, "-(1 + 2^-8): tie, to even -1"},
        {0x3f808001u, 0x3f81u, "just past a tie: up"},
        {0x3f817fffu, 0x3f81u, "just below a tie: down"},
        {0x40490fdbu, 0x4049u, "pi"},
        {0x7f7f0000u, 0x7f7fu, "largest finite bf16"},
        {0x7f7f7fffu, 0x7f7fu, "below the halfway point past it: largest finite"},
        {0x7f7f8000u, 0x7f80u, "halfway past the largest (odd): ties to Inf"},
        {0x7f7fffffu, 0x7f80u, "FLT_MAX: Inf"},
        {0xff7fffffu, 0xff80u, "-FLT_MAX: -Inf"},
        {0x00800000u, 0x0080u, "smallest normal"},
        {0x007fffffu, 0x0080u, "largest f32 subnormal: up into the normals"},
        {0x007f0000u, 0x007fu, "largest bf16 subnormal"},
        {0x00010000u, 0x0001u, "smallest bf16 subnormal 2^-133"},
        {0x00018000u, 0x0002u, "tie between subnormals 1 and 2: even 2"},
        {0x00008000u, 0x0000u, "half the smallest subnormal: tie, to even 0"},
        {0x00008001u, 0x0001u, "just over half the smallest subnormal"},
        {0x80000001u, 0x8000u, "smallest negative f32 subnormal: -0"},
        {0x7f800000u, 0x7f80u, "+Inf"},
        {0xff800000u, 0xff80u, "-Inf"},
        {0x461c4000u, 0x461cu, "1e4"},
        {0x47c35000u, 0x47c3u, "1e5 (an f16 overflows)"},
    };
    size_t n = sizeof f32_cases / sizeof f32_cases[0];
    float in[32], back[32];
    uint16_t bits[32];
    for (size_t i = 0; i < n; i++)
        in[i] = f32_from_bits(f32_cases[i].in);
    round_trip(ctx, VKATTN_DTYPE_BF16, in, VKATTN_DTYPE_F32, bits, VKATTN_DTYPE_BF16, n);
    round_trip(ctx, VKATTN_DTYPE_BF16, in, VKATTN_DTYPE_F32, back, VKATTN_DTYPE_F32, n);
    for (size_t i = 0; i < n; i++) {
        if (bits[i] != f32_cases[i].want)
            fail_msg("%s: f32 0x%08x -> bf16 0x%04x, want 0x%04x", f32_cases[i].what,
                     f32_cases[i].in, bits[i], f32_cases[i].want);
        float widened = f32_from_bits((uint32_t)f32_cases[i].want << 16);
        if (memcmp(&back[i], &widened, sizeof widened) != 0)
            fail_msg("%s: bf16 0x%04x read back as %g", f32_cases[i].what, bits[i],
                     (double)back[i]);
    }

    /* NaN: quiet NaN with its sign, also from a signalling NaN whose payload
     * lies only in the low 16 bits (truncation would make it Inf). */
    const float nans[3] = {f32_from_bits(0x7fc00000u), f32_from_bits(0xffc00001u),
                           f32_from_bits(0x7f800001u)};
    round_trip(ctx, VKATTN_DTYPE_BF16, nans, VKATTN_DTYPE_F32, bits, VKATTN_DTYPE_BF16, 3);
    for (int i = 0; i < 3; i++) {
        assert_true((bits[i] & 0x7f80u) == 0x7f80u && (bits[i] & 0x0040u)); /* quiet NaN */
        assert_int_equal(bits[i] >> 15, i == 1);
    }
    round_trip(ctx, VKATTN_DTYPE_BF16, nans, VKATTN_DTYPE_F32, back, VKATTN_DTYPE_F32, 3);
    for (int i = 0; i < 3; i++)
        assert_true(isnan(back[i]));

    /* f16 -> bf16: through f32 (exact), rounded once. */
    static const struct { uint16_t in, want; const char *what; } f16_cases[] = {
        {0x3c00u, 0x3f80u, "1"},
        {0x3c04u, 0x3f80u, "1 + 2^-8: tie, to even 1"},
        {0x3c0cu, 0x3f82u, "1 + 3*2^-8: tie, up to even"},
        {0x3c01u, 0x3f80u, "1 + 2^-10: down"},
        {0x7bffu, 0x4780u, "65504: up to 65536"},
        {0x0001u, 0x3380u, "smallest f16 subnormal 2^-24: a bf16 normal"},
        {0x8000u, 0x8000u, "-0"},
        {0x7c00u, 0x7f80u, "+Inf"},
        {0xfc00u, 0xff80u, "-Inf"},
    };
    uint16_t halves[16], half_bits[16];
    n = sizeof f16_cases / sizeof f16_cases[0];
    for (size_t i = 0; i < n; i++)
        halves[i] = f16_cases[i].in;
    halves[n] = 0x7e00u; /* NaN */
    round_trip(ctx, VKATTN_DTYPE_BF16, halves, VKATTN_DTYPE_F16, bits, VKATTN_DTYPE_BF16, n + 1);
    for (size_t i = 0; i < n; i++)
        if (bits[i] != f16_cases[i].want)
            fail_msg("%s: f16 0x%04x -> bf16 0x%04x, want 0x%04x", f16_cases[i].what,
                     f16_cases[i].in, bits[i], f16_cases[i].want);
    assert_true((bits[n] & 0x7f80u) == 0x7f80u && (bits[n] & 0x007fu));

    /* bf16 -> f16 on download: overflow to Inf, subnormals rounded to even. */
    static const struct { uint16_t in, want; const char *what; } to_f16[] = {
        {0x3f80u, 0x3c00u, "1"},
        {0x477fu, 0x7bf8u, "65280: exact"},
        {0x4780u, 0x7c00u, "65536: Inf"},
        {0xc7c3u, 0xfc00u, "-99840: -Inf"},
        {0x3380u, 0x0001u, "2^-24: the smallest f16 subnormal"},
        {0x3300u, 0x0000u, "2^-25: tie, to even 0"},
        {0x3340u, 0x0001u, "1.5 * 2^-25: up"},
        {0x33c0u, 0x0002u, "1.5 * 2^-24: tie, to even 2^-23"},
        {0x8000u, 0x8000u, "-0"},
        {0xff80u, 0xfc00u, "-Inf"},
    };
    n = sizeof to_f16 / sizeof to_f16[0];
    for (size_t i = 0; i < n; i++)
        bits[i] = to_f16[i].in;
    bits[n] = 0xffc1u; /* -NaN */
    round_trip(ctx, VKATTN_DTYPE_BF16, bits, VKATTN_DTYPE_BF16, half_bits, VKATTN_DTYPE_F16, n + 1);
    for (size_t i = 0; i < n; i++)
        if (half_bits[i] != to_f16[i].want)
            fail_msg("%s: bf16 0x%04x -> f16 0x%04x, want 0x%04x", to_f16[i].what, to_f16[i].in,
                     half_bits[i], to_f16[i].want);
    assert_true((half_bits[n] & 0x7c00u) == 0x7c00u && (half_bits[n] & 0x03ffu) &&
                (half_bits[n] & 0x8000u));

    /* I32 data never converts to or from bf16. */
    vkattn_tensor_desc d = {.dtype = VKATTN_DTYPE_BF16, .ndim = 1, .shape = {2}};
    vkattn_tensor *t;
    int32_t ints[2] = {1, 2};
    assert_int_equal(vkattn_tensor_create(ctx, &d, &t), VKATTN_OK);
    assert_int_equal(vkattn_tensor_upload(t, ints, VKATTN_DTYPE_I32), VKATTN_ERROR_UNSUPPORTED);
    assert_non_null(strstr(vkattn_last_error(ctx), "between a bf16 tensor and i32 host data"));
    assert_int_equal(vkattn_tensor_get_desc(t).dtype, VKATTN_DTYPE_BF16);
    vkattn_tensor_destroy(t);
    vkattn_context_destroy(ctx);
}

static vkattn_tensor *make(vkattn_context *ctx, vkattn_dtype dtype, int ndim, int64_t a, int64_t b,
                           int64_t c, int64_t d)
{
    vkattn_tensor_desc desc = {.dtype = dtype, .ndim = ndim, .shape = {a, b, c, d}};
    vkattn_tensor *t;
    assert_int_equal(vkattn_tensor_create(ctx, &desc, &t), VKATTN_OK);
    return t;
}

static void test_op_arguments(void **state)
{
    (void)state;
    vkattn_context *ctx = cpu_context();
    vkattn_tensor *a = make(ctx, VKATTN_DTYPE_F32, 2, 4, 64, 0, 0);
    vkattn_tensor *b = make(ctx, VKATTN_DTYPE_F32, 2, 32, 16, 0, 0);
    vkattn_tensor *c = make(ctx, VKATTN_DTYPE_F32, 2, 4, 16, 0, 0);
    assert_int_equal(vkattn_matmul(ctx, NULL, a, b, NULL, c), VKATTN_ERROR_SHAPE_MISMATCH);
    assert_non_null(strstr(vkattn_last_error(ctx), "matmul: A is 4x64 but B is 32x16"));
    assert_int_equal(vkattn_matmul(ctx, NULL, NULL, b, NULL, c), VKATTN_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(vkattn_last_error(ctx), "A is NULL"));
    assert_int_equal(vkattn_matmul(ctx, NULL, a, b, NULL, a), VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_matmul_desc bad = {.variant = (vkattn_matmul_variant)99};
    assert_int_equal(vkattn_matmul(ctx, &bad, a, a, NULL, c), VKATTN_ERROR_INVALID_ARGUMENT);
    assert_int_equal(vkattn_matmul(NULL, NULL, a, b, NULL, c), VKATTN_ERROR_INVALID_ARGUMENT);

    vkattn_tensor *x = make(ctx, VKATTN_DTYPE_F32, 3, 2, 5, 7, 0);
    vkattn_tensor *y = make(ctx, VKATTN_DTYPE_F32, 3, 2, 7, 5, 0);
    vkattn_tensor *y16 = make(ctx, VKATTN_DTYPE_F16, 3, 2, 5, 7, 0);
    vkattn_tensor *kv = make(ctx, VKATTN_DTYPE_I32, 1, 3, 0, 0, 0);
    vkattn_tensor *x_bf16 = make(ctx, VKATTN_DTYPE_BF16, 3, 2, 5, 7, 0);
    vkattn_tensor *i32 = make(ctx, VKATTN_DTYPE_I32, 2, 4, 64, 0, 0);
    /* I32 is neither a float input nor an output (16-bit outputs: test_outputs). */
    assert_int_equal(vkattn_matmul(ctx, NULL, i32, b, NULL, c), VKATTN_ERROR_UNSUPPORTED);
    assert_non_null(strstr(vkattn_last_error(ctx), "A is i32, must be f32, f16 or bf16"));
    vkattn_tensor *c_i32 = make(ctx, VKATTN_DTYPE_I32, 2, 4, 16, 0, 0);
    assert_int_equal(vkattn_matmul(ctx, NULL, a, b, NULL, c_i32), VKATTN_ERROR_UNSUPPORTED);
    assert_non_null(strstr(vkattn_last_error(ctx), "C is i32, outputs must be f32, f16 or bf16"));
    vkattn_tensor_destroy(c_i32);
    const float zeros[70] = {0};
    assert_int_equal(vkattn_tensor_upload(x_bf16, zeros, VKATTN_DTYPE_F32), VKATTN_OK);
    assert_int_equal(vkattn_softmax(ctx, NULL, x_bf16, x), VKATTN_OK);
    assert_int_equal(vkattn_softmax(ctx, NULL, x, y), VKATTN_ERROR_SHAPE_MISMATCH);
    assert_non_null(strstr(vkattn_last_error(ctx), "softmax: X is 2x5x7 but Y is 2x7x5"));
    assert_int_equal(vkattn_softmax(ctx, NULL, x, y16), VKATTN_OK);
    vkattn_softmax_desc sd = {.scale = -1.0f};
    assert_int_equal(vkattn_softmax(ctx, &sd, x, x), VKATTN_ERROR_INVALID_ARGUMENT);
    sd = (vkattn_softmax_desc){.scale = NAN};
    assert_int_equal(vkattn_softmax(ctx, &sd, x, x), VKATTN_ERROR_INVALID_ARGUMENT);
    sd = (vkattn_softmax_desc){.kv_len = kv};
    assert_int_equal(vkattn_softmax(ctx, &sd, x, x), VKATTN_ERROR_SHAPE_MISMATCH);
    assert_non_null(strstr(vkattn_last_error(ctx), "kv_len"));
    sd = (vkattn_softmax_desc){.kv_len = x};
    assert_int_equal(vkattn_softmax(ctx, &sd, x, x), VKATTN_ERROR_SHAPE_MISMATCH);

    vkattn_tensor *t4 = make(ctx, VKATTN_DTYPE_F32, 4, 2, 3, 4, 5);
    vkattn_tensor *t4_wrong = make(ctx, VKATTN_DTYPE_F32, 4, 2, 3, 4, 5);
    assert_int_equal(vkattn_head_transpose(ctx, t4, t4_wrong), VKATTN_ERROR_SHAPE_MISMATCH);
    assert_non_null(strstr(vkattn_last_error(ctx), "Y must be 2x4x3x5, not 2x3x4x5"));
    assert_int_equal(vkattn_head_transpose(ctx, t4, t4), VKATTN_ERROR_INVALID_ARGUMENT);
    assert_int_equal(vkattn_head_transpose(ctx, x, y), VKATTN_ERROR_INVALID_SHAPE);

    /* A tensor of another context is refused. */
    vkattn_context *other = cpu_context();
    vkattn_tensor *foreign = make(other, VKATTN_DTYPE_F32, 2, 64, 16, 0, 0);
    assert_int_equal(vkattn_matmul(ctx, NULL, a, foreign, NULL, c), VKATTN_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(vkattn_last_error(ctx), "another context"));
    vkattn_tensor_destroy(foreign);
    vkattn_context_destroy(other);

    vkattn_tensor *list[] = {a, b, c, x, y, y16, kv, x_bf16, i32, t4, t4_wrong};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++)
        vkattn_tensor_destroy(list[i]);
    vkattn_context_destroy(ctx);
}

static void test_timer_and_listing(void **state)
{
    (void)state;
    vkattn_context *ctx = cpu_context();
    double ms = -1;
    assert_int_equal(vkattn_timer_end(ctx, &ms), VKATTN_ERROR_INVALID_ARGUMENT);
    assert_int_equal(vkattn_timer_begin(ctx), VKATTN_OK);
    assert_int_equal(vkattn_timer_end(ctx, &ms), VKATTN_OK);
    assert_true(ms >= 0.0);
    vkattn_context_destroy(ctx);

    uint32_t count = 99;
    assert_int_equal(vkattn_list_devices(NULL, 0, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    assert_int_equal(vkattn_list_devices(NULL, 0, &count), VKATTN_OK);
    vkattn_device_info infos[8];
    uint32_t again = 0;
    assert_int_equal(vkattn_list_devices(infos, 8, &again), VKATTN_OK);
    assert_int_equal(again, count);
    for (uint32_t i = 0; i < count && i < 8; i++) {
        assert_int_equal(infos[i].index, i);
        assert_true(infos[i].name[0] != '\0');
        assert_true(infos[i].api_version >= VK_API_VERSION_1_1);
        assert_true(infos[i].subgroup_size >= 1);
    }
}

/* Uploads and downloads `count` elements of `dtype` (13: 52 bytes of f32, not a
 * multiple of any nonCoherentAtomSize) and expects every bit back. */
static void expect_round_trip(vkattn_context *ctx, vkattn_dtype dtype, size_t count)
{
    vkattn_tensor_desc d = {.dtype = dtype, .ndim = 1, .shape = {(int64_t)count}};
    vkattn_tensor *t;
    assert_int_equal(vkattn_tensor_create(ctx, &d, &t), VKATTN_OK);
    size_t esize = dtype == VKATTN_DTYPE_F16 ? 2 : 4;
    unsigned char *in = malloc(count * esize), *out = malloc(count * esize);
    assert_non_null(in);
    assert_non_null(out);
    rng r = {count * 31 + (uint64_t)dtype};
    for (int pass = 0; pass < 2; pass++) { /* a second upload replaces the first */
        for (size_t i = 0; i < count; i++) {
            if (dtype == VKATTN_DTYPE_F32) {
                float f = rng_uniform(&r, -1e6f, 1e6f);
                memcpy(in + 4 * i, &f, 4);
            } else if (dtype == VKATTN_DTYPE_I32) {
                int32_t v = (int32_t)rng_next(&r);
                memcpy(in + 4 * i, &v, 4);
            } else { /* any finite f16 bit pattern */
                uint16_t h = (uint16_t)(rng_next(&r) & 0xfbff);
                memcpy(in + 2 * i, &h, 2);
            }
        }
        assert_int_equal(vkattn_tensor_upload(t, in, dtype), VKATTN_OK);
    }
    memset(out, 0xee, count * esize);
    assert_int_equal(vkattn_tensor_download(t, out, dtype), VKATTN_OK);
    for (size_t i = 0; i < count * esize; i++)
        if (in[i] != out[i])
            fail_msg("%s tensor of %zu: byte %zu is 0x%02x, uploaded 0x%02x",
                     dtype == VKATTN_DTYPE_F16 ? "f16" : "32-bit", count, i, out[i], in[i]);
    /* f32 host data into an f16 tensor and back: the values f16 holds. */
    free(in);
    free(out);
    if (dtype == VKATTN_DTYPE_F16) {
        float *f = malloc(count * sizeof *f), *back = malloc(count * sizeof *back);
        assert_non_null(f);
        assert_non_null(back);
        for (size_t i = 0; i < count; i++)
            f[i] = (float)(int)(i % 2000) - 1000.0f; /* integers: exact in f16 */
        assert_int_equal(vkattn_tensor_upload(t, f, VKATTN_DTYPE_F32), VKATTN_OK);
        assert_int_equal(vkattn_tensor_download(t, back, VKATTN_DTYPE_F32), VKATTN_OK);
        assert_memory_equal(f, back, count * sizeof *f);
        free(f);
        free(back);
    }
    vkattn_tensor_destroy(t);
}

/* A Vulkan context with validation in a memory mode; NULL without a device. */
static vkattn_context *vulkan_context(vkattn_memory_mode memory, test_log *log)
{
    vkattn_context_desc d = {.backend = VKATTN_BACKEND_VULKAN,
                             .validation = VKATTN_VALIDATION_ON,
                             .log_fn = test_logger,
                             .log_user_data = log,
                             .memory = memory};
    vkattn_context *ctx = NULL;
    vkattn_status s = vkattn_context_create(&d, &ctx);
    if (s == VKATTN_ERROR_NO_DEVICE)
        return NULL;
    assert_int_equal(s, VKATTN_OK);
    return ctx;
}

/* The memory modes: DEVICE keeps tensors unmapped (staged) whatever the device,
 * by desc or by VKATTN_MEMORY=device; staged and mapped transfers, with the
 * flushes and invalidations of non-coherent memory forced on, round-trip every
 * bit of f32, f16 and i32 data, at sizes below, at and above an atom. */
static void test_memory_modes(void **state)
{
    (void)state;
    /* The test sets these itself, from a clean start whatever the run's
     * environment holds (a whole suite run with VKATTN_MEMORY=device). */
    unsetenv("VKATTN_MEMORY");
    unsetenv("VKATTN_MEMORY_ASSUME_NONCOHERENT");
    test_log log = {0};
    vkattn_context *ctx = vulkan_context(VKATTN_MEMORY_AUTO, &log);
    if (!ctx)
        skip();
    vkattn_device_info auto_info;
    assert_int_equal(vkattn_context_info(ctx, &auto_info), VKATTN_OK);
    assert_int_equal(auto_info.memory, VKATTN_MEMORY_AUTO);
    vkattn_context_destroy(ctx);

    const struct {
        vkattn_memory_mode desc;
        const char *env, *noncoherent;
        vkattn_memory_mode want;
    } modes[] = {
        {VKATTN_MEMORY_DEVICE, NULL, NULL, VKATTN_MEMORY_DEVICE},
        {VKATTN_MEMORY_DEVICE, NULL, "1", VKATTN_MEMORY_DEVICE},
        {VKATTN_MEMORY_AUTO, "device", "1", VKATTN_MEMORY_DEVICE},
        {VKATTN_MEMORY_DEVICE, "auto", NULL, VKATTN_MEMORY_DEVICE}, /* the desc wins */
        {VKATTN_MEMORY_AUTO, "auto", "1", VKATTN_MEMORY_AUTO},      /* mapped, if AUTO maps */
    };
    const vkattn_dtype dtypes[] = {VKATTN_DTYPE_F32, VKATTN_DTYPE_F16, VKATTN_DTYPE_I32};
    const size_t counts[] = {1, 13, 16, 1000, 4099};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        if (modes[m].env)
            setenv("VKATTN_MEMORY", modes[m].env, 1);
        if (modes[m].noncoherent)
            setenv("VKATTN_MEMORY_ASSUME_NONCOHERENT", modes[m].noncoherent, 1);
        ctx = vulkan_context(modes[m].desc, &log);
        unsetenv("VKATTN_MEMORY");
        unsetenv("VKATTN_MEMORY_ASSUME_NONCOHERENT");
        assert_non_null(ctx);
        vkattn_device_info info;
        assert_int_equal(vkattn_context_info(ctx, &info), VKATTN_OK);
        assert_int_equal(info.memory, modes[m].want);
        if (modes[m].want == VKATTN_MEMORY_DEVICE)
            assert_false(info.host_visible_device_memory);
        else
            assert_int_equal(info.host_visible_device_memory,
                             auto_info.host_visible_device_memory);
        for (size_t d = 0; d < 3; d++)
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
                expect_round_trip(ctx, dtypes[d], counts[c]);
        vkattn_context_destroy(ctx);
    }

    /* An unknown value is a warning, and AUTO. */
    setenv("VKATTN_MEMORY", "vram", 1);
    log.warnings = 0;
    ctx = vulkan_context(VKATTN_MEMORY_AUTO, &log);
    assert_non_null(ctx);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last_warning, "VKATTN_MEMORY=vram"));
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(ctx, &info), VKATTN_OK);
    assert_int_equal(info.memory, VKATTN_MEMORY_AUTO);
    vkattn_context_destroy(ctx);

    /* The listing says what a context would do. */
    setenv("VKATTN_MEMORY", "device", 1);
    vkattn_device_info listed[8];
    uint32_t count = 0;
    assert_int_equal(vkattn_list_devices(listed, 8, &count), VKATTN_OK);
    unsetenv("VKATTN_MEMORY");
    for (uint32_t i = 0; i < count && i < 8; i++) {
        assert_int_equal(listed[i].memory, VKATTN_MEMORY_DEVICE);
        assert_false(listed[i].host_visible_device_memory);
    }
    assert_int_equal(log.validation_messages, 0);
}

static const vkattn_kernel_time *find_kernel(const vkattn_kernel_time *k, uint32_t n,
                                              const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(k[i].kernel, name) == 0)
            return &k[i];
    return NULL;
}

/* Per-kernel GPU times: a profiled context in device memory (so transfers are
 * copies) times the attention it runs kernel by kernel, the most time first;
 * reset starts over; contexts without profiling, and the CPU backend, have
 * none; bad arguments are refused. */
static void test_profile(void **state)
{
    (void)state;
    test_log log = {0};
    vkattn_context_desc d = {.backend = VKATTN_BACKEND_VULKAN, .validation = VKATTN_VALIDATION_ON,
                             .log_fn = test_logger, .log_user_data = &log,
                             .memory = VKATTN_MEMORY_DEVICE, .profile = true};
    vkattn_context *ctx = NULL;
    vkattn_status s = vkattn_context_create(&d, &ctx);
    if (s == VKATTN_ERROR_NO_DEVICE)
        skip();
    assert_int_equal(s, VKATTN_OK);
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(ctx, &info), VKATTN_OK);

    /* Decoding-shaped, so the keys are split: the attention kernel, then the combine. */
    vkattn_tensor *q = make(ctx, VKATTN_DTYPE_F32, 4, 1, 4, 1, 16);
    vkattn_tensor *k = make(ctx, VKATTN_DTYPE_F32, 4, 1, 4, 700, 16);
    vkattn_tensor *o = make(ctx, VKATTN_DTYPE_F32, 4, 1, 4, 1, 16);
    float *ones = calloc(4 * 700 * 16, sizeof *ones);
    assert_non_null(ones);
    for (size_t i = 0; i < 4 * 700 * 16; i++)
        ones[i] = 1.0f;
    assert_int_equal(vkattn_tensor_upload(q, ones, VKATTN_DTYPE_F32), VKATTN_OK);
    assert_int_equal(vkattn_tensor_upload(k, ones, VKATTN_DTYPE_F32), VKATTN_OK);
    vkattn_attention_desc ad = {.causal = true, .path = VKATTN_PATH_FUSED};
    vkattn_attention_choice ran;
    assert_int_equal(vkattn_attention_choose(ctx, &ad, q, k, k, o, &ran), VKATTN_OK);
    assert_int_equal(vkattn_attention(ctx, &ad, q, k, k, o), VKATTN_OK);
    assert_int_equal(vkattn_tensor_download(o, ones, VKATTN_DTYPE_F32), VKATTN_OK);
    assert_true(ones[0] == 1.0f); /* the mean of ones */

    vkattn_kernel_time times[16];
    uint32_t n = 0, again = 99;
    assert_int_equal(vkattn_profile_read(ctx, times, 16, &n, false), VKATTN_OK);
    if (!info.timestamps) {
        assert_int_equal(n, 0);
    } else {
        const char *kernel = ran.fused_variant == VKATTN_FUSED_ROWS ? "attention_rows"
                             : ran.fused_variant == VKATTN_FUSED_DECODE ? "attention_decode"
                                                                        : "attention_tiled";
        const vkattn_kernel_time *attention = find_kernel(times, n, kernel);
        assert_non_null(attention);
        assert_int_equal(attention->dispatches, 1);
        assert_true(attention->total_ms > 0.0);
        if (ran.kv_splits > 1) {
            const vkattn_kernel_time *combine = find_kernel(times, n, "attention_combine");
            assert_non_null(combine);
            assert_int_equal(combine->dispatches, 1);
        }
        const vkattn_kernel_time *copies = find_kernel(times, n, "copy");
        assert_non_null(copies);
        assert_int_equal(copies->dispatches, 3); /* two uploads, one download */
        for (uint32_t i = 1; i < n; i++)
            assert_true(times[i - 1].total_ms >= times[i].total_ms);
        /* A short array: the count is still all of them. */
        assert_int_equal(vkattn_profile_read(ctx, times, 1, &again, true), VKATTN_OK);
        assert_int_equal(again, n);
    }
    assert_int_equal(vkattn_profile_read(ctx, NULL, 0, &again, false), VKATTN_OK);
    assert_int_equal(again, 0);
    assert_int_equal(vkattn_profile_read(ctx, NULL, 1, &again, false),
                     VKATTN_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(vkattn_last_error(ctx), "out is NULL with a capacity above 0"));
    assert_int_equal(vkattn_profile_read(ctx, times, 1, NULL, false),
                     VKATTN_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(vkattn_last_error(ctx), "count is NULL"));
    assert_int_equal(vkattn_profile_read(NULL, times, 1, &again, false),
                     VKATTN_ERROR_INVALID_ARGUMENT);
    /* Each pipeline compiled here logged its statistics where the driver
     * reports them (pipeline_stats.c), and no query failed. */
    if (info.pipeline_statistics)
        assert_true(log.pipeline_statistics >= 1);  /* the attention kernel at least */
    else
        assert_int_equal(log.pipeline_statistics, 0);
    assert_int_equal(log.warnings, 0);
    vkattn_tensor_destroy(q);
    vkattn_tensor_destroy(k);
    vkattn_tensor_destroy(o);
    vkattn_context_destroy(ctx);

    /* Not profiled: no times, whatever ran. */
    d.profile = false;
    assert_int_equal(vkattn_context_create(&d, &ctx), VKATTN_OK);
    vkattn_tensor *t = make(ctx, VKATTN_DTYPE_F32, 1, 64, 0, 0, 0);
    assert_int_equal(vkattn_tensor_upload(t, ones, VKATTN_DTYPE_F32), VKATTN_OK);
    assert_int_equal(vkattn_profile_read(ctx, times, 16, &n, false), VKATTN_OK);
    assert_int_equal(n, 0);
    vkattn_tensor_destroy(t);
    vkattn_context_destroy(ctx);
    ctx = cpu_context();
    assert_int_equal(vkattn_profile_read(ctx, times, 16, &n, false), VKATTN_OK);
    assert_int_equal(n, 0);
    vkattn_context_destroy(ctx);
    free(ones);
    assert_int_equal(log.validation_messages, 0);
}

/* Counts the warnings about tuning entries ignored (and validation messages). */
typedef struct tuning_log {
    int ignored, validation;
} tuning_log;

static void tuning_logger(void *user, vkattn_log_level level, vkattn_log_source source,
                          const char *msg)
{
    tuning_log *log = user;
    if (source == VKATTN_LOG_SOURCE_VALIDATION)
        log->validation++;
    else if (level == VKATTN_LOG_WARNING && strstr(msg, "\" ignored: ") &&
             (!strncmp(msg, "tuning: ", 8) || !strncmp(msg, "VKATTN_TUNE: ", 13)))
        log->ignored++;
}

/* vkattn_context_desc.tuning: each malformed entry is warned about and
 * ignored, the rest taken (whitespace and all); a tuning given in the
 * desc replaces VKATTN_TUNE, even an empty one. */
static void test_tuning_entries(void **state)
{
    (void)state;
    static const char *const malformed[] = {
        "bogus", "tiled", "tiled.keys", "tiled.keys=", "tiled.keys=-4", "tiled.keys=4x",
        "tiled.keys=99999999999999999999", ".keys=4", "tiled.=4", "nope.keys=4", "rows.keys=4",
        "tiled.keys=3", "tiled.subgroups=2", "decode.subgroups=17",
        /* the coopmat matmul's knobs are its own, within their ranges */
        "matmul_coopmat.keys=4", "coopmat.columns=2", "matmul.rows=2", "matmul_coopmat.depth=4",
        "matmul_coopmat_emulated.rows=5",
        "tiled.keys=12345678901234567890123456789012345678901234567890123456789012345",
    };
    char text[1024] = " , ,\t tiled.keys=20\n";
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        strcat(text, ",");
        strcat(text, malformed[i]);
    }
    /* Taken: every fused variant by its name (a variant added to the public
     * enum must not land on the coopmat matmul's tuning slots, which follow
     * them), and the matmul's two builds. */
    for (int v = VKATTN_FUSED_AUTO + 1;
         strcmp(vkattn_fused_variant_name((vkattn_fused_variant)v), "?"); v++)
        snprintf(text + strlen(text), sizeof text - strlen(text), ",%s.target=1",
                 vkattn_fused_variant_name((vkattn_fused_variant)v));
    strcat(text, ",matmul_coopmat.stages=1,matmul_coopmat_emulated.stages=1");
    assert_int_equal(setenv("VKATTN_TUNE", "tiled.keys=bad", 1), 0);
    tuning_log log = {0};
    vkattn_context_desc d = {.backend = VKATTN_BACKEND_VULKAN, .validation = VKATTN_VALIDATION_ON,
                             .log_fn = tuning_logger, .log_user_data = &log, .tuning = text};
    vkattn_context *ctx = NULL;
    vkattn_status s = vkattn_context_create(&d, &ctx);
    if (s == VKATTN_ERROR_NO_DEVICE) {
        assert_int_equal(unsetenv("VKATTN_TUNE"), 0);
        skip();
    }
    assert_int_equal(s, VKATTN_OK);
    assert_int_equal(log.ignored, (int)(sizeof malformed / sizeof malformed[0]));

    /* tiled.keys=20 taken: 20 keys of D = Dv = 576 (90 KiB) fit no device's
     * shared memory (64 KiB at most), so the forced tiled kernel is refused
     * naming it. */
    vkattn_tensor *q = make(ctx, VKATTN_DTYPE_F32, 4, 1, 1, 2, 576);
    vkattn_tensor *o = make(ctx, VKATTN_DTYPE_F32, 4, 1, 1, 2, 576);
    vkattn_attention_desc ad = {.path = VKATTN_PATH_FUSED, .fused_variant = VKATTN_FUSED_TILED};
    vkattn_attention_choice ran;
    assert_int_equal(vkattn_attention_choose(ctx, &ad, q, q, q, o, &ran),
                     VKATTN_ERROR_UNSUPPORTED);
    assert_non_null(strstr(vkattn_last_error(ctx), "tuning tiled.keys=20: "));
    vkattn_tensor_destroy(q);
    vkattn_tensor_destroy(o);
    vkattn_context_destroy(ctx);

    /* An empty tuning in the desc: VKATTN_TUNE is not read. */
    d.tuning = "";
    log = (tuning_log){0};
    assert_int_equal(vkattn_context_create(&d, &ctx), VKATTN_OK);
    vkattn_context_destroy(ctx);
    assert_int_equal(log.ignored, 0);
    /* None in the desc: it is. */
    d.tuning = NULL;
    assert_int_equal(vkattn_context_create(&d, &ctx), VKATTN_OK);
    vkattn_context_destroy(ctx);
    assert_int_equal(unsetenv("VKATTN_TUNE"), 0);
    assert_int_equal(log.ignored, 1);
    assert_int_equal(log.validation, 0);
}

/* VKATTN_COOPMAT_PEAK=1: the context logs the matrix units' rate, or where
 * there are none the emulated build's run of the same kernel, whose results
 * the library checks (every accumulator element, every invocation's sum). */
static void test_coopmat_peak_probe(void **state)
{
    (void)state;
    assert_int_equal(setenv("VKATTN_COOPMAT_PEAK", "1", 1), 0);
    test_env *env = test_env_create();
    assert_int_equal(unsetenv("VKATTN_COOPMAT_PEAK"), 0);
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(env->gpu, &info), VKATTN_OK);
    const char *line = env->gpu_log.coopmat_peak;
    if (!strstr(line, "; results checked"))
        fail_msg("logged \"%s\"", line);
    if (info.cooperative_matrix) {
        assert_non_null(strstr(line, "TFLOP/s with B in registers, "));
    } else {
        const char *prefix = "coopmat peak (emulated build): 16x16x16 f16 products into f32, ";
        assert_int_equal(strncmp(line, prefix, strlen(prefix)), 0);
        assert_null(strstr(line, "B in registers"));
    }
    assert_non_null(strstr(line, " TFLOP/s with B from shared memory for two products, "));
    assert_non_null(
        strstr(line, " TFLOP/s with B from shared memory column-major for each product;"));
    /* And the workgroup-scope products (VK_NV_cooperative_matrix2): measured
     * and checked where this context has them, or the emulated build's where
     * the device has no matrix units; elsewhere the line says why not. */
    const char *workgroup = env->gpu_log.coopmat_peak_workgroup;
    if (!info.cooperative_matrix) {
        const char *prefix = "coopmat peak, workgroup scope (emulated build): 16x16x8 f16 "
                             "products into f32, 2 workgroups of 16 invocations, ";
        if (strncmp(workgroup, prefix, strlen(prefix)) != 0)
            fail_msg("logged \"%s\"", workgroup);
    }
    if (!strstr(workgroup, "workgroup scope: not measured: ")) {
        if (!strstr(workgroup, "; results checked"))
            fail_msg("logged \"%s\"", workgroup);
        assert_non_null(strstr(workgroup, " TFLOP/s with A held and B from shared memory for "
                                          "each product, "));
        assert_non_null(strstr(workgroup, " TFLOP/s with A and B from shared memory for each "
                                          "product, "));
        assert_non_null(strstr(workgroup, " TFLOP/s with A held and B from a storage buffer for "
                                          "each product, "));
        assert_non_null(strstr(workgroup, " TFLOP/s with A held and B from a storage buffer "
                                          "column-major for each product; shaped as attention's "
                                          "(64 query rows, 64 keys, D 128): S = Q K^T "));
        assert_non_null(strstr(workgroup, " TFLOP/s, O += P V "));
        assert_null(strstr(workgroup, "shaped as attention's (64 query rows, 64 keys, D 128): "
                                      "not measured"));
    }
    test_env_destroy(env);
}

/* The cooperative-matrix accumulator layout read off the device
 * (VKATTN_COOPMAT_LAYOUT=1: a new context logs it): on a GPU with matrix units
 * its own (printed for the record; the analysis is test_coopmat_layout's),
 * elsewhere the emulated build's, whose layout is known: element k of lane l
 * is element l + k * lanes of the 16x16 matrix. Each element once either way,
 * validation on. */
static void test_coopmat_layout_probe(void **state)
{
    (void)state;
    assert_int_equal(setenv("VKATTN_COOPMAT_LAYOUT", "1", 1), 0);
    test_env *env = test_env_create();
    assert_int_equal(unsetenv("VKATTN_COOPMAT_LAYOUT"), 0);
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(env->gpu, &info), VKATTN_OK);
    const char *line = env->gpu_log.coopmat_layout;
    if (info.cooperative_matrix) {
        assert_non_null(strstr(line, "coopmat layout: "));
        assert_non_null(strstr(line, " f32 accumulator on "));
        assert_null(strstr(line, "not each element once"));
    } else {
        const char *prefix = "coopmat layout (emulated build): 16x16 f32 accumulator on ";
        unsigned lanes = 0;
        assert_int_equal(strncmp(line, prefix, strlen(prefix)), 0);
        assert_int_equal(sscanf(line + strlen(prefix), "%u", &lanes), 1);
        assert_true(lanes >= 4 && lanes <= 128);
        /* Every row's elements lie in one run of 16 of the matrix's, which
         * 16 neighbouring lanes (or all, with fewer) hold. */
        char expected[200];
        snprintf(expected, sizeof expected, "%s%u invocations, %u elements each; a row in %u "
                 "neighbouring invocations (aligned)", prefix, lanes, 256 / lanes,
                 lanes < 16 ? lanes : 16);
        if (!strstr(line, expected))
            fail_msg("logged \"%s\"; expected \"%s\"", line, expected);
        assert_non_null(strstr(line, "; invocation 0: (0,0) "));
    }
    /* And a workgroup-scope accumulator's (VK_NV_cooperative_matrix2): where
     * the device has no matrix units, the emulated build's, whose invocation
     * i holds cells i + 16 k of the 64x64 matrix: every row in all 16. */
    const char *workgroup = env->gpu_log.coopmat_layout_workgroup;
    if (!info.cooperative_matrix) {
        const char *expected = "coopmat layout, workgroup scope (emulated build): 64x64 f32 "
                               "accumulator on 16 invocations, 256 elements each; a row in 16 "
                               "neighbouring invocations (aligned)";
        if (strncmp(workgroup, expected, strlen(expected)) != 0)
            fail_msg("logged \"%s\"; expected \"%s\"", workgroup, expected);
        assert_non_null(strstr(workgroup, "; invocation 0: (0,0) (0,16) (0,32) (0,48) (1,0) "));
        assert_non_null(strstr(workgroup, "; row 0 in 16 invocations from 0 to 15, subgroups of "));
    } else if (!strstr(workgroup, "workgroup scope: not read: ")) {
        assert_non_null(strstr(workgroup, " f32 accumulator on "));
        assert_null(strstr(workgroup, "not each element once"));
    }
    test_env_destroy(env);

    /* A context whose tuning asks for the softmax in registers reads the
     * layout it needs as it starts (the emulated build's, a check of the
     * probe), and an attention call by that path is correct (where the lanes
     * allow it: not on lavapipe's 4). */
    assert_int_equal(setenv("VKATTN_TUNE", "coopmat_emulated.softmax=2", 1), 0);
    env = test_env_create();
    assert_int_equal(unsetenv("VKATTN_TUNE"), 0);
    if (test_has_float16(env, &info) && !test_register_softmax_refused(env)) {
        rng r = {61};
        int64_t shape[4] = {1, 2, 19, 24};
        pair q = pair_random(env, VKATTN_DTYPE_F16, 4, shape, &r, -1.f, 1.f);
        pair o = pair_output(env, 4, shape);
        vkattn_attention_desc d = {.causal = true, .path = VKATTN_PATH_FUSED,
                                   .fused_variant = VKATTN_FUSED_COOPMAT_EMULATED};
        assert_int_equal(vkattn_attention(env->cpu, &d, q.cpu, q.cpu, q.cpu, o.cpu), VKATTN_OK);
        vkattn_status s = vkattn_attention(env->gpu, &d, q.gpu, q.gpu, q.gpu, o.gpu);
        if (s != VKATTN_OK)
            fail_msg("%s", vkattn_last_error(env->gpu));
        expect_close("softmax in registers", &o, 2e-3, 0.0, NULL);
        assert_non_null(strstr(env->gpu_log.coopmat_layout, "for the softmax in registers: "));
        pair_destroy(&q);
        pair_destroy(&o);
    }
    test_env_destroy(env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_strings),  cmocka_unit_test(test_version),
        cmocka_unit_test(test_context_arguments), cmocka_unit_test(test_tensor_arguments),
        cmocka_unit_test(test_f16_conversion),  cmocka_unit_test(test_bf16_conversion),
        cmocka_unit_test(test_op_arguments),
        cmocka_unit_test(test_timer_and_listing), cmocka_unit_test(test_memory_modes),
        cmocka_unit_test(test_profile),   cmocka_unit_test(test_tuning_entries),
        cmocka_unit_test(test_coopmat_layout_probe),
        cmocka_unit_test(test_coopmat_peak_probe),
    };
    return test_run_group(tests, NULL, NULL);
}
