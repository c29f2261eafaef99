/* int8 convolution in integers (see npurt_kernels.h, `struct npk_conv8`): int8 x int8 products summed in int32, as
 * the NPU does, then one float32 requantisation fused with the store into the output's NC1HWC2 blocks.
 * - AVX-512 VNNI (level 3): vpdpbusd multiplies u8 x s8 and adds groups of 4 into int32 without intermediate
 *   saturation. The input is made unsigned by flipping its sign bit (x + 128); the extra 128 * sum(w) per output
 *   channel is removed with the input zero point's correction, exactly.
 * - AVX2 / AVX-512 without VNNI (levels 1, 2): the input sign-extended to int16 (a scratch, pixel-major, in bands
 *   of rows), vpmaddwd on pairs: (-128) * (-128) * 2 = 32768 fits int32 (vpmaddubsw's int16 saturation is never
 *   used).
 * - portable C (level 0): plain int32 loops.
 * The epilogue is the same float32 sequence everywhere (built with -ffp-contract=off): y = float(acc - zp * sum(w))
 * * mult + bias, then either clamp to [lo, hi], round to nearest even and store int8, or store y as float32; a
 * fused SiLU (act 1) maps y to swish(y) / s_out + zp_out first, in basic float32 operations only, so every level
 * and numpy give the same bytes.
 */
#include "npurt_kernels.h"
#include "npurt_silu.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define NPK_X86 1
#include <immintrin.h>
#endif

static inline int32_t load32(const void *p) { int32_t v; memcpy(&v, p, 4); return v; }

static int weight_format(int level)   /* 0: int8 (K, N); 1: int16 pairs (N/16, K/2, 16, 2); 3: int8 quads (N/16, K/4, 16, 4) */
{
    return level >= 3 ? 3 : (level >= 1 ? 1 : 0);
}

int64_t npk_conv8_packed_size(int64_t k, int64_t n, int level)
{
    return weight_format(level) == 1 ? 2 * k * n : k * n;
}

/* formats 1 and 3 keep each 16-channel block's rows contiguous (streamed by the tiles; rows of the plain matrix sit
 * N apart, and the 4 KiB strides of wide layers thrash the L1 sets) */
int npk_conv8_pack(const int8_t *w, int64_t k, int64_t n, void *packed, int level)
{
    int f = weight_format(level);
    if (k < 0 || n < 0 || k % 4 || n % 16)
        return -1;
    if (f == 0) {
        memcpy(packed, w, (size_t)(k * n));
    } else if (f == 1) {
        int16_t *d = packed;
        for (int64_t p = 0; p < k / 2; p++)
            for (int64_t j = 0; j < n; j++)
                for (int t = 0; t < 2; t++) d[((j / 16) * (k / 2) + p) * 32 + (j % 16) * 2 + t] = w[(2 * p + t) * n + j];
    } else {
        int8_t *d = packed;
        for (int64_t q = 0; q < k / 4; q++)
            for (int64_t j = 0; j < n; j++)
                for (int t = 0; t < 4; t++) d[((j / 16) * (k / 4) + q) * 64 + (j % 16) * 4 + t] = w[(4 * q + t) * n + j];
    }
    return 0;
}

/* the input offsets of output pixels q0 .. q0 + nr - 1 (flattened over rows: a 7-wide map is not 6 + 1 tiles), the
 * rest of R repeating the last one, in an input of `px` elements per pixel whose first row is input row `r_lo` */
static inline void tile_offsets(const struct npk_conv8 *p, int64_t q0, int nr, int R, int64_t px, int64_t r_lo,
                                int64_t *off)
{
    int64_t oy = q0 / p->wo, ox = q0 % p->wo;       /* one division per tile, then steps along the row */
    for (int r = 0; r < R; r++) {
        off[r] = ((oy * p->sh - r_lo) * p->wp + ox * p->sw) * px;
        if (r + 1 < nr && ++ox == p->wo) { ox = 0; oy++; }
    }
}

/* channel blocks outside the pixel tiles when the weights outweigh the input (same sums either way) */
static inline int weights_outer(const struct npk_conv8 *p)
{
    return (int64_t)p->kh * p->kw * p->c1 * p->cc * p->n > p->c1 * p->hp * p->wp * p->cc;
}

static inline float requant(int32_t acc, float m, float b) { float f = (float)acc * m; return f + b; }

