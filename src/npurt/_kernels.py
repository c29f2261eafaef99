"""The compiled kernels: casts, quantisation and NC1HWC2 / NCHW / NHWC transposes in C (`npurt._kernels_c`, built
from csrc/ by the package's own build), with the instruction set chosen at run time (AVX-512 with VNNI, AVX-512,
AVX2 + F16C, or portable C) and the GIL released inside every call.

Pure functions over numpy buffers, importable by every layer. Each returns True when it did the work and False when
the arrays are not a case it handles (a dtype pair, a stride): the caller then runs its numpy code, which stays the
reference the results are bit-identical to. `NPURT_NATIVE=0` in the environment turns every kernel off (the
pure-numpy path); `NPURT_NATIVE_LEVEL=avx2` (or portable, avx512) caps the instruction set, to measure a laptop's
path on a bigger CPU; `set_enabled` and `set_level` do the same from Python (tests compare every instruction set).
The conv and pool steps split their rows over `$NPURT_EXEC_THREADS` threads (default 1, read at bind): one C call
runs the parts on persistent worker threads (csrc/npurt_threads.c).
"""
from __future__ import annotations

import os

import numpy as np

try:
    from npurt._kernels_c import ffi, lib
    BUILD_ERROR = ""
except ImportError as exc:            # not built (an un-installed source tree): every kernel answers False
    ffi = lib = None
    BUILD_ERROR = (f"npurt._kernels_c is not built ({exc}): install the package (`make`, `pip install .`), or in a "
                   "source tree run `python setup.py build_ext --inplace`")

LEVELS = ("portable", "avx2", "avx512", "avx512vnni")
_F16, _F32, _I8 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int8)
# (source dtype, destination dtype) -> conversion code of npurt_kernels.h (same-size copies keyed by item size)
# int8 -> float32 is the dequantisation q * 1 - 0 (exact); float32 -> int8 is not a cast here (see `quantize`)
_CASTS = {(_F32, _F16): 3, (_F16, _F32): 4, (_I8, _F32): 6}
_COPIES = {1: 0, 2: 1, 4: 2}
_QUANTIZE, _DEQUANTIZE = 5, 6
_enabled = lib is not None and os.environ.get("NPURT_NATIVE", "1") != "0"


def exec_threads() -> int:
    """Threads a compiled step splits its work over (dense convs: output pixels or, on small maps, channel blocks;
    depthwise, pools, layout conversions: C1 blocks; copies of SPLIT_BYTES or more: rows; lookups and elementwise
    ops: elements):
    $NPURT_EXEC_THREADS if a positive integer, else 1. Read when a step is prepared (at bind)."""
    v = os.environ.get("NPURT_EXEC_THREADS", "")
    return int(v) if v.isdigit() and int(v) > 0 else 1


# the C kernels a step's parts can run in parallel (enum npk_part_kind); from "cast" on through their call structs
PART_KINDS = {"convf": 0, "conv8": 1, "depthwise": 2, "max_pool": 3, "cast": 4, "lookup": 5, "binary": 6,
              "layout": 7}
DIRECT_KINDS = ("convf", "conv8", "depthwise", "max_pool")     # npk_<kind>(struct, lo, hi) callable on its own
SPLIT_BYTES = 1 << 15       # a copy, lookup or elementwise call splits over the threads from this many output bytes
TILE_PIXELS = 8             # a dense conv's parts start at multiples of 8 pixels (its tiles are 6, 8 or 12)


