/* The attention variants (windows, soft-capping, sinks, ALiBi, masks, packed
 * sequences, paged KV caches), alone and combined, on every GPU path, against
 * the CPU reference; and their argument checks. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "test_util.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The mask's shape, broadcast to (B, H, Tq, Tk): (Tq, Tk), (B, 1, Tq, Tk),
 * (B, H, Tq, Tk), a key padding mask (B, 1, 1, Tk), one per head (H, Tq, Tk),
 * one value per query row (B, 1, Tq, 1). */
enum mask_form { NO_MASK = 0, MASK_2D, MASK_B1, MASK_BH, MASK_KEYS, MASK_HEADS, MASK_ROWS };

typedef struct var_case {
    const char *name;
    int64_t B, H, Hkv, Tq, Tk, D, Dv;
    bool causal, has_q_offset;
    int64_t q_offset;
    bool has_window;
    int32_t left, right;
    float softcap;
    bool sinks, alibi;
    enum mask_form mask;
    bool neg_inf_row;          /* mask row 1 entirely -inf, and some scattered -inf */
    bool flt_max_mask;         /* those entries -FLT_MAX (finfo.min) instead: finite */
    bool kv_len;               /* random lengths, the first entry 0 */
    const int32_t *q_lens, *k_lens; /* packed sequences (B lengths), or NULL */
    bool q_gaps;               /* packed Q and O: 2 rows before the first sequence and 3
                                  after the last, in none (O's rows there are zero) */
    int64_t block_size;        /* paged keys: Tk is the capacity per entry */
    vkattn_dtype dtype;
    vkattn_layout layout;
    float magnitude;
} var_case;

typedef test_path var_path;

/* The workgroup-scope coopmat kernel and its emulated build. */
static bool is_workgroup(const var_path *p)
{
    return p->variant == VKATTN_FUSED_COOPMAT_WORKGROUP ||
           p->variant == VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED;
}

/* The coopmat kernels, real and emulated: 16-bit inputs only, and P rounded
 * to f16 (see test_attention.c). */
static bool is_coopmat(const var_path *p)
{
    return p->variant == VKATTN_FUSED_COOPMAT || p->variant == VKATTN_FUSED_COOPMAT_EMULATED ||
           is_workgroup(p);
}

/* Whether the path takes inputs of dtype dt. */
static bool path_takes(const var_path *p, vkattn_dtype dt)
{
    return !is_coopmat(p) || dt != VKATTN_DTYPE_F32;
}

static const var_path all_paths[] = {
    {VKATTN_PATH_AUTO, VKATTN_FUSED_AUTO, 0},
    {VKATTN_PATH_UNFUSED, VKATTN_FUSED_AUTO, 0},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 1},
    /* Up to 40 splits: where keys are that many, the combine pass has
     * several invocations share a row's splits (sinks, empty rows). */
    {VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 40},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 1},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 2},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_DECODE, 1},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_DECODE, 3},
};

/* The decode kernel takes up to this many packed query rows per kv head. */
#define DECODE_MAX_ROWS 16

/* The same I32 values in both contexts. */
typedef struct i32_pair { vkattn_tensor *gpu, *cpu; } i32_pair;

static i32_pair i32_pair_make(test_env *env, int ndim, const int64_t *shape, const int32_t *values)
{
    vkattn_tensor_desc d = {.dtype = VKATTN_DTYPE_I32, .ndim = ndim};
    for (int i = 0; i < ndim; i++)
        d.shape[i] = shape[i];
    i32_pair p;
    assert_int_equal(vkattn_tensor_create(env->gpu, &d, &p.gpu), VKATTN_OK);
    assert_int_equal(vkattn_tensor_create(env->cpu, &d, &p.cpu), VKATTN_OK);
    assert_int_equal(vkattn_tensor_upload(p.gpu, values, VKATTN_DTYPE_I32), VKATTN_OK);
    assert_int_equal(vkattn_tensor_upload(p.cpu, values, VKATTN_DTYPE_I32), VKATTN_OK);
    return p;
}

static void i32_pair_destroy(i32_pair *p)
{
    vkattn_tensor_destroy(p->gpu);
    vkattn_tensor_destroy(p->cpu);
}

static void dims4(const var_case *c, int64_t heads, int64_t T, int64_t width, int64_t out[4])
{
    bool bshd = c->layout == VKATTN_LAYOUT_BSHD;
    out[0] = c->B, out[1] = bshd ? T : heads, out[2] = bshd ? heads : T, out[3] = width;
}

static int64_t sum_lens(const int32_t *lens, int64_t B, int32_t *cu)
{
    cu[0] = 0;
    for (int64_t b = 0; b < B; b++)
        cu[b + 1] = cu[b] + lens[b];
    return cu[B];
}

static int64_t max_len(const int32_t *lens, int64_t B)
{
    int64_t m = 1;
    for (int64_t b = 0; b < B; b++)
        m = lens[b] > m ? lens[b] : m;
    return m;
}

/* Everything one case needs, on both sides. */
typedef struct var_inputs {
    pair q, k, v, o, sinks, alibi, mask;
    i32_pair kv_len, cu_q, cu_k, table;
    vkattn_attention_desc gpu, cpu;
} var_inputs;

static void make_mask(test_env *env, const var_case *c, int64_t Tq, int64_t Tk, rng *r,
                      var_inputs *in)
{
    static const struct {
        int ndim;
        bool batch, heads, rows, keys; /* which of B, H, Tq and Tk it has (the others 1 or absent) */
    } forms[] = {
        [MASK_2D] = {2, false, false, true, true},   [MASK_B1] = {4, true, false, true, true},
        [MASK_BH] = {4, true, true, true, true},     [MASK_KEYS] = {4, true, false, false, true},
        [MASK_HEADS] = {3, false, true, true, true}, [MASK_ROWS] = {4, true, false, true, false},
    };
    int ndim = forms[c->mask].ndim;
    int64_t full[4] = {forms[c->mask].batch ? c->B : 1, forms[c->mask].heads ? c->H : 1,
                       forms[c->mask].rows ? Tq : 1, forms[c->mask].keys ? Tk : 1};
    vkattn_dtype dtype = c->dtype == VKATTN_DTYPE_F32 ? VKATTN_DTYPE_F32 : VKATTN_DTYPE_F16;
    in->mask = pair_random(env, dtype, ndim, full + 4 - ndim, r, -2.0f, 2.0f);
    if (c->neg_inf_row) {
        for (size_t e = 0; e < in->mask.count; e++) {
            int64_t i = (int64_t)(e / (size_t)full[3]) % full[2];
            if ((full[2] > 1 && i == 1) || rng_int(r, 0, 6) == 0)
                in->mask.host[e] = c->flt_max_mask ? -FLT_MAX : -INFINITY;
        }
        assert_int_equal(vkattn_tensor_upload(in->mask.gpu, in->mask.host, VKATTN_DTYPE_F32), VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(in->mask.cpu, in->mask.host, VKATTN_DTYPE_F32), VKATTN_OK);
    }
    in->gpu.mask = in->mask.gpu, in->cpu.mask = in->mask.cpu;
}

static void make_inputs(test_env *env, const var_case *c, rng *r, var_inputs *in)
{
    memset(in, 0, sizeof *in);
    float m = c->magnitude != 0.0f ? c->magnitude : 1.0f;
    int64_t Tq = c->Tq, Tk = c->Tk;
    int32_t cu_q[65], cu_k[65];
    assert_true(c->B <= 64);
    if (c->q_lens) {
        int64_t total = sum_lens(c->q_lens, c->B, cu_q);
        if (c->q_gaps) {
            for (int64_t b = 0; b <= c->B; b++)
                cu_q[b] += 2;
            total = cu_q[c->B] + 3;
        }
        int64_t qs[3] = {total > 0 ? total : 1, c->H, c->D}, os[3] = {qs[0], c->H, c->Dv};
        in->q = pair_random(env, c->dtype, 3, qs, r, -m, m);
        in->o = pair_output(env, 3, os);
        int64_t n = c->B + 1;
        in->cu_q = i32_pair_make(env, 1, &n, cu_q);
        Tq = max_len(c->q_lens, c->B);
    } else {
        int64_t qs[4], os[4];
        dims4(c, c->H, Tq, c->D, qs);
        dims4(c, c->H, Tq, c->Dv, os);
        in->q = pair_random(env, c->dtype, 4, qs, r, -m, m);
        in->o = pair_output(env, 4, os);
    }
    int32_t lens[64];
    if (c->k_lens) {
        int64_t total = sum_lens(c->k_lens, c->B, cu_k);
        int64_t ks[3] = {total > 0 ? total : 1, c->Hkv, c->D}, vs[3] = {ks[0], c->Hkv, c->Dv};
        in->k = pair_random(env, c->dtype, 3, ks, r, -m, m);
        in->v = pair_random(env, c->dtype, 3, vs, r, -1.0f, 1.0f);
        int64_t n = c->B + 1;
        in->cu_k = i32_pair_make(env, 1, &n, cu_k);
        Tk = max_len(c->k_lens, c->B);
    } else if (c->block_size) {
        int64_t max_blocks = (Tk + c->block_size - 1) / c->block_size;
        int64_t num_blocks = c->B * max_blocks + 3; /* a few blocks no entry uses */
        int64_t ks[4] = {num_blocks, c->block_size, c->Hkv, c->D};
        int64_t vs[4] = {num_blocks, c->block_size, c->Hkv, c->Dv};
        in->k = pair_random(env, c->dtype, 4, ks, r, -m, m);
        in->v = pair_random(env, c->dtype, 4, vs, r, -1.0f, 1.0f);
        /* Blocks in a shuffled order. */
        int32_t *table = malloc((size_t)(c->B * max_blocks) * sizeof *table);
        assert_non_null(table);
        for (int64_t e = 0; e < c->B * max_blocks; e++)
            table[e] = (int32_t)e + 3;
        for (int64_t e = c->B * max_blocks - 1; e > 0; e--) {
            int x = rng_int(r, 0, (int)e);
            int32_t t = table[e];
            table[e] = table[x], table[x] = t;
        }
        int64_t ts[2] = {c->B, max_blocks};
        in->table = i32_pair_make(env, 2, ts, table);
        free(table);
        Tk = max_blocks * c->block_size;
        for (int64_t b = 0; b < c->B; b++) /* the last block partly filled */
            lens[b] = (int32_t)(b == 0 ? c->Tk : rng_int(r, 0, (int)c->Tk));
    } else {
        int64_t ks[4], vs[4];
        dims4(c, c->Hkv, Tk, c->D, ks);
        dims4(c, c->Hkv, Tk, c->Dv, vs);
        in->k = pair_random(env, c->dtype, 4, ks, r, -m, m);
        in->v = pair_random(env, c->dtype, 4, vs, r, -1.0f, 1.0f);
    }
    vkattn_attention_desc d = {
        .layout = c->layout, .causal = c->causal,
        .has_q_offset = c->has_q_offset, .q_offset = c->q_offset,
        .has_window = c->has_window, .window_left = c->left, .window_right = c->right,
        .softcap = c->softcap,
    };
    in->gpu = in->cpu = d;
    if (c->kv_len && !c->block_size) {
        for (int64_t b = 0; b < c->B; b++) {
            int64_t keys = c->k_lens ? c->k_lens[b] : Tk;
            lens[b] = b == 0 ? 0 : rng_int(r, 0, (int)keys);
        }
    }
    if (c->kv_len || c->block_size) {
        int64_t n = c->B;
        in->kv_len = i32_pair_make(env, 1, &n, lens);
        in->gpu.kv_len = in->kv_len.gpu, in->cpu.kv_len = in->kv_len.cpu;
    }
    int64_t h = c->H;
    if (c->sinks) {
        in->sinks = pair_random(env, VKATTN_DTYPE_F32, 1, &h, r, -1.0f, 2.0f);
        in->gpu.sinks = in->sinks.gpu, in->cpu.sinks = in->sinks.cpu;
    }
    if (c->alibi) {
        in->alibi = pair_random(env, VKATTN_DTYPE_F32, 1, &h, r, 0.0f, 1.0f);
        for (int64_t i = 0; i < c->H; i++) /* ALiBi's geometric slopes */
            in->alibi.host[i] = powf(2.0f, -8.0f * (float)(i + 1) / (float)c->H);
        assert_int_equal(vkattn_tensor_upload(in->alibi.gpu, in->alibi.host, VKATTN_DTYPE_F32), VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(in->alibi.cpu, in->alibi.host, VKATTN_DTYPE_F32), VKATTN_OK);
        in->gpu.alibi_slopes = in->alibi.gpu, in->cpu.alibi_slopes = in->alibi.cpu;
    }
    if (c->mask)
        make_mask(env, c, Tq, Tk, r, in);
    in->gpu.cu_seqlens_q = in->cu_q.gpu, in->cpu.cu_seqlens_q = in->cu_q.cpu;
    in->gpu.cu_seqlens_k = in->cu_k.gpu, in->cpu.cu_seqlens_k = in->cu_k.cpu;
    in->gpu.block_table = in->table.gpu, in->cpu.block_table = in->table.cpu;
}

