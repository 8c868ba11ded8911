/* Head transpose (B, T, H, D) <-> (B, H, T, D) on the GPU against the CPU reference. */
#include "test_util.h"

#include <stdio.h>

static void run_case(test_env *env, const int64_t shape[4], vkattn_dtype dtype, rng *r)
{
    char name[96];
    snprintf(name, sizeof name, "transpose %lldx%lldx%lldx%lld %s", (long long)shape[0],
             (long long)shape[1], (long long)shape[2], (long long)shape[3],
             dtype == VKATTN_DTYPE_F16 ? "f16" : dtype == VKATTN_DTYPE_BF16 ? "bf16" : "f32");
    int64_t out_shape[4] = {shape[0], shape[2], shape[1], shape[3]};
    pair x = pair_random(env, dtype, 4, shape, r, -10.f, 10.f);
    pair y = pair_output(env, 4, out_shape);
    assert_int_equal(vkattn_head_transpose(env->gpu, x.gpu, y.gpu), VKATTN_OK);
    assert_int_equal(vkattn_head_transpose(env->cpu, x.cpu, y.cpu), VKATTN_OK);
    /* A copy: exact. */
    expect_close(name, &y, 1e-30, 0.0, NULL);

    /* Transposing back gives the input. */
    pair back = pair_output(env, 4, shape);
    assert_int_equal(vkattn_head_transpose(env->gpu, y.gpu, back.gpu), VKATTN_OK);
    float got[4096];
    if (back.count <= 4096) {
        assert_int_equal(vkattn_tensor_download(back.gpu, got, VKATTN_DTYPE_F32), VKATTN_OK);
        for (size_t i = 0; i < back.count; i++)
            assert_true(got[i] == x.host[i]);
    }
    pair_destroy(&back);
    pair_destroy(&x);
    pair_destroy(&y);
}

static void test_shapes(void **state)
{
    test_env *env = *state;
    rng r = {5};
    static const int64_t shapes[][4] = {
        {1, 1, 1, 1}, {1, 1, 8, 64}, {2, 7, 3, 5}, {3, 1, 4, 40}, {1, 33, 12, 80},
        {4, 9, 2, 1}, {2, 128, 8, 64}, {1, 1000, 3, 7},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        run_case(env, shapes[i], VKATTN_DTYPE_F32, &r);
        run_case(env, shapes[i], VKATTN_DTYPE_F16, &r);
        run_case(env, shapes[i], VKATTN_DTYPE_BF16, &r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_shapes)};
    return test_run_group(tests, test_env_setup, test_env_teardown);
}
