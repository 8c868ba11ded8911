/* Golden tests: inputs and outputs printed in the seed notebooks (plain-text dumps
 * of Jupyter notebooks with printed PyTorch tensors), run through vkattn on the GPU
 * and on the CPU reference and compared with the printed numbers. The other tests
 * compare the GPU with vkattn's own CPU reference; these pin both to what PyTorch
 * computed in the seeds (mask orientation, softmax normalisation, the scale).
 *
 * Seed 001 ("Self Attention's Math Trick", 001_4d2797c58c1b1f8e.txt):
 *   In [1]  x = torch.rand(4, 8, 2)                      -> seed001_x
 *   In [2]  xbow, the mean of x[b, 0..t]                 -> seed001_xbow
 *           (printed again in In [4] as weights @ x and in In [6] as softmaxBowWOW)
 *   In [3]  tril(ones) / row sums, the weights 1/(i+1)   -> seed001_weights
 *           (In [6] prints the same table as softmax(masked_fill(zeros, tril == 0,
 *           -inf)); the dump cuts that print off after row 3, so In [3]'s full
 *           copy is used)
 *   In [21] a single head with random nn.Linear weights: only shapes and a truncated
 *           x are printed, so it is not used.
 *
 * Seed 002 ("Chapter 3: Coding attention mechanisms", 002_a8eb00f8f3b3d733.txt):
 *   In [1]  inputs, six 3-d embeddings typed in           -> seed002_inputs
 *   In [2]  attn_scores = inputs @ inputs.T               -> seed002_scores
 *   In [3]  attn_weights = softmax(attn_scores, dim=1)    -> seed002_weights
 *   In [4]  ctx_vectors = attn_weights @ inputs           -> seed002_context
 *   In [7]  attn_weights_example, typed in                -> seed002_example
 *   In [9]  softmax(masked_fill(example, triu(1), -inf))  -> seed002_masked
 *   In [6], In [11] and In [13] (SelfAttention, SingleHeadCausalSelfAttention,
 *           MultiHeadCausalSelfAttention) depend on random weights the notebook
 *           never prints, so they are not used.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- tolerances -- */

/* Every printed output is rounded to 4 decimals: it is within 5e-5 of the f32
 * value PyTorch computed. */
#define PRINTED_HALF_ULP 5e-5
/* vkattn and PyTorch both compute in f32 and may differ by a few ulps of the
 * values involved (all below 2 here; the f32 ulp at 1 is 1.2e-7), i.e. ~1e-6.
 * The margin is 5e-6; a wrong mask, scale or normalisation moves values by 1e-2
 * or more. */
#define F32_SLACK 5e-6
/* Outputs of exact inputs (typed into the notebook, or zeros): the printed
 * rounding plus f32. The closest printed value in these tables is 4.9e-5 from
 * the exact result. */
#define TOL_EXACT_INPUTS (PRINTED_HALF_ULP + F32_SLACK)
/* Outputs of inputs that are themselves printed rounded (seed 001's torch.rand
 * x): each input is within 5e-5 of the value PyTorch used, and a mean whose
 * weights sum to 1 and do not depend on x (Q = K = 0) moves by at most that;
 * then the output's own rounding. Observed worst: 6.7e-5. */
#define TOL_PRINTED_INPUTS (2 * PRINTED_HALF_ULP + F32_SLACK)
/* Products of 2-decimal inputs are exact 4-decimal numbers, so the printed
 * scores carry no rounding: only f32. */
#define TOL_EXACT_OUTPUTS F32_SLACK

/* ---------------------------------------------------------------- seed 001 -- */

