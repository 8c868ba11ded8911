/* Random calls of vkattn_attention (and vkattn_attention_choose), valid or
 * invalid in one way: see api_fuzz.h. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "api_fuzz.h"

/* ------------------------------------------------------------ attention -- */

enum attn_slot { AQ, AK, AV, AO, AKV_LEN, ASINKS, AALIBI, AMASK, ACU_Q, ACU_K, ATABLE, ASLOTS };
static const char *const attn_names[ASLOTS] = {
    "Q", "K", "V", "O", "kv_len", "sinks", "alibi_slopes", "mask", "cu_seqlens_q",
    "cu_seqlens_k", "block_table"};

enum keys_form { KEYS_ANY = -1, KEYS_DENSE, KEYS_PACKED, KEYS_PAGED };

typedef struct attn_plan {
    tspec s[ASLOTS];
    vkattn_attention_desc d;        /* the scalars; the tensors come from the slots */
    bool null_desc;
    int64_t B, H, Hkv, Tq, Tk, D, Dv;  /* Tq and Tk as the mask sees them */
    int keys;
    bool packed_q;
    int64_t block_size, num_blocks, max_blocks;
    int32_t key_limit[3];           /* the largest valid kv_len of each entry */
    /* what replaces the built tensors (-1: nothing) */
    int null_slot, foreign_slot, o_is;
    bool self;                      /* K and V are Q's tensor */
} attn_plan;

/* What a mutation needs of the valid call it changes. */
typedef struct attn_needs {
    int keys;                       /* KEYS_ANY or a form */
    int packed_q;                   /* -1: either */
    unsigned slots;                 /* 1 << slot: optional tensors that must be there */
    bool plain;                     /* dense BHSD and no option: a NULL desc means the same */
    bool self;                      /* H == Hkv, Tq == Tk, Dv == D, one dtype */
    bool mask_alias;                /* dense BHSD, a full mask shaped and typed like O */
} attn_needs;

/* Sequence offsets of B sequences of 0..max rows each, with some rows before
 * the first and after the last; the lengths, the longest, the total rows. */
static int64_t packed_offsets(rng *r, int64_t B, int max, int32_t *cu, int32_t *lens,
                              int64_t *longest)
{
    cu[0] = chance(r, 30) ? rng_int(r, 1, 2) : 0;
    *longest = 0;
    for (int64_t b = 0; b < B; b++) {
        lens[b] = rng_int(r, 0, max);
        cu[b + 1] = cu[b] + lens[b];
        *longest = lens[b] > *longest ? lens[b] : *longest;
    }
    int64_t total = cu[B] + (chance(r, 30) ? rng_int(r, 1, 3) : 0);
    return total > 0 ? total : 1;
}

/* A block table entry no key reads: anything, in the cache or not. */
static int32_t junk_block(rng *r, int64_t num_blocks)
{
    static const int32_t junk[] = {-1, INT32_MIN, INT32_MAX};
    int x = rng_int(r, 0, 4);
    return x < 3 ? junk[x] : x == 3 ? (int32_t)num_blocks : rng_int(r, 0, (int)num_blocks - 1);
}

