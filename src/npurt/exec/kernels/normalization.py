"""Softmax / LogSoftmax / Hardmax, LayerNormalization, BatchNormalization, InstanceNormalization, LRN."""
from __future__ import annotations

from typing import Any

import numpy as np

from npurt.exec.kernels import as_f32, kernel


def _softmax_axis(x: np.ndarray, attrs: dict[str, Any]) -> tuple[np.ndarray, int]:
    """Before opset 13 Softmax flattens to 2-D at `axis` (default 1); from 13 on it is per-axis
    (default -1). Returns the array to reduce over its last/`axis` and the axis."""
    if attrs["_opset"] < 13:
        axis = int(attrs.get("axis", 1)) % max(x.ndim, 1)
        return x.reshape(int(np.prod(x.shape[:axis])), -1), 1
    return x, int(attrs.get("axis", -1))


def softmax_into(v: np.ndarray, axis: int, out: np.ndarray, peak: np.ndarray, total: np.ndarray) -> None:
    """out = softmax of float32 `v` along `axis`: e^(v - max) / sum, the max and the sum kept (keepdims) in `peak`
    and `total` — the kernel's arithmetic into caller buffers (an in-place step's, prepared at bind)."""
    np.maximum.reduce(v, axis=axis, keepdims=True, out=peak)
    np.subtract(v, peak, out=out)
    np.exp(out, out=out)
    np.add.reduce(out, axis=axis, keepdims=True, out=total)
    np.true_divide(out, total, out=out)


def reduced_shape(v: np.ndarray, axis: int) -> tuple[int, ...]:
    """The shape of `softmax_into`'s peak and total for `v` reduced along `axis`."""
    return tuple(1 if k == axis % v.ndim else n for k, n in enumerate(v.shape))


