/* npurt's compiled kernels (see npurt_kernels.h). Results are bit-identical to numpy's:
 * - float32 <-> float16 follow numpy's own conversions: round to nearest even, subnormals kept, NaN payloads
 *   shifted (not quieted). The AVX2 (F16C) and AVX-512 paths convert 8 / 16 values per instruction and redo a
 *   vector holding a NaN with the portable code, the only inputs where the hardware differs (it quiets NaNs).
 * - quantise is numpy's x * a, + b, rint, clip, cast in float32, in that order; dequantise q * a, - b. Built with
 *   -ffp-contract=off so no multiply-add is fused.
 * - layout transposes move 16-byte tiles with SSE2 shuffles (16x16 bytes, 8x8 halves, 4x4 words); conversions
 *   run on contiguous plane segments staged in a small L1 scratch beside the transpose. 16-byte pixel groups
 *   (int8 C2 = 16, fp16 C2 = 8) and their planes move a whole 64-byte line of every plane per step.
 */
#include "npurt_kernels.h"
#include "npurt_half.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define NPK_X86 1
#include <immintrin.h>
#endif

static int level_in_use = -1;

int npk_cpu_level(void)
{
#ifdef NPK_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")
        && __builtin_cpu_supports("f16c"))
        return __builtin_cpu_supports("avx512vnni") ? 3 : 2;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c"))
        return 1;
#endif
    return 0;
}

int npk_set_level(int level)
{
    int cpu = npk_cpu_level();
    if (level < 0 || level > cpu)
        level = cpu;
    level_in_use = level;
    return level;
}

int npk_level(void)
{
    if (level_in_use < 0)
        npk_set_level(-1);
    return level_in_use;
}

/* ---- portable scalar conversions ------------------------------------------------------------------------ */


static inline int8_t quantize_one(float x, float a, float b)
{
    float t = x * a;
    t = t + b;
    t = nearbyintf(t);
    if (t != t)
        return 0;
    if (t < -128.0f) t = -128.0f;
    if (t > 127.0f) t = 127.0f;
    return (int8_t)t;
}

static void cast_portable(int conv, const void *src, void *dst, int64_t n, float a, float b)
{
    int64_t i;
    switch (conv) {
    case NPK_F32_F16:
        for (i = 0; i < n; i++) ((uint16_t *)dst)[i] = f32_to_f16(((const float *)src)[i]);
        break;
    case NPK_F16_F32:
        for (i = 0; i < n; i++) ((float *)dst)[i] = f16_to_f32(((const uint16_t *)src)[i]);
        break;
    case NPK_F32_I8:
        for (i = 0; i < n; i++) ((int8_t *)dst)[i] = quantize_one(((const float *)src)[i], a, b);
        break;
    case NPK_I8_F32:
        for (i = 0; i < n; i++) {
            float t = (float)((const int8_t *)src)[i] * a;
            ((float *)dst)[i] = t - b;
        }
        break;
    case NPK_COPY1: memcpy(dst, src, (size_t)n); break;
    case NPK_COPY2: memcpy(dst, src, (size_t)n * 2); break;
    case NPK_COPY4: memcpy(dst, src, (size_t)n * 4); break;
    }
}

/* ---- AVX2 + F16C ----------------------------------------------------------------------------------------- */
#ifdef NPK_X86
__attribute__((target("avx2,f16c")))
static void cast_avx2(int conv, const void *src, void *dst, int64_t n, float a, float b)
{
    int64_t i = 0;
    if (conv == NPK_F32_F16) {
        const float *s = src; uint16_t *d = dst;
        for (; i + 8 <= n; i += 8) {
            __m256 v = _mm256_loadu_ps(s + i);
            if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)))
                cast_portable(conv, s + i, d + i, 8, a, b);
            else
                _mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        }
        cast_portable(conv, s + i, d + i, n - i, a, b);
    } else if (conv == NPK_F16_F32) {
        const uint16_t *s = src; float *d = dst;
        const __m128i abs = _mm_set1_epi16(0x7fff), inf = _mm_set1_epi16(0x7c00);
        for (; i + 8 <= n; i += 8) {
            __m128i h = _mm_loadu_si128((const __m128i *)(s + i));
            if (_mm_movemask_epi8(_mm_cmpgt_epi16(_mm_and_si128(h, abs), inf)))
                cast_portable(conv, s + i, d + i, 8, a, b);
            else
                _mm256_storeu_ps(d + i, _mm256_cvtph_ps(h));
        }
        cast_portable(conv, s + i, d + i, n - i, a, b);
    } else if (conv == NPK_F32_I8) {
        const float *s = src; int8_t *d = dst;
        const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
        const __m256 lo = _mm256_set1_ps(-128.0f), hi = _mm256_set1_ps(127.0f);
        const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        for (; i + 32 <= n; i += 32) {
            __m256i q[4];
            for (int k = 0; k < 4; k++) {
                __m256 t = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(s + i + 8 * k), va), vb);
                t = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                t = _mm256_and_ps(t, _mm256_cmp_ps(t, t, _CMP_ORD_Q));          /* NaN -> 0 */
                t = _mm256_min_ps(_mm256_max_ps(t, lo), hi);
                q[k] = _mm256_cvtps_epi32(t);
            }
            __m256i w = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
            _mm256_storeu_si256((__m256i *)(d + i), _mm256_permutevar8x32_epi32(w, order));
        }
        cast_portable(conv, s + i, d + i, n - i, a, b);
    } else if (conv == NPK_I8_F32) {
        const int8_t *s = src; float *d = dst;
        const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
        for (; i + 8 <= n; i += 8) {
            __m128i q = _mm_loadl_epi64((const __m128i *)(s + i));
            __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), va);
            _mm256_storeu_ps(d + i, _mm256_sub_ps(t, vb));
        }
        cast_portable(conv, s + i, d + i, n - i, a, b);
    } else {
        cast_portable(conv, src, dst, n, a, b);
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl,f16c,avx2")))
static void cast_avx512(int conv, const void *src, void *dst, int64_t n, float a, float b)
{
    int64_t i = 0;
    if (conv == NPK_F32_F16) {
        const float *s = src; uint16_t *d = dst;
        for (; i + 16 <= n; i += 16) {
            __m512 v = _mm512_loadu_ps(s + i);
            if (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q))
                cast_portable(conv, s + i, d + i, 16, a, b);
            else
                _mm256_storeu_si256((__m256i *)(d + i), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        }
        cast_avx2(conv, s + i, d + i, n - i, a, b);
    } else if (conv == NPK_F16_F32) {
        const uint16_t *s = src; float *d = dst;
        const __m256i abs = _mm256_set1_epi16(0x7fff), inf = _mm256_set1_epi16(0x7c00);
        for (; i + 16 <= n; i += 16) {
            __m256i h = _mm256_loadu_si256((const __m256i *)(s + i));
            if (_mm256_movemask_epi8(_mm256_cmpgt_epi16(_mm256_and_si256(h, abs), inf)))
                cast_portable(conv, s + i, d + i, 16, a, b);
            else
                _mm512_storeu_ps(d + i, _mm512_cvtph_ps(h));
        }
        cast_avx2(conv, s + i, d + i, n - i, a, b);
    } else if (conv == NPK_F32_I8) {
        const float *s = src; int8_t *d = dst;
        const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
        const __m512 lo = _mm512_set1_ps(-128.0f), hi = _mm512_set1_ps(127.0f);
        for (; i + 16 <= n; i += 16) {
            __m512 t = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(s + i), va), vb);
            t = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            __mmask16 ordered = _mm512_cmp_ps_mask(t, t, _CMP_ORD_Q);
            t = _mm512_maskz_mov_ps(ordered, t);                                    /* NaN -> 0 */
            t = _mm512_min_ps(_mm512_max_ps(t, lo), hi);
            _mm_storeu_si128((__m128i *)(d + i), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(t)));
        }
        cast_avx2(conv, s + i, d + i, n - i, a, b);
    } else if (conv == NPK_I8_F32) {
        const int8_t *s = src; float *d = dst;
        const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
        for (; i + 16 <= n; i += 16) {
            __m128i q = _mm_loadu_si128((const __m128i *)(s + i));
            __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), va);
            _mm512_storeu_ps(d + i, _mm512_sub_ps(t, vb));
        }
        cast_avx2(conv, s + i, d + i, n - i, a, b);
    } else {
        cast_portable(conv, src, dst, n, a, b);
    }
}
#endif