static void attn_base(fuzz *f, attn_plan *p, const attn_needs *n)
{
    rng *r = &f->r;
    memset(p, 0, sizeof *p);
    p->null_slot = p->foreign_slot = p->o_is = -1;
    bool dense = n->plain || n->self || n->mask_alias;
    p->keys = n->keys != KEYS_ANY ? n->keys
              : dense             ? KEYS_DENSE
                                  : (int[]){KEYS_DENSE, KEYS_DENSE, KEYS_DENSE, KEYS_PACKED,
                                            KEYS_PAGED}[rng_int(r, 0, 4)];
    p->packed_q = p->keys == KEYS_PACKED ||
                  (p->keys == KEYS_PAGED && (n->packed_q >= 0 ? n->packed_q : chance(r, 50)));

    /* The problem's numbers. */
    p->B = rng_int(r, 1, 3);
    p->Hkv = rng_int(r, 1, 3);
    p->H = n->self ? p->Hkv : p->Hkv * rng_int(r, 1, 3);
    p->D = head_size(r);
    p->Dv = n->self || chance(r, 40) ? p->D : head_size(r);
    p->d.layout = !dense && chance(r, 50) ? VKATTN_LAYOUT_BSHD : VKATTN_LAYOUT_BHSD;
    vkattn_dtype qt = any_float(r), kt = any_float(r), vt = any_float(r), ot = out_float(r);
    if (n->self)
        kt = vt = qt;

    int32_t cu_q[4], q_lens[3], cu_k[4], k_lens[3];
    int64_t total_q = 0, total_k = 0, longest;
    if (p->packed_q) {
        total_q = packed_offsets(r, p->B, 8, cu_q, q_lens, &longest);
        p->Tq = longest > 0 ? longest : 1;
    } else {
        p->Tq = rng_int(r, 1, 12);
    }
    switch (p->keys) {
    case KEYS_DENSE:
        p->Tk = n->self ? p->Tq : rng_int(r, 1, 16);
        for (int64_t b = 0; b < p->B; b++)
            p->key_limit[b] = (int32_t)p->Tk;
        break;
    case KEYS_PACKED:
        total_k = packed_offsets(r, p->B, 10, cu_k, k_lens, &longest);
        p->Tk = longest > 0 ? longest : 1;
        memcpy(p->key_limit, k_lens, sizeof k_lens);
        break;
    case KEYS_PAGED:
        p->block_size = chance(r, 10) ? 16 : rng_int(r, 1, 5);
        p->max_blocks = rng_int(r, 1, 4);
        p->num_blocks = rng_int(r, 1, 6);
        p->Tk = p->block_size * p->max_blocks;
        for (int64_t b = 0; b < p->B; b++)
            p->key_limit[b] = (int32_t)p->Tk;
        break;
    }
    if (n->mask_alias)
        p->Dv = p->Tk; /* O (B, H, Tq, Dv) is then shaped like a full mask */

    /* Q and O. */
    if (p->packed_q) {
        SPEC(&p->s[AQ], qt, total_q, p->H, p->D);
        SPEC(&p->s[AO], ot, total_q, p->H, p->Dv);
        spec_i32(&p->s[ACU_Q], 0, p->B + 1, cu_q);
    } else {
        spec_dense(&p->s[AQ], qt, p->d.layout, p->B, p->H, p->Tq, p->D);
        spec_dense(&p->s[AO], ot, p->d.layout, p->B, p->H, p->Tq, p->Dv);
    }
    p->s[AO].sentinel = true;
    /* K, V and what says where their keys are. */
    int32_t lens[3];
    if (p->keys == KEYS_DENSE) {
        spec_dense(&p->s[AK], kt, p->d.layout, p->B, p->Hkv, p->Tk, p->D);
        spec_dense(&p->s[AV], vt, p->d.layout, p->B, p->Hkv, p->Tk, p->Dv);
    } else if (p->keys == KEYS_PACKED) {
        SPEC(&p->s[AK], kt, total_k, p->Hkv, p->D);
        SPEC(&p->s[AV], vt, total_k, p->Hkv, p->Dv);
        spec_i32(&p->s[ACU_K], 0, p->B + 1, cu_k);
    } else {
        SPEC(&p->s[AK], kt, p->num_blocks, p->block_size, p->Hkv, p->D);
        SPEC(&p->s[AV], vt, p->num_blocks, p->block_size, p->Hkv, p->Dv);
        int32_t table[3 * 4];
        for (int64_t b = 0; b < p->B; b++) {
            lens[b] = rng_int(r, 0, (int)p->Tk);
            int64_t used = (lens[b] + p->block_size - 1) / p->block_size;
            for (int64_t j = 0; j < p->max_blocks; j++)
                table[b * p->max_blocks + j] = j < used ? rng_int(r, 0, (int)p->num_blocks - 1)
                                                        : junk_block(r, p->num_blocks);
        }
        spec_i32(&p->s[ATABLE], p->B, p->max_blocks, table);
        spec_i32(&p->s[AKV_LEN], 0, p->B, lens); /* required with a block table */
    }
    if (p->keys != KEYS_PAGED && !n->plain &&
        ((n->slots & (1u << AKV_LEN)) || chance(r, 30))) {
        for (int64_t b = 0; b < p->B; b++)
            lens[b] = rng_int(r, 0, p->key_limit[b]);
        spec_i32(&p->s[AKV_LEN], 0, p->B, lens);
    }
    if (n->plain)
        return;

    /* The scalar variants. ALiBi's scores grow with |q_offset|: with it,
     * offsets stay small, so that f32 scores keep the precision the
     * comparison needs. */
    bool alibi = (n->slots & (1u << AALIBI)) || chance(r, 20);
    p->d.causal = chance(r, 50);
    if (chance(r, 25)) {
        p->d.has_q_offset = true;
        p->d.q_offset = !alibi && chance(r, 25)
                            ? (chance(r, 50) ? VKATTN_MAX_Q_OFFSET : -VKATTN_MAX_Q_OFFSET)
                            : rng_int(r, -(int)p->Tq - 3, (int)p->Tk + 3);
    }
    if (chance(r, 25)) {
        p->d.has_window = true;
        p->d.window_left = window_side(r, p->Tk);
        p->d.window_right = window_side(r, p->Tk);
    }
    if (chance(r, 20))
        p->d.softcap = chance(r, 10) ? FLT_MIN : rng_uniform(r, 0.5f, 30.0f);
    if (chance(r, 30))
        p->d.scale = chance(r, 5) ? 1e-40f : rng_uniform(r, 0.05f, 1.5f);

    /* The per-head and mask tensors. */
    if ((n->slots & (1u << ASINKS)) || chance(r, 20)) {
        SPEC(&p->s[ASINKS], F32, p->H);
        p->s[ASINKS].lo = -2.0f, p->s[ASINKS].hi = 2.0f;
    }
    if (alibi) {
        SPEC(&p->s[AALIBI], F32, p->H);
        p->s[AALIBI].lo = 0.0f, p->s[AALIBI].hi = 0.5f;
    }
    if (n->mask_alias) {
        SPEC(&p->s[AMASK], ot, p->B, p->H, p->Tq, p->Tk);
    } else if ((n->slots & (1u << AMASK)) || chance(r, 25)) {
        /* 2 to 4 dimensions aligned right, each the problem's or 1 (the last
         * mostly Tk; 1: one value a query row) */
        int ndim = rng_int(r, 2, 4);
        int64_t full[4] = {p->B, p->H, p->Tq, p->Tk}, shape[4];
        for (int i = 0; i < 4; i++)
            shape[i] = chance(r, i == 3 ? 85 : 60) ? full[i] : 1;
        spec_shape(&p->s[AMASK], any_float(r), ndim, shape + 4 - ndim);
        p->s[AMASK].lo = -2.0f, p->s[AMASK].hi = 2.0f;
        p->s[AMASK].neg_inf_percent = chance(r, 40) ? 15 : 0;
    }

    /* The path: AUTO mostly; forced ones may be refused by this device. */
    int x = rng_int(r, 0, 19);
    bool layout_variants = p->keys != KEYS_DENSE;
    if (x < 2 && !layout_variants) {
        p->d.path = VKATTN_PATH_UNFUSED;
    } else if (x < 6) {
        static const vkattn_fused_variant forced[] = {
            VKATTN_FUSED_AUTO, VKATTN_FUSED_ROWS, VKATTN_FUSED_TILED, VKATTN_FUSED_DECODE,
            VKATTN_FUSED_COOPMAT, VKATTN_FUSED_COOPMAT_WORKGROUP};
        p->d.path = VKATTN_PATH_FUSED;
        p->d.fused_variant = forced[rng_int(r, 0, 5)];
        /* The coopmat kernels run only on matrix units: as often their
         * emulated builds (the same source; 16-bit inputs only), which run
         * anywhere with shaderFloat16, else mostly the rows kernel. */
        bool coopmat = p->d.fused_variant == VKATTN_FUSED_COOPMAT ||
                       p->d.fused_variant == VKATTN_FUSED_COOPMAT_WORKGROUP;
        if (coopmat && chance(r, 50))
            p->d.fused_variant = p->d.fused_variant == VKATTN_FUSED_COOPMAT
                                     ? VKATTN_FUSED_COOPMAT_EMULATED
                                     : VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED;
        else if (coopmat && chance(r, 60))
            p->d.fused_variant = VKATTN_FUSED_ROWS;
    }
    if (chance(r, 20))
        p->d.kv_splits = chance(r, 20) ? UINT32_MAX : (uint32_t)rng_int(r, 1, 5);
    /* NaN and Inf in an input now and then: they propagate as IEEE arithmetic
     * does, alike on every path, and never reach rows that may not see their
     * key (DESIGN.md sections 1 and 2). */
    if (chance(r, 15))
        p->s[(int[]){AQ, AK, AV, AV}[rng_int(r, 0, 3)]].nonfinite_percent = 5;
    f->forced = p->d.path == VKATTN_PATH_FUSED || p->d.fused_variant != VKATTN_FUSED_AUTO;
}