@kernel("Softmax")
def softmax(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = as_f32(inputs[0])
    v, axis = _softmax_axis(x, attrs)
    kept = reduced_shape(v, axis)
    e = np.empty(v.shape, np.float32)
    with np.errstate(invalid="ignore"):  # an all -inf row gives NaN, as in onnxruntime
        softmax_into(v, axis, e, np.empty(kept, np.float32), np.empty(kept, np.float32))
    return [e.reshape(x.shape)]


@kernel("LogSoftmax")
def log_softmax(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = as_f32(inputs[0])
    v, axis = _softmax_axis(x, attrs)
    s = v - v.max(axis=axis, keepdims=True)
    s = s - np.log(np.exp(s).sum(axis=axis, keepdims=True))
    return [s.reshape(x.shape).astype(np.float32)]


@kernel("Hardmax")
def hardmax(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = as_f32(inputs[0])
    v, axis = _softmax_axis(x, attrs)
    idx = np.expand_dims(np.argmax(v, axis=axis), axis)
    y = np.zeros_like(v)
    np.put_along_axis(y, idx, 1.0, axis=axis)
    return [y.reshape(x.shape)]


@kernel("LayerNormalization")
def layer_normalization(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Normalise over axes [axis, rank); outputs Y, Mean, InvStdDev (the latter two keepdims)."""
    x = as_f32(inputs[0])
    scale = inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    axis = int(attrs.get("axis", -1)) % x.ndim
    axes = tuple(range(axis, x.ndim))
    mean = x.mean(axis=axes, keepdims=True, dtype=np.float32)
    d = x - mean
    var = np.mean(d * d, axis=axes, keepdims=True, dtype=np.float32)
    inv = (np.float32(1.0) / np.sqrt(var + np.float32(attrs.get("epsilon", 1e-5)))).astype(np.float32)
    y = d * inv * as_f32(scale)
    if bias is not None:
        y += as_f32(bias)
    return [y, mean, inv]


@kernel("BatchNormalization")
def batch_normalization(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Inference form y = (x - mean) / sqrt(var + eps) * scale + B; training_mode=1 (opset 14+)
    uses the batch statistics and also returns the updated running mean and var."""
    x, scale, b, mean, var = (as_f32(a) for a in inputs[:5])
    eps = np.float32(attrs.get("epsilon", 1e-5))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if attrs.get("training_mode", 0):
        axes = (0,) + tuple(range(2, x.ndim))
        bmean = x.mean(axis=axes)
        bvar = x.var(axis=axes)
        mom = np.float32(attrs.get("momentum", 0.9))
        y = (x - bmean.reshape(shape)) / np.sqrt(bvar.reshape(shape) + eps) * scale.reshape(shape) + b.reshape(shape)
        return [y.astype(np.float32), (mean * mom + bmean * (1 - mom)).astype(np.float32),
                (var * mom + bvar * (1 - mom)).astype(np.float32)]
    k = (scale / np.sqrt(var + eps)).astype(np.float32)
    y = np.multiply(x, k.reshape(shape))
    y += (b - mean * k).astype(np.float32).reshape(shape)
    return [y]


@kernel("InstanceNormalization")
def instance_normalization(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x, scale, b = (as_f32(a) for a in inputs[:3])
    axes = tuple(range(2, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    eps = np.float32(attrs.get("epsilon", 1e-5))
    return [((x - mean) / np.sqrt(var + eps) * scale.reshape(shape) + b.reshape(shape)).astype(np.float32)]


@kernel("LRN")
def lrn(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Across-channel LRN: x / (bias + alpha/size * sum of squares over `size` channels)^beta."""
    x = as_f32(inputs[0])
    size = int(attrs["size"])
    alpha, beta, bias = (np.float32(attrs.get(k, d)) for k, d in (("alpha", 1e-4), ("beta", 0.75), ("bias", 1.0)))
    sq = x * x
    c = x.shape[1]
    lo, hi = (size - 1) // 2, size // 2  # window [c - lo, c + hi]
    csum = np.concatenate([np.zeros_like(sq[:, :1]), np.cumsum(sq, axis=1, dtype=np.float64)], axis=1)
    top = np.minimum(np.arange(c) + hi + 1, c)
    bot = np.maximum(np.arange(c) - lo, 0)
    s = (np.take(csum, top, axis=1) - np.take(csum, bot, axis=1)).astype(np.float32)
    return [(x / (bias + alpha / np.float32(size) * s) ** beta).astype(np.float32)]


@kernel("MeanVarianceNormalization")
def mean_variance_normalization(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = as_f32(inputs[0])
    axes = tuple(attrs.get("axes", [0, 2, 3]))
    mean = x.mean(axis=axes, keepdims=True)
    std = np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True))
    return [((x - mean) / (std + np.float32(1e-9))).astype(np.float32)]


@kernel("LpNormalization")
def lp_normalization(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = as_f32(inputs[0])
    axis, p = int(attrs.get("axis", -1)), int(attrs.get("p", 2))
    norm = np.sum(np.abs(x) ** p, axis=axis, keepdims=True) ** (1.0 / p)
    return [np.where(norm == 0, 0, x / np.where(norm == 0, 1, norm)).astype(np.float32)]


@kernel("RMSNormalization")
def rms_normalization(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """x / sqrt(mean(x^2 over [axis, rank)) + epsilon) * scale (opset 23)."""
    x = as_f32(inputs[0])
    axis = int(attrs.get("axis", -1)) % x.ndim
    ms = np.mean(x * x, axis=tuple(range(axis, x.ndim)), keepdims=True)
    return [(x / np.sqrt(ms + np.float32(attrs.get("epsilon", 1e-5))) * as_f32(inputs[1])).astype(np.float32)]


@kernel("GroupNormalization")
def group_normalization(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Normalise per (N, group) over channels-in-group and spatial dims; scale/bias per channel
    (opset 21; opset 18's per-group scale is broadcast the same way when sizes match)."""
    x, scale, bias = as_f32(inputs[0]), as_f32(inputs[1]), as_f32(inputs[2])
    g = int(attrs["num_groups"])
    n, c = x.shape[:2]
    v = x.reshape(n, g, -1)
    mean = v.mean(axis=2, keepdims=True)
    var = v.var(axis=2, keepdims=True)
    y = ((v - mean) / np.sqrt(var + np.float32(attrs.get("epsilon", 1e-5)))).reshape(x.shape)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if scale.size == g and g != c:
        scale = np.repeat(scale, c // g)
        bias = np.repeat(bias, c // g)
    return [(y * scale.reshape(shape) + bias.reshape(shape)).astype(np.float32)]