static inline int8_t clamp_round(float f, float lo, float hi)
{
    f = f < lo ? lo : f;          /* numpy's clip: maximum, then minimum */
    f = f > hi ? hi : f;
    return (int8_t)nearbyintf(f);
}

/* the fused SiLU epilogue (act 1): silu(f) * inv_scale + out_zp, in the order of `swish_codes` (epilogue.py) */
static inline float swish_requant(float f, const struct npk_conv8 *p)
{
    return silu1(f, p->alpha) * p->inv_scale + p->out_zp;
}

/* ---- portable ----------------------------------------------------------------------------------------------- */

static void conv8_portable(const struct npk_conv8 *p, int64_t q_lo, int64_t q_hi)
{
    const int64_t row = p->wp * p->cc, plane = p->hp * row, n = p->n;
    const int8_t *w = p->w;
    for (int64_t pix = q_lo; pix < q_hi; pix++) {
        const int8_t *x0 = p->x + pix / p->wo * p->sh * row + pix % p->wo * p->sw * p->cc;
        for (int64_t j = 0; j < n; j += 16) {
            int32_t acc[16] = {0};
            int64_t k = 0;
            for (int dy = 0; dy < p->kh; dy++)
                for (int dx = 0; dx < p->kw; dx++)
                    for (int64_t c = 0; c < p->c1; c++) {
                        const int8_t *xs = x0 + c * plane + dy * p->dh * row + dx * p->dw * p->cc;
                        for (int64_t l = 0; l < p->cc; l++, k++) {
                            const int32_t xv = xs[l];
                            const int8_t *wk = w + k * n + j;
                            for (int t = 0; t < 16; t++) acc[t] += xv * wk[t];
                        }
                    }
            for (int t = 0; t < 16; t++) {
                float f = requant(acc[t] - p->zp * p->colsum[j + t], p->mult[j + t], p->bias[j + t]);
                if (p->out && p->act)
                    f = swish_requant(f, p);
                if (p->out)
                    p->out[(j / 16) * p->out_plane + pix * 16 + t] = clamp_round(f, p->lo, p->hi);
                else
                    p->y[pix * n + j + t] = f;
            }
        }
    }
}

#ifdef NPK_X86
/* ---- AVX2 (vpmaddwd on int16 pairs) ------------------------------------------------------------------------- */

#define NPK_R2 6     /* output pixels per tile: 6 x 2 accumulators + 2 weights + 1 input = 15 ymm */

/* input rows [r_lo, r_hi) sign-extended to int16 in pixel-major order (rows, Wp, C1 * CC) from the scratch's start:
 * a tap's C1 * CC values of one pixel sit together, in the weights' k order, and with dilation 1 along x so do a
 * kernel row's taps: the tiles run one loop of kw * C1 * CC / 2 pairs per kernel row */
__attribute__((target("avx2")))
static void widen_rows(const struct npk_conv8 *p, int16_t *wide, int64_t r_lo, int64_t r_hi)
{
    const int64_t cc = p->cc, row = p->wp * cc, plane = p->hp * row, ck = p->c1 * cc;
    if (p->c1 == 1) {                                   /* the same order: one run of int8 -> int16 */
        const int8_t *src = p->x + r_lo * row;
        const int64_t end = (r_hi - r_lo) * row;
        int64_t i = 0;
        for (; i + 16 <= end; i += 16)
            _mm256_storeu_si256((__m256i *)(wide + i),
                                _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(src + i))));
        for (; i < end; i++) wide[i] = src[i];
        return;
    }
    for (int64_t y = r_lo; y < r_hi; y++)
        for (int64_t c = 0; c < p->c1; c++) {
            const int8_t *src = p->x + c * plane + y * row;
            int16_t *dst = wide + (y - r_lo) * p->wp * ck + c * cc;
            if (cc == 16)
                for (int64_t x = 0; x < p->wp; x++)
                    _mm256_storeu_si256((__m256i *)(dst + x * ck),
                                        _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(src + x * 16))));
            else
                for (int64_t x = 0; x < p->wp; x++)
                    for (int64_t l = 0; l < cc; l++) dst[x * ck + l] = src[x * cc + l];
        }
}

__attribute__((target("avx2")))
static inline __m256 swish_requant_avx2(__m256 f, const struct npk_conv8 *p)
{
    return _mm256_add_ps(_mm256_mul_ps(silu8(f, p->alpha), _mm256_set1_ps(p->inv_scale)), _mm256_set1_ps(p->out_zp));
}

