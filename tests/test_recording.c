/* Recording into the application's command buffer: the application (with its
 * own instance, device, validation with synchronization checks, and messenger)
 * records its own commands around vkattn's (attention, and the mha layer),
 * submits, and reads the results with its own copy. Two recordings stay
 * unreleased at once, the second growing the scratch memory the first still
 * uses (the unfused path's scores, the f32 output that a 16-bit output is
 * narrowed from, and the layer's q, k, v and head outputs). Validation-clean,
 * and every result matches the CPU reference. */
#include "test_app.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The application's own host-visible buffer, for reading results back itself. */
typedef struct readback {
    VkBuffer buffer;
    VkDeviceMemory memory;
    float *mapped;
} readback;

static void readback_create(test_app *a, VkDeviceSize size, readback *out)
{
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = size,
                             .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT};
    assert_int_equal(vkCreateBuffer(a->device, &bi, NULL, &out->buffer), VK_SUCCESS);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(a->device, out->buffer, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(a->physical_device, &mp);
    const VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < mp.memoryTypeCount && type == UINT32_MAX; i++)
        if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want)
            type = i;
    assert_true(type != UINT32_MAX);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = req.size,
                               .memoryTypeIndex = type};
    assert_int_equal(vkAllocateMemory(a->device, &ai, NULL, &out->memory), VK_SUCCESS);
    assert_int_equal(vkBindBufferMemory(a->device, out->buffer, out->memory, 0), VK_SUCCESS);
    assert_int_equal(vkMapMemory(a->device, out->memory, 0, VK_WHOLE_SIZE, 0, (void **)&out->mapped),
                     VK_SUCCESS);
}

static void readback_destroy(test_app *a, readback *r)
{
    vkDestroyBuffer(a->device, r->buffer, NULL);
    vkFreeMemory(a->device, r->memory, NULL);
}

static void barrier(VkCommandBuffer cb, VkPipelineStageFlags src_stage, VkAccessFlags src,
                    VkPipelineStageFlags dst_stage, VkAccessFlags dst)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = src,
                          .dstAccessMask = dst};
    vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* One problem: inputs in vkattn tensors (GPU and CPU), the output read back.
 * Attention's inputs are Q, K and V; the layer's X, W_qkv, b_qkv, W_out and
 * b_out. */
typedef struct problem {
    bool layer;
    vkattn_dtype compute; /* the layer's compute dtype (F32 by default) */
    pair in[5];
    int inputs;
    pair o;
    vkattn_tensor *o16; /* an F16 output on the GPU instead of o.gpu (NULL: F32) */
    readback back;
    VkCommandBuffer cb;
    vkattn_recording *recording;
} problem;

/* The problem's op (attention by `path`, causal; or the layer with 2 heads)
 * on one backend's tensors. */
static vkattn_status run_op(const problem *p, vkattn_context *ctx, bool gpu,
                            vkattn_attention_path path, vkattn_tensor *out)
{
    const vkattn_tensor *in[5];
    for (int i = 0; i < p->inputs; i++)
        in[i] = gpu ? p->in[i].gpu : p->in[i].cpu;
    if (p->layer) {
        vkattn_mha_desc d = {.heads = 2, .causal = true, .path = path,
                             .compute_dtype = p->compute};
        return vkattn_mha(ctx, &d, in[0], in[1], in[2], in[3], in[4], out);
    }
    vkattn_attention_desc d = {.causal = true, .path = path};
    return vkattn_attention(ctx, &d, in[0], in[1], in[2], out);
}

/* Random inputs: attention's Q, K, V (1, 2, T, D); or, with `layer`, the
 * layer's X (1, T, D) and its weights and biases for 2 heads of D / 2. */
static void make_inputs(test_env *env, problem *p, int64_t T, int64_t D, rng *r)
{
    if (!p->layer) {
        int64_t shape[4] = {1, 2, T, D};
        for (p->inputs = 0; p->inputs < 3; p->inputs++)
            p->in[p->inputs] = pair_random(env, VKATTN_DTYPE_F32, 4, shape, r, -1, 1);
        p->o = pair_output(env, 4, shape);
        return;
    }
    const int64_t x[3] = {1, T, D}, w_qkv[2] = {3 * D, D}, b_qkv[1] = {3 * D}, w_out[2] = {D, D},
                  b_out[1] = {D};
    const struct { int ndim; const int64_t *shape; } in[5] = {
        {3, x}, {2, w_qkv}, {1, b_qkv}, {2, w_out}, {1, b_out}};
    for (p->inputs = 0; p->inputs < 5; p->inputs++)
        p->in[p->inputs] = pair_random(env, VKATTN_DTYPE_F32, in[p->inputs].ndim,
                                       in[p->inputs].shape, r, -0.5, 0.5);
    p->o = pair_output(env, 3, x);
}

/* Records into a new command buffer of the application: its own fill of O, the
 * entry barrier, vkattn's op (by `path`, into an F16 O with half_output), the
 * exit barrier, its own copy of O into its read-back buffer. */
