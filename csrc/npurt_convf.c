/* float16-model Conv in float32 (see npurt_kernels.h, `struct npk_convf`): a direct convolution over a padded
 * NHWC input, every output summed over k = 0, 1, ... K-1 in that order, then + bias, the fused activation and the
 * float16 store into the output's NC1HWC2 blocks. Inputs and weights hold float16 values, so each product is exact
 * in float32 and a fused multiply-add rounds exactly as numpy's multiply-then-add: the AVX paths use FMA and still
 * give the numpy reference's bits (`npurt.exec.inplace.conv_fp16.accumulate`).
 */
#include "npurt_kernels.h"
#include "npurt_half.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define NPK_X86 1
#include <immintrin.h>
#endif

enum { ACT_NONE = 0, ACT_RELU = 1, ACT_CLIP = 2, ACT_LEAKY = 3 };

static inline float activate(float v, const struct npk_convf *p)
{
    if (v != v)
        return v;
    switch (p->act) {
    case ACT_RELU: return v > 0.0f ? v : 0.0f;
    case ACT_CLIP: v = v > p->p0 ? v : p->p0; return v < p->p1 ? v : p->p1;
    case ACT_LEAKY: return v < 0.0f ? v * p->p0 : v;
    default: return v;
    }
}

/* channel ch (< n) of pixel pix: the float16 store, or the float32 result */
static inline void store_one(const struct npk_convf *p, int64_t pix, int64_t ch, float v)
{
    if (!p->out) {
        p->y[pix * p->n + ch] = v;
        return;
    }
    if (ch < p->out_channels)
        p->out[(ch / p->out_c2) * p->out_plane + pix * p->out_c2 + ch % p->out_c2] = f32_to_f16(activate(v, p));
}

static void convf_portable(const struct npk_convf *p, int64_t oy_lo, int64_t oy_hi)
{
    const int64_t row = p->wp * p->cp, n = p->n;
    for (int64_t oy = oy_lo; oy < oy_hi; oy++)
        for (int64_t ox = 0; ox < p->wo; ox++) {
            const float *x0 = p->x + oy * p->sh * row + ox * p->sw * p->cp;
            for (int64_t j = 0; j < n; j += 16) {
                float acc[16] = {0};
                const float *wk = p->w + j;
                for (int dy = 0; dy < p->kh; dy++)
                    for (int dx = 0; dx < p->kw; dx++) {
                        const float *xs = x0 + dy * p->dh * row + dx * p->dw * p->cp;
                        for (int64_t c = 0; c < p->cp; c++, wk += n)
                            for (int t = 0; t < 16; t++) acc[t] = acc[t] + xs[c] * wk[t];
                    }
                for (int t = 0; t < 16; t++) store_one(p, oy * p->wo + ox, j + t, acc[t] + p->bias[j + t]);
            }
        }
}

#ifdef NPK_X86
/* ---- AVX2 + FMA ------------------------------------------------------------------------------------------- */

#define NPF_R2 6      /* 6 pixels x 2 ymm accumulators + 2 weights + 1 input = 15 ymm */

__attribute__((target("avx2,fma,f16c")))
static inline __attribute__((always_inline)) __m256 activate8(__m256 v, const struct npk_convf *p)
{
    __m256 r = v;
    if (p->act == ACT_RELU) r = _mm256_max_ps(v, _mm256_setzero_ps());
    else if (p->act == ACT_CLIP) r = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(p->p0)), _mm256_set1_ps(p->p1));
    else if (p->act == ACT_LEAKY)
        r = _mm256_blendv_ps(v, _mm256_mul_ps(v, _mm256_set1_ps(p->p0)), _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
    return _mm256_blendv_ps(r, v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));   /* NaN stays NaN */
}