static void free_inputs(var_inputs *in)
{
    pair *pairs[] = {&in->q, &in->k, &in->v, &in->o, &in->sinks, &in->alibi, &in->mask};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (pairs[i]->gpu)
            pair_destroy(pairs[i]);
    i32_pair *ints[] = {&in->kv_len, &in->cu_q, &in->cu_k, &in->table};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        i32_pair_destroy(ints[i]);
}

static const char *path_name(const var_path *p, char *buf, size_t size)
{
    static const char *paths[] = {"auto", "fused", "unfused"};
    snprintf(buf, size, "%s/%s splits %u", paths[p->path], vkattn_fused_variant_name(p->variant), p->kv_splits);
    return buf;
}

/* Whether VKATTN_TEST_SKIP_KERNELS (fused variant names, comma-separated)
 * leaves out the path's forced kernel: a ctest run in a slow mode keeps to the
 * kernels it is for. */
static bool kernel_skipped(const var_path *p)
{
    const char *skip = getenv("VKATTN_TEST_SKIP_KERNELS");
    if (!skip || p->path != VKATTN_PATH_FUSED)
        return false;
    const char *name = vkattn_fused_variant_name(p->variant);
    size_t length = strlen(name);
    for (const char *at = skip; *at; at += strcspn(at, ","), at += *at == ',')
        if (strcspn(at, ",") == length && !strncmp(at, name, length))
            return true;
    return false;
}

static void run_var_case(test_env *env, const var_case *c, const var_path *paths, int npaths,
                         rng *r)
{
    var_inputs in;
    make_inputs(env, c, r, &in);
    assert_int_equal(vkattn_attention(env->cpu, &in.cpu, in.q.cpu, in.k.cpu, in.v.cpu, in.o.cpu),
                     VKATTN_OK);
    double score_size = (double)c->D * c->magnitude * c->magnitude / sqrt((double)c->D);
    double atol = 16 * 1.2e-7 * (score_size + 4.0) + 2e-5;
    bool layout_variant = c->q_lens || c->k_lens || c->block_size;
    int64_t longest_q = c->Tq;
    for (int64_t b = 0; c->q_lens && b < c->B; b++)
        longest_q = b == 0 || c->q_lens[b] > longest_q ? c->q_lens[b] : longest_q;
    int64_t decode_rows = c->H / c->Hkv * longest_q;
    test_next_case();
    for (int i = 0; i < npaths; i++) {
        if (kernel_skipped(&paths[i]) || !test_path_runs(paths, npaths, i))
            continue;
        char name[256], pn[64];
        snprintf(name, sizeof name, "%s (%s)", c->name, path_name(&paths[i], pn, sizeof pn));
        assert_int_equal(vkattn_tensor_upload(in.o.gpu, in.o.host, VKATTN_DTYPE_F32), VKATTN_OK);
        vkattn_attention_desc d = in.gpu;
        d.path = paths[i].path;
        d.fused_variant = paths[i].variant;
        d.kv_splits = paths[i].kv_splits;
        vkattn_status s = vkattn_attention(env->gpu, &d, in.q.gpu, in.k.gpu, in.v.gpu, in.o.gpu);
        /* Packed and paged sequences are for the fused path: the unfused one refuses. */
        bool refuses = (paths[i].path == VKATTN_PATH_UNFUSED && layout_variant) ||
                       (paths[i].variant == VKATTN_FUSED_DECODE && decode_rows > DECODE_MAX_ROWS);
        if (refuses) {
            if (s != VKATTN_ERROR_UNSUPPORTED)
                fail_msg("%s: %s, expected UNSUPPORTED", name, vkattn_status_string(s));
            if (paths[i].path == VKATTN_PATH_UNFUSED) { /* on every backend alike */
                vkattn_attention_desc dc = in.cpu;
                dc.path = VKATTN_PATH_UNFUSED;
                assert_int_equal(vkattn_attention(env->cpu, &dc, in.q.cpu, in.k.cpu, in.v.cpu,
                                                  in.o.cpu),
                                 VKATTN_ERROR_UNSUPPORTED);
            }
            continue;
        }
        if (s != VKATTN_OK)
            fail_msg("%s: %s: %s", name, vkattn_status_string(s), vkattn_last_error(env->gpu));
        /* the coopmat kernels round P to f16 (see test_attention.c) */
        bool coopmat = is_coopmat(&paths[i]);
        expect_close(name, &in.o, atol + (coopmat ? 1e-3 : 0.0), 0.0, NULL);
    }
    free_inputs(&in);
}

#define F32 VKATTN_DTYPE_F32
#define F16 VKATTN_DTYPE_F16
#define BF16 VKATTN_DTYPE_BF16
#define BHSD VKATTN_LAYOUT_BHSD
#define BSHD VKATTN_LAYOUT_BSHD
#define NPATHS(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const int32_t lens_q3[] = {5, 0, 17}, lens_k3[] = {9, 4, 17};
static const int32_t lens_q4[] = {1, 23, 3, 8}, lens_k4[] = {40, 23, 1, 8};
static const int32_t lens_dec[] = {1, 1, 1}, lens_mixed[] = {1, 70, 6};

