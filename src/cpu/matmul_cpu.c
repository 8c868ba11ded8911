/* CPU reference matmul: plain loops, double accumulation, rows of the output
 * shared out to threads (cpu_parallel_for). */
#include "internal.h"

/* Output columns accumulated at once: B is read along its rows (k * N + n),
 * a block of them per k, not down a column per output (a cache miss per
 * multiply-add at N = 4096). */
#define COLUMNS 256

typedef struct matmul_rows {
    const vkattn_matmul_desc *d;
    const vkattn_tensor *a, *b, *bias;
    float *out;
    size_t M, K, N, group;
} matmul_rows;

/* Output row `row` (batch * M + m): each element the sum over k in order, as
 * one dot product would take it. */
static void matmul_row(const matmul_rows *r, size_t row)
{
    size_t M = r->M, K = r->K, N = r->N, batch = row / M;
    size_t a_base = row * K;
    size_t b_base = r->b->ndim == 2 ? 0 : (batch / r->group) * K * N;
    double sum[COLUMNS];
    for (size_t n0 = 0; n0 < N; n0 += COLUMNS) {
        size_t columns = N - n0 < COLUMNS ? N - n0 : COLUMNS;
        for (size_t c = 0; c < columns; c++)
            sum[c] = 0.0;
        for (size_t k = 0; k < K; k++) {
            double a = host_element(r->a->host, r->a->dtype, a_base + k);
            for (size_t c = 0; c < columns; c++) {
                size_t n = n0 + c;
                size_t bi = r->d->transpose_b ? b_base + n * K + k : b_base + k * N + n;
                sum[c] += a * host_element(r->b->host, r->b->dtype, bi);
            }
        }
        for (size_t c = 0; c < columns; c++) {
            double v = (double)r->d->alpha * sum[c];
            if (r->bias)
                v += host_element(r->bias->host, r->bias->dtype, n0 + c);
            r->out[row * N + n0 + c] = (float)v;
        }
    }
}

static void matmul_range(void *arg, int worker, int64_t begin, int64_t end)
{
    (void)worker;
    for (int64_t row = begin; row < end; row++)
        matmul_row(arg, (size_t)row);
}

void cpu_matmul(const vkattn_matmul_desc *d, const vkattn_tensor *a, const vkattn_tensor *b,
                const vkattn_tensor *bias, vkattn_tensor *c)
{
    int32_t lead = a->ndim - 2;
    matmul_rows r = {
        .d = d, .a = a, .b = b, .bias = bias, .out = c->host,
        .M = (size_t)a->shape[lead], .K = (size_t)a->shape[lead + 1],
        .N = (size_t)c->shape[lead + 1],
    };
    size_t batches = (size_t)product(a->shape, lead);
    int64_t rows = (int64_t)(batches * r.M);
    if (rows == 0)
        return;
    r.group = batches / (size_t)product(b->shape, b->ndim - 2); /* A batches a B batch serves */
    cpu_parallel_for(cpu_threads_for(rows, (double)rows * (double)r.K * (double)r.N), rows,
                     matmul_range, &r);
}