static void record_problem(test_app *a, test_env *env, problem *p, int64_t T, int64_t D,
                           vkattn_attention_path path, bool half_output, rng *r)
{
    make_inputs(env, p, T, D, r);
    if (half_output) {
        vkattn_tensor_desc hd = vkattn_tensor_get_desc(p->o.gpu);
        hd.dtype = VKATTN_DTYPE_F16;
        assert_int_equal(vkattn_tensor_create(env->gpu, &hd, &p->o16), VKATTN_OK);
    }
    vkattn_tensor *out = half_output ? p->o16 : p->o.gpu;
    VkBuffer o_buffer;
    VkDeviceSize o_size;
    assert_int_equal(vkattn_tensor_vulkan_buffer(out, &o_buffer, &o_size), VKATTN_OK);
    readback_create(a, o_size, &p->back);

    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = a->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    assert_int_equal(vkAllocateCommandBuffers(a->device, &ai, &p->cb), VK_SUCCESS);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    assert_int_equal(vkBeginCommandBuffer(p->cb, &bi), VK_SUCCESS);
    /* The application's own work on the output buffer first... */
    vkCmdFillBuffer(p->cb, o_buffer, 0, VK_WHOLE_SIZE, 0x7fc00000u /* NaN */);
    barrier(p->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    /* ...then vkattn's, which overwrites it... */
    assert_int_equal(vkattn_recording_begin(env->gpu, p->cb), VKATTN_OK);
    float scratch[4];
    assert_int_equal(vkattn_tensor_download(out, scratch, VKATTN_DTYPE_F32),
                     VKATTN_ERROR_INVALID_ARGUMENT);
    assert_int_equal(vkattn_synchronize(env->gpu), VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_status s = run_op(p, env->gpu, true, path, out);
    if (s != VKATTN_OK)
        fail_msg("%s", vkattn_last_error(env->gpu));
    assert_int_equal(vkattn_recording_end(env->gpu, &p->recording), VKATTN_OK);
    /* ...then the application's copy of the result. */
    barrier(p->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    VkBufferCopy region = {0, 0, o_size};
    vkCmdCopyBuffer(p->cb, o_buffer, p->back.buffer, 1, &region);
    barrier(p->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    assert_int_equal(vkEndCommandBuffer(p->cb), VK_SUCCESS);

    assert_int_equal(run_op(p, env->cpu, false, path, p->o.cpu), VKATTN_OK);
}

static void check_problem(test_app *a, test_env *env, problem *p, const char *name)
{
    /* What the application copied out must match the reference. */
    float *want = malloc(p->o.count * sizeof *want), *got = p->back.mapped;
    assert_non_null(want);
    assert_int_equal(vkattn_tensor_download(p->o.cpu, want, VKATTN_DTYPE_F32), VKATTN_OK);
    float tolerance = 2e-5f;
    if (p->o16) { /* widened through an F16 tensor of the CPU backend */
        vkattn_tensor_desc hd = vkattn_tensor_get_desc(p->o16);
        vkattn_tensor *widen;
        assert_int_equal(vkattn_tensor_create(env->cpu, &hd, &widen), VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(widen, p->back.mapped, VKATTN_DTYPE_F16), VKATTN_OK);
        got = malloc(p->o.count * sizeof *got);
        assert_non_null(got);
        assert_int_equal(vkattn_tensor_download(widen, got, VKATTN_DTYPE_F32), VKATTN_OK);
        vkattn_tensor_destroy(widen);
        tolerance = 2e-5f + 0x1p-11f; /* one f16 rounding, relative */
    }
    /* A 16-bit compute dtype: q, k, v and o rounded from f32 here and from
     * double there may land a spacing apart, and the fused kernel rounds P */
    if (p->compute != VKATTN_DTYPE_F32)
        tolerance += 8 * 0x1p-11f;
    for (size_t i = 0; i < p->o.count; i++)
        if (!(fabsf(got[i] - want[i]) <= tolerance * fmaxf(1.0f, fabsf(want[i]))))
            fail_msg("%s: element %zu is %g, reference %g", name, i, (double)got[i],
                     (double)want[i]);
    if (got != p->back.mapped)
        free(got);
    free(want);
    vkattn_tensor_destroy(p->o16);
    vkattn_recording_release(p->recording);
    vkFreeCommandBuffers(a->device, a->pool, 1, &p->cb);
    readback_destroy(a, &p->back);
    for (int i = 0; i < p->inputs; i++)
        pair_destroy(&p->in[i]);
    pair_destroy(&p->o);
}

static void test_recording(void **state)
{
    (void)state;
    test_app a;
    test_app_create(&a);
    vkattn_vulkan_handles handles = test_app_handles(&a);
    test_log log = {0};
    test_env env = {0};
    vkattn_context_desc cd = {.adopt = &handles, .log_fn = test_logger, .log_user_data = &log};
    assert_int_equal(vkattn_context_create(&cd, &env.gpu), VKATTN_OK);
    vkattn_context_desc cpu = {.backend = VKATTN_BACKEND_CPU};
    assert_int_equal(vkattn_context_create(&cpu, &env.cpu), VKATTN_OK);
    rng r = {51};

    /* Command buffers recorded before any runs: the second, larger unfused
     * problem grows the scratch scores buffer the first still uses; the fourth,
     * larger F16 output grows the f32 output scratch the third still uses; the
     * sixth reuses the fifth's at the same size, so the two command buffers
     * write one scratch buffer, which vkattn orders with a barrier of its own
     * (an application's buffer barriers would cover its own tensors only). The
     * results are checked; Debian 12's validation layer (1.3.239) checks
     * synchronization within a command buffer, not across them, so the ordering
     * itself is not. The layer's four recordings follow: the second, larger
     * and unfused, grows the scratch of q, k, v and the heads' output that the
     * first still uses; the third writes an F16 Y; the fourth, larger again,
     * keeps q, k, v and o in f16 (compute_dtype: 16-bit scratch of their own,
     * made while the first three still hold theirs) and writes an F16 Y. */
    problem small = {0}, large = {0}, fused = {0}, half_small = {0}, half_large = {0},
            half_again = {0}, layer = {.layer = true}, layer_large = {.layer = true},
            layer_half = {.layer = true},
            layer_compute = {.layer = true, .compute = VKATTN_DTYPE_F16};
    record_problem(&a, &env, &small, 40, 16, VKATTN_PATH_UNFUSED, false, &r);
    record_problem(&a, &env, &large, 150, 16, VKATTN_PATH_UNFUSED, false, &r);
    record_problem(&a, &env, &fused, 77, 32, VKATTN_PATH_AUTO, false, &r);
    record_problem(&a, &env, &half_small, 9, 7, VKATTN_PATH_AUTO, true, &r);
    record_problem(&a, &env, &half_large, 61, 16, VKATTN_PATH_UNFUSED, true, &r);
    record_problem(&a, &env, &half_again, 61, 16, VKATTN_PATH_UNFUSED, true, &r);
    record_problem(&a, &env, &layer, 20, 16, VKATTN_PATH_AUTO, false, &r);
    record_problem(&a, &env, &layer_large, 70, 32, VKATTN_PATH_UNFUSED, false, &r);
    record_problem(&a, &env, &layer_half, 33, 16, VKATTN_PATH_AUTO, true, &r);
    record_problem(&a, &env, &layer_compute, 45, 16, VKATTN_PATH_AUTO, true, &r);
    VkCommandBuffer cbs[10] = {small.cb,      large.cb,       fused.cb,
                               half_small.cb, half_large.cb,  half_again.cb,
                               layer.cb,      layer_large.cb, layer_half.cb,
                               layer_compute.cb};
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .commandBufferCount = 10,
                       .pCommandBuffers = cbs};
    assert_int_equal(vkQueueSubmit(a.queue, 1, &si, VK_NULL_HANDLE), VK_SUCCESS);
    assert_int_equal(vkQueueWaitIdle(a.queue), VK_SUCCESS);
    check_problem(&a, &env, &small, "small unfused");
    check_problem(&a, &env, &large, "large unfused");
    check_problem(&a, &env, &fused, "fused");
    check_problem(&a, &env, &half_small, "f16 output, fused");
    check_problem(&a, &env, &half_large, "f16 output, unfused, larger");
    check_problem(&a, &env, &half_again, "f16 output, unfused, the same size again");
    check_problem(&a, &env, &layer, "mha");
    check_problem(&a, &env, &layer_large, "mha, unfused, larger");
    check_problem(&a, &env, &layer_half, "mha, f16 output");
    check_problem(&a, &env, &layer_compute, "mha, f16 compute and output, larger");

    /* vkattn's own submissions work again afterwards. */
    int64_t shape[4] = {1, 1, 9, 8};
    pair q = pair_random(&env, VKATTN_DTYPE_F32, 4, shape, &r, -1, 1);
    pair o = pair_output(&env, 4, shape);
    assert_int_equal(vkattn_attention(env.gpu, NULL, q.gpu, q.gpu, q.gpu, o.gpu), VKATTN_OK);
    assert_int_equal(vkattn_attention(env.cpu, NULL, q.cpu, q.cpu, q.cpu, o.cpu), VKATTN_OK);
    expect_close("after recordings", &o, 2e-5, 0, NULL);
    pair_destroy(&q);
    pair_destroy(&o);
    assert_int_equal(vkattn_recording_end(env.gpu, &small.recording), VKATTN_ERROR_INVALID_ARGUMENT);

    vkattn_context_destroy(env.cpu);
    vkattn_context_destroy(env.gpu);
    assert_int_equal(vkDeviceWaitIdle(a.device), VK_SUCCESS);
    test_app_destroy(&a);
    assert_int_equal(a.validation_messages, 0);
    assert_int_equal(log.validation_messages, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_recording)};
    return test_run_group(tests, NULL, NULL);
}