/* `rows` runs of n contiguous elements, src and dst rows `ss` / `ds` bytes apart: one dispatch for all of them */
static void rows_portable(int conv, int64_t rows, int64_t n, const char *s, int64_t ss, char *d, int64_t ds,
                          float a, float b)
{
    for (int64_t r = 0; r < rows; r++) cast_portable(conv, s + r * ss, d + r * ds, n, a, b);
}

#ifdef NPK_X86
__attribute__((target("avx2,f16c")))
static void rows_avx2(int conv, int64_t rows, int64_t n, const char *s, int64_t ss, char *d, int64_t ds,
                      float a, float b)
{
    for (int64_t r = 0; r < rows; r++) cast_avx2(conv, s + r * ss, d + r * ds, n, a, b);
}

__attribute__((target("avx512f,avx512bw,avx512vl,f16c,avx2")))
static void rows_avx512(int conv, int64_t rows, int64_t n, const char *s, int64_t ss, char *d, int64_t ds,
                        float a, float b)
{
    if (n < 16) {                     /* short runs: the 8-wide code, without a 16-wide attempt per run */
        for (int64_t r = 0; r < rows; r++) cast_avx2(conv, s + r * ss, d + r * ds, n, a, b);
        return;
    }
    for (int64_t r = 0; r < rows; r++) cast_avx512(conv, s + r * ss, d + r * ds, n, a, b);
}
#endif

static void cast_rows(int conv, int64_t rows, int64_t n, const char *s, int64_t ss, char *d, int64_t ds,
                      float a, float b)
{
#ifdef NPK_X86
    int level = npk_level();
    if (level >= 2) { rows_avx512(conv, rows, n, s, ss, d, ds, a, b); return; }
    if (level == 1) { rows_avx2(conv, rows, n, s, ss, d, ds, a, b); return; }
#endif
    rows_portable(conv, rows, n, s, ss, d, ds, a, b);
}

static inline void cast_run(int conv, const void *src, void *dst, int64_t n, float a, float b)
{
    cast_rows(conv, 1, n, src, 0, dst, 0, a, b);
}

static int src_size(int conv)
{
    static const int size[] = {1, 2, 4, 4, 2, 4, 1};
    return size[conv];
}

static int dst_size(int conv)
{
    static const int size[] = {1, 2, 4, 2, 4, 1, 4};
    return size[conv];
}

static int bad_conv(int conv) { return conv < NPK_COPY1 || conv > NPK_I8_F32; }

int npk_cast(int conv, const void *src, void *dst, int64_t n, float a, float b)
{
    if (bad_conv(conv) || n < 0)
        return -1;
    cast_run(conv, src, dst, n, a, b);
    return 0;
}

/* one element, for runs whose elements are not adjacent */
static inline void cast_one(int conv, const char *s, char *d, float a, float b)
{
    switch (conv) {
    case NPK_F32_F16: { float v; memcpy(&v, s, 4); uint16_t h = f32_to_f16(v); memcpy(d, &h, 2); break; }
    case NPK_F16_F32: { uint16_t h; memcpy(&h, s, 2); float v = f16_to_f32(h); memcpy(d, &v, 4); break; }
    case NPK_F32_I8: { float v; memcpy(&v, s, 4); *(int8_t *)d = quantize_one(v, a, b); break; }
    case NPK_I8_F32: { float t = (float)*(const int8_t *)s * a; t = t - b; memcpy(d, &t, 4); break; }
    default: memcpy(d, s, (size_t)src_size(conv));
    }
}

/* rows of `bytes` bytes from s (stride ss) to d (stride ds), as copies of constant size (inlined moves, not a memcpy
 * call per row of a few bytes) */
#define NPK_SPREAD(B) case B: for (int64_t r = 0; r < rows; r++) memcpy(d + r * ds, s + r * ss, B); return
static void spread(const char *s, int64_t ss, char *d, int64_t ds, int64_t rows, int64_t bytes)
{
    switch (bytes) {
    NPK_SPREAD(1); NPK_SPREAD(2); NPK_SPREAD(3); NPK_SPREAD(4); NPK_SPREAD(6); NPK_SPREAD(8); NPK_SPREAD(12);
    NPK_SPREAD(16); NPK_SPREAD(24); NPK_SPREAD(32);
    default: for (int64_t r = 0; r < rows; r++) memcpy(d + r * ds, s + r * ss, (size_t)bytes);
    }
}

/* rows of fewer than 16 elements (a 3-channel image's pixels into 4-lane groups): a conversion of adjacent source
 * rows runs as one contiguous conversion into a stack buffer, then the rows are spread; copies spread directly */
static int rows_narrow(int conv, int64_t rows, int64_t n, const char *s, int64_t ss, char *d, int64_t ds, float a,
                       float b)
{
    const int es = src_size(conv), ed = dst_size(conv);
    if (conv <= NPK_COPY4) {
        spread(s, ss, d, ds, rows, n * es);
        return 1;
    }
    if (ss != n * es)
        return 0;
    float buf[1024];
    const int64_t per = 1024 / n;
    for (int64_t r0 = 0; r0 < rows; r0 += per) {
        const int64_t m = rows - r0 < per ? rows - r0 : per;
        cast_run(conv, s + r0 * ss, buf, m * n, a, b);
        spread((const char *)buf, n * ed, d + r0 * ds, ds, m, n * ed);
    }
    return 1;
}

static void cast_nd(int conv, int ndim, const int64_t *shape, const char *src, const int64_t *ss, char *dst,
                    const int64_t *ds, float a, float b)
{
    if (ndim == 2 && ss[1] == src_size(conv) && ds[1] == dst_size(conv)) {
        if (shape[1] < 16 && shape[0] > 1 && rows_narrow(conv, shape[0], shape[1], src, ss[0], dst, ds[0], a, b))
            return;
        cast_rows(conv, shape[0], shape[1], src, ss[0], dst, ds[0], a, b);
        return;
    }
    if (ndim == 1) {
        if (ss[0] == src_size(conv) && ds[0] == dst_size(conv)) {
            cast_run(conv, src, dst, shape[0], a, b);
        } else {
            for (int64_t i = 0; i < shape[0]; i++)
                cast_one(conv, src + i * ss[0], dst + i * ds[0], a, b);
        }
        return;
    }
    for (int64_t i = 0; i < shape[0]; i++)
        cast_nd(conv, ndim - 1, shape + 1, src + i * ss[0], ss + 1, dst + i * ds[0], ds + 1, a, b);
}

int npk_cast_nd(int conv, int ndim, const int64_t *shape, const void *src, const int64_t *src_strides,
                void *dst, const int64_t *dst_strides, float a, float b)
{
    if (bad_conv(conv) || ndim < 1 || ndim > 8)
        return -1;
    for (int k = 0; k < ndim; k++)
        if (shape[k] <= 0)
            return shape[k] == 0 ? 0 : -1;
    cast_nd(conv, ndim, shape, src, src_strides, dst, dst_strides, a, b);
    return 0;
}

/* ---- transposes -------------------------------------------------------------------------------------------
 * transpose(src, ss, dst, ds, R, C, e): dst[c * ds + r * e] = src[r * ss + c * e] for r < R, c < C (bytes). */

#ifdef NPK_X86
/* `stages` butterfly stages of unpacks on registers j and j + n / 2 of r[n] (o[n] the scratch): a transpose of the
 * n registers' elements within each 128-bit lane */
#define NPK_UNPACK_STAGES(r, o, n, unlo, unhi, stages)                                                      \
    for (int st = 0; st < (stages); st++) {                                                                \
        for (int j = 0; j < (n) / 2; j++) {                                                                \
            o[2 * j] = unlo(r[j], r[j + (n) / 2]);                                                         \
            o[2 * j + 1] = unhi(r[j], r[j + (n) / 2]);                                                     \
        }                                                                                                  \
        memcpy(r, o, sizeof r);                                                                            \
    }

/* 16 rows of 16 bytes to 16 columns: four butterfly stages of unpacks on rows j and j + n/2 (element width 1, 2 or
 * 4 bytes gives the 16x16, 8x8 and 4x4 transposes). rows_part_*: only the first R source rows read, the others zero
 * (n pixels of R planes into n whole 16-byte lane groups, padding lanes zero in the same stores); tile_*: all n. */
