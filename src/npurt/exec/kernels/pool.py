"""MaxPool, AveragePool (pads, auto_pad, ceil_mode, dilations, count_include_pad), global pools.

Windows are reduced separably, one spatial axis at a time (k1 + k2 strided slice operations for
a k1 x k2 window instead of k1 * k2); max and sum are both separable. MaxPool's optional Indices
output takes the per-tap path, which tracks the argmax.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable

import numpy as np

from npurt.exec.kernels import as_f32, kernel
from npurt.exec.kernels.conv import pad_spatial
from npurt.tensor.window import conv_geometry


def _pool_geometry(x_shape, attrs):
    """(k, strides, dil, pads_begin, pads_end_with_ceil_extra, pads_end, out) for pooling."""
    k = list(attrs["kernel_shape"])
    g = conv_geometry(x_shape, k, attrs)
    strides, dil, pb, pe, out = g.strides, g.dilations, g.pads_begin, g.pads_end, list(g.out)
    pe_ext = list(pe)
    if attrs.get("ceil_mode", 0):
        for i, n in enumerate(x_shape[2:]):
            eff = (k[i] - 1) * dil[i] + 1
            o = -(-(n + pb[i] + pe[i] - eff) // strides[i]) + 1
            if (o - 1) * strides[i] >= n + pb[i]:  # last window must start inside input or left pad
                o -= 1
            out[i] = o
            pe_ext[i] = max(pe[i], (o - 1) * strides[i] + eff - n - pb[i])
    return k, strides, dil, pb, pe_ext, pe, out


def _separable(xp: np.ndarray, k, strides, dil, out, op: Callable) -> np.ndarray:
    """Reduce every window of padded `xp` with binary `op`, one spatial axis at a time."""
    for i in range(len(k)):
        axis = 2 + i
        acc = None
        for o in range(k[i]):
            idx = [slice(None)] * xp.ndim
            idx[axis] = slice(o * dil[i], o * dil[i] + (out[i] - 1) * strides[i] + 1, strides[i])
            win = xp[tuple(idx)]
            acc = win.copy() if acc is None else op(acc, win, out=acc)
        xp = acc
    return xp


@kernel("MaxPool")
def max_pool(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """ONNX MaxPool; the second output (Indices) is computed only when the node asks for it."""
    x = inputs[0]
    x = as_f32(x) if x.dtype.kind == "f" else x
    k, strides, dil, pb, pe_ext, _, out = _pool_geometry(x.shape, attrs)
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = pad_spatial(x, pb, pe_ext, lowest)
    y = _separable(xp, k, strides, dil, out, np.maximum)
    if attrs.get("_n_outputs", 1) < 2:
        return [y]
    return [y, _argmax_indices(x, xp, k, strides, dil, pb, out, int(attrs.get("storage_order", 0)))]


def _argmax_indices(x, xp, k, strides, dil, pb, out, storage_order) -> np.ndarray:
    """Flat indices into `x` of each window's first maximum (row- or column-major)."""
    n, c = x.shape[:2]
    sp = x.shape[2:]
    best = np.full((n, c) + tuple(out), -np.inf, np.float64)
    arg = np.zeros((n, c) + tuple(out), np.int64)
    grids = np.meshgrid(*(np.arange(o) for o in out), indexing="ij")
    for off in itertools.product(*(range(kk) for kk in k)):
        idx = tuple(slice(o * d, o * d + (m - 1) * s + 1, s) for o, d, s, m in zip(off, dil, strides, out))
        win = xp[(Ellipsis,) + idx]
        better = win > best
        coords = [g * s + o * d - p for g, s, o, d, p in zip(grids, strides, off, dil, pb)]
        if storage_order:
            flat = np.zeros_like(coords[0])
            for ax in reversed(range(len(sp))):
                flat = flat * sp[ax] + coords[ax]
        else:
            flat = np.zeros_like(coords[0])
            for ax in range(len(sp)):
                flat = flat * sp[ax] + coords[ax]
        best = np.where(better, win, best)
        arg = np.where(better, flat, arg)
    base = (np.arange(n)[:, None] * c + np.arange(c)[None, :]) * int(np.prod(sp))
    return arg + base.reshape((n, c) + (1,) * len(out))


@kernel("AveragePool")
def average_pool(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """ONNX AveragePool: window sum / element count (pads counted iff count_include_pad;
    the ceil_mode overhang is never counted)."""
    x = as_f32(inputs[0])
    k, strides, dil, pb, pe_ext, pe, out = _pool_geometry(x.shape, attrs)
    total = _separable(pad_spatial(x, pb, pe_ext), k, strides, dil, out, np.add)
    if not any(pb) and not any(pe_ext):
        return [total * np.float32(1.0 / np.prod(k))]
    ones = np.ones((1, 1) + x.shape[2:], np.float32)
    if attrs.get("count_include_pad", 0):
        mask = pad_spatial(pad_spatial(ones, pb, pe, 1.0), [0] * len(k), [a - b for a, b in zip(pe_ext, pe)])
    else:
        mask = pad_spatial(ones, pb, pe_ext)
    count = _separable(mask, k, strides, dil, out, np.add)
    return [total / count]


@kernel("GlobalAveragePool")
def global_average_pool(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = as_f32(inputs[0])
    return [x.mean(axis=tuple(range(2, x.ndim)), keepdims=True, dtype=np.float32)]


@kernel("GlobalMaxPool")
def global_max_pool(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = inputs[0]
    return [x.max(axis=tuple(range(2, x.ndim)), keepdims=True)]


@kernel("LpPool")
def lp_pool(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """(sum |x|^p over the window)^(1/p); pads contribute zeros."""
    x = as_f32(inputs[0])
    p = float(attrs.get("p", 2))
    k, strides, dil, pb, pe_ext, _, out = _pool_geometry(x.shape, attrs)
    s = _separable(pad_spatial(np.abs(x) ** np.float32(p), pb, pe_ext), k, strides, dil, out, np.add)
    return [(s ** np.float32(1.0 / p)).astype(np.float32)]


@kernel("GlobalLpPool")
def global_lp_pool(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = as_f32(inputs[0])
    p = float(attrs.get("p", 2))
    s = (np.abs(x) ** np.float32(p)).sum(axis=tuple(range(2, x.ndim)), keepdims=True)
    return [(s ** np.float32(1.0 / p)).astype(np.float32)]
