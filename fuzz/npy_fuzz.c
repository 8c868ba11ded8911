/* libFuzzer target for the .npy parser: any byte string must parse or be
 * refused with a message, never crash, read out of bounds or leak. */
#include <stddef.h>
#include <stdint.h>

#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    npy_array a;
    char err[256];
    if (npy_parse(data, size, &a, err, sizeof err) == 0)
        npy_free(&a);
    return 0;
}
