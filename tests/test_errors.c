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

/* Attention and mha: each bad call returns its status with a message naming
 * the tensors, leaves O untouched, and a correct call still works afterwards. */
static void test_attention_errors(void **state)
{
    test_env *env = *state;
    vkattn_context *ctx = env->gpu;
    vkattn_tensor *q = make(ctx, VKATTN_DTYPE_F32, 4, 1, 4, 3, 16);
    vkattn_tensor *k = make(ctx, VKATTN_DTYPE_F32, 4, 1, 2, 5, 16);
    vkattn_tensor *v = make(ctx, VKATTN_DTYPE_F32, 4, 1, 2, 5, 8);
    vkattn_tensor *o = make(ctx, VKATTN_DTYPE_F32, 4, 1, 4, 3, 8);
    vkattn_tensor *k12 = make(ctx, VKATTN_DTYPE_F32, 4, 1, 2, 5, 12);
    vkattn_tensor *k3 = make(ctx, VKATTN_DTYPE_F32, 4, 1, 3, 5, 16);
    vkattn_tensor *v_short = make(ctx, VKATTN_DTYPE_F32, 4, 1, 2, 4, 8);
    vkattn_tensor *o_wrong = make(ctx, VKATTN_DTYPE_F32, 4, 1, 4, 3, 16);
    vkattn_tensor *o_i32 = make(ctx, VKATTN_DTYPE_I32, 4, 1, 4, 3, 8);
    vkattn_tensor *q3 = make(ctx, VKATTN_DTYPE_F32, 3, 4, 3, 16, 0);
    vkattn_tensor *lens_f32 = make(ctx, VKATTN_DTYPE_F32, 1, 1, 0, 0, 0);
    vkattn_tensor *lens_long = make(ctx, VKATTN_DTYPE_I32, 1, 2, 0, 0, 0);
    vkattn_tensor *q_big = make(ctx, VKATTN_DTYPE_F32, 4, 1, 1, 3, 600);
    vkattn_tensor *k_big = make(ctx, VKATTN_DTYPE_F32, 4, 1, 1, 5, 600);
    vkattn_tensor *o_big = make(ctx, VKATTN_DTYPE_F32, 4, 1, 1, 3, 8);
    vkattn_tensor *v_big = make(ctx, VKATTN_DTYPE_F32, 4, 1, 1, 5, 8);
    float data[3000], sentinel[96], out[96];
    for (int i = 0; i < 3000; i++)
        data[i] = 0.01f * (float)(i % 17);
    for (int i = 0; i < 96; i++)
        sentinel[i] = -7.0f;
    vkattn_tensor *inputs[] = {q, k, v, k12, k3, v_short, q3, q_big, k_big, v_big};
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
        assert_int_equal(vkattn_tensor_upload(inputs[i], data, VKATTN_DTYPE_F32), VKATTN_OK);
    assert_int_equal(vkattn_tensor_upload(o, sentinel, VKATTN_DTYPE_F32), VKATTN_OK);

    vkattn_attention_desc d = {0};
    EXPECT_STATUS(vkattn_attention(ctx, &d, NULL, k, v, o), VKATTN_ERROR_INVALID_ARGUMENT, "Q is NULL");
    EXPECT_STATUS(vkattn_attention(ctx, &d, q, k12, v, o), VKATTN_ERROR_SHAPE_MISMATCH,
                  "K has head size 12 but Q has 16");
    EXPECT_STATUS(vkattn_attention(ctx, &d, q, k3, v, o), VKATTN_ERROR_SHAPE_MISMATCH,
                  "V has head count 2 but K has 3");
    EXPECT_STATUS(vkattn_attention(ctx, &d, q, k, v_short, o), VKATTN_ERROR_SHAPE_MISMATCH,
                  "V has sequence length 4 but K has 5");
    EXPECT_STATUS(vkattn_attention(ctx, &d, q, k, v, o_wrong), VKATTN_ERROR_SHAPE_MISMATCH,
                  "O is 1x4x3x16 but must be 1x4x3x8");
    EXPECT_STATUS(vkattn_attention(ctx, &d, q, k, v, o_i32), VKATTN_ERROR_UNSUPPORTED,
                  "O is i32, outputs must be f32, f16 or bf16");
    EXPECT_STATUS(vkattn_attention(ctx, &d, q3, k, v, o), VKATTN_ERROR_INVALID_SHAPE, "must be 4-D");
    EXPECT_STATUS(vkattn_attention(ctx, &d, q, k, v, q), VKATTN_ERROR_INVALID_ARGUMENT, "must not alias");
    d.scale = -1.0f;
    EXPECT_STATUS(vkattn_attention(ctx, &d, q, k, v, o), VKATTN_ERROR_INVALID_ARGUMENT,
                  "scale is -1");
    d = (vkattn_attention_desc){.layout = (vkattn_layout)7};
    EXPECT_STATUS(vkattn_attention(ctx, &d, q, k, v, o), VKATTN_ERROR_INVALID_ARGUMENT, "layout 7");
    d = (vkattn_attention_desc){.kv_len = lens_f32};
    EXPECT_STATUS(vkattn_attention(ctx, &d, q, k, v, o), VKATTN_ERROR_SHAPE_MISMATCH,
                  "kv_len is f32 of shape (1), must be i32 of shape (1)");
    d = (vkattn_attention_desc){.kv_len = lens_long};
    EXPECT_STATUS(vkattn_attention(ctx, &d, q, k, v, o), VKATTN_ERROR_SHAPE_MISMATCH, "kv_len is i32 of shape (2)");
    d = (vkattn_attention_desc){.has_q_offset = true, .q_offset = (int64_t)1 << 40};
    EXPECT_STATUS(vkattn_attention(ctx, &d, q, k, v, o), VKATTN_ERROR_INVALID_ARGUMENT, "q_offset");
    /* Head size 600 is past every fused kernel (the tiled one takes 576): FUSED refuses, AUTO takes the unfused path. */
    d = (vkattn_attention_desc){.path = VKATTN_PATH_FUSED};
    EXPECT_STATUS(vkattn_attention(ctx, &d, q_big, k_big, v_big, o_big), VKATTN_ERROR_UNSUPPORTED,
                  "fused path: head sizes 600 and 8");
    d.path = VKATTN_PATH_AUTO;
    assert_int_equal(vkattn_attention(ctx, &d, q_big, k_big, v_big, o_big), VKATTN_OK);

    /* A tensor of another context. */
    vkattn_tensor *foreign = NULL;
    vkattn_tensor_desc fd = {.ndim = 4, .shape = {1, 2, 5, 16}};
    assert_int_equal(vkattn_tensor_create(env->cpu, &fd, &foreign), VKATTN_OK);
    d = (vkattn_attention_desc){0};
    EXPECT_STATUS(vkattn_attention(ctx, &d, q, foreign, v, o), VKATTN_ERROR_INVALID_ARGUMENT,
                  "K belongs to another context");
    vkattn_tensor_destroy(foreign);

    /* mha: X (1, 3, 16), two heads of 4 (W_qkv 24x16), C_out 16. */
    vkattn_tensor *x = make(ctx, VKATTN_DTYPE_F32, 3, 1, 3, 16, 0);
    vkattn_tensor *w_qkv = make(ctx, VKATTN_DTYPE_F32, 2, 24, 16, 0, 0);
    vkattn_tensor *w_bad = make(ctx, VKATTN_DTYPE_F32, 2, 25, 16, 0, 0);
    vkattn_tensor *w_out = make(ctx, VKATTN_DTYPE_F32, 2, 16, 8, 0, 0);
    vkattn_tensor *y = make(ctx, VKATTN_DTYPE_F32, 3, 1, 3, 16, 0);
    assert_int_equal(vkattn_tensor_upload(x, data, VKATTN_DTYPE_F32), VKATTN_OK);
    assert_int_equal(vkattn_tensor_upload(w_qkv, data, VKATTN_DTYPE_F32), VKATTN_OK);
    assert_int_equal(vkattn_tensor_upload(w_out, data, VKATTN_DTYPE_F32), VKATTN_OK);
    vkattn_mha_desc md = {.heads = 0};
    EXPECT_STATUS(vkattn_mha(ctx, &md, x, w_qkv, NULL, w_out, NULL, y), VKATTN_ERROR_INVALID_ARGUMENT,
                  "heads is 0");
    EXPECT_STATUS(vkattn_mha(ctx, NULL, x, w_qkv, NULL, w_out, NULL, y), VKATTN_ERROR_INVALID_ARGUMENT,
                  "desc is NULL");
    md.heads = 2;
    EXPECT_STATUS(vkattn_mha(ctx, &md, x, w_bad, NULL, w_out, NULL, y), VKATTN_ERROR_SHAPE_MISMATCH,
                  "W_qkv is 25x16");
    EXPECT_STATUS(vkattn_mha(ctx, &md, x, w_qkv, NULL, w_out, NULL, x), VKATTN_ERROR_INVALID_ARGUMENT,
                  "must not alias");
    EXPECT_STATUS(vkattn_mha(ctx, &md, x, w_qkv, NULL, w_qkv, NULL, y), VKATTN_ERROR_SHAPE_MISMATCH,
                  "W_out is 24x16");
    vkattn_tensor *mask_bad = make(ctx, VKATTN_DTYPE_F32, 2, 3, 4, 0, 0); /* T is 3 */
    md.mask = mask_bad;
    EXPECT_STATUS(vkattn_mha(ctx, &md, x, w_qkv, NULL, w_out, NULL, y), VKATTN_ERROR_SHAPE_MISMATCH,
                  "mha: mask is 3x4, must broadcast to (B, H, Tq, Tk) = (1, 2, 3, 3)");
    md.mask = y;
    EXPECT_STATUS(vkattn_mha(ctx, &md, x, w_qkv, NULL, w_out, NULL, y), VKATTN_ERROR_INVALID_ARGUMENT,
                  "must not alias");
    vkattn_tensor *mask_foreign = NULL;
    vkattn_tensor_desc mfd = {.dtype = VKATTN_DTYPE_F32, .ndim = 2, .shape = {3, 3}};
    assert_int_equal(vkattn_tensor_create(env->cpu, &mfd, &mask_foreign), VKATTN_OK);
    md.mask = mask_foreign;
    EXPECT_STATUS(vkattn_mha(ctx, &md, x, w_qkv, NULL, w_out, NULL, y), VKATTN_ERROR_INVALID_ARGUMENT,
                  "mha: mask belongs to another context");
    vkattn_tensor_destroy(mask_foreign);
    md.mask = NULL;
    assert_int_equal(vkattn_mha(ctx, &md, x, w_qkv, NULL, w_out, NULL, y), VKATTN_OK);

    /* O untouched by every failure; then a correct call writes it. */
    assert_int_equal(vkattn_tensor_download(o, out, VKATTN_DTYPE_F32), VKATTN_OK);
    for (int i = 0; i < 96; i++)
        assert_true(out[i] == -7.0f);
    d = (vkattn_attention_desc){.causal = true};
    assert_int_equal(vkattn_attention(ctx, &d, q, k, v, o), VKATTN_OK);
    assert_int_equal(vkattn_tensor_download(o, out, VKATTN_DTYPE_F32), VKATTN_OK);
    for (int i = 0; i < 96; i++)
        assert_true(out[i] != -7.0f && out[i] == out[i]);

    vkattn_tensor *all[] = {q, k, v, o, k12, k3, v_short, o_wrong, o_i32, q3, lens_f32, lens_long,
                            q_big, k_big, o_big, v_big, x, w_qkv, w_bad, w_out, y, mask_bad};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        vkattn_tensor_destroy(all[i]);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_paths),
        cmocka_unit_test(test_attention_errors),
        cmocka_unit_test(test_long_recording),
    };
    return test_run_group(tests, test_env_setup, test_env_teardown);
}
