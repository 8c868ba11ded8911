/* The smallest vkattn program: causal attention for one head on the default
 * device (a GPU if there is one, else lavapipe, else the CPU backend).
 *
 *     cc minimal.c $(pkg-config --cflags --libs vkattn) -o minimal && ./minimal
 */
#include <stdio.h>
#include <stdlib.h>

#include "vkattn.h"

/* Prints what vkattn logs (device choice, warnings, validation messages). */
static void print_log(void *user, vkattn_log_level level, vkattn_log_source source,
                      const char *message)
{
    (void)user;
    if (level >= VKATTN_LOG_INFO)
        fprintf(stderr, "%s%s\n", source == VKATTN_LOG_SOURCE_VALIDATION ? "VALIDATION: " : "",
                message);
}

int main(void)
{
    enum { T = 8, D = 4 };
    float q[T * D], k[T * D], v[T * D], o[T * D];
    for (int i = 0; i < T * D; i++) {
        q[i] = (float)((i * 7) % 5) / 5.0f;
        k[i] = (float)((i * 3) % 7) / 7.0f;
        v[i] = (float)(i % D); /* every row of V is 0 1 2 3 */
    }

    vkattn_context *ctx;
    vkattn_context_desc cd = {.log_fn = print_log};
    vkattn_status s = vkattn_context_create(&cd, &ctx);
    if (s != VKATTN_OK) {
        fprintf(stderr, "vkattn_context_create: %s\n", vkattn_status_string(s));
        return 1;
    }
    /* Q, K, V and O are (B, H, T, D) = (1, 1, 8, 4). */
    vkattn_tensor_desc td = {.dtype = VKATTN_DTYPE_F32, .ndim = 4, .shape = {1, 1, T, D}};
    vkattn_tensor *tq = NULL, *tk = NULL, *tv = NULL, *to = NULL;
    vkattn_attention_desc ad = {.causal = true};
    if ((s = vkattn_tensor_create(ctx, &td, &tq)) || (s = vkattn_tensor_create(ctx, &td, &tk)) ||
        (s = vkattn_tensor_create(ctx, &td, &tv)) || (s = vkattn_tensor_create(ctx, &td, &to)) ||
        (s = vkattn_tensor_upload(tq, q, VKATTN_DTYPE_F32)) ||
        (s = vkattn_tensor_upload(tk, k, VKATTN_DTYPE_F32)) ||
        (s = vkattn_tensor_upload(tv, v, VKATTN_DTYPE_F32)) ||
        (s = vkattn_attention(ctx, &ad, tq, tk, tv, to)) ||
        (s = vkattn_tensor_download(to, o, VKATTN_DTYPE_F32)))
        fprintf(stderr, "vkattn: %s\n", vkattn_last_error(ctx));

    /* Each output row is a weighted mean of V's rows, all 0 1 2 3. */
    int wrong = 0;
    for (int i = 0; s == VKATTN_OK && i < T * D; i++)
        wrong += o[i] < (float)(i % D) - 1e-5f || o[i] > (float)(i % D) + 1e-5f;
    vkattn_device_info info;
    vkattn_context_info(ctx, &info);
    if (s == VKATTN_OK)
        printf("attention on %s: %s\n", info.name, wrong ? "WRONG" : "ok");

    vkattn_tensor_destroy(tq);
    vkattn_tensor_destroy(tk);
    vkattn_tensor_destroy(tv);
    vkattn_tensor_destroy(to);
    vkattn_context_destroy(ctx);
    return s != VKATTN_OK || wrong;
}
