/* float16 -> float32 (exact) and float32 -> float16 as numpy rounds it (nearest even, subnormals kept, NaN payloads shifted and kept NaN), and the
 * bit casts it needs: shared by the kernels that store float16. */
#ifndef NPURT_HALF_H
#define NPURT_HALF_H
#include <stdint.h>
#include <string.h>

static inline uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline uint16_t f32_to_f16(float value)
{
    uint32_t f = f32_bits(value);
    uint16_t sign = (uint16_t)((f >> 16) & 0x8000u);
    uint32_t exp = (f >> 23) & 0xffu, man = f & 0x7fffffu;
    if (exp == 0xffu) {
        if (man == 0)
            return sign | 0x7c00u;
        uint16_t nan = (uint16_t)(0x7c00u | (man >> 13));
        return sign | (nan == 0x7c00u ? 0x7c01u : nan);       /* keep it a NaN */
    }
    int e = (int)exp - 112;                                   /* half exponent field */
    if (e >= 31)
        return sign | 0x7c00u;
    uint32_t q, rem, half;
    if (e <= 0) {                                             /* half subnormal (or zero) */
        int shift = 14 - e;
        if (exp == 0 || shift > 24)
            return sign;
        uint32_t m = man | 0x800000u;
        q = m >> shift;
        rem = m & ((1u << shift) - 1u);
        half = 1u << (shift - 1);
    } else {
        q = ((uint32_t)e << 10) | (man >> 13);
        rem = man & 0x1fffu;
        half = 0x1000u;
    }
    if (rem > half || (rem == half && (q & 1u)))
        q++;                                                  /* a carry may reach infinity: correct */
    return sign | (uint16_t)q;
}

static inline float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1fu)
        return bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (man == 0)
            return bits_f32(sign);
        int e = -1;
        do { e++; man <<= 1; } while (!(man & 0x400u));      /* normalise the subnormal */
        return bits_f32(sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13));
    }
    return bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

#endif