/* one tile: NPK_R2 pixels (xr: their first tap in the wide input) x 16 channels from j */
__attribute__((target("avx2")))
static inline __attribute__((always_inline)) void tile_avx2(const struct npk_conv8 *p, const int16_t *const *xr,
                                                            int nr, int64_t j, int64_t pix0, const int act)
{
    const int64_t ck = p->c1 * p->cc, n = p->n;
    const int64_t K = (int64_t)p->kh * p->kw * ck;
    const int runs = p->dw == 1 ? 1 : p->kw;                    /* contiguous runs per kernel row */
    const int64_t npairs = K / p->kh / runs / 2;
    /* the sums start at -zp * colsum (the same int32 arithmetic as subtracting it after) */
    const __m256i neg_zp = _mm256_set1_epi32(-p->zp);
    const __m256i corr0 = _mm256_mullo_epi32(neg_zp, _mm256_loadu_si256((const __m256i *)(p->colsum + j)));
    const __m256i corr1 = _mm256_mullo_epi32(neg_zp, _mm256_loadu_si256((const __m256i *)(p->colsum + j + 8)));
    __m256i acc[NPK_R2][2];
    for (int r = 0; r < NPK_R2; r++) { acc[r][0] = corr0; acc[r][1] = corr1; }
    const int16_t *wq = (const int16_t *)p->w + (j / 16) * (K / 2) * 32;
    for (int dy = 0; dy < p->kh; dy++)
        for (int dx = 0; dx < runs; dx++) {
            const int64_t off = ((int64_t)dy * p->dh * p->wp + (int64_t)dx * p->dw) * ck;
            for (int64_t q = 0; q < npairs; q++, wq += 32) {
                const __m256i b0 = _mm256_loadu_si256((const __m256i *)wq);
                const __m256i b1 = _mm256_loadu_si256((const __m256i *)(wq + 16));
                for (int r = 0; r < NPK_R2; r++) {
                    const __m256i a = _mm256_set1_epi32(load32(xr[r] + off + 2 * q));
                    acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(a, b0));
                    acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(a, b1));
                }
            }
        }
    /* the epilogue's per-channel terms once per tile (the int8 stores may alias them for the compiler) */
    const __m256 m0 = _mm256_loadu_ps(p->mult + j), m1 = _mm256_loadu_ps(p->mult + j + 8);
    const __m256 b0 = _mm256_loadu_ps(p->bias + j), b1 = _mm256_loadu_ps(p->bias + j + 8);
    if (!p->out) {
        for (int r = 0; r < nr; r++) {
            float *y = p->y + (pix0 + r) * n + j;
            _mm256_storeu_ps(y, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(acc[r][0]), m0), b0));
            _mm256_storeu_ps(y + 8, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(acc[r][1]), m1), b1));
        }
        return;
    }
    /* two pixels' codes at a time: int32 -> int16 -> int8 packs leave the dwords [a0 a1 b0 b1 | a2 a3 b2 b3]; one
     * permute puts back pixel a's 16 bytes, then b's (neighbouring slots of the output block) */
    const __m256 lo = _mm256_set1_ps(p->lo), hi = _mm256_set1_ps(p->hi);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    int8_t *out = p->out + (j / 16) * p->out_plane + pix0 * 16;
    __m256i q[2];
#pragma GCC unroll 3
    for (int r = 0; r < NPK_R2 && r < nr; r += 2) {
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            const int rh = r + h < nr ? r + h : r;
            __m256 f0 = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(acc[rh][0]), m0), b0);
            __m256 f1 = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(acc[rh][1]), m1), b1);
            if (act) {
                f0 = swish_requant_avx2(f0, p);
                f1 = swish_requant_avx2(f1, p);
            }
            f0 = _mm256_min_ps(_mm256_max_ps(f0, lo), hi);
            f1 = _mm256_min_ps(_mm256_max_ps(f1, lo), hi);
            q[h] = _mm256_packs_epi32(_mm256_cvtps_epi32(f0), _mm256_cvtps_epi32(f1));
        }
        const __m256i codes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q[0], q[1]), order);
        if (r + 1 < nr)
            _mm256_storeu_si256((__m256i *)(out + r * 16), codes);
        else
            _mm_storeu_si128((__m128i *)(out + r * 16), _mm256_castsi256_si128(codes));
    }
}

