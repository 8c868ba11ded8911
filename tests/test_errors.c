/* Error paths on a Vulkan context: each bad call returns its own status and a
 * message, changes no output, leaks nothing (the validation layer reports any
 * Vulkan object still alive when the device is destroyed), and leaves the
 * context usable. */
#include "test_util.h"

#include <stdio.h>
#include <string.h>

static vkattn_tensor *make(vkattn_context *ctx, vkattn_dtype dtype, int ndim, int64_t a, int64_t b,
                           int64_t c, int64_t d)
{
    vkattn_tensor_desc desc = {.dtype = dtype, .ndim = ndim, .shape = {a, b, c, d}};
    vkattn_tensor *t = NULL;
    vkattn_status s = vkattn_tensor_create(ctx, &desc, &t);
    if (s != VKATTN_OK)
        fail_msg("%s", vkattn_last_error(ctx));
    return t;
}

#define EXPECT_STATUS(call, status, fragment)                                              \
    do {                                                                                   \
        vkattn_status s_ = (call);                                                         \
        if (s_ != (status))                                                                \
            fail_msg("%s returned %s, expected %s (%s)", #call, vkattn_status_string(s_),  \
                     vkattn_status_string(status), vkattn_last_error(env->gpu));           \
        if (!strstr(vkattn_last_error(env->gpu), fragment))                                \
            fail_msg("%s: message \"%s\" lacks \"%s\"", #call, vkattn_last_error(env->gpu), \
                     fragment);                                                            \
    } while (0)

/* After the failures, a correct matmul still runs and C was not touched before it. */
static void expect_usable(test_env *env, vkattn_tensor *a, vkattn_tensor *b, vkattn_tensor *c)
{
    float out[12];
    assert_int_equal(vkattn_tensor_download(c, out, VKATTN_DTYPE_F32), VKATTN_OK);
    for (int i = 0; i < 12; i++)
        assert_true(out[i] == -7.0f);
    assert_int_equal(vkattn_matmul(env->gpu, NULL, a, b, NULL, c), VKATTN_OK);
    assert_int_equal(vkattn_tensor_download(c, out, VKATTN_DTYPE_F32), VKATTN_OK);
    for (int i = 0; i < 12; i++)
        assert_true(out[i] == 5.0f); /* ones(3x5) @ ones(5x4) */
}