__attribute__((target("avx2,fma,f16c")))
static inline __attribute__((always_inline)) void store8(const struct npk_convf *p, int64_t pix, int64_t ch, __m256 v)
{
    if (!p->out) {
        _mm256_storeu_ps(p->y + pix * p->n + ch, v);
        return;
    }
    v = activate8(v, p);
    if (ch + 8 > p->out_channels || p->out_c2 < 8 || _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q))) {
        float t[8];
        _mm256_storeu_ps(t, v);
        for (int i = 0; i < 8 && ch + i < p->out_channels; i++)
            p->out[((ch + i) / p->out_c2) * p->out_plane + pix * p->out_c2 + (ch + i) % p->out_c2] = f32_to_f16(t[i]);
        return;
    }
    _mm_storeu_si128((__m128i *)(p->out + (ch / p->out_c2) * p->out_plane + pix * p->out_c2 + ch % p->out_c2),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

__attribute__((target("avx2,fma,f16c")))
static void convf_avx2(const struct npk_convf *p, int64_t oy_lo, int64_t oy_hi)
{
    const int64_t row = p->wp * p->cp, n = p->n;
    for (int64_t oy = oy_lo; oy < oy_hi; oy++)
        for (int64_t ox0 = 0; ox0 < p->wo; ox0 += NPF_R2) {
            const int nr = p->wo - ox0 < NPF_R2 ? (int)(p->wo - ox0) : NPF_R2;
            const float *xr[NPF_R2];
            for (int r = 0; r < NPF_R2; r++)
                xr[r] = p->x + oy * p->sh * row + (ox0 + (r < nr ? r : nr - 1)) * p->sw * p->cp;
            for (int64_t j = 0; j < n; j += 16) {
                __m256 acc[NPF_R2][2];
                for (int r = 0; r < NPF_R2; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
                const float *wk = p->w + j;
                for (int dy = 0; dy < p->kh; dy++)
                    for (int dx = 0; dx < p->kw; dx++) {
                        const int64_t off = dy * p->dh * row + dx * p->dw * p->cp;
                        for (int64_t c = 0; c < p->cp; c++, wk += n) {
                            const __m256 b0 = _mm256_loadu_ps(wk), b1 = _mm256_loadu_ps(wk + 8);
                            for (int r = 0; r < NPF_R2; r++) {
                                const __m256 a = _mm256_broadcast_ss(xr[r] + off + c);
                                acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
                                acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
                            }
                        }
                    }
                const __m256 bias0 = _mm256_loadu_ps(p->bias + j), bias1 = _mm256_loadu_ps(p->bias + j + 8);
                for (int r = 0; r < nr; r++) {
                    store8(p, oy * p->wo + ox0 + r, j, _mm256_add_ps(acc[r][0], bias0));
                    store8(p, oy * p->wo + ox0 + r, j + 8, _mm256_add_ps(acc[r][1], bias1));
                }
            }
        }
}

/* ---- AVX-512 ---------------------------------------------------------------------------------------------- */

#define NPF_R3 8      /* 8 pixels x 3 zmm accumulators + 3 weights + 1 input = 28 zmm */

__attribute__((target("avx512f,avx512bw,avx512vl,f16c,fma")))
static inline __attribute__((always_inline)) void tilef_avx512(const struct npk_convf *p, const float *const *xr,
                                                               int nr, int64_t j0, const int NJ, int64_t pix0)
{
    const int64_t row = p->wp * p->cp, n = p->n;
    __m512 acc[NPF_R3][3];
    for (int r = 0; r < NPF_R3; r++)
        for (int j = 0; j < NJ; j++) acc[r][j] = _mm512_setzero_ps();
    const float *wk = p->w + j0 * 16;
    for (int dy = 0; dy < p->kh; dy++)
        for (int dx = 0; dx < p->kw; dx++) {
            const int64_t off = dy * p->dh * row + dx * p->dw * p->cp;
            for (int64_t c = 0; c < p->cp; c++, wk += n) {
                __m512 b[3];
                for (int j = 0; j < NJ; j++) b[j] = _mm512_loadu_ps(wk + j * 16);
                for (int r = 0; r < NPF_R3; r++) {
                    const __m512 a = _mm512_set1_ps(xr[r][off + c]);
                    for (int j = 0; j < NJ; j++) acc[r][j] = _mm512_fmadd_ps(a, b[j], acc[r][j]);
                }
            }
        }
    for (int j = 0; j < NJ; j++) {
        const int64_t ch = (j0 + j) * 16;
        const __m512 bias = _mm512_loadu_ps(p->bias + ch);
        for (int r = 0; r < nr; r++) {
            const __m512 v = _mm512_add_ps(acc[r][j], bias);
            store8(p, pix0 + r, ch, _mm512_castps512_ps256(v));
            store8(p, pix0 + r, ch + 8, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
        }
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl,f16c,fma")))
static void convf_avx512(const struct npk_convf *p, int64_t oy_lo, int64_t oy_hi)
{
    const int64_t row = p->wp * p->cp, blocks = p->n / 16;
    for (int64_t oy = oy_lo; oy < oy_hi; oy++)
        for (int64_t ox0 = 0; ox0 < p->wo; ox0 += NPF_R3) {
            const int nr = p->wo - ox0 < NPF_R3 ? (int)(p->wo - ox0) : NPF_R3;
            const float *xr[NPF_R3];
            for (int r = 0; r < NPF_R3; r++)
                xr[r] = p->x + oy * p->sh * row + (ox0 + (r < nr ? r : nr - 1)) * p->sw * p->cp;
            const int64_t pix0 = oy * p->wo + ox0;
            int64_t j0 = 0;
            for (; j0 + 3 <= blocks; j0 += 3) tilef_avx512(p, xr, nr, j0, 3, pix0);
            if (blocks - j0 == 2) tilef_avx512(p, xr, nr, j0, 2, pix0);
            else if (blocks - j0 == 1) tilef_avx512(p, xr, nr, j0, 1, pix0);
        }
}
#endif

int npk_convf(const struct npk_convf *p, int64_t oy_lo, int64_t oy_hi)
{
    if (p->cp < 1 || p->n % 16 || p->kh < 1 || p->kw < 1 || p->sh < 1 || p->sw < 1 || p->dh < 1 || p->dw < 1
        || oy_lo < 0 || oy_hi > p->ho || (!p->out && !p->y) || p->act < 0 || p->act > ACT_LEAKY
        || (p->out && (p->out_c2 < 1 || p->out_channels > p->n))
        || (int64_t)(p->ho - 1) * p->sh + (int64_t)(p->kh - 1) * p->dh >= p->hp
        || (int64_t)(p->wo - 1) * p->sw + (int64_t)(p->kw - 1) * p->dw >= p->wp)
        return -1;
    if (oy_hi <= oy_lo || p->wo < 1 || p->n == 0)
        return 0;
#ifdef NPK_X86
    int level = npk_level();
    if (level >= 2) { convf_avx512(p, oy_lo, oy_hi); return 0; }
    if (level == 1) { convf_avx2(p, oy_lo, oy_hi); return 0; }
#endif
    convf_portable(p, oy_lo, oy_hi);
    return 0;
}