/* Scores and which keys a row sees, on dense tensors. */
static const var_case score_cases[] = {
    {.name = "window", .B = 1, .H = 2, .Hkv = 2, .Tq = 40, .Tk = 40, .D = 16, .Dv = 16,
     .causal = true, .has_window = true, .left = 7, .right = 0, .dtype = F32, .magnitude = 1},
    {.name = "window two-sided non-causal", .B = 2, .H = 2, .Hkv = 1, .Tq = 23, .Tk = 31, .D = 13,
     .Dv = 13, .has_window = true, .left = 3, .right = 5, .dtype = F32, .magnitude = 1},
    {.name = "window left unbounded", .B = 1, .H = 3, .Hkv = 3, .Tq = 9, .Tk = 30, .D = 8, .Dv = 8,
     .has_window = true, .left = -1, .right = 2, .dtype = F32, .magnitude = 1},
    {.name = "window causal q_offset", .B = 2, .H = 4, .Hkv = 2, .Tq = 11, .Tk = 50, .D = 32,
     .Dv = 32, .causal = true, .has_q_offset = true, .q_offset = 20, .has_window = true, .left = 6,
     .right = 3, .kv_len = true, .layout = BSHD, .dtype = F32, .magnitude = 1},
    {.name = "window 0 (diagonal only)", .B = 1, .H = 1, .Hkv = 1, .Tq = 12, .Tk = 12, .D = 8,
     .Dv = 8, .has_window = true, .left = 0, .right = 0, .dtype = F32, .magnitude = 1},
    {.name = "softcap", .B = 1, .H = 2, .Hkv = 2, .Tq = 19, .Tk = 27, .D = 24, .Dv = 24,
     .causal = true, .softcap = 5.0f, .dtype = F32, .magnitude = 4},
    {.name = "softcap large magnitude", .B = 1, .H = 2, .Hkv = 1, .Tq = 9, .Tk = 9, .D = 16,
     .Dv = 16, .softcap = 30.0f, .dtype = F32, .magnitude = 30},
    {.name = "softcap 1e5 (scores well inside it)", .B = 1, .H = 2, .Hkv = 1, .Tq = 9, .Tk = 33,
     .D = 16, .Dv = 16, .causal = true, .softcap = 1e5f, .dtype = F32, .magnitude = 3},
    {.name = "softcap 3e38 (past FLT_MAX / log2 e), sinks", .B = 1, .H = 2, .Hkv = 2, .Tq = 5,
     .Tk = 7, .D = 8, .Dv = 8, .softcap = 3e38f, .sinks = true, .dtype = F32, .magnitude = 2},
    {.name = "sinks", .B = 2, .H = 4, .Hkv = 2, .Tq = 13, .Tk = 13, .D = 16, .Dv = 16,
     .causal = true, .sinks = true, .dtype = F32, .magnitude = 1},
    {.name = "sinks fully masked rows", .B = 3, .H = 2, .Hkv = 2, .Tq = 7, .Tk = 20, .D = 8,
     .Dv = 8, .causal = true, .has_q_offset = true, .q_offset = -3, .sinks = true, .kv_len = true,
     .dtype = F32, .magnitude = 1},
    {.name = "alibi", .B = 1, .H = 4, .Hkv = 4, .Tq = 21, .Tk = 21, .D = 16, .Dv = 16,
     .causal = true, .alibi = true, .dtype = F32, .magnitude = 1},
    {.name = "alibi non-causal Tq<Tk", .B = 2, .H = 3, .Hkv = 1, .Tq = 5, .Tk = 33, .D = 12,
     .Dv = 20, .alibi = true, .dtype = F32, .magnitude = 1},
    {.name = "mask 2-D", .B = 2, .H = 2, .Hkv = 2, .Tq = 10, .Tk = 15, .D = 8, .Dv = 8,
     .mask = MASK_2D, .dtype = F32, .magnitude = 1},
    {.name = "mask (B,1) -inf rows", .B = 2, .H = 3, .Hkv = 3, .Tq = 9, .Tk = 9, .D = 16,
     .Dv = 16, .causal = true, .mask = MASK_B1, .neg_inf_row = true, .dtype = F32, .magnitude = 1},
    {.name = "mask (B,H) f16 GQA", .B = 1, .H = 4, .Hkv = 2, .Tq = 17, .Tk = 29, .D = 32,
     .Dv = 32, .mask = MASK_BH, .neg_inf_row = true, .layout = BSHD, .dtype = F16, .magnitude = 1},
    {.name = "key padding mask (B,1,1,Tk) f16 GQA", .B = 3, .H = 4, .Hkv = 2, .Tq = 6, .Tk = 23,
     .D = 16, .Dv = 16, .causal = true, .sinks = true, .mask = MASK_KEYS, .neg_inf_row = true,
     .dtype = F16, .magnitude = 1},
    {.name = "mask (H,Tq,Tk) bshd", .B = 2, .H = 3, .Hkv = 1, .Tq = 8, .Tk = 8, .D = 12,
     .Dv = 12, .alibi = true, .mask = MASK_HEADS, .neg_inf_row = true, .layout = BSHD,
     .dtype = F32, .magnitude = 1},
    {.name = "mask of -FLT_MAX (finfo.min): rows of it average V", .B = 2, .H = 2, .Hkv = 1,
     .Tq = 6, .Tk = 9, .D = 8, .Dv = 8, .causal = true, .alibi = true, .mask = MASK_B1,
     .neg_inf_row = true, .flt_max_mask = true, .dtype = F32, .magnitude = 1},
    {.name = "everything", .B = 2, .H = 4, .Hkv = 2, .Tq = 19, .Tk = 37, .D = 24, .Dv = 16,
     .causal = true, .has_window = true, .left = 9, .right = -1, .softcap = 10.0f, .sinks = true,
     .alibi = true, .mask = MASK_BH, .neg_inf_row = true, .kv_len = true, .dtype = F32,
     .magnitude = 2},
    {.name = "everything bf16 bshd", .B = 2, .H = 4, .Hkv = 1, .Tq = 6, .Tk = 41, .D = 40,
     .Dv = 40, .causal = true, .has_window = true, .left = 12, .right = 2, .softcap = 20.0f,
     .sinks = true, .alibi = true, .mask = MASK_B1, .layout = BSHD, .dtype = BF16, .magnitude = 1},
    {.name = "decode everything GQA", .B = 2, .H = 8, .Hkv = 2, .Tq = 4, .Tk = 300, .D = 64,
     .Dv = 64, .causal = true, .has_window = true, .left = 100, .right = -1, .softcap = 15.0f,
     .sinks = true, .alibi = true, .mask = MASK_BH, .neg_inf_row = true, .kv_len = true,
     .layout = BSHD, .dtype = F16, .magnitude = 2},
    {.name = "decode window softcap odd D", .B = 1, .H = 6, .Hkv = 2, .Tq = 1, .Tk = 777, .D = 13,
     .Dv = 21, .causal = true, .has_window = true, .left = 200, .right = 0, .softcap = 4.0f,
     .dtype = F32, .magnitude = 3},
    /* The rows kernel reads four mask entries at once where Tk % 4 == 0 and
     * D, Dv <= 64, from steps aligned to 4: a window starts rows off that
     * alignment; a small cap mixes steps of small and large ratios. */
    {.name = "four-entry mask reads, window off alignment, f16 mask, softcap 2",
     .B = 2, .H = 4, .Hkv = 2, .Tq = 21, .Tk = 64, .D = 20, .Dv = 36, .causal = true,
     .has_q_offset = true, .q_offset = 30, .has_window = true, .left = 7, .right = -1,
     .softcap = 2.0f, .mask = MASK_BH, .neg_inf_row = true, .dtype = F16, .magnitude = 2},
    /* One value a query row: the same for every key (what the softmax
     * cancels), but a -inf masks the row whole; Tk % 4 == 0 where the rows
     * kernel would read four entries at once. */
    {.name = "mask (B,1,Tq,1): a value a row, -inf rows", .B = 2, .H = 3, .Hkv = 1, .Tq = 11,
     .Tk = 32, .D = 16, .Dv = 8, .causal = true, .mask = MASK_ROWS, .neg_inf_row = true,
     .dtype = F32, .magnitude = 1},
    {.name = "mask (B,1,Tq,1) f16 with window, sinks, ALiBi, softcap", .B = 2, .H = 2, .Hkv = 2,
     .Tq = 9, .Tk = 21, .D = 8, .Dv = 12, .has_window = true, .left = 5, .right = 2,
     .softcap = 3.0f, .sinks = true, .alibi = true, .mask = MASK_ROWS, .neg_inf_row = true,
     .layout = BSHD, .dtype = F16, .magnitude = 2},
    {.name = "T=1 everything", .B = 1, .H = 2, .Hkv = 1, .Tq = 1, .Tk = 1, .D = 5, .Dv = 7,
     .causal = true, .has_window = true, .left = 0, .right = 0, .softcap = 1.0f, .sinks = true,
     .alibi = true, .mask = MASK_2D, .dtype = F32, .magnitude = 1},
};

/* Where the keys and queries are: packed sequences and paged caches. */
static const var_case layout_cases[] = {
    {.name = "varlen with an empty sequence", .B = 3, .H = 2, .Hkv = 2, .D = 16, .Dv = 16,
     .causal = true, .q_lens = lens_q3, .k_lens = lens_k3, .dtype = F32, .magnitude = 1},
    {.name = "varlen GQA non-causal", .B = 4, .H = 6, .Hkv = 2, .D = 13, .Dv = 8,
     .q_lens = lens_q4, .k_lens = lens_k4, .dtype = F32, .magnitude = 1},
    {.name = "varlen key padding mask", .B = 4, .H = 2, .Hkv = 1, .D = 16, .Dv = 16,
     .causal = true, .mask = MASK_KEYS, .neg_inf_row = true, .q_lens = lens_q4,
     .k_lens = lens_k4, .dtype = F32, .magnitude = 1},
    {.name = "varlen every variant f16", .B = 4, .H = 4, .Hkv = 2, .D = 32, .Dv = 32,
     .causal = true, .has_window = true, .left = 5, .right = 1, .softcap = 8.0f, .sinks = true,
     .alibi = true, .mask = MASK_BH, .kv_len = true, .q_lens = lens_q4, .k_lens = lens_k4,
     .dtype = F16, .magnitude = 1},
    {.name = "varlen 1 beside 70", .B = 3, .H = 2, .Hkv = 1, .D = 64, .Dv = 64, .causal = true,
     .q_lens = lens_mixed, .k_lens = lens_mixed, .dtype = BF16, .magnitude = 1},
    {.name = "paged decode block 16", .B = 3, .H = 8, .Hkv = 2, .Tq = 1, .Tk = 70, .D = 32,
     .Dv = 32, .causal = true, .block_size = 16, .dtype = F32, .magnitude = 1},
    {.name = "paged block 1", .B = 2, .H = 2, .Hkv = 2, .Tq = 3, .Tk = 9, .D = 8, .Dv = 8,
     .causal = true, .block_size = 1, .dtype = F32, .magnitude = 1},
    {.name = "paged prefill chunk bshd", .B = 2, .H = 4, .Hkv = 1, .Tq = 7, .Tk = 45, .D = 24,
     .Dv = 16, .causal = true, .block_size = 8, .layout = BSHD, .dtype = F16, .magnitude = 1},
    {.name = "paged every variant", .B = 2, .H = 4, .Hkv = 2, .Tq = 5, .Tk = 37, .D = 16,
     .Dv = 16, .causal = true, .has_window = true, .left = 10, .right = 0, .softcap = 6.0f,
     .sinks = true, .alibi = true, .mask = MASK_B1, .block_size = 5, .dtype = F32,
     .magnitude = 1},
    {.name = "paged block 256", .B = 1, .H = 2, .Hkv = 1, .Tq = 2, .Tk = 300, .D = 16, .Dv = 16,
     .causal = true, .block_size = 256, .dtype = F32, .magnitude = 1},
    {.name = "packed queries on a paged cache", .B = 3, .H = 2, .Hkv = 1, .Tk = 30, .D = 8,
     .Dv = 8, .causal = true, .q_lens = lens_dec, .block_size = 4, .dtype = F32, .magnitude = 1},
    {.name = "varlen, rows in no sequence", .B = 3, .H = 2, .Hkv = 2, .D = 16, .Dv = 16,
     .causal = true, .q_lens = lens_q3, .k_lens = lens_k3, .q_gaps = true, .dtype = F32,
     .magnitude = 1},
    {.name = "packed queries on a paged cache, rows in no sequence", .B = 3, .H = 2, .Hkv = 1,
     .Tk = 30, .D = 8, .Dv = 8, .causal = true, .q_lens = lens_dec, .q_gaps = true,
     .block_size = 4, .dtype = F32, .magnitude = 1},
};

static void test_score_variants(void **state)
{
    test_env *env = *state;
    rng r = {21};
    for (size_t i = 0; i < sizeof score_cases / sizeof score_cases[0]; i++)
        run_var_case(env, &score_cases[i], all_paths, NPATHS(all_paths), &r);
}

