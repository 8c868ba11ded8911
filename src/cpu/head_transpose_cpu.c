/* CPU reference head transpose: Y[a, c, b, d] = X[a, b, c, d]. */
#include "internal.h"

void cpu_head_transpose(const vkattn_tensor *x, vkattn_tensor *y)
{
    int64_t A = x->shape[0], B = x->shape[1], C = x->shape[2], D = x->shape[3];
    float *out = y->host;
    for (int64_t a = 0; a < A; a++)
        for (int64_t b = 0; b < B; b++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t d = 0; d < D; d++)
                    out[((a * C + c) * B + b) * D + d] = (float)host_element(
                        x->host, x->dtype, (size_t)(((a * B + b) * C + c) * D + d));
}
