"""QuantizeLinear / DequantizeLinear: per-tensor, per-axis and blocked (opset 21) affine
quantisation, round half to even and saturation to the integer type, as ONNX specifies."""
from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper

from npurt.exec.kernels import kernel


def _broadcast(p: np.ndarray, x: np.ndarray, axis: int, block: int) -> np.ndarray:
    """Scale / zero point shaped to broadcast against `x`."""
    p = np.asarray(p)
    if p.size == 1 and not block:
        return p.reshape(())
    axis %= x.ndim
    if block:  # blocked: same rank as x, dim `axis` is ceil(n / block)
        return np.repeat(p, block, axis=axis).take(np.arange(x.shape[axis]), axis=axis)
    shape = [1] * x.ndim
    shape[axis] = -1
    return p.reshape(shape)


def _int_range(dtype: np.dtype) -> tuple[float, float]:
    if dtype.name in ("int4", "uint4", "int2", "uint2"):
        import ml_dtypes

        info = ml_dtypes.iinfo(dtype)
        return float(info.min), float(info.max)
    info = np.iinfo(dtype)
    return float(info.min), float(info.max)


@kernel("QuantizeLinear")
def quantize_linear(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x, scale = inputs[0], inputs[1]
    zp = inputs[2] if len(inputs) > 2 else None
    axis, block = int(attrs.get("axis", 1)), int(attrs.get("block_size", 0))
    if "output_dtype" in attrs and attrs["output_dtype"]:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(attrs["output_dtype"]))
    else:
        dtype = zp.dtype if zp is not None else np.dtype(np.uint8)
    s = _broadcast(scale, x, axis, block).astype(np.float32)
    q = x.astype(np.float32) / s
    if dtype.kind in "iu" or dtype.name in ("int4", "uint4", "int2", "uint2"):
        q = np.rint(q)
        if zp is not None:
            q = q + _broadcast(zp, x, axis, block).astype(np.float32)
        lo, hi = _int_range(dtype)
        return [np.clip(q, lo, hi).astype(dtype)]
    # float8 / float4 targets: scale, then cast (saturating per ml_dtypes' conversion)
    if zp is not None:
        q = q + _broadcast(zp, x, axis, block).astype(np.float32)
    return [q.astype(dtype)]


@kernel("DequantizeLinear")
def dequantize_linear(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x, scale = inputs[0], inputs[1]
    zp = inputs[2] if len(inputs) > 2 else None
    axis, block = int(attrs.get("axis", 1)), int(attrs.get("block_size", 0))
    v = x.astype(np.float32)
    if zp is not None:
        v = v - _broadcast(zp, x, axis, block).astype(np.float32)
    return [(v * _broadcast(scale, x, axis, block).astype(np.float32)).astype(np.float32)]