#define NPK_BAND_BYTES (96 << 10)    /* the int16 rows widened at a time, used while they are in the L2 cache */

/* output pixels [q_lo, q_hi) from the input rows they read, widened just before (bands of about 96 KiB: the
 * whole int16 copy of a large input would be read back from beyond the L2 cache); channel blocks outside the
 * pixel tiles when the weights outweigh the input (one band then: the weights are the stream) */
__attribute__((target("avx2")))
static inline __attribute__((always_inline)) void conv8_avx2_bands(const struct npk_conv8 *p, int64_t q_lo,
                                                                   int64_t q_hi, const int act)
{
    const int64_t oy_lo = q_lo / p->wo, oy_hi = (q_hi + p->wo - 1) / p->wo;
    const int64_t row_bytes = p->wp * p->c1 * p->cc * 2, reach = (int64_t)(p->kh - 1) * p->dh + 1;
    const int outer = weights_outer(p);
    int64_t band = outer ? oy_hi - oy_lo : (NPK_BAND_BYTES / row_bytes - reach) / p->sh + 1;
    band = band < 1 ? 1 : band;
    int64_t off[NPK_R2];
    const int16_t *xr[NPK_R2];
    int16_t *wide = p->wide + npk_thread_slot() * p->wide_stride;      /* this thread's scratch */
    for (int64_t oy0 = oy_lo; oy0 < oy_hi; oy0 += band) {
        const int64_t oy1 = oy0 + band < oy_hi ? oy0 + band : oy_hi;
        const int64_t r_lo = oy0 * p->sh, r_hi = (oy1 - 1) * p->sh + reach;
        const int64_t b_lo = oy0 * p->wo > q_lo ? oy0 * p->wo : q_lo, b_hi = oy1 * p->wo < q_hi ? oy1 * p->wo : q_hi;
        widen_rows(p, wide, r_lo, r_hi);
        if (outer) {
            for (int64_t j = 0; j < p->n; j += 16)
                for (int64_t q0 = b_lo; q0 < b_hi; q0 += NPK_R2) {
                    const int nr = b_hi - q0 < NPK_R2 ? (int)(b_hi - q0) : NPK_R2;
                    tile_offsets(p, q0, nr, NPK_R2, p->c1 * p->cc, r_lo, off);
                    for (int r = 0; r < NPK_R2; r++) xr[r] = wide + off[r];
                    tile_avx2(p, xr, nr, j, q0, act);
                }
            continue;
        }
        for (int64_t q0 = b_lo; q0 < b_hi; q0 += NPK_R2) {
            const int nr = b_hi - q0 < NPK_R2 ? (int)(b_hi - q0) : NPK_R2;
            tile_offsets(p, q0, nr, NPK_R2, p->c1 * p->cc, r_lo, off);
            for (int r = 0; r < NPK_R2; r++) xr[r] = wide + off[r];
            for (int64_t j = 0; j < p->n; j += 16) tile_avx2(p, xr, nr, j, q0, act);
        }
    }
}

/* one body with the fused SiLU and one without (the plain epilogue then stays small enough to unroll) */
__attribute__((target("avx2")))
static void conv8_avx2(const struct npk_conv8 *p, int64_t q_lo, int64_t q_hi)
{
    if (p->act)
        conv8_avx2_bands(p, q_lo, q_hi, 1);
    else
        conv8_avx2_bands(p, q_lo, q_hi, 0);
}

/* ---- AVX-512 VNNI (vpdpbusd on u8 x s8 quads) --------------------------------------------------------------- */


__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
static inline __m512 swish_requant_512(__m512 f, const struct npk_conv8 *p)
{
    return _mm512_add_ps(_mm512_mul_ps(silu16(f, p->alpha), _mm512_set1_ps(p->inv_scale)), _mm512_set1_ps(p->out_zp));
}

/* one tile: R output pixels x NJ channel blocks of 16 from j0 (R * NJ <= 24 accumulators + NJ weights + 1 input
 * <= 29 zmm); one body per register shape R x NJMAX, so the accumulators are a fixed-size array the compiler keeps
 * in registers */