/* In [1]: x, (B, T, C) = (4, 8, 2). */
static const float seed001_x[4 * 8 * 2] = {
    0.7667f, 0.5314f,  0.9172f, 0.2774f,  0.3465f, 0.1333f,  0.7567f, 0.7931f,  /* b=0 t=0..3 */
    0.0519f, 0.1533f,  0.1922f, 0.9974f,  0.3706f, 0.7383f,  0.5901f, 0.1120f,  /* b=0 t=4..7 */
    0.4926f, 0.9296f,  0.4528f, 0.9448f,  0.4835f, 0.5699f,  0.6518f, 0.5521f,  /* b=1 t=0..3 */
    0.2763f, 0.4441f,  0.1384f, 0.8170f,  0.1880f, 0.5782f,  0.1035f, 0.7034f,  /* b=1 t=4..7 */
    0.8070f, 0.4398f,  0.9748f, 0.6560f,  0.8835f, 0.9323f,  0.0752f, 0.4822f,  /* b=2 t=0..3 */
    0.4767f, 0.9107f,  0.2862f, 0.2678f,  0.3134f, 0.9763f,  0.2066f, 0.9792f,  /* b=2 t=4..7 */
    0.9492f, 0.9015f,  0.0651f, 0.0087f,  0.4753f, 0.3830f,  0.4324f, 0.9958f,  /* b=3 t=0..3 */
    0.9457f, 0.4595f,  0.8539f, 0.7081f,  0.3116f, 0.0152f,  0.8553f, 0.4381f,  /* b=3 t=4..7 */
};

/* In [2]: xbow[b, t] = mean(x[b, 0..t]), (4, 8, 2). */
static const float seed001_xbow[4 * 8 * 2] = {
    0.7667f, 0.5314f,  0.8419f, 0.4044f,  0.6768f, 0.3140f,  0.6968f, 0.4338f,  /* b=0 t=0..3 */
    0.5678f, 0.3777f,  0.5052f, 0.4810f,  0.4860f, 0.5177f,  0.4990f, 0.4670f,  /* b=0 t=4..7 */
    0.4926f, 0.9296f,  0.4727f, 0.9372f,  0.4763f, 0.8148f,  0.5202f, 0.7491f,  /* b=1 t=0..3 */
    0.4714f, 0.6881f,  0.4159f, 0.7096f,  0.3833f, 0.6908f,  0.3484f, 0.6924f,  /* b=1 t=4..7 */
    0.8070f, 0.4398f,  0.8909f, 0.5479f,  0.8884f, 0.6760f,  0.6851f, 0.6276f,  /* b=2 t=0..3 */
    0.6434f, 0.6842f,  0.5839f, 0.6148f,  0.5452f, 0.6664f,  0.5029f, 0.7055f,  /* b=2 t=4..7 */
    0.9492f, 0.9015f,  0.5072f, 0.4551f,  0.4965f, 0.4310f,  0.4805f, 0.5722f,  /* b=3 t=0..3 */
    0.5735f, 0.5497f,  0.6203f, 0.5761f,  0.5762f, 0.4960f,  0.6111f, 0.4887f,  /* b=3 t=4..7 */
};

/* In [3]: the causal averaging weights, (8, 8). */
static const float seed001_weights[8 * 8] = {
    1.0000f, 0.0000f, 0.0000f, 0.0000f, 0.0000f, 0.0000f, 0.0000f, 0.0000f,
    0.5000f, 0.5000f, 0.0000f, 0.0000f, 0.0000f, 0.0000f, 0.0000f, 0.0000f,
    0.3333f, 0.3333f, 0.3333f, 0.0000f, 0.0000f, 0.0000f, 0.0000f, 0.0000f,
    0.2500f, 0.2500f, 0.2500f, 0.2500f, 0.0000f, 0.0000f, 0.0000f, 0.0000f,
    0.2000f, 0.2000f, 0.2000f, 0.2000f, 0.2000f, 0.0000f, 0.0000f, 0.0000f,
    0.1667f, 0.1667f, 0.1667f, 0.1667f, 0.1667f, 0.1667f, 0.0000f, 0.0000f,
    0.1429f, 0.1429f, 0.1429f, 0.1429f, 0.1429f, 0.1429f, 0.1429f, 0.0000f,
    0.1250f, 0.1250f, 0.1250f, 0.1250f, 0.1250f, 0.1250f, 0.1250f, 0.1250f,
};

/* ---------------------------------------------------------------- seed 002 -- */

/* In [1]: "Your journey starts with one step", (6, 3). */
static const float seed002_inputs[6 * 3] = {
    0.43f, 0.15f, 0.89f,  /* Your */
    0.55f, 0.87f, 0.66f,  /* journey */
    0.57f, 0.85f, 0.64f,  /* starts */
    0.22f, 0.58f, 0.33f,  /* with */
    0.77f, 0.25f, 0.10f,  /* one */
    0.05f, 0.80f, 0.55f,  /* step */
};

