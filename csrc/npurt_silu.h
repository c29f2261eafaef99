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
/* silu1 on V vectors (P the intrinsics' prefix, ROUND its round-to-nearest, CASTI the int-to-float bit cast) */
#define NPK_SILU_VEC(NAME, TARGET, V, VI, P, ROUND, CASTI)                                                     \
    __attribute__((target(TARGET))) static inline V NAME(V f, float alpha)                                     \
    {                                                                                                          \
        V z = P##_sub_ps(P##_setzero_ps(), P##_mul_ps(f, P##_set1_ps(alpha)));                                 \
        z = P##_min_ps(P##_max_ps(z, P##_set1_ps(-EXP_HI)), P##_set1_ps(EXP_HI));                              \
        const V n = ROUND(P##_mul_ps(z, P##_set1_ps(EXP_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); \
        V r = P##_sub_ps(z, P##_mul_ps(n, P##_set1_ps(EXP_C1)));                                               \
        r = P##_sub_ps(r, P##_mul_ps(n, P##_set1_ps(EXP_C2)));                                                 \
        V e = P##_set1_ps(EXP_P0);                                                                             \
        e = P##_add_ps(P##_mul_ps(e, r), P##_set1_ps(EXP_P1));                                                 \
        e = P##_add_ps(P##_mul_ps(e, r), P##_set1_ps(EXP_P2));                                                 \
        e = P##_add_ps(P##_mul_ps(e, r), P##_set1_ps(EXP_P3));                                                 \
        e = P##_add_ps(P##_mul_ps(e, r), P##_set1_ps(EXP_P4));                                                 \
        e = P##_add_ps(P##_mul_ps(e, r), P##_set1_ps(EXP_P5));                                                 \
        e = P##_mul_ps(e, P##_mul_ps(r, r));                                                                   \
        e = P##_add_ps(P##_add_ps(e, r), P##_set1_ps(1.0f));                                                   \
        const VI bits = P##_slli_epi32(P##_add_epi32(P##_cvttps_epi32(n), P##_set1_epi32(127)), 23);           \
        e = P##_mul_ps(e, CASTI(bits));                                                                        \
        const V one = P##_set1_ps(1.0f);                                                                       \
        return P##_mul_ps(f, P##_div_ps(one, P##_add_ps(one, e)));                                             \
    }
NPK_SILU_VEC(silu8, "avx2", __m256, __m256i, _mm256, _mm256_round_ps, _mm256_castsi256_ps)
NPK_SILU_VEC(silu16, "avx512f", __m512, __m512i, _mm512, _mm512_roundscale_ps, _mm512_castsi512_ps)
#endif

#endif
