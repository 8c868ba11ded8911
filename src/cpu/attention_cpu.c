/* CPU reference attention and multi-head attention layer: the definitions in
 * DESIGN.md section 1, computed in double with plain loops. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One attention problem over double arrays with element strides (batch, head,
 * sequence; the head dimension is contiguous), and the call's variants as host
 * arrays (NULL: off). Packed and paged tensors have batch stride 0: their
 * sequence index is the packed row (cu_seqlens) or the cache row (block table). */
typedef struct dense_attention {
    const double *q, *k, *v;
    double *o;
    int64_t q_stride[3], k_stride[3], v_stride[3], o_stride[3];
    const int32_t *kv_len, *cu_q, *cu_k, *block_table;
    const double *sinks, *alibi, *mask;
} dense_attention;

/* Batch entry b's queries and keys: how many, where its rows start, its q_offset. */
typedef struct sequence {
    int64_t Tq, keys, q_first, k_first, q_offset;
} sequence;

static sequence sequence_of(const attention_dims *d, const dense_attention *a, int64_t b)
{
    sequence s = {.Tq = d->Tq, .keys = d->Tk};
    if (a->cu_q)
        s.q_first = a->cu_q[b], s.Tq = a->cu_q[b + 1] - a->cu_q[b];
    if (a->cu_k)
        s.k_first = a->cu_k[b], s.keys = a->cu_k[b + 1] - a->cu_k[b];
    if (a->block_table)
        s.keys = a->kv_len[b];
    s.q_offset = d->fixed_q_offset ? d->q_offset : s.keys - s.Tq;
    if (a->kv_len && a->kv_len[b] < s.keys)
        s.keys = a->kv_len[b] > 0 ? a->kv_len[b] : 0;
    return s;
}

/* The cache or packed row that holds key j of batch entry b. */
static int64_t key_row(const attention_dims *d, const dense_attention *a, const sequence *s,
                       int64_t b, int64_t j)
{
    if (a->block_table) {
        int64_t bs = d->var.block_size;
        return (int64_t)a->block_table[b * d->var.max_blocks + j / bs] * bs + j % bs;
    }
    return s->k_first + j;
}

/* The keys a query row may see before its scores are known: [*lo, *hi) from
 * causality, kv_len and the sliding window (DESIGN.md section 1). */
static void key_range(const attention_dims *d, const sequence *s, int64_t i, int64_t *lo,
                      int64_t *hi)
{
    int64_t pos = i + s->q_offset;
    *lo = 0, *hi = s->keys;
    if (d->causal && pos + 1 < *hi)
        *hi = pos + 1;
    if (d->var.has_window && d->var.window_left >= 0 && pos - d->var.window_left > *lo)
        *lo = pos - d->var.window_left;
    if (d->var.has_window && d->var.window_right >= 0 && pos + d->var.window_right + 1 < *hi)
        *hi = pos + d->var.window_right + 1;
    if (*hi < *lo)
        *hi = *lo;
}

/* The score of key j for row i of head h: scaled dot product, then soft-capping,
 * ALiBi and the additive mask, in that order. */
static double score(const attention_dims *d, const dense_attention *a, const double *q,
                    const double *k, int64_t b, int64_t h, int64_t i, int64_t j, int64_t pos)
{
    double dot = 0.0;
    for (int64_t c = 0; c < d->D; c++)
        dot += q[c] * k[c];
    double s = d->scale * dot;
    if (d->var.softcap > 0.0f)
        s = d->var.softcap * tanh(s / d->var.softcap);
    if (a->alibi)
        s += a->alibi[h] * (double)(j - pos);
    if (a->mask)
        s += a->mask[b * d->var.mask_sb + h * d->var.mask_sh + i * d->var.mask_si +
                     (d->var.mask_per_row ? 0 : j)];
    return s;
}

/* p[j] for j in [lo, hi): the scores; allowed[j] whether key j takes part, and
 * *any whether one does. With a mask, a score that is -inf once the mask is
 * added does not, whatever made it -inf (DESIGN.md: a score made -inf by the
 * mask; no GPU path can tell the mask's -inf from the data's, and they all
 * skip both). Without one, a -inf score is an allowed key of weight 0, which
 * multiplies its V row as IEEE arithmetic has it (0 * NaN = 0 * Inf = NaN), as
 * on every GPU path. The row maximum: NaN once any allowed score is NaN, -inf
 * if no key is allowed or every allowed score is -inf. */
