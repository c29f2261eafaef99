"""MaxPool between NC1HWC2 slots: one compiled call (`npk_max_pool`, padding included), or without the kernels and
padding the pool kernel's own separable reduction (rows, then columns, with `np.maximum` in the same order) run on
the stored values. Exact: fp16 -> float32 -> fp16 is lossless and max commutes with it; int8 dequantisation is
increasing, so the max of the codes is the code of the max, stored through the 256-entry requantisation table
(skipped when it is the identity)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

import npurt._kernels as _kernels
from npurt.exec.inplace.binding import StepBinding
from npurt.exec.inplace.epilogue import copier, narrow, stored_table, widen
from npurt.exec.inplace.slots import Skip, activation, all_values, bits
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
    if tuple(so.shape[2:]) != tuple(out):
        raise Skip
    x, y = ctx.slot(node.inputs[0]), ctx.slot(node.outputs[0])
    n, c1, h, w, c2 = x.shape
    table = None
    if ki == "int8":
        _, values = all_values("int8", si)
        table = stored_table("int8", values, so)
        if np.array_equal(table, np.arange(256, dtype=np.uint16).astype(np.uint8)):
            table = None
    lanes = (c1, so.shape[1] - (c1 - 1) * c2)
    compiled = None
    if x.flags.c_contiguous and y.flags.c_contiguous:       # so the reshapes below are views of the slots
        compiled = _kernels.max_pool(x.reshape(n * c1, h, w, c2), y.reshape(n * c1, *y.shape[2:]), tuple(k),
                                     tuple(strides), tuple(dil), tuple(pb), table, lanes)
    if compiled is not None:
        return compiled
    if any(pb) or any(pe_ext):
        raise Skip
    return _numpy_max_pool(x, y, so, ki, table, ctx, k, strides, dil, out)


def _numpy_max_pool(x: np.ndarray, y: np.ndarray, so, ki: str, table: np.ndarray | None, ctx: StepBinding, k, strides,
                    dil, out) -> Callable[[], None]:
    """MaxPool without padding in numpy: the reference kernel's separable reduction on the stored values."""
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
    after = [narrow] if narrow is not None else []
    if table is not None:                        # requantise, keeping the padding lanes zero
        ybits = bits(y)
        padding = _padding_lanes(y, so)
        after += [_kernels.lookup_fn(ybits, table, ybits) or
                  (lambda: np.take(table, ybits.copy(), out=ybits, mode="clip")), lambda: padding.fill(0)]

    def run() -> None:
        if widen is not None:
            widen()
        np.copyto(rows, x[row_windows[0]])
        for win in row_windows[1:]:
            np.maximum(rows, x[win], out=rows)
        np.copyto(y, rows[col_windows[0]])
        for win in col_windows[1:]:
            np.maximum(y, rows[win], out=y)
        for step in after:
            step()
    return run


def global_average_pool(node: Any, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    """GlobalAveragePool between NC1HWC2 slots: the stored values widened to float32 (int8 dequantised as the slot
    reader does) into the channels' contiguous H x W planes, as in the NCHW array the kernel gets, and `np.mean`'s
    own sum and division over them — the kernel's arithmetic on the same memory order, so the same results. The
    compiled kernel (`_kernels.global_avg_pool_fn`) does the same sums and division in one call."""
    si, so, ki = _pair(node, ctx)
    if tuple(so.shape[2:]) != (1, 1):
        raise Skip
    x, y = ctx.slot(node.inputs[0]), ctx.slot(node.outputs[0])
    n, c1, h, w, c2 = x.shape
    if n == 1 and y.flags.c_contiguous:
        compiled = _kernels.global_avg_pool_fn(x[0], y.reshape(-1), so.shape[1], None if ki == "fp16" else (
            si.scale, si.zp * si.scale), (1.0, 0.0) if ki == "fp16" else (1.0 / so.scale, so.zp))
        if compiled is not None:
            return compiled
    planes = ctx.typed_scratch(np.float32, x.size).reshape(n * c1 * c2, h * w)
    means = ctx.scratch(n * c1 * c2)
    count = np.intp(h * w)                       # np.mean divides the float32 sums by the element count, an intp
    quant = None if ki == "fp16" else (si.scale, si.zp * si.scale)
    widen = _kernels.lanes_to_planes_fn(planes.reshape(n, c1 * c2, h, w), x, quant) or \
        _numpy_planes(planes.reshape(n, c1, c2, h, w), x, si, ki)
    store = narrow(y.reshape(-1), means, so, ki)
    padding = _padding_lanes(y, so)              # int8 codes of zero are not zero: the padding lanes are reset

    def run() -> None:
        widen()
        np.add.reduce(planes, axis=1, dtype=np.float32, out=means)
        np.true_divide(means, count, out=means, casting="unsafe")
        store()
        padding.fill(0)
    return run


def whole_map_average_pool(node: Any, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    """An AveragePool whose one window is the whole unpadded map (a classifier's 7 x 7 pool), between NC1HWC2 slots:
    its kernel's sums — row after row, then column after column, then times 1 / (H W) — on the values widened to
    float32 in the slot's own lane order (every add a long contiguous run of C1 x W x C2 or C1 x C2 lanes)."""
    si, so, ki = _pair(node, ctx)
    k, _, dil, pb, pe_ext, _, out = _pool_geometry(tuple(si.shape), attrs)
    if tuple(k) != tuple(si.shape[2:]) or any(pb) or any(pe_ext) or any(d != 1 for d in dil) or tuple(out) != (1, 1):
        raise Skip
    x, y = ctx.slot(node.inputs[0]), ctx.slot(node.outputs[0])
    n, c1, h, w, c2 = x.shape
    wide = ctx.typed_scratch(np.float32, x.size).reshape(x.shape)
    rows = ctx.scratch2(n * c1 * w * c2)[:n * c1 * w * c2].reshape(n, c1, w, c2)
    sums = ctx.scratch(n * c1 * c2)[:n * c1 * c2].reshape(n, c1, c2)
    inverse = np.float32(1.0 / (h * w))
    load = widen(wide, x, si, ki)
    store = narrow(y.reshape(n, c1, c2), sums, so, ki)
    padding = _padding_lanes(y, so)

    def run() -> None:
        load()
        np.copyto(rows, wide[:, :, 0])
        for r in range(1, h):
            np.add(rows, wide[:, :, r], out=rows)
        np.copyto(sums, rows[:, :, 0])
        for c in range(1, w):
            np.add(sums, rows[:, :, c], out=sums)
        np.multiply(sums, inverse, out=sums)
        store()
        padding.fill(0)
    return run


def _numpy_planes(planes: np.ndarray, x: np.ndarray, si, ki: str) -> Callable[[], None]:
    """Stored NC1HWC2 values into float32 (N, C1, C2, H, W) planes in numpy (int8 dequantised as the reader does)."""
    lanes = x.transpose(0, 1, 4, 2, 3)
    if ki == "fp16":
        return lambda: np.copyto(planes, lanes)
    scale, shift = np.float32(si.scale), np.float32(si.zp * si.scale)

    def run() -> None:                           # int8 -> float32 is exact: the reader's int8 * float32 product
        np.copyto(planes, lanes)
        np.multiply(planes, scale, out=planes)
        np.subtract(planes, shift, out=planes)
    return run
