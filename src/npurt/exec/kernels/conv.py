"""Conv and ConvTranspose (1-D, 2-D, 3-D; groups, depthwise, dilations, strides, pads, auto_pad).

Conv is im2col (straight from the unpadded input) into a reused per-thread scratch buffer plus
one float32 ``np.matmul``, so the work lands in BLAS. 1x1 convolutions skip im2col (a plain
matmul); depthwise convolutions use per-channel im2col and a batched matmul in L2-sized channel
blocks. The only Python loops run over kernel taps (e.g. 9 for 3x3) and channel blocks, never over
pixels. `conv_nd` keeps its input dtype, so the integer ops (ConvInteger, QLinearConv) can run
it in float64, which is exact for int8/uint8 products.
"""
from __future__ import annotations

import itertools
import threading
from typing import Any, Sequence

import numpy as np

from npurt.exec.kernels import apply_activation, as_f32, kernel
from npurt.tensor.window import conv_geometry

_tls = threading.local()


def _scratch(n: int, dtype=np.float32) -> np.ndarray:
    """A scratch vector of `n` elements, reused per thread and dtype (never returned to callers)."""
    bufs = getattr(_tls, "bufs", None)
    if bufs is None:
        bufs = _tls.bufs = {}
    dtype = np.dtype(dtype)
    buf = bufs.get(dtype)
    if buf is None or buf.size < n:
        buf = bufs[dtype] = np.empty(max(n, 1), dtype)
    return buf[:n]


def pad_spatial(x: np.ndarray, pb: Sequence[int], pe: Sequence[int], value: float = 0.0) -> np.ndarray:
    """`x` (N, C, *spatial) padded with `value` (pads may be negative: crop)."""
    if not any(pb) and not any(pe):
        return x
    nd = len(pb)
    crop = tuple(slice(max(0, -b), x.shape[2 + i] - max(0, -e)) for i, (b, e) in enumerate(zip(pb, pe)))
    x = x[(slice(None), slice(None)) + crop]
    pb = [max(0, b) for b in pb]
    pe = [max(0, e) for e in pe]
    shape = x.shape[:2] + tuple(x.shape[2 + i] + pb[i] + pe[i] for i in range(nd))
    xp = np.full(shape, value, dtype=x.dtype)
    xp[(slice(None), slice(None)) + tuple(slice(b, b + s) for b, s in zip(pb, x.shape[2:]))] = x
    return xp