#define NPK_TILE(part, name, n, unlo, unhi, stages)                                                        \
    static inline void part(const char *s, int64_t ss, char *d, int64_t ds, int64_t R)                     \
    {                                                                                                      \
        __m128i r[n], o[n];                                                                                \
        for (int i = 0; i < n; i++)                                                                        \
            r[i] = i < R ? _mm_loadu_si128((const __m128i *)(s + i * ss)) : _mm_setzero_si128();          \
        NPK_UNPACK_STAGES(r, o, n, unlo, unhi, stages);                                                    \
        for (int i = 0; i < n; i++) _mm_storeu_si128((__m128i *)(d + i * ds), r[i]);                       \
    }                                                                                                      \
    static inline void name(const char *s, int64_t ss, char *d, int64_t ds) { part(s, ss, d, ds, n); }
NPK_TILE(rows_part_e1, tile_e1, 16, _mm_unpacklo_epi8, _mm_unpackhi_epi8, 4)
NPK_TILE(rows_part_e2, tile_e2, 8, _mm_unpacklo_epi16, _mm_unpackhi_epi16, 3)
NPK_TILE(rows_part_e4, tile_e4, 4, _mm_unpacklo_epi32, _mm_unpackhi_epi32, 2)
#endif

static void transpose_scalar(const char *s, int64_t ss, char *d, int64_t ds, int64_t R, int64_t C, int e);

/* lanes < C2 = 16 / e planes of p pixels into whole 16-byte groups (padding lanes zero): the zero-row tiles on x86,
 * else zeros then the transpose; 0 when the case is not this one */
static int pack_narrow(const char *s, int64_t ss, char *d, int64_t lanes, int64_t p, int e)
{
#ifdef NPK_X86
    typedef void (*part_fn)(const char *, int64_t, char *, int64_t, int64_t);
    static const part_fn part[] = {0, rows_part_e1, rows_part_e2, 0, rows_part_e4};
    if (e != 1 && e != 2 && e != 4)
        return 0;
    const int64_t t = 16 / e;
    int64_t w = 0;
    for (; w + t <= p; w += t)
        part[e](s + w * e, ss, d + w * 16, 16, lanes);
    if (w < p) {
        memset(d + w * 16, 0, (size_t)((p - w) * 16));
        transpose_scalar(s + w * e, ss, d + w * 16, 16, lanes, p - w, e);
    }
    return 1;
#else
    (void)s; (void)ss; (void)d; (void)lanes; (void)p; (void)e;
    return 0;
#endif
}

/* element copies of constant size (inlined moves, not a memcpy call per element) */
#define NPK_TRANSPOSE_SCALAR(E)                                                                            \
    for (int64_t c = 0; c < C; c++)                                                                        \
        for (int64_t r = 0; r < R; r++)                                                                    \
            memcpy(d + c * ds + r * E, s + r * ss + c * E, E)

static void transpose_scalar(const char *s, int64_t ss, char *d, int64_t ds, int64_t R, int64_t C, int e)
{
    switch (e) {
    case 1: NPK_TRANSPOSE_SCALAR(1); break;
    case 2: NPK_TRANSPOSE_SCALAR(2); break;
    case 4: NPK_TRANSPOSE_SCALAR(4); break;
    default:
        for (int64_t c = 0; c < C; c++)
            for (int64_t r = 0; r < R; r++)
                memcpy(d + c * ds + r * e, s + r * ss + c * e, (size_t)e);
    }
}

#ifdef NPK_X86
/* AVX2: two 16-byte tiles per instruction (the unpacks work within each 128-bit lane). `cols`: rows r..r+n-1 by
 * 2 tiles of columns, loaded as 32 contiguous bytes, each output register split to two destination rows; `rows`: 2
 * tiles of rows (i and i + n in the two lanes), each output register 32 contiguous destination bytes. */
#define NPK_TILE2(name, n, unlo, unhi, stages, cols, nt)                                                   \
    __attribute__((target("avx2"))) static void name(const char *s, int64_t ss, char *d, int64_t ds)       \
    {                                                                                                      \
        __m256i r[n], o[n];                                                                                \
        for (int i = 0; i < n; i++)                                                                        \
            r[i] = cols ? _mm256_loadu_si256((const __m256i *)(s + i * ss))                                \
                        : _mm256_inserti128_si256(                                                         \
                              _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(s + i * ss))),      \
                              _mm_loadu_si128((const __m128i *)(s + (i + n) * ss)), 1);                    \
        NPK_UNPACK_STAGES(r, o, n, unlo, unhi, stages);                                                    \
        for (int i = 0; i < n; i++) {                                                                      \
            if (cols && nt) {             /* aligned destinations only (streamed past the caches) */     \
                _mm_stream_si128((__m128i *)(d + i * ds), _mm256_castsi256_si128(r[i]));                   \
                _mm_stream_si128((__m128i *)(d + (i + n) * ds), _mm256_extracti128_si256(r[i], 1));        \
            } else if (cols) {                                                                             \
                _mm_storeu_si128((__m128i *)(d + i * ds), _mm256_castsi256_si128(r[i]));                   \
                _mm_storeu_si128((__m128i *)(d + (i + n) * ds), _mm256_extracti128_si256(r[i], 1));        \
            } else if (nt) {                                                                               \
                _mm256_stream_si256((__m256i *)(d + i * ds), r[i]);                                        \
            } else {                                                                                       \
                _mm256_storeu_si256((__m256i *)(d + i * ds), r[i]);                                        \
            }                                                                                              \
        }                                                                                                  \
    }
NPK_TILE2(cols_e1, 16, _mm256_unpacklo_epi8, _mm256_unpackhi_epi8, 4, 1, 0)
NPK_TILE2(cols_e2, 8, _mm256_unpacklo_epi16, _mm256_unpackhi_epi16, 3, 1, 0)
NPK_TILE2(cols_e4, 4, _mm256_unpacklo_epi32, _mm256_unpackhi_epi32, 2, 1, 0)
NPK_TILE2(rows_e1, 16, _mm256_unpacklo_epi8, _mm256_unpackhi_epi8, 4, 0, 0)
NPK_TILE2(rows_e2, 8, _mm256_unpacklo_epi16, _mm256_unpackhi_epi16, 3, 0, 0)
NPK_TILE2(rows_e4, 4, _mm256_unpacklo_epi32, _mm256_unpackhi_epi32, 2, 0, 0)
NPK_TILE2(cols_e1_nt, 16, _mm256_unpacklo_epi8, _mm256_unpackhi_epi8, 4, 1, 1)
NPK_TILE2(cols_e2_nt, 8, _mm256_unpacklo_epi16, _mm256_unpackhi_epi16, 3, 1, 1)

typedef void (*tile_fn)(const char *, int64_t, char *, int64_t);
#endif

#ifdef NPK_X86
/* Whole cache lines of 16-byte pixel groups (int8 C2 = 16, fp16 C2 = 8: T = 16 / e lanes of e bytes) <-> T planes:
 * one step moves 64 / e pixels, the T * 64 bytes of the groups against one 64-byte line of each plane, so every
 * plane line is written (or read) whole, once (16-byte tiles wrote each line in four pieces; in the 16 planes'
 * few L1 sets, when the plane stride is a multiple of 2 KiB, lines were evicted between the pieces).
 * AVX-512: T contiguous registers of 4 pixels each; a 4x4 transpose of 128-bit lanes puts pixels T*L + i in lane L
 * of register i, then the in-lane T x T transposes (the unpack cascade) give each plane's 64 / e pixels in order.
 * planes -> groups runs the same two stages in reverse order (both are their own inverse). */
/* four 16-byte pixel groups gs bytes apart <-> the four lanes of a register */
__attribute__((target("avx512f,avx512bw"), always_inline)) static inline __m512i load4(const char *g, int64_t gs)
{
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)g));
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(g + gs)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(g + 2 * gs)), 2);
    return _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(g + 3 * gs)), 3);
}

__attribute__((target("avx512f,avx512bw"), always_inline)) static inline void store4(char *g, int64_t gs, __m512i v)
{
    _mm_storeu_si128((__m128i *)g, _mm512_castsi512_si128(v));
    _mm_storeu_si128((__m128i *)(g + gs), _mm512_extracti32x4_epi32(v, 1));
    _mm_storeu_si128((__m128i *)(g + 2 * gs), _mm512_extracti32x4_epi32(v, 2));
    _mm_storeu_si128((__m128i *)(g + 3 * gs), _mm512_extracti32x4_epi32(v, 3));
}

