/* CPU reference masked softmax: the definition in DESIGN.md section 1, in double. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

vkattn_status cpu_softmax(const vkattn_softmax_desc *d, int64_t q_offset, const vkattn_tensor *x,
                          vkattn_tensor *y)
{
    int64_t Tq = x->shape[x->ndim - 2], Tk = x->shape[x->ndim - 1];
    int64_t rows = (int64_t)x->count / Tk;
    int64_t rows_per_batch = rows / (x->ndim >= 3 ? x->shape[0] : 1);
    float *out = y->host;
    /* A copy of the row: y may be x, and double keeps the exponentials exact enough. */
    double *values = malloc((size_t)Tk * sizeof *values);
    if (!values)
        return ctx_fail(x->ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY,
                        "softmax: cannot allocate a row of %lld doubles", (long long)Tk);

    for (int64_t row = 0; row < rows; row++) {
        int64_t i = row % Tq;
        int64_t limit = Tk;
        if (d->kv_len) {
            int64_t kv = ((const int32_t *)d->kv_len->host)[row / rows_per_batch];
            limit = kv < limit ? (kv > 0 ? kv : 0) : limit;
        }
        if (d->causal && i + q_offset + 1 < limit)
            limit = i + q_offset + 1 > 0 ? i + q_offset + 1 : 0;

        double max = -INFINITY; /* NaN once any allowed score is NaN */
        for (int64_t j = 0; j < limit; j++) {
            values[j] = host_element(x->host, x->dtype, (size_t)(row * Tk + j));
            if (isnan(values[j]) || values[j] > max)
                max = isnan(max) ? max : values[j];
        }
        if (max == -INFINITY)
            limit = 0; /* no allowed key (or all -inf): zeros */
        double sum = 0.0;
        for (int64_t j = 0; j < limit; j++) {
            values[j] = exp((values[j] - max) * (double)d->scale);
            sum += values[j];
        }
        for (int64_t j = 0; j < Tk; j++)
            out[row * Tk + j] = j < limit ? (float)(values[j] / sum) : 0.0f;
    }
    free(values);
    return VKATTN_OK;
}
