/* IEEE binary16 <-> binary32 and bfloat16 <-> binary32 conversion on the host
 * (round to nearest even), and host tensor data read as double. */
#include "internal.h"

#include <string.h>

float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    uint32_t bits;
    if (exponent == 0x1f) {                       /* Inf or NaN */
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent != 0) {                   /* normal */
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {                   /* zero */
        bits = sign;
    } else {                                      /* subnormal: normalise */
        exponent = 113;
        while (!(mantissa & 0x400u)) {
            mantissa <<= 1;
            exponent--;
        }
        bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t float_to_half(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    uint32_t abs = bits & 0x7fffffffu;
    if (abs >= 0x7f800000u)                       /* Inf, NaN (keep it quiet NaN) */
        return sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u);
    if (abs >= 0x477ff000u)                       /* rounds to >= 65520: overflow */
        return sign | 0x7c00u;
    if (abs < 0x33000001u)                        /* below half the smallest subnormal */
        return sign;
    uint32_t exponent = abs >> 23;
    uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift;
    uint32_t half_bits;
    if (exponent < 113) {                          /* subnormal result */
        shift = 126 - exponent;                   /* 14..24 */
        half_bits = mantissa >> shift;
    } else {
        shift = 13;
        half_bits = ((exponent - 112) << 10) | ((mantissa >> 13) & 0x3ffu);
    }
    uint32_t rest = mantissa & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half_bits & 1u)))
        half_bits++;                              /* may carry into the exponent: correct */
    return (uint16_t)(sign | half_bits);
}

float bf16_to_float(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16; /* exact: bf16 is the top half of an f32 */
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t float_to_bf16(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u)      /* NaN: keep sign and top payload, quiet */
        return (uint16_t)((bits >> 16) | 0x0040u);
    /* Round the low 16 bits away, to nearest with ties to the even result: adding
     * 0x7fff carries into bit 16 exactly when the rest is past halfway, and the
     * kept lowest bit tips a tie. A carry may run into the exponent, which is the
     * right next value (up to Inf past the largest finite bf16). Subnormals, zeros
     * and Inf need no special case. */
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

double host_element(const void *data, vkattn_dtype dtype, size_t i)
{
    switch (dtype) {
    case VKATTN_DTYPE_F32: return ((const float *)data)[i];
    case VKATTN_DTYPE_F16: return half_to_float(((const uint16_t *)data)[i]);
    case VKATTN_DTYPE_I32: return ((const int32_t *)data)[i];
    case VKATTN_DTYPE_BF16: return bf16_to_float(((const uint16_t *)data)[i]);
    }
    return 0.0;
}

void host_to_double(const void *data, vkattn_dtype dtype, size_t count, double *out)
{
    /* One loop per dtype: this runs over whole tensors in the CPU reference. */
    switch (dtype) {
    case VKATTN_DTYPE_F32:
        for (size_t i = 0; i < count; i++)
            out[i] = ((const float *)data)[i];
        break;
    case VKATTN_DTYPE_F16:
        for (size_t i = 0; i < count; i++)
            out[i] = half_to_float(((const uint16_t *)data)[i]);
        break;
    case VKATTN_DTYPE_I32:
        for (size_t i = 0; i < count; i++)
            out[i] = ((const int32_t *)data)[i];
        break;
    case VKATTN_DTYPE_BF16:
        for (size_t i = 0; i < count; i++)
            out[i] = bf16_to_float(((const uint16_t *)data)[i]);
        break;
    }
}