/* The tolerance of a valid call (test_variants.c's): f32 scores are off by a
 * few ulps of their size, which moves each weight by that much relatively;
 * the output is a weighted mean of V (|V| <= 1). f16 and bf16 inputs are
 * rounded once, on upload, and both sides read the rounded values. */
static double attn_atol(const attn_plan *p)
{
    double scale = p->d.scale != 0.0f ? p->d.scale : 1.0 / sqrt((double)p->D);
    double size = scale * (double)p->D;
    if (p->d.softcap != 0.0f && p->d.softcap < size)
        size = p->d.softcap;
    if (p->s[AALIBI].used) {
        double offset = p->d.has_q_offset ? fabs((double)p->d.q_offset) : (double)p->Tk;
        size += 0.5 * (offset + (double)(p->Tq + p->Tk));
    }
    size += 2.0 + 2.0; /* the mask's and the sinks' magnitudes */
    double atol = 16 * 1.2e-7 * (size + 4.0) + 2e-5;
    if (p->d.fused_variant == VKATTN_FUSED_COOPMAT ||
        p->d.fused_variant == VKATTN_FUSED_COOPMAT_EMULATED ||
        p->d.fused_variant == VKATTN_FUSED_COOPMAT_WORKGROUP ||
        p->d.fused_variant == VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED)
        atol += 1e-3; /* rounds the weights to f16 */
    return atol;
}

