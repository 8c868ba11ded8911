/* Status strings, version queries, and the shape/dtype helpers every op uses. */
#include "internal.h"

#include <stdio.h>

const char *vkattn_status_string(vkattn_status status)
{
    switch (status) {
#define VKATTN_STATUS_CASE_(name, value, text) \
    case VKATTN_##name:                        \
        return text;
        VKATTN_STATUS_LIST(VKATTN_STATUS_CASE_)
#undef VKATTN_STATUS_CASE_
    }
    return "unknown status";
}

const char *vkattn_version_string(void) { return VKATTN_VERSION_STRING_BUILT; }

uint32_t vkattn_version(void) { return VKATTN_VERSION; }

size_t dtype_size(vkattn_dtype dtype)
{
    switch (dtype) {
    case VKATTN_DTYPE_F32: return 4;
    case VKATTN_DTYPE_F16: return 2;
    case VKATTN_DTYPE_I32: return 4;
    case VKATTN_DTYPE_BF16: return 2;
    }
    return 0;
}

const char *dtype_name(vkattn_dtype dtype)
{
    switch (dtype) {
    case VKATTN_DTYPE_F32: return "f32";
    case VKATTN_DTYPE_F16: return "f16";
    case VKATTN_DTYPE_I32: return "i32";
    case VKATTN_DTYPE_BF16: return "bf16";
    }
    return "invalid dtype";
}

const char *shape_string(const vkattn_tensor *t, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < t->ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? "x%lld" : "%lld",
                                 (long long)t->shape[i]);
    return buf;
}

int64_t product(const int64_t *dims, int32_t n)
{
    int64_t p = 1;
    for (int32_t i = 0; i < n; i++)
        p *= dims[i];
    return p;
}

vkattn_status check_tensor(vkattn_context *ctx, const vkattn_tensor *t, const char *op,
                           const char *name)
{
    if (!t)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", op, name);
    if (t->ctx != ctx)
        return ctx_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT,
                        "%s: %s belongs to another context", op, name);
    return VKATTN_OK;
}
