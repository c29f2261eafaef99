/* MaxPool straight from an NC1HWC2 slot (see npurt_kernels.h). numpy's np.maximum keeps a NaN met first and, on
 * ties, the second operand; the reference folds rows then columns, which is the fold over taps in (dx, dy) order with
 * those rules, done here on the stored values: float16 compared as float32 (exact) with the chosen input's bits
 * stored unchanged, int8 codes compared as integers (dequantisation is increasing). Taps in the padding are skipped:
 * the reference's -inf there never wins nor changes which value does. */
#include "npurt_kernels.h"
#include "npurt_half.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define NPK_X86 1
#include <immintrin.h>
#endif

#define POOL_MAX_TAPS 1024

/* the taps inside the image of output pixel (oy, ox), in (dx, dy) order, as input pixel offsets from the window's
 * first tap (*origin, which may lie in the padding): `all` (every tap) for a window inside the image, else `buf` */
static const int64_t *pool_taps(const struct npk_pool *p, int64_t oy, int64_t ox, const int64_t *all, int64_t *buf,
                                int *n, int64_t *origin)
{
    int64_t y0 = oy * p->sh - p->pt, x0 = ox * p->sw - p->pl;
    *origin = y0 * p->w + x0;
    if (y0 >= 0 && x0 >= 0 && y0 + (int64_t)(p->kh - 1) * p->dh < p->h && x0 + (int64_t)(p->kw - 1) * p->dw < p->w) {
        *n = p->kh * p->kw;
        return all;
    }
    int k = 0;
    for (int dx = 0; dx < p->kw; dx++) {
        int64_t ix = x0 + (int64_t)dx * p->dw;
        for (int dy = 0; dy < p->kh && ix >= 0 && ix < p->w; dy++) {
            int64_t iy = y0 + (int64_t)dy * p->dh;
            if (iy >= 0 && iy < p->h)
                buf[k++] = all[dx * p->kh + dy];
        }
    }
    *n = k;
    return buf;
}

/* int8: the max codes of one pixel's c2 lanes of `plane`, stored through the requantisation table (an image's last
 * C1 block: its first p->lanes lanes, the others 0) */
static void store_codes(const struct npk_pool *p, const int8_t *m, int64_t plane, int8_t *out)
{
    if (!p->table) {
        memcpy(out, m, (size_t)p->c2);
        return;
    }
    int64_t lanes = plane % p->c1 == p->c1 - 1 ? p->lanes : p->c2;
    for (int64_t l = 0; l < p->c2; l++)
        out[l] = l < lanes ? (int8_t)p->table[(uint8_t)m[l]] : 0;
}

/* one output pixel's c2 lanes: the max over `n` taps (input pixel offsets from `x`) stored at `out` */
typedef void pixel_fn(const struct npk_pool *p, const void *x, const int64_t *taps, int n, int64_t plane, void *out);

/* every output pixel of `plane`, each by `pixel` (inlined into each instruction set's caller) */
static inline __attribute__((always_inline)) void pool_plane(const struct npk_pool *p, int64_t plane,
                                                             const int64_t *all, pixel_fn pixel)
{
    int64_t esize = p->xtype == 0 ? 2 : 1, origin, buf[POOL_MAX_TAPS];
    int n;
    const char *x = (const char *)p->x + plane * p->h * p->w * p->c2 * esize;
    for (int64_t oy = 0; oy < p->ho; oy++)
        for (int64_t ox = 0; ox < p->wo; ox++) {
            const int64_t *taps = pool_taps(p, oy, ox, all, buf, &n, &origin);
            pixel(p, x + origin * p->c2 * esize, taps, n, plane,
                  (char *)p->y + ((plane * p->ho + oy) * p->wo + ox) * p->c2 * esize);
        }
}