static void test_layout_variants(void **state)
{
    test_env *env = *state;
    rng r = {22};
    for (size_t i = 0; i < sizeof layout_cases / sizeof layout_cases[0]; i++)
        run_var_case(env, &layout_cases[i], all_paths, NPATHS(all_paths), &r);
}

/* Every score and layout variant case on the coopmat kernels, in f16 or in
 * bf16 (converted to f16 as it is staged; three splits only, as the
 * variants' code is the same) in turns (test_case_turn: f16 where it is
 * repeat `repeat`'s, bf16 in the others; the two sweeps, the softmax in
 * shared memory and in registers, take opposite turns, so that each case
 * meets both placements and both dtypes, and each placement every variant
 * through the cases that combine them all): f16 on the emulated kernel's
 * paths from `first` (1 and 3 splits, in turns); the real kernel's where the
 * device has matrix units on every case (a GPU check; none in CI). */
static const var_path coopmat_emulated_paths[] = {
    {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_EMULATED, 1},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_EMULATED, 3},
};
static const var_path coopmat_real_paths[] = {
    {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT, 1},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT, 3},
};

static void run_coopmat_variant_cases(test_env *env, int first, unsigned repeat, rng *r)
{
    const var_path *emulated = coopmat_emulated_paths, *real = coopmat_real_paths;
    vkattn_device_info info;
    if (!test_has_float16(env, &info))
        return;
    const var_path *paths = info.cooperative_matrix ? real : emulated;
    size_t n = 0;   /* the cases so far, for their turns */
    for (int layout = 0; layout < 2; layout++) {
        const var_case *cases = layout ? layout_cases : score_cases;
        size_t count = layout ? sizeof layout_cases / sizeof layout_cases[0]
                              : sizeof score_cases / sizeof score_cases[0];
        for (size_t i = 0; i < count; i++) {
            var_case c = cases[i];
            c.dtype = F16;
            bool f16_turn = test_case_turn(n, repeat, 2);
            bool bf16_turn = test_case_turn(n++, repeat + 1, 2);
            if (f16_turn)
                run_var_case(env, &c, &emulated[first], NPATHS(coopmat_emulated_paths) - first, r);
            if (paths != emulated)
                run_var_case(env, &c, paths, NPATHS(coopmat_real_paths), r);
            c.dtype = BF16;
            if (bf16_turn)
                run_var_case(env, &c, &paths[1], 1, r);
        }
    }
}

static void test_coopmat_variants(void **state)
{
    rng r = {23};
    run_coopmat_variant_cases(*state, 0, 0, &r);
}

/* The same with the softmax in registers (coopmat.softmax=2): each variant's
 * score adjustment on the accumulators' elements; 3 splits in the emulated
 * build. */
static void test_coopmat_register_variants(void **state)
{
    (void)state;
    assert_int_equal(setenv("VKATTN_TUNE", "coopmat_emulated.softmax=2,coopmat.softmax=2", 1), 0);
    test_env *env = test_env_create();
    assert_int_equal(unsetenv("VKATTN_TUNE"), 0);
    rng r = {59};
    vkattn_device_info info;
    if (test_has_float16(env, &info) && !test_register_softmax_refused(env))
        run_coopmat_variant_cases(env, 1, 1, &r);
    test_env_destroy(env);
}

/* Every score and layout variant case on the workgroup-scope coopmat kernel's
 * emulated build in f16 with 1 and 3 splits (in turns), the cases in turns
 * over three tilings (test_case_turn; a GPU runs the first alone, on every
 * case): its CPU tiling (16 rows, 16 keys, a lane a row), 8-key tiles on 4
 * lanes a row (workgroups of 64) and 32 rows of 4 a lane (workgroups of 8),
 * so that tiles are loaded straight from the buffers and staged, and the
 * softmax reduces over lanes and runs several rows a lane. In bf16 with 3
 * splits and the first tiling (no tiling changes the conversions), every
 * other case. The real build on every case where the device has
 * workgroup-scope matrices. */
static void test_coopmat_workgroup_variants(void **state)
{
    static const var_path paths[] = { /* the real build first (the GPU check's time) */
        {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_WORKGROUP, 1},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_WORKGROUP, 3},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED, 1},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED, 3},
    };
    static const char *tilings[] = {
        "",
        "coopmat_workgroup_emulated.keys=8,coopmat_workgroup_emulated.subgroups=8",
        "coopmat_workgroup_emulated.keys=8,coopmat_workgroup_emulated.rows=2,"
        "coopmat_workgroup_emulated.subgroups=1",
    };
    (void)state;
    rng r = {83};
    for (size_t t = 0; t < sizeof tilings / sizeof tilings[0]; t++) {
        test_env *env = test_env_tuned(tilings[t]);
        vkattn_device_info info;
        /* The other tilings reach lavapipe's paths; a GPU takes the first
         * (the GPU check's test time is short). */
        bool cpu = vkattn_context_info(env->gpu, &info) == VKATTN_OK &&
                   info.type == VKATTN_DEVICE_TYPE_CPU;
        if (t > 0 && !cpu)
            print_message("not run on a GPU: the tiling %s\n", tilings[t]);
        if ((t == 0 || cpu) && test_has_float16(env, &info)) {
            bool real = t == 0 && test_workgroup_scope(env);
            /* A GPU runs the first tiling alone: every case, turns or not. */
            unsigned repeats = cpu ? sizeof tilings / sizeof tilings[0] : 1;
            size_t turn = 0;   /* the cases so far, for their turns */
            for (int layout = 0; layout < 2; layout++) {
                const var_case *cases = layout ? layout_cases : score_cases;
                size_t n = layout ? sizeof layout_cases / sizeof layout_cases[0]
                                  : sizeof score_cases / sizeof score_cases[0];
                for (size_t i = 0; i < n; i++, turn++) {
                    var_case c = cases[i];
                    c.dtype = F16;
                    if (real)
                        run_var_case(env, &c, paths, 2, &r);
                    if (test_case_turn(turn, (unsigned)t, repeats))
                        run_var_case(env, &c, &paths[2], 2, &r);
                    c.dtype = BF16; /* 3 splits, the first tiling (no tiling moves bf16) */
                    if (real)
                        run_var_case(env, &c, &paths[1], 1, &r);
                    if (t == 0 && test_case_turn(turn, 1, 2))
                        run_var_case(env, &c, &paths[3], 1, &r);
                }
            }
        }
        test_env_destroy(env);
    }
}

/* ALiBi on rows far from every key (DESIGN.md allows |q_offset| up to 2^28):
 * in f32, j - pos there rounds to a multiple of up to 16 and its bias leaves
 * no bits of the scores beside it, so the kernels measure a row's distances
 * from its origin (the key position nearest its own) and move the sink logit
 * to match (score_variants.glsl). Rows 2^28 and 2^24 + 1 after their keys
 * (the keys' own distances decide), 2^28 before them with sinks (which, moved
 * the wrong way, would take all the weight), and a few positions past either
 * end, where the moved sink and the keys compete; packed sequences and a
 * paged cache, whose origins follow each sequence's keys (also through the
 * combine pass): on every path and the coopmat kernel's (the real one where
 * the device has it), against the CPU reference's float64 distances. */
static void test_alibi_far_rows(void **state)
{
    test_env *env = *state;
    rng r = {61};
    static const var_case cases[] = {
        {.name = "alibi, rows 2^28 after their keys", .B = 2, .H = 4, .Hkv = 2, .Tq = 3,
         .Tk = 40, .D = 8, .Dv = 4, .causal = true, .has_q_offset = true, .q_offset = 1 << 28,
         .alibi = true, .dtype = F32, .magnitude = 1},
        {.name = "alibi, rows 2^24 + 1 after their keys", .B = 1, .H = 3, .Hkv = 3, .Tq = 4,
         .Tk = 21, .D = 12, .Dv = 8, .has_q_offset = true, .q_offset = (1 << 24) + 1,
         .alibi = true, .dtype = F32, .magnitude = 1},
        {.name = "alibi sinks, rows 2^28 before their keys", .B = 3, .H = 2, .Hkv = 1, .Tq = 5,
         .Tk = 33, .D = 16, .Dv = 16, .has_q_offset = true, .q_offset = -(1 << 28),
         .sinks = true, .alibi = true, .kv_len = true, .dtype = F32, .magnitude = 1},
        {.name = "alibi sinks, rows 20 past the keys", .B = 2, .H = 4, .Hkv = 1, .Tq = 4,
         .Tk = 30, .D = 8, .Dv = 8, .causal = true, .has_q_offset = true, .q_offset = 50,
         .sinks = true, .alibi = true, .layout = BSHD, .dtype = F32, .magnitude = 1},
        {.name = "alibi sinks, rows 25 before the keys", .B = 1, .H = 4, .Hkv = 2, .Tq = 7,
         .Tk = 19, .D = 8, .Dv = 12, .has_q_offset = true, .q_offset = -25, .sinks = true,
         .alibi = true, .dtype = F32, .magnitude = 1},
        {.name = "alibi sinks varlen, rows 2^28 after their keys", .B = 4, .H = 4, .Hkv = 2,
         .D = 16, .Dv = 8, .has_q_offset = true, .q_offset = 1 << 28, .sinks = true,
         .alibi = true, .q_lens = lens_q4, .k_lens = lens_k4, .dtype = F32, .magnitude = 1},
        {.name = "alibi paged, rows 2^28 after their keys", .B = 2, .H = 4, .Hkv = 2, .Tq = 3,
         .Tk = 37, .D = 16, .Dv = 16, .causal = true, .has_q_offset = true, .q_offset = 1 << 28,
         .alibi = true, .block_size = 5, .dtype = F32, .magnitude = 1},
        {.name = "alibi sinks paged, rows 12 past the keys", .B = 2, .H = 2, .Hkv = 1, .Tq = 2,
         .Tk = 300, .D = 8, .Dv = 8, .has_q_offset = true, .q_offset = 312, .sinks = true,
         .alibi = true, .block_size = 16, .dtype = F32, .magnitude = 1},
    };
    vkattn_device_info info;
    bool f16 = test_has_float16(env, &info);
    const var_path *coopmat =
        info.cooperative_matrix ? coopmat_real_paths : coopmat_emulated_paths;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_var_case(env, &cases[i], all_paths, NPATHS(all_paths), &r);
        var_case c = cases[i];
        c.dtype = F16;
        if (f16)
            run_var_case(env, &c, coopmat, NPATHS(coopmat_emulated_paths), &r);
    }
}

