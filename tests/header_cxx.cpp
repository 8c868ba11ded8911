// The public header compiles as C++ (extern "C", no C-only constructs) and its
// version macros agree with the library's.
#include "vkattn.h"

#include <cstdio>
#include <cstring>

int main()
{
    vkattn_context_desc desc = {};
    desc.backend = VKATTN_BACKEND_CPU;
    vkattn_context *ctx = nullptr;
    if (vkattn_context_create(&desc, &ctx) != VKATTN_OK)
        return 1;
    vkattn_context_destroy(ctx);
    bool same = vkattn_version() == VKATTN_VERSION;
    std::printf("vkattn %s from C++: %s\n", vkattn_version_string(), same ? "ok" : "version mismatch");
    return same && std::strcmp(vkattn_status_string(VKATTN_OK), "success") == 0 ? 0 : 1;
}
