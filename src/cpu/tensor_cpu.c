/* CPU backend tensors: plain host memory. */
#include "internal.h"

#include <stdlib.h>

vkattn_status cpu_tensor_alloc(vkattn_tensor *t)
{
    t->host = malloc(t->bytes);
    if (!t->host)
        return ctx_fail(t->ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY,
                        "tensor_create: cannot allocate %zu bytes of host memory", t->bytes);
    return VKATTN_OK;
}
