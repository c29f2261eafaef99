"""Resize (opset 10/11/13/18/19) and Upsample: nearest, linear and cubic, applied separably.

Each resized axis maps output coordinates to input coordinates with the
`coordinate_transformation_mode`, then gathers (nearest) or blends taps (linear: 2, cubic: 4)
along that axis. N-linear / N-cubic interpolation is exactly the product of 1-D ones, so one axis
at a time is both correct and cheap; antialias widens the filter by 1/scale when downsampling.
"""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.exec.kernels import as_f32, kernel


def _source_coords(mode: str, n_in: int, n_out: int, scale: float, roi: tuple[float, float]) -> np.ndarray:
    """Input coordinate of every output index along one axis, computed in float32 as
    onnxruntime does (it decides ties of the nearest modes)."""
    x = np.arange(n_out, dtype=np.float32)
    scale = np.float32(scale)
    n_out_f = n_out if mode == "align_corners" else scale * n_in  # spec: the integer resized length
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if n_out > 1 else np.zeros_like(x)
    if mode == "align_corners":
        return x * np.float32((n_in - 1) / (n_out - 1)) if n_out != 1 else np.zeros_like(x)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    if mode == "half_pixel_symmetric":
        adj = n_out / n_out_f
        center = n_in / 2
        offset = center * (1 - adj)
        return offset + (x + 0.5) / scale - 0.5
    if mode == "tf_crop_and_resize":
        start, end = roi
        if n_out_f != 1:
            return start * (n_in - 1) + x * (end - start) * (n_in - 1) / (n_out_f - 1)
        return np.full_like(x, 0.5 * (start + end) * (n_in - 1))
    raise NpuError(ErrorCode.NOT_SUPPORTED, f"Resize coordinate_transformation_mode '{mode}' is not supported")


def _nearest_index(xs: np.ndarray, mode: str, n_in: int) -> np.ndarray:
    if mode == "round_prefer_floor":
        i = np.ceil(xs - 0.5)
    elif mode == "round_prefer_ceil":
        i = np.floor(xs + 0.5)
    elif mode == "floor":
        i = np.floor(xs)
    elif mode == "ceil":
        i = np.ceil(xs)
    else:
        raise NpuError(ErrorCode.NOT_SUPPORTED, f"Resize nearest_mode '{mode}' is not supported")
    return np.clip(i, 0, n_in - 1).astype(np.int64)


def _cubic(d: np.ndarray, a: float) -> np.ndarray:
    """Keys cubic convolution kernel at distance |d| (0 beyond 2)."""
    d = np.abs(d)
    return np.where(
        d <= 1,
        ((a + 2) * d - (a + 3)) * d * d + 1,
        np.where(d < 2, ((a * d - 5 * a) * d + 8 * a) * d - 4 * a, 0.0),
    )


