/* float16-model Conv in float32 (see npurt_kernels.h, `struct npk_convf`): a direct convolution over a padded
 * (C1, Hp, Wp, CC) input, every output summed over k = 0, 1, ... K-1 in that order, then + bias, the fused activation and the
 * float16 store into the output's NC1HWC2 blocks. Weights packed (N / 16, K, 16). Inputs and weights hold float16 values, so each product is exact
 * in float32 and a fused multiply-add rounds exactly as numpy's multiply-then-add: the AVX paths use FMA and still
 * give the numpy reference's bits (`npurt.exec.inplace.conv_fp16.accumulate`).
 */
#include "npurt_kernels.h"
#include "npurt_half.h"
#include "npurt_silu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define NPK_X86 1
#include <immintrin.h>
#endif

/* fused activations (apply_activation's float32 operations, in order): HardSigmoid clip(v * p0 + p1, 0, 1), HardSwish
 * v * clip(v * p0 + p1, 0, 1) with p0 = float32(1 / 6), p1 = 0.5 */
enum { ACT_NONE = 0, ACT_RELU = 1, ACT_CLIP = 2, ACT_LEAKY = 3, ACT_SILU = 4, ACT_HARD_SIGMOID = 5, ACT_HARD_SWISH = 6 };

static inline float activate(float v, const struct npk_convf *p)
{
    if (v != v)
        return v;
    switch (p->act) {
    case ACT_RELU: return v > 0.0f ? v : 0.0f;
    case ACT_CLIP: v = v > p->p0 ? v : p->p0; return v < p->p1 ? v : p->p1;
    case ACT_LEAKY: return v < 0.0f ? v * p->p0 : v;
    case ACT_SILU: return silu1(v, p->p0);
    case ACT_HARD_SIGMOID:
    case ACT_HARD_SWISH: {
        float h = v * p->p0;
        h = h + p->p1;
        h = h > 0.0f ? h : 0.0f;
        h = h < 1.0f ? h : 1.0f;
        return p->act == ACT_HARD_SWISH ? v * h : h;
    }
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

/* K, the weights' rows: they come packed as (N / 16, K, 16), each 16-channel block's K x 16 contiguous (read as a
 * stream; rows of the plain (K, N) matrix sit N * 4 bytes apart and a 4 KiB stride thrashes the L1 sets) */
static inline int64_t kdim(const struct npk_convf *p)
{
    return (int64_t)p->kh * p->kw * p->c1 * p->cc;
}

/* the input pointers of output pixels q0 .. q0 + nr - 1 (flattened over rows, so a 7-wide map is not 6 + 1 tiles),
 * the rest of R repeating the last one */
static inline void tile_inputs(const struct npk_convf *p, int64_t q0, int nr, int R, const float **xr)
{
    const int64_t row = p->wp * p->cc;
    int64_t oy = q0 / p->wo, ox = q0 % p->wo;       /* one division per tile, then steps along the row */
    for (int r = 0; r < R; r++) {
        xr[r] = p->x + oy * p->sh * row + ox * p->sw * p->cc;
        if (r + 1 < nr && ++ox == p->wo) { ox = 0; oy++; }
    }
}

/* channel blocks outside the pixel tiles when the weights outweigh the input (late layers: a 16-channel slice of the
 * weights stays in cache over every pixel instead of all weights streaming once per tile); same sums either way */
static inline int weights_outer(const struct npk_convf *p)
{
    return (int64_t)p->kh * p->kw * p->c1 * p->cc * p->n > p->c1 * p->hp * p->wp * p->cc;
}

static void convf_portable(const struct npk_convf *p, int64_t q_lo, int64_t q_hi)
{
    const int64_t row = p->wp * p->cc, plane = p->hp * row, n = p->n;
    for (int64_t q = q_lo; q < q_hi; q++) {
        const float *x0 = p->x + q / p->wo * p->sh * row + q % p->wo * p->sw * p->cc;
        for (int64_t j = 0; j < n; j += 16) {
            float acc[16] = {0};
            const float *wk = p->w + j * kdim(p);
            for (int dy = 0; dy < p->kh; dy++)
                for (int dx = 0; dx < p->kw; dx++)
                    for (int64_t b = 0; b < p->c1; b++) {
                        const float *xs = x0 + b * plane + dy * p->dh * row + dx * p->dw * p->cc;
                        for (int64_t c = 0; c < p->cc; c++, wk += 16)
                            for (int t = 0; t < 16; t++) acc[t] = acc[t] + xs[c] * wk[t];
                    }
            for (int t = 0; t < 16; t++) store_one(p, q, j + t, acc[t] + p->bias[j + t]);
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
    else if (p->act == ACT_SILU) r = silu8(v, p->p0);
    else if (p->act == ACT_HARD_SIGMOID || p->act == ACT_HARD_SWISH) {
        __m256 h = _mm256_add_ps(_mm256_mul_ps(v, _mm256_set1_ps(p->p0)), _mm256_set1_ps(p->p1));
        h = _mm256_min_ps(_mm256_max_ps(h, _mm256_setzero_ps()), _mm256_set1_ps(1.0f));
        r = p->act == ACT_HARD_SWISH ? _mm256_mul_ps(v, h) : h;
    }
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

/* one tile: NPF_R2 pixels x 16 channels from j, accumulators in registers (a separate inlined function, as the
 * AVX-512 tile: written inline in the loop nest, GCC kept storing the 12 accumulators to the stack every step) */
__attribute__((target("avx2,fma,f16c")))
static inline __attribute__((always_inline)) void tilef_avx2(const struct npk_convf *p, const float *const *xr,
                                                             int nr, int64_t j, int64_t pix0)
{
    const int64_t row = p->wp * p->cc, plane = p->hp * row, n = p->n;
    __m256 acc[NPF_R2][2];
    for (int r = 0; r < NPF_R2; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    const float *wk = p->w + j * kdim(p);
    for (int dy = 0; dy < p->kh; dy++)
        for (int dx = 0; dx < p->kw; dx++)
            for (int64_t b = 0; b < p->c1; b++) {
                const int64_t off = b * plane + dy * p->dh * row + dx * p->dw * p->cc;
                for (int64_t c = 0; c < p->cc; c++, wk += 16) {
                    const __m256 b0 = _mm256_loadu_ps(wk), b1 = _mm256_loadu_ps(wk + 8);
                    for (int r = 0; r < NPF_R2; r++) {
                        const __m256 a = _mm256_set1_ps(xr[r][off + c]);
                        acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
                        acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
                    }
                }
            }
    const __m256 bias0 = _mm256_loadu_ps(p->bias + j), bias1 = _mm256_loadu_ps(p->bias + j + 8);
    for (int r = 0; r < nr; r++) {
        store8(p, pix0 + r, j, _mm256_add_ps(acc[r][0], bias0));
        store8(p, pix0 + r, j + 8, _mm256_add_ps(acc[r][1], bias1));
    }
}

__attribute__((target("avx2,fma,f16c")))
static void convf_avx2(const struct npk_convf *p, int64_t q_lo, int64_t q_hi)
{
    const float *xr[NPF_R2];
    if (weights_outer(p)) {
        for (int64_t j = 0; j < p->n; j += 16)
            for (int64_t q0 = q_lo; q0 < q_hi; q0 += NPF_R2) {
                const int nr = q_hi - q0 < NPF_R2 ? (int)(q_hi - q0) : NPF_R2;
                tile_inputs(p, q0, nr, NPF_R2, xr);
                tilef_avx2(p, xr, nr, j, q0);
            }
        return;
    }
    for (int64_t q0 = q_lo; q0 < q_hi; q0 += NPF_R2) {
        const int nr = q_hi - q0 < NPF_R2 ? (int)(q_hi - q0) : NPF_R2;
        tile_inputs(p, q0, nr, NPF_R2, xr);
        for (int64_t j = 0; j < p->n; j += 16) tilef_avx2(p, xr, nr, j, q0);
    }
}

/* ---- AVX-512 ---------------------------------------------------------------------------------------------- */

#define NPF_R3 8      /* 8 pixels x 3 zmm accumulators + 3 weights + 1 input = 28 zmm */

__attribute__((target("avx512f,avx512bw,avx512vl,f16c,fma")))
static inline __attribute__((always_inline)) void tilef_avx512(const struct npk_convf *p, const float *const *xr,
                                                               int nr, int64_t j0, const int NJ, int64_t pix0)
{
    const int64_t row = p->wp * p->cc, plane = p->hp * row, n = p->n;
    __m512 acc[NPF_R3][3];
    for (int r = 0; r < NPF_R3; r++)
        for (int j = 0; j < NJ; j++) acc[r][j] = _mm512_setzero_ps();
    const int64_t K = kdim(p);
    const float *wk = p->w + j0 * 16 * K;
    for (int dy = 0; dy < p->kh; dy++)
        for (int dx = 0; dx < p->kw; dx++)
            for (int64_t bk = 0; bk < p->c1; bk++) {
                const int64_t off = bk * plane + dy * p->dh * row + dx * p->dw * p->cc;
                for (int64_t c = 0; c < p->cc; c++, wk += 16) {
                    __m512 b[3];
                    for (int j = 0; j < NJ; j++) b[j] = _mm512_loadu_ps(wk + j * 16 * K);
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

/* the channel blocks [j0, j0 + 3 * groups) ... as tiles of 3, then the last 2 or 1, for the pixel tile at q0 */
__attribute__((target("avx512f,avx512bw,avx512vl,f16c,fma")))
static inline __attribute__((always_inline)) void tiles_avx512(const struct npk_convf *p, const float *const *xr,
                                                               int nr, int64_t j0, int64_t j1, int64_t q0)
{
    int64_t j = j0;
    for (; j + 3 <= j1; j += 3) tilef_avx512(p, xr, nr, j, 3, q0);
    if (j1 - j == 2) tilef_avx512(p, xr, nr, j, 2, q0);
    else if (j1 - j == 1) tilef_avx512(p, xr, nr, j, 1, q0);
}

__attribute__((target("avx512f,avx512bw,avx512vl,f16c,fma")))
static void convf_avx512(const struct npk_convf *p, int64_t q_lo, int64_t q_hi)
{
    const int64_t blocks = p->n / 16;
    const float *xr[NPF_R3];
    if (weights_outer(p)) {
        for (int64_t j0 = 0; j0 < blocks; j0 += 3)
            for (int64_t q0 = q_lo; q0 < q_hi; q0 += NPF_R3) {
                const int nr = q_hi - q0 < NPF_R3 ? (int)(q_hi - q0) : NPF_R3;
                tile_inputs(p, q0, nr, NPF_R3, xr);
                tiles_avx512(p, xr, nr, j0, j0 + 3 < blocks ? j0 + 3 : blocks, q0);
            }
        return;
    }
    for (int64_t q0 = q_lo; q0 < q_hi; q0 += NPF_R3) {
        const int nr = q_hi - q0 < NPF_R3 ? (int)(q_hi - q0) : NPF_R3;
        tile_inputs(p, q0, nr, NPF_R3, xr);
        tiles_avx512(p, xr, nr, 0, blocks, q0);
    }
}
#endif

int npk_convf(const struct npk_convf *p, int64_t q_lo, int64_t q_hi)
{
    if (p->cc < 1 || p->c1 < 1 || p->n % 16 || p->kh < 1 || p->kw < 1 || p->sh < 1 || p->sw < 1 || p->dh < 1 || p->dw < 1
        || q_lo < 0 || p->wo < 0 || q_hi > p->ho * p->wo || (!p->out && !p->y) || p->act < 0 || p->act > ACT_HARD_SWISH
        || (p->out && (p->out_c2 < 1 || p->out_channels > p->n))
        || (int64_t)(p->ho - 1) * p->sh + (int64_t)(p->kh - 1) * p->dh >= p->hp
        || (int64_t)(p->wo - 1) * p->sw + (int64_t)(p->kw - 1) * p->dw >= p->wp)
        return -1;
    if (q_hi <= q_lo || p->wo < 1 || p->n == 0)
        return 0;
#ifdef NPK_X86
    int level = npk_level();
    if (level >= 2) { convf_avx512(p, q_lo, q_hi); return 0; }
    if (level == 1) { convf_avx2(p, q_lo, q_hi); return 0; }
#endif
    convf_portable(p, q_lo, q_hi);
    return 0;
}

/* ---- depthwise conv straight from the NC1HWC2 slot ------------------------------------------------------------ */

static inline float dw_load(const struct npk_dw *p, int64_t i)
{
    return p->xtype == 0 ? f16_to_f32(((const uint16_t *)p->x)[i]) : (float)((const int8_t *)p->x)[i];
}

static inline void dw_store(const struct npk_dw *p, int64_t i, float v)
{
    if (p->mode == 2) { p->y[i] = v; return; }
    if (p->mode == 1) {
        v = v > p->p0 ? v : p->p0;
        v = v < p->p1 ? v : p->p1;
        ((int8_t *)p->out)[i] = (int8_t)nearbyintf(v);
        return;
    }
    struct npk_convf a = {0};
    a.act = p->act; a.p0 = p->p0; a.p1 = p->p1;
    ((uint16_t *)p->out)[i] = f32_to_f16(activate(v, &a));
}

static void dw_portable(const struct npk_dw *p, int64_t c_lo, int64_t c_hi)
{
    const int64_t c2 = p->c2, taps = (int64_t)p->kh * p->kw;
    for (int64_t c = c_lo; c < c_hi; c++)
        for (int64_t oy = 0; oy < p->ho; oy++)
            for (int64_t ox = 0; ox < p->wo; ox++)
                for (int64_t l = 0; l < c2; l++) {
                    float acc = 0.0f;
                    for (int64_t t = 0; t < taps; t++) {
                        const int64_t iy = oy * p->sh + t / p->kw - p->pt, ix = ox * p->sw + t % p->kw - p->pl;
                        const float xv = (iy < 0 || iy >= p->h || ix < 0 || ix >= p->w) ? p->border
                                         : dw_load(p, ((c * p->h + iy) * p->ws + ix) * c2 + l);
                        const float prod = xv * p->wt[(t * p->c1 + c) * c2 + l];
                        acc = t == 0 ? prod : acc + prod;
                    }
                    dw_store(p, ((c * p->ho + oy) * p->wo + ox) * c2 + l, acc + p->bias[c * c2 + l]);
                }
}

#ifdef NPK_X86
__attribute__((target("avx2,fma,f16c")))
static inline __attribute__((always_inline)) __m256 dw_load8(const struct npk_dw *p, int64_t i)
{
    if (p->xtype == 0)
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p->x + i)));
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)((const int8_t *)p->x + i))));
}

/* padded row y of block c (input row y - pt, or all border) as float32 with its border columns: out[x] = input
 * (y - pt, x - pl) or the border value, x < wp */
__attribute__((target("avx2,fma,f16c")))
static void dw_padded_row(const struct npk_dw *p, int64_t c, int64_t y, float *out, int64_t wp)
{
    const int64_t c2 = p->c2, iy = y - p->pt;
    const __m256 border = _mm256_set1_ps(p->border);
    int64_t x0 = p->pl < wp ? p->pl : wp, x1 = p->pl + p->w < wp ? p->pl + p->w : wp;
    if (iy < 0 || iy >= p->h)
        x0 = x1 = wp;
    for (int64_t i = 0; i < x0 * c2; i += 8)
        _mm256_storeu_ps(out + i, border);
    const int64_t base = (c * p->h + iy) * p->ws * c2 - p->pl * c2;
    for (int64_t i = x0 * c2; i < x1 * c2; i += 8)
        _mm256_storeu_ps(out + i, dw_load8(p, base + i));
    for (int64_t i = (x1 > x0 ? x1 : x0) * c2; i < wp * c2; i += 8)
        _mm256_storeu_ps(out + i, border);
}

/* the ring of kh padded input rows (float32 with their border) the depthwise drivers read: `held` the padded row each
 * slot holds, `rows` the kh rows of the current output row; NULL when out of memory */
struct dw_ring { float *data; int64_t *held; const float **rows; int64_t wp; };

static int dw_ring_alloc(const struct npk_dw *p, struct dw_ring *r)
{
    r->wp = (p->wo - 1) * p->sw + p->kw;
    void *data = NULL;       /* cache-line aligned: with 16-lane rows every 64-byte load stays in one line */
    if (posix_memalign(&data, 64, (size_t)(p->kh * r->wp * p->c2) * sizeof(float)
                                  + (size_t)p->kh * (sizeof(int64_t) + sizeof(float *))))
        return -1;
    r->data = data;
    r->held = (int64_t *)(r->data + p->kh * r->wp * p->c2);
    r->rows = (const float **)(r->held + p->kh);
    return 0;
}

/* point r->rows at output row oy's kh input rows of block c, converting each padded row once (oy = 0: a new block) */
__attribute__((target("avx2,fma,f16c")))
static void dw_ring_rows(const struct npk_dw *p, struct dw_ring *r, int64_t c, int64_t oy)
{
    const int64_t size = r->wp * p->c2;
    if (oy == 0)
        for (int k = 0; k < p->kh; k++)
            r->held[k] = -1;
    for (int dy = 0; dy < p->kh; dy++) {
        const int64_t y = oy * p->sh + dy, slot = y % p->kh;
        if (r->held[slot] != y) {
            dw_padded_row(p, c, y, r->data + slot * size, r->wp);
            r->held[slot] = y;
        }
        r->rows[dy] = r->data + slot * size;
    }
}

/* stores lanes [l, l + 8) of output element o: float32, int8 codes of rint(clamp) or float16 after the activation */
__attribute__((target("avx2,fma,f16c")))
static inline __attribute__((always_inline)) void dw_store8(const struct npk_dw *p, struct npk_convf *a, int64_t o,
                                                            __m256 v, __m256 lo, __m256 hi)
{
    if (p->mode == 2) {
        _mm256_storeu_ps(p->y + o, v);
    } else if (p->mode == 1) {
        __m256i q = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi));
        __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        _mm_storel_epi64((__m128i *)((int8_t *)p->out + o), _mm_packs_epi16(q16, q16));
    } else {
        a->out = (uint16_t *)p->out + o;
        store8(a, 0, 0, v);
    }
}