static void test_error_paths(void **state)
{
    test_env *env = *state;
    vkattn_context *ctx = env->gpu;
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(ctx, &info), VKATTN_OK);

    vkattn_tensor *a = make(ctx, VKATTN_DTYPE_F32, 2, 3, 5, 0, 0);
    vkattn_tensor *b = make(ctx, VKATTN_DTYPE_F32, 2, 5, 4, 0, 0);
    vkattn_tensor *c = make(ctx, VKATTN_DTYPE_F32, 2, 3, 4, 0, 0);
    vkattn_tensor *wrong = make(ctx, VKATTN_DTYPE_F32, 2, 4, 4, 0, 0);
    float ones[20], sentinel[12];
    for (int i = 0; i < 20; i++)
        ones[i] = 1.0f;
    for (int i = 0; i < 12; i++)
        sentinel[i] = -7.0f;
    assert_int_equal(vkattn_tensor_upload(a, ones, VKATTN_DTYPE_F32), VKATTN_OK);
    assert_int_equal(vkattn_tensor_upload(b, ones, VKATTN_DTYPE_F32), VKATTN_OK);
    assert_int_equal(vkattn_tensor_upload(c, sentinel, VKATTN_DTYPE_F32), VKATTN_OK);

    /* NULL pointers */
    EXPECT_STATUS(vkattn_matmul(ctx, NULL, a, NULL, NULL, c), VKATTN_ERROR_INVALID_ARGUMENT, "B is NULL");
    EXPECT_STATUS(vkattn_softmax(ctx, NULL, NULL, c), VKATTN_ERROR_INVALID_ARGUMENT, "X is NULL");
    EXPECT_STATUS(vkattn_head_transpose(ctx, a, NULL), VKATTN_ERROR_INVALID_ARGUMENT, "Y is NULL");
    EXPECT_STATUS(vkattn_tensor_upload(a, NULL, VKATTN_DTYPE_F32), VKATTN_ERROR_INVALID_ARGUMENT,
                  "host pointer is NULL");
    vkattn_tensor *t = NULL;
    EXPECT_STATUS(vkattn_tensor_create(ctx, NULL, &t), VKATTN_ERROR_INVALID_ARGUMENT, "NULL");

    /* zero and negative dimensions, size overflow */
    vkattn_tensor_desc d = {.ndim = 2, .shape = {0, 4}};
    EXPECT_STATUS(vkattn_tensor_create(ctx, &d, &t), VKATTN_ERROR_INVALID_SHAPE, "dimension 0 is 0");
    d = (vkattn_tensor_desc){.ndim = 3, .shape = {2, -1, 4}};
    EXPECT_STATUS(vkattn_tensor_create(ctx, &d, &t), VKATTN_ERROR_INVALID_SHAPE, "dimension 1 is -1");
    d = (vkattn_tensor_desc){.ndim = 3, .shape = {1ll << 40, 1ll << 40, 1ll << 40}};
    EXPECT_STATUS(vkattn_tensor_create(ctx, &d, &t), VKATTN_ERROR_SIZE_OVERFLOW, "overflows");
    assert_null(t);

    /* larger than the device takes */
    int64_t too_many = (int64_t)(info.max_storage_buffer_range / 4) + 1;
    d = (vkattn_tensor_desc){.ndim = 1, .shape = {too_many}};
    EXPECT_STATUS(vkattn_tensor_create(ctx, &d, &t), VKATTN_ERROR_EXCEEDS_DEVICE_LIMIT,
                  "over this device's limit");
    assert_null(t);

    /* shape mismatches */
    EXPECT_STATUS(vkattn_matmul(ctx, NULL, a, b, NULL, wrong), VKATTN_ERROR_SHAPE_MISMATCH,
                  "matmul: A is 3x5 but C is 4x4");
    EXPECT_STATUS(vkattn_matmul(ctx, NULL, a, wrong, NULL, c), VKATTN_ERROR_SHAPE_MISMATCH,
                  "matmul: A is 3x5 but B is 4x4");
    vkattn_matmul_desc tb = {.transpose_b = true};
    EXPECT_STATUS(vkattn_matmul(ctx, &tb, a, b, NULL, c), VKATTN_ERROR_SHAPE_MISMATCH, "transposed");
    EXPECT_STATUS(vkattn_matmul(ctx, NULL, a, b, a, c), VKATTN_ERROR_SHAPE_MISMATCH, "bias must be (N)");
    EXPECT_STATUS(vkattn_softmax(ctx, NULL, a, c), VKATTN_ERROR_SHAPE_MISMATCH, "X is 3x5 but Y is 3x4");
    EXPECT_STATUS(vkattn_head_transpose(ctx, a, c), VKATTN_ERROR_INVALID_SHAPE, "4-D");

    expect_usable(env, a, b, c);

    vkattn_tensor_destroy(a);
    vkattn_tensor_destroy(b);
    vkattn_tensor_destroy(c);
    vkattn_tensor_destroy(wrong);
}

/* Recording far more dispatches than the descriptor pools hold flushes on its
 * own, and results stay right (the chain of dependent dispatches needs barriers). */
static void test_long_recording(void **state)
{
    test_env *env = *state;
    vkattn_context *ctx = env->gpu;
    vkattn_tensor *x = make(ctx, VKATTN_DTYPE_F32, 4, 1, 2, 3, 4);
    vkattn_tensor *y = make(ctx, VKATTN_DTYPE_F32, 4, 1, 3, 2, 4);
    float in[24], out[24];
    for (int i = 0; i < 24; i++)
        in[i] = (float)i;
    assert_int_equal(vkattn_tensor_upload(x, in, VKATTN_DTYPE_F32), VKATTN_OK);
    for (int i = 0; i < 3000; i++) { /* 6000 dispatches, x and y alternately written */
        assert_int_equal(vkattn_head_transpose(ctx, x, y), VKATTN_OK);
        assert_int_equal(vkattn_head_transpose(ctx, y, x), VKATTN_OK);
    }
    assert_int_equal(vkattn_tensor_download(x, out, VKATTN_DTYPE_F32), VKATTN_OK);
    assert_memory_equal(in, out, sizeof in);
    vkattn_tensor_destroy(x);
    vkattn_tensor_destroy(y);
}

static int setup(void **state)
{
    *state = test_env_create();
    return 0;
}

static int teardown(void **state)
{
    test_env_destroy(*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_paths),
        cmocka_unit_test(test_long_recording),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