def _taps(xs: np.ndarray, scale: float, mode: str, attrs: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(indices, weights), each (n_out, taps), of linear / cubic interpolation at coordinates `xs`.

    As in the ONNX reference, the base tap is floor(x) with ratio in (0, 1] (an integer x uses
    base x - 1 and ratio 1). With antialias the filter is widened by 1/scale when downsampling.
    """
    base = np.floor(xs)
    ratio = xs - base
    whole = ratio == 0
    base = np.where(whole, base - 1, base).astype(np.int64)
    ratio = np.where(whole, 1.0, ratio)
    s = min(scale, 1.0) if attrs.get("antialias", 0) else 1.0
    a = float(attrs.get("cubic_coeff_a", -0.75))
    if mode == "linear":
        start = int(np.floor(-1 / s) + 1)
        offs = np.arange(start, 2 - start)
        w = np.clip(1 - np.abs((offs[None, :] - ratio[:, None]) * s), 0, 1)
    else:
        start = int(np.floor(-2 / s) + 1)
        offs = np.arange(start, 2 - start)
        w = _cubic((offs[None, :] - ratio[:, None]) * s, a)
    if s != 1.0:
        w = w / w.sum(axis=1, keepdims=True)
    return base[:, None] + offs[None, :], w


def _resize_axis(x: np.ndarray, axis: int, n_out: int, scale: float, roi, attrs: dict[str, Any],
                 mode: str) -> np.ndarray:
    n_in = x.shape[axis]
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    xs = _source_coords(ctm, n_in, n_out, scale, roi)
    outside = (xs < 0) | (xs > n_in - 1) if ctm == "tf_crop_and_resize" else None
    if mode == "nearest":
        y = np.take(x, _nearest_index(xs, attrs.get("nearest_mode", "round_prefer_floor"), n_in), axis=axis)
    else:
        taps, w = _taps(xs, scale, mode, attrs)
        if attrs.get("exclude_outside", 0):
            w = np.where((taps < 0) | (taps >= n_in), 0.0, w)
            w = w / w.sum(axis=1, keepdims=True)
        taps = np.clip(taps, 0, n_in - 1)
        dtype = np.float32 if mode == "linear" and not attrs.get("antialias", 0) else np.float64
        xm = np.moveaxis(x, axis, -1).astype(dtype, copy=False)
        y = np.zeros(xm.shape[:-1] + (n_out,), dtype)
        for k in range(taps.shape[1]):
            y += xm[..., taps[:, k]] * w[:, k].astype(dtype)
        y = np.moveaxis(y.astype(np.float32, copy=False), -1, axis)
    if outside is not None and outside.any():
        shape = [1] * x.ndim
        shape[axis] = n_out
        y = np.where(outside.reshape(shape), np.float32(attrs.get("extrapolation_value", 0.0)), y)
    return y


def _resize(x: np.ndarray, scales, sizes, roi, attrs: dict[str, Any]) -> np.ndarray:
    mode = attrs.get("mode", "nearest")
    if mode not in ("nearest", "linear", "cubic"):
        raise NpuError(ErrorCode.NOT_SUPPORTED, f"Resize mode '{mode}' is not supported")
    rank = x.ndim
    axes = [a % rank for a in attrs.get("axes", range(rank))]
    full_scales = [1.0] * rank
    full_sizes = list(x.shape)
    full_roi = [(0.0, 1.0)] * rank
    if roi is not None and roi.size:
        r = [float(v) for v in roi.reshape(-1)]
        for i, a in enumerate(axes):
            full_roi[a] = (r[i], r[i + len(axes)])
    if sizes is not None and sizes.size:
        sz = [int(v) for v in sizes.reshape(-1)]
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        ratios = [sz[i] / x.shape[a] for i, a in enumerate(axes)]
        if policy != "stretch":
            r = min(ratios) if policy == "not_larger" else max(ratios)
            ratios = [r] * len(axes)
            sz = [int(np.floor(r * x.shape[a] + 0.5)) for a in axes]
        for i, a in enumerate(axes):
            full_sizes[a], full_scales[a] = sz[i], ratios[i]
    else:
        sc = [float(v) for v in np.asarray(scales).reshape(-1)]
        for i, a in enumerate(axes):
            full_scales[a] = sc[i]
            full_sizes[a] = int(np.floor(x.shape[a] * sc[i]))
    y = as_f32(x) if mode != "nearest" else x
    for a in range(rank):
        if full_sizes[a] != x.shape[a] or full_scales[a] != 1.0 or attrs.get(
                "coordinate_transformation_mode") == "tf_crop_and_resize":
            if full_sizes[a] == x.shape[a] and full_scales[a] == 1.0 and full_roi[a] == (0.0, 1.0):
                continue
            y = _resize_axis(y, a, full_sizes[a], full_scales[a], full_roi[a], attrs, mode)
    return y


@kernel("Resize")
def resize(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Opset 10: (X, scales); 11+: (X, roi, scales, sizes)."""
    x = inputs[0]
    if attrs["_opset"] < 11:
        a = dict(attrs)
        a.setdefault("coordinate_transformation_mode", "asymmetric")
        a.setdefault("nearest_mode", "floor" if a.get("mode", "nearest") == "nearest" else "round_prefer_floor")
        return [_resize(x, inputs[1], None, None, a)]
    roi = inputs[1] if len(inputs) > 1 else None
    scales = inputs[2] if len(inputs) > 2 else None
    sizes = inputs[3] if len(inputs) > 3 else None
    if scales is not None and scales.size == 0:
        scales = None
    return [_resize(x, scales, sizes, roi, attrs)]


@kernel("Upsample")
def upsample(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Upsample (opset 7: `scales` attribute, 9: input): asymmetric coordinates, nearest = floor."""
    scales = attrs["scales"] if attrs["_opset"] < 9 else inputs[1]
    a = {**attrs, "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    return [_resize(inputs[0], np.asarray(scales, np.float32), None, None, a)]


def _reflect(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Reflect `x` at the borders [lo, hi] until it lies inside (GridSample's reflection)."""
    rng = hi - lo
    if rng <= 0:
        return np.full_like(x, lo)
    below, above = lo - x, x - hi
    out = x.copy()
    for d, inside_from, other in ((below, lo, hi), (above, hi, lo)):
        n = np.floor(d / rng)
        r = d - n * rng
        even = (n % 2) == 0
        sign = 1 if inside_from == lo else -1
        val = np.where(even, inside_from + sign * r, other - sign * r)
        out = np.where(d > 0, val, out)
    return out


@kernel("GridSample")
def grid_sample(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Sample X (N, C, *D) at the normalised grid (N, *O, nd) points: nearest / linear / cubic,
    zeros / border / reflection padding, align_corners; any number of spatial dims."""
    x, grid = inputs[0], inputs[1].astype(np.float64)
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(attrs.get("mode", "linear"), attrs.get("mode", "linear"))
    pad = attrs.get("padding_mode", "zeros")
    align = bool(attrs.get("align_corners", 0))
    dims = x.shape[2:]
    nd = len(dims)
    n_batch, chans = x.shape[:2]
    out_sp = grid.shape[1:-1]
    taps_per_dim = []
    for i, size in enumerate(dims):
        g = grid[..., nd - 1 - i]
        c = (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2
        lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
        if mode == "nearest":
            c = np.rint(c)
        if pad == "border":
            c = np.where((c < lo) | (c > hi), np.clip(c, 0, size - 1), c)
        elif pad == "reflection":
            c = np.where((c < lo) | (c > hi), _reflect(c, lo, hi), c)
        if mode == "nearest":
            idx, w = [c.astype(np.int64)], [np.ones_like(c)]
        else:
            base = np.floor(c)
            t = c - base
            if mode == "linear":
                idx, w = [base, base + 1], [1 - t, t]
            else:
                wts = _cubic(np.stack([t + 1, t, 1 - t, 2 - t], axis=-1), -0.75)
                idx = [base - 1, base, base + 1, base + 2]
                w = [wts[..., k] for k in range(4)]
            idx = [v.astype(np.int64) for v in idx]
        fixed = []
        for v in idx:  # fetch rule per padding mode
            if pad == "zeros":
                fixed.append((np.clip(v, 0, size - 1), (v >= 0) & (v < size)))
            elif pad == "border":
                fixed.append((np.clip(v, 0, size - 1), np.ones(v.shape, bool)))
            else:
                r = np.trunc(_reflect(v.astype(np.float64), lo, hi)).astype(np.int64)
                fixed.append((np.clip(r, 0, size - 1), np.ones(v.shape, bool)))
        taps_per_dim.append(list(zip(fixed, w)))
    y = np.zeros((n_batch,) + tuple(out_sp) + (chans,), np.float64)
    nidx = np.arange(n_batch).reshape((n_batch,) + (1,) * len(out_sp))
    xs = np.moveaxis(x, 1, -1)  # (N, *D, C)
    for combo in itertools.product(*taps_per_dim):
        weight = np.ones(grid.shape[:-1])
        index = [nidx]
        for (ix, valid), w in combo:
            weight = weight * w * valid
            index.append(ix)
        y += xs[tuple(index)] * weight[..., None]
    return [np.ascontiguousarray(np.moveaxis(y, -1, 1)).astype(x.dtype if x.dtype.kind == "f" else np.float32)]
