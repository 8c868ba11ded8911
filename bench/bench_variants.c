/* vkattn-bench: attention with one of the variants LLM runtimes use (sliding
 * window, soft-capping, sinks, ALiBi, an additive mask, packed variable-length
 * sequences, a paged KV cache; and the layout BSHD), verified against the CPU reference on the
 * whole problem. Inputs are uniform in [-1, 1] as in bench_attention.c. */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Packed sequences: eight lengths between 1 and Tq (1 .. 4096 at Tq = 4096),
 * the same for queries and keys; the batch is B of them, cycling. */
static const int64_t varlen_per_4096[8] = {1, 4096, 2048, 512, 3000, 64, 1024, 4000};

static int64_t varlen_length(const bench_case *c, int64_t b)
{
    int64_t n = varlen_per_4096[b % 8] * c->Tq / 4096;
    return n > 0 ? n : 1;
}

const char *bench_att_variant_name(const bench_case *c)
{
    static char name[32];
    switch (c->att_variant) {
    case AV_WINDOW: snprintf(name, sizeof name, "window=%lld ", (long long)c->param); break;
    case AV_SOFTCAP: return "softcap ";
    case AV_SINKS: return "sinks ";
    case AV_ALIBI: return "alibi ";
    case AV_MASK: return "mask ";
    case AV_VARLEN: return "varlen ";
    case AV_PAGED: snprintf(name, sizeof name, "paged/%lld ", (long long)c->param); break;
    case AV_TOKEN_MAJOR: return "bshd ";
    case AV_KV_DTYPE:
        snprintf(name, sizeof name, "kv=%s ", bench_dtype_name((vkattn_dtype)c->param));
        break;
    default: return "";
    }
    return name;
}

/* Everything a case needs, in one context. */
typedef struct variant_inputs {
    bench_tensors ts;
    vkattn_attention_desc desc;
    vkattn_tensor *q, *k, *v, *o;
} variant_inputs;

/* Host data shared by the timed context and the reference. */
typedef struct variant_data {
    float *q, *k, *v, *extra;    /* extra: sinks, slopes or the mask */
    int32_t *cu, *table, *kv_len;
    int64_t qs[4], ks[4], vs[4], os[4], extra_shape[2];
    int q_rank, k_rank, extra_rank;
    int64_t table_shape[2];
    size_t qn, kn, vn, on;
    double pairs;                /* allowed (query, key) pairs per query head */
} variant_data;

static vkattn_status i32_tensor(vkattn_context *ctx, bench_tensors *ts, int ndim,
                                const int64_t *shape, const int32_t *data, vkattn_tensor **out)
{
    vkattn_tensor_desc d = {.dtype = VKATTN_DTYPE_I32, .ndim = ndim};
    for (int i = 0; i < ndim; i++)
        d.shape[i] = shape[i];
    vkattn_status s = vkattn_tensor_create(ctx, &d, out);
    if (s)
        return s;
    ts->t[ts->n++] = *out;
    return vkattn_tensor_upload(*out, data, VKATTN_DTYPE_I32);
}

/* Allowed pairs of a dense causal-windowed head (window left `w`, right 0). */
static double window_pairs(int64_t Tq, int64_t Tk, bool causal, int64_t w)
{
    double n = 0;
    for (int64_t i = 0; i < Tq; i++) {
        int64_t pos = i + Tk - Tq, hi = causal && pos + 1 < Tk ? pos + 1 : Tk;
        int64_t lo = pos - w > 0 ? pos - w : 0;
        n += hi > lo ? (double)(hi - lo) : 0.0;
    }
    return n;
}