#define NPK_TILE_VNNI(NAME, R, NJMAX, STEP)                                                                          \
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))                                                 \
static inline __attribute__((always_inline)) void NAME(const struct npk_conv8 *p, const int8_t *const *xr, int nr,   \
                                                       int64_t j0, const int NJ, int64_t pix0)                       \
{                                                                                                                    \
    const int64_t row = p->wp * p->cc, plane = p->hp * row, n = p->n, nquads = p->cc / 4;                         \
    const __m512i flip = _mm512_set1_epi32((int)0x80808080u);                                                       \
    __m512i acc[R][NJMAX];                                                                                           \
    for (int r = 0; r < R; r++)                                                                                      \
        for (int j = 0; j < NJ; j++) acc[r][j] = _mm512_setzero_si512();                                            \
    const int64_t kq = (int64_t)p->kh * p->kw * p->c1 * nquads;          /* K / 4 */                                \
    const int8_t *wq = (const int8_t *)p->w + j0 * kq * 64;                                                          \
    for (int dy = 0; dy < p->kh; dy++)                                                                               \
        for (int dx = 0; dx < p->kw; dx++)                                                                           \
            for (int64_t c = 0; c < p->c1; c++) {                                                                    \
                const int64_t off = c * plane + dy * p->dh * row + dx * p->dw * p->cc;                               \
                for (int64_t q = 0; q < nquads; q++, wq += 64) {                                                     \
                    __m512i b[NJMAX];                                                                                \
                    for (int j = 0; j < NJ; j++) b[j] = _mm512_loadu_si512((const void *)(wq + j * kq * 64));        \
                    for (int r = 0; r < R; r++) {                                                                    \
                        const int8_t *xp = STEP ? xr[0] + r * STEP : xr[r];                                          \
                        const __m512i a = _mm512_xor_si512(_mm512_set1_epi32(load32(xp + off + 4 * q)), flip);       \
                        for (int j = 0; j < NJ; j++) acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], a, b[j]);            \
                    }                                                                                                \
                }                                                                                                    \
            }                                                                                                        \
    const __m512 lo = _mm512_set1_ps(p->lo), hi = _mm512_set1_ps(p->hi);                                             \
    const __m512i zp = _mm512_set1_epi32(128 + p->zp);                                                               \
    for (int j = 0; j < NJ; j++) {                                                                                   \
        const int64_t ch = (j0 + j) * 16;                                                                            \
        const __m512i corr = _mm512_mullo_epi32(zp, _mm512_loadu_si512((const void *)(p->colsum + ch)));             \
        const __m512 m = _mm512_loadu_ps(p->mult + ch), bias = _mm512_loadu_ps(p->bias + ch);                        \
        for (int r = 0; r < nr; r++) {                                                                               \
            __m512 f = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r][j], corr)), m), bias); \
            if (!p->out) {                                                                                           \
                _mm512_storeu_ps(p->y + (pix0 + r) * n + ch, f);                                                     \
                continue;                                                                                            \
            }                                                                                                        \
            if (p->act)                                                                                              \
                f = swish_requant_512(f, p);                                                                         \
            f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);                                                             \
            _mm_storeu_si128((__m128i *)(p->out + (j0 + j) * p->out_plane + (pix0 + r) * 16),                        \
                             _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(f)));                                          \
        }                                                                                                            \
    }                                                                                                                \
}

NPK_TILE_VNNI(tile_vnni_6, 6, 4, 0)
NPK_TILE_VNNI(tile_vnni_8, 8, 3, 0)
NPK_TILE_VNNI(tile_vnni_12, 12, 2, 0)
/* the same, the R pixels `STEP` bytes apart from xr[0] (within one output row: STEP = stride x lanes, 8, 16 or 32):
 * one input pointer and constant displacements instead of R pointers */
NPK_TILE_VNNI(tile_vnni_6s8, 6, 4, 8)
NPK_TILE_VNNI(tile_vnni_8s8, 8, 3, 8)
NPK_TILE_VNNI(tile_vnni_12s8, 12, 2, 8)
NPK_TILE_VNNI(tile_vnni_6s16, 6, 4, 16)
NPK_TILE_VNNI(tile_vnni_8s16, 8, 3, 16)
NPK_TILE_VNNI(tile_vnni_12s16, 12, 2, 16)
NPK_TILE_VNNI(tile_vnni_6s32, 6, 4, 32)
NPK_TILE_VNNI(tile_vnni_8s32, 8, 3, 32)
NPK_TILE_VNNI(tile_vnni_12s32, 12, 2, 32)