/* In [2]: attn_scores = inputs @ inputs.T, (6, 6). */
static const float seed002_scores[6 * 6] = {
    0.9995f, 0.9544f, 0.9422f, 0.4753f, 0.4576f, 0.6310f,
    0.9544f, 1.4950f, 1.4754f, 0.8434f, 0.7070f, 1.0865f,
    0.9422f, 1.4754f, 1.4570f, 0.8296f, 0.7154f, 1.0605f,
    0.4753f, 0.8434f, 0.8296f, 0.4937f, 0.3474f, 0.6565f,
    0.4576f, 0.7070f, 0.7154f, 0.3474f, 0.6654f, 0.2935f,
    0.6310f, 1.0865f, 1.0605f, 0.6565f, 0.2935f, 0.9450f,
};

/* In [3]: attn_weights = softmax(attn_scores, dim=1), (6, 6). */
static const float seed002_weights[6 * 6] = {
    0.2098f, 0.2006f, 0.1981f, 0.1242f, 0.1220f, 0.1452f,
    0.1385f, 0.2379f, 0.2333f, 0.1240f, 0.1082f, 0.1581f,
    0.1390f, 0.2369f, 0.2326f, 0.1242f, 0.1108f, 0.1565f,
    0.1435f, 0.2074f, 0.2046f, 0.1462f, 0.1263f, 0.1720f,
    0.1526f, 0.1958f, 0.1975f, 0.1367f, 0.1879f, 0.1295f,
    0.1385f, 0.2184f, 0.2128f, 0.1420f, 0.0988f, 0.1896f,
};

/* In [4]: ctx_vectors = attn_weights @ inputs, (6, 3). */
static const float seed002_context[6 * 3] = {
    0.4421f, 0.5931f, 0.5790f,
    0.4419f, 0.6515f, 0.5683f,
    0.4431f, 0.6496f, 0.5671f,
    0.4304f, 0.6298f, 0.5510f,
    0.4671f, 0.5910f, 0.5266f,
    0.4177f, 0.6503f, 0.5645f,
};

/* In [7]: attn_weights_example, typed in, (6, 6). */
static const float seed002_example[6 * 6] = {
    0.1921f, 0.1646f, 0.1652f, 0.1550f, 0.1721f, 0.1510f,
    0.2041f, 0.1659f, 0.1662f, 0.1496f, 0.1665f, 0.1477f,
    0.2036f, 0.1659f, 0.1662f, 0.1498f, 0.1664f, 0.1480f,
    0.1869f, 0.1667f, 0.1668f, 0.1571f, 0.1661f, 0.1564f,
    0.1830f, 0.1669f, 0.1670f, 0.1588f, 0.1658f, 0.1585f,
    0.1935f, 0.1663f, 0.1666f, 0.1542f, 0.1666f, 0.1529f,
};

/* In [9]: softmax of the example with -inf above the diagonal, (6, 6). */
static const float seed002_masked[6 * 6] = {
    1.0000f, 0.0000f, 0.0000f, 0.0000f, 0.0000f, 0.0000f,
    0.5095f, 0.4905f, 0.0000f, 0.0000f, 0.0000f, 0.0000f,
    0.3417f, 0.3291f, 0.3292f, 0.0000f, 0.0000f, 0.0000f,
    0.2544f, 0.2493f, 0.2493f, 0.2469f, 0.0000f, 0.0000f,
    0.2030f, 0.1997f, 0.1997f, 0.1981f, 0.1995f, 0.0000f,
    0.1712f, 0.1666f, 0.1666f, 0.1646f, 0.1666f, 0.1644f,
};

/* ----------------------------------------------------------------- helpers -- */

/* A tensor in `ctx` holding `data` (NULL: zeros). */
static vkattn_tensor *tensor_with(vkattn_context *ctx, int ndim, const int64_t *shape,
                                  const float *data)
{
    vkattn_tensor_desc d = {.dtype = VKATTN_DTYPE_F32, .ndim = ndim};
    memcpy(d.shape, shape, (size_t)ndim * sizeof *shape);
    vkattn_tensor *t = NULL;
    vkattn_status s = vkattn_tensor_create(ctx, &d, &t);
    if (s != VKATTN_OK)
        fail_msg("tensor_create: %s: %s", vkattn_status_string(s), vkattn_last_error(ctx));
    size_t n = shape_count(ndim, shape);
    float *zeros = NULL;
    if (!data) {
        zeros = calloc(n, sizeof *zeros);
        assert_non_null(zeros);
    }
    assert_int_equal(vkattn_tensor_upload(t, data ? data : zeros, VKATTN_DTYPE_F32), VKATTN_OK);
    free(zeros);
    return t;
}

