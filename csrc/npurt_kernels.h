/* npurt's compiled kernels: pure functions over caller-owned buffers (no state but the chosen instruction set).
 * Every function returns 0, or -1 when an argument is out of range (nothing is written then). */
#include <stdint.h>
#include <stddef.h>

/* conversions: the element kinds a kernel reads and writes */
enum npk_conv {
    NPK_COPY1 = 0,   /* 1-byte elements, unchanged */
    NPK_COPY2 = 1,   /* 2-byte elements, unchanged */
    NPK_COPY4 = 2,   /* 4-byte elements, unchanged */
    NPK_F32_F16 = 3, /* float32 -> float16, round to nearest even */
    NPK_F16_F32 = 4, /* float16 -> float32 (exact) */
    NPK_F32_I8 = 5,  /* float32 -> int8: rint(x * a + b), saturated to [-128, 127], NaN -> 0 */
    NPK_I8_F32 = 6   /* int8 -> float32: q * a - b */
};

/* instruction sets: 0 portable C, 1 AVX2 + F16C, 2 AVX-512 (F, BW, VL), 3 AVX-512 + VNNI (the int8 conv's
 * vpdpbusd; every other kernel runs its AVX-512 code there) */
int npk_cpu_level(void);
int npk_set_level(int level);
int npk_level(void);

/* dst[i] = conv(src[i]) for n contiguous elements */
int npk_cast(int conv, const void *src, void *dst, int64_t n, float a, float b);

/* dst[idx] = conv(src[idx]) over an ndim-D index space (ndim <= 8); strides in bytes */
int npk_cast_nd(int conv, int ndim, const int64_t *shape, const void *src, const int64_t *src_strides,
                void *dst, const int64_t *dst_strides, float a, float b);

/* planes -> lanes: src element (n, c, h, w) at n*sn + c*sc + h*sh + w (elements of the source type) goes to
 * dst (n, c / c2, h, w, c % c2) of a C-contiguous (N, C1, H, Wd, C2) array; lanes c >= C, pixels w >= W and
 * blocks past ceil(C / C2) are zero. Blocks [c1_lo, c1_hi) only (the rest is untouched). */
int npk_planes_to_lanes(int conv, const void *src, int64_t sn, int64_t sc, int64_t sh, void *dst,
                        int64_t N, int64_t C, int64_t H, int64_t W, int64_t C1, int64_t C2, int64_t Wd,
                        int64_t c1_lo, int64_t c1_hi, float a, float b);

/* lanes -> planes: src (n, c1, h, w, k) of a C-contiguous (N, C1, H, Ws, C2) array goes to dst element
 * (n, c1 * C2 + k, h, w) at n*dn + c*dc + h*dh + w, for channels c < C and pixels w < W; blocks [c1_lo, c1_hi). */
int npk_lanes_to_planes(int conv, const void *src, void *dst, int64_t dn, int64_t dc, int64_t dh,
                        int64_t N, int64_t C, int64_t H, int64_t W, int64_t C1, int64_t C2, int64_t Ws,
                        int64_t c1_lo, int64_t c1_hi, float a, float b);

/* whole C2 groups between NHWC and NC1HWC2 (same element size e): to_lanes = 1 reads a C-contiguous NHWC
 * (N, H, Wsrc, C) and writes a C-contiguous NC1HWC2 (N, C1, H, Wdst, C2), padding lanes, pixels and blocks zero;
 * to_lanes = 0 reads NC1HWC2 (N, C1, H, Wsrc, C2) and writes NHWC (N, H, Wdst, C), pixels >= W zero. */
int npk_regroup(int to_lanes, int e, const void *src, void *dst, int64_t N, int64_t C, int64_t H, int64_t W,
                int64_t C1, int64_t C2, int64_t Wsrc, int64_t Wdst);

/* depthwise conv taps in float32, rows of `row` = Wo * C2 values: for each block c < nc1 and output row r < nrows,
 * acc[c, r, :] = x(t0) * w[t0] + x(t1) * w[t1] + ... (in tap order, each product rounded, no fused multiply-add),
 * then + bias[c]; tap t = dy * kw + dx reads x + c * xc1 + (dy + sh * r) * xrow + (dx % sw) * xphase
 * + (dx / sw) * c2 (a phase-split padded input) and weights w + t * wtap + c * wc1 (tiled along the row). */