typedef struct attn_args {
    twin *t[ASLOTS];
    vkattn_attention_desc d;
    bool null_desc;
} attn_args;

static vkattn_status attn_call(fuzz *f, int side, const void *args)
{
    const attn_args *a = args;
    vkattn_context *ctx = ctx_of(f, side);
    vkattn_attention_desc d = a->d;
    d.kv_len = side_of(a->t[AKV_LEN], side);
    d.sinks = side_of(a->t[ASINKS], side);
    d.alibi_slopes = side_of(a->t[AALIBI], side);
    d.mask = side_of(a->t[AMASK], side);
    d.cu_seqlens_q = side_of(a->t[ACU_Q], side);
    d.cu_seqlens_k = side_of(a->t[ACU_K], side);
    d.block_table = side_of(a->t[ATABLE], side);
    const vkattn_attention_desc *dp = a->null_desc ? NULL : &d;
    vkattn_tensor *q = side_of(a->t[AQ], side), *k = side_of(a->t[AK], side),
                  *v = side_of(a->t[AV], side), *o = side_of(a->t[AO], side);
    /* vkattn_attention_choose: "Same arguments and statuses as vkattn_attention". */
    vkattn_attention_choice choice;
    vkattn_status chosen = vkattn_attention_choose(ctx, dp, q, k, v, o, &choice);
    char chosen_message[512];
    snprintf(chosen_message, sizeof chosen_message, "%s", vkattn_last_error(ctx));
    vkattn_status s = vkattn_attention(ctx, dp, q, k, v, o);
    if (s != chosen)
        finding(f, "choose differs", "%s: vkattn_attention_choose returned %s (%s), "
                "vkattn_attention %s (%s)", side ? "CPU" : "GPU", vkattn_status_string(chosen),
                chosen ? chosen_message : "", vkattn_status_string(s),
                s ? vkattn_last_error(ctx) : "");
    return s;
}

#define ATTN_MAIN (SLOT(AQ) | SLOT(AK) | SLOT(AV) | SLOT(AO))
#define ATTN_I32 (SLOT(AKV_LEN) | SLOT(ACU_Q) | SLOT(ACU_K) | SLOT(ATABLE))

static void attn_null(fuzz *f, attn_plan *p)
{
    p->null_slot = pick_used(&f->r, p->s, ASLOTS, ATTN_MAIN);
    set_mutation(f, "NULL %s", attn_names[p->null_slot]);
    f->expect = EXPECT_ARG;
}

static void attn_foreign(fuzz *f, attn_plan *p)
{
    p->foreign_slot = pick_used(&f->r, p->s, ASLOTS, ~0u);
    set_mutation(f, "foreign: %s of the other context", attn_names[p->foreign_slot]);
    f->expect = EXPECT_ARG;
}

