/* Random calls of matmul, softmax, head_transpose, mha (and vkattn_mha_choose),
 * tensor_create and the transfers, valid or invalid in one way: see api_fuzz.h. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "api_fuzz.h"

/* ---------------------------------------------------------------- matmul -- */

enum mm_slot { MA, MB, MBIAS, MC, MSLOTS };
static const char *const mm_names[MSLOTS] = {"A", "B", "bias", "C"};

typedef struct mm_plan {
    tspec s[MSLOTS];
    vkattn_matmul_desc d;
    bool null_desc;
    int lead;                 /* A's batch dimensions, 0 to 2 */
    int64_t M, N, K;
    bool b_batched;
    int null_slot, foreign_slot, c_is;
    bool a_is_b;
} mm_plan;

static void mm_base(fuzz *f, mm_plan *p, bool square)
{
    rng *r = &f->r;
    memset(p, 0, sizeof *p);
    p->null_slot = p->foreign_slot = p->c_is = -1;
    p->lead = square ? 0 : rng_int(r, 0, 2);
    int64_t batch[2] = {rng_int(r, 1, 3), rng_int(r, 1, 4)};
    if (p->lead == 1)
        batch[0] = batch[1];
    p->M = rng_int(r, 1, 24), p->K = rng_int(r, 1, 40), p->N = rng_int(r, 1, 24);
    if (square)
        p->K = p->N = p->M;
    p->d.transpose_b = chance(r, 40);
    p->b_batched = p->lead > 0 && chance(r, 50);
    vkattn_dtype at = any_float(r);

    int64_t shape[4];
    int lead = p->lead;
    memcpy(shape, batch, (size_t)lead * sizeof *shape);
    shape[lead] = p->M, shape[lead + 1] = p->K;
    spec_shape(&p->s[MA], at, lead + 2, shape);
    int64_t bk = p->d.transpose_b ? p->N : p->K, bn = p->d.transpose_b ? p->K : p->N;
    if (p->b_batched) {
        /* A's innermost batch dimension a multiple of B's (grouped-query) */
        int64_t h = batch[lead - 1], g = h;
        while (h % g != 0 || (g == h && h > 1 && chance(r, 50)))
            g = rng_int(r, 1, (int)h);
        memcpy(shape, batch, (size_t)lead * sizeof *shape);
        shape[lead - 1] = g;
        shape[lead] = bk, shape[lead + 1] = bn;
        spec_shape(&p->s[MB], any_float(r), lead + 2, shape);
    } else {
        SPEC(&p->s[MB], square ? at : any_float(r), bk, bn);
    }
    if (chance(r, 40))
        SPEC(&p->s[MBIAS], any_float(r), p->N);
    memcpy(shape, batch, (size_t)lead * sizeof *shape);
    shape[lead] = p->M, shape[lead + 1] = p->N;
    spec_shape(&p->s[MC], out_float(r), lead + 2, shape);
    p->s[MC].sentinel = true;
    if (chance(r, 40))
        p->d.alpha = rng_uniform(r, -3.0f, 3.0f);
    if (chance(r, 10)) /* NaN and Inf propagate as IEEE arithmetic does */
        p->s[rng_int(r, MA, MB)].nonfinite_percent = 5;
    if (chance(r, 25)) {
        static const vkattn_matmul_variant forced[] = {
            VKATTN_MATMUL_TILED, VKATTN_MATMUL_NAIVE, VKATTN_MATMUL_TEXEL, VKATTN_MATMUL_TILED,
            VKATTN_MATMUL_NAIVE, VKATTN_MATMUL_TEXEL, VKATTN_MATMUL_COOPMAT};
        p->d.variant = forced[rng_int(r, 0, 6)];
        f->forced = true;
    }
}

typedef struct mm_args {
    twin *t[MSLOTS];
    vkattn_matmul_desc d;
    bool null_desc;
} mm_args;

static vkattn_status mm_call(fuzz *f, int side, const void *args)
{
    const mm_args *a = args;
    return vkattn_matmul(ctx_of(f, side), a->null_desc ? NULL : &a->d, side_of(a->t[MA], side),
                         side_of(a->t[MB], side), side_of(a->t[MBIAS], side),
                         side_of(a->t[MC], side));
}

