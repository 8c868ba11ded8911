/* The fused kernels' planners on GPUs this machine does not have: a context
 * filled in as the NVIDIA H200 reported itself (bench/results/nvidia-h200:
 * subgroups of 32 that can be required, 48 KiB of shared memory,
 * VK_NV_cooperative_matrix's 16x16x16 f16 shapes), with no Vulkan device
 * behind it, asked for the bench's calls. On lavapipe the planners take their
 * CPU branches; these are the branches a GPU takes.
 *  - Replay: AUTO's choice and the pipeline's specialization constants for
 *    each call are those the H200 compiled and timed at its fourth check
 *    (34dc617, fourth-check/profile.txt's "pipeline statistics" lines). A
 *    planner change that moves a measured plan fails here, so that the next
 *    GPU check's figures are not read against a different kernel unawares:
 *    update the table with the reason. Likewise the tiles of each coopmat
 *    setting of the check's settings sweep (bench/tune_sweep.py), the
 *    softmax in registers on the accumulator layout the H200's probe read.
 *  - The layer in f16 throughout: its attention step the coopmat kernel, its
 *    output projection the coopmat matmul (in f32: the tiled kernel, the
 *    scalar matmul, as the H200 ran them).
 *  - Every head size up to 256, GQA, Dv != D and decoding get a coopmat plan
 *    within the limits of the H200 and, as their drivers list themselves, an
 *    AMD RDNA3 and an Intel Alchemist GPU (KHR builds, other subgroup sizes
 *    and matrix shapes); on Alchemist only to 120 (SIMD8: O's rows do not
 *    fit a lane's registers past that), refused beyond with the reason.
 *  - Subgroup sizes pinned (issue 10's point 2) on the three GPUs, with and
 *    without subgroup size control: a size the device allows, or none.
 *  - The workgroup-scope kernel on a device listing several workgroup sizes
 *    for VK_NV_cooperative_matrix2's products (synthetic: no GPU has reported
 *    them to vkattn yet): the largest where its tiles fit, the next listed
 *    size down where they do not, the tuned size or a refusal naming the
 *    listed ones. */
#define _POSIX_C_SOURCE 200809L /* unsetenv */
#include "coopmat_layout.h"
#include "internal.h"
#include "ops/attention_fused.h"
#include "ops/tuning.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static vkattn_context ctx; /* large: not on the stack */

/* A GPU as its driver reports itself, for what the planners read. */
typedef struct synthetic_gpu {
    const char *name;
    uint32_t vendor_id, subgroup_size, subgroup_min, subgroup_max, shared_memory_bytes;
    bool khr; /* its matrices through VK_KHR_cooperative_matrix */
    uint32_t shape_count;
    coopmat_shape shapes[4]; /* f16 x f16 + f32, subgroup scope */
    /* The coopmat kernel's largest head sizes there: O's rows stay in a
     * subgroup's registers, so SIMD8 (8 rows on 8 lanes, a lane a whole
     * row of O) runs out past 120 columns; there it refuses, naming the
     * registers, and AUTO takes the tiled kernel. */
    int64_t largest_head;
} synthetic_gpu;

/* The H200 as `vkattn devices` and the context's log reported it. */
static const synthetic_gpu nvidia_h200 = {
    "NVIDIA H200 (synthetic)", 0x10de, 32, 32, 32, 49152, false, 3,
    {{16, 8, 16}, {16, 8, 8}, {16, 16, 16}}, 256};
/* As their drivers list them (no such device has run vkattn): RDNA3's WMMA
 * through RADV, wave32 or wave64; Alchemist's DPAS through ANV, SIMD8 to 32. */
static const synthetic_gpu amd_rdna3 = {
    "AMD Radeon RX 7900 XTX (synthetic)", 0x1002, 64, 32, 64, 65536, true, 1, {{16, 16, 16}}, 256};
static const synthetic_gpu intel_alchemist = {
    "Intel Arc A770 (synthetic)", 0x8086, 32, 8, 32, 65536, true, 1, {{8, 8, 16}}, 120};