/* A window of W keys at T: long enough that only the window's tiles are read. */
static void test_long_window(void **state)
{
    test_env *env = *state;
    rng r = {23};
    static const var_path paths[] = {
        {VKATTN_PATH_AUTO, VKATTN_FUSED_AUTO, 0},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 0},
    };
    var_case c = {.name = "window 100 at T=3000", .B = 1, .H = 2, .Hkv = 1, .Tq = 3000,
                  .Tk = 3000, .D = 32, .Dv = 32, .causal = true, .has_window = true, .left = 100,
                  .right = 0, .dtype = F16, .magnitude = 1};
    run_var_case(env, &c, paths, NPATHS(paths), &r);
}

/* MLA head sizes (DeepSeek: D = 576, Dv = 512) on the path AUTO takes. */
static void test_large_heads(void **state)
{
    test_env *env = *state;
    rng r = {24};
    static const var_path paths[] = {
        {VKATTN_PATH_AUTO, VKATTN_FUSED_AUTO, 0},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 0},
    };
    var_case c = {.name = "D=576 Dv=512 paged decode", .B = 2, .H = 4, .Hkv = 1, .Tq = 1,
                  .Tk = 40, .D = 576, .Dv = 512, .causal = true, .block_size = 16, .dtype = F16,
                  .magnitude = 0.5f};
    run_var_case(env, &c, paths, NPATHS(paths), &r);
    var_case dense = {.name = "D=576 Dv=512 prefill", .B = 1, .H = 2, .Hkv = 1, .Tq = 9, .Tk = 9,
                      .D = 576, .Dv = 512, .causal = true, .dtype = F32, .magnitude = 0.5f};
    run_var_case(env, &dense, paths, NPATHS(paths), &r);
}

/* Each bad variant argument: its status, and a message that names the tensor. */
static void expect_refusal(test_env *env, const vkattn_attention_desc *d, const pair *q,
                           const pair *k, const pair *v, const pair *o, vkattn_status want,
                           const char *needle)
{
    vkattn_status s = vkattn_attention(env->gpu, d, q->gpu, k->gpu, v->gpu, o->gpu);
    const char *msg = vkattn_last_error(env->gpu);
    if (s != want || !strstr(msg, needle))
        fail_msg("got %s \"%s\", expected %s naming \"%s\"", vkattn_status_string(s), msg,
                 vkattn_status_string(want), needle);
}

static void test_variant_errors(void **state)
{
    test_env *env = *state;
    rng r = {25};
    int64_t qs[4] = {2, 2, 4, 8}, packed[3] = {6, 2, 8}, cache[4] = {4, 2, 2, 8}, one = 2;
    pair q = pair_random(env, F32, 4, qs, &r, -1, 1), o = pair_output(env, 4, qs);
    pair qp = pair_random(env, F32, 3, packed, &r, -1, 1), op = pair_output(env, 3, packed);
    pair kc = pair_random(env, F32, 4, cache, &r, -1, 1);
    int64_t wrong_shape[2] = {4, 5};
    pair mask = pair_random(env, F32, 2, wrong_shape, &r, 0, 0);
    pair f_table = pair_random(env, F32, 2, (int64_t[]){2, 2}, &r, 0, 0);
    pair sinks3 = pair_random(env, F32, 1, (int64_t[]){3}, &r, 0, 0);
    int32_t bad_cu[3] = {0, 4, 3}, past_cu[3] = {0, 3, 9}, lens[2] = {3, 4};
    int32_t table[4] = {0, 1, 2, 9};
    int64_t three = 3, ts[2] = {2, 2};
    i32_pair cu_bad = i32_pair_make(env, 1, &three, bad_cu);
    i32_pair cu_past = i32_pair_make(env, 1, &three, past_cu);
    i32_pair kv = i32_pair_make(env, 1, &one, lens);
    i32_pair tab = i32_pair_make(env, 2, ts, table);

    vkattn_attention_desc d = {.has_window = true, .window_left = -2, .window_right = 0};
    expect_refusal(env, &d, &q, &q, &q, &o, VKATTN_ERROR_INVALID_ARGUMENT, "window (-2, 0)");
    d = (vkattn_attention_desc){.softcap = -1.0f};
    expect_refusal(env, &d, &q, &q, &q, &o, VKATTN_ERROR_INVALID_ARGUMENT, "softcap is -1");
    d = (vkattn_attention_desc){.softcap = 1e-40f}; /* subnormal */
    expect_refusal(env, &d, &q, &q, &q, &o, VKATTN_ERROR_INVALID_ARGUMENT,
                   "must be positive (at least 1.17549e-38)");
    d = (vkattn_attention_desc){.mask = mask.gpu};
    expect_refusal(env, &d, &q, &q, &q, &o, VKATTN_ERROR_SHAPE_MISMATCH, "mask is 4x5");
    d = (vkattn_attention_desc){.sinks = sinks3.gpu};
    expect_refusal(env, &d, &q, &q, &q, &o, VKATTN_ERROR_SHAPE_MISMATCH, "sinks is f32 3");
    d = (vkattn_attention_desc){.cu_seqlens_q = cu_bad.gpu, .cu_seqlens_k = cu_bad.gpu};
    expect_refusal(env, &d, &qp, &qp, &qp, &op, VKATTN_ERROR_INVALID_ARGUMENT,
                   "cu_seqlens_q[2] = 3 is less than cu_seqlens_q[1] = 4");
    d = (vkattn_attention_desc){.cu_seqlens_q = cu_past.gpu, .cu_seqlens_k = cu_past.gpu};
    expect_refusal(env, &d, &qp, &qp, &qp, &op, VKATTN_ERROR_INVALID_ARGUMENT,
                   "cu_seqlens_q[2] = 9 is past Q's 6 rows");
    d = (vkattn_attention_desc){.block_table = f_table.gpu, .kv_len = kv.gpu};
    expect_refusal(env, &d, &q, &kc, &kc, &o, VKATTN_ERROR_SHAPE_MISMATCH,
                   "block_table is f32");
    d = (vkattn_attention_desc){.block_table = tab.gpu};
    expect_refusal(env, &d, &q, &kc, &kc, &o, VKATTN_ERROR_INVALID_ARGUMENT, "needs kv_len");
    d = (vkattn_attention_desc){.block_table = tab.gpu, .kv_len = kv.gpu};
    expect_refusal(env, &d, &q, &kc, &kc, &o, VKATTN_ERROR_INVALID_ARGUMENT,
                   "block_table[1][1] = 9 is outside the cache's 4 blocks");
    d = (vkattn_attention_desc){.kv_len = kv.gpu};
    lens[1] = 5;
    assert_int_equal(vkattn_tensor_upload(kv.gpu, lens, VKATTN_DTYPE_I32), VKATTN_OK);
    expect_refusal(env, &d, &q, &q, &q, &o, VKATTN_ERROR_INVALID_ARGUMENT,
                   "kv_len[1] = 5 is outside 0..4");

    pair *pairs[] = {&q, &o, &qp, &op, &kc, &mask, &f_table, &sinks3};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        pair_destroy(pairs[i]);
    i32_pair *ints[] = {&cu_bad, &cu_past, &kv, &tab};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        i32_pair_destroy(ints[i]);
}

/* One answer on non-finite inputs (DESIGN.md section 2): a NaN or Inf in Q, K or
 * V at a position that is allowed, masked by causality, by kv_len or by a window
 * gives NaN and Inf at the same places on every path as on the CPU reference, so
 * a key a row may not see never touches it. In f16 and bf16 the (emulated)
 * coopmat kernel runs too (in bf16 a NaN or Inf must not spoil the powers of 2
 * its row, key or V tile is scaled by). */
/* Runs the call on each GPU path (the coopmat kernel only with 16-bit inputs)
 * against O's reference, already in o's host side: NaN and Inf must fall where
 * the reference has them. `what` names the case. */
/* The coopmat kernels round P to f16 (see test_attention.c), or on bf16
 * matrices to bf16 (nonfinite_bf16_matrices sets this around its cases). */
static double coopmat_p_rounding = 1e-3;

static void expect_paths(test_env *env, const var_path *paths, int path_count,
                         vkattn_attention_desc d, const pair *q, const pair *k, const pair *v,
                         pair *o, vkattn_dtype dt, const char *what)
{
    for (int i = 0; i < path_count; i++) {
        bool coopmat = is_coopmat(&paths[i]);
        if (!path_takes(&paths[i], dt))
            continue;
        char name[192], pn[64];
        snprintf(name, sizeof name, "%s (%s)", what, path_name(&paths[i], pn, sizeof pn));
        assert_int_equal(vkattn_tensor_upload(o->gpu, o->host, F32), VKATTN_OK);
        d.path = paths[i].path;
        d.fused_variant = paths[i].variant;
        d.kv_splits = paths[i].kv_splits;
        vkattn_status s = vkattn_attention(env->gpu, &d, q->gpu, k->gpu, v->gpu, o->gpu);
        if (s != VKATTN_OK)
            fail_msg("%s: %s", name, vkattn_last_error(env->gpu));
        expect_close(name, o, coopmat ? coopmat_p_rounding + 1e-5 : 1e-5, 0.0, NULL);
    }
}

/* The paths of `paths` (at most 16) whose turn it is (test_path_runs) into
 * `chosen`, after test_next_case(): a sweep's calls on one shape, dtype and
 * set of variants share their pipelines, so they take a turn together. */
static int paths_in_turn(const var_path *paths, int count, var_path *chosen)
{
    assert_true(count <= 16);
    test_next_case();
    int n = 0;
    for (int i = 0; i < count; i++)
        if (test_path_runs(paths, count, i))
            chosen[n++] = paths[i];
    return n;
}

static void nonfinite_sweep(test_env *env, const var_path *paths, int path_count);
static void nonfinite_sweep_types(test_env *env, const var_path *paths, int path_count,
                                  const vkattn_dtype *dtypes, int dtype_count);

/* The coopmat kernel on bf16 matrices (coopmat.bf16=2): bf16 inputs staged as
 * they are, so an Inf or NaN in V is flagged by bf16's exponent bits, not
 * f16's; P rounded to bf16 (8e-3, see test_attention.c). One stage and one
 * buffer, then two of each with 8-key tiles, so that the sweep's 12 keys span
 * both buffers (4x8x8 matrices). */
