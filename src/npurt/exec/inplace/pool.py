"""MaxPool between NC1HWC2 slots, without padding: the pool kernel's own separable reduction (rows, then columns,
with `np.maximum` in the same order) run on the stored values. Exact: fp16 -> float32 -> fp16 is lossless and max
commutes with it; int8 dequantisation is increasing, so the max of the codes is the code of the max, stored through
the 256-entry requantisation table (skipped when it is the identity)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

import npurt._kernels as _kernels
from npurt.exec.inplace.binding import StepBinding
from npurt.exec.inplace.epilogue import copier, stored_table
from npurt.exec.inplace.slots import Skip, activation, all_values, bits, quantize
from npurt.exec.kernels.pool import _pool_geometry


def _windows(axis: int, k: int, stride: int, dil: int, n_out: int) -> list[tuple]:
    """The index of each of the k strided window slices along `axis` of an (N, C1, H, W, C2) view."""
    return [(slice(None),) * axis + (slice(o * dil, o * dil + (n_out - 1) * stride + 1, stride),) for o in range(k)]


def _pair(node: Any, ctx: StepBinding) -> tuple[Any, Any, str]:
    """(input storage, output storage, kind) of a pool between two NC1HWC2 slots of one type and C1 x C2 blocking."""
    si, ki = activation(node.inputs[0], ctx)
    so, ko = activation(node.outputs[0], ctx)
    if ki != ko or si.dims[1] != so.dims[1] or si.dims[4] != so.dims[4] or si.dtype is not so.dtype \
            or any(node.outputs[1:]):
        raise Skip
    return si, so, ki


def _padding_lanes(y: np.ndarray, so) -> np.ndarray:
    """The last C1 block's padding lanes of slot `y` (empty when the channels fill it): they must stay zero."""
    return y[:, -1, ..., so.shape[1] - (so.dims[1] - 1) * so.dims[4]:]


def max_pool(node: Any, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    si, so, ki = _pair(node, ctx)
    k, strides, dil, pb, pe_ext, _, out = _pool_geometry(tuple(si.shape), attrs)
    if any(pb) or any(pe_ext) or tuple(so.shape[2:]) != tuple(out):
        raise Skip
    x, y = ctx.slot(node.inputs[0]), ctx.slot(node.outputs[0])
    n, c1, _, w, c2 = x.shape
    widen = narrow = None
    if ki == "fp16":                             # numpy's float16 maximum is slow: reduce in float32 (exact)
        xs, ys = x, y
        x = ctx.scratch2(x.size).reshape(x.shape)
        y = ctx.scratch(y.size).reshape(y.shape)
        widen, narrow = copier(x, xs), copier(ys, y)
    rows = ctx.typed_scratch(x.dtype, n * c1 * out[0] * w * c2).reshape(n, c1, out[0], w, c2)
    row_windows = _windows(2, k[0], strides[0], dil[0], out[0])
    col_windows = _windows(3, k[1], strides[1], dil[1], out[1])
    requantise = None
    if ki == "int8":
        _, values = all_values("int8", si)
        table = stored_table("int8", values, so)
        if not np.array_equal(table, np.arange(256, dtype=np.uint16).astype(np.uint8)):
            ybits = bits(y)
            lookup = _kernels.lookup_fn(ybits, table, ybits) or \
                (lambda: np.take(table, ybits.copy(), out=ybits, mode="clip"))
            padding = _padding_lanes(y, so)

            def requantise() -> None:
                lookup()
                padding.fill(0)

    def run() -> None:
        if widen is not None:
            widen()
        np.copyto(rows, x[row_windows[0]])
        for win in row_windows[1:]:
            np.maximum(rows, x[win], out=rows)
        np.copyto(y, rows[col_windows[0]])
        for win in col_windows[1:]:
            np.maximum(y, rows[win], out=y)
        if narrow is not None:
            narrow()
        if requantise is not None:
            requantise()
    return run


def global_average_pool(node: Any, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    """GlobalAveragePool between NC1HWC2 slots: the stored values widened to float32 (int8 dequantised as the slot
    reader does), each channel's H x W plane made contiguous as in the NCHW array the kernel gets, and `np.mean`
    over it — the kernel's own call on the same memory order, so the same sums."""
    si, so, ki = _pair(node, ctx)
    if tuple(so.shape[2:]) != (1, 1):
        raise Skip
    x, y = ctx.slot(node.inputs[0]), ctx.slot(node.outputs[0])
    n, c1, h, w, c2 = x.shape
    wide = ctx.scratch2(x.size).reshape(x.shape)
    planes = ctx.typed_scratch(np.float32, x.size).reshape(n, c1, c2, h, w)
    means = ctx.scratch(n * c1 * c2).reshape(n, c1, c2, 1, 1)
    if ki == "fp16":
        widen = copier(wide, x)
        narrow = copier(y, means.reshape(y.shape))
    else:
        scale, shift = np.float32(si.scale), np.float32(si.zp * si.scale)
        padding = _padding_lanes(y, so)

        def widen() -> None:                     # int8 -> float32 is exact: the reader's int8 * float32 product
            np.copyto(wide, x)
            np.multiply(wide, scale, out=wide)
            np.subtract(wide, shift, out=wide)

        def narrow() -> None:
            y[...] = quantize(means.reshape(y.shape), so)
            padding.fill(0)

    def run() -> None:
        widen()
        np.copyto(planes, wide.transpose(0, 1, 4, 2, 3))
        np.mean(planes, axis=(3, 4), dtype=np.float32, out=means, keepdims=True)
        narrow()
    return run