static void gpu(const synthetic_gpu *g)
{
    memset(&ctx, 0, sizeof ctx);
    vkattn_device_info *info = &ctx.info;
    snprintf(info->name, sizeof info->name, "%s", g->name);
    info->type = VKATTN_DEVICE_TYPE_DISCRETE_GPU;
    info->vendor_id = g->vendor_id;
    info->subgroup_size = g->subgroup_size;
    info->subgroup_arithmetic = true;
    info->shared_memory_bytes = g->shared_memory_bytes;
    info->max_workgroup_invocations = 1024;
    device_caps *caps = &ctx.vk.caps;
    caps->float16 = true;
    caps->subgroup_size_control = true;
    caps->subgroup_min = g->subgroup_min;
    caps->subgroup_max = g->subgroup_max;
    caps->memory_model = true;
    caps->coopmat = true;
    caps->coopmat_khr = g->khr;
    caps->coopmat_shape_count = g->shape_count;
    memcpy(caps->coopmat_shapes, g->shapes, sizeof g->shapes);
    ctx.vk.enabled = *caps;
    ctx.vk.subgroup_shuffle = ctx.vk.subgroup_vote = true;
    ctx.vk.prefer_texels = false; /* as on every GPU (device_query.c) */
    ctx.vk.texel_f32 = ctx.vk.texel_f16 = ctx.vk.texel4_f32 = ctx.vk.texel4_f16 = true;
    ctx.vk.texel_u16 = ctx.vk.texel4_u16 = true;
    ctx.vk.max_texel_elements = 1u << 27; /* maxTexelBufferElements: NVIDIA's 2^27 */
    ctx.vk.max_workgroup_count[0] = 0x7fffffff;
    ctx.vk.max_workgroup_count[1] = ctx.vk.max_workgroup_count[2] = 65535;
}

static void h200(void) { gpu(&nvidia_h200); }

static void tune(const char *tuning)
{
    vkattn_context_desc desc = {.tuning = tuning};
    tuning_init(&ctx, &desc);
}

static vkattn_tensor q, k, v;

static attention_call call(int64_t B, int64_t H, int64_t Hkv, int64_t Tq, int64_t Tk, int64_t D,
                           vkattn_dtype dtype, bool causal)
{
    q.dtype = k.dtype = v.dtype = dtype;
    /* Texel views, as a GPU's tensors have (any handle: nothing uses them). */
    vkattn_tensor *all[] = {&q, &k, &v};
    for (int i = 0; i < 3; i++)
        all[i]->texels = all[i]->texels4 = all[i]->bits = all[i]->bits4 =
            (VkBufferView)(uintptr_t)0x1000;
    attention_call c = {
        .dims = {.B = B, .H = H, .Hkv = Hkv, .Tq = Tq, .Tk = Tk, .D = D, .Dv = D,
                 .causal = causal, .fixed_q_offset = true, .q_offset = Tk - Tq,
                 .scale = 1.0f, .var = {.window_left = -1, .window_right = -1}},
        .q = &q, .k = &k, .v = &v,
    };
    return c;
}

/* The H200's 16x16 f32 accumulator layout as its probe logged it (invocation
 * 0: (0,0) (0,1) (0,8) (0,9) (8,0) (8,1) (8,8) (8,9), ...), read for the
 * softmax in registers as the context does at its start. */
static void h200_accumulator_layout(void)
{
    static coopmat_layout l;
    l.rows = l.cols = 16, l.lanes = 32, l.elements = 8;
    for (uint32_t lane = 0; lane < 32; lane++)
        for (uint32_t k = 0; k < 8; k++)
            l.cell[lane * 8 + k] = (lane / 4 + 8 * (k / 4)) * 16 + 2 * (lane % 4) + k % 2 +
                                   8 * (k / 2 % 2);
    coopmat_layout_traits t = coopmat_layout_analyze(&l);
    uint32_t table = 0;
    assert_true(t.bijective && t.row_lanes == 4 && t.lane_rows == 2);
    assert_true(coopmat_layout_slot_table(&l, t.lane_rows, &table));
    ctx.vk.coopmat_layouts[0] = (coopmat_register_layout_state){
        .read = 1, .shape = {16, 16, 16}, .row_cluster = t.row_lanes, .lane_rows = t.lane_rows,
        .slot_table = table};
}