void fuzz_matmul(fuzz *f)
{
    rng *r = &f->r;
    mm_plan p;
    int kind = rng_int(r, 0, 99);
    mm_base(f, &p, kind < 3);
    f->expect = EXPECT_OK;
    const unsigned all = SLOT(MA) | SLOT(MB) | SLOT(MBIAS) | SLOT(MC);
    if (kind < 3) {
        p.a_is_b = true;
        p.s[MB].used = false;
        set_mutation(f, "valid: B is A");
    } else if (kind < 5 && p.d.alpha == 0.0f && !p.d.transpose_b && p.d.variant == 0) {
        p.null_desc = true;
        set_mutation(f, "valid: desc NULL");
    } else if (kind < 12) {
        /* valid */
    } else if (kind < 20) {
        p.null_slot = pick_used(r, p.s, MSLOTS, SLOT(MA) | SLOT(MB) | SLOT(MC));
        set_mutation(f, "NULL %s", mm_names[p.null_slot]);
        f->expect = EXPECT_ARG;
    } else if (kind < 27) {
        p.foreign_slot = pick_used(r, p.s, MSLOTS, all);
        set_mutation(f, "foreign: %s of the other context", mm_names[p.foreign_slot]);
        f->expect = EXPECT_ARG;
    } else if (kind < 36) {
        int slot = pick_used(r, p.s, MSLOTS, all);
        p.s[slot].dtype = I32;
        set_mutation(f, "dtype: %s is i32", mm_names[slot]);
        f->expect = EXPECT_UNSUPPORTED;
    } else if (kind < 45) {
        int slot = pick_used(r, p.s, MSLOTS, all);
        if (slot == MBIAS) {
            spec_rerank(&p.s[slot]);
            f->expect = EXPECT_MISMATCH;
        } else {
            spec_flatten(&p.s[slot]);
            f->expect = EXPECT_SHAPE;
        }
        set_mutation(f, "rank: %s is %d-D", mm_names[slot], p.s[slot].ndim);
    } else if (kind < 70) {
        int slot = pick_used(r, p.s, MSLOTS, all);
        tspec *s = &p.s[slot];
        int dim = rng_int(r, 0, s->ndim - 1);
        bool b_batch = slot == MB && dim < s->ndim - 2;
        if (b_batch && dim == s->ndim - 3) /* not a divisor of A's */
            s->shape[dim] = p.s[MA].shape[dim] + 1;
        else
            spec_nudge(r, s, dim);
        set_mutation(f, "dim: %s dimension %d is %lld", mm_names[slot], dim,
                     (long long)s->shape[dim]);
        f->expect = EXPECT_MISMATCH;
    } else if (kind < 82) {
        if (chance(r, 50)) {
            p.d.alpha = (float[]){NAN, INFINITY, -INFINITY}[rng_int(r, 0, 2)];
            set_mutation(f, "scalar: alpha = %g", (double)p.d.alpha);
        } else {
            p.d.variant = (vkattn_matmul_variant)(int[]){6, -1, 100}[rng_int(r, 0, 2)];
            set_mutation(f, "enum: variant = %d", (int)p.d.variant);
        }
        f->expect = EXPECT_ARG;
    } else {
        p.c_is = pick_used(r, p.s, MSLOTS, SLOT(MA) | SLOT(MB) | SLOT(MBIAS));
        p.s[MC].used = false;
        set_mutation(f, "alias: C is %s", mm_names[p.c_is]);
        f->expect = EXPECT_ARG;
    }

    mm_args a = {.d = p.d, .null_desc = p.null_desc};
    describe(f, " desc%s{transpose_b %d, alpha %g, variant %d}", p.null_desc ? "=NULL " : "",
             p.d.transpose_b, (double)p.d.alpha, (int)p.d.variant);
    slot_alias aliases[2];
    int alias_count = 0;
    if (p.a_is_b)
        aliases[alias_count++] = (slot_alias){MB, MA};
    if (p.c_is >= 0)
        aliases[alias_count++] = (slot_alias){MC, p.c_is};
    build_slots(f, a.t, mm_names, p.s, MSLOTS, aliases, alias_count, p.null_slot, p.foreign_slot);
    /* test_matmul.c's bound: a few ulps of |alpha| sum |a b| + |bias|, growing
     * like sqrt(K) (|a|, |b|, |bias| <= 1). */
    double alpha = p.d.alpha == 0.0f ? 1.0 : fabs((double)p.d.alpha);
    double atol = 4 * 1.2e-7 * (2.0 + sqrt((double)p.K)) * (alpha * (double)p.K + 1.0);
    if (p.d.variant == VKATTN_MATMUL_COOPMAT)
        atol += 1e-2 * (alpha * (double)p.K + 1.0); /* f16 inputs on the matrix units */
    run_call(f, mm_call, &a, a.t[MC], atol, 0.0);
}

/* --------------------------------------------------------------- softmax -- */

enum sm_slot { SX, SY, SKV_LEN, SSLOTS };
static const char *const sm_names[SSLOTS] = {"X", "Y", "kv_len"};

typedef struct sm_args {
    twin *t[SSLOTS];
    vkattn_softmax_desc d;
    bool null_desc;
} sm_args;

static vkattn_status sm_call(fuzz *f, int side, const void *args)
{
    const sm_args *a = args;
    vkattn_softmax_desc d = a->d;
    d.kv_len = side_of(a->t[SKV_LEN], side);
    return vkattn_softmax(ctx_of(f, side), a->null_desc ? NULL : &d, side_of(a->t[SX], side),
                          side_of(a->t[SY], side));
}

