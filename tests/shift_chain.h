/* A long chain of dependent ops whose result is exact and tells a dropped,
 * repeated or reordered step from a right one: X (rows x cols, f32) times the
 * cyclic shift matrix P, ping-ponged between two tensors. After n steps the
 * tensor written last holds X with its columns rotated by n (mod cols), the
 * other by n - 1; with a prime cols a step lost anywhere leaves both wrong.
 * For the tests of long command streams (descriptor pools filling up). */
#ifndef VKATTN_SHIFT_CHAIN_H
#define VKATTN_SHIFT_CHAIN_H

#include "test_util.h"

typedef struct shift_chain {
    vkattn_context *ctx;
    vkattn_tensor *p, *x[2];
    float *start;   /* X, as uploaded */
    int rows, cols;
    long steps;     /* recorded so far */
} shift_chain;

/* X random from `r`; fails the test where a tensor cannot be made. */
void shift_chain_create(vkattn_context *ctx, int rows, int cols, rng *r, shift_chain *c);
/* Records one step (a matmul into the tensor the last step read). */
vkattn_status shift_chain_step(shift_chain *c);
/* Downloads both tensors and fails the test, naming `what`, unless each holds
 * its rotation exactly. */
void shift_chain_expect(const shift_chain *c, const char *what);
void shift_chain_destroy(shift_chain *c);

#endif