static const fused_variant_row *row_of(vkattn_fused_variant v)
{
    const fused_variant_row *rows[] = {&fused_rows_variant, &fused_tiled_variant,
                                       &fused_decode_variant, &fused_coopmat_variant,
                                       &fused_coopmat_workgroup_variant};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i]->variant == v)
            return rows[i];
    fail_msg("no row for variant %d", (int)v);
    return NULL;
}

/* The variant's plan for the call, or fails with the planner's reason. */
static fused_plan plan_of(vkattn_fused_variant v, const attention_call *c, const char *what)
{
    fused_plan plan;
    memset(&plan, 0, sizeof plan);
    char why[512] = "";
    if (!row_of(v)->plan(&ctx, c, &plan, why, sizeof why))
        fail_msg("%s: %s refused: %s", what, row_of(v)->name, why);
    return plan;
}

/* The pipeline key AUTO's (or the forced variant's) plan dispatches. */
static pipeline_key key_of(attention_call *c, const char *what, vkattn_fused_variant *variant)
{
    vkattn_attention_choice choice = {0};
    char why[512] = "";
    if (!vk_attention_fused_choice(&ctx, c, &choice, why, sizeof why))
        fail_msg("%s: no fused variant: %s", what, why);
    *variant = choice.fused_variant;
    fused_plan plan = plan_of(choice.fused_variant, c, what);
    vk_dispatch d;
    memset(&d, 0, sizeof d);
    row_of(choice.fused_variant)->specialize(c, &plan, choice.kv_splits > 1, &d);
    return d.key;
}

/* One call of the fourth check's bench and what the H200 compiled for it. */
typedef struct replayed {
    const char *what;
    int64_t B, H, Hkv, Tq, Tk, D;
    vkattn_dtype dtype;
    bool causal;
    vkattn_fused_variant forced;   /* AUTO, or the bench's forced variant */
    vkattn_fused_variant expected; /* the variant that ran */
    uint32_t spec[22];             /* its constants 0-21 as logged */
} replayed;

#define F16 VKATTN_DTYPE_F16
#define BF16 VKATTN_DTYPE_BF16
#define F32 VKATTN_DTYPE_F32
#define AUTO VKATTN_FUSED_AUTO
#define COOPMAT VKATTN_FUSED_COOPMAT
#define TILED VKATTN_FUSED_TILED
#define DECODE VKATTN_FUSED_DECODE

