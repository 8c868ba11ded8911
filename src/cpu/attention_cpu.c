/* CPU reference attention and multi-head attention layer: the definitions in
 * DESIGN.md section 1, computed in double with plain loops. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

/* One attention problem over double arrays with element strides (batch, head,
 * sequence; the head dimension is contiguous). */
typedef struct dense_attention {
    const double *q, *k, *v;
    double *o;
    int64_t q_stride[3], k_stride[3], v_stride[3], o_stride[3];
} dense_attention;

/* The allowed keys of query row i are j < limit (DESIGN.md: j <= i + q_offset
 * when causal, j < kv_len[b]). */
static int64_t row_limit(const attention_dims *d, const int32_t *kv_len, int64_t b, int64_t i)
{
    int64_t limit = d->Tk;
    if (kv_len && kv_len[b] < limit)
        limit = kv_len[b] > 0 ? kv_len[b] : 0;
    if (d->causal && i + d->q_offset + 1 < limit)
        limit = i + d->q_offset + 1 > 0 ? i + d->q_offset + 1 : 0;
    return limit;
}

static bool attend(const attention_dims *d, const int32_t *kv_len, const dense_attention *a)
{
    double *p = malloc((size_t)(d->Tk ? d->Tk : 1) * sizeof *p);
    if (!p)
        return false;
    int64_t group = d->H / d->Hkv;
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t h = 0; h < d->H; h++)
            for (int64_t i = 0; i < d->Tq; i++) {
                int64_t g = h / group;
                const double *q = a->q + b * a->q_stride[0] + h * a->q_stride[1] + i * a->q_stride[2];
                double *o = a->o + b * a->o_stride[0] + h * a->o_stride[1] + i * a->o_stride[2];
                int64_t limit = row_limit(d, kv_len, b, i);
                double max = -INFINITY; /* NaN once any allowed score is NaN */
                for (int64_t j = 0; j < limit; j++) {
                    const double *k = a->k + b * a->k_stride[0] + g * a->k_stride[1] + j * a->k_stride[2];
                    double dot = 0.0;
                    for (int64_t c = 0; c < d->D; c++)
                        dot += q[c] * k[c];
                    p[j] = d->scale * dot;
                    if (isnan(p[j]) || p[j] > max)
                        max = isnan(max) ? max : p[j];
                }
                if (max == -INFINITY)
                    limit = 0; /* no allowed key (or all -inf): a row of zeros */
                double sum = 0.0;
                for (int64_t j = 0; j < limit; j++) {
                    p[j] = exp(p[j] - max);
                    sum += p[j];
                }
                for (int64_t c = 0; c < d->Dv; c++)
                    o[c] = 0.0;
                for (int64_t j = 0; j < limit; j++) {
                    const double *v = a->v + b * a->v_stride[0] + g * a->v_stride[1] + j * a->v_stride[2];
                    for (int64_t c = 0; c < d->Dv; c++)
                        o[c] += p[j] * v[c];
                }
                for (int64_t c = 0; c < d->Dv && limit; c++)
                    o[c] /= sum;
            }
    free(p);
    return true;
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
    dense_attention a = {.q = to_double(q), .k = to_double(k), .v = to_double(v)};
    double *out = malloc(o->count * sizeof *out);
    a.o = out;
    layout_strides(d->layout, d->H, d->Tq, d->D, a.q_stride);
    layout_strides(d->layout, d->Hkv, d->Tk, d->D, a.k_stride);
    layout_strides(d->layout, d->Hkv, d->Tk, d->Dv, a.v_stride);
    layout_strides(d->layout, d->H, d->Tq, d->Dv, a.o_stride);
    bool ok = a.q && a.k && a.v && out &&
              attend(d, kv_len ? (const int32_t *)kv_len->host : NULL, &a);
    if (ok)
        for (size_t i = 0; i < o->count; i++)
            ((float *)o->host)[i] = (float)out[i];
    free((void *)a.q);
    free((void *)a.k);
    free((void *)a.v);
    free(out);
    return ok ? VKATTN_OK
              : ctx_fail(ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY,
                         "attention: out of host memory for the CPU reference");
}

/* y[r, n] = sum_c x[r, c] * w[n, c] + bias[n] (nn.Linear), rows r of x. */
static bool linear(const double *x, int64_t rows, int64_t in, const vkattn_tensor *w,
                   const vkattn_tensor *bias, int64_t out, double *y)
{
    double *wd = to_double(w), *bd = bias ? to_double(bias) : NULL;
    bool ok = wd && (!bias || bd);
    for (int64_t r = 0; ok && r < rows; r++)
        for (int64_t n = 0; n < out; n++) {
            double acc = 0.0;
            for (int64_t c = 0; c < in; c++)
                acc += x[r * in + c] * wd[n * in + c];
            y[r * out + n] = acc + (bd ? bd[n] : 0.0);
        }
    free(wd);
    free(bd);
    return ok;
}

vkattn_status cpu_mha(vkattn_context *ctx, const attention_dims *d, const vkattn_tensor *x,
                      const vkattn_tensor *w_qkv, const vkattn_tensor *b_qkv,
                      const vkattn_tensor *w_out, const vkattn_tensor *b_out, vkattn_tensor *y)
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
    if (ok) {
        /* q, k, v are column blocks of qkv, each (B, T, H, Dh): BSHD with row stride 3*H*Dh. */
        dense_attention a = {.q = qkv, .k = qkv + width, .v = qkv + 2 * width, .o = o};
        int64_t in_strides[3] = {T * 3 * width, d->D, 3 * width};
        int64_t out_strides[3] = {T * width, d->D, width};
        for (int i = 0; i < 3; i++) {
            a.q_stride[i] = a.k_stride[i] = a.v_stride[i] = in_strides[i];
            a.o_stride[i] = out_strides[i];
        }
        ok = attend(d, NULL, &a);
    }
    if (ok)
        ok = linear(o, B * T, width, w_out, b_out, C_out, out);
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