static double row_scores(const attention_dims *d, const dense_attention *a, const sequence *s,
                         int64_t b, int64_t h, int64_t i, int64_t lo, int64_t hi, double *p,
                         bool *allowed, bool *any)
{
    *any = false;
    int64_t g = h / (d->H / d->Hkv);
    const double *q = a->q + b * a->q_stride[0] + h * a->q_stride[1] + (s->q_first + i) * a->q_stride[2];
    double max = -INFINITY;
    for (int64_t j = lo; j < hi; j++) {
        const double *k = a->k + b * a->k_stride[0] + g * a->k_stride[1] +
                          key_row(d, a, s, b, j) * a->k_stride[2];
        p[j] = score(d, a, q, k, b, h, i, j, i + s->q_offset);
        allowed[j] = !(a->mask && p[j] == -INFINITY);
        *any = *any || allowed[j];
        if (allowed[j] && (isnan(p[j]) || p[j] > max))
            max = isnan(max) ? max : p[j];
    }
    return max;
}

static void attend_row(const attention_dims *d, const dense_attention *a, const sequence *s,
                       int64_t b, int64_t h, int64_t i, double *p, bool *allowed)
{
    int64_t g = h / (d->H / d->Hkv);
    double *o = a->o + b * a->o_stride[0] + h * a->o_stride[1] + (s->q_first + i) * a->o_stride[2];
    for (int64_t c = 0; c < d->Dv; c++)
        o[c] = 0.0;
    int64_t lo, hi;
    key_range(d, s, i, &lo, &hi);
    bool any;
    double max = row_scores(d, a, s, b, h, i, lo, hi, p, allowed, &any);
    if (!any)
        return; /* no allowed key: a row of zeros, sink or no sink */
    /* Every allowed score -inf: each key weighs 0, as PyTorch's safe softmax
     * has it, and still multiplies its V row (zeros where V is finite, NaN
     * where it is not, as PyTorch's P V and every GPU path give), with no sum
     * to divide by and no sink, whatever its value (the GPU paths leave a
     * sink out of a row that has seen no finite score). */
    bool weightless = max == -INFINITY;
    if (!weightless && a->sinks && (a->sinks[h] > max || isnan(a->sinks[h])))
        max = isnan(max) ? max : a->sinks[h];
    double shift = weightless ? 0.0 : max;
    double sum = a->sinks && !weightless ? exp(a->sinks[h] - shift) : 0.0;
    for (int64_t j = lo; j < hi; j++)
        if (allowed[j]) {
            p[j] = exp(p[j] - shift);
            sum += p[j];
        }
    for (int64_t j = lo; j < hi; j++) {
        if (!allowed[j])
            continue; /* a key a row may not see never touches it, NaN or not */
        const double *v = a->v + b * a->v_stride[0] + g * a->v_stride[1] +
                          key_row(d, a, s, b, j) * a->v_stride[2];
        for (int64_t c = 0; c < d->Dv; c++)
            o[c] += p[j] * v[c];
    }
    for (int64_t c = 0; c < d->Dv && !weightless; c++)
        o[c] /= sum;
}

/* The rows of attend(): item (b * H + h) * Tq + i is row i of head h of
 * batch entry b (Tq the longest sequence's), each worker with its own scores. */
typedef struct attend_rows {
    const attention_dims *d;
    const dense_attention *a;
    double *p;          /* `keys` scores for each worker */
    bool *allowed;
    size_t keys;
} attend_rows;

static void attend_range(void *arg, int worker, int64_t begin, int64_t end)
{
    const attend_rows *r = arg;
    double *p = r->p + (size_t)worker * r->keys;
    bool *allowed = r->allowed + (size_t)worker * r->keys;
    for (int64_t item = begin; item < end; item++) {
        int64_t i = item % r->d->Tq, h = item / r->d->Tq % r->d->H, b = item / r->d->Tq / r->d->H;
        sequence s = sequence_of(r->d, r->a, b);
        if (i < s.Tq)
            attend_row(r->d, r->a, &s, b, h, i, p, allowed);
    }
}