static bool make_data(const bench_case *c, variant_data *d)
{
    int64_t B = c->B, H = c->H, Hkv = c->Hkv;
    d->q_rank = d->k_rank = 4;
    int64_t qs[4] = {B, H, c->Tq, c->D}, ks[4] = {B, Hkv, c->Tk, c->D};
    int64_t vs[4] = {B, Hkv, c->Tk, c->Dv}, os[4] = {B, H, c->Tq, c->Dv};
    d->pairs = bench_unmasked_pairs(c->Tq, c->Tk, c->causal, c->Tk - c->Tq) * (double)B;
    if (c->att_variant == AV_VARLEN) {
        d->cu = malloc((size_t)(B + 1) * sizeof *d->cu);
        if (!d->cu)
            return false;
        d->cu[0] = 0, d->pairs = 0;
        for (int64_t b = 0; b < B; b++) {
            int64_t n = varlen_length(c, b);
            d->cu[b + 1] = d->cu[b] + (int32_t)n;
            d->pairs += bench_unmasked_pairs(n, n, c->causal, 0);
        }
        int64_t total = d->cu[B];
        int64_t pq[4] = {total, H, c->D}, pk[4] = {total, Hkv, c->D};
        int64_t pv[4] = {total, Hkv, c->Dv}, po[4] = {total, H, c->Dv};
        memcpy(qs, pq, sizeof qs), memcpy(ks, pk, sizeof ks);
        memcpy(vs, pv, sizeof vs), memcpy(os, po, sizeof os);
        d->q_rank = d->k_rank = 3;
    } else if (c->att_variant == AV_PAGED) {
        int64_t bs = c->param, blocks = (c->Tk + bs - 1) / bs;
        d->table = malloc((size_t)(B * blocks) * sizeof *d->table);
        d->kv_len = malloc((size_t)B * sizeof *d->kv_len);
        if (!d->table || !d->kv_len)
            return false;
        uint64_t x = 88172645463325252ull; /* blocks in a shuffled order (xorshift) */
        for (int64_t e = 0; e < B * blocks; e++)
            d->table[e] = (int32_t)e;
        for (int64_t e = B * blocks - 1; e > 0; e--) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            int64_t j = (int64_t)(x % (uint64_t)(e + 1));
            int32_t t = d->table[e];
            d->table[e] = d->table[j], d->table[j] = t;
        }
        for (int64_t b = 0; b < B; b++)
            d->kv_len[b] = (int32_t)c->Tk;
        d->table_shape[0] = B, d->table_shape[1] = blocks;
        int64_t pk[4] = {B * blocks, bs, Hkv, c->D}, pv[4] = {B * blocks, bs, Hkv, c->Dv};
        memcpy(ks, pk, sizeof ks), memcpy(vs, pv, sizeof vs);
    } else if (c->att_variant == AV_TOKEN_MAJOR) {
        int64_t tq[4] = {B, c->Tq, H, c->D}, tk[4] = {B, c->Tk, Hkv, c->D};
        int64_t tv[4] = {B, c->Tk, Hkv, c->Dv}, to[4] = {B, c->Tq, H, c->Dv};
        memcpy(qs, tq, sizeof qs), memcpy(ks, tk, sizeof ks);
        memcpy(vs, tv, sizeof vs), memcpy(os, to, sizeof os);
    } else if (c->att_variant == AV_WINDOW) {
        d->pairs = window_pairs(c->Tq, c->Tk, c->causal, c->param) * (double)B;
    }
    memcpy(d->qs, qs, sizeof qs), memcpy(d->ks, ks, sizeof ks);
    memcpy(d->vs, vs, sizeof vs), memcpy(d->os, os, sizeof os);
    d->qn = (size_t)(qs[0] * qs[1] * qs[2] * (d->q_rank == 4 ? qs[3] : 1));
    d->kn = (size_t)(ks[0] * ks[1] * ks[2] * (d->k_rank == 4 ? ks[3] : 1));
    d->vn = (size_t)(vs[0] * vs[1] * vs[2] * (d->k_rank == 4 ? vs[3] : 1));
    d->on = (size_t)(os[0] * os[1] * os[2] * (d->q_rank == 4 ? os[3] : 1));
    d->q = malloc(d->qn * sizeof *d->q), d->k = malloc(d->kn * sizeof *d->k);
    d->v = malloc(d->vn * sizeof *d->v);
    if (!d->q || !d->k || !d->v)
        return false;
    bench_fill(d->q, d->qn, 11, -1.0f, 1.0f);
    bench_fill(d->k, d->kn, 12, -1.0f, 1.0f);
    bench_fill(d->v, d->vn, 13, -1.0f, 1.0f);
    if (c->att_variant == AV_SINKS || c->att_variant == AV_ALIBI || c->att_variant == AV_MASK) {
        bool mask = c->att_variant == AV_MASK;
        d->extra_rank = mask ? 2 : 1;
        d->extra_shape[0] = mask ? c->Tq : H, d->extra_shape[1] = c->Tk;
        size_t n = mask ? (size_t)(c->Tq * c->Tk) : (size_t)H;
        if (!(d->extra = malloc(n * sizeof *d->extra)))
            return false;
        bench_fill(d->extra, n, 14, -1.0f, 1.0f);
        if (c->att_variant == AV_ALIBI) /* ALiBi's geometric slopes */
            for (int64_t h = 0; h < H; h++)
                d->extra[h] = powf(2.0f, -8.0f * (float)(h + 1) / (float)H);
    }
    return true;
}