static inline __attribute__((always_inline)) void pixel_portable(const struct npk_pool *p, const void *xv,
                                                                 const int64_t *taps, int n, int64_t plane,
                                                                 void *out)
{
    int64_t c2 = p->c2;
    if (p->xtype == 0) {
        const uint16_t *x = xv;
        for (int64_t l = 0; l < c2; l++) {
            uint16_t mb = x[taps[0] * c2 + l];
            float mf = f16_to_f32(mb);
            for (int t = 1; t < n; t++) {
                uint16_t vb = x[taps[t] * c2 + l];
                float vf = f16_to_f32(vb);
                if (mf == mf && !(mf > vf)) {
                    mb = vb;
                    mf = vf;
                }
            }
            ((uint16_t *)out)[l] = mb;
        }
        return;
    }
    const int8_t *x = xv;
    int8_t m[256];
    for (int64_t l = 0; l < c2; l++) {
        int8_t v = x[taps[0] * c2 + l];
        for (int t = 1; t < n; t++)
            if (x[taps[t] * c2 + l] > v)
                v = x[taps[t] * c2 + l];
        m[l] = v;
    }
    store_codes(p, m, plane, out);
}

static void pool_portable(const struct npk_pool *p, int64_t plane, const int64_t *all)
{
    pool_plane(p, plane, all, pixel_portable);
}

#ifdef NPK_X86
__attribute__((target("avx2,f16c")))
static inline __attribute__((always_inline)) void pixel_avx2(const struct npk_pool *p, const void *xv,
                                                             const int64_t *taps, int n, int64_t plane, void *out)
{
    int64_t c2 = p->c2;
    if (p->xtype == 0) {
        const uint16_t *x = xv;
        for (int64_t l = 0; l < c2; l += 8) {
            __m128i mb = _mm_loadu_si128((const __m128i *)(x + taps[0] * c2 + l));
            __m256 mf = _mm256_cvtph_ps(mb);
            for (int t = 1; t < n; t++) {
                __m128i vb = _mm_loadu_si128((const __m128i *)(x + taps[t] * c2 + l));
                __m256 vf = _mm256_cvtph_ps(vb);
                __m256 take = _mm256_and_ps(_mm256_cmp_ps(mf, mf, _CMP_ORD_Q), _mm256_cmp_ps(mf, vf, _CMP_NGT_UQ));
                __m256i t32 = _mm256_castps_si256(take);
                mb = _mm_blendv_epi8(mb, vb, _mm_packs_epi32(_mm256_castsi256_si128(t32),
                                                             _mm256_extracti128_si256(t32, 1)));
                mf = _mm256_blendv_ps(mf, vf, take);
            }
            _mm_storeu_si128((__m128i *)((uint16_t *)out + l), mb);
        }
        return;
    }
    const int8_t *x = xv;
    int8_t m[256];
    for (int64_t l = 0; l < c2; l += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(x + taps[0] * c2 + l));
        for (int t = 1; t < n; t++)
            v = _mm_max_epi8(v, _mm_loadu_si128((const __m128i *)(x + taps[t] * c2 + l)));
        _mm_storeu_si128((__m128i *)(p->table ? m + l : (int8_t *)out + l), v);
    }
    if (p->table)
        store_codes(p, m, plane, out);
}

__attribute__((target("avx2,f16c")))
static void pool_avx2(const struct npk_pool *p, int64_t plane, const int64_t *all)
{
    pool_plane(p, plane, all, pixel_avx2);
}
#endif

/* every output index along one axis has a tap inside the image */
static int axis_covered(int64_t n_out, int k, int s, int d, int pad, int64_t size)
{
    for (int64_t o = 0; o < n_out; o++) {
        int hit = 0;
        for (int t = 0; t < k && !hit; t++) {
            int64_t i = o * s - pad + (int64_t)t * d;
            hit = i >= 0 && i < size;
        }
        if (!hit)
            return 0;
    }
    return 1;
}

int npk_max_pool(const struct npk_pool *p, int64_t plane_lo, int64_t plane_hi)
{
    if (!p || !p->x || !p->y || (p->xtype != 0 && p->xtype != 1) || p->c2 < 1 || p->c2 > 256 || p->h < 1 || p->w < 1
        || p->kh < 1 || p->kw < 1 || (int64_t)p->kh * p->kw > POOL_MAX_TAPS || p->sh < 1 || p->sw < 1 || p->dh < 1
        || p->dw < 1 || p->pt < 0 || p->pl < 0 || p->ho < 0 || p->wo < 0 || plane_lo < 0 || plane_hi > p->planes
        || plane_lo > plane_hi || (p->table && (p->xtype != 1 || p->c1 < 1 || p->lanes < 0 || p->lanes > p->c2))
        || !axis_covered(p->ho, p->kh, p->sh, p->dh, p->pt, p->h) || !axis_covered(p->wo, p->kw, p->sw, p->dw, p->pl, p->w))
        return -1;
    int64_t all[POOL_MAX_TAPS];
    for (int dx = 0; dx < p->kw; dx++)
        for (int dy = 0; dy < p->kh; dy++)
            all[dx * p->kh + dy] = (int64_t)dy * p->dh * p->w + (int64_t)dx * p->dw;
    int simd = 0;
#ifdef NPK_X86
    simd = npk_level() >= 1 && p->c2 % (p->xtype == 0 ? 8 : 16) == 0;
#endif
    for (int64_t plane = plane_lo; plane < plane_hi; plane++) {
#ifdef NPK_X86
        if (simd) {
            pool_avx2(p, plane, all);
            continue;
        }
#endif
        pool_portable(p, plane, all);
    }
    return 0;
}

