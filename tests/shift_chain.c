#include "shift_chain.h"

#include <stdlib.h>
#include <string.h>

static vkattn_tensor *matrix(vkattn_context *ctx, int rows, int cols, const float *data)
{
    vkattn_tensor_desc d = {.dtype = VKATTN_DTYPE_F32, .ndim = 2, .shape = {rows, cols}};
    vkattn_tensor *t = NULL;
    vkattn_status s = vkattn_tensor_create(ctx, &d, &t);
    if (s != VKATTN_OK)
        fail_msg("shift chain: tensor_create: %s", vkattn_last_error(ctx));
    assert_int_equal(vkattn_tensor_upload(t, data, VKATTN_DTYPE_F32), VKATTN_OK);
    return t;
}

void shift_chain_create(vkattn_context *ctx, int rows, int cols, rng *r, shift_chain *c)
{
    memset(c, 0, sizeof *c);
    c->ctx = ctx;
    c->rows = rows;
    c->cols = cols;
    /* (X P)[i][j] = X[i][j - 1 mod cols]: a single 1 in each column, so every
     * product is one element times 1 plus zeros, exact in any order. */
    float *p = calloc((size_t)cols * cols, sizeof *p);
    assert_non_null(p);
    for (int k = 0; k < cols; k++)
        p[k * cols + (k + 1) % cols] = 1.0f;
    c->p = matrix(ctx, cols, cols, p);
    free(p);
    c->start = random_floats(r, (size_t)rows * cols, -1.0f, 1.0f);
    c->x[0] = matrix(ctx, rows, cols, c->start);
    c->x[1] = matrix(ctx, rows, cols, c->start);
}

vkattn_status shift_chain_step(shift_chain *c)
{
    int from = (int)(c->steps % 2);
    vkattn_status s = vkattn_matmul(c->ctx, NULL, c->x[from], c->p, NULL, c->x[1 - from]);
    if (s == VKATTN_OK)
        c->steps++;
    return s;
}

void shift_chain_expect(const shift_chain *c, const char *what)
{
    size_t n = (size_t)c->rows * c->cols;
    float *got = malloc(n * sizeof *got);
    assert_non_null(got);
    /* Step s wrote x[(s + 1) % 2] (s from 1): the last one x[steps % 2]. */
    for (int t = 0; t < 2; t++) {
        long shift = t == (int)(c->steps % 2) ? c->steps : c->steps - 1;
        if (shift < 0)
            shift = 0; /* no step yet: both hold X */
        assert_int_equal(vkattn_tensor_download(c->x[t], got, VKATTN_DTYPE_F32), VKATTN_OK);
        for (int i = 0; i < c->rows; i++)
            for (int j = 0; j < c->cols; j++) {
                float want = c->start[i * c->cols + (int)((j - shift % c->cols + c->cols) % c->cols)];
                if (got[i * c->cols + j] != want)
                    fail_msg("%s: after %ld steps, element (%d, %d) of the tensor rotated by "
                             "%ld is %g, not %g", what, c->steps, i, j, shift,
                             (double)got[i * c->cols + j], (double)want);
            }
    }
    free(got);
}

void shift_chain_destroy(shift_chain *c)
{
    vkattn_tensor_destroy(c->p);
    vkattn_tensor_destroy(c->x[0]);
    vkattn_tensor_destroy(c->x[1]);
    free(c->start);
    memset(c, 0, sizeof *c);
}