static const replayed fourth_check[] = {
    {"f16 causal prefill D=128", 4, 16, 16, 4096, 4096, 128, F16, true, AUTO, COOPMAT,
     {128, 64, 48, 128, 128, 1, 0, 16, 16, 16, 32, 2, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1}},
    {"f16 causal prefill D=64", 4, 16, 16, 4096, 4096, 64, F16, true, AUTO, COOPMAT,
     {128, 64, 64, 64, 64, 1, 0, 16, 16, 16, 32, 2, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1}},
    {"f32 causal prefill D=128", 4, 16, 16, 4096, 4096, 128, F32, true, AUTO, TILED,
     {128, 8, 16, 128, 128, 1, 0, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
    {"f32 causal prefill D=64", 4, 16, 16, 4096, 4096, 64, F32, true, AUTO, TILED,
     {128, 4, 16, 64, 64, 1, 0, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
    {"bf16 causal prefill D=128", 4, 16, 16, 4096, 4096, 128, BF16, true, AUTO, COOPMAT,
     {128, 64, 48, 128, 128, 1, 0, 16, 16, 16, 32, 2, 7, 1, 1, 0, 0, 1, 0, 0, 0, 1}},
    {"f16 decode Tk=8192", 1, 32, 8, 1, 8192, 128, F16, false, AUTO, DECODE,
     {128, 32, 4, 128, 128, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
    {"f16 decode Tk=8192, tiled", 1, 32, 8, 1, 8192, 128, F16, false, TILED, TILED,
     {32, 8, 16, 128, 128, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
    {"f32 causal T=2048 D=64", 1, 8, 8, 2048, 2048, 64, F32, true, AUTO, TILED,
     {128, 4, 16, 64, 64, 1, 1, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
    {"f32 T=2048 D=64", 1, 8, 8, 2048, 2048, 64, F32, false, AUTO, TILED,
     {128, 4, 16, 64, 64, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
    {"f16 causal T=2048 D=64", 1, 8, 8, 2048, 2048, 64, F16, true, AUTO, COOPMAT,
     {128, 64, 64, 64, 64, 1, 1, 16, 16, 16, 32, 2, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1}},
    {"f16 T=2048 D=64", 1, 8, 8, 2048, 2048, 64, F16, false, AUTO, COOPMAT,
     {128, 64, 64, 64, 64, 0, 1, 16, 16, 16, 32, 2, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1}},
};

/* The GPU check's settings sweep (bench/tune_sweep.py's coopmat settings for
 * the f16 causal prefill, B=4 H=16 T=4096) planned on the H200: the tiles the
 * fourth check's tune.md measured for the settings it ran, those the H200
 * NOTES and tune_sweep.py's comments give the two-buffer settings, and what
 * the others get today. */
typedef struct swept {
    int64_t D;
    const char *tuning;
    uint32_t rows, keys, stages, buffers;
} swept;

static const swept sweep[] = {
    {128, NULL, 64, 48, 2, 1},
    {128, "coopmat.softmax=2,coopmat.q=2,coopmat.stages=1", 64, 32, 1, 1},
    {128, "coopmat.softmax=2,coopmat.buffers=2", 64, 32, 2, 2},
    {128, "coopmat.softmax=2,coopmat.subgroups=8", 128, 64, 2, 1},
    {128, "coopmat.softmax=2", 64, 64, 1, 1},
    {128, "coopmat.keys=32", 64, 32, 2, 1},
    {128, "coopmat.subgroups=8", 128, 32, 2, 1},
    {128, "coopmat.buffers=2", 64, 16, 2, 2},
    {128, "coopmat.buffers=2,coopmat.subgroups=3", 48, 32, 2, 2},
    {128, "coopmat.softmax=2,coopmat.q=2", 64, 32, 2, 1},
    {64, NULL, 64, 64, 2, 1},
    {64, "coopmat.buffers=2", 64, 48, 2, 2},
    {64, "coopmat.rows=2", 128, 32, 2, 1},
    {64, "coopmat.softmax=2,coopmat.rows=2,coopmat.q=2", 128, 64, 1, 1},
    {64, "coopmat.softmax=2", 64, 64, 2, 1},
};

static void test_sweep_settings(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof sweep / sizeof sweep[0]; i++) {
        const swept *w = &sweep[i];
        h200();
        h200_accumulator_layout();
        tune(w->tuning);
        attention_call c = call(4, 16, 16, 4096, 4096, w->D, F16, true);
        char what[128];
        snprintf(what, sizeof what, "D=%lld %s", (long long)w->D, w->tuning ? w->tuning : "");
        fused_plan p = plan_of(COOPMAT, &c, what);
        if (p.rows_per_workgroup != w->rows || p.bc != w->keys || p.stages != w->stages ||
            p.buffers != w->buffers)
            fail_msg("%s: %u rows x %u keys, %u stages, %u buffers (the sweep expects %u x %u, "
                     "%u, %u)", what, p.rows_per_workgroup, p.bc, p.stages, p.buffers, w->rows,
                     w->keys, w->stages, w->buffers);
        /* The softmax in registers takes the layout the probe read. */
        bool registers = w->tuning && strstr(w->tuning, "softmax=2");
        assert_int_equal(p.row_cluster, registers ? 4 : 0);
        if (registers)
            assert_int_equal(p.slot_table, 0x5500);
    }
    tune(NULL);
}

/* Two buffers with bf16 K or V reduce the next tile's exponents from the
 * registers its loads land in, so they take two stages: the kernel stages
 * bf16 through registers only then, and nothing in the shader stops the
 * other combination (it would stage unconverted bf16), so the planner must. */
static void test_two_buffers_bf16_stages(void **state)
{
    (void)state;
    h200();
    /* (call() sets the one set of tensors' dtype: a call is used before the next.) */
    attention_call bf16 = call(4, 16, 16, 4096, 4096, 128, BF16, true);
    tune("coopmat.buffers=2");
    fused_plan p = plan_of(COOPMAT, &bf16, "bf16, two buffers");
    assert_int_equal(p.buffers, 2);
    assert_int_equal(p.stages, 2);
    tune("coopmat.buffers=2,coopmat.stages=1");
    attention_call f16 = call(4, 16, 16, 4096, 4096, 128, F16, true);
    p = plan_of(COOPMAT, &f16, "f16, two buffers, one stage");
    assert_int_equal(p.buffers, 2);
    assert_int_equal(p.stages, 1);
    bf16 = call(4, 16, 16, 4096, 4096, 128, BF16, true);
    fused_plan none;
    memset(&none, 0, sizeof none);
    char why[512] = "";
    assert_false(fused_coopmat_variant.plan(&ctx, &bf16, &none, why, sizeof why));
    if (!strstr(why, "two buffers only in two stages"))
        fail_msg("bf16 with two buffers and one stage: refused with \"%s\"", why);
    tune(NULL);
}

/* Constants added since the fourth check, at the values that leave its
 * kernels as they were: the coopmat kernel's BUFFERS (22) one buffer, and
 * BF16_MATRICES (23) off; every other kernel's unused ones 0. */
static uint32_t added_since(vkattn_fused_variant v, uint32_t id)
{
    return v == COOPMAT && id == 22 ? 1 : 0;
}

static void test_fourth_check_replayed(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof fourth_check / sizeof fourth_check[0]; i++) {
        const replayed *r = &fourth_check[i];
        h200();
        attention_call c = call(r->B, r->H, r->Hkv, r->Tq, r->Tk, r->D, r->dtype, r->causal);
        c.path = VKATTN_PATH_FUSED;
        c.fused_variant = r->forced;
        vkattn_fused_variant variant;
        pipeline_key key = key_of(&c, r->what, &variant);
        if (variant != r->expected)
            fail_msg("%s: AUTO took %s, the H200 ran %s", r->what, row_of(variant)->name,
                     row_of(r->expected)->name);
        /* The NV build of the coopmat kernel, as NVIDIA's default. */
        shader_id shader = variant == COOPMAT ? SHADER_ATTENTION_COOPMAT
                           : variant == TILED ? SHADER_ATTENTION_TILED
                                              : SHADER_ATTENTION_DECODE;
        assert_int_equal(key.shader, shader);
        assert_int_equal(key.subgroup_size, 32);
        assert_int_equal(key.spec_count, ATTENTION_SPEC_COUNT);
        bool same = true;
        for (uint32_t id = 0; id < key.spec_count; id++)
            same &= key.spec[id] == (id < 22 ? r->spec[id] : added_since(variant, id));
        if (!same) {
            char got[256] = "";
            for (uint32_t id = 0, at = 0; id < key.spec_count && at < sizeof got; id++)
                at += (uint32_t)snprintf(got + at, sizeof got - at, "%s%u", id ? "," : "",
                                         key.spec[id]);
            fail_msg("%s: %s specialized as [%s], not as the H200 ran it", r->what,
                     row_of(variant)->name, got);
        }
    }
}

/* The layer in f16 throughout (vkattn_mha with compute_dtype F16: the --gpu
 * row "mha auto compute=f16", B1 T1024 C1024 H16 Dh64, causal). Its attention
 * step, over BSHD views of q, k and v with q_offset 0, takes the coopmat
 * kernel on the H200 where its f32 q, k and v took the tiled one (the fourth
 * check's profile: attention_tiled in both layer rows); its output projection,
 * f16 o times f16 W_out, the coopmat matmul, where f32 o took the scalar one. */
static void test_layer_in_f16(void **state)
{
    (void)state;
    h200();
    static const struct { vkattn_dtype dtype; vkattn_fused_variant expected; } steps[] = {
        {F32, TILED}, {F16, COOPMAT}};
    for (int i = 0; i < 2; i++) {
        attention_call c = call(1, 16, 16, 1024, 1024, 64, steps[i].dtype, true);
        c.dims.layout = VKATTN_LAYOUT_BSHD;
        c.dims.q_offset = 0;
        vkattn_fused_variant variant;
        key_of(&c, steps[i].dtype == F16 ? "the layer's attention, f16" :
                                           "the layer's attention, f32", &variant);
        if (variant != steps[i].expected)
            fail_msg("the layer's attention in %s: AUTO took %s, not %s",
                     steps[i].dtype == F16 ? "f16" : "f32", row_of(variant)->name,
                     row_of(steps[i].expected)->name);
    }
    vkattn_tensor o = {.dtype = F32, .ndim = 1, .shape = {1024 * 1024}, .count = 1024 * 1024},
                  w_out = {.dtype = F16, .ndim = 2, .shape = {1024, 1024},
                           .count = 1024 * 1024},
                  y = {.dtype = F32, .ndim = 1, .shape = {1024 * 1024}, .count = 1024 * 1024};
    matmul_call out = {.a = &o, .b = &w_out, .c = &y, .M = 1024, .N = 1024, .K = 1024,
                       .batch = 1, .b_group = 1, .transpose_b = true, .alpha = 1.0f};
    assert_false(matmul_coopmat_wanted(&ctx, &out));
    o.dtype = F16;
    assert_true(matmul_coopmat_wanted(&ctx, &out));
}

/* Past a GPU's largest head sizes: D = Dv refused for the registers; other
 * pairs may fit (Q's registers and O's differ) or are refused so. */
static bool register_refusal(const attention_call *c, const char *what)
{
    fused_plan p;
    memset(&p, 0, sizeof p);
    char why[512] = "";
    if (fused_coopmat_variant.plan(&ctx, c, &p, why, sizeof why)) {
        if (c->dims.D == c->dims.Dv)
            fail_msg("%s: planned (%u rows, %u keys) past the head sizes expected to fit",
                     what, p.rows_per_workgroup, p.bc);
        return false;
    }
    if (!strstr(why, "do not fit") || !strstr(why, "registers"))
        fail_msg("%s: refused with \"%s\"", what, why);
    return true;
}

/* Every head size to 256 (and Dv != D, GQA, decoding, each dtype) plans on
 * each GPU within its limits, up to its largest_head (past it, refused for the
 * registers where D = Dv): a workgroup of whole subgroups of the size the
 * kernel requires, whole matrix heights of rows, keys in whole matrices and
 * packed elements. */
static void test_coopmat_every_head_size(void **state)
{
    (void)state;
    const synthetic_gpu *gpus[] = {&nvidia_h200, &amd_rdna3, &intel_alchemist};
    /* NVIDIA has one size; the KHR builds take the device's smallest. */
    const uint32_t subgroup[] = {32, 32, 8};
    char what[160];
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++) {
        gpu(gpus[i]);
        coopmat_shape s = gpus[i]->shapes[gpus[i]->shape_count - 1];
        uint32_t key_unit = lcm(lcm(lcm(s.m, s.n), s.k), COOPMAT_PACK);
        for (int64_t D = 1; D <= 256; D++) {
            for (int g = 0; g < 3; g++) {
                static const int64_t heads[][4] = {{16, 16, 512, 512}, {32, 8, 1, 4096},
                                                   {12, 4, 77, 300}};
                vkattn_dtype dtype = g == 1 ? BF16 : F16;
                attention_call c = call(2, heads[g][0], heads[g][1], heads[g][2], heads[g][3],
                                        D, dtype, g != 1);
                c.dims.Dv = g == 2 ? 257 - D : D;
                snprintf(what, sizeof what, "%s: D=%lld Dv=%lld H=%lld Hkv=%lld Tq=%lld",
                         gpus[i]->name, (long long)D, (long long)c.dims.Dv,
                         (long long)heads[g][0], (long long)heads[g][1], (long long)heads[g][2]);
                if ((D > gpus[i]->largest_head || c.dims.Dv > gpus[i]->largest_head) &&
                    register_refusal(&c, what))
                    continue;
                fused_plan p = plan_of(COOPMAT, &c, what);
                if (p.workgroup % subgroup[i] || p.workgroup > 1024 ||
                    p.rows_per_workgroup % s.m || p.bc % key_unit || p.bc == 0 ||
                    p.stages < 1 || p.stages > 2 || p.subgroup_size != subgroup[i] ||
                    p.shape.m != s.m || p.shape.n != s.n || p.shape.k != s.k)
                    fail_msg("%s: workgroup %u, %u rows, %u keys, %u stages, subgroup %u, "
                             "%ux%ux%u matrices", what, p.workgroup, p.rows_per_workgroup, p.bc,
                             p.stages, p.subgroup_size, p.shape.m, p.shape.n, p.shape.k);
            }
        }
    }
}

/* Issue 10's point 2 on each GPU, with and without subgroup size control
 * (an old driver): every kernel that plans requires a size the device allows
 * (a power of 2 from its min to its max) or none, and none where the size
 * cannot be required; the coopmat kernel refuses where it cannot be required
 * (full subgroups), the decode kernel where it can neither be required nor is
 * the device's only one (whole subgroups). */
static void test_subgroup_sizes_pinned(void **state)
{
    (void)state;
    const synthetic_gpu *gpus[] = {&nvidia_h200, &amd_rdna3, &intel_alchemist};
    const vkattn_fused_variant variants[] = {VKATTN_FUSED_ROWS, TILED, DECODE, COOPMAT};
    /* Head sizes within every GPU's coopmat reach (Alchemist's: 120). */
    static const int64_t shapes[][6] = {
        {4, 16, 16, 512, 512, 96}, {1, 32, 8, 1, 8192, 64}, {2, 12, 4, 77, 300, 72},
    };
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++)
        for (int control = 0; control < 2; control++)
            for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++)
                for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
                    gpu(gpus[i]);
                    ctx.vk.caps.subgroup_size_control = control;
                    ctx.vk.enabled.subgroup_size_control = control;
                    const int64_t *x = shapes[sh];
                    vkattn_dtype dtype = variants[v] == COOPMAT ? F16 : F32;
                    attention_call c = call(x[0], x[1], x[2], x[3], x[4], x[5], dtype, sh != 1);
                    if (variants[v] == DECODE && fused_rows(&c.dims) > 16)
                        continue; /* decoding only */
                    fused_plan p;
                    memset(&p, 0, sizeof p);
                    char why[512] = "";
                    const synthetic_gpu *g = gpus[i];
                    bool one_size = g->subgroup_min == g->subgroup_max;
                    bool planned = row_of(variants[v])->plan(&ctx, &c, &p, why, sizeof why);
                    char what[160];
                    snprintf(what, sizeof what, "%s, size control %s: %s on %lld,%lld,%lld,%lld,"
                             "%lld,%lld", g->name, control ? "on" : "off",
                             row_of(variants[v])->name, (long long)x[0], (long long)x[1],
                             (long long)x[2], (long long)x[3], (long long)x[4],
                             (long long)x[5]);
                    /* The coopmat kernel needs full subgroups (a matrix
                     * operation takes every lane), which only a required size
                     * promises; the decode kernel whole ones, which one size
                     * gives too. */
                    bool fixed = variants[v] == COOPMAT || variants[v] == DECODE;
                    bool can = control || (variants[v] == DECODE ? one_size : !fixed);
                    if (planned != can)
                        fail_msg("%s: %s", what, planned ? "planned without a size it can count on"
                                                         : why);
                    if (!planned)
                        continue;
                    uint32_t sg = p.subgroup_size;
                    if (sg && (!control || sg < g->subgroup_min || sg > g->subgroup_max ||
                               (sg & (sg - 1))))
                        fail_msg("%s: requires subgroups of %u (the device: %u to %u, %s)", what,
                                 sg, g->subgroup_min, g->subgroup_max,
                                 control ? "can be required" : "cannot be required");
                    if (control && fixed && !sg)
                        fail_msg("%s: requires no size", what);
                }
}

/* A device listing f16 workgroup-scope products for workgroups of 256 and
 * 128 (granularities 64 and 32 a side), with workgroup scope enabled. */
static void with_workgroup_products(uint32_t reserved_shared)
{
    h200();
    device_caps *caps = &ctx.vk.caps;
    caps->coopmat_khr = true;
    caps->coopmat2 = true;
    caps->coopmat2_features = DEVICE_COOPMAT2_WORKGROUP_SCOPE | DEVICE_COOPMAT2_FLEXIBLE_DIMENSIONS;
    caps->coopmat2_workgroup_max = 256;
    caps->coopmat2_flexible_max = 256;
    caps->coopmat2_reserved_shared = reserved_shared;
    caps->coopmat2_shape_count = 2;
    caps->coopmat2_shapes[0].invocations = 256;
    caps->coopmat2_shapes[1].invocations = 128;
    for (int i = 0; i < 3; i++) {
        caps->coopmat2_shapes[0].granularity[i] = 64;
        caps->coopmat2_shapes[1].granularity[i] = 32;
    }
    caps->coopmat2_invocations = 256;
    memcpy(caps->coopmat2_granularity, caps->coopmat2_shapes[0].granularity,
           sizeof caps->coopmat2_granularity);
    caps->coopmat2_workgroup = true;
    caps->maintenance4 = true;
    ctx.vk.enabled = *caps;
}

static void test_workgroup_sizes_walked(void **state)
{
    (void)state;
    /* Room for 64-row tiles: the largest listed workgroup. */
    with_workgroup_products(8192);
    attention_call c = call(4, 16, 16, 4096, 4096, 128, F16, true);
    fused_plan p = plan_of(VKATTN_FUSED_COOPMAT_WORKGROUP, &c, "D=128, 8 KiB reserved");
    assert_int_equal(p.workgroup, 256);
    assert_int_equal(p.rows_per_workgroup % 64, 0);
    assert_int_equal(p.bc % 64, 0);

    /* Where 64-row, 64-key tiles leave no room (most of shared memory
     * reserved by the driver), the next listed size's 32-side tiles. */
    with_workgroup_products(32768);
    p = plan_of(VKATTN_FUSED_COOPMAT_WORKGROUP, &c, "D=128, 32 KiB reserved");
    assert_int_equal(p.workgroup, 128);
    assert_int_equal(p.rows_per_workgroup % 32, 0);
    assert_int_equal(p.bc % 32, 0);

    /* Nothing fits: a refusal that says the smaller sizes were tried. */
    with_workgroup_products(48 * 1024);
    fused_plan none;
    memset(&none, 0, sizeof none);
    char why[512] = "";
    assert_false(row_of(VKATTN_FUSED_COOPMAT_WORKGROUP)->plan(&ctx, &c, &none, why, sizeof why));
    if (!strstr(why, "nor the smaller workgroups the device lists"))
        fail_msg("the refusal said \"%s\"", why);

    /* A tuned size the device lists is kept; one it does not is refused
     * with the sizes it lists. */
    with_workgroup_products(8192);
    tune("coopmat_workgroup.subgroups=4");
    p = plan_of(VKATTN_FUSED_COOPMAT_WORKGROUP, &c, "tuned to 4 subgroups");
    assert_int_equal(p.workgroup, 128);
    tune("coopmat_workgroup.subgroups=2");
    memset(why, 0, sizeof why);
    assert_false(row_of(VKATTN_FUSED_COOPMAT_WORKGROUP)->plan(&ctx, &c, &none, why, sizeof why));
    if (!strstr(why, "64 invocations") || !strstr(why, "256, 128"))
        fail_msg("the refusal said \"%s\"", why);
    tune(NULL);
}

int main(void)
{
    /* The planners read these; the table above is the default's. */
    unsetenv("VKATTN_TUNE");
    unsetenv("VKATTN_COOPMAT");
    unsetenv("VKATTN_COOPMAT_EMULATED_TILING");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fourth_check_replayed),
        cmocka_unit_test(test_layer_in_f16),
        cmocka_unit_test(test_sweep_settings),
        cmocka_unit_test(test_two_buffers_bf16_stages),
        cmocka_unit_test(test_coopmat_every_head_size),
        cmocka_unit_test(test_subgroup_sizes_pinned),
        cmocka_unit_test(test_workgroup_sizes_walked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