/* the tiles of channel blocks [j0, j1) for R pixels: groups of G = 24 / R blocks, then the rest */
#define NPK_TILES_VNNI(G, TILE)                                                                                      \
    do {                                                                                                             \
        for (; j + G <= j1; j += G) TILE(p, xr, nr, j, G, q0);                                                       \
        if (j1 - j == 3 && G > 3) TILE(p, xr, nr, j, 3, q0);                                                         \
        else if (j1 - j == 2 && G > 2) TILE(p, xr, nr, j, 2, q0);                                                    \
        else if (j1 - j == 1) TILE(p, xr, nr, j, 1, q0);                                                             \
    } while (0)
#define NPK_TILES_BY_STEP(G, T)                                                                                      \
    do {                                                                                                             \
        if (step == 8) NPK_TILES_VNNI(G, T##s8);                                                                     \
        else if (step == 16) NPK_TILES_VNNI(G, T##s16);                                                              \
        else if (step == 32) NPK_TILES_VNNI(G, T##s32);                                                              \
        else NPK_TILES_VNNI(G, T);                                                                                   \
    } while (0)

/* `step`: the pixels' distance in bytes when they are evenly spaced from xr[0] (8, 16 or 32), else 0 */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
static inline __attribute__((always_inline)) void tiles_vnni(const struct npk_conv8 *p, const int8_t *const *xr,
                                                             int nr, int64_t j0, int64_t j1, int64_t q0, const int R,
                                                             int step)
{
    int64_t j = j0;
    if (R == 6) NPK_TILES_BY_STEP(4, tile_vnni_6);
    else if (R == 8) NPK_TILES_BY_STEP(3, tile_vnni_8);
    else NPK_TILES_BY_STEP(2, tile_vnni_12);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
static inline __attribute__((always_inline)) void conv8_vnni_tiles(const struct npk_conv8 *p, int64_t q_lo,
                                                                   int64_t q_hi, const int R)
{
    const int64_t blocks = p->n / 16, group = 24 / R;
    const int64_t step = p->sw * p->cc;         /* between neighbouring pixels of a row, in bytes */
    const int even = step == 8 || step == 16 || step == 32;
    int64_t off[12];
    const int8_t *xr[12];
    if (weights_outer(p)) {
        for (int64_t j0 = 0; j0 < blocks; j0 += group)
            for (int64_t q0 = q_lo; q0 < q_hi; q0 += R) {
                const int nr = q_hi - q0 < R ? (int)(q_hi - q0) : R;
                tile_offsets(p, q0, nr, R, p->cc, 0, off);
                for (int r = 0; r < R; r++) xr[r] = p->x + off[r];
                tiles_vnni(p, xr, nr, j0, j0 + group < blocks ? j0 + group : blocks, q0, R,
                           even && nr == R && off[R - 1] - off[0] == step * (R - 1) ? (int)step : 0);
            }
        return;
    }
    for (int64_t q0 = q_lo; q0 < q_hi; q0 += R) {
        const int nr = q_hi - q0 < R ? (int)(q_hi - q0) : R;
        tile_offsets(p, q0, nr, R, p->cc, 0, off);
        for (int r = 0; r < R; r++) xr[r] = p->x + off[r];
        tiles_vnni(p, xr, nr, 0, blocks, q0, R,
                   even && nr == R && off[R - 1] - off[0] == step * (R - 1) ? (int)step : 0);
    }
}

/* the register shape by output channel blocks: 4 blocks x 6 pixels where they come in fours, 2 x 12 for 32 channels,
 * 3 x 8 otherwise (24 accumulators: fewer input broadcasts per vpdpbusd than 3 x 8 plus a 1 x 8 remainder); 16
 * channels take 1 x 12 (1 x 24 measured slower) */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
static void conv8_vnni(const struct npk_conv8 *p, int64_t q_lo, int64_t q_hi)
{
    const int64_t blocks = p->n / 16;
    if (blocks % 4 == 0) conv8_vnni_tiles(p, q_lo, q_hi, 6);
    else if (blocks <= 2) conv8_vnni_tiles(p, q_lo, q_hi, 12);
    else conv8_vnni_tiles(p, q_lo, q_hi, 8);
}
#endif

/* ---- the instruction mix's limit (for the bench) ----------------------------------------------------------- */

#ifdef NPK_X86
/* 8 independent accumulators fed from 4 operand registers the compiler cannot see through (the empty asm), so every
 * product is computed: the rate the execution units allow, with no loads or loop structure around (8 + 4 + the
 * products in flight fit the 16 ymm registers). STEP(acc, a, b) is one multiply-accumulate of the mix. */
#define NPK_PEAK_LOOP(TYPE, STEP)                                                                                    \
    TYPE a0 = av, a1 = av, b0 = bv, b1 = bv, c0 = av, c1 = av, c2 = av, c3 = av, c4 = av, c5 = av, c6 = av, c7 = av; \
    for (int64_t i = 0; i < iters; i++) {                                                                            \
        __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(b0), "+x"(b1));                                               \
        c0 = STEP(c0, a0, b0); c1 = STEP(c1, a0, b1); c2 = STEP(c2, a1, b0); c3 = STEP(c3, a1, b1);                  \
        __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(b0), "+x"(b1));                                               \
        c4 = STEP(c4, a0, b0); c5 = STEP(c5, a0, b1); c6 = STEP(c6, a1, b0); c7 = STEP(c7, a1, b1);                  \
    }                                                                                                                \
    __asm__ volatile("" : : "x"(c0), "x"(c1), "x"(c2), "x"(c3), "x"(c4), "x"(c5), "x"(c6), "x"(c7));

#define NPK_MADD(c, a, b) _mm256_add_epi32(c, _mm256_madd_epi16(a, b))
#define NPK_MADDUBS(c, a, b) _mm256_add_epi32(c, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones))

__attribute__((target("avx2"), noinline))
static void peak_madd(int64_t iters)
{
    const __m256i av = _mm256_set1_epi16(3), bv = _mm256_set1_epi16(-5);
    NPK_PEAK_LOOP(__m256i, NPK_MADD)
}

__attribute__((target("avx2"), noinline))
static void peak_maddubs(int64_t iters)
{
    const __m256i av = _mm256_set1_epi8(3), bv = _mm256_set1_epi8(-5), ones = _mm256_set1_epi16(1);
    NPK_PEAK_LOOP(__m256i, NPK_MADDUBS)
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"), noinline))
static void peak_vnni(int64_t iters)
{
    const __m512i av = _mm512_set1_epi8(3), bv = _mm512_set1_epi8(-5);
    NPK_PEAK_LOOP(__m512i, _mm512_dpbusd_epi32)
}
#endif

int64_t npk_int8_peak(int kind, int64_t iters)
{
    if (iters < 0 || kind < 0 || kind > 2)
        return -1;
#ifdef NPK_X86
    if (kind == 0 && npk_cpu_level() >= 1) { peak_madd(iters); return iters * 8 * 16; }
    if (kind == 1 && npk_cpu_level() >= 1) { peak_maddubs(iters); return iters * 8 * 32; }
    if (kind == 2 && npk_cpu_level() >= 3) { peak_vnni(iters); return iters * 8 * 64; }
#endif
    return 0;
}

int npk_conv8(const struct npk_conv8 *p, int64_t q_lo, int64_t q_hi)
{
    if (p->cc < 4 || p->cc % 4 || p->n % 16 || p->c1 < 1 || p->kh < 1 || p->kw < 1 || p->sh < 1 || p->sw < 1
        || p->dh < 1 || p->dw < 1 || q_lo < 0 || p->wo < 0 || q_hi > p->ho * p->wo || (!p->out && !p->y)
        || (p->act && !p->out)
        || p->act < 0 || p->act > 1
        || (int64_t)(p->ho - 1) * p->sh + (int64_t)(p->kh - 1) * p->dh >= p->hp
        || (int64_t)(p->wo - 1) * p->sw + (int64_t)(p->kw - 1) * p->dw >= p->wp)
        return -1;
    if (q_hi <= q_lo || p->wo < 1 || p->n == 0)
        return 0;
#ifdef NPK_X86
    int f = weight_format(p->level);
    if (f == 3 && npk_cpu_level() >= 3) { conv8_vnni(p, q_lo, q_hi); return 0; }
    if (f == 1 && npk_cpu_level() >= 1) {
        if (!p->wide)
            return -1;
        conv8_avx2(p, q_lo, q_hi);
        return 0;
    }
    if (f != 0)
        return -1;
#endif
    conv8_portable(p, q_lo, q_hi);
    return 0;
}