void fuzz_softmax(fuzz *f)
{
    rng *r = &f->r;
    tspec s[SSLOTS] = {{0}};
    vkattn_softmax_desc d = {0};
    int ndim = rng_int(r, 2, 4);
    int64_t shape[4];
    for (int i = 0; i < ndim - 2; i++)
        shape[i] = rng_int(r, 1, 3);
    int64_t Tq = rng_int(r, 1, 12), Tk = rng_int(r, 1, 40);
    shape[ndim - 2] = Tq, shape[ndim - 1] = Tk;
    spec_shape(&s[SX], any_float(r), ndim, shape);
    s[SX].lo = -3.0f, s[SX].hi = 3.0f;
    s[SX].neg_inf_percent = chance(r, 20) ? 10 : 0;
    s[SX].nonfinite_percent = chance(r, 10) ? 3 : 0;
    spec_shape(&s[SY], out_float(r), ndim, shape);
    s[SY].sentinel = true;
    bool in_place = chance(r, 20);
    if (chance(r, 30)) {
        /* No range in vkattn.h: keys j >= kv_len[n] are masked, whatever it is. */
        int64_t n = ndim >= 3 ? shape[0] : 1;
        int32_t lens[3];
        for (int64_t i = 0; i < n; i++)
            lens[i] = chance(r, 10) ? (chance(r, 50) ? INT32_MIN : INT32_MAX)
                                    : rng_int(r, -2, (int)Tk + 3);
        spec_i32(&s[SKV_LEN], 0, n, lens);
    }
    d.causal = chance(r, 50);
    if (chance(r, 30)) {
        d.has_q_offset = true;
        d.q_offset = chance(r, 15) ? (chance(r, 50) ? INT32_MAX : -INT32_MAX)
                                   : rng_int(r, -(int)Tq - 3, (int)Tk + 3);
    }
    if (chance(r, 40))
        d.scale = rng_uniform(r, 0.1f, 4.0f);
    if (chance(r, 25)) {
        d.variant = chance(r, 50) ? VKATTN_SOFTMAX_SUBGROUP : VKATTN_SOFTMAX_SHARED;
        f->forced = true;
    }

    f->expect = EXPECT_OK;
    bool null_desc = false;
    int null_slot = -1, foreign_slot = -1;
    bool y_is_x = false;
    const unsigned all = SLOT(SX) | SLOT(SY) | SLOT(SKV_LEN);
    int kind = rng_int(r, 0, 99);
    if (kind < 30) {
        if (in_place) {
            y_is_x = true;
            set_mutation(f, "valid: in place");
        }
    } else if (kind < 33) {
        d.has_q_offset = false;
        d.q_offset = INT64_MIN;
        set_mutation(f, "valid: q_offset junk, off");
    } else if (kind < 36 && !s[SKV_LEN].used) {
        d = (vkattn_softmax_desc){0};
        f->forced = false;
        null_desc = true;
        set_mutation(f, "valid: desc NULL");
    } else if (kind < 41) {
        null_slot = rng_int(r, SX, SY);
        set_mutation(f, "NULL %s", sm_names[null_slot]);
        f->expect = EXPECT_ARG;
    } else if (kind < 46) {
        foreign_slot = pick_used(r, s, SSLOTS, all);
        set_mutation(f, "foreign: %s of the other context", sm_names[foreign_slot]);
        f->expect = EXPECT_ARG;
    } else if (kind < 53) {
        int slot = pick_used(r, s, SSLOTS, all);
        s[slot].dtype = slot == SKV_LEN ? F32 : I32;
        set_mutation(f, "dtype: %s is %s", sm_names[slot], dtype_label(s[slot].dtype));
        f->expect = slot == SKV_LEN ? EXPECT_AUX_DTYPE : EXPECT_UNSUPPORTED;
    } else if (kind < 60) {
        int slot = pick_used(r, s, SSLOTS, all);
        if (slot == SX) {
            spec_flatten(&s[slot]);
            f->expect = EXPECT_SHAPE;
        } else {
            spec_rerank(&s[slot]);
            f->expect = EXPECT_MISMATCH;
        }
        set_mutation(f, "rank: %s is %d-D", sm_names[slot], s[slot].ndim);
    } else if (kind < 75) {
        int slot = pick_used(r, s, SSLOTS, all);
        int dim = rng_int(r, 0, s[slot].ndim - 1);
        spec_nudge(r, &s[slot], dim);
        set_mutation(f, "dim: %s dimension %d is %lld", sm_names[slot], dim,
                     (long long)s[slot].shape[dim]);
        f->expect = EXPECT_MISMATCH;
    } else if (kind < 88) {
        int x = rng_int(r, 0, 2);
        if (x == 0) {
            d.scale = bad_positive(r, false);
            set_mutation(f, "scalar: scale = %g", (double)d.scale);
        } else if (x == 1) {
            /* vkattn.h gives no range; the kernels take 32-bit offsets */
            static const int64_t bad[] = {(int64_t)INT32_MAX + 1, -(int64_t)INT32_MAX - 1,
                                          INT64_MAX, INT64_MIN};
            d.has_q_offset = true;
            d.q_offset = bad[rng_int(r, 0, 3)];
            set_mutation(f, "scalar: q_offset = %lld", (long long)d.q_offset);
        } else {
            d.variant = (vkattn_softmax_variant)(int[]){3, -1, 50}[rng_int(r, 0, 2)];
            set_mutation(f, "enum: variant = %d", (int)d.variant);
        }
        f->expect = EXPECT_ARG;
    } /* else valid */

    sm_args a = {.d = d, .null_desc = null_desc};
    describe(f, " desc%s{scale %g, causal %d, q_offset %s%lld, variant %d}",
             null_desc ? "=NULL " : "", (double)d.scale, d.causal, d.has_q_offset ? "" : "off ",
             (long long)d.q_offset, (int)d.variant);
    if (y_is_x)
        s[SY].used = false;
    build_slots(f, a.t, sm_names, s, SSLOTS, &(slot_alias){SY, SX}, y_is_x, null_slot,
                foreign_slot);
    /* test_softmax.c's bound, for arguments up to |scale * 6| */
    double scale = d.scale == 0.0f || !isfinite(d.scale) ? 1.0 : fabs((double)d.scale);
    run_call(f, sm_call, &a, a.t[SY], 2e-6 * (1.0 + scale * 6.0), 2e-5);
}