int npk_depthwise_rows(const float *x, int64_t xc1, int64_t xrow, int64_t xphase, int64_t c2,
                       const float *w, int64_t wtap, int64_t wc1, const float *bias, int64_t bc1, float *acc,
                       int64_t nc1, int64_t nrows, int64_t row, int kh, int kw, int sh, int sw);

/* image input: rows of w pixels of c uint8 channels (src rows `src_row` bytes apart) to (x - mean[k]) / std[k] in
 * float32 (numpy's subtract, then divide), stored by `conv` (NPK_COPY4: float32, NPK_F32_F16, or NPK_F32_I8 with
 * a = 1 / scale, b = zp) into dst rows `dst_row` elements apart; pixels w.. of each dst row up to dst_row / c are
 * zero. */
int npk_normalize_u8(const uint8_t *src, int64_t src_row, void *dst, int64_t dst_row, int conv, int64_t rows,
                     int64_t w, int64_t c, const float *mean, const float *std, float a, float b);

/* int8 conv in int32 (npurt_int8.c): out[pix, j] = sum_k x[pix, k] * w[k, j] - zp * colsum[j] over the taps
 * (dy, dx), input blocks c and lanes l of a padded input x (C1, Hp, Wp, CC) whose border holds the zero point zp;
 * k = ((dy * kw + dx) * C1 + c) * CC + l; then f = float(acc) * mult[j] + bias[j] (float32, no fused multiply-add)
 * and, when `out` is set, int8(rint(min(max(f, lo), hi))) at out + (j / 16) * out_plane + pix * 16 (an NC1HWC2
 * slot with C2 = 16), else f at y[pix * n + j]. Output pixels [q_lo, q_hi) (pix = oy * wo + ox).
 * act 1 (with `out`): f is first replaced by swish(f) * inv_scale + out_zp, swish(f) = f / (1 + e^(-alpha f)) with
 * e^z in float32 basic operations only (Cephes expf: z clamped to [-87, 87], n = rint(z log2 e), two-part
 * reduction, degree-5 polynomial, times 2^n), the sequence `npurt.exec.inplace.epilogue.swish_codes` runs in numpy. */
struct npk_conv8 {
    const int8_t *x;
    int64_t c1, hp, wp, cc;
    int32_t kh, kw, sh, sw, dh, dw;
    int64_t ho, wo, n;
    const void *w;
    int32_t level;
    const int32_t *colsum;
    int32_t zp;
    const float *mult;
    const float *bias;
    float lo, hi;
    int8_t *out;
    int64_t out_plane;
    float *y;
    int16_t *wide;
    int64_t wide_stride;
    int32_t act;
    float alpha, inv_scale, out_zp;
};

/* bytes of the weights (k, n) packed for instruction set `level` (w, k % 4 == 0, n % 16 == 0) */
int64_t npk_conv8_packed_size(int64_t k, int64_t n, int level);
int npk_conv8_pack(const int8_t *w, int64_t k, int64_t n, void *packed, int level);
/* `wide` (levels 1, 2): a scratch of c1 * hp * wp * cc int16 per thread that runs parts of the call, the thread of
 * slot s (npk_thread_slot) using wide + s * wide_stride */
int npk_conv8(const struct npk_conv8 *p, int64_t q_lo, int64_t q_hi);
/* the machine's int8 multiply-add limit, for the bench: `iters` rounds of 8 independent register-only chains of
 * kind 0 vpmaddwd + vpaddd on int16 (the AVX2 conv's exact mix), 1 vpmaddubsw + vpmaddwd + vpaddd on u8 x s8
 * (saturating: a reference only), 2 vpdpbusd on zmm (the VNNI conv's); returns the multiply-adds done, 0 when the
 * CPU lacks the instructions */
int64_t npk_int8_peak(int kind, int64_t iters);

/* float32 conv of float16 values (npurt_convf.c): y[pix, j] = sum over k = 0..K-1 in order of x[pix, k] * w[k, j],
 * then + bias[j], over a padded input x (C1, Hp, Wp, CC) with k = ((dy * kw + dx) * C1 + b) * CC + c (block b, lane
 * c; NC1HWC2, or NHWC as C1 = 1) and w[k, j] stored at w + (j / 16) * K * 16 + k * 16 + j % 16 (16-channel blocks,
 * each K x 16 contiguous), n a multiple of 16; when `out` is set, the activation `act` (0 none, 1 Relu, 2 Clip to [p0, p1], 3 LeakyRelu with
 * alpha p0) and a float16 store of channels j < out_channels at out + (j / out_c2) * out_plane + pix * out_c2
 * + j % out_c2 (an NC1HWC2 slot), else the float32 sum into y (pix, n). Output pixels [q_lo, q_hi). */