static bool attend(const attention_dims *d, const dense_attention *a)
{
    int64_t rows = d->B * d->H * d->Tq;
    int threads = cpu_threads_for(rows, (double)rows * (double)d->Tk * (double)(d->D + d->Dv));
    attend_rows r = {.d = d, .a = a, .keys = (size_t)(d->Tk ? d->Tk : 1)};
    r.p = malloc((size_t)threads * r.keys * sizeof *r.p);
    r.allowed = malloc((size_t)threads * r.keys * sizeof *r.allowed);
    bool ok = r.p && r.allowed;
    if (ok && rows > 0)
        cpu_parallel_for(threads, rows, attend_range, &r);
    free(r.p);
    free(r.allowed);
    return ok;
}

/* Element strides (batch, head, sequence) of a 4-D tensor of `heads` heads of
 * size `width` in the given layout. */
static void layout_strides(vkattn_layout layout, int64_t heads, int64_t T, int64_t width,
                           int64_t out[3])
{
    if (layout == VKATTN_LAYOUT_BSHD) {
        out[0] = T * heads * width, out[1] = width, out[2] = heads * width;
    } else {
        out[0] = heads * T * width, out[1] = T * width, out[2] = width;
    }
}

static double *to_double(const vkattn_tensor *t)
{
    double *out = malloc(t->count * sizeof *out);
    if (out)
        host_to_double(t->host, t->dtype, t->count, out);
    return out;
}

vkattn_status cpu_attention(vkattn_context *ctx, const attention_dims *d, const vkattn_tensor *q,
                            const vkattn_tensor *k, const vkattn_tensor *v,
                            const vkattn_tensor *kv_len, vkattn_tensor *o)
{
    const attention_variants *var = &d->var;
    dense_attention a = {
        .q = to_double(q), .k = to_double(k), .v = to_double(v),
        .kv_len = kv_len ? kv_len->host : NULL,
        .cu_q = var->cu_q ? var->cu_q->host : NULL,
        .cu_k = var->cu_k ? var->cu_k->host : NULL,
        .block_table = var->block_table ? var->block_table->host : NULL,
        .sinks = var->sinks ? to_double(var->sinks) : NULL,
        .alibi = var->alibi ? to_double(var->alibi) : NULL,
        .mask = var->mask ? to_double(var->mask) : NULL,
    };
    double *out = calloc(o->count, sizeof *out);
    a.o = out;
    layout_strides(d->layout, d->H, d->Tq, d->D, a.q_stride);
    layout_strides(d->layout, d->Hkv, d->Tk, d->D, a.k_stride);
    layout_strides(d->layout, d->Hkv, d->Tk, d->Dv, a.v_stride);
    layout_strides(d->layout, d->H, d->Tq, d->Dv, a.o_stride);
    /* Packed rows and cache rows: (row, head, D) with no batch stride. */
    if (var->cu_q) {
        int64_t qs[3] = {0, d->D, d->H * d->D}, os[3] = {0, d->Dv, d->H * d->Dv};
        memcpy(a.q_stride, qs, sizeof qs);
        memcpy(a.o_stride, os, sizeof os);
    }
    if (var->cu_k || var->block_table) {
        int64_t ks[3] = {0, d->D, d->Hkv * d->D}, vs[3] = {0, d->Dv, d->Hkv * d->Dv};
        memcpy(a.k_stride, ks, sizeof ks);
        memcpy(a.v_stride, vs, sizeof vs);
    }
    bool ok = a.q && a.k && a.v && out && (!var->sinks || a.sinks) && (!var->alibi || a.alibi) &&
              (!var->mask || a.mask) && attend(d, &a);
    if (ok)
        for (size_t i = 0; i < o->count; i++)
            ((float *)o->host)[i] = (float)out[i];
    free((void *)a.q);
    free((void *)a.k);
    free((void *)a.v);
    free((void *)a.sinks);
    free((void *)a.alibi);
    free((void *)a.mask);
    free(out);
    return ok ? VKATTN_OK
              : ctx_fail(ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY,
                         "attention: out of host memory for the CPU reference");
}

/* y[r, n] = sum_c x[r, c] * w[n, c] + bias[n] (nn.Linear), rows r of x. */
typedef struct linear_rows {
    const double *x, *w, *bias;
    int64_t in, out;
    double *y;
} linear_rows;