/* -------------------------------------------------------- head transpose -- */

typedef struct ht_args {
    twin *x, *y;
} ht_args;

static vkattn_status ht_call(fuzz *f, int side, const void *args)
{
    const ht_args *a = args;
    return vkattn_head_transpose(ctx_of(f, side), side_of(a->x, side), side_of(a->y, side));
}

void fuzz_head_transpose(fuzz *f)
{
    rng *r = &f->r;
    tspec x, y;
    int64_t A = rng_int(r, 1, 3), B = rng_int(r, 1, 6), C = rng_int(r, 1, 6),
            D = rng_int(r, 1, 40);
    SPEC(&x, any_float(r), A, B, C, D);
    SPEC(&y, out_float(r), A, C, B, D);
    y.sentinel = true;
    f->expect = EXPECT_OK;
    int kind = rng_int(r, 0, 99), null_side = -1;
    bool foreign_x = false, foreign_y = false, y_is_x = false;
    tspec *target = chance(r, 50) ? &x : &y;
    const char *name = target == &x ? "X" : "Y";
    if (kind < 30) {
        /* valid */
    } else if (kind < 38) {
        null_side = rng_int(r, 0, 1);
        set_mutation(f, "NULL %s", null_side ? "Y" : "X");
        f->expect = EXPECT_ARG;
    } else if (kind < 46) {
        foreign_x = target == &x, foreign_y = target == &y;
        set_mutation(f, "foreign: %s of the other context", name);
        f->expect = EXPECT_ARG;
    } else if (kind < 54) {
        target->dtype = I32;
        set_mutation(f, "dtype: %s is i32", name);
        f->expect = EXPECT_UNSUPPORTED;
    } else if (kind < 62) {
        spec_rerank(target);
        set_mutation(f, "rank: %s is 3-D", name);
        f->expect = EXPECT_SHAPE;
    } else if (kind < 82) {
        int dim = rng_int(r, 0, 3);
        spec_nudge(r, target, dim);
        set_mutation(f, "dim: %s dimension %d is %lld", name, dim, (long long)target->shape[dim]);
        f->expect = EXPECT_MISMATCH;
    } else if (kind < 92) {
        /* half the time where B == C, so that X's shape would fit Y */
        y_is_x = true;
        if (chance(r, 50))
            x.shape[2] = x.shape[1];
        set_mutation(f, "alias: Y is X");
        f->expect = EXPECT_ARG;
    } /* else valid */
    if (y_is_x)
        y.used = false;
    ht_args a = {twin_build(f, "X", &x), twin_build(f, "Y", &y)};
    if (y_is_x) {
        a.y = a.x;
        describe(f, " Y=X");
    }
    if (foreign_x)
        make_foreign(a.x);
    if (foreign_y)
        make_foreign(a.y);
    if (null_side == 0)
        a.x = NULL;
    if (null_side == 1)
        a.y = NULL;
    run_call(f, ht_call, &a, a.y, 0.0, 0.0); /* a copy: exact */
}

/* ------------------------------------------------------------------- mha -- */