/* ---- GlobalAveragePool ------------------------------------------------------------------------------------------- */

#define GAP_MAX_C2 64

/* res[l] = numpy's pairwise float32 sum of v[i * c2 + l], i < n (its pairwise_sum: under 8 terms in order from 0,
 * up to 128 in eight interleaved partial sums added as a tree, then the rest in order; longer runs split in two at a
 * multiple of 8), for each of the c2 lanes */
static void gap_pairwise(const float *v, int64_t n, int64_t c2, float *res)
{
    if (n < 8) {
        for (int64_t l = 0; l < c2; l++)
            res[l] = 0.0f;
        for (int64_t i = 0; i < n; i++)
            for (int64_t l = 0; l < c2; l++)
                res[l] += v[i * c2 + l];
    } else if (n <= 128) {
        float r[8][GAP_MAX_C2];
        int64_t i;
        for (int j = 0; j < 8; j++)
            for (int64_t l = 0; l < c2; l++)
                r[j][l] = v[j * c2 + l];
        for (i = 8; i < n - n % 8; i += 8)
            for (int j = 0; j < 8; j++)
                for (int64_t l = 0; l < c2; l++)
                    r[j][l] += v[(i + j) * c2 + l];
        for (int64_t l = 0; l < c2; l++)
            res[l] = ((r[0][l] + r[1][l]) + (r[2][l] + r[3][l])) + ((r[4][l] + r[5][l]) + (r[6][l] + r[7][l]));
        for (; i < n; i++)
            for (int64_t l = 0; l < c2; l++)
                res[l] += v[i * c2 + l];
    } else {
        int64_t n2 = n / 2;
        n2 -= n2 % 8;
        float b[GAP_MAX_C2];
        gap_pairwise(v, n2, c2, res);
        gap_pairwise(v + n2 * c2, n - n2, c2, b);
        for (int64_t l = 0; l < c2; l++)
            res[l] += b[l];
    }
}

int npk_global_avg_pool(const void *x, int xtype, int64_t c1, int64_t hw, int64_t c2, float scale, float shift,
                        int64_t channels, float inv, float zp, void *out)
{
    if ((xtype != 0 && xtype != 1) || c1 < 0 || hw < 1 || c2 < 1 || c2 > GAP_MAX_C2 || channels < 0)
        return -1;
    float *v = malloc((size_t)(hw * c2 + c1 * c2) * sizeof(float));
    if (!v)
        return -1;
    float *means = v + hw * c2;
    const int64_t block = hw * c2;
    for (int64_t k = 0; k < c1; k++) {
        if (xtype == 0)
            npk_cast(NPK_F16_F32, (const uint16_t *)x + k * block, v, block, 0.0f, 0.0f);
        else
            npk_cast(NPK_I8_F32, (const int8_t *)x + k * block, v, block, scale, shift);
        float *m = means + k * c2;
        gap_pairwise(v, hw, c2, m);
        for (int64_t l = 0; l < c2; l++)          /* the reduction's start (0 + sum), then true_divide by an intp */
            m[l] = (float)((double)(0.0f + m[l]) / (double)hw);
    }
    npk_cast(xtype == 0 ? NPK_F32_F16 : NPK_F32_I8, means, out, c1 * c2, inv, zp);
    const size_t es = xtype == 0 ? 2 : 1;                  /* padding lanes: zero */
    memset((char *)out + channels * es, 0, (size_t)(c1 * c2 - channels) * es);
    free(v);
    return 0;
}