#define NPK_LINE512(name, T, unlo, unhi, stages)                                                           \
    __attribute__((target("avx512f,avx512bw"), always_inline)) static inline void name(char *g, int64_t gs, \
                                                                                       char *p, int64_t ps,      \
                                                                                       int to_planes, int nt)    \
    {                                                                                                      \
        __m512i r[T], o[T];                                                                                \
        for (int i = 0; i < T; i++)                                                                        \
            r[i] = !to_planes ? _mm512_loadu_si512((const void *)(p + i * ps))                             \
                   : gs == 16 ? _mm512_loadu_si512((const void *)(g + 64 * i)) : load4(g + 4 * i * gs, gs);  \
        for (int pass = 0; pass < 2; pass++) {                                                             \
            if (pass == to_planes) {                 /* the in-lane T x T transposes */                    \
                NPK_UNPACK_STAGES(r, o, T, unlo, unhi, stages);                                            \
            } else {                      /* 4x4 lane transposes: registers k + L * T / 4 <-> 4 * k + L */ \
                for (int k = 0; k < T / 4; k++) {                                                          \
                    const int q = to_planes ? T / 4 : 1, k0 = to_planes ? k : 4 * k;                       \
                    __m512i a = r[k0], b = r[k0 + q], c = r[k0 + 2 * q], d = r[k0 + 3 * q];                \
                    __m512i t0 = _mm512_shuffle_i64x2(a, b, 0x44), t1 = _mm512_shuffle_i64x2(a, b, 0xEE);  \
                    __m512i t2 = _mm512_shuffle_i64x2(c, d, 0x44), t3 = _mm512_shuffle_i64x2(c, d, 0xEE);  \
                    o[4 * k] = _mm512_shuffle_i64x2(t0, t2, 0x88);                                         \
                    o[4 * k + 1] = _mm512_shuffle_i64x2(t0, t2, 0xDD);                                     \
                    o[4 * k + 2] = _mm512_shuffle_i64x2(t1, t3, 0x88);                                     \
                    o[4 * k + 3] = _mm512_shuffle_i64x2(t1, t3, 0xDD);                                     \
                }                                                                                          \
                if (to_planes) memcpy(r, o, sizeof r);                                                     \
                else for (int k = 0; k < T / 4; k++)                                                       \
                    for (int m = 0; m < 4; m++) r[k + m * T / 4] = o[4 * k + m];                           \
            }                                                                                              \
        }                                                                                                  \
        for (int i = 0; i < T; i++) {                                                                      \
            char *line = to_planes ? p + i * ps : g + 64 * i;                                              \
            if (!to_planes && gs != 16) store4(g + 4 * i * gs, gs, r[i]);                                  \
            else if (nt) _mm512_stream_si512((void *)line, r[i]);                                          \
            else _mm512_storeu_si512((void *)line, r[i]);                                                  \
        }                                                                                                  \
    }
NPK_LINE512(line512_e1, 16, _mm512_unpacklo_epi8, _mm512_unpackhi_epi8, 4)
NPK_LINE512(line512_e2, 8, _mm512_unpacklo_epi16, _mm512_unpackhi_epi16, 3)

/* the AVX-512 steps over `pixels` (a multiple of 64 / e) and, per step, the `slices` 16-byte slices of each pixel
 * group (T planes each): each case its own loop (the direction a constant) */
#define NPK_LINES512(fn, e, dir, gs, nt)                                                                   \
    for (int64_t w = 0; w < pixels; w += 64 / e)                                                           \
        for (int64_t j = 0; j < slices; j++)                                                               \
            fn(g + w * gs + j * 16, gs, p + (j * 16 / e) * ps + w * e, ps, dir, nt)
/* nt: non-temporal stores (every stored line 64-byte aligned; for outputs beyond the caches, whose lines then
 * are not read before they are written) */
__attribute__((target("avx512f,avx512bw"))) static void lines512(char *g, int64_t gs, char *p, int64_t ps,
                                                                 int64_t pixels, int64_t slices, int e,
                                                                 int to_planes, int nt)
{
    if (nt) {                           /* NC1HWC2 or planes stores, whole aligned lines */
        if (e == 1 && to_planes) NPK_LINES512(line512_e1, 1, 1, gs, 1);
        if (e == 1 && !to_planes) NPK_LINES512(line512_e1, 1, 0, 16, 1);
        if (e == 2 && to_planes) NPK_LINES512(line512_e2, 2, 1, gs, 1);
        if (e == 2 && !to_planes) NPK_LINES512(line512_e2, 2, 0, 16, 1);
        _mm_sfence();
    } else if (gs == 16) {              /* NC1HWC2: whole 64-byte loads and stores of four pixels */
        if (e == 1 && to_planes) NPK_LINES512(line512_e1, 1, 1, 16, 0);
        if (e == 1 && !to_planes) NPK_LINES512(line512_e1, 1, 0, 16, 0);
        if (e == 2 && to_planes) NPK_LINES512(line512_e2, 2, 1, 16, 0);
        if (e == 2 && !to_planes) NPK_LINES512(line512_e2, 2, 0, 16, 0);
    } else {
        if (e == 1 && to_planes) NPK_LINES512(line512_e1, 1, 1, gs, 0);
        if (e == 1 && !to_planes) NPK_LINES512(line512_e1, 1, 0, gs, 0);
        if (e == 2 && to_planes) NPK_LINES512(line512_e2, 2, 1, gs, 0);
        if (e == 2 && !to_planes) NPK_LINES512(line512_e2, 2, 0, gs, 0);
    }
}
#endif

static void transpose(const char *s, int64_t ss, char *d, int64_t ds, int64_t R, int64_t C, int e);

/* `pixels` pixel groups at g, gs bytes apart, of `slices` x 16 bytes (T = 16 / e lanes of e bytes per slice, all
 * of them channels) <-> slices x T planes at p, ps bytes apart: per step a line (64 bytes) of every plane, then
 * the tail pixels by `transpose`. NC1HWC2 blocks are one slice (gs = 16); NHWC rows of C channels C * e / 16. 0
 * when not this case (no x86, or an element size other than 1 and 2). */
static int groups_planes(char *g, int64_t gs, char *p, int64_t ps, int64_t pixels, int64_t slices, int e,
                         int to_planes, int large)
{
#ifdef NPK_X86
    if (e != 1 && e != 2)
        return 0;
    const int level = npk_level(), T = 16 / e;
    const int64_t step = 64 / e, C = slices * T;
    /* a head of pixels by `transpose` first when that aligns the 64-byte stores to lines: a store across two
     * lines costs two (in the 16 planes' few L1 sets, the 1.5 MiB case measured 0.45 of copyto against 0.68) */
    const int whole = to_planes || gs == 16;
    const uintptr_t at = (uintptr_t)(to_planes ? p : g) & 63, unit = to_planes ? (uintptr_t)e : 16;
    int64_t w = !whole || at % unit ? 0 : (int64_t)((64 - at) & 63) / (int64_t)unit;
    if (w > pixels || level < 1)
        w = 0;
    if (w) {
        if (to_planes) transpose(g, gs, p, ps, w, C, e);
        else transpose(p, ps, g, gs, C, w, e);
    }
    /* a destination larger than the caches: its lines streamed past them when every one is aligned and written
     * whole at once (AVX2 writes a plane line in two halves 16 planes apart: streamed, it measured 0.35 of copyto
     * against 0.53 cached) */
    const int nt = large && (to_planes ? level >= 2 && ps % 64 == 0 && ((uintptr_t)(p + w * e) & 63) == 0
                                       : level >= 1 && gs == 16 && ((uintptr_t)(g + w * gs) & 63) == 0);
    /* into planes without streaming, the AVX2 tiles at every level: on the AMD EPYC measured (512-bit shuffles
     * issued as two halves) they reach 0.68 of np.copyto on the 1.6 MB head map against 0.55 for the 512-bit lines
     * (five alternated runs) */
    if (level >= 2 && (nt || !to_planes)) {
        int64_t n = (pixels - w) / step * step;
        lines512(g + w * gs, gs, p + w * e, ps, n, slices, e, to_planes, nt);
        w += n;
    } else if (level >= 1) {                          /* two AVX2 tiles of 32 bytes per plane line */
        static const tile_fn rows[] = {0, rows_e1, rows_e2}, cols[] = {0, cols_e1, cols_e2};
        static const tile_fn cols_nt[] = {0, cols_e1_nt, cols_e2_nt};
        const tile_fn fn = to_planes ? rows[e] : (nt ? cols_nt : cols)[e];
        for (; w + step <= pixels; w += step)
            for (int64_t j = 0; j < slices; j++)
                for (int half = 0; half < 2; half++) {
                    const int64_t at_w = w + half * step / 2;
                    char *gh = g + at_w * gs + j * 16, *ph = p + j * T * ps + at_w * e;
                    if (to_planes) fn(gh, gs, ph, ps);
                    else fn(ph, ps, gh, gs);
                }
        if (nt)
            _mm_sfence();
    }
    if (w < pixels) {
        if (to_planes) transpose(g + w * gs, gs, p + w * e, ps, pixels - w, C, e);
        else transpose(p + w * e, ps, g + w * gs, gs, C, pixels - w, e);
    }
    return 1;
#else
    (void)g; (void)gs; (void)p; (void)ps; (void)pixels; (void)slices; (void)e; (void)to_planes;
    return 0;
#endif
}