/* `n` (<= 8) output pixels of block c from ox on, lanes [l, l + 8): each pixel's taps summed in tap order in its own
 * register (the pixels' sums are independent chains), then the bias, stored */
__attribute__((target("avx2,fma,f16c")))
static inline __attribute__((always_inline)) void dw_pixels8(const struct npk_dw *p, struct npk_convf *a,
                                                             const float *const *rows, int64_t c, int64_t oy,
                                                             int64_t ox, int n, int64_t l, __m256 lo, __m256 hi)
{
    const int64_t c2 = p->c2, step = p->sw * c2;
    const float *wt = p->wt + c * c2 + l;
    __m256 acc[8];
    for (int dy = 0, t = 0; dy < p->kh; dy++) {
        const float *row = rows[dy] + ox * p->sw * c2 + l;
        for (int dx = 0; dx < p->kw; dx++, t++) {
            const __m256 w8 = _mm256_loadu_ps(wt + (int64_t)t * p->c1 * c2);
            const float *x = row + dx * c2;
            for (int j = 0; j < n; j++) {
                const __m256 prod = _mm256_mul_ps(_mm256_loadu_ps(x + j * step), w8);
                acc[j] = t == 0 ? prod : _mm256_add_ps(acc[j], prod);
            }
        }
    }
    const __m256 bias = _mm256_loadu_ps(p->bias + c * c2 + l);
    for (int j = 0; j < n; j++)
        dw_store8(p, a, ((c * p->ho + oy) * p->wo + ox + j) * c2 + l, _mm256_add_ps(acc[j], bias), lo, hi);
}

