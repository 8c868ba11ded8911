// Shared memory filled with NaN before a kernel uses it: a check for the tests.
//
// A GPU's shared memory holds anything when a workgroup starts; lavapipe's
// tends to hold zeros or the last workgroup's values, which can make a read
// before the kernel's first write there look right (a bf16 exponent that was
// never reset did, until a test caught it). With POISON_SHARED every word of
// the kernel's shared memory reads as NaN until the kernel writes it: as an
// f32, as either f16 of a packed pair and as either bf16, and as an integer a
// value far past any index, count or exponent. The host sets it on every
// pipeline of a context started with VKATTN_POISON=1, which the ctest runs of
// the test programs set (and which poisons scratch tensors too, src/scratch.c);
// otherwise it is specialized away.
//
// Each kernel that declares shared memory has a poison_shared() that names
// every array (the emulated matrices with MATRIX_POISON and WG_POISON) and is
// the first thing its main() does; tests/poison_shared_test.py checks that
// none is left out.

// Keep in sync with VKATTN_SPEC_POISON_SHARED in src/internal.h: the first
// constant_id past the kernels' own.
layout(constant_id = 24) const bool POISON_SHARED = false;

const uint POISON_BITS = 0x7fc07fc0u;  // VKATTN_POISON_BITS in src/internal.h

#define POISON_STORE_(ARRAY, VALUE)                                                             \
    for (uint i_ = gl_LocalInvocationIndex; i_ < uint(ARRAY.length());                          \
         i_ += gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z)                    \
        ARRAY[i_] = (VALUE);

#define POISON_FLOATS(ARRAY) POISON_STORE_(ARRAY, uintBitsToFloat(POISON_BITS))
#define POISON_VEC4S(ARRAY) POISON_STORE_(ARRAY, vec4(uintBitsToFloat(POISON_BITS)))
#define POISON_UINTS(ARRAY) POISON_STORE_(ARRAY, POISON_BITS)
#define POISON_UVEC4S(ARRAY) POISON_STORE_(ARRAY, uvec4(POISON_BITS))
#define POISON_HALVES(ARRAY) POISON_STORE_(ARRAY, float16_t(uintBitsToFloat(POISON_BITS)))

// After the stores, before the kernel's first use.
void poison_shared_done()
{
    memoryBarrierShared();
    barrier();
}