static void attn_dtype(fuzz *f, attn_plan *p)
{
    int slot = pick_used(&f->r, p->s, ASLOTS, ~0u);
    tspec *s = &p->s[slot];
    if (SLOT(slot) & ATTN_I32) {
        s->dtype = chance(&f->r, 50) ? F32 : F16;
        f->expect = EXPECT_AUX_DTYPE;
    } else if (slot == ASINKS || slot == AALIBI) {
        s->dtype = (vkattn_dtype[]){F16, BF16, I32}[rng_int(&f->r, 0, 2)];
        f->expect = EXPECT_AUX_DTYPE;
    } else {
        s->dtype = I32;
        f->expect = slot == AMASK ? EXPECT_AUX_DTYPE : EXPECT_UNSUPPORTED;
    }
    set_mutation(f, "dtype: %s is %s", attn_names[slot], dtype_label(s->dtype));
}

static void attn_rank(fuzz *f, attn_plan *p)
{
    int slot = pick_used(&f->r, p->s, ASLOTS, ~0u);
    tspec *s = &p->s[slot];
    if (SLOT(slot) & ATTN_MAIN) {
        spec_rerank(s); /* 4-D where 3-D is due (packed) and 3-D where 4-D is */
        f->expect = EXPECT_SHAPE;
    } else {
        if (s->ndim == 1)
            spec_rerank(s); /* (1, n) */
        else
            spec_flatten(s); /* a mask or a block table as a vector */
        f->expect = EXPECT_MISMATCH;
    }
    set_mutation(f, "rank: %s is %d-D", attn_names[slot], s->ndim);
}

static void attn_dim(fuzz *f, attn_plan *p)
{
    int slot = pick_used(&f->r, p->s, ASLOTS, ~0u);
    tspec *s = &p->s[slot];
    int dim = slot == ATABLE ? 0 : rng_int(&f->r, 0, s->ndim - 1);
    if (slot == AMASK) {
        /* neither 1 nor the problem's size */
        int64_t full[4] = {p->B, p->H, p->Tq, p->Tk};
        s->shape[dim] = full[4 - s->ndim + dim] + 1;
    } else {
        spec_nudge(&f->r, s, dim);
    }
    set_mutation(f, "dim: %s dimension %d is %lld", attn_names[slot], dim, (long long)s->shape[dim]);
    f->expect = EXPECT_MISMATCH;
}

/* Where a Q, K, V or O tensor keeps its head count. */
static int heads_dim(const attn_plan *p, int slot)
{
    bool q_side = slot == AQ || slot == AO;
    if (q_side ? p->packed_q : p->keys == KEYS_PACKED)
        return 1; /* (total, heads, width) */
    if (!q_side && p->keys == KEYS_PAGED)
        return 2; /* (num_blocks, block_size, heads, width) */
    return p->d.layout == VKATTN_LAYOUT_BSHD ? 2 : 1;
}

/* K and V agree on a kv head count that does not divide Q's heads. */
static void attn_gqa(fuzz *f, attn_plan *p)
{
    int64_t hkv = p->Hkv + 1;
    while (p->H % hkv == 0)
        hkv++;
    p->s[AK].shape[heads_dim(p, AK)] = p->s[AV].shape[heads_dim(p, AV)] = hkv;
    set_mutation(f, "GQA: H %lld, Hkv %lld", (long long)p->H, (long long)hkv);
    f->expect = EXPECT_MISMATCH;
}

static void attn_kv_len_value(fuzz *f, attn_plan *p)
{
    int b = rng_int(&f->r, 0, (int)p->B - 1);
    int32_t bad[] = {-1, p->key_limit[b] + 1, INT32_MAX, INT32_MIN};
    int32_t v = bad[rng_int(&f->r, 0, 3)];
    p->s[AKV_LEN].values[b] = v;
    set_mutation(f, "kv_len value: kv_len[%d] = %d, keys %d", b, v, p->key_limit[b]);
    f->expect = EXPECT_ARG;
}