#define NPK_BLOCK 64    /* rows and columns per cache block of a transpose */

/* dst[c * ds + r * e] = src[r * ss + c * e] for r < R, c < C (strides in bytes) */
static void transpose(const char *s, int64_t ss, char *d, int64_t ds, int64_t R, int64_t C, int e)
{
#ifdef NPK_X86
    if (e == 1 || e == 2 || e == 4) {
        static const tile_fn one[] = {0, tile_e1, tile_e2, 0, tile_e4};
        static const tile_fn two_cols[] = {0, cols_e1, cols_e2, 0, cols_e4};
        static const tile_fn two_rows[] = {0, rows_e1, rows_e2, 0, rows_e4};
        const int t = 16 / e, wide = npk_level() >= 1;
        /* two tiles at once along the longer side; the tile grid is (tr x tc) elements */
        const int by_cols = wide && C >= R, by_rows = wide && !by_cols;
        const int64_t tr = by_rows ? 2 * t : t, tc = by_cols ? 2 * t : t;
        const tile_fn fn = by_cols ? two_cols[e] : by_rows ? two_rows[e] : one[e];
        for (int64_t r0 = 0; r0 < R; r0 += NPK_BLOCK)
            for (int64_t c0 = 0; c0 < C; c0 += NPK_BLOCK) {
                int64_t r1 = r0 + NPK_BLOCK < R ? r0 + NPK_BLOCK : R, c1 = c0 + NPK_BLOCK < C ? c0 + NPK_BLOCK : C;
                int64_t rf = r0 + (r1 - r0) / tr * tr, cf = c0 + (c1 - c0) / tc * tc;
                for (int64_t r = r0; r < rf; r += tr)
                    for (int64_t c = c0; c < cf; c += tc)
                        fn(s + r * ss + c * e, ss, d + c * ds + r * e, ds);
                if (cf < c1) transpose_scalar(s + r0 * ss + cf * e, ss, d + cf * ds + r0 * e, ds, r1 - r0, c1 - cf, e);
                if (rf < r1) transpose_scalar(s + rf * ss + c0 * e, ss, d + c0 * ds + rf * e, ds, r1 - rf, cf - c0, e);
            }
        return;
    }
#endif
    transpose_scalar(s, ss, d, ds, R, C, e);
}

/* ---- layouts ---------------------------------------------------------------------------------------------- */

#define NPK_STAGE_BYTES (16 * 1024)     /* L1 scratch beside a converting transpose */

static int dims_ok(int64_t N, int64_t C, int64_t H, int64_t W, int64_t C1, int64_t C2, int64_t Ws,
                   int64_t c1_lo, int64_t c1_hi)
{
    return N >= 0 && C >= 0 && H >= 0 && W >= 0 && C2 >= 1 && C1 * C2 >= C && Ws >= W
        && 0 <= c1_lo && c1_lo <= c1_hi && c1_hi <= C1;
}

/* a layout conversion writing this many bytes or more streams its aligned 64-byte lines past the caches
 * (non-temporal stores): 16 MiB int8 NC1HWC2 <-> NCHW went from 0.7 of np.copyto to 1.1-1.2; at 1.6 MB streaming
 * measured half as fast (the output fits the caches its reader finds it in) */
#define NPK_STREAM_BYTES (8 << 20)

/* pixels per staged chunk: the scratch holds `lanes` planes of it in the wider of the two types */
static int64_t chunk_pixels(int64_t lanes)
{
    int64_t p = NPK_STAGE_BYTES / 4 / (lanes ? lanes : 1);
    p = p / 16 * 16;
    return p < 16 ? 16 : p;
}

int npk_planes_to_lanes(int conv, const void *src, int64_t sn, int64_t sc, int64_t sh, void *dst,
                        int64_t N, int64_t C, int64_t H, int64_t W, int64_t C1, int64_t C2, int64_t Wd,
                        int64_t c1_lo, int64_t c1_hi, float a, float b)
{
    if (bad_conv(conv) || !dims_ok(N, C, H, W, C1, C2, Wd, c1_lo, c1_hi))
        return -1;
    const int es = src_size(conv), ed = dst_size(conv);
    const int plain = conv <= NPK_COPY4;
    const int contiguous = sh == W && Wd == W;                 /* whole planes as one row of H * W pixels */
    const int large = N * C1 * H * Wd * C2 * ed >= NPK_STREAM_BYTES;
    const int64_t rows = contiguous ? 1 : H, width = contiguous ? H * W : W;
    int64_t P = plain ? (width ? width : 1) : chunk_pixels(C2);
    char *stage = plain ? NULL : malloc((size_t)(P * C2 * ed));
    if (!plain && !stage)
        return -1;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c1 = c1_lo; c1 < c1_hi; c1++) {
            char *block = (char *)dst + ((n * C1 + c1) * H * Wd * C2) * ed;
            int64_t k0 = c1 * C2, lanes = C - k0 < 0 ? 0 : (C - k0 < C2 ? C - k0 : C2);
            if (lanes == 0) { memset(block, 0, (size_t)(H * Wd * C2 * ed)); continue; }
            for (int64_t h = 0; h < rows; h++) {
                char *drow = block + h * Wd * C2 * ed;
                const char *srow = (const char *)src + (n * sn + k0 * sc + h * sh) * es;
                for (int64_t w0 = 0; w0 < width; w0 += P) {
                    int64_t p = width - w0 < P ? width - w0 : P;
                    if (plain && lanes < C2 && C2 * ed == 16
                        && pack_narrow(srow + w0 * es, sc * es, drow + w0 * 16, lanes, p, ed))
                        continue;
                    if (lanes < C2)                     /* padding lanes: the chunk zeroed once, then filled */
                        memset(drow + w0 * C2 * ed, 0, (size_t)(p * C2 * ed));
                    if (plain && lanes == C2 && C2 * ed == 16   /* NHWC rows (16-byte stores per pixel) gained
                                                                     nothing over `transpose` */
                        && groups_planes(drow + w0 * 16, 16, (char *)srow + w0 * es, sc * es, p, 1, ed, 0, large))
                        continue;
                    if (plain) {
                        transpose(srow + w0 * es, sc * es, drow + w0 * C2 * ed, C2 * ed, lanes, p, ed);
                    } else {
                        for (int64_t k = 0; k < lanes; k++)
                            cast_run(conv, srow + (k * sc + w0) * es, stage + k * p * ed, p, a, b);
                        transpose(stage, p * ed, drow + w0 * C2 * ed, C2 * ed, lanes, p, ed);
                    }
                }
                if (!contiguous && Wd > W)
                    memset(drow + W * C2 * ed, 0, (size_t)((Wd - W) * C2 * ed));
            }
        }
    free(stage);
    return 0;
}

