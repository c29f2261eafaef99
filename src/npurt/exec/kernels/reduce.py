"""ReduceX (axes as attribute or, from opset 13/18, as input; keepdims; noop_with_empty_axes),
ArgMax and ArgMin."""
from __future__ import annotations

from typing import Any

import numpy as np

from npurt.exec.kernels import as_f32, kernel


def _axes(inputs: list, attrs: dict[str, Any], input_since: int) -> tuple[int, ...] | None:
    """The reduction axes; None means "all axes"; () means "no reduction" (noop)."""
    if attrs["_opset"] >= input_since:
        ax = inputs[1] if len(inputs) > 1 else None
        axes = None if ax is None or ax.size == 0 else [int(a) for a in ax.reshape(-1)]
    else:
        axes = attrs.get("axes")
    if axes is None or len(axes) == 0:
        return () if attrs.get("noop_with_empty_axes", 0) else None
    return tuple(int(a) for a in axes)


def _reducer(fn, input_since: int = 18, pre=None, post=None):
    def run(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
        x = inputs[0]
        x = as_f32(x) if x.dtype.kind == "f" else x
        axes = _axes(inputs, attrs, input_since)
        if axes == ():
            return [x.copy() if pre is None else pre(x)]
        v = x if pre is None else pre(x)
        y = fn(v, axis=axes, keepdims=bool(attrs.get("keepdims", 1)))
        if post is not None:
            y = post(y)
        return [np.asarray(y).astype(x.dtype, copy=False)]

    return run


def _lowest(dtype: np.dtype):
    return -np.inf if dtype.kind == "f" else (False if dtype.kind == "b" else np.iinfo(dtype).min)


def _highest(dtype: np.dtype):
    return np.inf if dtype.kind == "f" else (True if dtype.kind == "b" else np.iinfo(dtype).max)


def _amax(v, axis, keepdims):
    if v.size == 0:  # ONNX: reduce of an empty set is the identity, -inf
        shape = np.sum(np.zeros(v.shape), axis=axis, keepdims=keepdims).shape
        return np.full(shape, _lowest(v.dtype), v.dtype)
    return np.max(v, axis=axis, keepdims=keepdims)


def _amin(v, axis, keepdims):
    if v.size == 0:
        shape = np.sum(np.zeros(v.shape), axis=axis, keepdims=keepdims).shape
        return np.full(shape, _highest(v.dtype), v.dtype)
    return np.min(v, axis=axis, keepdims=keepdims)


def _logsumexp(v, axis, keepdims):
    v = v.astype(np.float64)
    return np.log(np.sum(np.exp(v), axis=axis, keepdims=keepdims))


kernel("ReduceSum")(_reducer(np.sum, input_since=13))
kernel("ReduceMean")(_reducer(np.mean))
kernel("ReduceMax")(_reducer(_amax))
kernel("ReduceMin")(_reducer(_amin))
kernel("ReduceProd")(_reducer(np.prod))
kernel("ReduceSumSquare")(_reducer(np.sum, pre=lambda x: x * x))
kernel("ReduceL1")(_reducer(np.sum, pre=np.abs))
kernel("ReduceL2")(_reducer(np.sum, pre=lambda x: x.astype(np.float64) ** 2, post=np.sqrt))
kernel("ReduceLogSum")(_reducer(np.sum, pre=lambda x: x.astype(np.float64), post=np.log))
kernel("ReduceLogSumExp")(_reducer(_logsumexp))


def _arg(fn):
    def run(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
        x = inputs[0]
        axis = int(attrs.get("axis", 0))
        if attrs.get("select_last_index", 0):
            flipped = np.flip(x, axis)
            y = x.shape[axis] - 1 - fn(flipped, axis=axis)
        else:
            y = fn(x, axis=axis)
        if attrs.get("keepdims", 1):
            y = np.expand_dims(y, axis)
        return [y.astype(np.int64)]

    return run


kernel("ArgMax")(_arg(np.argmax))
kernel("ArgMin")(_arg(np.argmin))