static void free_data(variant_data *d)
{
    free(d->q), free(d->k), free(d->v), free(d->extra);
    free(d->cu), free(d->table), free(d->kv_len);
}

/* The dtype of K and V: the case's, or the KV cache's own. */
static vkattn_dtype kv_dtype(const bench_case *c)
{
    return c->att_variant == AV_KV_DTYPE ? (vkattn_dtype)c->param : c->dtype;
}

static vkattn_status make_inputs(vkattn_context *ctx, const bench_case *c, const variant_data *d,
                                 vkattn_attention_path path, variant_inputs *in)
{
    in->desc = (vkattn_attention_desc){
        .causal = c->causal, .path = path, .kv_splits = c->kv_splits,
        .fused_variant = (vkattn_fused_variant)c->variant,
    };
    bench_tensors *ts = &in->ts;
    vkattn_status s;
    if ((s = bench_tensor(ctx, ts, c->dtype, d->q_rank, d->qs, d->q, &in->q)) ||
        (s = bench_tensor(ctx, ts, kv_dtype(c), d->k_rank, d->ks, d->k, &in->k)) ||
        (s = bench_tensor(ctx, ts, kv_dtype(c), d->k_rank, d->vs, d->v, &in->v)) ||
        (s = bench_tensor(ctx, ts, VKATTN_DTYPE_F32, d->q_rank, d->os, NULL, &in->o)))
        return s;
    vkattn_tensor *extra = NULL, *t = NULL;
    if (d->extra &&
        (s = bench_tensor(ctx, ts, VKATTN_DTYPE_F32, d->extra_rank, d->extra_shape, d->extra, &extra)))
        return s;
    int64_t B = c->B, B1 = c->B + 1;
    switch (c->att_variant) {
    case AV_WINDOW:
        in->desc.has_window = true, in->desc.window_left = (int32_t)c->param;
        in->desc.window_right = c->causal ? 0 : (int32_t)c->param;
        break;
    case AV_SOFTCAP: in->desc.softcap = 30.0f; break; /* Gemma 2's final-logit cap */
    case AV_SINKS: in->desc.sinks = extra; break;
    case AV_ALIBI: in->desc.alibi_slopes = extra; break;
    case AV_MASK: in->desc.mask = extra; break;
    case AV_VARLEN:
        if ((s = i32_tensor(ctx, ts, 1, &B1, d->cu, &t)))
            return s;
        in->desc.cu_seqlens_q = in->desc.cu_seqlens_k = t;
        break;
    case AV_PAGED:
        if ((s = i32_tensor(ctx, ts, 2, d->table_shape, d->table, &t)))
            return s;
        in->desc.block_table = t;
        if ((s = i32_tensor(ctx, ts, 1, &B, d->kv_len, &t)))
            return s;
        in->desc.kv_len = t;
        break;
    case AV_TOKEN_MAJOR: in->desc.layout = VKATTN_LAYOUT_BSHD; break;
    default: break;
    }
    return VKATTN_OK;
}