def _row_parts(rows: int, align: int = 1) -> list[tuple[int, int]]:
    """[lo, hi) ranges splitting `rows` over exec_threads() (at most one per row; bounds multiples of `align`)."""
    t = max(1, min(exec_threads(), -(-rows // align)))
    bounds = [min(rows, (rows * k // t + align // 2) // align * align) for k in range(t)] + [rows]
    return [(lo, hi) for lo, hi in zip(bounds, bounds[1:]) if hi > lo]


def _parallel(kind: str, parts: list):
    """A zero-argument function running kernel `kind` on every (struct, lo, hi) part: one C call, the parts claimed
    by the calling thread and the module's persistent worker threads (`npk_run_parts`)."""
    if len(parts) == 1 and kind in DIRECT_KINDS:     # the others' structs are arguments for npk_run_parts only
        call, args = getattr(lib, f"npk_{kind}"), parts[0]
        return lambda: call(*args)
    structs = ffi.new("void *[]", [ffi.cast("void *", p) for p, _, _ in parts])
    bounds = ffi.new("int64_t[]", [v for _, lo, hi in parts for v in (lo, hi)])
    args, run_parts = (PART_KINDS[kind], structs, bounds, len(parts), exec_threads()), lib.npk_run_parts

    def run() -> None:
        run_parts(*args)
    run.parts = (parts, structs, bounds)
    return run


def _few_pixels(pixels: int, n: int) -> bool:
    """Whether a conv with `pixels` outputs of `n` channels splits over the threads by 16-channel blocks (too few
    pixel tiles to share out evenly, e.g. a classifier's 1 x 1 map) instead of by pixels."""
    return exec_threads() > 1 and pixels <= 4 * TILE_PIXELS and n // 16 >= 2


def _splits(units: int, unit_bytes: int) -> bool:
    """Whether a copy, lookup or elementwise call over `units` of `unit_bytes` output bytes runs as parts: several
    threads are set and it writes at least SPLIT_BYTES."""
    return units > 1 and units * unit_bytes >= SPLIT_BYTES and exec_threads() > 1


def _split(kind: str, struct, units: int, unit_bytes: int, serial):
    """The prepared call `serial` as `kind`'s parts over [0, units) (`struct` its arguments, a struct npk_*_call;
    parts of whole cache lines)."""
    run = _parallel(kind, [(struct, lo, hi) for lo, hi in _row_parts(units, max(1, 64 // unit_bytes))])
    run.arrays = (struct, serial.arrays)
    return run


def available() -> bool:
    """Whether the compiled module is built and importable."""
    return lib is not None


def enabled() -> bool:
    """Whether the kernels run (built, and not turned off by NPURT_NATIVE=0 or `set_enabled(False)`)."""
    return _enabled


def set_enabled(flag: bool) -> bool:
    """Turn the kernels on or off for this process; returns the previous state. On needs the built module."""
    global _enabled
    before, _enabled = _enabled, bool(flag) and lib is not None
    return before


def level() -> str:
    """The instruction set in use: 'avx512vnni', 'avx512', 'avx2' or 'portable' ('none' when not built)."""
    return LEVELS[lib.npk_level()] if lib is not None else "none"


def cpu_level() -> str:
    """The best instruction set this CPU has."""
    return LEVELS[lib.npk_cpu_level()] if lib is not None else "none"


def set_level(name: str) -> str:
    """Use instruction set `name` (capped at what the CPU has; '' = the best); returns the one now in use."""
    if lib is None:
        return "none"
    return LEVELS[lib.npk_set_level(LEVELS.index(name) if name else -1)]


if lib is not None and os.environ.get("NPURT_NATIVE_LEVEL", "") in LEVELS:
    set_level(os.environ["NPURT_NATIVE_LEVEL"])


def _ptr(a: np.ndarray):
    """The address of a's first element as a void * (a contiguous array through its buffer: a tenth of the time of
    numpy's ctypes attribute, which public conversions pay on every call)."""
    if a.flags.c_contiguous and a.size:
        return ffi.cast("void *", ffi.from_buffer(a))
    return ffi.cast("void *", a.ctypes.data)


def _writable(a: np.ndarray) -> bool:
    return isinstance(a, np.ndarray) and a.flags.writeable


def cast(dst: np.ndarray, src: np.ndarray) -> bool:
    """np.copyto(dst, src, casting="unsafe") for float32 <-> float16, int8 -> float32 and same-dtype copies of 1/2/4-byte
    items, any strides (src broadcast to dst's shape). No overlap check: dst and src must not share memory."""
    return _ran(cast_fn(dst, src))


def cast_fn(dst: np.ndarray, src: np.ndarray):
    """`cast(dst, src)` prepared once: a zero-argument function doing the copy (every check and argument decided
    now, for steps that repeat it every run), or None when `cast` would decline."""
    if not _enabled or not _writable(dst) or not isinstance(src, np.ndarray) or dst.ndim > 8 or dst.ndim == 0:
        return None
    conv = _CASTS.get((src.dtype, dst.dtype))
    if conv is None:
        if src.dtype != dst.dtype or src.dtype.kind not in "iufb":
            return None
        conv = _COPIES.get(src.dtype.itemsize)
        if conv is None:
            return None
    if src.shape != dst.shape:
        try:
            src = np.broadcast_to(src, dst.shape)
        except ValueError:
            return None
    if dst.size == 0:
        return lambda: None
    dst, src = _merged(dst, src)
    if dst.ndim > 2:
        dst, src = _row_order(dst, src)
    args = (conv, dst.ndim, ffi.new("int64_t[]", dst.shape), _ptr(src), ffi.new("int64_t[]", src.strides), _ptr(dst),
            ffi.new("int64_t[]", dst.strides), 1.0, 0.0)
    call = lib.npk_cast_nd

    def run() -> None:
        call(*args)
    run.arrays = (dst, src)        # the memory the pointers point into stays alive with the function
    # parts along the rows (the longest outer axis: a conv's bordered input is split by rows, as the conv's pixels
    # are, so each thread finds the rows it reads in its own cache), else along the only axis
    axis = dst.ndim - 2 if dst.ndim > 1 else 0
    if not _splits(dst.shape[axis], dst.nbytes // dst.shape[axis]):
        return run
    c = ffi.new("struct npk_cast_call *")
    c.conv, c.ndim, c.axis, c.src, c.dst, c.a, c.b = conv, dst.ndim, axis, args[3], args[5], 1.0, 0.0
    c.shape[0:dst.ndim], c.src_strides[0:dst.ndim], c.dst_strides[0:dst.ndim] = dst.shape, src.strides, dst.strides
    return _split("cast", c, dst.shape[axis], dst.nbytes // dst.shape[axis], run)


def fill_fn(dst: np.ndarray, value):
    """`dst.fill(value)` prepared once (`npk_fill`: its contiguous runs memset or copied from one pattern): a
    zero-argument function, or None when the kernels are off or `dst` is not writable with a contiguous last axis
    (after merging the axes contiguous in memory) of items up to 8 bytes."""
    if not _enabled or not _writable(dst) or dst.ndim == 0 or dst.ndim > 8 or dst.itemsize > 8:
        return None
    if dst.size == 0:
        return lambda: None
    dst, _ = _merged(dst, dst)
    if dst.strides[-1] != dst.itemsize or any(s < 0 for s in dst.strides):
        return None
    pattern = np.full((), value, dst.dtype)
    args = (_ptr(dst), dst.ndim, ffi.new("int64_t[]", dst.shape), ffi.new("int64_t[]", dst.strides),
            _ptr(pattern), dst.itemsize)
    call = lib.npk_fill

    def run() -> None:
        call(*args)
    run.arrays = (dst, pattern)
    return run


def _merged(dst: np.ndarray, src: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """dst and src with adjacent axes that are contiguous in both merged into one (longer runs per kernel row)."""
    shape, ds, ss = [dst.shape[0]], [dst.strides[0]], [src.strides[0]]
    for n, d, s in zip(dst.shape[1:], dst.strides[1:], src.strides[1:]):
        if ds[-1] == n * d and ss[-1] == n * s:
            shape[-1] *= n
            ds[-1], ss[-1] = d, s
        else:
            shape.append(n)
            ds.append(d)
            ss.append(s)
    if len(shape) == dst.ndim:
        return dst, src
    return (np.lib.stride_tricks.as_strided(dst, shape, ds), np.lib.stride_tricks.as_strided(src, shape, ss))


def _row_order(dst: np.ndarray, src: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """dst and src with their axes reordered for `cast`: the last axis stays last (the contiguous runs), the longest
    other axis goes next to it (the rows one kernel call converts), the rest by dst stride, largest first."""
    outer = list(range(dst.ndim - 1))
    row = max(outer, key=lambda k: (dst.shape[k], -dst.strides[k]))
    outer.remove(row)
    outer.sort(key=lambda k: -dst.strides[k])
    axes = outer + [row, dst.ndim - 1]
    return dst.transpose(axes), src.transpose(axes)


def _contiguous_pair(dst: np.ndarray, src: np.ndarray, src_dtype: np.dtype, dst_dtype: np.dtype) -> bool:
    return (_enabled and _writable(dst) and isinstance(src, np.ndarray) and src.dtype == src_dtype
            and dst.dtype == dst_dtype and src.shape == dst.shape and src.flags.c_contiguous
            and dst.flags.c_contiguous)


def quantize(dst: np.ndarray, src: np.ndarray, inv_scale: float, zp: float) -> bool:
    """dst = int8(clip(rint(src * inv_scale + zp), -128, 127)) in float32 arithmetic (NaN -> 0): numpy's
    multiply, add, rint, clip and cast, bit for bit. Contiguous float32 -> int8 only."""
    return _ran(quantize_fn(dst, src, inv_scale, zp))


def quantize_fn(dst: np.ndarray, src: np.ndarray, inv_scale: float, zp: float):
    """`quantize(dst, src, inv_scale, zp)` prepared once: a zero-argument function, or None when it would decline."""
    return _cast_call(dst, src, _F32, _I8, _QUANTIZE, inv_scale, zp)


def dequantize(dst: np.ndarray, src: np.ndarray, scale: float, bias: float) -> bool:
    """dst = float32(src) * scale - bias in float32 (bias = zp * scale): numpy's multiply then subtract. Contiguous
    int8 -> float32 only."""
    return _ran(dequantize_fn(dst, src, scale, bias))


def dequantize_fn(dst: np.ndarray, src: np.ndarray, scale: float, bias: float):
    """`dequantize(dst, src, scale, bias)` prepared once: a zero-argument function, or None when it would decline."""
    return _cast_call(dst, src, _I8, _F32, _DEQUANTIZE, scale, bias)


def _ran(run) -> bool:
    """Run a prepared kernel call if there is one; whether there was."""
    if run is None:
        return False
    run()
    return True


def _cast_call(dst: np.ndarray, src: np.ndarray, src_dtype: np.dtype, dst_dtype: np.dtype, conv: int, a: float,
               b: float):
    if not _contiguous_pair(dst, src, src_dtype, dst_dtype):
        return None
    args = (conv, _ptr(src), _ptr(dst), src.size, float(np.float32(a)), float(np.float32(b)))
    call = lib.npk_cast

    def run() -> None:
        call(*args)
    run.arrays = (dst, src)
    return run


def _conversion(src: np.dtype, dst: np.dtype, quant: tuple[float, float] | None) -> int | None:
    if quant is not None:
        if (src, dst) == (_F32, _I8):
            return _QUANTIZE
        if (src, dst) == (_I8, _F32):
            return _DEQUANTIZE
        return None
    if src == dst:
        return _COPIES.get(src.itemsize)
    return _CASTS.get((src, dst))


def _element_strides(a: np.ndarray) -> tuple[int, ...] | None:
    """a's strides in elements when every one is a non-negative multiple of the item size, else None."""
    e = a.itemsize
    strides = a.strides
    elements = tuple(s // e for s in strides)
    return elements if min(strides, default=0) >= 0 and tuple(x * e for x in elements) == strides else None


def planes_to_lanes(dst: np.ndarray, src: np.ndarray, quant: tuple[float, float] | None = None,
                    blocks: tuple[int, int] | None = None) -> bool:
    """Pack planes `src` (N, C, H, W; pixels of a row adjacent) into lanes `dst` (N, C1, H, Wd, C2; C-contiguous,
    Wd >= W, C1 * C2 >= C): dst[n, c // C2, h, w, c % C2] = src[n, c, h, w], converted (float32 -> float16, or
    quantised with `quant` = (inv_scale, zp)); padding lanes, pixels and blocks are zero. NCHW -> NC1HWC2, and
    NCHW -> NHWC as C1 = 1, C2 = C. `blocks` = (lo, hi) limits the work to C1 blocks [lo, hi)."""
    return _ran(planes_to_lanes_fn(dst, src, quant, blocks))


def planes_to_lanes_fn(dst: np.ndarray, src: np.ndarray, quant: tuple[float, float] | None = None,
                       blocks: tuple[int, int] | None = None):
    """`planes_to_lanes(dst, src, quant, blocks)` prepared once: a zero-argument function, or None when it would
    decline."""
    if not _enabled or not _writable(dst) or not isinstance(src, np.ndarray) or dst.ndim != 5 or src.ndim != 4:
        return None
    conv = _conversion(src.dtype, dst.dtype, quant)
    n, c1, h, wd, c2 = dst.shape
    strides = _element_strides(src)
    if conv is None or strides is None or not dst.flags.c_contiguous or strides[3] != 1 or src.shape[0] != n \
            or src.shape[2] != h or src.shape[3] > wd or src.shape[1] > c1 * c2:
        return None
    return _layout_fn(1, conv, src, dst, strides[:3], (n, src.shape[1], h, src.shape[3], c1, c2, wd), quant, blocks)


def lanes_to_planes(dst: np.ndarray, src: np.ndarray, quant: tuple[float, float] | None = None,
                    blocks: tuple[int, int] | None = None) -> bool:
    """Unpack lanes `src` (N, C1, H, Ws, C2; C-contiguous) into planes `dst` (N, C, H, W; pixels of a row adjacent;
    C <= C1 * C2, W <= Ws): dst[n, c, h, w] = src[n, c // C2, h, w, c % C2], converted (float16 -> float32, or
    dequantised with `quant` = (scale, zp * scale)). NC1HWC2 -> NCHW, and NHWC -> NCHW as C1 = 1, C2 = C."""
    return _ran(lanes_to_planes_fn(dst, src, quant, blocks))


def lanes_to_planes_fn(dst: np.ndarray, src: np.ndarray, quant: tuple[float, float] | None = None,
                       blocks: tuple[int, int] | None = None):
    """`lanes_to_planes(dst, src, quant, blocks)` prepared once: a zero-argument function, or None when it would
    decline."""
    if not _enabled or not _writable(dst) or not isinstance(src, np.ndarray) or src.ndim != 5 or dst.ndim != 4:
        return None
    conv = _conversion(src.dtype, dst.dtype, quant)
    n, c1, h, ws, c2 = src.shape
    strides = _element_strides(dst)
    if conv is None or strides is None or not src.flags.c_contiguous or strides[3] != 1 or dst.shape[0] != n \
            or dst.shape[2] != h or dst.shape[3] > ws or dst.shape[1] > c1 * c2:
        return None
    return _layout_fn(0, conv, src, dst, strides[:3], (n, dst.shape[1], h, dst.shape[3], c1, c2, ws), quant, blocks)


def _layout_fn(to_lanes: int, conv: int, src: np.ndarray, dst: np.ndarray, strides: tuple, dims: tuple,
               quant: tuple[float, float] | None, blocks: tuple[int, int] | None):
    """The prepared layout call (`npk_planes_to_lanes` or `npk_lanes_to_planes`: `strides` those of the planes
    side, `dims` (N, C, H, W, C1, C2, W of the lanes side)), its C1 blocks split over the threads."""
    lo, hi = blocks or (0, dims[4])
    a, b = (float(np.float32(v)) for v in (quant or (0.0, 0.0)))
    ps, pd = _ptr(src), _ptr(dst)
    if to_lanes:
        call, args = lib.npk_planes_to_lanes, (conv, ps, *strides, pd, *dims, lo, hi, a, b)
    else:
        call, args = lib.npk_lanes_to_planes, (conv, ps, pd, *strides, *dims, lo, hi, a, b)

    def run() -> None:
        call(*args)
    run.arrays = (dst, src)
    if not _splits(hi - lo, dst.nbytes // dims[4]):
        return run
    c = ffi.new("struct npk_layout_call *")
    c.conv, c.to_lanes, c.src, c.dst, c.a, c.b = conv, to_lanes, ps, pd, a, b
    c.sn, c.sc, c.sh = strides
    c.n, c.c, c.h, c.w, c.c1, c.c2, c.w1 = dims
    split = _parallel("layout", [(c, lo + x, lo + y) for x, y in _row_parts(hi - lo)])
    split.arrays = (dst, src, c)
    return split


def regroup(dst: np.ndarray, src: np.ndarray, width: int) -> bool:
    """Move whole C2 groups between NHWC and NC1HWC2 of one dtype, both C-contiguous: NHWC (N, H, Ws, C) ->
    NC1HWC2 (N, C1, H, Wd, C2) with zero padding, or NC1HWC2 -> NHWC (N, H, Wd, C) with pixels >= `width` zero;
    which one is told by the ranks (4-D src packs, 5-D src unpacks)."""
    if not _enabled or not _writable(dst) or not isinstance(src, np.ndarray) or src.dtype != dst.dtype \
            or src.itemsize not in (1, 2, 4, 8) or not src.flags.c_contiguous or not dst.flags.c_contiguous:
        return False
    if src.ndim == 4 and dst.ndim == 5:
        n, h, ws, c = src.shape
        _, c1, hd, wd, c2 = dst.shape
        to_lanes = 1
    elif src.ndim == 5 and dst.ndim == 4:
        n, c1, h, ws, c2 = src.shape
        _, hd, wd, c = dst.shape
        to_lanes = 0
    else:
        return False
    if dst.shape[0] != n or hd != h or not (0 <= width <= min(ws, wd)) or c > c1 * c2:
        return False
    lib.npk_regroup(to_lanes, src.itemsize, _ptr(src), _ptr(dst), n, c, h, width, c1, c2, ws, wd)
    return True


def depthwise_rows(acc: np.ndarray, x: np.ndarray, weights: np.ndarray, bias: np.ndarray, kernel: tuple[int, int],
                   strides: tuple[int, int]):
    """A zero-argument function computing depthwise conv taps into `acc` (nc1, rows, Wo, C2; float32, C-contiguous)
    from the phase-split padded input `x` (nc1, rows_in, sw, Wq, C2; the block's first row at x[:, 0]), per-tap
    weights (taps, nc1, 1, Wo, C2) and bias (nc1, 1, Wo, C2) tiled along the row: acc = x(t0) * w(t0) + x(t1) * w(t1)
    ... + bias, rounded as numpy's multiply / add sequence. None when the arrays are not that case (or the kernels are
    off); every index the kernel reads is checked here, once (the function keeps using C after `set_enabled(False)`:
    prepare again to switch)."""
    if not _enabled or not all(isinstance(a, np.ndarray) and a.dtype == _F32 for a in (acc, x, weights, bias)):
        return None
    kh, kw = (int(k) for k in kernel)
    sh, sw = (int(s) for s in strides)
    if acc.ndim != 4 or x.ndim != 5 or weights.ndim != 5 or bias.ndim != 4 or not acc.flags.c_contiguous \
            or not acc.flags.writeable or min(kh, kw, sh, sw) < 1:
        return None
    nc1, rows, wo, c2 = acc.shape
    xs, ws, bs = _element_strides(x), _element_strides(weights), _element_strides(bias)
    if xs is None or ws is None or bs is None or xs[3:] != (c2, 1) or ws[3:] != (c2, 1) or bs[2:] != (c2, 1):
        return None
    if x.shape[0] < nc1 or x.shape[4] != c2 or (kh - 1) + sh * (rows - 1) >= x.shape[1] or sw > x.shape[2] \
            or (kw - 1) // sw + wo > x.shape[3] or weights.shape[:2] != (kh * kw, nc1) \
            or weights.shape[2:] != (1, wo, c2) or bias.shape != (nc1, 1, wo, c2):
        return None
    if acc.size == 0:
        return lambda: None
    args = (ffi.cast("float *", x.ctypes.data), xs[0], xs[1], xs[2], c2, ffi.cast("float *", weights.ctypes.data),
            ws[0], ws[1], ffi.cast("float *", bias.ctypes.data), bs[0], ffi.cast("float *", acc.ctypes.data),
            nc1, rows, wo * c2, kh, kw, sh, sw)

    def run() -> None:
        lib.npk_depthwise_rows(*args)
    run.arrays = (acc, x, weights, bias)       # the memory the pointers point into stays alive with the function
    return run


def normalize_image(dst: np.ndarray, src: np.ndarray, mean: np.ndarray, std: np.ndarray,
                    quant: tuple[float, float] | None = None) -> bool:
    """An image input in one pass: uint8 `src` (N, H, W, C; pixels adjacent, rows any distance apart) to (src - mean) / std per channel in float32
    (numpy's subtract then divide), written into `dst` (N, H, Ws, C; C-contiguous; Ws >= W, pixels >= W zeroed) as
    float32, float16, or int8 quantised with `quant` = (inv_scale, zp)."""
    if not _enabled or not _writable(dst) or not isinstance(src, np.ndarray) or src.dtype != np.uint8 \
            or src.ndim != 4 or dst.ndim != 4 or not dst.flags.c_contiguous:
        return False
    n, h, w, c = src.shape
    sn, sh, sw, sc = src.strides
    row = sh if h > 1 else (sn if n > 1 else w * c)       # bytes from one of the n * h rows to the next
    if sc != 1 or sw != c or row < w * c or (n > 1 and h > 1 and sn != h * sh):
        return False
    if dst.shape[0] != n or dst.shape[1] != h or dst.shape[2] < w or dst.shape[3] != c or c == 0:
        return False
    if quant is not None:
        conv = _QUANTIZE if dst.dtype == _I8 else None
    else:
        conv = {_F32: _COPIES[4], _F16: _CASTS[(_F32, _F16)]}.get(dst.dtype)
    m = np.ascontiguousarray(np.broadcast_to(np.asarray(mean, _F32).reshape(-1), (c,)))
    s = np.ascontiguousarray(np.broadcast_to(np.asarray(std, _F32).reshape(-1), (c,)))
    if conv is None:
        return False
    a, b = quant or (0.0, 0.0)
    lib.npk_normalize_u8(ffi.cast("uint8_t *", src.ctypes.data), row, _ptr(dst), dst.shape[2] * c, conv, n * h, w, c,
                         ffi.cast("float *", m.ctypes.data), ffi.cast("float *", s.ctypes.data),
                         float(np.float32(a)), float(np.float32(b)))
    return True


def int8_conv(x: np.ndarray, weights: np.ndarray, colsum: np.ndarray, zp: int, mult: np.ndarray, bias: np.ndarray,
              kernel: tuple[int, int], strides: tuple[int, int], dilations: tuple[int, int], out_hw: tuple[int, int],
              out: np.ndarray | None = None, bounds: tuple[float, float] = (-128.0, 127.0),
              y: np.ndarray | None = None, wide=None, swish: tuple[float, float, float] | None = None):
    """A zero-argument function computing an int8 conv in int32 (`npk_conv8`): the padded input `x` (C1, Hp, Wp, CC;
    int8, border = `zp`), `weights` (K, N) int8 with K = kh * kw * C1 * CC in (dy, dx, c1, lane) order and N a
    multiple of 16, `colsum` (N,) their column sums; f = float32(acc - zp * colsum) * mult + bias, then either
    int8(rint(clip(f, *bounds))) into `out` (an NC1HWC2 slot (C1o, Ho, Wo, 16)) or f into `y` (Ho * Wo, N) float32.
    The weights are packed for the instruction set in use now; `wide(n)` gives an int16 scratch of n elements
    (the AVX2 path's sign-extended input). `swish` = (alpha, 1 / output scale, output zero point), with `out`: a
    fused SiLU, f -> swish(f) / s + zp before the clip (`epilogue.swish_codes`, byte for byte). None when the arrays
    are not that case or the kernels are off; every size the kernel relies on is checked here, once."""
    if not _enabled:
        return None
    c1, hp, wp, cc = x.shape if x.ndim == 4 else (0, 0, 0, 0)
    k, n = weights.shape
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, strides, dilations, out_hw
    ok = (x.dtype == _I8 and x.flags.c_contiguous and weights.dtype == _I8 and cc % 4 == 0 and cc > 0
          and k == kh * kw * c1 * cc and n % 16 == 0 and colsum.dtype == np.int32 and colsum.shape == (n,)
          and mult.dtype == _F32 and mult.shape == (n,) and bias.dtype == _F32 and bias.shape == (n,)
          and all(a.flags.c_contiguous for a in (colsum, mult, bias))
          and min(kh, kw, sh, sw, dh, dw) >= 1 and (ho - 1) * sh + (kh - 1) * dh < hp
          and (wo - 1) * sw + (kw - 1) * dw < wp and ho >= 1 and wo >= 1)
    if out is not None:
        ok = ok and out.dtype == _I8 and out.flags.c_contiguous and out.flags.writeable \
            and out.shape == (n // 16, ho, wo, 16)
    else:
        ok = ok and y is not None and y.dtype == _F32 and y.flags.c_contiguous and y.shape == (ho * wo, n)
    if not ok or (swish is not None and out is None):
        return None
    lvl = lib.npk_level()
    packed = np.empty(lib.npk_conv8_packed_size(k, n, lvl), np.uint8)
    w = np.ascontiguousarray(weights)
    if lib.npk_conv8_pack(ffi.cast("int8_t *", w.ctypes.data), k, n, _ptr(packed), lvl) != 0:
        return None
    block_bytes = {1: 32 * k, 2: 32 * k, 3: 16 * k}.get(lvl)      # a 16-channel block of the packed weights
    by_channels = out is not None and block_bytes is not None and _few_pixels(ho * wo, n)
    parts = _row_parts(n // 16) if by_channels else _row_parts(ho * wo, TILE_PIXELS)
    threads = min(exec_threads(), len(parts))
    scratch = wide(x.size * threads) if wide is not None and lvl in (1, 2) else None
    if lvl in (1, 2) and (scratch is None or scratch.dtype != np.int16 or scratch.size < x.size * threads):
        return None
    p = ffi.new("struct npk_conv8 *")
    p.x = ffi.cast("int8_t *", x.ctypes.data)
    p.c1, p.hp, p.wp, p.cc = c1, hp, wp, cc
    p.kh, p.kw, p.sh, p.sw, p.dh, p.dw = kh, kw, sh, sw, dh, dw
    p.ho, p.wo, p.n = ho, wo, n
    p.w = _ptr(packed)
    p.level = lvl
    p.colsum = ffi.cast("int32_t *", colsum.ctypes.data)
    p.zp = int(zp)
    p.mult = ffi.cast("float *", mult.ctypes.data)
    p.bias = ffi.cast("float *", bias.ctypes.data)
    p.lo, p.hi = (float(np.float32(b)) for b in bounds)
    p.out = ffi.cast("int8_t *", out.ctypes.data) if out is not None else ffi.NULL
    p.out_plane = ho * wo * 16
    p.y = ffi.cast("float *", y.ctypes.data) if y is not None else ffi.NULL
    p.wide = ffi.cast("int16_t *", scratch.ctypes.data) if scratch is not None else ffi.NULL
    p.wide_stride = x.size              # each thread widens the input rows it reads into its own scratch
    if swish is not None:
        p.act = 1
        p.alpha, p.inv_scale, p.out_zp = (float(np.float32(v)) for v in swish)
    structs = []
    for b0, b1 in parts if by_channels else ():        # each part its channel blocks: the same pointers, offset
        q = ffi.new("struct npk_conv8 *", p[0])
        q.n, q.w, q.out = (b1 - b0) * 16, ffi.cast("char *", p.w) + b0 * block_bytes, p.out + b0 * p.out_plane
        q.colsum, q.mult, q.bias = p.colsum + b0 * 16, p.mult + b0 * 16, p.bias + b0 * 16
        structs.append((q, 0, ho * wo))
    run = _parallel("conv8", structs or [(p, lo, hi) for lo, hi in parts])
    run.arrays = (x, packed, colsum, mult, bias, out, y, scratch, p, structs)  # the memory the pointers point into
    return run


# the fused activations `float_conv` and `depthwise` apply (code, p0, p1): Clip (lo, hi), LeakyRelu (alpha, _),
# Swish (alpha, _), a SiLU in the basic float32 operations of `epilogue.silu`, HardSigmoid (alpha, beta) and
# HardSwish (1 / 6, 0.5) in apply_activation's
FLOAT_ACTIVATIONS = {None: 0, "Relu": 1, "Clip": 2, "LeakyRelu": 3, "Swish": 4, "HardSigmoid": 5, "HardSwish": 6}


def float_conv(x: np.ndarray, weights: np.ndarray, bias: np.ndarray, kernel: tuple[int, int],
               strides: tuple[int, int], dilations: tuple[int, int], out_hw: tuple[int, int],
               out: np.ndarray | None = None, activation: tuple[int, float, float] = (0, 0.0, 0.0),
               y: np.ndarray | None = None):
    """A zero-argument function computing a conv of float16 values in float32 (`npk_convf`): the padded input `x`
    (C1, Hp, Wp, CC), `weights` (K, N) float32 with K = kh * kw * C1 * CC in (dy, dx, c1, lane) order, N a multiple of 16,
    each output summed over k in order, + `bias` (N,); then either the activation (code, p0, p1) of
    FLOAT_ACTIVATIONS and a float16 store into `out` (an NC1HWC2 slot (C1o, Ho, Wo, C2o), channels >= C1o * C2o
    dropped) or the sums into `y` (Ho * Wo, N) float32. None when the arrays are not that case or the kernels are
    off; every size the kernel relies on is checked here, once."""
    if not _enabled:
        return None
    c1, hp, wp, cc = x.shape if x.ndim == 4 else (0, 0, 0, 0)
    k, n = weights.shape
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, strides, dilations, out_hw
    ok = (x.dtype == _F32 and x.flags.c_contiguous and weights.dtype == _F32 and weights.flags.c_contiguous
          and cc > 0 and k == kh * kw * c1 * cc and n % 16 == 0 and bias.dtype == _F32 and bias.shape == (n,)
          and bias.flags.c_contiguous and min(kh, kw, sh, sw, dh, dw) >= 1 and ho >= 1 and wo >= 1
          and (ho - 1) * sh + (kh - 1) * dh < hp and (wo - 1) * sw + (kw - 1) * dw < wp)
    if out is not None:
        ok = ok and out.dtype == _F16 and out.flags.c_contiguous and out.flags.writeable and out.ndim == 4 \
            and out.shape[1:3] == (ho, wo) and out.shape[0] * out.shape[3] <= n
    else:
        ok = ok and y is not None and y.dtype == _F32 and y.flags.c_contiguous and y.shape == (ho * wo, n)
    if not ok:
        return None
    p = ffi.new("struct npk_convf *")
    p.x = ffi.cast("float *", x.ctypes.data)
    p.c1, p.hp, p.wp, p.cc = c1, hp, wp, cc
    p.kh, p.kw, p.sh, p.sw, p.dh, p.dw = kh, kw, sh, sw, dh, dw
    p.ho, p.wo, p.n = ho, wo, n
    blocks = np.ascontiguousarray(weights.reshape(k, n // 16, 16).transpose(1, 0, 2))   # (N/16, K, 16): streamed
    p.w = ffi.cast("float *", blocks.ctypes.data)
    p.bias = ffi.cast("float *", bias.ctypes.data)
    p.act, p.p0, p.p1 = int(activation[0]), float(np.float32(activation[1])), float(np.float32(activation[2]))
    if out is not None:
        p.out = ffi.cast("uint16_t *", out.ctypes.data)
        p.out_c2, p.out_channels, p.out_plane = out.shape[3], out.shape[0] * out.shape[3], ho * wo * out.shape[3]
    p.y = ffi.cast("float *", y.ctypes.data) if y is not None else ffi.NULL
    structs = []
    if out is not None and 16 % out.shape[3] == 0 and _few_pixels(ho * wo, n):
        for b0, b1 in _row_parts(n // 16):          # each part its channel blocks: the same pointers, offset
            q = ffi.new("struct npk_convf *", p[0])
            q.n, q.w, q.bias = (b1 - b0) * 16, p.w + b0 * 16 * k, p.bias + b0 * 16
            q.out, q.out_channels = p.out + b0 * 16 // p.out_c2 * p.out_plane, min(p.out_channels - b0 * 16, q.n)
            if q.out_channels > 0:
                structs.append((q, 0, ho * wo))
    run = _parallel("convf", structs or [(p, lo, hi) for lo, hi in _row_parts(ho * wo, TILE_PIXELS)])
    run.arrays = (x, blocks, bias, out, y, p, structs)  # the memory the pointers point into stays alive with it
    return run


def depthwise(x: np.ndarray, border: float, weights: np.ndarray, bias: np.ndarray, kernel: tuple[int, int],
              strides: tuple[int, int], pads: tuple[int, int], out: np.ndarray | None = None,
              activation: tuple[int, float, float] = (0, 0.0, 0.0), bounds: tuple[float, float] | None = None,
              y: np.ndarray | None = None):
    """A zero-argument function computing a depthwise conv straight from an NC1HWC2 slot (`npk_depthwise`): `x`
    (C1, H, Ws, C2) float16 or int8 codes (read as float32; pixels outside H x W, with `pads` = (top, left), read as
    `border`), per-tap `weights` (kh * kw, C1, C2) and `bias` (C1, C2) float32, taps summed in order as numpy's
    multiply / add sequence; stored into `out` (C1, Ho, Wo, C2): float16 after the activation (code, p0, p1) of
    FLOAT_ACTIVATIONS, or int8 codes rint(clip(acc, *bounds)); or the float32 sums into `y`. None when the arrays are
    not that case or the kernels are off."""
    if not _enabled or x.ndim != 4 or x.dtype not in (_F16, _I8) or not x.flags.c_contiguous:
        return None
    c1, h, ws, c2 = x.shape
    (kh, kw), (sh, sw) = kernel, strides
    dst = out if out is not None else y
    if dst is None or dst.ndim != 4 or not dst.flags.c_contiguous or not dst.flags.writeable:
        return None
    ho, wo = dst.shape[1:3]
    w = ws
    if (weights.dtype, bias.dtype) != (_F32, _F32) or weights.shape != (kh * kw, c1, c2) or bias.shape != (c1, c2) \
            or not weights.flags.c_contiguous or not bias.flags.c_contiguous or dst.shape != (c1, ho, wo, c2) \
            or min(kh, kw, sh, sw) < 1 or min(pads) < 0:
        return None
    if out is not None:
        mode = 0 if out.dtype == _F16 and x.dtype == _F16 else (1 if out.dtype == _I8 and x.dtype == _I8
                                                              and bounds is not None else -1)
    else:
        mode = 2 if y.dtype == _F32 else -1
    if mode < 0:
        return None
    p = ffi.new("struct npk_dw *")
    p.x, p.xtype = _ptr(x), 0 if x.dtype == _F16 else 1
    p.c1, p.h, p.w, p.ws, p.c2 = c1, h, w, ws, c2
    p.border = float(np.float32(border))
    p.kh, p.kw, p.sh, p.sw, p.pt, p.pl = kh, kw, sh, sw, pads[0], pads[1]
    p.ho, p.wo = ho, wo
    p.wt, p.bias = ffi.cast("float *", weights.ctypes.data), ffi.cast("float *", bias.ctypes.data)
    p.mode = mode
    p.act, p.p0, p.p1 = int(activation[0]), float(np.float32(activation[1])), float(np.float32(activation[2]))
    if mode == 1:
        p.p0, p.p1 = (float(np.float32(b)) for b in bounds)
    if out is not None:
        p.out = _ptr(out)
    else:
        p.y = ffi.cast("float *", y.ctypes.data)
    run = _parallel("depthwise", [(p, lo, hi) for lo, hi in _row_parts(c1)])
    run.arrays = (x, weights, bias, out, y, p)     # the memory the pointers point into stays alive with the function
    return run


def max_pool(x: np.ndarray, out: np.ndarray, kernel: tuple[int, int], strides: tuple[int, int],
             dilations: tuple[int, int], pads: tuple[int, int], table: np.ndarray | None = None,
             lanes: tuple[int, int] = (1, 0)):
    """A zero-argument function computing MaxPool straight from an NC1HWC2 slot (`npk_max_pool`): `x` (P, H, W, C2)
    float16 or int8 codes into `out` (P, Ho, Wo, C2) of the same dtype, taps outside H x W (`pads` = (top, left))
    skipped; int8 stored through the 256-entry `table`, but for `lanes` = (C1, L) the last C1 block of each image
    only its first L lanes (0 in the others). None when the arrays are not that case, a window lies wholly in the
    padding, or the kernels are off."""
    if not _enabled or x.ndim != 4 or x.dtype not in (_F16, _I8) or out.dtype != x.dtype or out.ndim != 4 \
            or not x.flags.c_contiguous or not out.flags.c_contiguous or not out.flags.writeable \
            or out.shape[0] != x.shape[0] or out.shape[3] != x.shape[3]:
        return None
    if table is not None and (table.dtype != np.uint8 or table.shape != (256,) or not table.flags.c_contiguous):
        return None
    p = ffi.new("struct npk_pool *")
    p.x, p.xtype, p.y = _ptr(x), 0 if x.dtype == _F16 else 1, _ptr(out)
    p.planes, p.h, p.w, p.c2 = x.shape
    p.kh, p.kw, p.sh, p.sw, p.dh, p.dw, p.pt, p.pl = *kernel, *strides, *dilations, *pads
    p.ho, p.wo = out.shape[1:3]
    if table is not None:
        p.table, (p.c1, p.lanes) = ffi.cast("uint8_t *", table.ctypes.data), lanes
    if lib.npk_max_pool(p, 0, 0) != 0:          # no planes: the kernel's own checks of the geometry (a window
        return None                             # wholly in the padding, lanes out of range), nothing written
    run = _parallel("max_pool", [(p, lo, hi) for lo, hi in _row_parts(x.shape[0])])
    run.arrays = (x, out, table, p)     # the memory the pointers point into stays alive with the function
    return run


def global_avg_pool_fn(x: np.ndarray, out: np.ndarray, channels: int, quant: tuple[float, float] | None = None,
                       store: tuple[float, float] = (1.0, 0.0)):
    """A zero-argument function computing GlobalAveragePool straight from an NC1HWC2 slot (`npk_global_avg_pool`): `x`
    (C1, H, W, C2) float16, or int8 codes read as q * quant[0] - quant[1]; each lane's mean as numpy's float32
    add.reduce and true_divide by the pixel count compute it, stored into `out` (C1 * C2 values) as float16 or as int8
    codes quantised with `store` = (1 / scale, zero point); lanes >= `channels` 0. None when the arrays are not that
    case or the kernels are off."""
    if not _enabled or x.ndim != 4 or not x.flags.c_contiguous or not _writable(out) or not out.flags.c_contiguous:
        return None
    c1, h, w, c2 = x.shape
    int8 = x.dtype == _I8 and quant is not None
    if not (int8 or (x.dtype == _F16 and quant is None)) or out.dtype != x.dtype or out.size != c1 * c2 \
            or not 1 <= c2 <= 64 or h * w < 1 or not 0 <= channels <= c1 * c2:
        return None
    a, b = quant if int8 else (0.0, 0.0)
    args = (_ptr(x), int(int8), c1, h * w, c2, float(np.float32(a)), float(np.float32(b)), channels,
            float(np.float32(store[0])), float(np.float32(store[1])), _ptr(out))
    call = lib.npk_global_avg_pool

    def run() -> None:
        call(*args)
    run.arrays = (x, out)
    return run


def lookup(out: np.ndarray, table: np.ndarray, a: np.ndarray, b: np.ndarray | None = None) -> bool:
    """out = table[a] (a uint8 or uint16), or table[a << 8 | b] for two uint8 arrays: np.take(table, index, out=out)
    over contiguous arrays of one shape, with a table covering every index (256 or 65536 entries of 1 or 2 bytes)."""
    return _ran(lookup_fn(out, table, a, b))


def lookup_fn(out: np.ndarray, table: np.ndarray, a: np.ndarray, b: np.ndarray | None = None,
              lanes: tuple[int, int] | None = None):
    """`lookup(out, table, a, b)` prepared once: a zero-argument function, or None when `lookup` would decline.
    `lanes` = (C2, L): the arrays are groups of C2 entries of which only the first L are looked up, the others set
    to 0 (the last, partly used C1 block of an NC1HWC2 slot)."""
    if not _enabled or not _writable(out) or not all(isinstance(v, np.ndarray) and v.flags.c_contiguous
                                                     for v in (out, table, a) + ((b,) if b is not None else ())):
        return None
    if table.dtype != out.dtype or out.itemsize not in (1, 2) or a.shape != out.shape or table.ndim != 1:
        return None
    if b is not None:
        index = 2 if a.dtype == b.dtype == np.uint8 and b.shape == a.shape else -1
    else:
        index = {np.dtype(np.uint8): 0, np.dtype(np.uint16): 1}.get(a.dtype, -1)
    if index < 0 or table.size != (256 if index == 0 else 65536):
        return None
    args = (_ptr(table), out.itemsize, _ptr(a), _ptr(b) if b is not None else ffi.NULL, index, _ptr(out), out.size)
    call, c2, used = lib.npk_lookup, 0, 0
    if lanes is not None:
        c2, used = lanes
        if out.shape[-1] != c2 or not 0 <= used <= c2:
            return None
        args = args[:-1] + (out.size // c2, c2, used)
        call = lib.npk_lookup_lanes

    def run() -> None:
        call(*args)
    run.arrays = (out, table, a, b)        # the memory the pointers point into stays alive with the function
    units, unit_bytes = (out.size // c2 if c2 else out.size), out.itemsize * max(c2, 1)
    if not _splits(units, unit_bytes):
        return run
    c = ffi.new("struct npk_lookup_call *")
    c.table, c.out_size, c.a, c.b, c.index, c.out = args[:6]
    c.n, c.c2, c.lanes = out.size, c2, used
    return _split("lookup", c, units, unit_bytes, run)


BINARY_F16 = {"Add": 0, "Sub": 1, "Mul": 2}


def _binary_fn(dtype: np.dtype, call, op: str, out: np.ndarray, a: np.ndarray, b: np.ndarray, *extra):
    """`call(op code, a, b, out, n, *extra)` prepared once for contiguous `dtype` arrays of one shape and op in
    BINARY_F16; None otherwise."""
    if not _enabled or op not in BINARY_F16 or not _writable(out) or not all(
            isinstance(v, np.ndarray) and v.dtype == dtype and v.flags.c_contiguous and v.shape == out.shape
            for v in (out, a, b)):
        return None
    args = (BINARY_F16[op], _ptr(a), _ptr(b), _ptr(out), out.size, *extra)

    def run() -> None:
        call(*args)
    run.arrays = (out, a, b, *extra)
    if not _splits(out.size, out.itemsize):
        return run
    c = ffi.new("struct npk_binary_call *")
    c.op, c.a, c.b, c.out, c.n = args[:5]
    if dtype == _I8:
        c.q = extra[0]
    else:
        c.act, c.lo, c.hi = extra
    return _split("binary", c, out.size, out.itemsize, run)


BINARY_F16_ACTIVATIONS = {None: 0, "Relu": 1, "Clip": 2}


def binary_f16_fn(op: str, out: np.ndarray, a: np.ndarray, b: np.ndarray, act: str | None = None,
                  bounds: tuple[float, float] = (-np.inf, np.inf)):
    """A zero-argument function storing float16(act(float32(a) op float32(b))) into `out` (numpy's ufunc with
    dtype=float32, `act` as `apply_activation` applies it: Relu np.maximum(y, 0), Clip np.clip(y, *bounds), then a
    casting store, bit for bit), for contiguous float16 arrays of one shape and op in BINARY_F16; None otherwise."""
    if not _enabled or act not in BINARY_F16_ACTIVATIONS:
        return None
    lo, hi = (float(np.float32(v)) for v in bounds)
    return _binary_fn(_F16, lib.npk_binary_f16, op, out, a, b, BINARY_F16_ACTIVATIONS[act], lo, hi)


def binary_f16_bcast_fn(op: str, out: np.ndarray, a: np.ndarray, b: np.ndarray, inner: int, c2: int,
                        swap: bool = False, act: str | None = None, bounds: tuple[float, float] = (-np.inf, np.inf)):
    """`binary_f16_fn` with float32 `b` broadcast: element e of the contiguous float16 `a` / `out` takes
    b[(e // inner) * c2 + e % c2] (a scalar: inner = a.size, c2 = 1; an NC1HWC2 slot's per-channel vector: inner =
    H * W * C2, c2 = C2); `swap` computes b op a. None when the arrays are not that case."""
    if not _enabled or op not in BINARY_F16 or act not in BINARY_F16_ACTIVATIONS or not _writable(out) \
            or not all(isinstance(v, np.ndarray) and v.flags.c_contiguous for v in (out, a, b)) \
            or a.dtype != _F16 or out.dtype != _F16 or b.dtype != _F32 or a.shape != out.shape or inner < 1 \
            or c2 < 1 or inner % c2 or b.size < -(-a.size // inner) * c2:
        return None
    lo, hi = (float(np.float32(v)) for v in bounds)
    args = (BINARY_F16[op], int(swap), _ptr(a), ffi.cast("float *", b.ctypes.data), _ptr(out), out.size, 0, inner,
            c2, BINARY_F16_ACTIVATIONS[act], lo, hi)
    call = lib.npk_binary_f16_bcast

    def run() -> None:
        call(*args)
    run.arrays = (out, a, b)
    if not _splits(out.size, out.itemsize):
        return run
    c = ffi.new("struct npk_binary_call *")
    c.op, c.swap, c.a, c.b, c.out, c.n, c.inner, c.c2 = args[0], args[1], args[2], args[3], args[4], out.size, inner, c2
    c.act, c.lo, c.hi = args[9:12]
    return _split("binary", c, out.size, out.itemsize, run)


def binary_i8_fn(op: str, out: np.ndarray, a: np.ndarray, b: np.ndarray, qa: tuple[float, float],
                 qb: tuple[float, float], qo: tuple[float, float]):
    """A zero-argument function storing int8 codes of (a * sa - ba) op (b * sb - bb) quantised as x * inv + zp
    (`qa` = (sa, ba), `qb`, `qo` = (inv, zp)), every step in float32 as `dequantize`, numpy's ufunc and `quantize`
    compute it, for contiguous int8 arrays of one shape and op in BINARY_F16; None otherwise."""
    if not _enabled:
        return None
    q = ffi.new("float[6]", [float(np.float32(v)) for v in (*qa, *qb, *qo)])
    return _binary_fn(_I8, lib.npk_binary_i8, op, out, a, b, q)