static void attn_cu_value(fuzz *f, attn_plan *p)
{
    bool k = p->s[ACU_K].used && (!p->s[ACU_Q].used || chance(&f->r, 50));
    tspec *s = &p->s[k ? ACU_K : ACU_Q];
    int32_t *cu = s->values;
    int64_t B = p->B, rows = p->s[k ? AK : AQ].shape[0];
    int x = rng_int(&f->r, 0, 2);
    if (x == 0) {
        cu[0] = chance(&f->r, 50) ? -1 : INT32_MIN;
        set_mutation(f, "cu value: %s[0] = %d", attn_names[k ? ACU_K : ACU_Q], cu[0]);
    } else if (x == 1) {
        int b = rng_int(&f->r, 0, (int)B - 1);
        cu[b + 1] = cu[b] - rng_int(&f->r, 1, 3);
        set_mutation(f, "cu value: %s decreases at %d", attn_names[k ? ACU_K : ACU_Q], b + 1);
    } else {
        cu[B] = chance(&f->r, 70) ? (int32_t)rows + rng_int(&f->r, 1, 3) : INT32_MAX;
        set_mutation(f, "cu value: %s[%lld] = %d past %lld rows", attn_names[k ? ACU_K : ACU_Q],
                     (long long)B, cu[B], (long long)rows);
    }
    f->expect = EXPECT_ARG;
}

static void attn_table_value(fuzz *f, attn_plan *p)
{
    int32_t *lens = p->s[AKV_LEN].values;
    int b = rng_int(&f->r, 0, (int)p->B - 1);
    if (lens[b] == 0)
        lens[b] = 1; /* a key, so the entry uses a block */
    int64_t used = (lens[b] + p->block_size - 1) / p->block_size;
    int64_t j = rng_int(&f->r, 0, (int)used - 1);
    int32_t bad[] = {-1, (int32_t)p->num_blocks, (int32_t)p->num_blocks + 5, INT32_MAX, INT32_MIN};
    int32_t v = bad[rng_int(&f->r, 0, 4)];
    p->s[ATABLE].values[b * p->max_blocks + j] = v;
    set_mutation(f, "table value: block_table[%d][%lld] = %d of %lld blocks", b, (long long)j, v,
                 (long long)p->num_blocks);
    f->expect = EXPECT_ARG;
}

static void attn_scalar(fuzz *f, attn_plan *p)
{
    rng *r = &f->r;
    f->expect = EXPECT_ARG;
    switch (rng_int(r, 0, 6)) {
    case 0:
        p->d.scale = bad_positive(r, false);
        set_mutation(f, "scalar: scale = %g", (double)p->d.scale);
        break;
    case 1: {
        static const int64_t bad[] = {VKATTN_MAX_Q_OFFSET + 1, -VKATTN_MAX_Q_OFFSET - 1,
                                      INT64_MAX, INT64_MIN, (int64_t)1 << 40};
        p->d.has_q_offset = true;
        p->d.q_offset = bad[rng_int(r, 0, 4)];
        set_mutation(f, "scalar: q_offset = %lld", (long long)p->d.q_offset);
        break;
    }
    case 2: {
        static const int32_t bad[] = {-2, -100, INT32_MIN};
        p->d.has_window = true;
        if (p->d.window_left < -1 || chance(r, 50))
            p->d.window_left = bad[rng_int(r, 0, 2)];
        else
            p->d.window_right = bad[rng_int(r, 0, 2)];
        set_mutation(f, "scalar: window (%d, %d)", p->d.window_left, p->d.window_right);
        break;
    }
    case 3:
        p->d.softcap = bad_positive(r, true);
        set_mutation(f, "scalar: softcap = %g", (double)p->d.softcap);
        break;
    case 4:
        p->d.layout = (vkattn_layout)(int[]){2, -1, 77}[rng_int(r, 0, 2)];
        set_mutation(f, "enum: layout = %d", (int)p->d.layout);
        break;
    case 5:
        p->d.path = (vkattn_attention_path)(int[]){3, -1}[rng_int(r, 0, 1)];
        set_mutation(f, "enum: path = %d", (int)p->d.path);
        break;
    default:
        p->d.fused_variant = (vkattn_fused_variant)(int[]){
            VKATTN_FUSED_COOPMAT_WORKGROUP_EMULATED + 1, -1, 1000}[rng_int(r, 0, 2)];
        set_mutation(f, "enum: fused_variant = %d", (int)p->d.fused_variant);
        break;
    }
}

static void attn_alias_o(fuzz *f, attn_plan *p)
{
    p->o_is = rng_int(&f->r, AQ, AV);
    p->s[AO].used = false;
    set_mutation(f, "alias: O is %s", attn_names[p->o_is]);
    f->expect = EXPECT_ARG;
}

/* vkattn.h: "O ... must not alias an input"; the mask is one, and a full mask
 * (B, H, Tq, Tk) has O's shape where Dv == Tk. */
