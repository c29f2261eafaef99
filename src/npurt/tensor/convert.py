"""Layout conversions NCHW / NHWC <-> NC1HWC2 and NCHW <-> NHWC, for any dtype, batch, padded width and extra C1.

Packing (to NC1HWC2, or to NHWC with a padded row stride) writes zeros into every padding lane: channels >= C
of the last block, whole extra C1 blocks and pixels >= W of each row. Unpacking ignores them. With `out=` the
result is written in place; `out` must be a C-contiguous, writeable array of exactly the result shape and the
input's dtype, and every check runs before the first byte is written. Errors are NpuError(INVALID_ARGUMENT).

Speed: a byte-wise transpose in numpy runs at ~30% of memcpy, so the copies move the widest unit the
permutation allows (a whole C2 group as one 4/8/16-byte item where channels stay together) and walk the tensor
in blocks that stay in L2; see bench/layout.py for the measured ratios against np.copyto. Where the compiled
kernels (`npurt._kernels`) handle the arrays they do the whole conversion (SIMD tile transposes, group moves),
bit-identical to the numpy code below them, which stays the reference.
"""
from __future__ import annotations

import math

import numpy as np

import npurt._kernels as _kernels
from npurt.errors import ErrorCode, NpuError
from npurt.memory.cargs import as_int
from npurt.tensor._kernels import move_groups, pack_lanes, unpack_lanes
from npurt.tensor.layout import MAX_TENSOR_SIZE, logical_shape, native_shape

__all__ = ["nchw_to_nc1hwc2", "nc1hwc2_to_nchw", "nhwc_to_nc1hwc2", "nc1hwc2_to_nhwc",
           "nchw_to_nhwc", "nhwc_to_nchw"]


def _bad(msg: str) -> NpuError:
    return NpuError(ErrorCode.INVALID_ARGUMENT, msg)


def _input(x: object, ndim: int, what: str) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        x = np.asarray(x)
    if x.ndim != ndim:
        raise _bad(f"{what}: expected a {ndim}-D array, got shape {x.shape}")
    if x.dtype.hasobject:
        raise _bad(f"{what}: object arrays are not tensors")
    return x