enum mha_slot { HX, HW_QKV, HB_QKV, HW_OUT, HB_OUT, HY, HSINKS, HALIBI, HMASK, HSLOTS };
static const char *const mha_names[HSLOTS] = {"X", "W_qkv", "b_qkv", "W_out", "b_out", "Y",
                                              "sinks", "alibi_slopes", "mask"};

typedef struct mha_args {
    twin *t[HSLOTS];
    vkattn_mha_desc d;
    bool null_desc;
} mha_args;

static vkattn_status mha_call(fuzz *f, int side, const void *args)
{
    const mha_args *a = args;
    vkattn_mha_desc d = a->d;
    d.sinks = side_of(a->t[HSINKS], side);
    d.alibi_slopes = side_of(a->t[HALIBI], side);
    d.mask = side_of(a->t[HMASK], side);
    vkattn_context *ctx = ctx_of(f, side);
    const vkattn_mha_desc *dp = a->null_desc ? NULL : &d;
    vkattn_tensor *x = side_of(a->t[HX], side), *w_qkv = side_of(a->t[HW_QKV], side),
                  *b_qkv = side_of(a->t[HB_QKV], side), *w_out = side_of(a->t[HW_OUT], side),
                  *b_out = side_of(a->t[HB_OUT], side), *y = side_of(a->t[HY], side);
    /* vkattn_mha_choose: "Same arguments and statuses as vkattn_mha". */
    vkattn_attention_choice choice;
    vkattn_status chosen = vkattn_mha_choose(ctx, dp, x, w_qkv, b_qkv, w_out, b_out, y, &choice);
    char chosen_message[512];
    snprintf(chosen_message, sizeof chosen_message, "%s", vkattn_last_error(ctx));
    vkattn_status s = vkattn_mha(ctx, dp, x, w_qkv, b_qkv, w_out, b_out, y);
    if (s != chosen)
        finding(f, "choose differs", "%s: vkattn_mha_choose returned %s (%s), vkattn_mha %s (%s)",
                side ? "CPU" : "GPU", vkattn_status_string(chosen), chosen ? chosen_message : "",
                vkattn_status_string(s), s ? vkattn_last_error(ctx) : "");
    return s;
}