/* An output tensor filled with a sentinel, so that an element the kernel never
 * writes fails the comparison instead of passing as a stale 0. */
static vkattn_tensor *tensor_output(vkattn_context *ctx, int ndim, const int64_t *shape)
{
    size_t n = shape_count(ndim, shape);
    float *fill = malloc(n * sizeof *fill);
    assert_non_null(fill);
    for (size_t i = 0; i < n; i++)
        fill[i] = 12345.0f;
    vkattn_tensor *t = tensor_with(ctx, ndim, shape, fill);
    free(fill);
    return t;
}

/* Fails the test unless a call succeeded, with the context's message. */
static void expect_ok(vkattn_status s, vkattn_context *ctx, const char *what)
{
    if (s != VKATTN_OK)
        fail_msg("%s: %s: %s", what, vkattn_status_string(s), vkattn_last_error(ctx));
}

/* Downloads `out` and compares it with the printed table `want`, which has the
 * same elements in the same order. `dims` names the dimensions of `shape`, one
 * letter each, for the message. With `masked_zero`, entries above the diagonal
 * of the innermost (T, T) matrices, where the notebook wrote -inf before the
 * softmax, must be exactly 0. */
static void expect_golden(const char *what, vkattn_tensor *out, const char *dims,
                          const float *want, double tol, bool masked_zero)
{
    vkattn_tensor_desc d = vkattn_tensor_get_desc(out);
    size_t n = shape_count(d.ndim, d.shape);
    float *got = malloc(n * sizeof *got);
    assert_non_null(got);
    assert_int_equal(vkattn_tensor_download(out, got, VKATTN_DTYPE_F32), VKATTN_OK);
    for (size_t i = 0; i < n; i++) {
        int64_t index[VKATTN_MAX_DIMS];
        size_t rest = i;
        for (int k = d.ndim - 1; k >= 0; k--) {
            index[k] = (int64_t)(rest % (size_t)d.shape[k]);
            rest /= (size_t)d.shape[k];
        }
        double err = fabs((double)got[i] - (double)want[i]);
        bool masked = masked_zero && index[d.ndim - 1] > index[d.ndim - 2];
        if (masked ? got[i] != 0.0f : !(err <= tol)) { /* !(<=) also catches NaN */
            char where[96];
            int len = 0;
            for (int k = 0; k < d.ndim; k++)
                len += snprintf(where + len, sizeof where - (size_t)len, "%s%c=%lld",
                                k ? " " : "", dims[k], (long long)index[k]);
            fail_msg("%s: element [%s] is %.7f, the notebook prints %.4f (error %.2e, %s)",
                     what, where, (double)got[i], (double)want[i], err,
                     masked ? "a masked entry must be exactly 0" : "tolerance exceeded");
        }
    }
    free(got);
}

/* -------------------------------------------------------------- attention -- */

/* Single-head self-attention (H = 1) on golden data. */
typedef struct attention_golden {
    const char *name;
    int64_t B, T, D, Dv;
    const float *q, *k;        /* (B, T, D); NULL: zeros */
    const float *v;            /* (B, T, Dv) */
    float scale;               /* 0: vkattn's default 1/sqrt(D) */
    bool causal;               /* PyTorch's tril mask: key j allowed for query i when j <= i */
    const float *want;         /* (B, T, Dv) */
    double tol;
} attention_golden;

static const attention_golden attention_cases[] = {
    /* Q = K = 0: every score is 0, so the causal softmax is uniform over keys
     * 0..t and O is the running mean xbow. The scale is irrelevant; D = 2. */
    {"seed 001 In[2] xbow as causal attention", 4, 8, 2, 2, NULL, NULL, seed001_x, 0.0f, true,
     seed001_xbow, TOL_PRINTED_INPUTS},
    /* The notebook's attention without trainable weights: Q = K = V = inputs,
     * scores unscaled (scale 1), no mask. */
    {"seed 002 In[4] context vectors", 1, 6, 3, 3, seed002_inputs, seed002_inputs,
     seed002_inputs, 1.0f, false, seed002_context, TOL_EXACT_INPUTS},
};