static void linear_range(void *arg, int worker, int64_t begin, int64_t end)
{
    const linear_rows *l = arg;
    (void)worker;
    for (int64_t r = begin; r < end; r++)
        for (int64_t n = 0; n < l->out; n++) {
            double acc = 0.0;
            for (int64_t c = 0; c < l->in; c++)
                acc += l->x[r * l->in + c] * l->w[n * l->in + c];
            l->y[r * l->out + n] = acc + (l->bias ? l->bias[n] : 0.0);
        }
}

static bool linear(const double *x, int64_t rows, int64_t in, const vkattn_tensor *w,
                   const vkattn_tensor *bias, int64_t out, double *y)
{
    linear_rows l = {.x = x, .w = to_double(w), .bias = bias ? to_double(bias) : NULL,
                     .in = in, .out = out, .y = y};
    bool ok = l.w && (!bias || l.bias);
    if (ok && rows > 0)
        cpu_parallel_for(cpu_threads_for(rows, (double)rows * (double)in * (double)out), rows,
                         linear_range, &l);
    free((void *)l.w);
    free((void *)l.bias);
    return ok;
}

/* Rounds a step's `count` results to a 16-bit `dtype` as the Vulkan path
 * does: to f32 (its accumulators), then to nearest even. F32 leaves them in
 * double, as the reference keeps everything else. */
static void round_to(double *values, size_t count, vkattn_dtype dtype)
{
    if (dtype == VKATTN_DTYPE_F16)
        for (size_t i = 0; i < count; i++)
            values[i] = half_to_float(float_to_half((float)values[i]));
    else if (dtype == VKATTN_DTYPE_BF16)
        for (size_t i = 0; i < count; i++)
            values[i] = bf16_to_float(float_to_bf16((float)values[i]));
}

vkattn_status cpu_mha(vkattn_context *ctx, const attention_dims *d, vkattn_dtype compute,
                      const vkattn_tensor *x, const vkattn_tensor *w_qkv,
                      const vkattn_tensor *b_qkv, const vkattn_tensor *w_out,
                      const vkattn_tensor *b_out, vkattn_tensor *y)
{
    int64_t B = d->B, T = d->Tq, C = x->shape[2], width = d->H * d->D;
    int64_t C_out = w_out->shape[0];
    double *xd = to_double(x);
    double *qkv = malloc((size_t)(B * T * 3 * width) * sizeof *qkv);
    double *o = malloc((size_t)(B * T * width) * sizeof *o);
    double *out = malloc((size_t)(B * T * C_out) * sizeof *out);
    bool ok = xd && qkv && o && out;
    if (ok)
        ok = linear(xd, B * T, C, w_qkv, b_qkv, 3 * width, qkv);
    if (ok)
        round_to(qkv, (size_t)(B * T * 3 * width), compute);
    if (ok) {
        /* q, k, v are column blocks of qkv, each (B, T, H, Dh): BSHD with row stride 3*H*Dh. */
        dense_attention a = {.q = qkv, .k = qkv + width, .v = qkv + 2 * width, .o = o,
                             .sinks = d->var.sinks ? to_double(d->var.sinks) : NULL,
                             .alibi = d->var.alibi ? to_double(d->var.alibi) : NULL,
                             .mask = d->var.mask ? to_double(d->var.mask) : NULL};
        int64_t in_strides[3] = {T * 3 * width, d->D, 3 * width};
        int64_t out_strides[3] = {T * width, d->D, width};
        for (int i = 0; i < 3; i++) {
            a.q_stride[i] = a.k_stride[i] = a.v_stride[i] = in_strides[i];
            a.o_stride[i] = out_strides[i];
        }
        ok = (!d->var.sinks || a.sinks) && (!d->var.alibi || a.alibi) &&
             (!d->var.mask || a.mask) && attend(d, &a);
        free((void *)a.sinks);
        free((void *)a.alibi);
        free((void *)a.mask);
    }
    if (ok) {
        round_to(o, (size_t)(B * T * width), compute);
        ok = linear(o, B * T, width, w_out, b_out, C_out, out);
    }
    if (ok) {
        for (size_t i = 0; i < y->count; i++)
            ((float *)y->host)[i] = (float)out[i];
    }
    free(xd);
    free(qkv);
    free(o);
    free(out);
    return ok ? VKATTN_OK
              : ctx_fail(ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY,
                         "mha: out of host memory for the CPU reference");
}
