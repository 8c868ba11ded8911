/* The matrix shapes the cooperative-matrix kernels (attention and matmul) are
 * specialized for. */
#include "ops_common.h"

#include <stdio.h>
#include <stdlib.h>

/* Larger shapes would not leave room for the kernels' tiles. */
#define COOPMAT_MAX_SHAPE 64

bool coopmat_device_shape(const device_caps *caps, coopmat_shape *out)
{
    uint64_t best = 0;
    for (uint32_t i = 0; i < caps->coopmat_shape_count; i++) {
        coopmat_shape s = caps->coopmat_shapes[i];
        uint64_t work = (uint64_t)s.m * s.n * s.k;
        if (s.m && s.n && s.k && s.m <= COOPMAT_MAX_SHAPE && s.n <= COOPMAT_MAX_SHAPE &&
            s.k <= COOPMAT_MAX_SHAPE && work > best)
            best = work, *out = s;
    }
    return best > 0;
}

bool coopmat_emulated_shape(coopmat_shape *out)
{
    *out = (coopmat_shape){16, 16, 16};
    const char *env = getenv("VKATTN_COOPMAT_EMULATED_SHAPE");
    unsigned m, n, k;
    if (env && sscanf(env, "%ux%ux%u", &m, &n, &k) == 3) {
        if (!m || !n || !k || m > COOPMAT_MAX_SHAPE || n > COOPMAT_MAX_SHAPE ||
            k > COOPMAT_MAX_SHAPE)
            return false;
        *out = (coopmat_shape){m, n, k};
    }
    return true;
}