int npk_lanes_to_planes(int conv, const void *src, void *dst, int64_t dn, int64_t dc, int64_t dh,
                        int64_t N, int64_t C, int64_t H, int64_t W, int64_t C1, int64_t C2, int64_t Ws,
                        int64_t c1_lo, int64_t c1_hi, float a, float b)
{
    if (bad_conv(conv) || !dims_ok(N, C, H, W, C1, C2, Ws, c1_lo, c1_hi))
        return -1;
    const int es = src_size(conv), ed = dst_size(conv);
    const int plain = conv <= NPK_COPY4;
    const int contiguous = dh == W && Ws == W;
    const int large = N * C * H * W * ed >= NPK_STREAM_BYTES;
    const int64_t rows = contiguous ? 1 : H, width = contiguous ? H * W : W;
    int64_t P = plain ? (width ? width : 1) : chunk_pixels(C2);
    char *stage = plain ? NULL : malloc((size_t)(P * C2 * es));
    if (!plain && !stage)
        return -1;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c1 = c1_lo; c1 < c1_hi; c1++) {
            const char *block = (const char *)src + ((n * C1 + c1) * H * Ws * C2) * es;
            int64_t k0 = c1 * C2, lanes = C - k0 < 0 ? 0 : (C - k0 < C2 ? C - k0 : C2);
            if (lanes == 0) continue;
            for (int64_t h = 0; h < rows; h++) {
                const char *srow = block + h * Ws * C2 * es;
                char *drow = (char *)dst + (n * dn + k0 * dc + h * dh) * ed;
                for (int64_t w0 = 0; w0 < width; w0 += P) {
                    int64_t p = width - w0 < P ? width - w0 : P;
                    if (plain && lanes == C2 && C2 * es % 16 == 0
                        && groups_planes((char *)srow + w0 * C2 * es, C2 * es, drow + w0 * es, dc * es, p,
                                         C2 * es / 16, es, 1, large))
                        continue;
                    if (plain) {
                        transpose(srow + w0 * C2 * es, C2 * es, drow + w0 * ed, dc * ed, p, lanes, es);
                    } else {
                        transpose(srow + w0 * C2 * es, C2 * es, stage, p * es, p, lanes, es);
                        for (int64_t k = 0; k < lanes; k++)
                            cast_run(conv, stage + k * p * es, drow + (k * dc + w0) * ed, p, a, b);
                    }
                }
            }
        }
    free(stage);
    return 0;
}

static inline void copy_group(char *d, const char *s, int64_t bytes)
{
    if (bytes == 16) memcpy(d, s, 16);
    else if (bytes == 8) memcpy(d, s, 8);
    else memcpy(d, s, (size_t)bytes);
}

int npk_regroup(int to_lanes, int e, const void *src, void *dst, int64_t N, int64_t C, int64_t H, int64_t W,
                int64_t C1, int64_t C2, int64_t Wsrc, int64_t Wdst)
{
    if ((e != 1 && e != 2 && e != 4 && e != 8) || N < 0 || C < 0 || H < 0 || W < 0 || C2 < 1 || C1 * C2 < C
        || Wsrc < W || Wdst < W)
        return -1;
    const char *s = src;
    char *d = dst;
    const int64_t group = C2 * e;
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t c1 = 0; c1 < C1; c1++) {
                int64_t k0 = c1 * C2, lanes = C - k0 < 0 ? 0 : (C - k0 < C2 ? C - k0 : C2);
                if (to_lanes) {
                    const char *sp = s + ((n * H + h) * Wsrc * C + k0) * e;
                    char *dp = d + (((n * C1 + c1) * H + h) * Wdst) * group;
                    if (lanes == C2) {
                        for (int64_t w = 0; w < W; w++) copy_group(dp + w * group, sp + w * C * e, group);
                    } else {
                        for (int64_t w = 0; w < W; w++) {
                            memcpy(dp + w * group, sp + w * C * e, (size_t)(lanes * e));
                            memset(dp + w * group + lanes * e, 0, (size_t)((C2 - lanes) * e));
                        }
                    }
                    if (Wdst > W) memset(dp + W * group, 0, (size_t)((Wdst - W) * group));
                } else if (lanes) {
                    const char *sp = s + (((n * C1 + c1) * H + h) * Wsrc) * group;
                    char *dp = d + ((n * H + h) * Wdst * C + k0) * e;
                    if (lanes == C2) {
                        for (int64_t w = 0; w < W; w++) copy_group(dp + w * C * e, sp + w * group, group);
                    } else {
                        for (int64_t w = 0; w < W; w++) memcpy(dp + w * C * e, sp + w * group, (size_t)(lanes * e));
                    }
                }
            }
    if (!to_lanes && Wdst > W)
        for (int64_t r = 0; r < N * H; r++) memset(d + (r * Wdst + W) * C * e, 0, (size_t)((Wdst - W) * C * e));
    return 0;
}

/* ---- depthwise conv ------------------------------------------------------------------------------------- */

static inline __attribute__((always_inline)) void depthwise_body(
    const float *x, int64_t xc1, int64_t xrow, int64_t xphase, int64_t c2, const float *w, int64_t wtap,
    int64_t wc1, const float *bias, int64_t bc1, float *acc, int64_t nc1, int64_t nrows, int64_t row,
    int kh, int kw, int sh, int sw)
{
    for (int64_t c = 0; c < nc1; c++)
        for (int64_t r = 0; r < nrows; r++) {
            float *restrict a = acc + (c * nrows + r) * row;
            for (int t = 0; t < kh * kw; t++) {
                int dy = t / kw, dx = t % kw;
                const float *restrict xs = x + c * xc1 + (dy + (int64_t)sh * r) * xrow + (dx % sw) * xphase
                                           + (int64_t)(dx / sw) * c2;
                const float *restrict ws = w + t * wtap + c * wc1;
                if (t == 0)
                    for (int64_t m = 0; m < row; m++) a[m] = xs[m] * ws[m];
                else
                    for (int64_t m = 0; m < row; m++) a[m] = a[m] + xs[m] * ws[m];
            }
            const float *restrict b = bias + c * bc1;
            for (int64_t m = 0; m < row; m++) a[m] = a[m] + b[m];
        }
}

static void depthwise_portable(const float *x, int64_t xc1, int64_t xrow, int64_t xphase, int64_t c2,
                               const float *w, int64_t wtap, int64_t wc1, const float *bias, int64_t bc1,
                               float *acc, int64_t nc1, int64_t nrows, int64_t row, int kh, int kw, int sh, int sw)
{
    depthwise_body(x, xc1, xrow, xphase, c2, w, wtap, wc1, bias, bc1, acc, nc1, nrows, row, kh, kw, sh, sw);
}

#ifdef NPK_X86
__attribute__((target("avx2")))
static void depthwise_avx2(const float *x, int64_t xc1, int64_t xrow, int64_t xphase, int64_t c2,
                           const float *w, int64_t wtap, int64_t wc1, const float *bias, int64_t bc1,
                           float *acc, int64_t nc1, int64_t nrows, int64_t row, int kh, int kw, int sh, int sw)
{
    depthwise_body(x, xc1, xrow, xphase, c2, w, wtap, wc1, bias, bc1, acc, nc1, nrows, row, kh, kw, sh, sw);
}

__attribute__((target("avx512f")))
static void depthwise_avx512(const float *x, int64_t xc1, int64_t xrow, int64_t xphase, int64_t c2,
                             const float *w, int64_t wtap, int64_t wc1, const float *bias, int64_t bc1,
                             float *acc, int64_t nc1, int64_t nrows, int64_t row, int kh, int kw, int sh, int sw)
{
    depthwise_body(x, xc1, xrow, xphase, c2, w, wtap, wc1, bias, bc1, acc, nc1, nrows, row, kh, kw, sh, sw);
}
#endif

int npk_depthwise_rows(const float *x, int64_t xc1, int64_t xrow, int64_t xphase, int64_t c2,
                       const float *w, int64_t wtap, int64_t wc1, const float *bias, int64_t bc1, float *acc,
                       int64_t nc1, int64_t nrows, int64_t row, int kh, int kw, int sh, int sw)
{
    if (nc1 < 0 || nrows < 0 || row < 0 || kh < 1 || kw < 1 || sh < 1 || sw < 1 || c2 < 1)
        return -1;
#ifdef NPK_X86
    int level = npk_level();
    if (level >= 2) {
        depthwise_avx512(x, xc1, xrow, xphase, c2, w, wtap, wc1, bias, bc1, acc, nc1, nrows, row, kh, kw, sh, sw);
        return 0;
    }
    if (level == 1) {
        depthwise_avx2(x, xc1, xrow, xphase, c2, w, wtap, wc1, bias, bc1, acc, nc1, nrows, row, kh, kw, sh, sw);
        return 0;
    }
#endif
    depthwise_portable(x, xc1, xrow, xphase, c2, w, wtap, wc1, bias, bc1, acc, nc1, nrows, row, kh, kw, sh, sw);
    return 0;
}

/* ---- image input -------------------------------------------------------------------------------------------- */

#define NPK_NORM_PIXELS 256

static inline __attribute__((always_inline)) void normalize_body(const uint8_t *x, float *y, const float *m,
                                                                   const float *s, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float v = (float)x[i] - m[i];
        y[i] = v / s[i];
    }
}

static void normalize_portable(const uint8_t *x, float *y, const float *m, const float *s, int64_t n)
{
    normalize_body(x, y, m, s, n);
}

#ifdef NPK_X86
__attribute__((target("avx2")))
static void normalize_avx2(const uint8_t *x, float *y, const float *m, const float *s, int64_t n)
{
    normalize_body(x, y, m, s, n);
}

