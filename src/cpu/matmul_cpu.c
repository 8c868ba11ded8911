/* CPU reference matmul: plain loops, double accumulation. */
#include "internal.h"

void cpu_matmul(const vkattn_matmul_desc *d, const vkattn_tensor *a, const vkattn_tensor *b,
                const vkattn_tensor *bias, vkattn_tensor *c)
{
    int32_t lead = a->ndim - 2;
    size_t M = (size_t)a->shape[lead], K = (size_t)a->shape[lead + 1];
    size_t N = (size_t)c->shape[lead + 1];
    size_t batches = (size_t)product(a->shape, lead);
    size_t b_batches = (size_t)product(b->shape, b->ndim - 2);
    size_t group = batches / b_batches; /* A batches sharing one B batch */
    float *out = c->host;

    for (size_t batch = 0; batch < batches; batch++) {
        size_t a_base = batch * M * K;
        size_t b_base = b->ndim == 2 ? 0 : (batch / group) * K * N;
        for (size_t m = 0; m < M; m++)
            for (size_t n = 0; n < N; n++) {
                double sum = 0.0;
                for (size_t k = 0; k < K; k++) {
                    size_t bi = d->transpose_b ? b_base + n * K + k : b_base + k * N + n;
                    sum += host_element(a->host, a->dtype, a_base + m * K + k) *
                           host_element(b->host, b->dtype, bi);
                }
                double v = (double)d->alpha * sum;
                if (bias)
                    v += host_element(bias->host, bias->dtype, n);
                out[batch * M * N + m * N + n] = (float)v;
            }
    }
}