static void attn_alias_mask(fuzz *f, attn_plan *p)
{
    p->o_is = AMASK;
    p->s[AO].used = false;
    set_mutation(f, "alias: O is the mask");
    f->expect = EXPECT_ARG;
}

static void attn_unfused_layout(fuzz *f, attn_plan *p)
{
    p->d.path = VKATTN_PATH_UNFUSED;
    p->d.fused_variant = VKATTN_FUSED_AUTO;
    f->forced = false; /* refused by the shared checks, on every backend */
    set_mutation(f, "structure: UNFUSED with %s keys", p->keys == KEYS_PAGED ? "paged" : "packed");
    f->expect = EXPECT_UNSUPPORTED;
}

/* Packed keys without packed queries: Q and O made dense (1, H, total_q, D),
 * so that the ranks pass and the sequence check is what refuses. */
static void attn_cu_k_alone(fuzz *f, attn_plan *p)
{
    p->d.layout = VKATTN_LAYOUT_BHSD;
    int slots[] = {AQ, AO};
    for (int i = 0; i < 2; i++) {
        tspec *s = &p->s[slots[i]];
        int64_t total = s->shape[0], heads = s->shape[1], width = s->shape[2];
        s->ndim = 4;
        s->shape[0] = 1, s->shape[1] = heads, s->shape[2] = total, s->shape[3] = width;
    }
    p->s[ACU_Q].used = false;
    set_mutation(f, "structure: cu_seqlens_k without cu_seqlens_q");
    f->expect = EXPECT_ARG;
}

/* Packed queries with dense keys: K and V made dense (1, Hkv, total_k, D). */
static void attn_cu_q_alone(fuzz *f, attn_plan *p)
{
    p->d.layout = VKATTN_LAYOUT_BHSD;
    int slots[] = {AK, AV};
    for (int i = 0; i < 2; i++) {
        tspec *s = &p->s[slots[i]];
        int64_t total = s->shape[0], heads = s->shape[1], width = s->shape[2];
        s->ndim = 4;
        s->shape[0] = 1, s->shape[1] = heads, s->shape[2] = total, s->shape[3] = width;
    }
    p->s[ACU_K].used = false;
    set_mutation(f, "structure: cu_seqlens_q without cu_seqlens_k or a block table");
    f->expect = EXPECT_ARG;
}

static void attn_cu_k_and_table(fuzz *f, attn_plan *p)
{
    int32_t cu[4] = {0};
    for (int64_t b = 0; b < p->B; b++)
        cu[b + 1] = cu[b] + 1;
    spec_i32(&p->s[ACU_K], 0, p->B + 1, cu);
    set_mutation(f, "structure: cu_seqlens_k and a block_table");
    f->expect = EXPECT_ARG;
}

static void attn_table_no_kv_len(fuzz *f, attn_plan *p)
{
    p->s[AKV_LEN].used = false;
    set_mutation(f, "structure: a block_table without kv_len");
    f->expect = EXPECT_ARG;
}

static void attn_big_blocks(fuzz *f, attn_plan *p)
{
    int64_t blocks = p->num_blocks < 2 ? p->num_blocks : 2;
    p->s[AK].shape[0] = p->s[AV].shape[0] = blocks;
    p->s[AK].shape[1] = p->s[AV].shape[1] = 257;
    for (int64_t b = 0; b < p->B; b++) /* every used block in the smaller cache */
        for (int64_t j = 0; j < p->max_blocks; j++)
            p->s[ATABLE].values[b * p->max_blocks + j] = 0;
    set_mutation(f, "structure: blocks of 257 keys");
    f->expect = EXPECT_SHAPE;
}

/* Valid variations. */
static void attn_valid(fuzz *f, attn_plan *p) { (void)f, (void)p; }

static void attn_null_desc(fuzz *f, attn_plan *p)
{
    p->null_desc = true;
    set_mutation(f, "valid: desc NULL");
}

static void attn_self(fuzz *f, attn_plan *p)
{
    p->self = true;
    p->s[AK].used = p->s[AV].used = false;
    set_mutation(f, "valid: K and V are Q");
}

static void attn_disabled_junk(fuzz *f, attn_plan *p)
{
    p->d.has_window = false;
    p->d.window_left = p->d.window_right = INT32_MIN;
    p->d.has_q_offset = false;
    p->d.q_offset = INT64_MIN;
    set_mutation(f, "valid: window and q_offset junk, both off");
}