static void nonfinite_bf16_matrices(const var_path *paths, int path_count)
{
    static const char *tunings[] = {
        "coopmat_emulated.bf16=2",
        "coopmat_emulated.bf16=2,coopmat_emulated.keys=8,coopmat_emulated.stages=2,"
        "coopmat_emulated.buffers=2"};
    static const vkattn_dtype bf16_only[] = {BF16};
    coopmat_p_rounding = 8e-3;
    assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_SHAPE", "4x8x8", 1), 0);
    for (int i = 0; i < 2; i++) {
        test_env *env = test_env_tuned(tunings[i]);
        vkattn_device_info info;
        if (test_has_float16(env, &info))
            nonfinite_sweep_types(env, paths, path_count, bf16_only, 1);
        test_env_destroy(env);
    }
    assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_SHAPE"), 0);
    coopmat_p_rounding = 1e-3;
}
static void nonfinite_workgroup(void);

/* The coopmat kernel with two buffers (coopmat.buffers=2) on tiles of 8 keys
 * and 4-row matrices, one stage for f16 and two for bf16, then two for both:
 * each buffer's V tiles are flagged in words of their own, set while the
 * other buffer's tile computes. An Inf or NaN in V at key 9 (the second tile,
 * buffer 1) or 17 (the third, buffer 0 again) of 24, causal with 16 rows, so
 * that row 0, or rows 0-8, may not see it: a flag read from the wrong buffer's
 * words sends the tile to the block product, whose zero weights turn it into
 * NaN for them. Each tuning and dtype takes a turn of key splits
 * (paths_in_turn). */
static void nonfinite_buffers(const var_path *paths, int path_count)
{
    static const char *tunings[] = {
        "coopmat_emulated.buffers=2,coopmat_emulated.keys=8",
        "coopmat_emulated.buffers=2,coopmat_emulated.keys=8,coopmat_emulated.stages=2"};
    static const vkattn_dtype dtypes[] = {F16, BF16};
    const float values[2] = {INFINITY, NAN};
    static const int64_t keys[2] = {9, 17};
    assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_SHAPE", "4x8x8", 1), 0);
    for (int ti = 0; ti < 2; ti++) {
        test_env *env = test_env_tuned(tunings[ti]);
        vkattn_device_info info;
        if (!test_has_float16(env, &info)) {
            test_env_destroy(env);
            continue;
        }
        for (int t = 0; t < 2; t++) {
            var_path chosen[16];
            int chosen_count = paths_in_turn(paths, path_count, chosen);
            for (int ki = 0; ki < 2; ki++)
                for (int vi = 0; vi < 2; vi++) {
                    rng r = {(uint64_t)(70 + 4 * ki + vi)};
                    int64_t qs[4] = {1, 1, 16, 16}, ks[4] = {1, 1, 24, 16};
                    pair q = pair_random(env, dtypes[t], 4, qs, &r, -1, 1);
                    pair k = pair_random(env, dtypes[t], 4, ks, &r, -1, 1);
                    pair v = pair_random(env, dtypes[t], 4, ks, &r, -1, 1);
                    pair o = pair_output(env, 4, qs);
                    v.host[keys[ki] * 16 + 5] = values[vi];
                    assert_int_equal(vkattn_tensor_upload(v.gpu, v.host, F32), VKATTN_OK);
                    assert_int_equal(vkattn_tensor_upload(v.cpu, v.host, F32), VKATTN_OK);
                    vkattn_attention_desc d = {.causal = true};
                    assert_int_equal(vkattn_attention(env->cpu, &d, q.cpu, k.cpu, v.cpu, o.cpu),
                                     VKATTN_OK);
                    char what[160];
                    snprintf(what, sizeof what, "%s in V at key %lld of 24, %s, %s",
                             vi ? "NaN" : "Inf", (long long)keys[ki], t ? "bf16" : "f16",
                             tunings[ti]);
                    expect_paths(env, chosen, chosen_count, d, &q, &k, &v, &o, dtypes[t], what);
                    pair_destroy(&q), pair_destroy(&k), pair_destroy(&v), pair_destroy(&o);
                }
        }
        test_env_destroy(env);
    }
    assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_SHAPE"), 0);
}

static void test_nonfinite(void **state)
{
    test_env *env = *state;
    static const var_path paths[] = {
        {VKATTN_PATH_UNFUSED, VKATTN_FUSED_AUTO, 0},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 1},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 3},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 1},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 2},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_EMULATED, 1},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_EMULATED, 2},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_DECODE, 1},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_DECODE, 2},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED, 1},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED, 2},
    };
    nonfinite_sweep(env, paths, NPATHS(paths));
}

/* The same under the coopmat kernels' tunings and tilings (a test of their
 * own: the reruns in other memory and kernel modes leave these out, as they
 * do the coopmat kernels' other sweeps). */
static void test_coopmat_nonfinite(void **state)
{
    (void)state;
    /* The coopmat kernel's two stages flag a V tile's Inf or NaN as it stores
     * the tile it loaded during the previous one. With the softmax in
     * registers its plain-code sum over a V tile that holds one updates O in
     * its registers; with two row blocks of 4 rows a subgroup it runs per
     * block. */
    static const var_path coopmat[] = {
        {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_EMULATED, 1},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_EMULATED, 2},
    };
    assert_int_equal(setenv("VKATTN_TUNE", "coopmat_emulated.stages=2", 1), 0);
    test_env *staged = test_env_create();
    nonfinite_sweep(staged, coopmat, NPATHS(coopmat));
    test_env_destroy(staged);
    nonfinite_buffers(coopmat, NPATHS(coopmat));
    nonfinite_bf16_matrices(coopmat, NPATHS(coopmat));
    assert_int_equal(setenv("VKATTN_TUNE", "coopmat_emulated.softmax=2", 1), 0);
    test_env *in_registers = test_env_create();
    if (!test_register_softmax_refused(in_registers))
        nonfinite_sweep(in_registers, coopmat, NPATHS(coopmat));
    test_env_destroy(in_registers);
    /* Two row blocks a subgroup, with the softmax in shared memory and in
     * registers (whose P then leaves its registers for the plain code, both
     * blocks' rows). */
    static const char *row_tilings[] = {"coopmat_emulated.rows=2",
                                        "coopmat_emulated.rows=2,coopmat_emulated.softmax=2"};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(setenv("VKATTN_TUNE", row_tilings[i], 1), 0);
        assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_SHAPE", "4x16x16", 1), 0);
        test_env *row_tiles = test_env_create();
        assert_int_equal(unsetenv("VKATTN_TUNE"), 0);
        if (i == 0 || !test_register_softmax_refused(row_tiles))
            nonfinite_sweep(row_tiles, coopmat, NPATHS(coopmat));
        assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_SHAPE"), 0);
        test_env_destroy(row_tiles);
    }
    /* The softmax in registers tiled as on a GPU: several subgroups, each with
     * its own slices of S and P, and 8-key matrices, so that a tile's keys
     * span two blocks of P, which leave the registers a block at a time for
     * the plain code (one and two row blocks a subgroup); the real kernel
     * too where the device has matrix units (its A_STORE). */
    static const char *gpu_tilings[] = {
        "coopmat_emulated.softmax=2,coopmat.softmax=2",
        "coopmat_emulated.rows=2,coopmat_emulated.softmax=2,coopmat.rows=2,coopmat.softmax=2"};
    static const var_path real_coopmat[] = {
        {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT, 1},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT, 2},
    };
    for (int i = 0; i < 2; i++) {
        assert_int_equal(setenv("VKATTN_TUNE", gpu_tilings[i], 1), 0);
        assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_SHAPE", "4x8x8", 1), 0);
        assert_int_equal(setenv("VKATTN_COOPMAT_EMULATED_TILING", "gpu", 1), 0);
        test_env *gpu_tiled = test_env_create();
        assert_int_equal(unsetenv("VKATTN_TUNE"), 0);
        vkattn_device_info info;
        bool real = vkattn_context_info(gpu_tiled->gpu, &info) == VKATTN_OK &&
                    info.cooperative_matrix;
        if (!test_register_softmax_refused(gpu_tiled))
            nonfinite_sweep(gpu_tiled, coopmat, NPATHS(coopmat));
        if (real)
            nonfinite_sweep(gpu_tiled, real_coopmat, NPATHS(real_coopmat));
        assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_TILING"), 0);
        assert_int_equal(unsetenv("VKATTN_COOPMAT_EMULATED_SHAPE"), 0);
        test_env_destroy(gpu_tiled);
    }
    nonfinite_workgroup();
}

/* The workgroup-scope kernel with 8-key tiles: the first of the 12 keys
 * loaded straight from the buffers (V scanned for an Inf or NaN where some
 * row may not see a key), the rest staged (flagged as they are); on a lane a
 * row and on 4. */
static void nonfinite_workgroup(void)
{
    static const var_path workgroup[] = {
        {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED, 1},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED, 2},
    };
    static const char *tilings[] = {
        "coopmat_workgroup_emulated.keys=8",
        "coopmat_workgroup_emulated.keys=8,coopmat_workgroup_emulated.subgroups=8"};
    for (int i = 0; i < 2; i++) {
        test_env *env = test_env_tuned(tilings[i]);
        nonfinite_sweep(env, workgroup, NPATHS(workgroup));
        test_env_destroy(env);
    }
    /* Dv = 128, two O pieces of 64 columns: an Inf or NaN in V's column 100
     * at key 5 of 16, causal (rows 0-4 may not see it), the first 8-key tile
     * loaded straight from the buffers, its V flagged for every piece. */
    test_env *env = test_env_tuned(tilings[0]);
    const float values[2] = {INFINITY, NAN};
    for (int vi = 0; vi < 2; vi++) {
        rng r = {(uint64_t)(90 + vi)};
        int64_t qs[4] = {1, 1, 16, 16}, vs[4] = {1, 1, 16, 128};
        pair q = pair_random(env, F16, 4, qs, &r, -1, 1);
        pair k = pair_random(env, F16, 4, qs, &r, -1, 1);
        pair v = pair_random(env, F16, 4, vs, &r, -1, 1);
        pair o = pair_output(env, 4, vs);
        v.host[5 * 128 + 100] = values[vi];
        assert_int_equal(vkattn_tensor_upload(v.gpu, v.host, F32), VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(v.cpu, v.host, F32), VKATTN_OK);
        vkattn_attention_desc d = {.causal = true};
        assert_int_equal(vkattn_attention(env->cpu, &d, q.cpu, k.cpu, v.cpu, o.cpu), VKATTN_OK);
        expect_paths(env, workgroup, NPATHS(workgroup), d, &q, &k, &v, &o, F16,
                     vi ? "NaN in V's column 100, Dv=128" : "Inf in V's column 100, Dv=128");
        pair_destroy(&q), pair_destroy(&k), pair_destroy(&v), pair_destroy(&o);
    }
    test_env_destroy(env);
}

