/* SiLU, f / (1 + e^(-alpha f)), in basic float32 operations only, the order of `npurt.exec.inplace.epilogue.silu`
 * (e^z as Cephes expf: z clamped to [-87, 87], n = rint(z log2 e), r = z - n ln 2 in two parts, the polynomial of
 * e^r, times 2^n), so the compiled convs store the numpy reference's bytes at every instruction set. Built with
 * -ffp-contract=off: no multiply-add is fused. */
#ifndef NPURT_SILU_H
#define NPURT_SILU_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#define EXP_HI 87.0f
#define EXP_LOG2E 1.44269504088896341f
#define EXP_C1 0.693359375f
#define EXP_C2 -2.12194440e-4f
#define EXP_P0 1.9875691500e-4f
#define EXP_P1 1.3981999507e-3f
#define EXP_P2 8.3334519073e-3f
#define EXP_P3 4.1665795894e-2f
#define EXP_P4 1.6666665459e-1f
#define EXP_P5 5.0000001201e-1f

static inline float silu1(float f, float alpha)
{
    if (f != f)
        return f;
    float z = -(f * alpha);
    z = z < -EXP_HI ? -EXP_HI : z;
    z = z > EXP_HI ? EXP_HI : z;
    const float n = nearbyintf(z * EXP_LOG2E);
    float r = z - n * EXP_C1;
    r = r - n * EXP_C2;
    float e = EXP_P0;
    e = e * r + EXP_P1;
    e = e * r + EXP_P2;
    e = e * r + EXP_P3;
    e = e * r + EXP_P4;
    e = e * r + EXP_P5;
    e = e * (r * r);
    e = e + r;
    e = e + 1.0f;
    float two_n;
    const uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
    memcpy(&two_n, &bits, 4);
    e = e * two_n;
    return f * (1.0f / (1.0f + e));
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx2")))
static inline __m256 silu8(__m256 f, float alpha)
{
    __m256 z = _mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(f, _mm256_set1_ps(alpha)));
    z = _mm256_min_ps(_mm256_max_ps(z, _mm256_set1_ps(-EXP_HI)), _mm256_set1_ps(EXP_HI));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(z, _mm256_set1_ps(EXP_LOG2E)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_sub_ps(z, _mm256_mul_ps(n, _mm256_set1_ps(EXP_C1)));
    r = _mm256_sub_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(EXP_C2)));
    __m256 e = _mm256_set1_ps(EXP_P0);
    e = _mm256_add_ps(_mm256_mul_ps(e, r), _mm256_set1_ps(EXP_P1));
    e = _mm256_add_ps(_mm256_mul_ps(e, r), _mm256_set1_ps(EXP_P2));
    e = _mm256_add_ps(_mm256_mul_ps(e, r), _mm256_set1_ps(EXP_P3));
    e = _mm256_add_ps(_mm256_mul_ps(e, r), _mm256_set1_ps(EXP_P4));
    e = _mm256_add_ps(_mm256_mul_ps(e, r), _mm256_set1_ps(EXP_P5));
    e = _mm256_mul_ps(e, _mm256_mul_ps(r, r));
    e = _mm256_add_ps(_mm256_add_ps(e, r), _mm256_set1_ps(1.0f));
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
    e = _mm256_mul_ps(e, _mm256_castsi256_ps(bits));
    const __m256 one = _mm256_set1_ps(1.0f);
    return _mm256_mul_ps(f, _mm256_div_ps(one, _mm256_add_ps(one, e)));
}

__attribute__((target("avx512f")))
static inline __m512 silu16(__m512 f, float alpha)
{
    __m512 z = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(f, _mm512_set1_ps(alpha)));
    z = _mm512_min_ps(_mm512_max_ps(z, _mm512_set1_ps(-EXP_HI)), _mm512_set1_ps(EXP_HI));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(z, _mm512_set1_ps(EXP_LOG2E)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_sub_ps(z, _mm512_mul_ps(n, _mm512_set1_ps(EXP_C1)));
    r = _mm512_sub_ps(r, _mm512_mul_ps(n, _mm512_set1_ps(EXP_C2)));
    __m512 e = _mm512_set1_ps(EXP_P0);
    e = _mm512_add_ps(_mm512_mul_ps(e, r), _mm512_set1_ps(EXP_P1));
    e = _mm512_add_ps(_mm512_mul_ps(e, r), _mm512_set1_ps(EXP_P2));
    e = _mm512_add_ps(_mm512_mul_ps(e, r), _mm512_set1_ps(EXP_P3));
    e = _mm512_add_ps(_mm512_mul_ps(e, r), _mm512_set1_ps(EXP_P4));
    e = _mm512_add_ps(_mm512_mul_ps(e, r), _mm512_set1_ps(EXP_P5));
    e = _mm512_mul_ps(e, _mm512_mul_ps(r, r));
    e = _mm512_add_ps(_mm512_add_ps(e, r), _mm512_set1_ps(1.0f));
    const __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23);
    e = _mm512_mul_ps(e, _mm512_castsi512_ps(bits));
    const __m512 one = _mm512_set1_ps(1.0f);
    return _mm512_mul_ps(f, _mm512_div_ps(one, _mm512_add_ps(one, e)));
}
#endif

#endif