/* One run of a case in `ctx`. With H = 1 the BHSD (B, 1, T, D) and BSHD
 * (B, T, 1, D) views of the notebook's (B, T, D) arrays are the same memory, so
 * both layouts take the arrays as they are. */
static void run_attention(vkattn_context *ctx, const char *backend, const attention_golden *c,
                          const vkattn_attention_desc *d)
{
    bool bshd = d->layout == VKATTN_LAYOUT_BSHD;
    int64_t qk_shape[4] = {c->B, bshd ? c->T : 1, bshd ? 1 : c->T, c->D};
    int64_t vo_shape[4] = {c->B, bshd ? c->T : 1, bshd ? 1 : c->T, c->Dv};
    char what[256];
    snprintf(what, sizeof what, "%s [%s, %s]", c->name, backend, bshd ? "bshd" : "bhsd");

    vkattn_tensor *q = tensor_with(ctx, 4, qk_shape, c->q);
    vkattn_tensor *k = tensor_with(ctx, 4, qk_shape, c->k);
    vkattn_tensor *v = tensor_with(ctx, 4, vo_shape, c->v);
    vkattn_tensor *o = tensor_output(ctx, 4, vo_shape);
    expect_ok(vkattn_attention(ctx, d, q, k, v, o), ctx, what);
    expect_golden(what, o, bshd ? "bthd" : "bhtd", c->want, c->tol, false);
    vkattn_tensor_destroy(q);
    vkattn_tensor_destroy(k);
    vkattn_tensor_destroy(v);
    vkattn_tensor_destroy(o);
}

static void test_attention_golden(void **state)
{
    test_env *env = *state;
    /* Every GPU path, as in test_attention: T = 6 and 8 split 3 ways exercise
     * the merge of partial softmaxes. */
    static const struct {
        const char *label;
        vkattn_attention_path path;
        vkattn_fused_variant variant;
        uint32_t kv_splits;
    } gpu_paths[] = {
        {"gpu auto", VKATTN_PATH_AUTO, VKATTN_FUSED_AUTO, 0},
        {"gpu unfused", VKATTN_PATH_UNFUSED, VKATTN_FUSED_AUTO, 0},
        {"gpu fused rows", VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 1},
        {"gpu fused rows, 3 splits", VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 3},
    };
    static const vkattn_layout layouts[] = {VKATTN_LAYOUT_BHSD, VKATTN_LAYOUT_BSHD};
    for (size_t i = 0; i < sizeof attention_cases / sizeof attention_cases[0]; i++) {
        const attention_golden *c = &attention_cases[i];
        for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
            /* q_offset 0 is PyTorch's top-left tril; with Tq == Tk it is also
             * vkattn's default, but the notebooks' convention is spelled out. */
            vkattn_attention_desc d = {.layout = layouts[l], .scale = c->scale,
                                       .causal = c->causal, .has_q_offset = true, .q_offset = 0};
            run_attention(env->cpu, "cpu", c, &d);
            for (size_t p = 0; p < sizeof gpu_paths / sizeof gpu_paths[0]; p++) {
                d.path = gpu_paths[p].path;
                d.fused_variant = gpu_paths[p].variant;
                d.kv_splits = gpu_paths[p].kv_splits;
                run_attention(env->gpu, gpu_paths[p].label, c, &d);
            }
        }
    }
}

/* ---------------------------------------------------------------- softmax -- */

/* A masked softmax of one (T, T) matrix. */
typedef struct softmax_golden {
    const char *name;
    int64_t T;
    const float *x;            /* (T, T); NULL: zeros */
    float scale;               /* softmax(scale * x); the notebooks use 1 */
    bool causal;               /* masked_fill above the diagonal with -inf */
    const float *want;         /* (T, T) */
    double tol;
} softmax_golden;