def _fill_tap(dst: np.ndarray, x: np.ndarray, off, dil, strides, pb) -> None:
    """dst[..., o] = x[..., o * stride + off * dil - pad_begin] (zero where that is outside x):
    the im2col rows of one kernel tap, copied from the unpadded input with only the border
    strips zeroed."""
    src, dst_in, lo_hi = [], [], []
    for o_n, n, o, d, s, p in zip(dst.shape[2:], x.shape[2:], off, dil, strides, pb):
        start = o * d - p                      # input index seen by output 0
        lo = min(o_n, (-start + s - 1) // s) if start < 0 else 0        # first output inside x
        hi = max(lo, min(o_n, (n - 1 - start) // s + 1)) if start <= n - 1 else lo  # one past the last
        lo_hi.append((lo, hi))
        dst_in.append(slice(lo, hi))
        src.append(slice(start + lo * s, start + (hi - 1) * s + 1, s) if hi > lo else slice(0, 0))
    dst[(Ellipsis,) + tuple(dst_in)] = x[(Ellipsis,) + tuple(src)]
    lead = (slice(None),) * (dst.ndim - len(lo_hi))
    for axis, (lo, hi) in enumerate(lo_hi):  # zero the strips before lo and after hi on each axis,
        pre = lead + tuple(dst_in[:axis])      # within the valid range of the axes before it
        if lo > 0:
            dst[pre + (slice(0, lo),)] = 0
        if hi < dst.shape[len(lead) + axis]:
            dst[pre + (slice(hi, None),)] = 0


def _finish(y: np.ndarray, b: np.ndarray | None, attrs: dict[str, Any]) -> np.ndarray:
    """Add the bias along axis 1 and apply the fused activation, in place."""
    if b is not None:
        y += as_f32(b).reshape((1, -1) + (1,) * (y.ndim - 2))
    return apply_activation(y, attrs)


@kernel("Conv")
def conv(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """ONNX Conv (any number of spatial dims) with optional fused activation."""
    b = inputs[2] if len(inputs) > 2 else None
    return [_finish(conv_nd(as_f32(inputs[0]), as_f32(inputs[1]), attrs), b, attrs)]


def conv_nd(x: np.ndarray, w: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """Convolution without bias of `x` (N, C, *spatial) by `w` (M, C/group, *kernel), in x's dtype."""
    k_shape = list(attrs.get("kernel_shape") or w.shape[2:])
    group = int(attrs.get("group", 1))
    g = conv_geometry(x.shape, k_shape, attrs)
    strides, dil, pb, pe, out = g.strides, g.dilations, g.pads_begin, g.pads_end, list(g.out)
    n, c = x.shape[:2]
    m = w.shape[0]
    cg, mg = c // group, m // group
    k_size = int(np.prod(k_shape))
    n_out = int(np.prod(out))

    if k_size == 1 and not any(pb) and not any(pe):  # 1x1: plain matmul, no im2col
        xs = x[(Ellipsis,) + tuple(slice(None, None, s) for s in strides)] if any(s != 1 for s in strides) else x
        xs = xs.reshape(n, group, cg, n_out)
        return np.matmul(w.reshape(group, mg, cg), xs).reshape((n, m) + tuple(out))

    offsets = list(itertools.product(*(range(k) for k in k_shape)))
    if group == c and cg == 1 and group > 1:  # depthwise: shifted slices times per-channel weights
        return _depthwise(x, w, offsets, dil, strides, pb, out)

    # im2col: cols[n, c, tap, pixels] straight from the unpadded input, then one GEMM.
    cols = _scratch(n * c * k_size * n_out, x.dtype).reshape((n, c, k_size) + tuple(out))
    for t, off in enumerate(offsets):
        _fill_tap(cols[:, :, t], x, off, dil, strides, pb)
    if n == 1 and group == 1:  # the common case: one plain 2-D GEMM
        y = np.matmul(w.reshape(m, c * k_size), cols.reshape(c * k_size, n_out))
    else:
        y = np.matmul(w.reshape(group, mg, cg * k_size), cols.reshape(n, group, cg * k_size, n_out))
    return y.reshape((n, m) + tuple(out))


_DW_BLOCK = 1 << 18  # floats of depthwise im2col per channel block (1 MiB): stays in L2


def _depthwise(x: np.ndarray, w: np.ndarray, offsets, dil, strides, pb, out) -> np.ndarray:
    """Depthwise conv (group == C, channel multiplier M/C) as per-channel im2col and a batched
    matmul, one L2-sized block of channels at a time (measured 20-30% faster than accumulating
    `window * weight[c, tap]` tap by tap, which costs two numpy passes per tap)."""
    n, c = x.shape[:2]
    m = w.shape[0]
    mult = m // c
    k_size = len(offsets)
    n_out = int(np.prod(out))
    wk = w.reshape(c, mult, k_size)
    y = np.empty((n, c, mult, n_out), x.dtype)
    cb = max(1, min(c, _DW_BLOCK // max(1, n * k_size * n_out)))
    scratch = _scratch(n * cb * k_size * n_out, x.dtype)
    for c0 in range(0, c, cb):
        c1 = min(c, c0 + cb)
        cols = scratch[: n * (c1 - c0) * k_size * n_out].reshape((n, c1 - c0, k_size) + tuple(out))
        for t, off in enumerate(offsets):
            _fill_tap(cols[:, :, t], x[:, c0:c1], off, dil, strides, pb)
        np.matmul(wk[c0:c1], cols.reshape(n, c1 - c0, k_size, n_out), out=y[:, c0:c1])
    return y.reshape((n, m) + tuple(out))


@kernel("ConvTranspose")
def conv_transpose(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """ONNX ConvTranspose: one matmul to per-tap columns, then col2im as strided adds."""
    x, w = as_f32(inputs[0]), as_f32(inputs[1])
    b = inputs[2] if len(inputs) > 2 else None
    group = int(attrs.get("group", 1))
    n, c = x.shape[:2]
    in_sp = list(x.shape[2:])
    nd = len(in_sp)
    k_shape = list(attrs.get("kernel_shape") or w.shape[2:])
    strides = list(attrs.get("strides") or [1] * nd)
    dil = list(attrs.get("dilations") or [1] * nd)
    opad = list(attrs.get("output_padding") or [0] * nd)
    auto_pad = attrs.get("auto_pad", "NOTSET") or "NOTSET"
    pads = attrs.get("pads")
    out_shape = attrs.get("output_shape")
    if out_shape is not None:
        out_shape = list(out_shape)[-nd:]
    full = [strides[i] * (in_sp[i] - 1) + opad[i] + (k_shape[i] - 1) * dil[i] + 1 for i in range(nd)]
    if pads is None and out_shape is None and auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * nd)
    if pads is None:  # SAME_* or an explicit output_shape: pads follow from the output shape
        if out_shape is None:
            out_shape = [in_sp[i] * strides[i] for i in range(nd)]
        total = [full[i] - out_shape[i] for i in range(nd)]
        if auto_pad == "SAME_UPPER":
            pb = [t // 2 for t in total]
        else:
            pb = [t - t // 2 for t in total]
    else:
        pb = list(pads[:nd])
        if out_shape is None:
            out_shape = [full[i] - pads[i] - pads[i + nd] for i in range(nd)]

    mg = w.shape[1]
    m = mg * group
    cg = c // group
    k_size = int(np.prod(k_shape))
    # cols[n, g, mg, tap, *in_sp] = sum_c w[g, c, mg, tap] * x[n, g, c, pixels]
    wt = w.reshape(group, cg, mg * k_size).transpose(0, 2, 1)
    cols = np.matmul(wt, x.reshape(n, group, cg, -1)).reshape((n, m, k_size) + tuple(in_sp))
    buf = np.zeros((n, m) + tuple(max(f, pb[i] + out_shape[i]) for i, f in enumerate(full)), np.float32)
    for t, off in enumerate(itertools.product(*(range(k) for k in k_shape))):
        idx = tuple(slice(o * d, o * d + (s_in - 1) * s + 1, s) for o, d, s, s_in in zip(off, dil, strides, in_sp))
        buf[(Ellipsis,) + idx] += cols[:, :, t]
    y = buf[(Ellipsis,) + tuple(slice(p, p + o) for p, o in zip(pb, out_shape))]
    y = np.ascontiguousarray(y)
    return [_finish(y, b, attrs)]