static void attn_zero_lengths(fuzz *f, attn_plan *p)
{
    for (int64_t b = 0; b < p->B; b++)
        p->s[AKV_LEN].values[b] = 0;
    set_mutation(f, "valid: every kv_len 0");
}

typedef struct attn_mutation {
    void (*apply)(fuzz *f, attn_plan *p);
    int weight;
    attn_needs needs;
} attn_mutation;

#define ANY_FORM .keys = KEYS_ANY, .packed_q = -1
static const attn_mutation attn_mutations[] = {
    /* Valid calls each compile a kernel of their own (0.3 to 1 s on lavapipe):
     * a small share, which sets the test's run time. */
    {attn_valid, 5, {ANY_FORM}},
    {attn_null_desc, 1, {ANY_FORM, .plain = true}},
    {attn_self, 1, {ANY_FORM, .self = true}},
    {attn_disabled_junk, 1, {ANY_FORM}},
    {attn_zero_lengths, 1, {ANY_FORM, .slots = SLOT(AKV_LEN)}},
    {attn_null, 5, {ANY_FORM}},
    {attn_foreign, 5, {ANY_FORM}},
    {attn_dtype, 8, {ANY_FORM}},
    {attn_rank, 8, {ANY_FORM}},
    {attn_dim, 14, {ANY_FORM}},
    {attn_gqa, 3, {ANY_FORM}},
    {attn_kv_len_value, 5, {ANY_FORM, .slots = SLOT(AKV_LEN)}},
    {attn_cu_value, 6, {.keys = KEYS_PACKED, .packed_q = 1}},
    {attn_cu_value, 2, {.keys = KEYS_PAGED, .packed_q = 1}},
    {attn_table_value, 6, {.keys = KEYS_PAGED, .packed_q = -1}},
    {attn_scalar, 14, {ANY_FORM}},
    {attn_alias_o, 3, {ANY_FORM}},
    {attn_alias_mask, 2, {ANY_FORM, .mask_alias = true}},
    {attn_unfused_layout, 2, {.keys = KEYS_PACKED, .packed_q = 1}},
    {attn_unfused_layout, 2, {.keys = KEYS_PAGED, .packed_q = -1}},
    {attn_cu_k_alone, 2, {.keys = KEYS_PACKED, .packed_q = 1}},
    {attn_cu_q_alone, 2, {.keys = KEYS_PACKED, .packed_q = 1}},
    {attn_cu_k_and_table, 2, {.keys = KEYS_PAGED, .packed_q = 1}},
    {attn_table_no_kv_len, 2, {.keys = KEYS_PAGED, .packed_q = -1}},
    {attn_big_blocks, 1, {.keys = KEYS_PAGED, .packed_q = -1}},
};

void fuzz_attention(fuzz *f)
{
    int weights[COUNT(attn_mutations)];
    for (int i = 0; i < COUNT(attn_mutations); i++)
        weights[i] = attn_mutations[i].weight;
    const attn_mutation *m = &attn_mutations[pick_weighted(&f->r, weights, COUNT(weights))];
    attn_plan p;
    attn_base(f, &p, &m->needs);
    f->expect = EXPECT_OK;
    m->apply(f, &p);

    attn_args a = {.d = p.d, .null_desc = p.null_desc};
    describe(f, " desc%s{layout %d, scale %g, causal %d, q_offset %s%lld, path %d, variant %d, "
             "splits %u, window %s(%d, %d), softcap %g}",
             p.null_desc ? "=NULL " : "", (int)p.d.layout, (double)p.d.scale, p.d.causal,
             p.d.has_q_offset ? "" : "off ", (long long)p.d.q_offset, (int)p.d.path,
             (int)p.d.fused_variant, p.d.kv_splits, p.d.has_window ? "" : "off ",
             p.d.window_left, p.d.window_right, (double)p.d.softcap);
    slot_alias aliases[3];
    int alias_count = 0;
    if (p.self)
        aliases[alias_count++] = (slot_alias){AK, AQ}, aliases[alias_count++] = (slot_alias){AV, AQ};
    if (p.o_is >= 0)
        aliases[alias_count++] = (slot_alias){AO, p.o_is};
    build_slots(f, a.t, attn_names, p.s, ASLOTS, aliases, alias_count, p.null_slot,
                p.foreign_slot);
    run_call(f, attn_call, &a, a.t[AO], attn_atol(&p), 0.0);
}
