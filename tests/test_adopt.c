/* Adoption: the application creates its own instance, device and queue (with
 * its own validation messenger), hands them to vkattn, runs a matmul and a
 * softmax, destroys the vkattn context, keeps using its device, then destroys
 * it: validation-clean throughout. */
#include "test_app.h"
#include "test_util.h"

#include <string.h>

static void test_adopted_device(void **state)
{
    (void)state;
    test_app a;
    test_app_create(&a);
    vkattn_vulkan_handles handles = test_app_handles(&a);
    test_log log = {0};
    vkattn_context_desc cd = {.adopt = &handles, .log_fn = test_logger, .log_user_data = &log};
    vkattn_context *ctx;
    assert_int_equal(vkattn_context_create(&cd, &ctx), VKATTN_OK);
    vkattn_device_info info;
    assert_int_equal(vkattn_context_info(ctx, &info), VKATTN_OK);
    assert_true(info.adopted);
    assert_int_equal(info.backend, VKATTN_BACKEND_VULKAN);

    /* A matmul and a softmax on the adopted device, checked against the CPU. */
    test_env env = {.gpu = ctx};
    vkattn_context_desc cpu_desc = {.backend = VKATTN_BACKEND_CPU};
    assert_int_equal(vkattn_context_create(&cpu_desc, &env.cpu), VKATTN_OK);
    rng rg = {11};
    int64_t as[2] = {37, 29}, bs[2] = {29, 41}, cs[2] = {37, 41};
    pair pa = pair_random(&env, VKATTN_DTYPE_F32, 2, as, &rg, -1, 1);
    pair pb = pair_random(&env, VKATTN_DTYPE_F32, 2, bs, &rg, -1, 1);
    pair pc = pair_output(&env, 2, cs);
    pair pp = pair_output(&env, 2, cs);
    assert_int_equal(vkattn_matmul(ctx, NULL, pa.gpu, pb.gpu, NULL, pc.gpu), VKATTN_OK);
    assert_int_equal(vkattn_matmul(env.cpu, NULL, pa.cpu, pb.cpu, NULL, pc.cpu), VKATTN_OK);
    vkattn_softmax_desc sd = {.causal = true};
    assert_int_equal(vkattn_softmax(ctx, &sd, pc.gpu, pp.gpu), VKATTN_OK);
    assert_int_equal(vkattn_softmax(env.cpu, &sd, pc.cpu, pp.cpu), VKATTN_OK);
    expect_close("adopted matmul", &pc, 1e-5, 1e-5, NULL);
    expect_close("adopted softmax", &pp, 2e-6, 2e-5, NULL);
    pair_destroy(&pa);
    pair_destroy(&pb);
    pair_destroy(&pc);
    pair_destroy(&pp);
    vkattn_context_destroy(env.cpu);
    vkattn_context_destroy(ctx);

    /* The application's objects are intact: its queue still works. */
    assert_int_equal(vkQueueWaitIdle(a.queue), VK_SUCCESS);
    assert_int_equal(vkDeviceWaitIdle(a.device), VK_SUCCESS);
    test_app_destroy(&a);
    assert_int_equal(a.validation_messages, 0);
    assert_int_equal(log.validation_messages, 0);
}

/* One causal attention forced onto `variant`, checked against the CPU where it
 * ran; its status. The emulated coopmat kernel (f16) needs shaderFloat16; the
 * tiled kernel (f32) requires its subgroup size where the device allows it,
 * which in an application's Vulkan 1.1 instance on a newer device needs
 * VK_EXT_subgroup_size_control enabled (validation says so otherwise): what
 * vkattn_device_features_query must ask for. */
static vkattn_status adopted_attention(test_env *env, rng *r, vkattn_fused_variant variant,
                                       vkattn_dtype dtype, int64_t T, int64_t D, double tol)
{
    int64_t shape[4] = {1, 2, T, D};
    pair q = pair_random(env, dtype, 4, shape, r, -1, 1);
    pair o = pair_output(env, 4, shape);
    vkattn_attention_desc d = {.causal = true, .path = VKATTN_PATH_FUSED,
                               .fused_variant = variant};
    vkattn_status s = vkattn_attention(env->gpu, &d, q.gpu, q.gpu, q.gpu, o.gpu);
    if (s == VKATTN_OK) {
        assert_int_equal(vkattn_attention(env->cpu, &d, q.cpu, q.cpu, q.cpu, o.cpu), VKATTN_OK);
        expect_close(vkattn_fused_variant_name(variant), &o, tol, 0.0, NULL);
    }
    pair_destroy(&q);
    pair_destroy(&o);
    return s;
}

/* The application enables what vkattn_device_features_query asks for and says
 * so: vkattn then uses it (required subgroup sizes, fp16 kernels) in the adopted
 * device; without the declaration it uses none of it. */
static void test_adopted_features(void **state)
{
    (void)state;
    for (int declared = 0; declared < 2; declared++) {
        test_app a;
        if (declared)
            test_app_create_with_features(&a);
        else
            test_app_create(&a);
        vkattn_vulkan_handles handles = test_app_handles(&a);
        test_log log = {0};
        vkattn_context_desc cd = {.adopt = &handles, .log_fn = test_logger, .log_user_data = &log};
        test_env env = {0};
        assert_int_equal(vkattn_context_create(&cd, &env.gpu), VKATTN_OK);
        vkattn_context_desc cpu_desc = {.backend = VKATTN_BACKEND_CPU};
        assert_int_equal(vkattn_context_create(&cpu_desc, &env.cpu), VKATTN_OK);
        vkattn_device_info info;
        assert_int_equal(vkattn_context_info(env.gpu, &info), VKATTN_OK);
        bool size_control = a.features.subgroup_size_control.subgroupSizeControl;
        bool float16 = a.features.float16_int8.shaderFloat16;
        assert_int_equal(info.subgroup_size_required, declared && size_control);
        /* what vkattn never enables in an adopted device reads false */
        assert_false(info.pipeline_statistics);
        assert_false(info.bf16_cooperative_matrix);
        rng r = {12};
        vkattn_status s = adopted_attention(&env, &r, VKATTN_FUSED_COOPMAT_EMULATED,
                                            VKATTN_DTYPE_F16, 21, 32, 2e-3);
        assert_int_equal(s, declared && float16 ? VKATTN_OK : VKATTN_ERROR_UNSUPPORTED);
        if (s != VKATTN_OK)
            assert_non_null(strstr(vkattn_last_error(env.gpu), "shaderFloat16"));
        assert_int_equal(adopted_attention(&env, &r, VKATTN_FUSED_TILED, VKATTN_DTYPE_F32, 37,
                                           24, 1e-5),
                         VKATTN_OK);
        vkattn_context_destroy(env.cpu);
        vkattn_context_destroy(env.gpu);
        assert_int_equal(vkDeviceWaitIdle(a.device), VK_SUCCESS);
        test_app_destroy(&a);
        assert_int_equal(a.validation_messages, 0);
        assert_int_equal(log.validation_messages, 0);
    }
    assert_int_equal(vkattn_device_features_query(NULL, NULL, NULL, NULL),
                     VKATTN_ERROR_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_adopted_device),
                                       cmocka_unit_test(test_adopted_features)};
    return test_run_group(tests, NULL, NULL);
}