void fuzz_mha(fuzz *f)
{
    rng *r = &f->r;
    tspec s[HSLOTS] = {{0}};
    int64_t B = rng_int(r, 1, 2), T = rng_int(r, 1, 10), C = rng_int(r, 1, 24),
            H = rng_int(r, 1, 4), Dh = (int64_t[]){1, 2, 4, 8, 16}[rng_int(r, 0, 4)];
    int64_t C_out = chance(r, 30) ? C : rng_int(r, 1, 24), width = H * Dh;
    /* nn.Linear's initialisation range, as test_mha.c */
    float lq = 1.0f / sqrtf((float)C), lo = 1.0f / sqrtf((float)width);
    SPEC(&s[HX], any_float(r), B, T, C);
    SPEC(&s[HW_QKV], any_float(r), 3 * width, C);
    s[HW_QKV].lo = -lq, s[HW_QKV].hi = lq;
    if (chance(r, 50)) {
        SPEC(&s[HB_QKV], any_float(r), 3 * width);
        s[HB_QKV].lo = -lq, s[HB_QKV].hi = lq;
    }
    SPEC(&s[HW_OUT], any_float(r), C_out, width);
    s[HW_OUT].lo = -lo, s[HW_OUT].hi = lo;
    if (chance(r, 50)) {
        SPEC(&s[HB_OUT], any_float(r), C_out);
        s[HB_OUT].lo = -lo, s[HB_OUT].hi = lo;
    }
    SPEC(&s[HY], out_float(r), B, T, C_out);
    s[HY].sentinel = true;
    vkattn_mha_desc d = {.heads = (int32_t)H, .causal = chance(r, 60)};
    if (chance(r, 30))
        d.scale = rng_uniform(r, 0.1f, 1.0f);
    int x = rng_int(r, 0, 9);
    d.path = x == 0 ? VKATTN_PATH_UNFUSED : x == 1 ? VKATTN_PATH_FUSED : VKATTN_PATH_AUTO;
    f->forced = d.path == VKATTN_PATH_FUSED;
    if (chance(r, 20)) {
        d.has_window = true;
        d.window_left = window_side(r, T), d.window_right = window_side(r, T);
    }
    if (chance(r, 20))
        d.softcap = rng_uniform(r, 0.5f, 10.0f);
    if (chance(r, 25))
        d.compute_dtype = chance(r, 50) ? F16 : BF16;
    if (chance(r, 20))
        SPEC(&s[HSINKS], F32, H);
    if (chance(r, 20)) {
        SPEC(&s[HALIBI], F32, H);
        s[HALIBI].lo = 0.0f, s[HALIBI].hi = 0.5f;
    }
    const int64_t mask_full[4] = {B, H, T, T};
    if (chance(r, 20)) {
        /* 2 to 4 dimensions aligned right, each the layer's or 1 (the last
         * mostly T; 1: one value a query row) */
        int ndim = rng_int(r, 2, 4);
        int64_t shape[4];
        for (int i = 0; i < 4; i++)
            shape[i] = chance(r, i == 3 ? 85 : 60) ? mask_full[i] : 1;
        spec_shape(&s[HMASK], any_float(r), ndim, shape + 4 - ndim);
        s[HMASK].lo = -2.0f, s[HMASK].hi = 2.0f;
        s[HMASK].neg_inf_percent = chance(r, 40) ? 15 : 0;
    }

    f->expect = EXPECT_OK;
    bool null_desc = false, y_is_x = false;
    int null_slot = -1, foreign_slot = -1;
    const unsigned all = (1u << HSLOTS) - 1;
    const unsigned required = SLOT(HX) | SLOT(HW_QKV) | SLOT(HW_OUT) | SLOT(HY);
    int kind = rng_int(r, 0, 99);
    if (kind < 7) {
        /* valid: each compiles its kernels (about 1 s on lavapipe) */
    } else if (kind < 18) {
        null_desc = true;
        set_mutation(f, "NULL desc");
        f->expect = EXPECT_ARG;
    } else if (kind < 25) {
        d.heads = (int32_t[]){0, -1, INT32_MIN}[rng_int(r, 0, 2)];
        set_mutation(f, "scalar: heads = %d", d.heads);
        f->expect = EXPECT_ARG;
    } else if (kind < 32) {
        null_slot = pick_used(r, s, HSLOTS, required);
        set_mutation(f, "NULL %s", mha_names[null_slot]);
        f->expect = EXPECT_ARG;
    } else if (kind < 39) {
        foreign_slot = pick_used(r, s, HSLOTS, all);
        set_mutation(f, "foreign: %s of the other context", mha_names[foreign_slot]);
        f->expect = EXPECT_ARG;
    } else if (kind < 47) {
        int slot = pick_used(r, s, HSLOTS, all);
        bool head_vector = slot == HSINKS || slot == HALIBI;
        s[slot].dtype = head_vector ? F16 : I32;
        set_mutation(f, "dtype: %s is %s", mha_names[slot], dtype_label(s[slot].dtype));
        f->expect = head_vector || slot == HMASK ? EXPECT_AUX_DTYPE : EXPECT_UNSUPPORTED;
    } else if (kind < 53) {
        spec_rerank(&s[HX]);
        set_mutation(f, "rank: X is 4-D");
        f->expect = EXPECT_SHAPE;
    } else if (kind < 75) {
        int slot = pick_used(r, s, HSLOTS, all & ~SLOT(HX));
        int dim = rng_int(r, 0, s[slot].ndim - 1);
        if (slot == HMASK) /* neither 1 nor the layer's size */
            s[slot].shape[dim] = mask_full[4 - s[slot].ndim + dim] + 1;
        else
            spec_nudge(r, &s[slot], dim);
        set_mutation(f, "dim: %s dimension %d is %lld", mha_names[slot], dim,
                     (long long)s[slot].shape[dim]);
        f->expect = EXPECT_MISMATCH;
    } else if (kind < 82 && C_out == C) {
        y_is_x = true;
        set_mutation(f, "alias: Y is X");
        f->expect = EXPECT_ARG;
    } else {
        f->expect = EXPECT_ARG;
        int y = rng_int(r, 0, 4);
        if (y == 0) {
            d.scale = bad_positive(r, false);
            set_mutation(f, "scalar: scale = %g", (double)d.scale);
        } else if (y == 1) {
            d.softcap = bad_positive(r, true);
            set_mutation(f, "scalar: softcap = %g", (double)d.softcap);
        } else if (y == 2) {
            d.has_window = true;
            d.window_left = (int32_t[]){-2, INT32_MIN}[rng_int(r, 0, 1)];
            set_mutation(f, "scalar: window (%d, %d)", d.window_left, d.window_right);
        } else if (y == 3) {
            d.path = (vkattn_attention_path)(int[]){3, -1}[rng_int(r, 0, 1)];
            f->forced = false;
            set_mutation(f, "enum: path = %d", (int)d.path);
        } else {
            d.compute_dtype = (vkattn_dtype)(int[]){I32, 4, -1}[rng_int(r, 0, 2)];
            set_mutation(f, "enum: compute_dtype = %d", (int)d.compute_dtype);
        }
    }

    mha_args a = {.d = d, .null_desc = null_desc};
    describe(f, " desc%s{heads %d, causal %d, scale %g, path %d, window %s(%d, %d), softcap %g, "
             "compute_dtype %d}",
             null_desc ? "=NULL " : "", d.heads, d.causal, (double)d.scale, (int)d.path,
             d.has_window ? "" : "off ", d.window_left, d.window_right, (double)d.softcap,
             (int)d.compute_dtype);
    if (y_is_x)
        s[HY].used = false;
    build_slots(f, a.t, mha_names, s, HSLOTS, &(slot_alias){HY, HX}, y_is_x, null_slot,
                foreign_slot);
    /* test_mha.c's bound: about 1e-5 of |v| from attention, summed over a row
     * of W_out (|W_out| <= lo), plus the projections' own. */
    double atol = 1e-5 * (1.0 + (double)width * lo) + 1e-6 * (double)C;
    /* A 16-bit compute dtype (test_mha.c, bench_mha.c): a spacing and a half
     * of errors of random sign on q, k, v and o, about 4 sqrt(C/3) lq large
     * (uniform inputs), summed over a row of W_out as its 2-norm,
     * sqrt(width/3) lo, does; four times that. */
    if (d.compute_dtype == F16 || d.compute_dtype == BF16)
        atol += 4.0 * 1.5 * (d.compute_dtype == F16 ? 0x1p-10 : 0x1p-7) *
                (4.0 * sqrt((double)C / 3.0) * lq) * (sqrt((double)width / 3.0) * lo);
    run_call(f, mha_call, &a, a.t[HY], atol, 0.0);
}