/* the input rows as float32 with their border, each converted once into a ring of kh rows, then eight, four or one
 * output pixels at a time */
__attribute__((target("avx2,fma,f16c")))
static int dw_avx2(const struct npk_dw *p, int64_t c_lo, int64_t c_hi)
{
    const __m256 lo = _mm256_set1_ps(p->p0), hi = _mm256_set1_ps(p->p1);
    struct dw_ring r;
    if (p->ho < 1 || p->wo < 1)
        return 0;
    if (dw_ring_alloc(p, &r))
        return -1;
    struct npk_convf a = {0};
    a.act = p->act; a.p0 = p->p0; a.p1 = p->p1; a.out_c2 = 8; a.out_channels = 8; a.n = 8;
    for (int64_t c = c_lo; c < c_hi; c++)
        for (int64_t oy = 0; oy < p->ho; oy++) {
            dw_ring_rows(p, &r, c, oy);
            for (int64_t l = 0; l < p->c2; l += 8) {
                int64_t ox = 0;
                for (; ox + 8 <= p->wo; ox += 8)
                    dw_pixels8(p, &a, r.rows, c, oy, ox, 8, l, lo, hi);
                for (; ox + 4 <= p->wo; ox += 4)
                    dw_pixels8(p, &a, r.rows, c, oy, ox, 4, l, lo, hi);
                for (; ox < p->wo; ox++)
                    dw_pixels8(p, &a, r.rows, c, oy, ox, 1, l, lo, hi);
            }
        }
    free(r.data);
    return 0;
}