__attribute__((target("avx512f,avx512bw")))
static void normalize_avx512(const uint8_t *x, float *y, const float *m, const float *s, int64_t n)
{
    normalize_body(x, y, m, s, n);
}
#endif

int npk_normalize_u8(const uint8_t *src, int64_t src_row, void *dst, int64_t dst_row, int conv, int64_t rows,
                     int64_t w, int64_t c, const float *mean, const float *std, float a, float b)
{
    if ((conv != NPK_COPY4 && conv != NPK_F32_F16 && conv != NPK_F32_I8) || rows < 0 || w < 0 || c < 1
        || src_row < w * c || dst_row < w * c)
        return -1;
    const int64_t chunk = NPK_NORM_PIXELS * c, ed = dst_size(conv);
    float *m = malloc((size_t)chunk * 4), *s = malloc((size_t)chunk * 4), *y = malloc((size_t)chunk * 4);
    if (!m || !s || !y) { free(m); free(s); free(y); return -1; }
    for (int64_t i = 0; i < chunk; i++) { m[i] = mean[i % c]; s[i] = std[i % c]; }
    int level = npk_level();
    for (int64_t r = 0; r < rows; r++) {
        const uint8_t *xr = src + r * src_row;
        char *dr = (char *)dst + r * dst_row * ed;
        for (int64_t i0 = 0; i0 < w * c; i0 += chunk) {
            int64_t n = w * c - i0 < chunk ? w * c - i0 : chunk;
#ifdef NPK_X86
            if (level >= 2) normalize_avx512(xr + i0, y, m, s, n);
            else if (level == 1) normalize_avx2(xr + i0, y, m, s, n);
            else
#endif
                normalize_portable(xr + i0, y, m, s, n);
            (void)level;
            cast_run(conv, y, dr + i0 * ed, n, a, b);
        }
        if (dst_row > w * c)
            memset(dr + w * c * ed, 0, (size_t)((dst_row - w * c) * ed));
    }
    free(m); free(s); free(y);
    return 0;
}

/* ---- table lookups ------------------------------------------------------------------------------------------ */

/* byte tables (256 one-byte entries indexed by bytes) in registers: AVX-512 VBMI permutes 128 entries per
 * instruction; AVX2 shuffles 16 per instruction and picks by the index's high nibble (a tree of 15 blends); the
 * tail (and the portable level) in scalar code. `mask16`: after the lookup, bytes at positions >= lanes of each
 * 16-byte group are zero. */
#ifdef NPK_X86
__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static int64_t lookup8_vbmi(const uint8_t *t, const uint8_t *a, uint8_t *o, int64_t n, int64_t lanes)
{
    const __m512i t0 = _mm512_loadu_si512((const void *)t), t1 = _mm512_loadu_si512((const void *)(t + 64));
    const __m512i t2 = _mm512_loadu_si512((const void *)(t + 128)), t3 = _mm512_loadu_si512((const void *)(t + 192));
    const __mmask64 keep = lanes >= 16 ? ~(__mmask64)0 : 0x0001000100010001ull * ((1u << lanes) - 1u);
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m512i x = _mm512_loadu_si512((const void *)(a + i));
        const __m512i lo = _mm512_permutex2var_epi8(t0, x, t1), hi = _mm512_permutex2var_epi8(t2, x, t3);
        const __m512i r = _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi);
        _mm512_storeu_si512((void *)(o + i), _mm512_maskz_mov_epi8(keep, r));
    }
    return i;
}

__attribute__((target("avx2")))
static int64_t lookup8_avx2(const uint8_t *t, const uint8_t *a, uint8_t *o, int64_t n, int64_t lanes)
{
    uint8_t keep_bytes[32];
    for (int k = 0; k < 32; k++) keep_bytes[k] = (k % 16) < lanes ? 0xFF : 0;
    const __m256i keep = _mm256_loadu_si256((const __m256i *)keep_bytes), low = _mm256_set1_epi8(0x0F);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(a + i)), lo = _mm256_and_si256(x, low);
        /* the 16 rows by the low nibble, paired by a tree of blends on the high nibble's bits 4, 5, 6, 7 (vpblendvb
         * reads each byte's top bit: x shifted left by 3, 2, 1, 0; the 16-bit shift keeps every byte's own bit),
         * depth first so that at most four partial results are live */
        const __m256i s4 = _mm256_slli_epi16(x, 3), s5 = _mm256_slli_epi16(x, 2), s6 = _mm256_slli_epi16(x, 1);
        __m256i half[2];
        for (int h = 0; h < 2; h++) {
            __m256i quad[2];
            for (int q = 0; q < 2; q++) {
                const uint8_t *rows = t + 128 * h + 64 * q;
                __m256i pair[2];
                for (int k = 0; k < 2; k++) {
                    const __m128i *row = (const __m128i *)(rows + 32 * k);
                    const __m256i r0 = _mm256_broadcastsi128_si256(_mm_loadu_si128(row));
                    const __m256i r1 = _mm256_broadcastsi128_si256(_mm_loadu_si128(row + 1));
                    pair[k] = _mm256_blendv_epi8(_mm256_shuffle_epi8(r0, lo), _mm256_shuffle_epi8(r1, lo), s4);
                }
                quad[q] = _mm256_blendv_epi8(pair[0], pair[1], s5);
            }
            half[h] = _mm256_blendv_epi8(quad[0], quad[1], s6);
        }
        _mm256_storeu_si256((__m256i *)(o + i), _mm256_and_si256(_mm256_blendv_epi8(half[0], half[1], x), keep));
    }
    return i;
}

static int has_vbmi(void)
{
    static int known = -1;
    if (known < 0) { __builtin_cpu_init(); known = __builtin_cpu_supports("avx512vbmi"); }
    return known;
}
#endif

/* o[i] = t[a[i]] for i < n, zero where i % 16 >= lanes (lanes 16: no zeros); n a multiple of 16 when lanes < 16 */
static void lookup8(const uint8_t *t, const uint8_t *a, uint8_t *o, int64_t n, int64_t lanes)
{
    int64_t i = 0;
#ifdef NPK_X86
    const int level = npk_level();
    if (level >= 2 && has_vbmi()) i = lookup8_vbmi(t, a, o, n, lanes);
    else if (level >= 1) i = lookup8_avx2(t, a, o, n, lanes);
#endif
    if (lanes >= 16)
        for (; i < n; i++) o[i] = t[a[i]];
    else                                /* whole 16-byte groups from here (n and the SIMD steps are multiples of 16) */
        for (; i < n; i += 16) {
            memset(o + i, 0, 16);
            for (int64_t k = 0; k < lanes; k++) o[i + k] = t[a[i + k]];
        }
}

int npk_lookup(const void *table, int out_size, const void *a, const void *b, int index, void *out, int64_t n)
{
    if ((out_size != 1 && out_size != 2) || index < 0 || index > 2 || n < 0 || (index == 2 && !b))
        return -1;
    if (out_size == 1 && index == 0) {
        lookup8(table, a, out, n, 16);
        return 0;
    }
    const uint8_t *a8 = a, *b8 = b;
    const uint16_t *a16 = a;
    if (out_size == 2) {
        const uint16_t *t = table;
        uint16_t *o = out;
        if (index == 1) for (int64_t i = 0; i < n; i++) o[i] = t[a16[i]];
        else if (index == 0) for (int64_t i = 0; i < n; i++) o[i] = t[a8[i]];
        else for (int64_t i = 0; i < n; i++) o[i] = t[(uint32_t)a8[i] << 8 | b8[i]];
    } else {
        const uint8_t *t = table;
        uint8_t *o = out;
        if (index == 1) for (int64_t i = 0; i < n; i++) o[i] = t[a16[i]];
        else if (index == 0) for (int64_t i = 0; i < n; i++) o[i] = t[a8[i]];
        else for (int64_t i = 0; i < n; i++) o[i] = t[(uint32_t)a8[i] << 8 | b8[i]];
    }
    return 0;
}

#define NPK_LOOKUP_LANES(T, INDEX)                                                                         \
    do {                                                                                                   \
        const T *t = table;                                                                                \
        T *o = out;                                                                                        \
        for (int64_t p = 0; p < pixels; p++, o += c2) {                                                    \
            const int64_t i0 = p * c2;                                                                     \
            if (c2 * (int64_t)sizeof(T) == 16) memset(o, 0, 16);   /* one store, not a memset call */       \
            else for (int64_t k = lanes; k < c2; k++) o[k] = 0;                                            \
            for (int64_t k = 0; k < lanes; k++) { const int64_t i = i0 + k; o[k] = t[INDEX]; }             \
        }                                                                                                  \
    } while (0)