static vkattn_status record(vkattn_context *ctx, void *user)
{
    variant_inputs *in = user;
    return vkattn_attention(ctx, &in->desc, in->q, in->k, in->v, in->o);
}

/* The whole problem on the CPU reference, compared with `got`. */
static void verify(const bench_env *env, const bench_case *c, const variant_data *d,
                   const float *got, bench_result *r)
{
    variant_inputs ref = {0};
    float *want = malloc(d->on * sizeof *want);
    vkattn_status s = want ? make_inputs(env->cpu, c, d, VKATTN_PATH_AUTO, &ref)
                           : VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    if (!s)
        s = record(env->cpu, &ref);
    if (!s)
        s = vkattn_tensor_download(ref.o, want, VKATTN_DTYPE_F32);
    if (s) {
        bench_fail(r, env->cpu, s, "reference");
    } else {
        /* As bench_attention.c: 16 ulps of the largest score, plus the sum's rounding. */
        double atol = 16 * 1.2e-7 * sqrt((double)c->D) + 1e-5;
        bench_compare(got, want, d->on, atol, 0.0, NULL, r);
        snprintf(r->note, sizeof r->note, "all rows");
    }
    bench_tensors_release(&ref.ts);
    free(want);
}

void bench_run_attention_variant(const bench_env *env, const bench_case *c, bench_result *r)
{
    variant_data d = {0};
    variant_inputs run = {0}, plain = {0};
    vkattn_context *ctx = c->path == PATH_REFERENCE ? env->cpu : env->main;
    float *o = NULL;
    vkattn_status s = VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    if (!make_data(c, &d) || !(o = malloc(d.on * sizeof *o)))
        goto done;
    r->flops = 2.0 * (double)(c->D + c->Dv) * (double)c->H * d.pairs;
    r->bytes = (double)d.qn * bench_dtype_bytes(c->dtype) +
               (double)(d.kn + d.vn) * bench_dtype_bytes(kv_dtype(c)) + (double)d.on * 4.0;
    if ((s = make_inputs(ctx, c, &d, bench_api_path(c->path), &run)))
        goto done;
    /* Timed beside the plain case it extends, run for run, where that is
     * meaningful: not for the CPU reference, nor under --profile (whose kernel
     * times would mix the two). */
    bool paired = c->att_variant != AV_NONE && c->path != PATH_REFERENCE && !env->opt.profile;
    if (paired) {
        bench_case plain_case = *c;
        plain_case.att_variant = AV_NONE, plain_case.param = 0;
        variant_data plain_data = {0};
        vkattn_status made = make_data(&plain_case, &plain_data)
                                 ? make_inputs(ctx, &plain_case, &plain_data,
                                               bench_api_path(c->path), &plain)
                                 : VKATTN_ERROR_OUT_OF_HOST_MEMORY;
        free_data(&plain_data);
        /* Where the plain case's tensors do not fit beside the variant's, the
         * variant is timed alone (no ratio line). */
        paired = made == VKATTN_OK;
        if (!paired)
            bench_tensors_release(&plain.ts);
    }
    if (paired) {
        s = bench_time_paired(ctx, &env->opt, record, &run, record, &plain, r);
        r->base_name = "plain";
    } else {
        s = bench_time(ctx, &env->opt, record, &run, r);
    }
    if (s)
        goto done;
    if (c->path == PATH_REFERENCE) {
        snprintf(r->note, sizeof r->note, "is the reference");
    } else if (env->opt.verify) {
        if ((s = vkattn_tensor_download(run.o, o, VKATTN_DTYPE_F32)))
            goto done;
        verify(env, c, &d, o, r);
    }
done:
    if (s)
        bench_fail(r, ctx, s, "attention");
    bench_tensors_release(&run.ts);
    bench_tensors_release(&plain.ts);
    free_data(&d);
    free(o);
}