struct npk_convf {
    const float *x;
    int64_t c1, hp, wp, cc;
    int32_t kh, kw, sh, sw, dh, dw;
    int64_t ho, wo, n;
    const float *w;
    const float *bias;
    int32_t act;
    float p0, p1;
    uint16_t *out;
    int64_t out_c2, out_channels, out_plane;
    float *y;
};
int npk_convf(const struct npk_convf *p, int64_t q_lo, int64_t q_hi);

/* depthwise conv straight from an NC1HWC2 slot (npurt_convf.c): x (C1, H, Ws, C2) float16 (xtype 0) or int8 codes
 * (xtype 1) read as float32, inputs outside the H x W image (pads top pt, left pl) read as `border`; for each block c,
 * output pixel and lane, acc = x(t0) * wt[t0] + x(t1) * wt[t1] + ... over taps t = dy * kw + dx in order (each
 * product rounded, no fused multiply-add), then + bias[c]; wt (kh * kw, C1, C2), bias (C1, C2). Stored by `mode`:
 * 0 float16 after the activation `act` (as npk_convf), 1 int8 of rint(clamp(acc, p0, p1)), 2 float32 into y;
 * outputs (C1, Ho, Wo, C2) C-contiguous. Blocks [c_lo, c_hi). */
struct npk_dw {
    const void *x;
    int32_t xtype;
    int64_t c1, h, w, ws, c2;
    float border;
    int32_t kh, kw, sh, sw, pt, pl;
    int64_t ho, wo;
    const float *wt;
    const float *bias;
    int32_t mode, act;
    float p0, p1;
    void *out;
    float *y;
};
int npk_depthwise(const struct npk_dw *p, int64_t c_lo, int64_t c_hi);

/* table lookups: out[i] = table[index of i], tables of out_size-byte entries (1 or 2); index 0: a[i] (uint8, a
 * 256-entry table), 1: a[i] (uint16, 65536 entries), 2: a[i] << 8 | b[i] (two uint8, 65536 entries) */
int npk_lookup(const void *table, int out_size, const void *a, const void *b, int index, void *out, int64_t n);

/* the same over `pixels` groups of c2 entries of which the first `lanes` are looked up and the rest set to 0 (an
 * NC1HWC2 block whose last lanes are channel padding) */
int npk_lookup_lanes(const void *table, int out_size, const void *a, const void *b, int index, void *out,
                     int64_t pixels, int64_t c2, int64_t lanes);

/* out[i] = float16(float32(a[i]) op float32(b[i])) for float16 arrays, op 0 add, 1 subtract, 2 multiply (numpy's
 * ufunc with dtype=float32, then the casting store); act 1: a fused Relu (np.maximum(y, 0)), 2: a fused Clip
 * (np.clip(y, lo, hi)) on the float32 result, 0: none */
int npk_binary_f16(int op, const uint16_t *a, const uint16_t *b, uint16_t *out, int64_t n, int act, float lo,
                   float hi);

/* out[i] = float16(act(float32(a[i]) op B[i])) as npk_binary_f16, B (float32) broadcast: element e = first + i takes
 * b[(e / inner) * c2 + e % c2] (a scalar: inner = n, c2 = 1; a per-channel vector over an NC1HWC2 slot: inner =
 * H * W * C2, c2 = C2); swap: B op a (Sub) */
int npk_binary_f16_bcast(int op, int swap, const uint16_t *a, const float *b, uint16_t *out, int64_t n,
                         int64_t first, int64_t inner, int64_t c2, int act, float lo, float hi);

/* every element of the strided array dst (ndim <= 8 axes, byte strides, the last axis contiguous) = the `size`-byte
 * `value` (size <= 8) */
int npk_fill(void *dst, int ndim, const int64_t *shape, const int64_t *strides, const void *value, int size);

/* out = int8 codes (NPK_F32_I8 with q[4], q[5]) of A op B, A = a * q[0] - q[1] and B = b * q[2] - q[3] (NPK_I8_F32),
 * op 0 add, 1 subtract, 2 multiply, all in float32: the int8 slots' dequantise, numpy's ufunc, quantise */