int npk_lookup_lanes(const void *table, int out_size, const void *a, const void *b, int index, void *out,
                     int64_t pixels, int64_t c2, int64_t lanes)
{
    if ((out_size != 1 && out_size != 2) || index < 0 || index > 2 || pixels < 0 || c2 < 1 || lanes < 0
        || lanes > c2 || (index == 2 && !b))
        return -1;
    if (out_size == 1 && index == 0 && c2 == 16) {
        lookup8(table, a, out, pixels * 16, lanes);
        return 0;
    }
    const uint8_t *a8 = a, *b8 = b;
    const uint16_t *a16 = a;
    if (out_size == 2) {
        if (index == 1) NPK_LOOKUP_LANES(uint16_t, a16[i]);
        else if (index == 0) NPK_LOOKUP_LANES(uint16_t, a8[i]);
        else NPK_LOOKUP_LANES(uint16_t, (uint32_t)a8[i] << 8 | b8[i]);
    } else {
        if (index == 1) NPK_LOOKUP_LANES(uint8_t, a16[i]);
        else if (index == 0) NPK_LOOKUP_LANES(uint8_t, a8[i]);
        else NPK_LOOKUP_LANES(uint8_t, (uint32_t)a8[i] << 8 | b8[i]);
    }
    return 0;
}

/* ---- float16 and int8 elementwise -------------------------------------------------------------------------- */

/* out = cast_out(act(cast_in(a) op cast_in(b))) in blocks of 256 float32 values; q: the (scale, shift) pairs of a,
   b and out for the casts (NULL: none); act 0 none, 1 Relu as np.maximum(y, 0) (a tie gives the 0, NaN kept),
   2 Clip as np.clip(y, lo, hi) (a tie keeps y, NaN kept) */
/* ta = act(ta op tb) (tb op ta with swap: Sub) in float32: numpy's ufunc, then np.maximum(y, 0) (act 1: NaN kept)
 * or np.clip(y, lo, hi) (act 2) */
static void combine(int op, int swap, float *ta, const float *tb, int64_t m, int act, float lo, float hi)
{
    if (op == 0) for (int64_t i = 0; i < m; i++) ta[i] = ta[i] + tb[i];
    else if (op == 1 && swap) for (int64_t i = 0; i < m; i++) ta[i] = tb[i] - ta[i];
    else if (op == 1) for (int64_t i = 0; i < m; i++) ta[i] = ta[i] - tb[i];
    else for (int64_t i = 0; i < m; i++) ta[i] = ta[i] * tb[i];
    if (act == 1)
        for (int64_t i = 0; i < m; i++) ta[i] = ta[i] > 0.0f || ta[i] != ta[i] ? ta[i] : 0.0f;
    else if (act == 2)
        for (int64_t i = 0; i < m; i++) {
            const float v = ta[i] < lo ? lo : ta[i];
            ta[i] = v > hi ? hi : v;
        }
}

static int binary_run(int op, const void *a, const void *b, void *out, int64_t n, int conv_in, int conv_out,
                      int item, const float *q, int act, float lo, float hi)
{
    static const float none[6] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    if (op < 0 || op > 2 || n < 0)
        return -1;
    if (!q)
        q = none;
    float ta[256], tb[256];
    for (int64_t i0 = 0; i0 < n; i0 += 256) {
        const int64_t m = n - i0 < 256 ? n - i0 : 256;
        cast_run(conv_in, (const char *)a + i0 * item, ta, m, q[0], q[1]);
        cast_run(conv_in, (const char *)b + i0 * item, tb, m, q[2], q[3]);
        combine(op, 0, ta, tb, m, act, lo, hi);
        cast_run(conv_out, ta, (char *)out + i0 * item, m, q[4], q[5]);
    }
    return 0;
}

int npk_binary_f16(int op, const uint16_t *a, const uint16_t *b, uint16_t *out, int64_t n, int act, float lo,
                   float hi)
{
    if (act < 0 || act > 2)
        return -1;
    return binary_run(op, a, b, out, n, NPK_F16_F32, NPK_F32_F16, 2, NULL, act, lo, hi);
}

/* tb[0, m) = the broadcast operand of elements first, first + 1, ...: b[(e / inner) * c2 + e % c2] */
static void bcast_fill(float *tb, int64_t m, const float *b, int64_t first, int64_t inner, int64_t c2)
{
    for (int64_t i = 0; i < m;) {
        const int64_t e = first + i, off = e % inner, run = inner - off < m - i ? inner - off : m - i;
        const float *bv = b + e / inner * c2;
        int64_t j = 0, ph = off % c2;
        for (; j < run && ph; j++, ph = ph + 1 == c2 ? 0 : ph + 1) tb[i + j] = bv[ph];
        for (; j + c2 <= run; j += c2) memcpy(tb + i + j, bv, (size_t)c2 * sizeof(float));
        for (int64_t k = 0; j < run; j++, k++) tb[i + j] = bv[k];
        i += run;
    }
}

int npk_binary_f16_bcast(int op, int swap, const uint16_t *a, const float *b, uint16_t *out, int64_t n,
                         int64_t first, int64_t inner, int64_t c2, int act, float lo, float hi)
{
    if (op < 0 || op > 2 || n < 0 || first < 0 || inner < 1 || c2 < 1 || inner % c2 || act < 0 || act > 2)
        return -1;
    float ta[256], tb[256];
    int64_t held = -1;                  /* the block of b whose pattern tb holds from phase 0, if any */
    for (int64_t i0 = 0; i0 < n; i0 += 256) {
        const int64_t m = n - i0 < 256 ? n - i0 : 256, e = first + i0;
        cast_run(NPK_F16_F32, a + i0, ta, m, 0.0f, 0.0f);
        const int whole = m == 256 && e % inner + 256 <= inner && e % c2 == 0 && 256 % c2 == 0;
        if (!whole || held != e / inner) {
            bcast_fill(tb, m, b, e, inner, c2);
            held = whole ? e / inner : -1;
        }
        combine(op, swap, ta, tb, m, act, lo, hi);
        cast_run(NPK_F32_F16, ta, out + i0, m, 0.0f, 0.0f);
    }
    return 0;
}

int npk_binary_i8(int op, const int8_t *a, const int8_t *b, int8_t *out, int64_t n, const float *q)
{
    return binary_run(op, a, b, out, n, NPK_I8_F32, NPK_F32_I8, 1, q, 0, 0.0f, 0.0f);
}

/* ---- strided fill ------------------------------------------------------------------------------------------------ */

int npk_fill(void *dst, int ndim, const int64_t *shape, const int64_t *strides, const void *value, int size)
{
    if (ndim < 1 || ndim > 8 || size < 1 || size > 8 || strides[ndim - 1] != size)
        return -1;
    int64_t total = 1;
    for (int k = 0; k < ndim; k++) {
        if (shape[k] < 0)
            return -1;
        total *= shape[k];
    }
    if (total == 0)
        return 0;
    const int64_t run = shape[ndim - 1] * size;
    int zero = 1;
    for (int i = 0; i < size; i++)
        zero &= ((const char *)value)[i] == 0;
    int64_t index[8] = {0};
    /* a non-zero value: the first row filled once and copied onto the others, where every row starts on an item
       boundary of every other (then even overlapping rows hold the same bytes) */
    int aligned = 1;
    for (int k = 0; k < ndim - 1; k++)
        aligned &= strides[k] % size == 0;
    const char *first = NULL;
    for (int64_t rows = total / shape[ndim - 1]; rows > 0; rows--) {
        char *d = dst;
        for (int k = 0; k < ndim - 1; k++)
            d += index[k] * strides[k];
        if (zero && run == 8) {     /* an int8 NC1HWC2 slot's padding lanes: a half block */
            memset(d, 0, 8);
        } else if (zero) {
            memset(d, 0, (size_t)run);
        } else if (first) {
            memmove(d, first, (size_t)run);
        } else {                    /* one item, then the filled part copied onto the rest, doubling */
            memcpy(d, value, (size_t)size);
            for (int64_t done = size; done < run; done *= 2)
                memcpy(d + done, d, (size_t)(run - done < done ? run - done : done));
            first = aligned ? d : NULL;
        }
        for (int k = ndim - 2; k >= 0; k--) {
            if (++index[k] < shape[k])
                break;
            index[k] = 0;
        }
    }
    return 0;
}