def _output(out: np.ndarray | None, shape: tuple[int, ...], x: np.ndarray, what: str) -> np.ndarray:
    """`out` validated against the result shape and dtype (or a fresh array, if its size is a tensor's)."""
    if out is None:
        nbytes = math.prod(shape) * x.dtype.itemsize
        if nbytes > MAX_TENSOR_SIZE:
            raise _bad(f"{what}: the result {shape} would be {nbytes} bytes, more than a tensor can hold "
                       f"({MAX_TENSOR_SIZE}: sizes are uint32 in the tensor attrs)")
        return np.empty(shape, dtype=x.dtype)
    if not isinstance(out, np.ndarray):
        raise _bad(f"{what}: out= must be a numpy array, got {type(out).__name__}")
    if out.shape != shape:
        raise _bad(f"{what}: out= has shape {out.shape}, the result needs {shape}")
    if out.dtype != x.dtype:
        raise _bad(f"{what}: out= has dtype {out.dtype}, the input is {x.dtype}")
    if not out.flags.c_contiguous:
        raise _bad(f"{what}: out= must be C-contiguous")
    if not out.flags.writeable:
        raise _bad(f"{what}: out= is read-only")
    if out.size and _overlap(out, x):
        raise _bad(f"{what}: out= overlaps the input")
    return out


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays share memory (exact for disjoint views of one arena; undecidable counts as overlap)."""
    if not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=100_000))
    except np.exceptions.TooHardError:
        return True


def _width(width: int | None, stored: int, what: str) -> int:
    w = stored if width is None else as_int(width, f"{what}: width")
    if not 0 <= w <= stored:
        raise _bad(f"{what}: width {w} does not fit the stored row of {stored} pixels")
    return w


def _stride(w_stride: int | None, w: int, what: str) -> int:
    ws = w if w_stride is None or w_stride == 0 else as_int(w_stride, f"{what}: w_stride")
    if ws < w:
        raise _bad(f"{what}: w_stride {ws} is smaller than the width {w}")
    return ws


def _zero_nc1hwc2_padding(out: np.ndarray, channels: int, width: int) -> None:
    """Zero the padding lanes of an NC1HWC2 array: pixels >= width, channels >= `channels`."""
    c2 = out.shape[4]
    if width < out.shape[3]:
        out[:, :, :, width:, :] = 0
    full, rem = divmod(channels, c2)
    if rem:
        out[:, full, :, :width, rem:] = 0
        full += 1
    if full < out.shape[1]:
        out[:, full:] = 0


def nchw_to_nc1hwc2(x: np.ndarray, c2: int, c1: int | None = None, w_stride: int | None = None,
                    out: np.ndarray | None = None) -> np.ndarray:
    """Pack NCHW (N,C,H,W) into NC1HWC2 (N,C1,H,w_stride,C2); padding lanes are zero."""
    x = _input(x, 4, "nchw_to_nc1hwc2")
    n, c, h, w = x.shape
    dims = native_shape(x.shape, c2, c1, w_stride)
    out = _output(out, dims, x, "nchw_to_nc1hwc2")
    if _kernels.planes_to_lanes(out, x):
        return out
    _zero_nc1hwc2_padding(out, c, w)
    full, rem = divmod(c, c2)
    for b in range(n if full else 0):
        pack_lanes(out[b, :full, :, :w, :], x[b, :full * c2].reshape(full, c2, h, w))
    if rem:
        np.copyto(out[:, full, :, :w, :rem], x[:, full * c2:].transpose(0, 2, 3, 1))
    return out


def nc1hwc2_to_nchw(x: np.ndarray, channels: int, width: int | None = None,
                    out: np.ndarray | None = None) -> np.ndarray:
    """Unpack NC1HWC2 (N,C1,H,W',C2) into NCHW (N,channels,H,width); width defaults to W'."""
    x = _input(x, 5, "nc1hwc2_to_nchw")
    shape = logical_shape(x.shape, channels, width)
    n, c, h, w = shape
    c2 = x.shape[4]
    out = _output(out, shape, x, "nc1hwc2_to_nchw")
    if _kernels.lanes_to_planes(out, x):
        return out
    full, rem = divmod(c, c2)
    for b in range(n if full else 0):
        unpack_lanes(out[b, :full * c2].reshape(full, c2, h, w), x[b, :full, :, :w, :])
    if rem:
        np.copyto(out[:, full * c2:], x[:, full, :, :w, :rem].transpose(0, 3, 1, 2))
    return out


def nhwc_to_nc1hwc2(x: np.ndarray, c2: int, c1: int | None = None, w_stride: int | None = None,
                    width: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """Pack NHWC (N,H,W',C) — rows of W' pixels of which the first `width` are valid — into NC1HWC2."""
    x = _input(x, 4, "nhwc_to_nc1hwc2")
    n, h, ws_in, c = x.shape
    w = _width(width, ws_in, "nhwc_to_nc1hwc2")
    dims = native_shape((n, c, h, w), c2, c1, w_stride)
    out = _output(out, dims, x, "nhwc_to_nc1hwc2")
    if _kernels.regroup(out, x, w):
        return out
    _zero_nc1hwc2_padding(out, c, w)
    full, rem = divmod(c, c2)
    if full:
        src = x[:, :, :w, :full * c2].reshape(n, h, w, full, c2)
        move_groups(out[:, :full, :, :w, :], src, (0, 3, 1, 2, 4), tile_axis=2)
    if rem:
        np.copyto(out[:, full, :, :w, :rem], x[:, :, :w, full * c2:])
    return out


def nc1hwc2_to_nhwc(x: np.ndarray, channels: int, width: int | None = None, w_stride: int | None = None,
                    out: np.ndarray | None = None) -> np.ndarray:
    """Unpack NC1HWC2 into NHWC (N,H,w_stride,channels); rows padded to w_stride pixels are zero-filled."""
    x = _input(x, 5, "nc1hwc2_to_nhwc")
    n, c, h, w = logical_shape(x.shape, channels, width)
    ws = _stride(w_stride, w, "nc1hwc2_to_nhwc")
    out = _output(out, (n, h, ws, c), x, "nc1hwc2_to_nhwc")
    if _kernels.regroup(out, x, w):
        return out
    if ws > w:
        out[:, :, w:, :] = 0
    c2 = x.shape[4]
    full, rem = divmod(c, c2)
    if full:
        dst = out[:, :, :w, :full * c2].reshape(n, h, w, full, c2)
        move_groups(dst, x[:, :full, :, :w, :], (0, 2, 3, 1, 4), tile_axis=1)
    if rem:
        np.copyto(out[:, :, :w, full * c2:], x[:, full, :, :w, :rem])
    return out


def nchw_to_nhwc(x: np.ndarray, w_stride: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """NCHW (N,C,H,W) to NHWC (N,H,w_stride,C); the row padding (pixels >= W) is zero-filled."""
    x = _input(x, 4, "nchw_to_nhwc")
    n, c, h, w = x.shape
    ws = _stride(w_stride, w, "nchw_to_nhwc")
    out = _output(out, (n, h, ws, c), x, "nchw_to_nhwc")
    if _kernels.planes_to_lanes(out.reshape(n, 1, h, ws, c), x):
        return out
    if ws > w:
        out[:, :, w:, :] = 0
    pack_lanes(out[:, :, :w, :], x)
    return out


def nhwc_to_nchw(x: np.ndarray, width: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """NHWC (N,H,W',C), of which the first `width` pixels per row are valid, to NCHW (N,C,H,width)."""
    x = _input(x, 4, "nhwc_to_nchw")
    n, h, ws, c = x.shape
    w = _width(width, ws, "nhwc_to_nchw")
    out = _output(out, (n, c, h, w), x, "nhwc_to_nchw")
    if x.flags.c_contiguous and _kernels.lanes_to_planes(out, x.reshape(n, 1, h, ws, c)):
        return out
    unpack_lanes(out, x[:, :, :w, :])
    return out