int npk_binary_i8(int op, const int8_t *a, const int8_t *b, int8_t *out, int64_t n, const float *q);

/* MaxPool straight from an NC1HWC2 slot (npurt_pool.c): x (planes, h, w, c2) C-contiguous float16 (xtype 0) or int8
 * codes (xtype 1); y (planes, ho, wo, c2) = the max over the taps inside the image of each window (kernel kh x kw,
 * strides, dilations, pads top pt / left pl), as numpy's np.maximum folds it (NaN met first kept, ties the later
 * tap); int8 with `table`: table[max], except lanes >= `lanes` of every c1-th plane (the last C1 block of an
 * image, whose lanes past the channels stay 0). Planes [plane_lo, plane_hi); -1 (nothing
 * written) when a window has no tap inside the image. */
struct npk_pool {
    const void *x;
    int32_t xtype;
    int64_t planes, h, w, c2;
    int32_t kh, kw, sh, sw, dh, dw, pt, pl;
    int64_t ho, wo;
    void *y;
    const uint8_t *table;
    int64_t c1, lanes;
};
int npk_max_pool(const struct npk_pool *p, int64_t plane_lo, int64_t plane_hi);

/* GlobalAveragePool straight from an NC1HWC2 slot (npurt_pool.c): x (c1, hw, c2) float16 (xtype 0) or int8 codes
 * (xtype 1, read as q * scale - shift), each lane's hw values summed as numpy's float32 add.reduce sums a contiguous
 * row (pairwise), divided by hw as true_divide by an intp does (in double), stored into out (c1, c2) as float16 or as
 * int8 codes rint(v * inv + zp) (NPK_F32_I8); lanes >= channels stored as 0. c2 <= 64 */
int npk_global_avg_pool(const void *x, int xtype, int64_t c1, int64_t hw, int64_t c2, float scale, float shift,
                        int64_t channels, float inv, float zp, void *out);

/* parts of one kernel call run in parallel (npurt_threads.c): part k is kernel `kind`'s (struct structs[k], pixels,
 * blocks or elements [bounds[2k], bounds[2k + 1])); the caller and up to threads - 1 persistent worker threads claim them in
 * turn (nparts, threads <= 64). 0, or -1 when a part returned -1 or the arguments are out of range. */
enum npk_part_kind { NPK_PART_CONVF = 0, NPK_PART_CONV8 = 1, NPK_PART_DEPTHWISE = 2, NPK_PART_MAX_POOL = 3,
                     NPK_PART_CAST = 4, NPK_PART_LOOKUP = 5, NPK_PART_BINARY = 6, NPK_PART_LAYOUT = 7 };
/* one npk_planes_to_lanes (to_lanes 1; s* the source's strides, W1 its Wd) or npk_lanes_to_planes call (to_lanes
 * 0; s* the destination's strides, W1 its Ws) (parts: ranges of its C1 blocks) */
struct npk_layout_call {
    int32_t conv, to_lanes;
    const void *src;
    void *dst;
    int64_t sn, sc, sh, n, c, h, w, c1, c2, w1;
    float a, b;
};
/* the arguments of one npk_cast_nd call (parts: ranges of its axis `axis`) */
struct npk_cast_call {
    int32_t conv, ndim, axis;
    int64_t shape[8], src_strides[8], dst_strides[8];
    const void *src;
    void *dst;
    float a, b;
};
/* one npk_lookup call (parts: element ranges), or npk_lookup_lanes when c2 > 0 (parts: ranges of its groups) */
struct npk_lookup_call {
    const void *table, *a, *b;
    void *out;
    int32_t out_size, index;
    int64_t n, c2, lanes;
};
/* one npk_binary_f16 (q NULL, inner 0), npk_binary_f16_bcast (inner > 0; b float32) or npk_binary_i8 call (parts:
 * element ranges) */
struct npk_binary_call {
    int32_t op, act, swap;
    const void *a, *b;
    void *out;
    int64_t n, inner, c2;
    float lo, hi;
    const float *q;
};
int npk_run_parts(int kind, void *const *structs, const int64_t *bounds, int nparts, int threads);
/* the calling thread's slot in npk_run_parts' calls: 0 for a caller, k for worker k (1, 2, ...): the index of its
 * per-thread scratch */
int npk_thread_slot(void);