static const softmax_golden softmax_cases[] = {
    /* softmax(masked_fill(zeros, tril == 0, -inf)): 1/(i+1) on and below the
     * diagonal. */
    {"seed 001 In[3]/In[6] causal weights", 8, NULL, 1.0f, true, seed001_weights,
     TOL_EXACT_INPUTS},
    /* softmax(attn_scores, dim=1) on the printed scores, which are exact. */
    {"seed 002 In[3] attention weights", 6, seed002_scores, 1.0f, false, seed002_weights,
     TOL_EXACT_INPUTS},
    /* softmax(masked_fill(example, triu(ones, 1), -inf)). */
    {"seed 002 In[9] masked attention weights", 6, seed002_example, 1.0f, true, seed002_masked,
     TOL_EXACT_INPUTS},
};

static void run_softmax(vkattn_context *ctx, const char *backend, const softmax_golden *c,
                        const vkattn_softmax_desc *d)
{
    int64_t shape[2] = {c->T, c->T};
    char what[256];
    snprintf(what, sizeof what, "%s [%s]", c->name, backend);
    vkattn_tensor *x = tensor_with(ctx, 2, shape, c->x);
    vkattn_tensor *y = tensor_output(ctx, 2, shape);
    expect_ok(vkattn_softmax(ctx, d, x, y), ctx, what);
    expect_golden(what, y, "ij", c->want, c->tol, c->causal);
    vkattn_tensor_destroy(x);
    vkattn_tensor_destroy(y);
}

static void test_softmax_golden(void **state)
{
    test_env *env = *state;
    static const struct {
        const char *label;
        vkattn_softmax_variant variant;
    } gpu_variants[] = {
        {"gpu auto", VKATTN_SOFTMAX_AUTO},
        {"gpu shared", VKATTN_SOFTMAX_SHARED},
    };
    for (size_t i = 0; i < sizeof softmax_cases / sizeof softmax_cases[0]; i++) {
        const softmax_golden *c = &softmax_cases[i];
        vkattn_softmax_desc d = {.scale = c->scale, .causal = c->causal, .has_q_offset = true,
                                 .q_offset = 0};
        run_softmax(env->cpu, "cpu", c, &d);
        for (size_t v = 0; v < sizeof gpu_variants / sizeof gpu_variants[0]; v++) {
            d.variant = gpu_variants[v].variant;
            run_softmax(env->gpu, gpu_variants[v].label, c, &d);
        }
    }
}

/* ----------------------------------------------------------------- matmul -- */

/* Seed 002 In [2]: attn_scores = inputs @ inputs.T, as vkattn_matmul with B
 * transposed (inputs is (6, 3), read as (N, K)). */
static void run_scores(vkattn_context *ctx, const char *backend, vkattn_matmul_variant variant)
{
    int64_t in_shape[2] = {6, 3}, out_shape[2] = {6, 6};
    char what[256];
    snprintf(what, sizeof what, "seed 002 In[2] attention scores [%s]", backend);
    vkattn_tensor *a = tensor_with(ctx, 2, in_shape, seed002_inputs);
    vkattn_tensor *b = tensor_with(ctx, 2, in_shape, seed002_inputs);
    vkattn_tensor *c = tensor_output(ctx, 2, out_shape);
    vkattn_matmul_desc d = {.transpose_b = true, .variant = variant};
    expect_ok(vkattn_matmul(ctx, &d, a, b, NULL, c), ctx, what);
    expect_golden(what, c, "ij", seed002_scores, TOL_EXACT_OUTPUTS, false);
    vkattn_tensor_destroy(a);
    vkattn_tensor_destroy(b);
    vkattn_tensor_destroy(c);
}

static void test_scores_golden(void **state)
{
    test_env *env = *state;
    run_scores(env->cpu, "cpu", VKATTN_MATMUL_AUTO);
    /* TEXEL is left to AUTO: forced, it is refused where texel buffers are not
     * offered. */
    run_scores(env->gpu, "gpu auto", VKATTN_MATMUL_AUTO);
    run_scores(env->gpu, "gpu tiled", VKATTN_MATMUL_TILED);
    run_scores(env->gpu, "gpu naive", VKATTN_MATMUL_NAIVE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attention_golden),
        cmocka_unit_test(test_softmax_golden),
        cmocka_unit_test(test_scores_golden),
    };
    return test_run_group(tests, test_env_setup, test_env_teardown);
}