static void nonfinite_sweep(test_env *env, const var_path *paths, int path_count)
{
    static const vkattn_dtype dtypes[] = {F32, F16, BF16};
    nonfinite_sweep_types(env, paths, path_count, dtypes, 3);
}

static void nonfinite_sweep_types(test_env *env, const var_path *paths, int path_count,
                                  const vkattn_dtype *dtypes, int dtype_count)
{
    /* 8 query rows (2 heads on 1 kv head: 16 rows, the decode kernel's most)
     * against 12 keys, bottom-right aligned; b = 1 has kv_len 7; the window
     * keeps the last 5 keys of each row. Each dtype, windowed or not, takes
     * a turn of key splits (paths_in_turn). */
    static const int32_t lens[2] = {12, 7};
    const float values[2] = {NAN, INFINITY};
    for (int t = 0; t < dtype_count; t++)
    for (int windowed = 0; windowed < 2; windowed++) {
        var_path chosen[16];
        int chosen_count = paths_in_turn(paths, path_count, chosen);
        for (int which = 0; which < 3; which++)          /* Q, K, V */
            for (int vi = 0; vi < 2; vi++)
                for (int at = 0; at < 4; at++) {
                    static const int64_t key_positions[4] = {1, 5, 9, 11};
                    static const int64_t query_positions[4] = {1, 3, 5, 7};
                    rng r = {(uint64_t)(40 + at)};
                    int64_t qs[4] = {2, 2, 8, 16}, ks[4] = {2, 1, 12, 16};
                    vkattn_dtype dt = dtypes[t];
                    pair q = pair_random(env, dt, 4, qs, &r, -1, 1);
                    pair k = pair_random(env, dt, 4, ks, &r, -1, 1);
                    pair v = pair_random(env, dt, 4, ks, &r, -1, 1);
                    pair o = pair_output(env, 4, qs);
                    int64_t two = 2;
                    i32_pair kv = i32_pair_make(env, 1, &two, lens);
                    pair *target = which == 0 ? &q : which == 1 ? &k : &v;
                    int64_t row = which == 0 ? query_positions[at] : key_positions[at];
                    /* batch entry 1, (kv) head 0, row `row`, dimension 3 or 12:
                     * the high and the low half of a 32-bit word, in the
                     * first and the second 16-byte group of the row (the
                     * coopmat kernels check each half's exponent bits of a
                     * word in one add, where a slip would miss one half) */
                    int64_t dim = at % 2 ? 12 : 3;
                    size_t e = which == 0 ? (size_t)(((1 * 2 + 0) * 8 + row) * 16 + dim)
                                          : (size_t)(((1 * 1 + 0) * 12 + row) * 16 + dim);
                    target->host[e] = values[vi];
                    assert_int_equal(vkattn_tensor_upload(target->gpu, target->host, F32), VKATTN_OK);
                    assert_int_equal(vkattn_tensor_upload(target->cpu, target->host, F32), VKATTN_OK);
                    vkattn_attention_desc d = {.causal = true, .kv_len = kv.cpu,
                                               .has_window = windowed, .window_left = 4};
                    assert_int_equal(vkattn_attention(env->cpu, &d, q.cpu, k.cpu, v.cpu, o.cpu),
                                     VKATTN_OK);
                    d.kv_len = kv.gpu;
                    char what[96];
                    snprintf(what, sizeof what, "%s in %c at row %lld%s%s", vi ? "Inf" : "NaN",
                             "QKV"[which], (long long)row, windowed ? ", window 4" : "",
                             dt == F16 ? ", f16" : dt == BF16 ? ", bf16" : "");
                    expect_paths(env, chosen, chosen_count, d, &q, &k, &v, &o, dt, what);
                    pair_destroy(&q), pair_destroy(&k), pair_destroy(&v), pair_destroy(&o);
                    i32_pair_destroy(&kv);
                }
    }
}

/* Whole keys of NaN (every element of K and V): key 15, which the first
 * causal rows (bottom-right: 8 rows against 19 keys) may not see, and the keys
 * past kv_len. Head sizes whose rows do not fill the kernels' vectors
 * (D = 35: nine vec4s, the last one padded, over two lanes a row in the tiled
 * kernel, so one lane's last vec4 lies past the row; Dv = 7), in both layouts
 * (one kv head: rows are contiguous in either): no kernel may let such a key reach a row through the
 * padding of a vector (key 14's padding in memory is key 15's first element), a
 * lane past the row's end or a zero weight (0 * NaN). Rows that may not see
 * key 15 stay finite, equal to the reference; the others are NaN there too. 16
 * query rows per kv head, the decode kernel's most. */
static void test_masked_nan_keys(void **state)
{
    test_env *env = *state;
    static const var_path paths[] = {
        {VKATTN_PATH_UNFUSED, VKATTN_FUSED_AUTO, 0},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 1},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 1},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 2},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_DECODE, 1},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_EMULATED, 1},
        {VKATTN_PATH_FUSED, VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED, 1},
    };
    enum { B = 2, H = 2, TQ = 8, TK = 19, D = 35, DV = 7, NAN_KEY = 15 };
    static const int32_t lens[B] = {19, 17};
    for (int f16 = 0; f16 < 2; f16++)
        for (int bshd = 0; bshd < 2; bshd++) {
            rng r = {(uint64_t)(60 + 2 * f16 + bshd)};
            vkattn_dtype dt = f16 ? F16 : F32;
            vkattn_layout layout = bshd ? VKATTN_LAYOUT_BSHD : VKATTN_LAYOUT_BHSD;
            int64_t qs[4] = {B, H, TQ, D}, ks[4] = {B, 1, TK, D}, vs[4] = {B, 1, TK, DV},
                    os[4] = {B, H, TQ, DV};
            if (bshd) /* (B, T, heads, D) */
                qs[1] = TQ, qs[2] = H, ks[1] = vs[1] = TK, ks[2] = vs[2] = 1, os[1] = TQ, os[2] = H;
            pair q = pair_random(env, dt, 4, qs, &r, -1, 1);
            pair k = pair_random(env, dt, 4, ks, &r, -1, 1);
            pair v = pair_random(env, dt, 4, vs, &r, -1, 1);
            pair o = pair_output(env, 4, os);
            for (int b = 0; b < B; b++)
                for (int j = NAN_KEY; j < TK; j++) { /* one kv head: its row is (b, j) either way */
                    if (j != NAN_KEY && j < lens[b])
                        continue;
                    for (int d = 0; d < D; d++)
                        k.host[((size_t)b * TK + (size_t)j) * D + (size_t)d] = NAN;
                    for (int d = 0; d < DV; d++)
                        v.host[((size_t)b * TK + (size_t)j) * DV + (size_t)d] = NAN;
                }
            pair *inputs[2] = {&k, &v};
            for (int i = 0; i < 2; i++) {
                assert_int_equal(vkattn_tensor_upload(inputs[i]->gpu, inputs[i]->host, F32), VKATTN_OK);
                assert_int_equal(vkattn_tensor_upload(inputs[i]->cpu, inputs[i]->host, F32), VKATTN_OK);
            }
            int64_t two = B;
            i32_pair kv = i32_pair_make(env, 1, &two, lens);
            vkattn_attention_desc d = {.layout = layout, .causal = true, .kv_len = kv.cpu};
            assert_int_equal(vkattn_attention(env->cpu, &d, q.cpu, k.cpu, v.cpu, o.cpu), VKATTN_OK);
            d.kv_len = kv.gpu;
            char what[96];
            snprintf(what, sizeof what, "NaN keys, causal, D=35 Dv=7%s%s", f16 ? ", f16" : "",
                     bshd ? ", bshd" : "");
            expect_paths(env, paths, NPATHS(paths), d, &q, &k, &v, &o, dt, what);
            pair_destroy(&q), pair_destroy(&k), pair_destroy(&v), pair_destroy(&o);
            i32_pair_destroy(&kv);
        }
}

/* The f32 paths of the IEEE cases below: unfused, and each fused kernel with
 * and without key splits. */
static const var_path ieee_paths[] = {
    {VKATTN_PATH_UNFUSED, VKATTN_FUSED_AUTO, 0},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 1},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_ROWS, 2},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 1},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_TILED, 2},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_DECODE, 1},
    {VKATTN_PATH_FUSED, VKATTN_FUSED_DECODE, 2},
};

/* The pairs' host data to both their tensors. */
static void upload_pairs(pair *const *pairs, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        assert_int_equal(vkattn_tensor_upload(pairs[i]->gpu, pairs[i]->host, F32), VKATTN_OK);
        assert_int_equal(vkattn_tensor_upload(pairs[i]->cpu, pairs[i]->host, F32), VKATTN_OK);
    }
}

/* A key a row sees whose weight underflows to exactly 0 in f32 (its score 144
 * below the row's best) still multiplies its V row, as IEEE arithmetic has it:
 * a NaN there makes the row's output NaN on every path, as on the CPU reference
 * (and in float64), while a NaN at a key the mask sets to -inf never reaches
 * the row. Without a mask and with one (the fused kernels then tell masked keys
 * from underflowed ones keywise). */
static void test_underflowed_weights(void **state)
{
    test_env *env = *state;
    int64_t qs[4] = {1, 1, 4, 4}, ks[4] = {1, 1, 6, 4}, ms[2] = {4, 6};
    rng r = {77};
    pair q = pair_random(env, F32, 4, qs, &r, 0, 0);
    pair k = pair_random(env, F32, 4, ks, &r, -0.1f, 0.1f);
    pair v = pair_random(env, F32, 4, ks, &r, -1, 1);
    pair mask = pair_random(env, F32, 2, ms, &r, 0, 0);
    pair o = pair_output(env, 4, qs);
    for (int i = 0; i < 4; i++)
        q.host[i * 4] = 12.0f;     /* scale 1/2: key 0 scores 72, key 1 -72 */
    k.host[0 * 4] = 12.0f;
    k.host[1 * 4] = -12.0f;
    v.host[1 * 4 + 2] = NAN;       /* seen, weight 0 in f32: NaN in column 2 */
    v.host[3 * 4 + 1] = NAN;       /* masked (with the mask): column 1 stays finite */
    for (int i = 0; i < 4; i++)
        mask.host[i * 6 + 3] = -INFINITY;
    upload_pairs((pair *const[]){&q, &k, &v, &mask}, 4);
    for (int masked = 0; masked < 2; masked++) {
        vkattn_attention_desc d = {.mask = masked ? mask.cpu : NULL};
        assert_int_equal(vkattn_attention(env->cpu, &d, q.cpu, k.cpu, v.cpu, o.cpu), VKATTN_OK);
        float want[16];
        assert_int_equal(vkattn_tensor_download(o.cpu, want, F32), VKATTN_OK);
        for (int i = 0; i < 4; i++) { /* the reference itself: row i, columns 1 and 2 */
            assert_true(isnan(want[i * 4 + 2]));
            assert_true(isnan(want[i * 4 + 1]) == !masked);
        }
        d.mask = masked ? mask.gpu : NULL;
        expect_paths(env, ieee_paths, NPATHS(ieee_paths), d, &q, &k, &v, &o, F32,
                     masked ? "underflowed weight against NaN, mask"
                            : "underflowed weight against NaN");
    }
    pair *all[] = {&q, &k, &v, &mask, &o};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pair_destroy(all[i]);
}