/* AVX-512 (modes 1 and 2, 16-lane blocks): the same rows, taps and order as dw_avx2, 16 lanes and up to eight
 * output pixels at a time */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static inline __attribute__((always_inline)) void dw_pixels16(const struct npk_dw *p, const float *const *rows,
                                                              int64_t c, int64_t oy, int64_t ox, const int n, int64_t l,
                                                              __m512 lo, __m512 hi)
{
    const int64_t c2 = p->c2, step = p->sw * c2;
    const float *wt = p->wt + c * c2 + l;
    __m512 acc[8];
    for (int dy = 0, t = 0; dy < p->kh; dy++) {
        const float *row = rows[dy] + ox * p->sw * c2 + l;
        for (int dx = 0; dx < p->kw; dx++, t++) {
            const __m512 w16 = _mm512_loadu_ps(wt + (int64_t)t * p->c1 * c2);
            const float *x = row + dx * c2;
            for (int j = 0; j < n; j++) {
                const __m512 prod = _mm512_mul_ps(_mm512_loadu_ps(x + j * step), w16);
                acc[j] = t == 0 ? prod : _mm512_add_ps(acc[j], prod);
            }
        }
    }
    const __m512 bias = _mm512_loadu_ps(p->bias + c * c2 + l);
    for (int j = 0; j < n; j++) {
        const int64_t o = ((c * p->ho + oy) * p->wo + ox + j) * c2 + l;
        const __m512 v = _mm512_add_ps(acc[j], bias);
        if (p->mode == 2)
            _mm512_storeu_ps(p->y + o, v);
        else
            _mm_storeu_si128((__m128i *)((int8_t *)p->out + o),
                             _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(v, lo), hi))));
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl")))
static int dw_avx512(const struct npk_dw *p, int64_t c_lo, int64_t c_hi)
{
    const __m512 lo = _mm512_set1_ps(p->p0), hi = _mm512_set1_ps(p->p1);
    struct dw_ring r;
    if (p->ho < 1 || p->wo < 1)
        return 0;
    if (dw_ring_alloc(p, &r))
        return -1;
    for (int64_t c = c_lo; c < c_hi; c++)
        for (int64_t oy = 0; oy < p->ho; oy++) {
            dw_ring_rows(p, &r, c, oy);
            for (int64_t l = 0; l < p->c2; l += 16) {
                int64_t ox = 0;
                for (; ox + 8 <= p->wo; ox += 8)
                    dw_pixels16(p, r.rows, c, oy, ox, 8, l, lo, hi);
                for (; ox + 4 <= p->wo; ox += 4)
                    dw_pixels16(p, r.rows, c, oy, ox, 4, l, lo, hi);
                for (; ox < p->wo; ox++)
                    dw_pixels16(p, r.rows, c, oy, ox, 1, l, lo, hi);
            }
        }
    free(r.data);
    return 0;
}
#endif

int npk_depthwise(const struct npk_dw *p, int64_t c_lo, int64_t c_hi)
{
    if (p->c2 < 1 || p->kh < 1 || p->kw < 1 || p->sh < 1 || p->sw < 1 || p->xtype < 0 || p->xtype > 1
        || p->mode < 0 || p->mode > 2 || c_lo < 0 || c_hi > p->c1 || p->ws < p->w || p->act < 0 || p->act > ACT_HARD_SWISH
        || (p->mode == 2 ? !p->y : !p->out) || (p->mode == 0 && p->xtype != 0) || (p->mode == 1 && p->xtype != 1))
        return -1;
#ifdef NPK_X86
    if (npk_level() >= 2 && p->c2 % 16 == 0 && p->mode != 0)
        return dw_avx512(p, c_lo, c_hi);
    if (npk_level() >= 1 && p->c2 % 8 == 0)
        return dw_avx2(p, c_lo, c_hi);
#endif
    dw_portable(p, c_lo, c_hi);
    return 0;
}