/* ------------------------------------------------ tensors and transfers -- */

typedef struct create_args {
    vkattn_tensor_desc desc;
    bool null_desc, null_out;
} create_args;

static vkattn_status create_call(fuzz *f, int side, const void *args)
{
    const create_args *a = args;
    vkattn_tensor *t = (vkattn_tensor *)(uintptr_t)0x1; /* must become NULL on failure */
    vkattn_status s = vkattn_tensor_create(ctx_of(f, side), a->null_desc ? NULL : &a->desc,
                                           a->null_out ? NULL : &t);
    if (a->null_out)
        return s;
    if (s != VKATTN_OK && t != NULL)
        finding(f, "create out", "%s: tensor_create failed (%s) but left *out %p, not NULL",
                side ? "CPU" : "GPU", vkattn_status_string(s), (void *)t);
    if (s == VKATTN_OK) {
        vkattn_tensor_desc got = vkattn_tensor_get_desc(t);
        if (got.dtype != a->desc.dtype || got.ndim != a->desc.ndim ||
            memcmp(got.shape, a->desc.shape, (size_t)got.ndim * sizeof got.shape[0]))
            finding(f, "create desc", "%s: vkattn_tensor_get_desc differs from the desc",
                    side ? "CPU" : "GPU");
        vkattn_tensor_destroy(t);
    }
    return s;
}

/* tensor_create with descs at and past the edges: dtype and ndim out of
 * range, sizes < 1, element counts or byte sizes that overflow 64 bits.
 * Sizes that fit but are large are left out: whether they fit is a question
 * of the device (EXCEEDS_DEVICE_LIMIT) or of host memory (the CPU backend
 * would try to allocate them). */
void fuzz_create(fuzz *f)
{
    rng *r = &f->r;
    static const int64_t dims[] = {-3, -1, 0, 1, 2, 7, 40, (int64_t)1 << 40, INT64_MAX};
    create_args a;
    bool bad_size, overflow;
    for (;;) {
        a = (create_args){.null_desc = chance(r, 3), .null_out = chance(r, 3)};
        a.desc.dtype = (vkattn_dtype)(chance(r, 85) ? rng_int(r, 0, 3)
                                                    : (int[]){-1, 4, 99}[rng_int(r, 0, 2)]);
        a.desc.ndim = chance(r, 85) ? rng_int(r, 1, 4) : (int[]){-1, 0, 5, 100}[rng_int(r, 0, 3)];
        for (int i = 0; i < 4; i++)
            a.desc.shape[i] = chance(r, 70) ? rng_int(r, 1, 9) : dims[rng_int(r, 0, 8)];
        /* The byte size of the positive dimensions, saturating. */
        int ndim = a.desc.ndim >= 1 && a.desc.ndim <= 4 ? a.desc.ndim : 0;
        uint64_t bytes = (unsigned)a.desc.dtype <= BF16 ? dtype_bytes(a.desc.dtype) : 4;
        bad_size = overflow = false;
        for (int i = 0; i < ndim; i++) {
            if (a.desc.shape[i] < 1)
                bad_size = true;
            else if (__builtin_mul_overflow(bytes, (uint64_t)a.desc.shape[i], &bytes))
                overflow = true;
        }
        overflow = overflow || bytes > UINT64_MAX - 16;
        if (overflow || bytes <= (uint64_t)1 << 22)
            break;
    }

    /* What vkattn.h says. Where a size is < 1 and others overflow, the
     * header does not say which is reported: either. */
    if (a.null_desc || a.null_out || (unsigned)a.desc.dtype > BF16)
        f->expect = EXPECT_ARG;
    else if (a.desc.ndim < 1 || a.desc.ndim > 4)
        f->expect = EXPECT_SHAPE;
    else if (bad_size)
        f->expect = EXPECT_SHAPE | (overflow ? EXPECT_OVERFLOW : 0);
    else
        f->expect = overflow ? EXPECT_OVERFLOW : EXPECT_OK;
    set_mutation(f, "%s", f->expect == EXPECT_OK ? "" : "create");
    describe(f, " desc%s{dtype %d, ndim %d, shape (%lld, %lld, %lld, %lld)}%s",
             a.null_desc ? "=NULL " : "", (int)a.desc.dtype, a.desc.ndim,
             (long long)a.desc.shape[0], (long long)a.desc.shape[1], (long long)a.desc.shape[2],
             (long long)a.desc.shape[3], a.null_out ? " out=NULL" : "");
    run_call(f, create_call, &a, NULL, 0.0, 0.0);
}