/* A score that overflows to -inf in f32 (1e38 * -1e38; finite in the CPU
 * reference's double) at a key with NaN in its V row: the key is allowed and
 * weighs 0, so IEEE arithmetic takes the NaN into the row, on every path alike
 * (the unfused softmax once skipped every -inf score as a masked key, and gave
 * the row finite values). With a bounded window or a mask the unfused path's
 * -inf scores may be its not-allowed keys, so this holds without them. */
static void test_overflowed_scores(void **state)
{
    test_env *env = *state;
    int64_t qs[4] = {1, 1, 2, 4}, ks[4] = {1, 1, 3, 4};
    rng r = {79};
    pair q = pair_random(env, F32, 4, qs, &r, 0, 0);
    pair k = pair_random(env, F32, 4, ks, &r, 0, 0);
    pair v = pair_random(env, F32, 4, ks, &r, -1, 1);
    pair o = pair_output(env, 4, qs);
    /* (not past 2.3e38: the fused kernels take Q times log2(e) first) */
    q.host[0] = q.host[4] = 1e38f;
    k.host[0] = -1e38f;            /* key 0: -1e76, -inf in f32 */
    k.host[4] = 3e-38f;            /* key 1: 3 */
    k.host[8] = -3e-38f;           /* key 2: -3 */
    v.host[0] = NAN;               /* key 0's V, column 0 */
    upload_pairs((pair *const[]){&q, &k, &v}, 3);
    vkattn_attention_desc d = {.scale = 1.0f};
    assert_int_equal(vkattn_attention(env->cpu, &d, q.cpu, k.cpu, v.cpu, o.cpu), VKATTN_OK);
    float want[8];
    assert_int_equal(vkattn_tensor_download(o.cpu, want, F32), VKATTN_OK);
    for (int i = 0; i < 2; i++) { /* the reference itself: NaN in column 0 only */
        assert_true(isnan(want[i * 4]));
        assert_true(isfinite(want[i * 4 + 1]));
    }
    expect_paths(env, ieee_paths, NPATHS(ieee_paths), d, &q, &k, &v, &o, F32,
                 "score overflowed to -inf against NaN");
    /* Within a bounded window the same: row 0 (position 1) sees keys 0.. and
     * takes the NaN; row 1 (position 2) sees keys 1.. and not. The unfused
     * path once skipped every -inf under a bounded window as one of its
     * not-allowed keys. */
    d.has_window = true;
    d.window_left = 1;
    d.window_right = -1;
    assert_int_equal(vkattn_attention(env->cpu, &d, q.cpu, k.cpu, v.cpu, o.cpu), VKATTN_OK);
    assert_int_equal(vkattn_tensor_download(o.cpu, want, F32), VKATTN_OK);
    assert_true(isnan(want[0]));
    assert_true(isfinite(want[1]) && isfinite(want[4]) && isfinite(want[5]));
    expect_paths(env, ieee_paths, NPATHS(ieee_paths), d, &q, &k, &v, &o, F32,
                 "score overflowed to -inf against NaN, in a window");
    pair *all[] = {&q, &k, &v, &o};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pair_destroy(all[i]);
}

/* Scores that are -inf from the data (a -inf in K), not from a mask. Without a
 * mask such a key is allowed and weighs 0, which multiplies its V row as IEEE
 * arithmetic has it: a NaN there reaches the row, on every path as on the CPU
 * reference (which once skipped every -inf score, mask or none, and gave the
 * row finite values where every GPU path gave NaN). With a mask bound, every
 * path counts a -inf score as a masked key whatever made it -inf, so an
 * all-zero mask keeps the NaN out. A row whose every score is -inf gives
 * weights of 0, as PyTorch's safe softmax does: zeros where V is finite. */
static void test_infinite_scores(void **state)
{
    test_env *env = *state;
    int64_t qs[4] = {1, 1, 2, 4}, ks[4] = {1, 1, 3, 4}, ms[2] = {2, 3};
    rng r = {83};
    pair q = pair_random(env, F32, 4, qs, &r, -1, 1);
    pair k = pair_random(env, F32, 4, ks, &r, -1, 1);
    pair v = pair_random(env, F32, 4, ks, &r, -1, 1);
    pair mask = pair_random(env, F32, 2, ms, &r, 0, 0);
    pair o = pair_output(env, 4, qs);
    q.host[0] = q.host[4] = 1.0f;
    k.host[0] = -INFINITY;  /* key 0 scores -inf for both rows */
    v.host[0] = NAN;        /* key 0's V, column 0 */
    upload_pairs((pair *const[]){&q, &k, &v, &mask}, 4);
    float want[8];
    for (int masked = 0; masked < 2; masked++) {
        vkattn_attention_desc d = {.mask = masked ? mask.cpu : NULL};
        assert_int_equal(vkattn_attention(env->cpu, &d, q.cpu, k.cpu, v.cpu, o.cpu), VKATTN_OK);
        assert_int_equal(vkattn_tensor_download(o.cpu, want, F32), VKATTN_OK);
        for (int i = 0; i < 2; i++) { /* the reference itself */
            assert_true(isnan(want[i * 4]) == !masked);
            assert_true(isfinite(want[i * 4 + 1]));
        }
        d.mask = masked ? mask.gpu : NULL;
        expect_paths(env, ieee_paths, NPATHS(ieee_paths), d, &q, &k, &v, &o, F32,
                     masked ? "-inf score from K against NaN, zero mask"
                            : "-inf score from K against NaN");
    }
    /* Every key -inf, V finite: rows of zeros. */
    k.host[4] = k.host[8] = -INFINITY;
    v.host[0] = 0.5f;
    upload_pairs((pair *const[]){&k, &v}, 2);
    vkattn_attention_desc d = {0};
    assert_int_equal(vkattn_attention(env->cpu, &d, q.cpu, k.cpu, v.cpu, o.cpu), VKATTN_OK);
    assert_int_equal(vkattn_tensor_download(o.cpu, want, F32), VKATTN_OK);
    for (int e = 0; e < 8; e++)
        assert_true(want[e] == 0.0f);
    expect_paths(env, ieee_paths, NPATHS(ieee_paths), d, &q, &k, &v, &o, F32,
                 "every score -inf from K");
    /* And with an Inf and a NaN in V: the keys still weigh 0 each, and 0 * Inf
     * and 0 * NaN are NaN, in those columns only (PyTorch's safe softmax, then
     * P V; the API fuzzer found the reference giving zeros here). */
    v.host[0] = INFINITY;
    v.host[4 + 2] = NAN;
    upload_pairs((pair *const[]){&v}, 1);
    assert_int_equal(vkattn_attention(env->cpu, &d, q.cpu, k.cpu, v.cpu, o.cpu), VKATTN_OK);
    assert_int_equal(vkattn_tensor_download(o.cpu, want, F32), VKATTN_OK);
    for (int e = 0; e < 8; e++)
        assert_true(e % 4 == 0 || e % 4 == 2 ? isnan(want[e]) : want[e] == 0.0f);
    expect_paths(env, ieee_paths, NPATHS(ieee_paths), d, &q, &k, &v, &o, F32,
                 "every score -inf from K, Inf and NaN in V");
    /* The same with a sink, finite, -inf or NaN: a row that has seen no finite
     * score leaves its sink out (the GPU paths never fold it in), so the rows
     * stay as they were. */
    int64_t hs[1] = {1};
    pair sinks = pair_random(env, F32, 1, hs, &r, -1, 1);
    static const float sink_values[] = {0.75f, -INFINITY, NAN};
    for (int i = 0; i < 3; i++) {
        sinks.host[0] = sink_values[i];
        upload_pairs((pair *const[]){&sinks}, 1);
        vkattn_attention_desc ds = {.sinks = sinks.cpu};
        assert_int_equal(vkattn_attention(env->cpu, &ds, q.cpu, k.cpu, v.cpu, o.cpu), VKATTN_OK);
        assert_int_equal(vkattn_tensor_download(o.cpu, want, F32), VKATTN_OK);
        for (int e = 0; e < 8; e++)
            assert_true(e % 4 == 0 || e % 4 == 2 ? isnan(want[e]) : want[e] == 0.0f);
        ds.sinks = sinks.gpu;
        char name[64];
        snprintf(name, sizeof name, "every score -inf from K, sink %g", (double)sink_values[i]);
        expect_paths(env, ieee_paths, NPATHS(ieee_paths), ds, &q, &k, &v, &o, F32, name);
    }
    pair_destroy(&sinks);
    pair *all[] = {&q, &k, &v, &mask, &o};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pair_destroy(all[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_variant_errors),
        cmocka_unit_test(test_score_variants),
        cmocka_unit_test(test_layout_variants),
        cmocka_unit_test(test_coopmat_variants),
        cmocka_unit_test(test_coopmat_register_variants),
        cmocka_unit_test(test_coopmat_workgroup_variants),
        cmocka_unit_test(test_alibi_far_rows),
        cmocka_unit_test(test_long_window),
        cmocka_unit_test(test_large_heads),
        cmocka_unit_test(test_nonfinite),
        cmocka_unit_test(test_coopmat_nonfinite),
        cmocka_unit_test(test_masked_nan_keys),
        cmocka_unit_test(test_underflowed_weights),
        cmocka_unit_test(test_overflowed_scores),
        cmocka_unit_test(test_infinite_scores),
    };
    return test_run_group(tests, test_env_setup, test_env_teardown);
}