typedef struct transfer_args {
    twin *t;
    bool upload, null_host;
    vkattn_dtype host_dtype;
    void *host[2];       /* per side: the data uploaded, or the buffer downloaded into */
    size_t host_bytes;
} transfer_args;

static vkattn_status transfer_call(fuzz *f, int side, const void *args)
{
    const transfer_args *a = args;
    (void)f;
    void *host = a->null_host ? NULL : a->host[side];
    return a->upload ? vkattn_tensor_upload(a->t->t[side], host, a->host_dtype)
                     : vkattn_tensor_download(a->t->t[side], host, a->host_dtype);
}

/* Upload and download with every host dtype, valid or not, and NULL. A
 * failed download leaves the host buffer as it was; a successful transfer
 * converts the same way on both contexts (the same bytes). */
void fuzz_transfer(fuzz *f)
{
    rng *r = &f->r;
    tspec s;
    vkattn_dtype dtype = (vkattn_dtype)rng_int(r, 0, 3);
    SPEC(&s, dtype, rng_int(r, 1, 5), rng_int(r, 1, 7));
    s.lo = -70000.0f, s.hi = 70000.0f; /* past f16's range: Inf on narrowing */
    transfer_args a = {.upload = chance(r, 50), .null_host = chance(r, 10)};
    a.host_dtype = (vkattn_dtype)(chance(r, 90) ? rng_int(r, 0, 3) : (int[]){-1, 4, 77}[rng_int(r, 0, 2)]);
    a.t = twin_build(f, "T", &s);
    describe(f, " %s host %s%d", a.upload ? "upload" : "download", a.null_host ? "NULL " : "",
             (int)a.host_dtype);
    bool valid_dtype = (unsigned)a.host_dtype <= BF16;
    if (a.null_host || !valid_dtype)
        f->expect = EXPECT_ARG;
    else if ((a.host_dtype == I32) != (dtype == I32))
        f->expect = EXPECT_UNSUPPORTED;
    else
        f->expect = EXPECT_OK;
    set_mutation(f, "%s", f->expect == EXPECT_OK ? "" : a.upload ? "upload" : "download");
    size_t n = desc_count(&a.t->desc);
    a.host_bytes = n * (valid_dtype ? dtype_bytes(a.host_dtype) : 4);
    for (int side = 0; side < 2; side++) {
        a.host[side] = malloc(a.host_bytes);
        assert_non_null(a.host[side]);
        for (size_t i = 0; i < a.host_bytes; i++) /* the same bytes on both sides */
            ((unsigned char *)a.host[side])[i] = (unsigned char)(i * 37 + 11);
    }
    if (a.upload && a.host_dtype == F32 && valid_dtype)
        for (size_t i = 0; i < n; i++)
            ((float *)a.host[GPU])[i] = ((float *)a.host[CPU])[i] = rng_uniform(r, -1e5f, 1e5f);
    unsigned char *before = malloc(a.host_bytes);
    assert_non_null(before);
    memcpy(before, a.host[GPU], a.host_bytes);
    /* An upload writes the tensor (checked by run_call); a download the host. */
    run_call(f, transfer_call, &a, a.upload ? a.t : NULL, 0.0, 0.0);
    if (!a.upload && !a.null_host) {
        for (int side = 0; side < 2; side++)
            if (f->last[side] != VKATTN_OK && memcmp(a.host[side], before, a.host_bytes))
                finding(f, "output touched", "%s: a failed download wrote the host buffer",
                        side ? "CPU" : "GPU");
        if (f->last[GPU] == VKATTN_OK && f->last[CPU] == VKATTN_OK &&
            memcmp(a.host[GPU], a.host[CPU], a.host_bytes))
            finding(f, "result", "the download's bytes differ between the contexts");
    }
    free(before);
    free(a.host[GPU]);
    free(a.host[CPU]);
}
